"""DistributedMatrix: a sparse matrix whose rows are spread over the ranks of an MPI
communicator, one OpenCL device per rank (pjds-multigpu.txt, section 3).

Each rank holds a contiguous row block, split into a *local* part (the columns it owns, i.e. its
slice of x) and a *non-local* part (columns owned by others, renumbered compactly in the order of
the halo buffer), each an ordinary :class:`clspmv.DeviceMatrix` in its own format. A product is
``y = alpha A_loc x_local + beta y`` then ``y += alpha A_nl x_halo``, with the halo exchanged by
the :class:`.plan.ExchangePlan` in one of the :mod:`.modes`.

The non-local part holds only the rows around those that have non-local entries (usually a thin
layer at the block's borders), listed in :attr:`DistributedMatrix.non_local_rows`. Where they
lie in one range of rows (:func:`.partition.non_local_span`) the part is stored over that range
and its product adds into y at a row offset (the formats' block mechanism), one kernel.
Otherwise it holds only those rows: its product goes into a scratch vector, which one small
kernel (``scatter_add`` of ``vector.cl``) adds into y at those rows; the transposed product
gathers x at those rows first. Stored over all the block's rows it would cost one work-item
(csr-scalar) or one row entry (ell) per row of the block for a few border rows. (The block
mechanism maps columns and shifts rows by a constant, which cannot express a row list; storing
the part transposed with the rows as a column map would turn the forward product into an atomic
transpose product.)

The exchange's device copies run on a second command queue of the device, so that they overlap
the local kernel on the first one (:mod:`.product`).

Formats: with ``format="auto"`` (the default) each rank chooses the format of each of its two
parts with :func:`clspmv.model.select`, as ``DeviceMatrix.from_scipy(format="auto")`` does (the
non-local part is a plain CSR matrix of its rows and halo columns, so every format can hold it);
:attr:`DistributedMatrix.formats` and :attr:`DistributedMatrix.selections` say what each rank
took and why. With ``CLSPMV_CALIBRATE=0`` and no stored calibration the choice follows the quick
default: deterministic. Rows: ``partition="auto"`` (the default) balances the predicted time of
the blocks where the device has a measured calibration (:mod:`.predicted`), else the entries.

(Above 400 lines: the class's whole public surface, construction, facts and products, in one
place; the pieces it assembles live in the sibling modules.)
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..device import Device
from ..errors import ClspmvWarning
from ..format_choice import CHOSEN
from ..matrix import DeviceMatrix
from ..vectors import DeviceVectors
from . import model, modes, staging
from .agreement import check_arguments
from .collective import CollectiveTimeout, DistributedError, agree, allgather, complete
from .graph import GRAPH, graph_source
from .partition import balanced_offsets
from .placement import choose_device, node_rank
from .plan import ExchangePlan
from .predicted import calibrate_in_turn, weigher
from .product import Product
from .source import row_block, split_block
from .timeline import Timeline

Array = np.ndarray | cl_array.Array


class DistributedMatrix:
    """A matrix distributed by row blocks over ``comm``; build one with :meth:`from_scipy`.

    Vectors are distributed too: ``x_local`` is this rank's slice ``col_range`` of x and
    ``y_local`` its slice ``row_range`` of y (for a square matrix both are the row block).
    Every product is collective: all ranks call it together. Call :meth:`close` (or use the
    matrix as a context manager) to free its communicator, requests and thread.

    What the ranks must share: :meth:`from_scipy` compares every rank's arguments before it
    builds anything (:mod:`.agreement`), and every step that may fail on one rank is agreed
    before the next collective call (:func:`.collective.agree`). A product is compared without a
    collective call of its own (which would add a latency to every product): the values a rank
    sends carry the number of its product, its kind, ``alpha`` and ``beta``
    (:mod:`.product_stamp`), and a rank that receives values of another product (a peer whose
    product raised on its own, or that skipped one, or called the other product, or passed
    other scalars) raises :class:`DistributedError`, as does a rank that waited
    ``CLSPMV_MPI_TIMEOUT`` seconds for a peer. After such an error the matrix cannot exchange
    any more: every product raises until it is closed. Each rank checks its own arguments before
    any communication; an error there leaves the matrix usable on that rank, but its next
    product is a step ahead of the others' (they raise, and then so does it). The :attr:`mode`
    is each rank's own.
    """

    def __init__(self, comm: Any, shape: tuple[int, int], row_offsets: np.ndarray,
                 col_offsets: np.ndarray, local: DeviceMatrix, non_local: DeviceMatrix | None,
                 plan: ExchangePlan, device: Device, mode: str, own_comm: Any,
                 counts: tuple[int, int, int] = (0, 0, 0),
                 non_local_rows: np.ndarray | None = None) -> None:
        """Assemble the parts (use :meth:`from_scipy`); ``counts``: (local entries, non-local
        entries, rows the non-local part stores) for :meth:`costs`; ``non_local_rows``: the rows
        of the block that the non-local part's rows are (all rows in order when None; a
        contiguous range is added into y at its first row, other rows by a scatter)."""
        self._counts = tuple(int(c) for c in counts)
        self.partition = "rows"
        """How the rows were cut: ``"time"``, ``"nnz"``, ``"rows"``, ``"weights"`` (given per
        row) or ``"offsets"`` (``row_offsets`` given); ``"auto"`` and ``"time"`` record what
        they became."""
        self._user_comm = comm
        self._comm = own_comm
        self._shape = (int(shape[0]), int(shape[1]))
        self.row_offsets = row_offsets
        """Rank k holds rows ``row_offsets[k]:row_offsets[k + 1]``."""
        self.col_offsets = col_offsets
        """Rank k owns x entries ``col_offsets[k]:col_offsets[k + 1]``."""
        self.local = local
        """The local part (columns of this rank, renumbered from 0)."""
        self.non_local = non_local
        """The non-local part (halo columns, numbered as the halo buffer; its rows are
        :attr:`non_local_rows`), None without any."""
        self.plan = plan
        self._device = device
        self._lock = threading.Lock()
        self._products = 0
        """Products called on this rank so far (those that raised too): each product's number
        in its :mod:`.product_stamp`."""
        self._broken: BaseException | None = None
        """The error of a product that failed after its exchange began (the exchange's state
        is then unknown): every later product raises."""
        self._worker: modes.CommThread | None = None
        self._mode = "vector"
        queue = device.queue
        dtype = local.dtype
        m, n = self.local_shape
        self._x_dev = cl_array.zeros(queue, n, dtype) if n else None
        self._y_dev = cl_array.zeros(queue, m, dtype) if m else None
        h = plan.halo_size
        self._halo_dev = cl_array.zeros(queue, h, dtype) if h else None
        self._exchange_queues = {timed: (_queue(device, timed), _queue(device, timed))
                                 for timed in (False, True)}
        """(copies down, copies up) without and with profiling: the exchange's copies down
        (device -> host) and the halo's up run on queues of their own, beside the kernels' and
        each other, so that both directions of the bus move during the local kernel."""
        self.time_copies = False
        """Whether the exchange's copies run on profiling queues (:attr:`timings`' ``staging``
        then counts them; a recorded timeline has them whatever this says); off by default: a
        profiled copy costs the host about 8 µs more (an H200 node: 19 against 11 µs)."""
        self.halo_readers: list[cl.Event] = []
        """The events of the latest kernels that read the halo (the non-local part's): the next
        copies up wait for them."""
        s = plan.send_size
        self._send_runs = _runs_of(plan.send_index)
        """Where the x entries this rank sends are at most :data:`DIRECT_RUNS` runs of
        consecutive ones (a grid's or a band's boundary rows, one run per peer): (first value
        of each run, its x index), the values copied down straight from x; else None (gathered
        by a kernel first)."""
        self._send_index_dev = self._send_dev = None
        if s and self._send_runs is None and plan.sends_by_index:
            self._send_index_dev = cl_array.to_device(queue, plan.send_index.astype(np.int32))
            self._send_dev = cl_array.zeros(queue, s, dtype)
        self._whole_dev = self._whole_index_dev = self._whole_halo_dev = None
        """The whole x slices received (:attr:`.plan.ExchangePlan.whole_size`), the index of
        the halo values in them, and those values gathered (then copied into the halo)."""
        if plan.whole_size:
            self._whole_dev = cl_array.zeros(queue, plan.whole_size, dtype)
            self._whole_index_dev = cl_array.to_device(queue,
                                                       plan.whole_index.astype(np.int32))
            self._whole_halo_dev = cl_array.zeros(queue, plan.whole_index.size, dtype)
        m_nl = 0 if non_local is None else non_local.shape[0]
        rows = np.arange(m_nl) if non_local_rows is None else np.asarray(non_local_rows)
        if rows.shape != (m_nl,):
            raise ValueError(f"non_local_rows has shape {rows.shape}, expected ({m_nl},)")
        self.non_local_rows = rows
        """Rows of this rank's block (from 0) that the non-local part's rows are, in order: the
        rows with non-local entries, or a range of rows around them."""
        self._rows_dev = self._scratch_dev = None
        self._row_offset: int | None = None
        """The first row of a non-local part stored over a range of rows short of the block."""
        if m_nl and m_nl < m:
            self._scratch_dev = cl_array.zeros(queue, m_nl, dtype)
            self._row_offset = _consecutive_from(rows)  # added into y at a row offset
            if self._row_offset is None:  # product into scratch, then added at these rows
                self._rows_dev = cl_array.to_device(queue, rows.astype(np.int32))
        # the zero fills above run on the kernels' queue: done before a copy on another queue can
        # write the same arrays (a halo filled after its first copy up read as zeros)
        queue.finish()
        self._vectors = DeviceVectors(device, dtype)
        self._events: dict[str, list] = {"local": [], "non_local": [], "staging": []}
        self._seconds = {"gather": 0.0, "communication": 0.0, "total": 0.0}
        self.permutation: np.ndarray | None = None
        """With ``partition="graph"``: the renumbering ``p`` of rows and columns (row i of the
        distributed matrix is row ``p[i]`` of the user's; :mod:`.graph`), else None."""
        self.record_timeline = False
        """Whether each product records its steps (:attr:`last_timeline`); off by default: the
        records cost the host about 20 µs per product on a GPU node's CPU."""
        self.last_timeline: Timeline | None = None
        """The host steps and OpenCL events of the latest product recorded
        (:attr:`record_timeline`; :mod:`.timeline`), None before the first."""
        self.mode = mode  # last: its thread is started once nothing else can fail

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scipy(cls, A: object, comm: Any = None, format: str | tuple[str, str] | None = "auto",
                   mode: str = "task", partition: object = "auto",
                   device: Device | str | None = None, dtype: object = None,
                   root: int | None = None, row_offsets: object = None,
                   pinned: bool | None = None, machine: model.Machine | str | None = None,
                   exchange: str | None = None, **params: object) -> DistributedMatrix:
        """Distribute ``A`` over the ranks of ``comm`` (default ``MPI.COMM_WORLD``); collective.

        ``A``: a scipy.sparse matrix (or dense 2-D array) given on every rank; or given on rank
        ``root`` only (the others pass None), which scatters the row blocks; or the path of a
        Matrix Market file that each rank reads only its rows of. ``partition``: ``"time"``
        (blocks of equal predicted kernel time, :mod:`.predicted`: the device's calibration is
        measured on first use unless ``CLSPMV_CALIBRATE=0``; without a measured one, by
        entries), ``"auto"`` (default: ``"time"`` where a measured calibration exists or
        ``format="auto"`` measures one anyway, else ``"nnz"``), ``"nnz"`` (blocks of equal
        stored entries), ``"rows"``, ``"graph"`` (rows renumbered by a graph partitioner,
        pymetis, to cut less halo; square matrices given in memory; :mod:`.graph`:
        :attr:`global_rows` are each rank's rows in the user's numbering) or a weight per row;
        ``row_offsets`` (``size + 1`` numbers) fixes the blocks instead; :attr:`partition`
        says which was used. Columns (the slices of x) follow the row blocks for a square
        matrix, else equal shares of the columns.
        ``format``: ``"auto"`` (default: each part's format chosen on each rank by
        :func:`clspmv.model.select`; :attr:`selections`), one name for both parts or a pair
        (local, non-local), ``"auto"`` allowed in it. ``mode``: see
        :mod:`clspmv.distributed.modes`. ``device``: a :class:`clspmv.Device`, a
        :func:`clspmv.select_device` spec, ``"local-rank"`` (GPU ``local_rank % gpus`` of each
        node) or None (see :mod:`.placement`). ``dtype`` and the
        format ``params`` as in :meth:`clspmv.DeviceMatrix.from_scipy`. ``pinned``: stage the
        exchange through pinned host memory (default: on GPUs). ``machine``: a
        :class:`.model.Machine` (e.g. from :func:`.model.probe`) or ``"probe"`` (measure one
        now, collective, a fraction of a second); when given, rank 0 warns if the model predicts
        less than :data:`.model.HELPS` times one rank's speed (numpy vectors: their staging
        counted). ``exchange``: how halo values move between ranks, ``"auto"`` (ranks of one
        node through a shared-memory window, others by MPI messages), ``"window"`` or
        ``"messages"`` (default: ``$CLSPMV_EXCHANGE``, else ``"auto"``;
        :mod:`.node_exchange`); every rank must pass the same.

        Every rank must pass the same ``A`` (or give it on ``root`` only), ``dtype``,
        ``format``, ``mode``, ``partition``, ``row_offsets``, ``root`` and kind of ``machine``
        (:data:`.agreement.FACTS`; ``device``, ``pinned`` and ``params`` may differ): one
        ``allgather`` compares them first, a matrix on every rank by shape, entries and a
        checksum of its arrays. Raises the error itself where every rank fails alike (an
        unknown mode, partition or format, say), and :class:`DistributedError` on every rank
        where the ranks disagree (naming each differing argument and its value per rank) or some
        ranks fail to check, read, convert or upload their part or to set up the exchange
        (naming the ranks and their errors). Each collective step waits at most
        :func:`.collective.timeout` seconds for the other ranks (``CLSPMV_MPI_TIMEOUT``), then
        raises :class:`.collective.CollectiveTimeout` (a rank on another communicator, say).
        """
        from mpi4py import MPI

        comm = MPI.COMM_WORLD if comm is None else comm
        args, source = check_arguments(comm, A, dtype, format, mode, partition, row_offsets,
                                       root, machine)
        formats = args.formats
        local_rank, local_size = node_rank(comm)
        dev = agree(comm, "choosing the device",
                    lambda: choose_device(device, local_rank, local_size))
        chosen = any(f in CHOSEN for f in formats)
        calibrate_in_turn(comm, dev, chosen or (args.timed and partition == "time"))
        weigh = (weigher(comm, dev, partition, formats[0]) if args.timed and row_offsets is None
                 else None)
        permutation = None
        if isinstance(partition, str) and partition == GRAPH:
            if row_offsets is not None:
                raise ValueError("row_offsets fixes the blocks and partition='graph' chooses "
                                 "them: give one of the two")
            source, permutation, row_offsets = graph_source(comm, source, root)
        block = row_block(comm, source, dtype, "nnz" if args.timed else partition,
                          row_offsets, root, weigh)
        del source  # the converted matrix: only this rank's rows are kept
        m, n = block.shape
        offsets = block.offsets
        cols = offsets if m == n else balanced_offsets(np.ones(n), comm.size)
        rank = comm.rank
        local_csr, nl_csr, halo, nl_rows = agree(
            comm, "splitting the row block",
            partial(split_block, block.rows, int(cols[rank]), int(cols[rank + 1])))
        del block
        value_dtype = local_csr.dtype if dtype is None else dtype

        def upload() -> tuple[DeviceMatrix, DeviceMatrix | None]:
            loc = DeviceMatrix.from_scipy(local_csr, format=formats[0], device=dev,
                                          dtype=value_dtype, **params)
            nl = None
            if halo.size:
                nl = DeviceMatrix.from_scipy(nl_csr, format=formats[1], device=dev,
                                             dtype=value_dtype)
            return loc, nl

        local, non_local = agree(comm, "building the local and non-local parts", upload)
        counts = (local_csr.nnz, nl_csr.nnz, int(nl_rows.size))
        use_pinned = dev.type == "gpu" if pinned is None else bool(pinned)

        own = comm.Dup()
        built: dict[str, Any] = {}

        def setup() -> DistributedMatrix:
            built["plan"] = ExchangePlan(own, halo, cols,
                                         staging.HostBuffers(dev, local.dtype, use_pinned),
                                         exchange=exchange)
            built["matrix"] = cls(comm, (m, n), offsets, cols, local, non_local, built["plan"],
                                  dev, args.mode, own, counts,
                                  None if non_local is None else nl_rows)
            return built["matrix"]

        try:
            D = agree(comm, "setting up the exchange", setup)
            D.permutation = permutation
            if permutation is not None:
                D.partition = GRAPH
            else:
                D.partition = ("offsets" if row_offsets is not None else "time" if weigh is not None
                               else "nnz" if args.timed
                               else partition if isinstance(partition, str) else "weights")
            if machine == "probe":
                machine = agree(comm, "probing the machine", lambda: model.probe(comm, dev))
            if machine is not None:
                helps, message = model.more_ranks_help(D.all_costs(), machine)
                if not helps and comm.rank == 0:
                    warnings.warn(message, ClspmvWarning, stacklevel=2)
        except BaseException as err:
            # every rank frees what it built, together (freeing the plan is collective), after
            # the agreement; not after a timeout: the late ranks are not there to free with
            if not isinstance(err, CollectiveTimeout):
                if "matrix" in built:
                    built["matrix"].close()
                else:
                    if "plan" in built:
                        built["plan"].free()
                    own.Free()
            raise
        return D

    def close(self) -> None:
        """Free the communicator, the persistent requests and the task-mode thread (collective:
        every rank closes together; afterwards a product on this rank raises
        :class:`DistributedError`, and one on a rank that did not close waits for the others)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._comm is not None:
            # a product whose result stays on the device may still be copying from or into the
            # window's memory (and a peer's): drain the queues before the memory goes
            for queue in (self._device.queue, *self._exchange_queues[False],
                          *self._exchange_queues[True]):
                queue.finish()
            self.plan.free()
            self._comm.Free()
            self._comm = None

    def __enter__(self) -> DistributedMatrix:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- facts ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """Global (rows, columns)."""
        return self._shape

    @property
    def local_shape(self) -> tuple[int, int]:
        """(rows of this rank, x entries this rank owns)."""
        return self.local.shape

    @property
    def row_range(self) -> tuple[int, int]:
        """The global rows ``start, stop`` of this rank (its slice of y)."""
        r = self._comm_rank
        return int(self.row_offsets[r]), int(self.row_offsets[r + 1])

    @property
    def global_rows(self) -> np.ndarray:
        """The user's indices of this rank's rows (its ``y_local``; for a square matrix also
        its ``x_local``): ``row_range`` as indices, or their renumbering by
        ``partition="graph"`` (:attr:`permutation`)."""
        r0, r1 = self.row_range
        rows = np.arange(r0, r1)
        return rows if self.permutation is None else self.permutation[r0:r1]

    @property
    def col_range(self) -> tuple[int, int]:
        """The global columns ``start, stop`` this rank owns (its slice of x)."""
        r = self._comm_rank
        return int(self.col_offsets[r]), int(self.col_offsets[r + 1])

    @property
    def _comm_rank(self) -> int:
        return self._user_comm.rank

    def _live(self) -> Any:
        """The matrix's own communicator; :class:`DistributedError` after :meth:`close` (whose
        freed requests would leave a product reading a stale halo)."""
        if self._comm is None:
            raise DistributedError("this DistributedMatrix is closed on this rank (close() freed "
                                   "its communicator and requests): build a new one")
        return self._comm

    def _product(self, x_local: Array, y_local: Array | None, alpha: float, beta: float,
                 transposed: bool = False) -> Product:
        """The next product's steps (its arguments checked; it counts even where they are
        wrong); :class:`DistributedError` once a product failed in its exchange."""
        self._live()
        if self._broken is not None:
            raise DistributedError(
                "this DistributedMatrix cannot exchange any more: an earlier product failed "
                f"during its exchange ({type(self._broken).__name__}: {self._broken}); close() "
                "it on every rank and build a new one") from self._broken
        self._products += 1
        return Product(self, x_local, y_local, alpha, beta, transposed, self._products)

    @property
    def comm(self) -> Any:
        """The communicator the matrix was built on."""
        return self._user_comm

    @property
    def dtype(self) -> np.dtype:
        """Value type of x, y and the stored values."""
        return self.local.dtype

    @property
    def device(self) -> Device:
        """This rank's device."""
        return self._device

    @property
    def formats(self) -> tuple[str, str | None]:
        """(local format, non-local format or None) of this rank."""
        return self.local.format, (None if self.non_local is None else self.non_local.format)

    @property
    def selections(self) -> tuple[Any, Any]:
        """(local, non-local) :class:`clspmv.model.Selection` of this rank: what
        ``format="auto"`` predicted and why it chose; None for a part whose format was named (or
        that does not exist)."""
        return self.local.selection, (None if self.non_local is None
                                      else self.non_local.selection)

    @property
    def mode(self) -> str:
        """``"vector"``, ``"overlap"`` or ``"task"``: this rank's schedule of a product; may be
        changed at any time, on any rank (not collective: every mode starts and completes the
        same exchange, so ranks in different modes still exchange correctly)."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        value = modes.check_mode(value)
        if value == "task" and self._worker is None:
            self._worker = modes.CommThread()
        self._mode = value

    @property
    def halo_size(self) -> int:
        """x entries this rank receives per product."""
        return self.plan.halo_size

    @property
    def bytes_exchanged(self) -> tuple[int, int]:
        """(bytes sent, bytes received) by this rank per product."""
        size = self.dtype.itemsize
        return self.plan.send_size * size, self.plan.halo_size * size

    @property
    def timings(self) -> dict[str, float]:
        """Seconds of the latest product on this rank: ``local`` and ``non_local`` (kernel time
        from profiling events), ``staging`` (host <-> device copies, from their events: the
        exchange's only where :attr:`time_copies` or :attr:`record_timeline` is on),
        ``gather`` (host time filling the send buffer), ``communication`` (start to completion of
        the exchange, wall clock) and ``total`` (the call, wall clock)."""
        out = {name: staging.seconds(events) for name, events in self._events.items()}
        out.update(self._seconds)
        return out

    def costs(self) -> model.RankCosts:
        """What this rank moves per product, for :mod:`.model`."""
        m, n = self.local_shape
        local_nnz, nl_nnz, nl_rows = self._counts
        plan, itemsize = self.plan, self.dtype.itemsize
        window_sent, window_received = plan.bytes_by_path["window"]
        down, up, pieces = plan.window_copies
        return model.RankCosts(
            rows=m, local_nnz=local_nnz, non_local_nnz=nl_nnz, non_local_rows=nl_rows,
            x_entries=n, send=plan.send_size, halo=plan.halo_size,
            send_messages=int(np.count_nonzero(plan.send_counts[plan.message_peers])),
            recv_messages=int(np.count_nonzero(plan.recv_counts[plan.message_peers])),
            value_bytes=itemsize, scattered=self._rows_dev is not None,
            window_send=window_sent // itemsize, window_halo=window_received // itemsize,
            window_down=down, window_up=up, window_pieces=pieces)

    def all_costs(self) -> list[model.RankCosts]:
        """Every rank's :meth:`costs` (collective, bounded in time)."""
        return allgather(self._live(), self.costs(), "gathering every rank's costs")

    def predict(self, machine: model.Machine, resident: bool = False) -> dict[str, float]:
        """Predicted seconds per product for each mode (collective; ``resident``: x and y are
        pyopencl arrays, so only the exchanged values are staged)."""
        return model.predict(self.all_costs(), machine, resident)

    def diagonal(self) -> np.ndarray:
        """This rank's rows of the main diagonal (square matrices: for Jacobi)."""
        r0, r1 = self.row_range
        c0, c1 = self.col_range
        if (r0, r1) != (c0, c1):
            raise ValueError("diagonal() needs a square matrix distributed by row blocks")
        return self.local.diagonal()

    @property
    def vector_space(self) -> Any:
        """What :mod:`clspmv.solvers` needs to run on this matrix: the local vector length and
        the sum of dot products over the ranks. Raises ValueError (on every rank alike) for a
        matrix that is not square or has a rank without rows."""
        from .collective import MPISpace

        if self.shape[0] != self.shape[1]:
            raise ValueError(f"the solvers need a square matrix, got shape {self.shape}")
        empty = np.flatnonzero(np.diff(self.row_offsets) == 0)
        if empty.size:
            raise ValueError(f"the solvers need at least one row on every rank; rank(s) "
                             f"{empty.tolist()} have none: use fewer ranks or other row_offsets")
        return MPISpace(self._live(), self.local_shape[0])

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"<DistributedMatrix {m}x{n} rank {self._comm_rank}/{self._user_comm.size} rows "
                f"{self.row_range} formats={self.formats} mode={self.mode!r}>")

    # -- products -------------------------------------------------------------------------
    def matvec(self, x_local: Array, y_local: Array | None = None, alpha: float = 1.0,
               beta: float = 0.0) -> Array:
        """``y_local = alpha (A x)[row_range] + beta y_local`` (collective).

        ``x_local`` is this rank's slice of x, numpy or a pyopencl array on this rank's device;
        the result has the same kind (a given ``y_local`` is updated in place and returned).
        Arguments are checked before any communication: every rank must pass valid ones, or
        the ranks that do wait for those that raised.
        """
        # task mode's thread only pays where messages need progressing (between nodes): through
        # the window, the main thread waits for the same flags without two thread hand-offs
        mode = self._mode
        if mode == "task" and not self.plan.message_peers.size:
            mode = "overlap"
        return self._run(self._product(x_local, y_local, alpha, beta),
                         lambda p: modes.run(mode, p, self._worker))

    def __matmul__(self, x_local: Array) -> Array:
        return self.matvec(x_local)

    def rmatvec(self, x_local: Array, y_local: Array | None = None, alpha: float = 1.0,
                beta: float = 0.0) -> Array:
        """``y_local = alpha (A.T x)[col_range] + beta y_local`` (collective): ``x_local`` is this
        rank's slice of the row space. The non-local part's products go back to the owners of
        their columns, which add them; their exchange overlaps the local part in every mode."""
        return self._run(self._product(x_local, y_local, alpha, beta, transposed=True),
                         lambda p: p.transposed())

    def _run(self, product: Product, schedule: Callable[[Product], object]) -> Array:
        """``schedule(product)``, then its result, keeping the timings of :attr:`timings`; an
        error leaves the matrix unable to exchange (:meth:`_product`)."""
        with self._lock:
            started = time.perf_counter()
            try:
                schedule(product)
                result = product.finish()
            except BaseException as error:
                self._broken = error
                raise
            self._seconds = {"gather": product.gather_seconds,
                             "communication": self.plan.seconds,
                             "total": time.perf_counter() - started}
            self._events = product.events
            if self.record_timeline:
                self.last_timeline = product.timeline
            return result

    def matvec_global(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` with the whole x on every rank; the whole y on every rank (collective; for
        tests and small problems), in the user's numbering whatever the partition."""
        return self._global(x, self.col_offsets, self.row_offsets, self.matvec)

    def rmatvec_global(self, x: np.ndarray) -> np.ndarray:
        """``A.T @ x`` with the whole x on every rank; the whole result on every rank."""
        return self._global(x, self.row_offsets, self.col_offsets, self.rmatvec)

    def _global(self, x: np.ndarray, in_offsets: np.ndarray, out_offsets: np.ndarray,
                product: Any) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (int(in_offsets[-1]),):
            raise ValueError(f"x has shape {x.shape}, expected ({int(in_offsets[-1])},)")
        r = self._comm_rank
        p = self.permutation
        if p is not None:  # into the distributed numbering
            x = x[p]
        y_local = np.ascontiguousarray(product(x[int(in_offsets[r]): int(in_offsets[r + 1])]))
        counts = np.diff(out_offsets)
        y = np.empty(int(out_offsets[-1]), self.dtype)
        comm = self._live()
        complete([comm.Iallgatherv(y_local, [y, (counts, out_offsets[:-1])])],
                 "gathering the result of every rank", comm)
        if p is not None:  # back into the user's
            y[p] = y.copy()
        return y


def _queue(device: Device, profiled: bool) -> cl.CommandQueue:
    """An in-order queue of ``device``'s context, with profiling or without."""
    return cl.CommandQueue(device.context, device.cl_device, properties=(
        cl.command_queue_properties.PROFILING_ENABLE if profiled else 0))


DIRECT_RUNS = 16
"""Runs of consecutive x entries to send, at most, that are copied down one copy each (a copy
costs the host about what the gather kernel does: beyond a few runs, one gather and one copy
per piece are cheaper)."""


def _runs_of(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(first position of each run of consecutive integers in ``values``, its first value), or
    None for none at all or more than :data:`DIRECT_RUNS` runs."""
    if not len(values):
        return None
    starts = np.concatenate([[0], np.flatnonzero(np.diff(values) != 1) + 1])
    if starts.size > DIRECT_RUNS:
        return None
    return starts, np.asarray(values)[starts].astype(np.int64)


def _consecutive_from(values: np.ndarray) -> int | None:
    """The first of ``values`` when they are consecutive integers (``v, v + 1, ...``), else
    None (also for none at all)."""
    if not len(values):
        return None
    first = int(values[0])
    return first if np.array_equal(values, np.arange(first, first + len(values))) else None


__all__ = ["DistributedMatrix"]
