"""Time and peak memory of a first ``DeviceMatrix.from_scipy(A)`` (``format="auto"``) on a fresh
cache: each run a new process with ``CLSPMV_CACHE_DIR`` set to an empty temporary folder, so the
calibration (and the ELL order) are measured as a new user's first line of code measures them.

    python tools/first_use.py [--runs 3] [--device 1:0] [--env CLSPMV_CALIBRATE=full]

The matrix is the 2-D Poisson matrix of ``gen:poisson2d:k=300`` (0.45 M entries). Prints per
run the seconds of ``from_scipy`` alone, the rise of the child's peak resident memory
(``ru_maxrss``) during it, the process's wall seconds and its peak resident memory, then their
medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, resource, sys, time
import clspmv
from clspmv.bench.sources import resolve
A = resolve("gen:poisson2d:k=300", progress=False).load()
device = clspmv.select_device(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
M = clspmv.DeviceMatrix.from_scipy(A, device=device)
seconds = time.perf_counter() - t0
extra = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"from_scipy_s": seconds, "extra_peak_mb": extra / 1024, "format": M.format,
                  "kind": M.selection.calibration}))
"""


def one_run(device: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh process's first use: from_scipy seconds, wall seconds, peak RSS (MB)."""
    with tempfile.TemporaryDirectory(prefix="clspmv-first-use-") as cache:
        child_env = {**os.environ, **env, "CLSPMV_CACHE_DIR": cache}
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, device], env=child_env, check=True,
                             capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        raise SystemExit("the child's peak was not above an earlier child's: run one per process")
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return {**rec, "wall_s": wall, "peak_mb": peak / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--env", nargs="*", default=[], help="NAME=VALUE for the child")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    recs = []
    for _ in range(args.runs):
        # one child per process of this script: ru_maxrss of children is their largest peak
        out = subprocess.run([sys.executable, __file__, "--one", args.device, json.dumps(env)],
                             check=True, capture_output=True, text=True)
        recs.append(json.loads(out.stdout))
        print(json.dumps(recs[-1]), flush=True)
    for key in ("from_scipy_s", "extra_peak_mb", "wall_s", "peak_mb"):
        print(f"median {key}: {statistics.median(r[key] for r in recs):.2f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(one_run(sys.argv[2], json.loads(sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
