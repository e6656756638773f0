"""A/B of the ways to wait for a CPU product's kernels, in rounds beside MKL optimised and scipy
(with poll.diff applied: it swaps clspmv.host_buffers.wait_polling, which sync_back calls).

    python ab_waits.py 'SPEC;SPEC...' DEVICE ROUNDS VARIANTS

VARIANTS, comma-separated, the first the reference: block (the runtime's wait), poll (the
patch's wait_polling as committed, read through $CLSPMV_POLL_SECONDS), yield (poll the last
event, sched_yield between polls), sleep50 (sleep 50 us between polls), hybrid (sleep 50 us
steps until 0.8 of the previous kernel, then yield), sleepyield (sleep 0.85 of the previous
kernel once, then yield). Prints per matrix each variant's median time / the reference's, and
its median kernel time / the reference's.
"""
import os
import sys
import time

import numpy as np
import pyopencl as cl

import clspmv
from clspmv import host_buffers
from clspmv.bench import generators, openmp
from clspmv.bench.mkl_optimised import OptimisedMkl

patched = host_buffers.wait_polling
previous = {"kernel": 0.0}


def block(events):
    cl.wait_for_events(events)


def poll(events):
    patched(events)


def polled(pause):
    def wait(events):
        last = events[-1]
        while last.command_execution_status > 0:
            pause()
        cl.wait_for_events(events)
    return wait


def after_sleep(fraction, steps):
    def wait(events):
        last, t0, expect = events[-1], time.perf_counter(), previous["kernel"]
        if not steps and expect > 2e-4:
            time.sleep(fraction * expect)
        while last.command_execution_status > 0:
            if steps and time.perf_counter() - t0 < fraction * expect:
                time.sleep(50e-6)
            else:
                os.sched_yield()
        cl.wait_for_events(events)
        p = last.profile
        previous["kernel"] = (p.end - p.start) * 1e-9
    return wait


WAITS = {"block": block, "poll": poll, "yield": polled(os.sched_yield),
         "sleep50": polled(lambda: time.sleep(50e-6)), "hybrid": after_sleep(0.8, True),
         "sleepyield": after_sleep(0.85, False)}

dev = clspmv.select_device(sys.argv[2])
rounds, variants = int(sys.argv[3]), sys.argv[4].split(",")
for spec in sys.argv[1].split(";"):
    A = generators.generate(spec)
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, device=dev)
    mkl = OptimisedMkl(A, expected_calls=1000)
    out = np.empty(A.shape[0])
    wall, kernel = {}, {}
    with openmp.blocktime(0):
        for r in range(rounds + 5):
            for name in [*variants, "mkl", "scipy"]:
                if name in WAITS:
                    host_buffers.wait_polling = WAITS[name]
                t = time.perf_counter()
                if name == "mkl":
                    mkl.matvec(x, out)
                elif name == "scipy":
                    A @ x
                else:
                    M.matvec(x)
                if r >= 5:
                    wall.setdefault(name, []).append((time.perf_counter() - t) * 1e3)
                    if name in WAITS:
                        p = M.last_events[-1].profile
                        kernel.setdefault(name, []).append((p.end - p.start) * 1e-6)
    mkl.close()
    w = {k: np.median(v) for k, v in wall.items()}
    k = {n: np.median(v) for n, v in kernel.items()}
    ref = variants[0]
    print(f"{spec[:30]:30} {M.format:5} mkl {w['mkl']:.3f} ms | " + " ".join(
        f"{n} {w[n] / w[ref]:.2f} (k {k[n] / k[ref]:.2f})" for n in variants), flush=True)
