M="--matrix gen:poisson2d:k=700 --matrix gen:banded:n=400000,diags=5,spread=1000 --matrix gen:random:n=400000,k=10 --matrix gen:block:k=30,b=4 --matrix gen:stencil27:k=50"
