"""The steps of one product of a :class:`.matrix.DistributedMatrix` (the :class:`.modes.Steps`
of :func:`.modes.run`), with its explicit host staging: x up and y down when the caller's vectors
are numpy, the values to send gathered (on the device for pyopencl input, then copied down to the
send buffer), the halo up from the receive buffer. Every copy and kernel event is kept per part
for :attr:`DistributedMatrix.timings`.

Two queues: the kernels run on the device's queue, the exchange's copies (send buffer down, halo
up) on the matrix's ``copy_queue``, so that they proceed while the local kernel runs. The host
orders the two by waiting for events: the copy down is enqueued once a marker (or the gather
kernel) enqueued before the local kernel has completed, the non-local kernel once the halo's
copy up has. In ``overlap`` and ``task`` mode those waits fall while the device computes the
local kernel.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..device import Device
from . import staging

Array = np.ndarray | cl_array.Array


class Product:
    """The steps of one product of a DistributedMatrix (see :mod:`.modes`), with its staging."""

    def __init__(self, D: Any, x: Array, y: Array | None, alpha: float,
                 beta: float, transposed: bool = False) -> None:
        self.D = D
        self.queue = D.device.queue
        self.alpha, self.beta = alpha, beta
        self.events: dict[str, list] = {"local": [], "non_local": [], "staging": []}
        m, n = D.local_shape
        n_in, n_out = (m, n) if transposed else (n, m)
        self.on_device = isinstance(x, cl_array.Array)
        self.x_ready: cl.Event | None = None
        """What the copy down of the values to send waits for (pyopencl input)."""
        self.halo_ready: cl.Event | None = None
        """The copy of the received halo up to the device, which the non-local part waits for."""
        self.gather_seconds = 0.0
        """Host seconds filling the send buffer (enqueueing the device gather for pyopencl x)."""
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
        started = time.perf_counter()
        try:
            self._gather(plan)
        finally:
            self.gather_seconds = time.perf_counter() - started

    def _gather(self, plan: Any) -> None:
        """Pyopencl x: what must precede the local kernel on the device's queue (a marker when
        the values to send are consecutive in x, else the kernel gathering them); numpy x: the
        send buffer filled on the host."""
        D = self.D
        if not self.on_device:
            plan.gather(self.x_host)
        else:
            if D._send_first is not None:
                self.x_ready = cl.enqueue_marker(self.queue)
            else:
                self.x_ready = D._vectors.take(D._send_index_dev, self.x_dev, D._send_dev)
                self.events["staging"].append(self.x_ready)
            self.queue.flush()  # the copy down, on the other queue, follows it

    def start(self) -> None:
        """Copy the values to send down (pyopencl x), then start the messages."""
        D = self.D
        if self.x_ready is not None:
            if D._send_first is not None:
                src = self.x_dev.data
                offset = D._send_first * self.x_dev.dtype.itemsize
            else:
                src, offset = D._send_dev.data, 0
            self.x_ready.wait()
            staging.copy(D.copy_queue, D.plan.send_buffer, src, self.events["staging"],
                         src_offset=offset).wait()
        D.plan.start()

    def wait(self) -> None:
        """Complete the messages, then copy the halo up (without waiting for it)."""
        D = self.D
        D.plan.wait()
        if D._halo_dev is not None:
            self.halo_ready = staging.copy(D.copy_queue, D._halo_dev.data, D.plan.halo_buffer,
                                           self.events["staging"])
            D.copy_queue.flush()

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
        if self.halo_ready is not None:
            self.halo_ready.wait()
        log = self.events["non_local"]
        if D._rows_dev is None:  # the part covers a range of rows: straight into y
            D.non_local.matvec(D._halo_dev, self.y_dev, self.alpha, 1.0,
                               row_offset=D._row_offset)
            log += D.non_local.last_events
            return
        D.non_local.matvec(D._halo_dev, D._scratch_dev, 1.0, 0.0)
        log += D.non_local.last_events
        log.append(D._vectors.scatter_add(D._rows_dev, self.alpha, D._scratch_dev, self.y_dev))

    # -- the transposed product ---------------------------------------------------------------
    def transposed(self) -> None:
        """Non-local contributions first (they travel), then the local part during the exchange,
        then the received contributions added."""
        D, plan = self.D, self.D.plan
        self._stage_in()
        if D.non_local is not None and self.x_dev is not None and self.x_dev.size:
            x = self.x_dev
            if D._rows_dev is not None:  # x at the rows the compacted part has
                x = D._scratch_dev
                self.events["non_local"].append(D._vectors.take(D._rows_dev, self.x_dev, x))
            elif D._row_offset is not None:  # x at the range of rows the part has
                x = D._scratch_dev
                self.events["non_local"].append(cl.enqueue_copy(
                    self.queue, x.data, self.x_dev.data, byte_count=x.nbytes,
                    src_offset=D._row_offset * x.dtype.itemsize))
            D.non_local.rmatvec(x, D._halo_dev, self.alpha, 0.0)
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
