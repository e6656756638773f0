"""Every format's product on block matrices (device-resident vectors, wall time of a batch of
products in a row, median of rounds alternating the formats), the fastest, and auto's choice
(default arguments, the cache given by CLSPMV_CACHE_DIR).

python bsr_vs_formats.py DEVICE SPEC... (prints one line per matrix and format)."""
import sys
import time

import numpy as np
import pyopencl.array as cla

import clspmv
from clspmv.bench.sources import resolve
from clspmv.errors import UnsuitableFormatError

ROUNDS, BATCH = 7, 10


def main(device: str, specs: list[str]) -> None:
    for spec in specs:
        A = resolve(spec).load().tocsr()
        auto = clspmv.DeviceMatrix.from_scipy(A, device=device)
        mats = {}
        for fmt in clspmv.FORMATS:
            if fmt == "strips":
                continue
            try:
                mats[fmt] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
            except (UnsuitableFormatError, clspmv.DeviceError):
                pass
        q = auto.device.queue
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
        xd = cla.to_device(q, x)
        yd = cla.zeros(q, A.shape[0], np.float64)
        ref = A @ x
        times = {f: [] for f in mats}
        for f, M in mats.items():
            M.matvec(xd, yd)
            q.finish()
            err = np.abs(yd.get() - ref).max() / max(np.abs(ref).max(), 1e-300)
            assert err < 1e-12, (spec, f, err)
        for r in range(ROUNDS):
            order = list(mats)[r % len(mats):] + list(mats)[:r % len(mats)]
            for f in order:
                M = mats[f]
                M.matvec(xd, yd)
                q.finish()
                t = time.perf_counter()
                for _ in range(BATCH):
                    M.matvec(xd, yd)
                q.finish()
                times[f].append((time.perf_counter() - t) / BATCH)
        med = {f: float(np.median(v)) for f, v in times.items()}
        best = min(med, key=med.get)
        other = min((f for f in med if f != "bsr"), key=med.get)
        print(f"{spec} nnz={A.nnz} block={mats['bsr'].params['block_size']} fastest={best} "
              f"{med[best]*1e3:.4f}ms | bsr {med['bsr']*1e3:.4f}ms = {med[other]/med['bsr']:.2f}x "
              f"best other ({other} {med[other]*1e3:.4f}ms) | auto={auto.format} "
              f"auto/fastest={med[best]/med[auto.format]:.2f}", flush=True)
        print("   ", " ".join(f"{f}={t*1e3:.4f}" for f, t in sorted(med.items(), key=lambda i: i[1])),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
