"""``y = M @ x`` from numpy, again, on a CPU device: the first product's kernel launches recorded
and enqueued anew with the next x's and y's buffers, past every other step of the general path.

Why: beside other work (another library's product, a solver's vector updates) a product of 1 to
5 M entries on the 2-core Xeon VM spent 0.1-0.9 ms in clspmv's host path before its kernel
started (Debian's PoCL 3.1; 2.5 us warm in a loop): the path's Python objects and code, spread
over many pages, come back through cold caches and TLBs after the other work's streams. The
replay touches a few objects: the new y from the matrix's output pool, a buffer on x and one on
y, the enqueues with the recorded arguments (pyopencl's invoker sets them all at once: about 1 us
for 15 arguments, where ``Kernel.set_arg`` one by one costs 7 us each) and the wait.
Measured against the general path in rounds beside MKL's and scipy's products (eight matrices of
0.3-5 M entries of no suite, Debian's PoCL 3.1 and PyPI's 3.0:
``reports/experiments/2026-11-30-product-replay``): 0.75-1.00 of its time in 22 of 24 pairs,
1.02 in two; 0.65-0.91 on 16- and 32-core Xeons (PoCL 5.0).

What is replayed, and when (:meth:`clspmv.DeviceMatrix.matvec` decides):

* only the default product ``M @ x`` (no ``y``, ``alpha`` 1, ``beta`` 0, no ``row_offset``, not
  transposed) with a 1-D numpy ``x`` of the matrix's dtype, contiguous and aligned, on a device
  whose buffers are the numpy arrays' memory (:attr:`clspmv.Device.shares_host_pointer`);
  anything else takes the general path, which checks and converts;
* the recording is the general path's first such product: every ``Format.run`` it makes (all
  kernel launches of every format go through it), kept where none waits on another's event and x's
  and y's buffers each appear among the arguments; nothing else differs between two such
  products, since the kernels' other arguments (the matrix's buffers, its sizes, alpha, beta) are
  the matrix's own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import host_buffers
from .device import Device

_recorder = threading.local()


@dataclass(frozen=True)
class Launch:
    """One ``Format.run``: the kernel, its sizes, every argument and the events it waits on."""

    kernel: cl.Kernel
    global_size: tuple[int]
    local_size: tuple[int]
    args: tuple[object, ...]
    wait_for: list[cl.Event] | None


def record(kernel: cl.Kernel, global_size: tuple[int], local_size: tuple[int],
           args: tuple[object, ...], wait_for: list[cl.Event] | None) -> None:
    """Keep this launch where this thread records a product (:class:`Recording`); nothing
    otherwise (one attribute read, on the path of every launch)."""
    launches = getattr(_recorder, "launches", None)
    if launches is not None:
        launches.append(Launch(kernel, global_size, local_size, args, wait_for))


class Recording:
    """``with Recording() as launches:`` the ``Format.run`` calls this thread makes inside,
    in order."""

    def __enter__(self) -> list[Launch]:
        self.launches: list[Launch] = []
        _recorder.launches = self.launches
        return self.launches

    def __exit__(self, *exc: object) -> None:
        _recorder.launches = None


class ProductReplay:
    """The recorded launches of ``M @ x``, with the positions of x's and y's buffers in each
    one's arguments. Call it under the matrix's lock."""

    def __init__(self, launches: list[tuple[cl.Kernel, tuple[int], tuple[int], list[object],
                                            list[int], list[int]]],
                 device: Device, shape: tuple[int, int], dtype: np.dtype,
                 pool: host_buffers.OutputPool) -> None:
        """``launches``: per launch the kernel, its sizes, its arguments (None where x's and y's
        buffers go) and the positions of x's and of y's buffer among them."""
        self._launches = launches
        self._device, self._dtype, self._pool = device, dtype, pool
        self._rows, self._cols = shape

    def accepts(self, x: object) -> bool:
        """True when ``x`` is a numpy vector of the matrix's columns that the kernels use where
        it lies (:func:`clspmv.host_buffers.usable`, the general path's own test)."""
        return (type(x) is np.ndarray and x.shape == (self._cols,)
                and host_buffers.usable(x, self._dtype, self._device))

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, list[cl.Event]]:
        """The new y = A @ x and the product's kernel events, once y is complete."""
        device = self._device
        y = host_buffers.aligned_empty((self._rows,), self._dtype, "C", device, pool=self._pool)
        x_dev = host_buffers.wrap(device, x, writable=False)
        y_dev = host_buffers.wrap(device, y, writable=True)
        queue, events = device.queue, []
        try:
            for kernel, global_size, local_size, args, x_at, y_at in self._launches:
                for i in x_at:
                    args[i] = x_dev.data
                for i in y_at:
                    args[i] = y_dev.data
                events.append(kernel(queue, global_size, local_size, *args))
            host_buffers.sync_back(device, y_dev, events)
        finally:  # also after Ctrl-C or an error (DeviceMatrix._apply then drains the queue)
            for *_, args, x_at, y_at in self._launches:  # no buffer of x or y outlives it
                for i in (*x_at, *y_at):
                    args[i] = None
        return y, events


def replay_of(launches: list[Launch], x_buf: cl.Buffer, y_buf: cl.Buffer, events: list[cl.Event],
              device: Device, shape: tuple[int, int], dtype: np.dtype,
              pool: host_buffers.OutputPool) -> ProductReplay | None:
    """The replay of a recorded product whose x and y were the buffers ``x_buf`` and ``y_buf``
    and whose launch returned ``events``; None where it cannot be replayed: no launch, a launch
    waiting on an event, x's or y's buffer absent from every launch, or events other than the
    launches' own."""
    if not launches or len(events) != len(launches):
        return None
    kept = []
    for launch in launches:
        if launch.wait_for:
            return None
        x_at = [i for i, a in enumerate(launch.args) if a is x_buf]
        y_at = [i for i, a in enumerate(launch.args) if a is y_buf]
        # the recorded x's and y's buffers are not kept: they would keep those arrays alive
        args = [None if a is x_buf or a is y_buf else a for a in launch.args]
        kept.append((launch.kernel, launch.global_size, launch.local_size, args, x_at, y_at))
    if not any(k[4] for k in kept) or not any(k[5] for k in kept):
        return None
    return ProductReplay(kept, device, shape, dtype, pool)
