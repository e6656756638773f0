"""The steps of one product of a :class:`.matrix.DistributedMatrix` (the :class:`.modes.Steps`
of :func:`.modes.run`), with its explicit host staging: x up and y down when the caller's vectors
are numpy, the values to send gathered (on the device for pyopencl input, then copied down; taken
from x on the host for numpy input) into the plan's host send buffer (message peers) or straight
into the node's shared-memory window (peers of the same node), the halo copied up from the host
receive buffer or straight from the peers' window segments (:mod:`.plan`). Every copy and kernel
event is kept per part for :attr:`DistributedMatrix.timings`, and every step in
:attr:`Product.timeline`.

Three queues: the kernels run on the device's queue, the copies of the values to send down and
those of the halo up on two queues of the matrix (without profiling unless the matrix times
them), so that both directions of the bus move at once and beside the local kernel. The copies
down wait (an OpenCL event dependency, not the host) for a marker, or the gather kernel,
enqueued before the local kernel; where the values to send are a few runs of consecutive x
entries they are copied straight from x (no gather). The copies up wait for the previous
product's non-local kernel (which read the halo they overwrite); the non-local kernel, enqueued
once the exchange returned, waits on the device (a marker) for the copies up, so the host
enqueues it while they run. In ``overlap`` and ``task`` mode the exchange falls while the device
computes the local kernel, which is enqueued first.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..arguments import scalar_arg
from ..device import Device
from . import product_stamp, staging
from .timeline import UNTIMED, Timeline

Array = np.ndarray | cl_array.Array


class Product:
    """The steps of one product of a DistributedMatrix (see :mod:`.modes`), with its staging."""

    def __init__(self, D: Any, x: Array, y: Array | None, alpha: float,
                 beta: float, transposed: bool = False, number: int = 0) -> None:
        """The product ``number`` of ``D`` (its arguments checked here, before any
        communication)."""
        self.D = D
        self.transposed_product = transposed
        self.number = number
        self.queue = D.device.queue
        self.alpha, self.beta = alpha, beta
        self.alpha_v = scalar_arg(alpha, "alpha", D.local.dtype, finite=True)
        """``alpha`` as the kernels take it (checked here, before any communication)."""
        scalar_arg(beta, "beta", D.local.dtype)
        self.events: dict[str, list] = {"local": [], "non_local": [], "staging": []}
        m, n = D.local_shape
        n_in, n_out = (m, n) if transposed else (n, m)
        self.on_device = isinstance(x, cl_array.Array)
        self.x_ready: cl.Event | None = None
        """What the copy down of the values to send waits for (pyopencl input)."""
        self.halo_copies: list[cl.Event] = []
        """The halo's copies up still running after the exchange (the non-local kernel waits
        for them on the device, not the host)."""
        self.gather_seconds = 0.0
        """Host seconds gathering the values to send: taking them from x into the send buffer
        and the window (numpy x), enqueueing the device gather (pyopencl x)."""
        self.timeline = Timeline() if D.record_timeline else UNTIMED
        """The steps of this product (where the matrix records them, else :data:`.UNTIMED`):
        host spans of each step (``gather``, ``start``, ``wait``, ``local``, ``non_local``,
        ``finish``, ...) and of the exchange's own (``copy down``,
        ``messages start``, ``window copy in``, ``window publish``, ``window wait and copy out``,
        ``window consumed``, ``messages wait``, ``copy up``), and every OpenCL command with its
        profiling times (``timeline.device_spans()``: ``x up``, ``gather``, ``copy down``,
        ``local``, ``copy up``, ``non_local``, ``y down``, ...); see :mod:`.timeline`."""
        self.copy_queue, self.up_queue = D._exchange_queues[D.time_copies or D.record_timeline]
        """The queues of the exchange's copies down and up (:attr:`DistributedMatrix.time_copies`
        or a recorded timeline: with profiling)."""
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
            if not isinstance(y, np.ndarray):
                raise TypeError(f"y_local must be a numpy array when x_local is one, got "
                                f"{type(y).__name__}")
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

    @property
    def stamp(self) -> np.ndarray:
        """What this product's values tell the peers (:mod:`.product_stamp`): its number, kind,
        alpha and beta (0 where y is not read)."""
        return product_stamp.stamp(self.number, self.transposed_product, self.alpha, self.beta)

    # -- staging ----------------------------------------------------------------------------
    def _copy(self, name: str, queue: cl.CommandQueue, dest: object, src: object,
              **options: object) -> cl.Event:
        """A staging copy, kept for the timings and in the timeline as ``name``."""
        return self.timeline.event(name, staging.copy(queue, dest, src, self.events["staging"],
                                                      **options))

    def _kernels(self, part: str, events: list, name: str | None = None) -> None:
        """Keep a part's kernel events for the timings and in the timeline (as ``name``, by
        default the part)."""
        self.events[part] += events
        for event in events:
            self.timeline.event(name or part, event)

    def _stage_in(self) -> None:
        """Upload x (and y where beta reads it) to the persistent device vectors."""
        if self.on_device or self.staged_in:
            return
        self.staged_in = True
        if self.x_host.size:
            self._copy("x up", self.queue, self.x_dev.data, self.x_host)
        if self.beta != 0 and self.y_host.size:
            self._copy("y up", self.queue, self.y_dev.data, np.ascontiguousarray(self.y_host))

    def finish(self) -> Array:
        """The result: the device vector, or y downloaded into the caller's numpy array."""
        if self.on_device:
            return self.y_dev
        if self.y_host.size and not self.done:
            self.done = True
            with self.timeline.span("finish"):
                if self.y_host.flags.c_contiguous:
                    self._copy("y down", self.queue, self.y_host, self.y_dev.data, wait=True)
                else:
                    self.y_host[...] = self.y_dev.get(self.queue)
        return self.y_host

    # -- the steps of modes.run ---------------------------------------------------------------
    def gather(self) -> None:
        """Pyopencl x: enqueue what must precede the local kernel on the device's queue (a
        marker when the values to send are consecutive in x, else the kernel gathering them);
        numpy x: nothing yet (:meth:`start` takes the values from x where they go)."""
        D = self.D
        if not self.on_device or not D.plan.send_size:
            return
        started = time.perf_counter()
        with self.timeline.span("gather"):
            if D._send_index_dev is None:  # consecutive in x, or whole slices: nothing to pick
                self.x_ready = cl.enqueue_marker(self.queue)
            else:
                self.x_ready = D._vectors.take(D._send_index_dev, self.x_dev, D._send_dev)
                self._kernels("staging", [self.x_ready], "gather")
            self.queue.flush()  # the copies down, on the other queue, follow it
        self.gather_seconds = time.perf_counter() - started

    def start(self) -> None:
        """Send the values: copied down (pyopencl x) or taken from x (numpy x) into the host
        send buffer and the window, the messages started."""
        D = self.D
        with self.timeline.span("start"):
            D.plan.start(self._copy_down if self.on_device else self._take,
                         timeline=self.timeline, stamp=self.stamp)

    def _take(self, view: np.ndarray, a: int, b: int, whole: bool) -> None:
        """Values ``a:b`` to send (``whole``: of x), taken from numpy x into ``view``."""
        started = time.perf_counter()
        if whole:
            view[...] = self.x_host[a:b]
        else:
            np.take(self.x_host, self.D.plan.send_index[a:b], out=view, mode="clip")
        self.gather_seconds += time.perf_counter() - started

    def _copy_down(self, view: np.ndarray, a: int, b: int, whole: bool) -> cl.Event:
        """Values ``a:b`` to send (``whole``: of x), copied from the device (x, or the gathered
        values) into ``view``."""
        D = self.D
        size = self.x_dev.dtype.itemsize
        ready = [] if self.x_ready is None else [self.x_ready]
        if whole or D._send_runs is None:  # x's slice, or the values gathered
            src = self.x_dev.data if whole else D._send_dev.data
            event = self._copy("copy down", self.copy_queue, view, src, src_offset=a * size,
                               wait_for=ready)
        else:  # straight from x, one copy per run of consecutive entries within a:b
            starts, firsts = D._send_runs
            event = None
            run = int(np.searchsorted(starts, a, side="right")) - 1
            while a < b:
                stop = b if run + 1 == len(starts) else min(b, int(starts[run + 1]))
                at = int(firsts[run]) + a - int(starts[run])
                event = self._copy("copy down", self.copy_queue, view[:stop - a], self.x_dev.data,
                                   src_offset=at * size, wait_for=ready)
                view, a, run = view[stop - a:], stop, run + 1
        self.copy_queue.flush()
        return event

    def wait(self) -> None:
        """Complete the exchange, the received halo's copies up enqueued; the kernels' queue
        waits for them (a marker) without the host waiting."""
        D = self.D
        with self.timeline.span("wait"):
            self.halo_copies = D.plan.wait(self._copy_up if D._halo_dev is not None else None,
                                           timeline=self.timeline)
        if D._whole_dev is not None:
            with self.timeline.span("halo gather"):
                self._after_halo_copies()
                self._kernels("staging", [D._vectors.take(D._whole_index_dev, D._whole_dev,
                                                          D._whole_halo_dev)], "halo gather")
                size = D._halo_dev.dtype.itemsize
                at = 0
                for first, n in D.plan.whole_runs:  # device to device: never blocking
                    self._kernels("staging", [cl.enqueue_copy(
                        self.queue, D._halo_dev.data, D._whole_halo_dev.data,
                        byte_count=n * size, src_offset=at * size, dst_offset=first * size)],
                        "halo gather")
                    at += n

    def _after_halo_copies(self) -> None:
        """Make the kernels' queue wait (a marker) for the halo's copies up still running."""
        if self.halo_copies:
            cl.enqueue_marker(self.queue, wait_for=self.halo_copies)
            self.halo_copies = []

    def _copy_up(self, view: np.ndarray, a: int, b: int, whole: bool) -> cl.Event:
        """Halo values ``a:b`` (``whole``: of the whole x slices received) from ``view`` to the
        device's halo vector (or whole slices)."""
        D = self.D
        dest = D._whole_dev if whole else D._halo_dev
        event = self._copy("copy up", self.up_queue, dest.data, view,
                           dst_offset=a * dest.dtype.itemsize, wait_for=D.halo_readers)
        self.up_queue.flush()
        return event

    def local(self) -> None:
        self._stage_in()
        if self.y_dev is None or self.y_dev.size == 0:
            return
        x = self.x_dev if self.x_dev is not None and self.x_dev.size else None
        with self.timeline.span("local"):
            self._kernels("local", self.D.local.matvec_checked(x, self.y_dev, self.alpha_v,
                                                               self._value(self.beta)))
            self.queue.flush()

    def _value(self, number: float) -> np.generic:
        """``number`` as a scalar argument of the kernels (:meth:`DeviceMatrix.matvec_checked`)."""
        return self.D.local.dtype.type(number)

    def non_local(self) -> None:
        D = self.D
        if D.non_local is None or self.y_dev is None or self.y_dev.size == 0:
            return
        with self.timeline.span("non_local"):
            self._after_halo_copies()
            if D._rows_dev is None:  # the part covers a range of rows: straight into y
                self._kernels("non_local", D.non_local.matvec_checked(
                    D._halo_dev, self.y_dev, self.alpha_v, self._value(1.0),
                    D._row_offset or 0))
                D.halo_readers = list(D.non_local.last_events)
                return
            self._kernels("non_local", D.non_local.matvec_checked(
                D._halo_dev, D._scratch_dev, self._value(1.0), self._value(0.0)))
            D.halo_readers = list(D.non_local.last_events)
            self._kernels("non_local", [D._vectors.scatter_add(D._rows_dev, self.alpha,
                                                               D._scratch_dev, self.y_dev)])

    # -- the transposed product ---------------------------------------------------------------
    def transposed(self) -> None:
        """Non-local contributions first (they travel: copied down from the device into the
        host send buffer and the window), then the local part during the exchange, then the
        received contributions added."""
        D, plan, timeline = self.D, self.D.plan, self.timeline
        self._stage_in()
        put = _zeros
        if D.non_local is not None and self.x_dev is not None and self.x_dev.size:
            with timeline.span("non_local"):
                x = self.x_dev
                if D._rows_dev is not None:  # x at the rows the compacted part has
                    x = D._scratch_dev
                    self._kernels("non_local", [D._vectors.take(D._rows_dev, self.x_dev, x)])
                elif D._row_offset is not None:  # x at the range of rows the part has
                    x = D._scratch_dev
                    self._kernels("non_local", [cl.enqueue_copy(
                        self.queue, x.data, self.x_dev.data, byte_count=x.nbytes,
                        src_offset=D._row_offset * x.dtype.itemsize)])
                D.non_local.rmatvec(x, D._halo_dev, self.alpha, 0.0)
                self._kernels("non_local", D.non_local.last_events)
            put = self._contributions_down
        with timeline.span("start"):
            plan.start(put, reverse=True, timeline=timeline, stamp=self.stamp)
        if self.y_dev is not None and self.y_dev.size:
            x = self.x_dev if self.x_dev is not None and self.x_dev.size else _empty(self)
            with timeline.span("local"):
                D.local.rmatvec(x, self.y_dev, self.alpha, self.beta)
                self._kernels("local", D.local.last_events)
                self.queue.flush()
        with timeline.span("wait"):
            plan.wait(reverse=True, timeline=timeline)
        if plan.send_size:
            if self.on_device:
                with timeline.span("scatter add"):
                    host = self.y_dev.get(self.queue)
                    plan.scatter_add(host)
                    self.y_dev.set(host, queue=self.queue)
            else:
                result = self.finish()
                with timeline.span("scatter add"):
                    plan.scatter_add(result)

    def _contributions_down(self, view: np.ndarray, a: int, b: int, whole: bool) -> cl.Event:
        """Halo contributions ``a:b`` from the device into ``view`` (on the kernels' queue:
        after the non-local product that computes them)."""
        D = self.D
        event = self._copy("copy down", self.queue, view, D._halo_dev.data,
                           src_offset=a * D._halo_dev.dtype.itemsize)
        self.queue.flush()
        return event


def _zeros(view: np.ndarray, a: int, b: int, whole: bool) -> None:
    """Halo contributions of a rank without non-local products: zeros."""
    view.fill(0)


def _empty(product: Product) -> cl_array.Array:
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
