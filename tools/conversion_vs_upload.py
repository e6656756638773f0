"""CSR-family conversions against the upload of the CSR arrays they share (issue 42's target:
every CSR-family conversion from a CSR the caller gives within 1.5x of uploading its arrays).

For each matrix (a ``gen:`` spec of ``clspmv bench``, a ``.mtx`` path, ``ss:GROUP/NAME``), in
float64, on one device, it times (median of ``--repeat``, ms, each finished with
``device.queue.finish()``; one untimed conversion of each first, so that kernel builds are
left out):

* ``upload``: the canonical CSR's ``indptr``, ``indices`` and ``data`` copied into fresh device
  buffers (``cl.Buffer`` and ``cl.enqueue_copy``): the yardstick;
* ``from_scipy``: ``DeviceMatrix.from_scipy(A, format=f)`` of that CSR for every CSR kernel
  ``f`` (``csr-aligned`` only where no row needs padding: else it stores padded arrays of its
  own), and its ratio to ``upload``;
* ``retuned``: ``M.retuned(format=f)`` of a ``csr-vector`` matrix (the arrays shared, only
  ``f``'s metadata built and uploaded), and its ratio to ``upload``.

``--check`` compares one product of every matrix made against scipy's. ``--out`` appends the
figures as JSON lines. On the GPU node::

    python tools/conversion_vs_upload.py --device gpu --check --out conversion.jsonl \\
        gen:poisson2d:k=3000 gen:powerlaw:n=3000000,k=15,local=0.7,seed=1 \\
        gen:random:n=4000000,k=10
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import scipy.sparse as sp
from tabulate import tabulate

import clspmv
from clspmv.bench.sources import resolve

KERNELS = ("csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks", "csr-merge", "csr-aligned")
ALIGNMENT = 16
"""csr-aligned shares the CSR arrays only where every row's length is a multiple of this."""
SOURCE = "csr-vector"
"""The format the ``retuned`` column switches from."""


def median_ms(run: Callable[[], object], device: clspmv.Device, repeat: int) -> float:
    """Median wall time of ``run()`` and the queue's finish, in ms (what it returns dropped
    before the next run, so that device memory is freed)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        device.queue.finish()
        times.append((time.perf_counter() - start) * 1e3)
        del result
        gc.collect()
    return statistics.median(times)


def upload(A: sp.csr_matrix, device: clspmv.Device) -> list[cl.Buffer]:
    """The three CSR arrays of ``A`` copied into new read-only device buffers."""
    buffers = []
    for a in (A.indptr, A.indices, A.data):
        buf = cl.Buffer(device.context, cl.mem_flags.READ_ONLY, max(a.nbytes, 1))
        if a.nbytes:
            cl.enqueue_copy(device.queue, buf, a)
        buffers.append(buf)
    return buffers


def product_error(M: clspmv.DeviceMatrix, A: sp.csr_matrix) -> float:
    """Largest difference of ``M @ x`` from scipy's over the bound of both roundings (``2 n eps
    |A| |x|`` per row, n the row's length, whatever the order of the sums): at most 1 when
    right."""
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    bound = 2 * np.diff(A.indptr) * np.finfo(np.float64).eps * (abs(A) @ abs(x)) + 1e-300
    return float(np.max(np.abs(M @ x - A @ x) / bound, initial=0.0))


def measure(spec: str, device: clspmv.Device, repeat: int, check: bool) -> list[dict]:
    """The records of one matrix (see the module docstring)."""
    A = sp.csr_matrix(resolve(spec).load(), dtype=np.float64)
    A.sum_duplicates()  # canonical: sorted, summed, int32 indices where they fit
    kernels = [f for f in KERNELS
               if f != "csr-aligned" or not np.any(np.diff(A.indptr) % ALIGNMENT)]
    upload(A, device)  # warm-up: the first buffers of a context cost more
    base = median_ms(lambda: upload(A, device), device, repeat)
    source = clspmv.DeviceMatrix.from_scipy(A, format=SOURCE, device=device)
    records = []
    for f in kernels:
        convert = lambda f=f: clspmv.DeviceMatrix.from_scipy(A, format=f, device=device)  # noqa: E731
        switch = lambda f=f: source.retuned(format=f)  # noqa: E731
        made, switched = convert(), switch()  # warm-up: the kernels built
        record = {"matrix": spec, "device": device.name, "dtype": "float64", "rows": A.shape[0],
                  "nnz": A.nnz, "csr_bytes": A.indptr.nbytes + A.indices.nbytes + A.data.nbytes,
                  "format": f, "repeat": repeat, "upload_ms": base,
                  "from_scipy_ms": median_ms(convert, device, repeat),
                  "retuned_ms": median_ms(switch, device, repeat)}
        if check:
            record["from_scipy_error"] = product_error(made, A)
            record["retuned_error"] = product_error(switched, A)
        del made, switched
        records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("matrices", nargs="+", help="gen: specs, .mtx paths or ss:GROUP/NAME")
    parser.add_argument("--device", help="clspmv device spec (default: the default device)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure")
    parser.add_argument("--check", action="store_true",
                        help="compare one product of each matrix made with scipy's")
    parser.add_argument("--out", help="append the records to this JSON-lines file")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    print(f"device: {device.name}")
    failed = False
    for spec in args.matrices:
        records = measure(spec, device, args.repeat, args.check)
        r0 = records[0]
        print(f"\n{spec}: {r0['rows']} rows, {r0['nnz']} entries, "
              f"{r0['csr_bytes'] / 1e6:.0f} MB of CSR arrays; upload {r0['upload_ms']:.1f} ms")
        rows = []
        for r in records:
            row = [r["format"], r["from_scipy_ms"], r["from_scipy_ms"] / r["upload_ms"],
                   r["retuned_ms"], r["retuned_ms"] / r["upload_ms"]]
            if args.check:
                ok = max(r["from_scipy_error"], r["retuned_error"]) <= 1
                failed |= not ok
                row.append(f"{'ok' if ok else 'WRONG'} ({r['from_scipy_error']:.2g}, "
                           f"{r['retuned_error']:.2g})")
            rows.append(row)
        headers = ["format", "from_scipy ms", "/ upload", "retuned ms", "/ upload"]
        print(tabulate(rows, headers + (["product / bound"] if args.check else []),
                       floatfmt=".2f"))
        if args.out:
            with open(args.out, "a") as out:
                out.writelines(json.dumps(r) + "\n" for r in records)
    if failed:
        raise SystemExit("a product differs from scipy's beyond its rounding bound")


if __name__ == "__main__":
    main()
