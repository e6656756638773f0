"""The communication pattern of a distributed product, built once with collective calls.

Each rank knows the columns its non-local part reads (its *halo*, sorted global indices). The
plan asks their owners for them: one ``Alltoall`` of counts, one ``Alltoallv`` of the requested
indices. Afterwards every product only moves values, through persistent buffers and persistent
point-to-point requests (``Send_init``/``Recv_init``): the forward exchange fills the halo buffer
(owners send ``x_local[send_index]``); the reverse exchange of the transposed product sends halo
contributions back to the owners, which add them at ``send_index``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .partition import owners

FORWARD_TAG = 12
REVERSE_TAG = 13


class ExchangePlan:
    """Who sends which x entries to whom, with the buffers and requests that move them.

    ``halo_columns``: sorted global columns this rank's non-local part reads; ``col_offsets``: the
    column blocks (rank k owns columns ``col_offsets[k]:col_offsets[k + 1]``); ``alloc(n)`` returns
    a host array of ``n`` values (pinned memory for GPUs, see :mod:`.staging`). Collective over
    ``comm``: every rank must build its plan at the same point.
    """

    def __init__(self, comm: Any, halo_columns: np.ndarray, col_offsets: np.ndarray,
                 alloc: Callable[[int], np.ndarray]) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        rank, size = comm.rank, comm.size
        halo = np.asarray(halo_columns, dtype=np.int64)
        owner = owners(halo, col_offsets)
        if (owner == rank).any():
            raise ValueError("the halo must not contain columns this rank owns")
        self.recv_counts = np.bincount(owner, minlength=size).astype(np.int64)
        self.send_counts = np.zeros(size, np.int64)
        comm.Alltoall(self.recv_counts, self.send_counts)
        self.recv_displs = _displacements(self.recv_counts)
        self.send_displs = _displacements(self.send_counts)
        requested = np.empty(int(self.send_counts.sum()), np.int64)
        comm.Alltoallv([halo, (self.recv_counts, self.recv_displs), MPI.INT64_T],
                       [requested, (self.send_counts, self.send_displs), MPI.INT64_T])
        self.send_index = requested - int(col_offsets[rank])
        """Local x indices to send, peer after peer (length :attr:`send_size`)."""
        n_local = int(col_offsets[rank + 1] - col_offsets[rank])
        if self.send_index.size and (self.send_index.min() < 0 or
                                     self.send_index.max() >= n_local):
            raise ValueError("a rank asked for columns this rank does not own")
        self.send_buffer = alloc(self.send_index.size)
        self.halo_buffer = alloc(halo.size)
        self.seconds = 0.0
        """Wall seconds of the latest exchange (start to completion)."""
        self._started = 0.0
        self._forward = self._requests(comm, FORWARD_TAG, self.send_buffer, self.halo_buffer)
        self._reverse = self._requests(comm, REVERSE_TAG, self.halo_buffer, self.send_buffer,
                                       reverse=True)

    # -- facts ------------------------------------------------------------------------------
    @property
    def send_size(self) -> int:
        """Values this rank sends per product."""
        return int(self.send_index.size)

    @property
    def halo_size(self) -> int:
        """Values this rank receives per product."""
        return int(self.halo_buffer.size)

    @property
    def messages(self) -> int:
        """Messages this rank sends per product."""
        return int(np.count_nonzero(self.send_counts))

    # -- requests ---------------------------------------------------------------------------
    def _requests(self, comm: Any, tag: int, send: np.ndarray, recv: np.ndarray,
                  reverse: bool = False) -> list:
        """Persistent requests: receives first (so that a matching send finds them posted)."""
        send_counts, send_displs = self.send_counts, self.send_displs
        recv_counts, recv_displs = self.recv_counts, self.recv_displs
        if reverse:  # the halo goes back to its owners; they receive what they once sent
            send_counts, send_displs, recv_counts, recv_displs = (
                recv_counts, recv_displs, send_counts, send_displs)
        requests = []
        for peer in np.flatnonzero(recv_counts):
            lo = int(recv_displs[peer])
            requests.append(comm.Recv_init(recv[lo: lo + int(recv_counts[peer])], int(peer), tag))
        for peer in np.flatnonzero(send_counts):
            lo = int(send_displs[peer])
            requests.append(comm.Send_init(send[lo: lo + int(send_counts[peer])], int(peer), tag))
        return requests

    def gather(self, x_local: np.ndarray) -> None:
        """Fill the send buffer from the rank's slice of x (on the host)."""
        if self.send_index.size:
            np.take(x_local, self.send_index, out=self.send_buffer)

    def start(self, reverse: bool = False) -> None:
        """Start the forward (send buffer -> halo) or reverse (halo -> send buffer) exchange."""
        self._started = time.perf_counter()
        requests = self._reverse if reverse else self._forward
        if requests:
            self._MPI.Prequest.Startall(requests)

    def wait(self, reverse: bool = False) -> None:
        """Complete the exchange started by :meth:`start`."""
        requests = self._reverse if reverse else self._forward
        if requests:
            self._MPI.Request.Waitall(requests)
        self.seconds = time.perf_counter() - self._started

    def scatter_add(self, y_local: np.ndarray) -> None:
        """After a reverse exchange: add the received contributions to ``y_local``."""
        if self.send_index.size:
            y_local += np.bincount(self.send_index, weights=self.send_buffer,
                                   minlength=y_local.size).astype(y_local.dtype)

    def free(self) -> None:
        """Free the persistent requests (the plan cannot exchange afterwards)."""
        for request in self._forward + self._reverse:
            request.Free()
        self._forward, self._reverse = [], []


def _displacements(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
