"""DIA: one padded array per occupied diagonal (``spmv-model-autoselect.txt``).

A value stored on a diagonal cannot be told apart from a gap in that diagonal, so DIA treats
explicit zeros as absent: the kernel skips zero values (an explicit zero times an infinite x gives
no NaN here, unlike CSR), and :meth:`DeviceMatrix.to_scipy` returns no explicit zeros.

``diagonal_runs`` (default: on where the layout runs work-items in lockstep, i.e. GPUs) is the
kernels' ``DIAGONAL_RUNS``: the host stores, for every stretch of :data:`RUN_ROWS` rows (and of
as many columns, for the transpose), the run of diagonals that crosses it inside the matrix
(the offsets ascend, so it is contiguous); the kernels loop over that run only, branch-free,
reading the zeros of the padding at the matrix's edges. On the H200 that made DIA's product
1.1-1.7x faster than with a bounds test and a branch per diagonal, and a matrix whose diagonals
wrap around (offsets d and d - n) reads only the half crossing each stretch; on CPUs (PoCL) the
branch-free loop was slower and stays off (``reports/2026-11-26-dia``).

``row_chunks`` (default: on where the layout is not lockstep, i.e. CPUs) is the forward kernel
``dia_spmv_chunks`` (``ROW_CHUNKS``): work-groups of one work-item, each taking a run of whole
chunks of :data:`ROW_CHUNK` rows (:data:`CHUNK_ITEMS_PER_UNIT` runs per compute unit) and, for
each diagonal, the chunk's rows it crosses in one loop over consecutive values and entries of x,
which PoCL's compiler vectorises; the chunk's sums stay in an array until its rows are stored,
or, in a chunk that every diagonal crosses whole (all but the chunks at the matrix's edges), in
vectors the kernel stores into y whole (``CHUNK_VW``: float32 and float64 without a column map;
1.05-1.26x in float64 with PoCL 3.1 on the 2-core Xeon,
``reports/experiments/2026-11-29-dia-chunk-vectors``; the whole-vector store of y 1.06-1.67x on
a 16-core Xeon with PoCL 5.0, ``reports/experiments/2026-11-30-dia-vector-store``), vectors of
64 bytes, or of 32 where the device's compiler aborts on wider ones
(:attr:`clspmv.Device.narrow_vectors`: PyPI's PoCL 3.0 on a Zen 4).
The values are stored chunk by chunk (:func:`chunked_values`): each chunk holds the slots of its
run of diagonals only (:func:`chunk_runs`: those crossing it inside the matrix), one diagonal
after another, so that a chunk's walk reads one stream of values instead of one per diagonal,
and a diagonal's stretch outside the matrix (half of every diagonal of a matrix whose diagonals
wrap around) is neither stored nor read.
On the 2-core Zen 4 CPU the kernel with one array per diagonal was 1.4-3.3x faster than a
work-item per row and ahead of ``ellr`` and ``csr-blocks`` on banded matrices in the cache, but
0.6-0.7x of ``ellr`` on a 27-point stencil of 30 M entries (27 streams of values;
``reports/2026-11-26-cpu-2core-zen4-dia``). Chunk by chunk, on a 2-core Zen 5 CPU with PoCL 3.1,
that stencil's product took 2.3x less time (1.3x ahead of ``ellr`` in float64, 1.9-2.3x in
float32), constant-offset rows wrapping around 4x less (1.4x ahead of ``ellr`` in float64,
2.4x in float32), the Poisson and banded matrices 1.8-3.2x ahead of the best other format; on a
16-core Xeon with PoCL 5.0 (every matrix in its 300 MB cache) the layouts changed nothing and
DIA stayed at 0.7-1.1x of the best other format, which the calibrated model sees
(``reports/2026-11-26-cpu-2core-zen5-dia-layout``). GPUs keep a work-item per row. Intel's CPU
runtime, which vectorises across work-items, runs the row chunks too: on a 2-core Zen 4 (AMD
EPYC, runtime 2026.22) a work-item per row took 2.6-6.1x their kernel time in float64 on bands
of 3-32 diagonals, Poisson matrices and a 27-point stencil (where the row chunks ran 1.5-3.9x
ahead of ``csr-blocks``), 3.9-6.6x in float32, 1.4-1.6x in ``dtype="mixed"``
(``reports/experiments/2026-11-30-intel-dia-chunks``); on a 2-core Xeon (the vector kernel of
``reports/experiments/2026-11-29-dia-chunk-vectors``, ``xeon-intel*.txt``) the work-item per row
took 0.81-0.89x their time on two bands of 3 and 16 diagonals and a Poisson matrix of 5 M
entries, 1.0-5.5x on the other ten matrices of 5-64 diagonals, in float32 1.03-7.9x on all
eight. Below 27 diagonals the Xeon had kept the work-item per row, with which ``format="auto"``
took ``dia`` on bands and Poisson matrices at 0.65-0.85 of the fastest format on the Zen 4.

As a block with a column map the diagonals are those of the compact numbering (column ``c`` of
the block, entry ``column_map[c]`` of x): the kernels handle it like every format, but a map that
scatters the columns leaves few full diagonals, so such a block pads more (and is refused sooner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Format,
    Layout,
    Triplets,
    check_padding,
    round_up,
    scalar,
)
from .conversion import check_flag, entry_diagonals, occupied_diagonals
from .costs import RowShape

if TYPE_CHECKING:
    from ..model.features import Features

ROW_CHUNK = 64
"""Rows whose sums a work-item of the ``row_chunks`` kernel keeps while it walks the diagonals, and
the rows of one chunk of its values."""

CHUNK_ITEMS_PER_UNIT = 16
"""Work-items of the ``row_chunks`` kernel per compute unit (as ``csr-blocks``'s blocks), each a
run of whole chunks of rows."""

RUN_ROWS = 32
"""Rows (columns in the transpose) that share one run of diagonals with ``diagonal_runs``: a
warp of NVIDIA GPUs, so that its work-items loop alike."""


def stretch_runs(offsets: np.ndarray, lines: int, span: int, sign: int,
                 stretch: int = RUN_ROWS) -> np.ndarray:
    """``[first, end)`` (int32, interleaved) of the ascending ``offsets`` crossing each stretch of
    ``stretch`` of ``lines`` rows (``sign=1``: offsets o with 0 <= r + o < ``span`` columns for
    some row r of it) or columns (``sign=-1``: 0 <= c - o < ``span`` rows)."""
    top = np.arange(0, lines, stretch, dtype=np.int64)
    bottom = np.minimum(top + stretch, lines) - 1
    if sign > 0:  # -r <= o < span - r
        first, end = np.searchsorted(offsets, -bottom), np.searchsorted(offsets, span - top)
    else:  # c - span < o <= c
        first, end = np.searchsorted(offsets, top - span + 1), np.searchsorted(offsets, bottom + 1)
    runs = np.empty((top.size, 2), INDEX_DTYPE)
    runs[:, 0], runs[:, 1] = first, np.maximum(end, first)
    return runs.ravel()


def chunk_runs(offsets: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``row_chunks``' table (int32, three per chunk of :data:`ROW_CHUNK` rows): the run
    ``[first, end)`` of the ascending ``offsets`` crossing the chunk inside the matrix, and the
    chunk's first stored diagonal (the values' offset in units of ROW_CHUNK slots: the runs of
    the chunks before it)."""
    runs = stretch_runs(offsets, rows, cols, 1, ROW_CHUNK).reshape(-1, 2).astype(np.int64)
    lengths = runs[:, 1] - runs[:, 0]
    table = np.column_stack([runs, np.cumsum(lengths) - lengths])
    return table.astype(INDEX_DTYPE).ravel()


def chunked_values(val: np.ndarray, n_diags: int, table: np.ndarray, back: bool = False
                   ) -> np.ndarray:
    """``row_chunks``' order of DIA's values: for each chunk of :data:`ROW_CHUNK` rows the slots
    of the diagonals of its run (:func:`chunk_runs`' ``table``) one diagonal after another (the
    kernels' ``SLOT``), from the order of one whole diagonal after another (the rows a multiple
    of ROW_CHUNK); ``back=True``: the other way, zeros off the runs."""
    runs = table.reshape(-1, 3).astype(np.int64)
    diagonal = np.arange(n_diags)
    crossing = (diagonal >= runs[:, :1]) & (diagonal < runs[:, 1:2])  # chunks x diagonals
    shape = (n_diags, runs.shape[0], ROW_CHUNK)
    if not back:
        return np.ascontiguousarray(val.reshape(shape).transpose(1, 0, 2)[crossing]).ravel()
    out = np.zeros((runs.shape[0], n_diags, ROW_CHUNK), val.dtype)
    out[crossing] = val.reshape(-1, ROW_CHUNK)
    return out.transpose(1, 0, 2).ravel()


class Dia(Format):
    """Diagonal storage; refused (UnsuitableFormatError) when diagonals would be mostly padding."""

    name = "dia"
    probed_in = ("quick cpu", "quick cpu large band")  # unprobed, CPU choices missed it most
    kernel_file = "dia.cl"
    transpose_atomics = False  # the transpose kernel gathers along the diagonals
    zeros_absent = True
    pads = True
    trial_family = "ell"
    conversion_kind = "layout"
    padded = True
    counts_diagonals = True
    x_streamed = True
    """x is read along the diagonals, a stream per diagonal whose lines the next rows reuse:
    fitted, the model's ``xbytes`` term took weight in one 2-core Zen 5 calibration of two and
    put ``dia`` behind ``csr-blocks`` on a 2-D Poisson matrix and bands where dia measured
    1.7-2.8 times faster; replayed without it on the Xeon's and the H200's measurements, no
    choice was worse (``reports/2026-11-26-auto-targets/dia-xbytes-replay.txt``)."""
    even_loops = True  # every row runs over every diagonal
    walks_longest = True

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """Every occupied diagonal over every row (padded to C)."""
        return shape.diagonals * round_up(shape.rows, shape.simd_width)

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        """Of its diagonals only the stretches inside the matrix (the slots its kernel reads,
        :attr:`~clspmv.model.features.Features.diagonal_rows`), and the offsets."""
        return f.diagonal_rows * f.itemsize + f.diagonals * 4

    @classmethod
    def padded_bytes(cls, f: Features) -> int:
        return f.slots_of(cls.name) * f.itemsize + f.diagonals * 4

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, diagonal_runs: bool | None = None,
                 row_chunks: bool | None = None) -> Dia:
        """``diagonal_runs``: True or False, or None for on where ``layout`` is lockstep;
        ``row_chunks``: True or False, or None for on where it is not (CPUs)."""
        runs = check_flag("diagonal_runs", diagonal_runs, layout.lockstep)
        m, n = csr.shape
        offsets = occupied_diagonals(csr)  # ascending: the kernels rely on it
        chunks = check_flag("row_chunks", row_chunks, not layout.lockstep)
        n_pad = round_up(m, ROW_CHUNK if chunks else layout.simd_width)
        check_padding(cls.name, offsets.size * n_pad * csr.dtype.itemsize + offsets.size * 4, csr)
        # entry (r, c) on diagonal d = c - r + (m - 1) goes to rank(d) * n_pad + r, that is to
        # start[d] + c with start[d] = rank(d) * n_pad - (d - (m - 1))
        start = np.zeros(max(m + n - 1, 0), np.int64)
        start[offsets + (m - 1)] = np.arange(offsets.size, dtype=np.int64) * n_pad
        start -= np.arange(1 - m, n, dtype=np.int64)
        val = np.zeros(offsets.size * n_pad, csr.dtype)
        for first, stop, diagonal in entry_diagonals(csr):
            where = start[diagonal]
            where += csr.indices[first:stop]
            val[where] = csr.data[first:stop]
        arrays = {"offsets": offsets.astype(INDEX_DTYPE), "val": val}
        if chunks:  # chunk by chunk of rows, each chunk's run of diagonals one after another
            arrays["chunks"] = chunk_runs(offsets, m, n)
            arrays["val"] = chunked_values(val, offsets.size, arrays["chunks"])
        if runs:
            arrays["runs"] = stretch_runs(offsets, m, n, 1)
            arrays["runs_t"] = stretch_runs(offsets, n, m, -1)
        params = {"n_pad": n_pad, "n_diags": int(offsets.size), "diagonal_runs": int(runs),
                  "row_chunks": int(chunks)}
        if chunks:  # whole chunks of rows, CHUNK_ITEMS_PER_UNIT runs of them per compute unit
            items = max(1, layout.compute_units) * CHUNK_ITEMS_PER_UNIT
            params["rows_per_item"] = round_up(max(-(-m // items), 1), ROW_CHUNK)
        return cls(csr.shape, csr.dtype, layout, arrays, **params)

    def defines(self) -> dict[str, object]:
        p = self.params
        return {**({"DIAGONAL_RUNS": RUN_ROWS} if p.get("diagonal_runs") else {}),
                **({"ROW_CHUNKS": ROW_CHUNK} if p.get("row_chunks") else {})}

    def prepare_kernels(self) -> None:
        if self.params.get("row_chunks"):
            self._kernel = self.kernel(self.kernel_file, "dia_spmv_chunks", wg=1,
                                       **self.defines())
        else:
            self._kernel = self.kernel(self.kernel_file, "dia_spmv", **self.defines())

    def _args(self, runs: str) -> tuple[object, ...]:
        """The matrix arguments, with the runs of ``runs`` and the chunks' table (the offsets
        stand in, unread, without ``diagonal_runs`` and ``row_chunks``)."""
        p, b = self.params, self.buffers
        m, n = self.shape
        return (scalar(m), scalar(n), scalar(p["n_pad"]), scalar(p["n_diags"]), b["offsets"],
                b.get(runs, b["offsets"]), b.get("chunks", b["offsets"]), b["val"])

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        p = self.params
        if p.get("row_chunks"):
            items = -(-self.shape[0] // p["rows_per_item"])
            ev = self.run(queue, self._kernel, items, *self._args("runs"), x, y, alpha, beta,
                          scalar(p["rows_per_item"]), wg=1, row0=row0)
        else:
            ev = self.run(queue, self._kernel, self.shape[0], *self._args("runs"), x, y, alpha,
                          beta, row0=row0)
        return [ev] if ev else []

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        kern = self.lazy_kernel("t", self.kernel_file, "dia_spmv_t", **self.defines())
        ev = self.run(queue, kern, self.shape[1], *self._args("runs_t"), x, y, alpha, beta,
                      row0=row0)
        return [ev] if ev else []

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        n_pad = self.params["n_pad"]
        val = arrays["val"]
        if self.params.get("row_chunks"):
            val = chunked_values(val, arrays["offsets"].size, arrays["chunks"], back=True)
        where = np.flatnonzero(val)
        rows = where % n_pad
        cols = rows + arrays["offsets"][where // n_pad].astype(np.int64)
        return rows, cols, val[where]
