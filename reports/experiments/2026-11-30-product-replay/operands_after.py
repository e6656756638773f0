import sys, time, numpy as np, clspmv, pyopencl as cl
from clspmv import host_buffers, arguments
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
acc={}
f=arguments.Operands.__init__
def g(*a,**k):
    t=time.perf_counter_ns(); r=f(*a,**k); acc['init']=acc.get('init',0)+time.perf_counter_ns()-t; return r
arguments.Operands.__init__=g
A=generators.generate(sys.argv[1]); m=A.shape[0]
x=np.random.default_rng(1).uniform(-1,1,A.shape[1])
M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
junk=np.ones(8*2**20)
between={'nothing':lambda:None,'matvec':lambda:M.matvec(x),'scipy':lambda:A@x,'mkl':lambda:mk.matvec(x,out),
 'numpy read 64MB':lambda:junk.sum(),'sleep 5ms':lambda:time.sleep(0.005),'busy 5ms':lambda:[0 for _ in range(100000)]}
with openmp.blocktime(0):
  for name,b in between.items():
    res=[];ws=[]
    for r in range(R+3):
        b(); acc.clear()
        t=time.perf_counter_ns(); M.matvec(x); w=time.perf_counter_ns()-t
        if r>=3: res.append(acc['init']); ws.append(w)
    print('%-16s Operands.__init__ median %.1f us, matvec %.0f us'%(name,np.median(res)/1e3,np.median(ws)/1e3))
