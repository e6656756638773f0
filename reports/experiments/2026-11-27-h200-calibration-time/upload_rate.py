"""Host-to-device upload rates of a matrix array on a GPU, by method (GB/s, best of 3):

* ``copy_host_ptr``: ``cl.Buffer(COPY_HOST_PTR, hostbuf=a)`` (clspmv's upload at 4b/bb6e3ff);
* ``write``: an empty buffer, then a blocking ``enqueue_copy`` from ``a``;
* ``pinned``: ``a`` copied into a mapped ``ALLOC_HOST_PTR`` staging buffer (numpy), then
  ``enqueue_copy`` staging -> device, whole;
* ``pinned-chunks``: the same through two staging buffers of CHUNK bytes, the numpy copy of one
  chunk overlapping the DMA of the previous one.

    python upload_rate.py DEVICE MB...
"""

import sys
import time

import numpy as np
import pyopencl as cl

import clspmv

CHUNK = 8 << 20


def best(fn, reps=3):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    dev = clspmv.select_device(sys.argv[1])
    ctx, q = dev.context, dev.queue
    mf = cl.mem_flags
    staging = {}

    def stage(n, slot=0):
        key = (n, slot)
        if key not in staging:
            buf = cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, n)
            host, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.WRITE, 0, (n,), np.uint8)
            staging[key] = (buf, host)
        return staging[key]

    for mb in map(int, sys.argv[2:]):
        a = np.random.default_rng(0).random(mb * (1 << 20) // 8)
        n = a.nbytes
        raw = a.view(np.uint8)
        out = {}

        def copy_host_ptr():
            b = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            q.finish()
            del b
        out["copy_host_ptr"] = best(copy_host_ptr)

        def write():
            b = cl.Buffer(ctx, mf.READ_ONLY, n)
            cl.enqueue_copy(q, b, a, is_blocking=True)
            del b
        out["write"] = best(write)

        stage(n)

        def pinned():
            sbuf, host = stage(n)
            np.copyto(host, raw)
            b = cl.Buffer(ctx, mf.READ_ONLY, n)
            cl.enqueue_copy(q, b, sbuf)
            q.finish()
            del b
        out["pinned"] = best(pinned)

        def pinned_chunks():
            b = cl.Buffer(ctx, mf.READ_ONLY, n)
            ev = [None, None]
            for i, off in enumerate(range(0, n, CHUNK)):
                slot = i % 2
                sbuf, host = stage(CHUNK, slot)
                if ev[slot] is not None:
                    ev[slot].wait()
                size = min(CHUNK, n - off)
                np.copyto(host[:size], raw[off:off + size])
                ev[slot] = cl.enqueue_copy(q, b, sbuf, byte_count=size, dst_offset=off)
            q.finish()
            del b
        out["pinned-chunks"] = best(pinned_chunks)
        print(f"{mb} MB: " + ", ".join(f"{k} {n / v / 1e9:.1f} GB/s" for k, v in out.items()),
              flush=True)


if __name__ == "__main__":
    main()
