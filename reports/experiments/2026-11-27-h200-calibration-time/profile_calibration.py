"""Where a fresh calibration's time goes: clspmv.model.calibrate under cProfile.

    python profile_calibration.py DEVICE OUT_PREFIX [ROUNDS]

ROUNDS: clspmv.model.probes.MAX_COVERED_ROUNDS for this run (the library's where left out).

Writes OUT_PREFIX.txt (the calibration's seconds, then the functions of most cumulative and
most own time).
"""

import cProfile
import io
import pstats
import sys
import time

import clspmv
from clspmv.model import calibrate, probes


def main() -> None:
    device, prefix = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        probes.MAX_COVERED_ROUNDS = int(sys.argv[3])
    dev = clspmv.select_device(device)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    cal = calibrate(dev, progress=False)
    prof.disable()
    wall = time.perf_counter() - t0
    text = io.StringIO()
    text.write(f"{dev.name}: calibration {cal.seconds:.1f} s ({wall:.1f} s under the profiler), "
               f"MAX_COVERED_ROUNDS {probes.MAX_COVERED_ROUNDS}\n")
    for key in ("cumulative", "tottime"):
        text.write(f"\n# by {key}\n")
        pstats.Stats(prof, stream=text).sort_stats(key).print_stats(45)
    with open(prefix + ".txt", "w") as fh:
        fh.write(text.getvalue())
    print(text.getvalue()[:6000])


if __name__ == "__main__":
    main()
