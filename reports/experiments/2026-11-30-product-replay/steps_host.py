import sys, time, numpy as np, clspmv, pyopencl as cl
from clspmv import host_buffers, arguments
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
acc={}
def timed(mod, name):
    f=getattr(mod,name)
    def g(*a,**k):
        t=time.perf_counter_ns(); r=f(*a,**k); acc[name]=acc.get(name,0)+time.perf_counter_ns()-t; return r
    setattr(mod,name,g)
timed(host_buffers,'wrap'); timed(host_buffers,'aligned_empty'); timed(arguments.Operands,'__init__')
timed(arguments.Operands,'to_device')
for spec in sys.argv[1].split(';'):
    A=generators.generate(spec); m=A.shape[0]
    x=np.random.default_rng(1).uniform(-1,1,A.shape[1])
    M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
    fmt=M._fmt
    orig=fmt.launch
    def launch(*a,**k):
        t=time.perf_counter_ns(); r=orig(*a,**k); acc['launch']=acc.get('launch',0)+time.perf_counter_ns()-t; return r
    fmt.launch=launch
    mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
    tot=0
    with openmp.blocktime(0):
      for r in range(R+3):
        if r==3: acc.clear(); tot=0
        t0=time.perf_counter_ns(); M.matvec(x); tot+=time.perf_counter_ns()-t0
        mk.matvec(x,out); A@x
    mk.close()
    print('%-30s %-5s'%(spec[:30],M.format)+' '.join('%s %.0f'%(k,v/R/1e3) for k,v in acc.items())+' | wall %.0f us'%(tot/R/1e3))
