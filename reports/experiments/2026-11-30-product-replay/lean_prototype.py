# does a lean host path (args set once; per call: 2 buffers, 2 set_arg, enqueue, wait) help in rounds?
import sys, time, numpy as np, clspmv, pyopencl as cl
from clspmv import host_buffers
from clspmv.formats import base
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
dev=clspmv.select_device(sys.argv[2]); R=int(sys.argv[3])
for spec in sys.argv[1].split(';'):
    A=generators.generate(spec); m,n=A.shape
    x=np.random.default_rng(1).uniform(-1,1,n)
    M=clspmv.DeviceMatrix.from_scipy(A,device=dev)
    rec={}
    orig=base.Format.run
    def run(self,queue,kern,work_items,*args,wait_for=None,wg=None,row0=0):
        wg2=wg or self.layout.work_group_size
        rec['k']=kern; rec['g']=(-(-work_items//wg2)*wg2,); rec['l']=(wg2,); rec['a']=self.block_args(row0)+args
        return orig(self,queue,kern,work_items,*args,wait_for=wait_for,wg=wg,row0=row0)
    base.Format.run=run
    y0=M.matvec(x); base.Format.run=orig
    args=list(rec['a'])
    # x and y are the HostVector buffers: find them by type position: the two args after the matrix buffers that are cl.Buffer and not in M._fmt.buffers
    own=set(id(b) for b in M._fmt.buffers.values())
    idx=[i for i,a in enumerate(args) if isinstance(a,cl.Buffer) and id(a) not in own]
    assert len(idx)==2, idx
    ix,iy=idx
    prog_kern=cl.Kernel(rec['k'].program, rec['k'].function_name)
    for i,a in enumerate(args):
        if i not in idx: prog_kern.set_arg(i,a)
    pool=host_buffers.OutputPool(); q=dev.queue; ctx=dev.context
    RO=cl.mem_flags.USE_HOST_PTR|cl.mem_flags.READ_WRITE
    def fast(x):
        y=host_buffers.aligned_empty((m,),x.dtype,'C',dev,pool=pool)
        bx=cl.Buffer(ctx,RO,hostbuf=x); by=cl.Buffer(ctx,RO,hostbuf=y)
        prog_kern.set_arg(ix,bx); prog_kern.set_arg(iy,by)
        cl.enqueue_nd_range_kernel(q,prog_kern,rec['g'],rec['l']).wait()
        return y
    assert np.allclose(fast(x),y0)
    mk=OptimisedMkl(A,expected_calls=1000); out=np.empty(m)
    calls={'matvec':lambda:M.matvec(x),'lean':lambda:fast(x),'mkl':lambda:mk.matvec(x,out),'scipy':lambda:A@x}
    res={}
    with openmp.blocktime(0):
      for r in range(R+3):
        names=list(calls); s=r%4
        for nm in names[s:]+names[:s]:
            t=time.perf_counter_ns(); calls[nm](); dt=(time.perf_counter_ns()-t)/1e3
            if r>=3: res.setdefault(nm,[]).append(dt)
    mk.close()
    med={k:np.median(v) for k,v in res.items()}
    print('%-34s %-5s matvec %6.0f lean %6.0f mkl %6.0f us | lean/matvec %.2f  xMKL matvec %.2f lean %.2f'%(spec[:34],M.format,med['matvec'],med['lean'],med['mkl'],med['lean']/med['matvec'],med['mkl']/med['matvec'],med['mkl']/med['lean']),flush=True)
