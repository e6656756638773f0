import sys, os, time, numpy as np, clspmv, pyopencl as cl
from clspmv import host_buffers
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
def block(events): cl.wait_for_events(events)
def yield_(events):
    last=events[-1]
    while last.command_execution_status>0: os.sched_yield()
    cl.wait_for_events(events)
prev={}
def sleepyield(events):
    last=events[-1]
    expect=prev.get('k',0.0)
    if expect>2e-4: time.sleep(0.85*expect)
    while last.command_execution_status>0: os.sched_yield()
    cl.wait_for_events(events)
    p=last.profile; prev['k']=(p.end-p.start)*1e-9
variants={'block':block,'yield':yield_,'sleepyield':sleepyield}
for spec in sys.argv[1].split(';'):
    A=generators.generate(spec); m=A.shape[0]
    x=np.random.default_rng(1).uniform(-1,1,A.shape[1])
    M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
    mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
    res={}; kern={}
    with openmp.blocktime(0):
      for r in range(R+5):
        for name in list(variants)+['mkl','scipy']:
            if name in variants: host_buffers.wait_polling=variants[name]
            t=time.perf_counter()
            if name=='mkl': mk.matvec(x,out)
            elif name=='scipy': A@x
            else: M.matvec(x)
            if r>=5:
                res.setdefault(name,[]).append((time.perf_counter()-t)*1e3)
                if name in variants:
                    p=M.last_events[-1].profile; kern.setdefault(name,[]).append((p.end-p.start)*1e-6)
    mk.close()
    med={n:np.median(v) for n,v in res.items()}; km={n:np.median(v) for n,v in kern.items()}
    print('%-28s %-5s mkl %.3f | '%(spec[:28],M.format,med['mkl'])+' '.join('%s %.2f (k %.2f)'%(n,med[n]/med['block'],km[n]/km['block']) for n in variants)+' | xMKL block %.2f yield %.2f sy %.2f'%(med['mkl']/med['block'],med['mkl']/med['yield'],med['mkl']/med['sleepyield']), flush=True)
