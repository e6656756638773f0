"""Benchmark records and the results files they are saved in.

A :class:`Record` is one measurement: one matrix, one device, one format (or one baseline:
``scipy``, ``mkl``, ``cusparse``), one value type and one operation: ``spmv`` (A x, every run),
``transpose`` (A^T x, ``clspmv bench --transpose``), ``matmat`` (A X for k columns,
``--matmat``), ``solver`` (time per iteration of a Krylov solver, ``--solver``) or ``sweep``
(A x by one kernel configuration, ``--sweep``). Records are
plain data; the reports (:mod:`clspmv.report`) are computed from them alone, so results of
several machines merge. Records of runs made before the operations existed have no
``operation`` field: :func:`read_json` fills in the defaults, so they load as ``spmv``.

``results.json`` holds ``{"meta": {...}, "records": [...]}`` and is rewritten atomically (a
temporary file, then ``os.replace``) after every record, so an interrupted run keeps everything
it measured; ``results.csv`` holds the same records, one row each.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..stats import MatrixStats

STATUSES = ("ok", "skipped", "failed", "wrong", "absent")
"""``ok`` measured; ``skipped`` the format cannot run on this matrix or device (unsuitable, too
large, out of memory, no fp64, time budget spent); ``failed`` the driver reported an error;
``wrong`` the product exceeded the error bound (its times are kept, but it is never "best");
``absent`` a baseline that is not available here (``reason`` says why)."""

BASELINES = ("scipy", "mkl", "cusparse")
"""Names of the baselines, used as a record's ``format``."""

OPERATIONS = ("spmv", "transpose", "matmat", "solver", "sweep")
"""What a record measures: A x; A^T x; A X for k right-hand sides; a solver's iterations; A x
by one kernel configuration of the parameter sweep."""


@dataclass
class Record:
    """One measurement. Times in milliseconds, rates in GFLOP/s and GB/s (1e9 per second).

    Derived fields, set by the runner:

    * ``gflops`` = 2 nnz / kernel_ms; ``gbps`` = min_bytes / kernel_ms;
    * ``min_bytes`` = nnz (value + 4-byte index) + 4 (rows + 1) + value (cols + rows): values and
      column indices of the entries, row pointers, x read once, y written once (beta = 0);
    * ``pct_copy_bw`` = 100 gbps / copy_gbps, the device's copy bandwidth measured in the run;
    * ``fits_cache``: min_bytes <= the device's cache (% of DRAM bandwidth may exceed 100);
    * ``breakeven_products``: products after which conversion to this format has paid for
      itself against ``csr-scalar`` (None: never, the format is not faster per product);
    * ``speedup_vs_X`` = baseline X's kernel time / this kernel time (same matrix, dtype, run,
      operation, k and order; for ``solver`` records the times per iteration). ``dtype``
      ``mixed`` (float32 values summed in float64) is compared with the float32 baselines;
    * ``max_rel_error`` = max |y - y_ref| / max |y_ref| of the checked product, y_ref the
      float64 product of the stored (rounded) values: what a precision costs in accuracy.

    The other operations (``operation`` is not ``spmv``) add:

    * ``transpose``: ``method`` ``atomic`` (the format's transpose kernel) or ``transpose``
      (the forward kernel of a transposed copy); ``one_time_ms`` the wall time of building the
      copy (``prepare_transpose``), ``extra_bytes`` its device memory; ``single_ms`` = one_time
      + kernel, one product from the stored matrix, and ``amortised_ms`` = one_time /
      amortised_over + kernel (the naive-SpMV paper's Fig. 3, whole operation vs multiplication
      only); ``breakeven_products`` of the copy: the smallest n with one_time + n kernel(copy)
      <= n kernel(atomic);
    * ``matmat``: ``k`` columns in ``order`` C or F, ``method`` ``block`` (the format's block
      kernel) or ``columns`` (one product per column); gflops = 2 nnz k / kernel_ms;
    * ``solver``: ``method`` the solver (``cg``), ``iterations`` run, ``ms_per_iteration`` =
      wall time of the solve / iterations, ``residual`` = |b - A x| / |b| at the end;
    * ``sweep``: A x by one kernel configuration (``clspmv bench --sweep``): ``method`` is
      ``T=<work-items per row> wg=<work-group size> unroll=<u> row|col`` (row- or column-major
      storage), the rates as for ``spmv``;
    * ``spmv_ms``: kernel time of A x by the same format (or baseline) in the same run, and
      ``ratio_to_spmv``: transpose kernel_ms / spmv_ms; matmat kernel_ms / (k spmv_ms) (its
      inverse is the speed-up over k separate products); solver ms_per_iteration / spmv_ms.
    """

    # what was measured
    matrix: str
    rows: int
    cols: int
    nnz: int
    device: str
    device_type: str
    format: str
    dtype: str
    kind: str = "format"  # "format" or "baseline"
    operation: str = "spmv"  # one of OPERATIONS
    method: str = ""  # transpose: atomic | transpose; matmat: block | columns; solver: cg
    k: int | None = None  # matmat: columns of X
    order: str = ""  # matmat: C or F (row- or column-major X and Y)
    status: str = "ok"
    reason: str = ""
    host: str = ""
    # matrix statistics (Table I of the ELLPACK-R paper)
    av: float | None = None
    max_minus_av: float | None = None
    sigma: float | None = None
    pct_sigma_over_av: float | None = None
    pct_ell_hyb: float | None = None
    # times
    kernel_ms: float | None = None
    kernel_ms_min: float | None = None
    kernel_ms_max: float | None = None
    repeats: int | None = None
    wall_ms: float | None = None
    host_conversion_ms: float | None = None
    upload_ms: float | None = None
    conversion_ms: float | None = None
    breakeven_products: int | None = None
    # rates and sizes
    gflops: float | None = None
    min_bytes: int | None = None
    gbps: float | None = None
    copy_gbps: float | None = None
    pct_copy_bw: float | None = None
    cache_bytes: int | None = None
    fits_cache: bool | None = None
    device_bytes: int | None = None
    ell_bytes: int | None = None
    reduction_vs_ell_pct: float | None = None
    # accuracy of the checked product: max |y - y_ref| / bound, <= 1 passes
    error_ratio: float | None = None
    # max |y - y_ref| / max |y_ref| against the float64 product of the stored values
    max_rel_error: float | None = None
    # baselines
    speedup_vs_scipy: float | None = None
    speedup_vs_mkl: float | None = None
    speedup_vs_cusparse: float | None = None
    threads: int | None = None
    params: str = ""
    # the other operations (see the class docstring)
    spmv_ms: float | None = None
    ratio_to_spmv: float | None = None
    one_time_ms: float | None = None
    extra_bytes: int | None = None
    single_ms: float | None = None
    amortised_ms: float | None = None
    amortised_over: int | None = None
    iterations: int | None = None
    ms_per_iteration: float | None = None
    residual: float | None = None

    def set_matrix_stats(self, s: MatrixStats) -> None:
        """Copy the Table I statistics of the matrix into the record."""
        self.av, self.max_minus_av, self.sigma = s.av, s.max_minus_av, s.sigma
        self.pct_sigma_over_av, self.pct_ell_hyb = s.pct_sigma_over_av, s.pct_ell_hyb

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values (NaN and infinities become None)."""
        return {k: _plain(v) for k, v in asdict(self).items()}

    @property
    def key(self) -> Key:
        """(matrix, device, format, dtype, operation, method, k, order): what identifies a
        measurement across runs."""
        return key_of(asdict(self))

    @property
    def compared_ms(self) -> float | None:
        """The time speedups compare: the kernel time, or a solver's time per iteration."""
        return self.ms_per_iteration if self.operation == "solver" else self.kernel_ms


Key = tuple[str, str, str, str, str, str, int | None, str]
"""What identifies a measurement across runs (:attr:`Record.key`)."""

FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Record))
"""Record fields in order: the columns of results.csv."""

DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Record)
                            if f.default is not MISSING}
"""Default of every field that has one: what a record of an older run lacks."""


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def min_bytes(rows: int, cols: int, nnz: int, value_bytes: int, k: int = 1) -> int:
    """Minimum bytes one product moves: entries (value + int32 column), int32 row pointers,
    x read once, y written once (beta = 0); with ``k`` right-hand sides X and Y have k
    columns."""
    return nnz * (value_bytes + 4) + 4 * (rows + 1) + value_bytes * k * (cols + rows)


def key_of(record: dict[str, Any]) -> Key:
    """:attr:`Record.key` of a record read back from JSON (an older record without the
    operation fields is an ``spmv`` one)."""
    return (record["matrix"], record["device"], record["format"], record["dtype"],
            record.get("operation", "spmv"), record.get("method", ""), record.get("k"),
            record.get("order", ""))


def with_defaults(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every field it lacks set to its default (older runs' records)."""
    missing = {k: v for k, v in DEFAULTS.items() if k not in record}
    return {**record, **missing} if missing else record


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, meta: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write ``{"meta": meta, "records": records}`` atomically."""
    _atomic_write(path, lambda fh: json.dump({"meta": meta, "records": records}, fh, indent=1,
                                             allow_nan=False))


def write_csv(path: Path, records: list[dict[str, Any]]) -> None:
    """Write the records as CSV (columns :data:`FIELDS`, then any others) atomically."""
    extra = sorted({k for r in records for k in r} - set(FIELDS))

    def write(fh) -> None:
        writer = csv.DictWriter(fh, fieldnames=[*FIELDS, *extra], extrasaction="ignore")
        writer.writeheader()
        for r in records:
            writer.writerow({k: "" if v is None else v for k, v in r.items()})

    _atomic_write(path, write)


def read_json(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, records) of a results.json, every record with all fields (:func:`with_defaults`);
    ValueError naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(data, dict) or "records" not in data or "meta" not in data:
        raise ValueError(f"{path}: not a clspmv results file (no 'meta' and 'records')")
    return data["meta"], [with_defaults(r) for r in data["records"]]


class Results:
    """The records of one run and its meta data, saved after every change."""

    def __init__(self, out_dir: Path, meta: dict[str, Any]) -> None:
        self.out_dir = Path(out_dir)
        self.meta = meta
        self.records: list[Record] = []

    @property
    def json_path(self) -> Path:
        return self.out_dir / "results.json"

    @property
    def csv_path(self) -> Path:
        return self.out_dir / "results.csv"

    def add(self, record: Record) -> Record:
        """Append ``record`` and save."""
        self.records.append(record)
        self.save()
        return record

    def save(self) -> None:
        """Rewrite results.json and results.csv (atomically, each)."""
        rows = [r.as_dict() for r in self.records]
        write_json(self.json_path, self.meta, rows)
        write_csv(self.csv_path, rows)
