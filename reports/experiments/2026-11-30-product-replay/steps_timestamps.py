import sys, time, numpy as np, clspmv
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
clk=lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
for spec in sys.argv[1].split(';'):
    A=generators.generate(spec); m=A.shape[0]
    x=np.random.default_rng(1).uniform(-1,1,A.shape[1])
    M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
    mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
    rows=[]; mkt=[]
    with openmp.blocktime(0):
      for r in range(R+3):
        t0=clk(); M.matvec(x); t1=clk()
        e=M.last_events[0].profile; e2=M.last_events[-1].profile
        if r>=3: rows.append([e.queued-t0, e.start-e.queued, e2.end-e.start, t1-e2.end, t1-t0])
        t=clk(); mk.matvec(x,out); 
        if r>=3: mkt.append(clk()-t)
        A@x
    mk.close()
    a=np.median(np.array(rows),axis=0)/1e3
    print('%-34s %-5s call->queued %4.0f queued->start %4.0f kernel %5.0f end->return %4.0f | wall %5.0f  mkl %5.0f us'%(spec[:34],M.format,*a,np.median(mkt)/1e3))
