import os, sys, glob
mode = sys.argv[1]
if mode != "never":
    os.environ["POCL_AFFINITY"] = "1"
import pyopencl as cl
ps = cl.get_platforms()
if mode == "around-platforms":
    del os.environ["POCL_AFFINITY"]
dev = [d for p in ps for d in p.get_devices() if d.type & cl.device_type.CPU][0]
ctx = cl.Context([dev])
if mode == "around-context":
    del os.environ["POCL_AFFINITY"]
q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "__kernel void k(__global int *a){a[get_global_id(0)]=1;}").build()
import numpy as np
a = np.zeros(1 << 16, np.int32); b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
prg.k(q, a.shape, None, b); q.finish()
out = []
for t in glob.glob("/proc/self/task/*/status"):
    s = open(t).read()
    name = [l for l in s.splitlines() if l.startswith("Name:")][0].split()[1]
    cpus = [l for l in s.splitlines() if l.startswith("Cpus_allowed_list")][0].split()[1]
    out.append(f"{name}:{cpus}")
print(mode, sorted(out))
