"""DistributedMatrix: a sparse matrix whose rows are spread over the ranks of an MPI
communicator, one OpenCL device per rank (pjds-multigpu.txt, section 3).

Each rank holds a contiguous row block, split into a *local* part (the columns it owns, i.e. its
slice of x) and a *non-local* part (columns owned by others, renumbered compactly in the order of
the halo buffer), each an ordinary :class:`clspmv.DeviceMatrix` in its own format. A product is
``y = alpha A_loc x_local + beta y`` then ``y += alpha A_nl x_halo``, with the halo exchanged by
the :class:`.plan.ExchangePlan` in one of the :mod:`.modes`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pyopencl.array as cl_array

from ..device import Device
from ..matrix import DeviceMatrix
from . import modes, staging
from .collective import agree
from .partition import balanced_offsets
from .placement import choose_device, node_rank
from .plan import ExchangePlan
from .source import row_block, split_columns

DEFAULT_FORMATS = ("csr-vector", "csr-scalar")
"""(local, non-local) formats when none is given: the non-local part is usually very sparse."""

Array = np.ndarray | cl_array.Array


class DistributedMatrix:
    """A matrix distributed by row blocks over ``comm``; build one with :meth:`from_scipy`.

    Vectors are distributed too: ``x_local`` is this rank's slice ``col_range`` of x and
    ``y_local`` its slice ``row_range`` of y (for a square matrix both are the row block).
    Every product is collective: all ranks call it together. Call :meth:`close` (or use the
    matrix as a context manager) to free its communicator, requests and thread.
    """

    def __init__(self, comm: Any, shape: tuple[int, int], row_offsets: np.ndarray,
                 col_offsets: np.ndarray, local: DeviceMatrix, non_local: DeviceMatrix | None,
                 plan: ExchangePlan, device: Device, mode: str, own_comm: Any) -> None:
        """Assemble the parts (use :meth:`from_scipy`)."""
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
        """The non-local part (halo columns, numbered as the halo buffer), None without any."""
        self.plan = plan
        self._device = device
        self._lock = threading.Lock()
        self._worker: modes.CommThread | None = None
        self._mode = "vector"
        self.mode = mode
        queue = device.queue
        dtype = local.dtype
        m, n = self.local_shape
        self._x_dev = cl_array.zeros(queue, n, dtype) if n else None
        self._y_dev = cl_array.zeros(queue, m, dtype) if m else None
        h = plan.halo_size
        self._halo_dev = cl_array.zeros(queue, h, dtype) if h else None
        s = plan.send_size
        self._send_index_dev = (cl_array.to_device(queue, plan.send_index.astype(np.int32))
                                if s else None)
        self._send_dev = cl_array.zeros(queue, s, dtype) if s else None
        self._events: dict[str, list] = {"local": [], "non_local": [], "staging": []}
        self._seconds = {"communication": 0.0, "total": 0.0}

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scipy(cls, A: object, comm: Any = None, format: str | tuple[str, str] | None = None,
                   mode: str = "task", partition: object = "nnz",
                   device: Device | str | None = None, dtype: object = None,
                   root: int | None = None, row_offsets: object = None,
                   pinned: bool | None = None, **params: object) -> DistributedMatrix:
        """Distribute ``A`` over the ranks of ``comm`` (default ``MPI.COMM_WORLD``); collective.

        ``A``: a scipy.sparse matrix (or dense 2-D array) given on every rank; or given on rank
        ``root`` only (the others pass None), which scatters the row blocks; or the path of a
        Matrix Market file that each rank reads only its rows of. ``partition``: ``"nnz"``
        (blocks of equal stored entries), ``"rows"`` or a weight per row (e.g. its predicted
        time); ``row_offsets`` (``size + 1`` numbers) fixes the blocks instead. Columns (the
        slices of x) follow the row blocks for a square matrix, else equal shares of the columns.
        ``format``: one name for both parts or a pair (local, non-local); default
        :data:`DEFAULT_FORMATS`. ``mode``: see :mod:`clspmv.distributed.modes`. ``device``: a
        :class:`clspmv.Device`, a :func:`clspmv.select_device` spec, ``"local-rank"`` (GPU
        ``local_rank % gpus`` of each node) or None (see :mod:`.placement`). ``dtype`` and the
        format ``params`` as in :meth:`clspmv.DeviceMatrix.from_scipy`. ``pinned``: stage the
        exchange through pinned host memory (default: on GPUs).

        Raises ValueError for an unknown mode or a bad partition (on every rank alike), and
        :class:`DistributedError` on every rank when any rank fails to read, convert or upload
        its part (the message names the ranks and their errors).
        """
        from mpi4py import MPI

        comm = MPI.COMM_WORLD if comm is None else comm
        modes.check_mode(mode)
        formats = _formats(format)
        block = row_block(comm, A, dtype, partition, row_offsets, root)
        m, n = block.shape
        offsets = block.offsets
        cols = offsets if m == n else balanced_offsets(np.ones(n), comm.size)
        rank = comm.rank
        c0, c1 = int(cols[rank]), int(cols[rank + 1])
        local_csr, nl_csr, halo = split_columns(block.rows, c0, c1)
        del block
        local_rank, local_size = node_rank(comm)
        dev = agree(comm, "choosing the device",
                    lambda: choose_device(device, local_rank, local_size))
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
        own = comm.Dup()
        use_pinned = dev.type == "gpu" if pinned is None else bool(pinned)
        plan = ExchangePlan(own, halo, cols, staging.HostBuffers(dev, local.dtype, use_pinned))
        return cls(comm, (m, n), offsets, cols, local, non_local, plan, dev, mode, own)

    def close(self) -> None:
        """Free the communicator, the persistent requests and the task-mode thread (collective)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._comm is not None:
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
    def col_range(self) -> tuple[int, int]:
        """The global columns ``start, stop`` this rank owns (its slice of x)."""
        r = self._comm_rank
        return int(self.col_offsets[r]), int(self.col_offsets[r + 1])

    @property
    def _comm_rank(self) -> int:
        return self._user_comm.rank

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
        return self.local.format, (self.non_local.format if self.non_local else None)

    @property
    def mode(self) -> str:
        """``"vector"``, ``"overlap"`` or ``"task"``; may be changed at any time."""
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
        from profiling events), ``staging`` (host <-> device copies), ``communication`` (start
        to completion of the exchange, wall clock) and ``total`` (the call, wall clock)."""
        out = {name: staging.seconds(events) for name, events in self._events.items()}
        out.update(self._seconds)
        return out

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
        the sum of dot products over the ranks."""
        from .collective import MPISpace

        return MPISpace(self._comm, self.local_shape[0])

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
        """
        with self._lock:
            started = time.perf_counter()
            product = _Product(self, x_local, y_local, alpha, beta)
            modes.run(self._mode, product, self._worker)
            result = product.finish()
            self._seconds = {"communication": self.plan.seconds,
                             "total": time.perf_counter() - started}
            self._events = product.events
            return result

    def __matmul__(self, x_local: Array) -> Array:
        return self.matvec(x_local)

    def rmatvec(self, x_local: Array, y_local: Array | None = None, alpha: float = 1.0,
                beta: float = 0.0) -> Array:
        """``y_local = alpha (A.T x)[col_range] + beta y_local`` (collective): ``x_local`` is this
        rank's slice of the row space. The non-local part's products go back to the owners of
        their columns, which add them; their exchange overlaps the local part in every mode."""
        with self._lock:
            started = time.perf_counter()
            product = _Product(self, x_local, y_local, alpha, beta, transposed=True)
            product.transposed()
            result = product.finish()
            self._seconds = {"communication": self.plan.seconds,
                             "total": time.perf_counter() - started}
            self._events = product.events
            return result

    def matvec_global(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` with the whole x on every rank; the whole y on every rank (collective; for
        tests and small problems)."""
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
        y_local = np.ascontiguousarray(product(x[int(in_offsets[r]): int(in_offsets[r + 1])]))
        counts = np.diff(out_offsets)
        y = np.empty(int(out_offsets[-1]), self.dtype)
        self._comm.Allgatherv(y_local, [y, (counts, out_offsets[:-1])])
        return y


def _formats(format: str | tuple[str, str] | None) -> tuple[str, str]:
    if format is None:
        return DEFAULT_FORMATS
    if isinstance(format, str):
        return format, format
    pair = tuple(format)
    if len(pair) != 2 or not all(isinstance(f, str) for f in pair):
        raise ValueError(f"format must be a name or a pair (local, non-local), got {format!r}")
    return pair


class _Product:
    """The steps of one product of a DistributedMatrix (see :mod:`.modes`), with its staging."""

    def __init__(self, D: DistributedMatrix, x: Array, y: Array | None, alpha: float,
                 beta: float, transposed: bool = False) -> None:
        self.D = D
        self.queue = D.device.queue
        self.alpha, self.beta = alpha, beta
        self.events: dict[str, list] = {"local": [], "non_local": [], "staging": []}
        m, n = D.local_shape
        n_in, n_out = (m, n) if transposed else (n, m)
        self.on_device = isinstance(x, cl_array.Array)
        dtype = D.dtype
        if self.on_device:
            self.x_dev = _device_vector(x, n_in, dtype, D.device, "x_local")
            if y is None:
                self.y_dev = cl_array.zeros(self.queue, n_out, dtype)
                self.beta = 0.0
            else:
                self.y_dev = _device_vector(y, n_out, dtype, D.device, "y_local")
            self.y_host = None
            return
        self.x_host = np.ascontiguousarray(_host_vector(x, n_in, "x_local"), dtype)
        if y is None:
            self.y_host = np.zeros(n_out, dtype)
            self.beta = 0.0
        else:
            self.y_host = _host_vector(y, n_out, "y_local")
            if y.dtype != dtype:
                raise TypeError(f"y_local has dtype {y.dtype}, expected {dtype} (it is updated "
                                "in place)")
            if not y.flags.writeable:
                raise ValueError("y_local is read-only; it is updated in place")
        in_dev, out_dev = (D._y_dev, D._x_dev) if transposed else (D._x_dev, D._y_dev)
        self.x_dev, self.y_dev = in_dev, out_dev
        self.staged_in = False
        self.done = False

    # -- staging ----------------------------------------------------------------------------
    def _stage_in(self) -> None:
        """Upload x (and y where beta reads it) to the persistent device vectors."""
        if self.on_device or self.staged_in:
            return
        self.staged_in = True
        log = self.events["staging"]
        if self.x_host.size:
            staging.copy(self.queue, self.x_dev.data, self.x_host, log)
        if self.beta != 0 and self.y_host.size:
            staging.copy(self.queue, self.y_dev.data, np.ascontiguousarray(self.y_host), log)

    def finish(self) -> Array:
        """The result: the device vector, or y downloaded into the caller's numpy array."""
        if self.on_device:
            return self.y_dev
        if self.y_host.size and not self.done:
            self.done = True
            if self.y_host.flags.c_contiguous:
                staging.copy(self.queue, self.y_host, self.y_dev.data, self.events["staging"],
                             wait=True)
            else:
                self.y_host[...] = self.y_dev.get(self.queue)
        return self.y_host

    # -- the steps of modes.run ---------------------------------------------------------------
    def gather(self) -> None:
        plan = self.D.plan
        if not plan.send_size:
            return
        if self.on_device:
            D = self.D
            cl_array.take(self.x_dev, D._send_index_dev, out=D._send_dev, queue=self.queue)
            staging.copy(self.queue, plan.send_buffer, D._send_dev.data,
                         self.events["staging"]).wait()
        else:
            plan.gather(self.x_host)

    def start(self) -> None:
        self.D.plan.start()

    def wait(self) -> None:
        self.D.plan.wait()

    def local(self) -> None:
        self._stage_in()
        if self.y_dev is None or self.y_dev.size == 0:
            return
        x = self.x_dev if self.x_dev is not None and self.x_dev.size else _empty(self)
        self.D.local.matvec(x, self.y_dev, self.alpha, self.beta)
        self.events["local"] += self.D.local.last_events
        self.queue.flush()

    def non_local(self) -> None:
        D = self.D
        if D.non_local is None or self.y_dev is None or self.y_dev.size == 0:
            return
        staging.copy(self.queue, D._halo_dev.data, D.plan.halo_buffer, self.events["staging"])
        D.non_local.matvec(D._halo_dev, self.y_dev, self.alpha, 1.0)
        self.events["non_local"] += D.non_local.last_events

    # -- the transposed product ---------------------------------------------------------------
    def transposed(self) -> None:
        """Non-local contributions first (they travel), then the local part during the exchange,
        then the received contributions added."""
        D, plan = self.D, self.D.plan
        self._stage_in()
        if D.non_local is not None and self.x_dev is not None and self.x_dev.size:
            D.non_local.rmatvec(self.x_dev, D._halo_dev, self.alpha, 0.0)
            self.events["non_local"] += D.non_local.last_events
            staging.copy(self.queue, plan.halo_buffer, D._halo_dev.data,
                         self.events["staging"]).wait()
        elif plan.halo_size:
            plan.halo_buffer[:] = 0
        plan.start(reverse=True)
        if self.y_dev is not None and self.y_dev.size:
            x = self.x_dev if self.x_dev is not None and self.x_dev.size else _empty(self)
            D.local.rmatvec(x, self.y_dev, self.alpha, self.beta)
            self.events["local"] += D.local.last_events
            self.queue.flush()
        plan.wait(reverse=True)
        if plan.send_size:
            if self.on_device:
                host = self.y_dev.get(self.queue)
                plan.scatter_add(host)
                self.y_dev.set(host, queue=self.queue)
            else:
                plan.scatter_add(self.finish())


def _empty(product: _Product) -> cl_array.Array:
    return cl_array.zeros(product.queue, 0, product.D.dtype)


def _host_vector(v: object, n: int, what: str) -> np.ndarray:
    arr = np.asarray(v)
    if arr.shape != (n,):
        raise ValueError(f"{what} has shape {arr.shape}, expected ({n},)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} has dtype {arr.dtype}; expected real numbers")
    return arr


def _device_vector(v: object, n: int, dtype: np.dtype, device: Device, what: str
                   ) -> cl_array.Array:
    if not isinstance(v, cl_array.Array):
        raise TypeError(f"{what} must be a pyopencl array when x_local is one, got "
                        f"{type(v).__name__}")
    if v.shape != (n,):
        raise ValueError(f"{what} has shape {v.shape}, expected ({n},)")
    if v.dtype != dtype:
        raise TypeError(f"{what} has dtype {v.dtype}, expected {dtype}")
    if v.context != device.context:
        raise ValueError(f"{what} lives in another OpenCL context than this rank's device "
                         f"{device.name}")
    if v.offset or not v.flags.c_contiguous:
        raise ValueError(f"{what} must be contiguous and without offset")
    return v


__all__ = ["DEFAULT_FORMATS", "DistributedMatrix"]
