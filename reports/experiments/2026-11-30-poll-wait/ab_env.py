# A/B: CLSPMV_POLL_SECONDS default vs 0, alternating, in rounds beside MKL and scipy
import sys, os, time, numpy as np, clspmv
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
for spec in sys.argv[1].split(';'):
    A=generators.generate(spec); m=A.shape[0]
    x=np.random.default_rng(1).uniform(-1,1,A.shape[1])
    M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
    mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
    res={}
    with openmp.blocktime(0):
      for r in range(R+5):
        for name in ('block','poll','mkl','scipy'):
            if name=='block': os.environ['CLSPMV_POLL_SECONDS']='0'
            elif name=='poll': os.environ.pop('CLSPMV_POLL_SECONDS',None)
            t=time.perf_counter()
            if name=='mkl': mk.matvec(x,out)
            elif name=='scipy': A@x
            else: M.matvec(x)
            if r>=5: res.setdefault(name,[]).append((time.perf_counter()-t)*1e3)
    mk.close()
    b,p,k=(np.median(res[n]) for n in ('block','poll','mkl'))
    print('%-45s %-6s block %.3f poll %.3f mkl %.3f | poll/block %.2f  xMKL block %.2f poll %.2f'%(spec,M.format,b,p,k,p/b,k/b,k/p), flush=True)
