"""How the host waits for a product on a CPU device: csr-scalar's (or FORMAT's) kernel enqueued on
device-resident vectors, then waited for by blocking on its events (what clspmv does), by polling
the last event's status in a loop, by polling with sched_yield or time.sleep(0) between looks;
microseconds per product from the host clock, K products each, three rounds.

    python wait_probe.py DEVICE SPEC FORMAT K
"""
import time, sys
import numpy as np, scipy.sparse as sp
import pyopencl as cl, pyopencl.array as cla
import clspmv
dev = clspmv.select_device(sys.argv[1])
from clspmv.bench.generators import generate
A = generate(sys.argv[2]).tocsr()
M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[3], device=dev)
n = A.shape[0]
xd = cla.to_device(dev.queue, np.random.rand(n)); yd = cla.empty(dev.queue, n, np.float64)
q = dev.queue
fmt = M._fmt
one, zero = np.float64(1), np.float64(0)
COMPLETE = cl.command_execution_status.COMPLETE
def launch():
    return fmt.launch(q, xd.data, yd.data, one, zero)
def wait_block():
    cl.wait_for_events(launch())
def wait_poll():
    evs = launch(); q.flush()
    ev = evs[-1]
    while ev.command_execution_status != COMPLETE:
        pass
import os
def wait_yield():
    evs = launch(); q.flush()
    ev = evs[-1]
    while ev.command_execution_status != COMPLETE:
        os.sched_yield()
def wait_sleep():
    evs = launch(); q.flush()
    ev = evs[-1]
    while ev.command_execution_status != COMPLETE:
        time.sleep(0)
def wait_finish():
    launch(); q.finish()
def loop(k, f):
    t = time.perf_counter()
    for _ in range(k): f()
    return (time.perf_counter() - t) / k * 1e6
for r in range(3):
    k = int(sys.argv[4])
    print(n, A.nnz, 'us: block %.1f poll %.1f yield %.1f sleep0 %.1f block %.1f' % (loop(k, wait_block), loop(k, wait_poll), loop(k, wait_yield), loop(k, wait_sleep), loop(k, wait_block)), flush=True)
