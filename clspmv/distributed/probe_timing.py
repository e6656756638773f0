"""The timed pieces of :func:`.model.probe`: the latency of a device command and the network
between ranks 0 and 1 (apart from the model, which only adds up what they measure)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

LAUNCH_BATCH = 20
"""Tiny kernels per timed batch in :func:`launch_latency`."""


def launch_latency(device: Any, repeats: int = 5) -> float:
    """Wall seconds per device command: the best over ``repeats`` batches of
    :data:`LAUNCH_BATCH` one-element kernels enqueued back to back and waited for, divided by
    the batch size (a product's commands follow each other on one queue too)."""
    import pyopencl.array as cl_array

    from ..vectors import DeviceVectors

    vec = DeviceVectors(device, np.float32)
    a = cl_array.zeros(device.queue, 1, np.float32)
    b = cl_array.zeros(device.queue, 1, np.float32)

    def batch() -> Any:
        for _ in range(LAUNCH_BATCH):
            event = vec.copy_strided(1, a, 0, 1, b, 0, 1)
        return event

    batch().wait()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        batch().wait()
        best = min(best, time.perf_counter() - start)
    return best / LAUNCH_BATCH


def ping_pong(comm: Any, buf: np.ndarray, repeats: int) -> float:
    """Best round-trip seconds between ranks 0 and 1 (the others wait at a barrier)."""
    best = float("inf")
    comm.Barrier()
    for _ in range(repeats):
        start = time.perf_counter()
        if comm.rank == 0:
            comm.Send(buf, 1, 99)
            comm.Recv(buf, 1, 99)
        elif comm.rank == 1:
            comm.Recv(buf, 0, 99)
            comm.Send(buf, 0, 99)
        best = min(best, time.perf_counter() - start)
    comm.Barrier()
    return best


def both_ways(comm: Any, send: np.ndarray, recv: np.ndarray, repeats: int) -> float:
    """Best seconds of ranks 0 and 1 exchanging ``send`` into ``recv`` at once (``Sendrecv``;
    the others wait at a barrier), after one untimed exchange."""
    best = float("inf")
    peer = 1 - comm.rank
    for i in range(repeats + 1):
        comm.Barrier()
        start = time.perf_counter()
        if comm.rank < 2:
            comm.Sendrecv(send, peer, 98, recv, peer, 98)
        if i:
            best = min(best, time.perf_counter() - start)
    comm.Barrier()
    return best
