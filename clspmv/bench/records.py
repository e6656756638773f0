"""Benchmark records and the results files they are saved in (above 400 lines because the
record, its schema check and its files are one thing).

A :class:`Record` is one measurement: one matrix, one device, one format (or one baseline), one
value type and one operation (``spmv`` A x, and those of :mod:`clspmv.bench.operation`'s
registry: ``transpose``, ``matmat``, ``solver``, ``sweep``). It has a stable core (the fields
of the dataclass, the same for every operation), the fields its operation adds (``extra``; each
:class:`~clspmv.bench.operation.Operation` lists them in ``fields``) and ``speedups``, baseline
name -> that baseline's time / this record's. Records are plain data; the reports
(:mod:`clspmv.report`) are computed from them and the runs' meta data alone, so results of
several machines merge. How every number is made: :mod:`clspmv.bench.methodology`, copied into
each results.json.

``results.json`` holds ``{"meta": {...}, "records": [...]}``, each record its core fields, then
its operation's fields, then ``speedups``; it is rewritten atomically (a temporary file, then
``os.replace``) after every record, so an interrupted run keeps everything it measured;
``results.csv`` holds the same records, one row each (speedups as ``speedup_vs_<name>``).
Results of older runs (a flat union of every field, ``speedup_vs_<name>`` fields, no
``operation``) are read by :func:`read_json` through :func:`upgrade`; so are gzipped files
(``results.json.gz``: the committed reference reports are kept that way, a tenth of the size).
A file that is not such results (not JSON, a record without its device, a field of the wrong
type) raises :class:`ResultsFileError` naming the file, the record and the field.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import tempfile
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..device import Device
from ..errors import ClspmvError
from ..formats.base import round_up
from ..row_stats import MatrixStats

STATUSES = ("ok", "skipped", "failed", "wrong", "absent")
"""``ok`` measured; ``skipped`` the format cannot run on this matrix or device (unsuitable, too
large, out of memory, no fp64, time budget spent); ``failed`` the driver reported an error;
``wrong`` the product exceeded the error bound (its times are kept, but it is never "best");
``absent`` a baseline that is not available here (``reason`` says why)."""

RESULTS_FILES = ("results.json", "results.json.gz", "results.csv")
"""The files a run's records are saved in (``.gz``: a committed reference run)."""


@dataclass
class Record:
    """One measurement: the core fields every operation has. Times in milliseconds, rates in
    GFLOP/s and GB/s (1e9 per second); the formulas of the derived fields are
    :data:`clspmv.bench.methodology.FORMULAS`. ``extra`` holds the fields the record's operation
    adds, ``speedups`` baseline name -> that baseline's compared time / this record's (same
    matrix, dtype, run, operation, k and order)."""

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
    operation: str = "spmv"  # spmv or a registered operation
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
    threads: int | None = None
    params: str = ""
    # every operation beyond A x: the A x of the same format or baseline and the ratio to it
    spmv_ms: float | None = None
    ratio_to_spmv: float | None = None
    speedups: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def set_matrix_stats(self, s: MatrixStats) -> None:
        """Copy the Table I statistics of the matrix into the record."""
        self.av, self.max_minus_av, self.sigma = s.av, s.max_minus_av, s.sigma
        self.pct_sigma_over_av, self.pct_ell_hyb = s.pct_sigma_over_av, s.pct_ell_hyb

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values (NaN and infinities become None): the core fields,
        the operation's fields, then ``speedups``."""
        out = {k: _plain(getattr(self, k)) for k in FIELDS}
        out.update({k: _plain(v) for k, v in self.extra.items()})
        out["speedups"] = {k: _plain(v) for k, v in self.speedups.items()}
        return out

    @property
    def key(self) -> Key:
        """(matrix, device, format, dtype, operation, method, k, order): what identifies a
        measurement across runs."""
        return key_of(self.as_dict())

    def value(self, name: str) -> Any:
        """A core field or a field of the operation (``extra``); None where it has none."""
        return getattr(self, name) if name in FIELDS else self.extra.get(name)


Key = tuple[str, str, str, str, str, str, int | None, str]
"""What identifies a measurement across runs (:attr:`Record.key`)."""

FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Record)
                               if f.name not in ("speedups", "extra"))
"""The core fields in order: the first keys of every record and the first columns of
results.csv."""

DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Record)
                            if f.default is not MISSING and f.name in FIELDS}
"""Default of every core field that has one: what a record of an older run lacks."""

SPEEDUP_PREFIX = "speedup_vs_"
"""Older records' (and results.csv's) name of a speedup: ``speedup_vs_<baseline>``."""


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def device_label(device: Device) -> str:
    """How a device is named in records: ``name (platform)``."""
    return f"{device.name} ({device.platform})"


def ell_bytes(rows: int, longest: int, simd_width: int, value_bytes: int) -> int:
    """Bytes of plain ELLPACK on a device: rows padded to the SIMD width x longest row."""
    return round_up(rows, simd_width) * longest * (value_bytes + 4)


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


def upgrade(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` as today's records read: every core field it lacks set to its default, and
    the ``speedup_vs_<name>`` fields of older runs gathered into ``speedups`` (the
    compatibility reader of old results.json files). Today's records come back unchanged."""
    missing = {k: v for k, v in DEFAULTS.items() if k not in record}
    old = [k for k in record if k.startswith(SPEEDUP_PREFIX)]
    if not missing and not old and "speedups" in record:
        return record
    out = {k: v for k, v in record.items() if k not in old}
    out.update(missing)
    speedups = dict(record.get("speedups") or {})
    speedups.update({k.removeprefix(SPEEDUP_PREFIX): record[k] for k in old
                     if record[k] is not None})
    out["speedups"] = speedups
    return out


with_defaults = upgrade
"""The former name of :func:`upgrade`."""


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[IO[Any]], object], binary: bool = False) -> None:
    """Write ``path`` through ``write(file)`` atomically: into a temporary file beside it, then
    renamed over it, so that a reader (or an interrupt) never finds it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # as open() would make it (mkstemp's is 0600)
            os.fchmod(fd, 0o666 & ~_umask())
        with (os.fdopen(fd, "wb") if binary
              else os.fdopen(fd, "w", newline="", encoding="utf-8")) as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, meta: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write ``{"meta": meta, "records": records}`` atomically."""
    atomic_write(path, lambda fh: json.dump({"meta": meta, "records": records}, fh, indent=1,
                                            allow_nan=False))


def csv_row(record: dict[str, Any]) -> dict[str, Any]:
    """A record as one row of results.csv: ``speedups`` become ``speedup_vs_<name>`` columns."""
    row = {k: v for k, v in record.items() if k != "speedups"}
    row.update({SPEEDUP_PREFIX + k: v for k, v in (record.get("speedups") or {}).items()})
    return row


def write_csv(path: Path, records: list[dict[str, Any]]) -> None:
    """Write the records as CSV (columns :data:`FIELDS`, the speedups, then the operations'
    fields) atomically."""
    rows = [csv_row(r) for r in records]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    speedups = [k for k in keys if k.startswith(SPEEDUP_PREFIX) and k not in FIELDS]
    extra = [k for k in keys if k not in FIELDS and k not in speedups]

    def write(fh) -> None:
        writer = csv.DictWriter(fh, fieldnames=[*FIELDS, *speedups, *extra],
                                extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if v is None else v for k, v in r.items()})

    atomic_write(path, write)


def results_path(folder: str | Path) -> Path:
    """The results file of a results folder: ``results.json``, or ``results.json.gz`` where only
    that exists (a committed reference report)."""
    plain = Path(folder) / "results.json"
    packed = plain.with_name("results.json.gz")
    return packed if packed.exists() and not plain.exists() else plain


def read_results(path: str | Path) -> Any:
    """The parsed JSON of a results file, gzipped (``.gz``) or not."""
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(path.read_text(encoding="utf-8"))


class ResultsFileError(ClspmvError, ValueError):
    """A results file that cannot be read back: missing, not JSON, not clspmv results, or with a
    record or meta field of the wrong kind; the message names the file, the place and the fix."""


_REWRITE = "rerun clspmv bench, or repair the file"

_META_KINDS: dict[str, tuple[type, ...]] = {
    "tool": (str,), "command": (str,), "note": (str,), "started": (str, type(None)),
    "finished": (str, type(None)), "interrupted": (bool,), "host": (dict,),
    "versions": (dict,), "git": (dict, type(None)), "devices": (list,), "settings": (dict,),
    "method": (list,), "formulas": (dict,), "definitions": (dict,), "not_run": (list,),
    "runs": (list,), "thread_pools": (list, str)}
"""The JSON kinds of the meta fields the reports read (a field may be missing: older runs)."""


def _json_kinds(hint: Any) -> tuple[type, ...]:
    """The JSON values a field annotated ``hint`` takes (a float also as an integer)."""
    kinds: list[type] = []
    for part in typing.get_args(hint) or (hint,):
        kinds += [int, float] if part is float else [part]
    return tuple(kinds)


_RECORD_KINDS = {name: _json_kinds(hint) for name, hint in typing.get_type_hints(Record).items()
                 if name in FIELDS}
"""The JSON kinds of each core field, from :class:`Record`'s annotations (the one schema of a
record; the records of every older run have them, since no core field ever changed its type)."""

REQUIRED = tuple(name for name in FIELDS if name not in DEFAULTS)
"""The core fields without a default: what every record of every run has."""


def _kind_problem(value: Any, kinds: tuple[type, ...]) -> str:
    """Why ``value`` is not one of the JSON ``kinds`` ('' where it is)."""
    if isinstance(value, kinds) and (not isinstance(value, bool) or bool in kinds):
        return ""
    names = " or ".join(dict.fromkeys(
        {str: "text", int: "a number", float: "a number", bool: "true/false", dict: "an object",
         list: "a list", type(None): "null"}[k] for k in kinds))
    return f"is {json.dumps(value)[:40]}, expected {names}"


def _check_meta(meta: Any, where: str) -> None:
    """ResultsFileError unless ``meta`` is a run's meta (or merged runs'): an object whose
    fields the reports read are of their kinds, every device with a ``label`` and ``type``."""
    if not isinstance(meta, dict):
        raise ResultsFileError(f"{where}: 'meta' is not an object; {_REWRITE}")
    for name, kinds in _META_KINDS.items():
        problem = _kind_problem(meta[name], kinds) if name in meta else ""
        if problem:
            raise ResultsFileError(f"{where}: meta field '{name}' {problem}; {_REWRITE}")
    for i, device in enumerate(meta.get("devices", ())):
        if not (isinstance(device, dict) and isinstance(device.get("label"), str)
                and isinstance(device.get("type"), str)):
            raise ResultsFileError(f"{where}: meta device {i + 1} has no 'label' and 'type' "
                                   f"texts; {_REWRITE}")
    pools = meta.get("thread_pools", ())
    if not isinstance(pools, str) and not all(isinstance(pool, dict) for pool in pools):
        raise ResultsFileError(f"{where}: meta field 'thread_pools' holds something other than "
                               f"objects; {_REWRITE}")
    for run in meta.get("runs", ()):
        _check_meta(run, where)


def _check_record(record: Any, where: str) -> None:
    """ResultsFileError unless ``record`` (read from JSON, before :func:`upgrade`) has every
    field of :data:`REQUIRED` and each core field it has is of its kind."""
    if not isinstance(record, dict):
        raise ResultsFileError(f"{where} is not an object; {_REWRITE}")
    missing = [name for name in REQUIRED if name not in record]
    if missing:
        raise ResultsFileError(
            f"{where} has no {', '.join(map(repr, missing))} (every record has "
            f"{', '.join(REQUIRED)}); {_REWRITE}")
    for name, kinds in _RECORD_KINDS.items():
        problem = _kind_problem(record[name], kinds) if name in record else ""
        if problem:
            raise ResultsFileError(f"{where}: '{name}' {problem}; {_REWRITE}")
    speedups = record.get("speedups", {})
    if not isinstance(speedups, dict) or any(
            _kind_problem(v, (int, float, type(None))) for v in speedups.values()):
        raise ResultsFileError(f"{where}: 'speedups' is not an object of numbers; {_REWRITE}")


def read_json(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, records) of a results.json (or results.json.gz; a folder: the one in it, see
    :func:`results_path`), every record read by :func:`upgrade`; :class:`ResultsFileError`
    naming the file and the fix when it is not one."""
    path = Path(path)
    if path.is_dir():
        if not results_path(path).is_file():
            raise ResultsFileError(f"{path}: is a folder without results.json; pass a "
                                   "results.json written by clspmv bench (or its folder)")
        path = results_path(path)
    try:
        data = read_results(path)
    except OSError as err:  # missing, unreadable, or a .gz file that is not gzip
        raise ResultsFileError(f"{path}: {err.strerror or err}; pass a results.json written by "
                               "clspmv bench (or its folder)") from None
    except EOFError as err:  # a .gz file cut short
        raise ResultsFileError(f"{path}: the file is cut short ({err}); {_REWRITE}") from None
    except ValueError as err:  # not JSON (or cut short), or not UTF-8
        raise ResultsFileError(f"{path}: not a JSON file ({err}); pass a results.json written "
                               "by clspmv bench") from None
    if not isinstance(data, dict) or "records" not in data or "meta" not in data:
        raise ResultsFileError(f"{path}: not a clspmv results file (no 'meta' and 'records')")
    _check_meta(data["meta"], str(path))
    records = data["records"]
    if not isinstance(records, list):
        raise ResultsFileError(f"{path}: 'records' is not a list; {_REWRITE}")
    for i, record in enumerate(records):
        _check_record(record, f"{path}: record {i + 1} of {len(records)}")
    return data["meta"], [upgrade(r) for r in records]


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
