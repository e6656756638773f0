"""DeviceMatrix.from_scipy's time on a device, first call and least of REPEATS more, per
format, in this process: python upload_ab.py DEVICE SPEC FORMATS [REPEATS] (run it from two
checkouts alternately, in fresh processes, to compare them; CLSPMV_CALIBRATE=0 so that no
calibration or ELL order is measured)."""
import sys
import time

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
from clspmv.model import features, refusal

device, spec, formats = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
A = resolve_all([spec])[0].load()
dev = select_device(device)
for fmt in formats:
    if refusal(fmt, features(A.tocsr(), dev.simd_width)) is not None:
        continue
    times = []
    for _ in range(1 + repeats):
        t0 = time.perf_counter()
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
        dev.queue.finish()
        times.append(time.perf_counter() - t0)
        del M
    print(f"{spec[:36]:36s} {fmt:12s} nnz {A.nnz:9d} from_scipy first {times[0] * 1e3:7.1f} ms, "
          f"least of {repeats} more {min(times[1:]) * 1e3:7.1f} ms", flush=True)
