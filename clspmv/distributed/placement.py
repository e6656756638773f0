"""Which OpenCL device each rank uses.

``"local-rank"`` numbers the ranks of each node (a shared-memory split of the communicator) and
gives rank ``local_rank`` the GPU ``local_rank % gpus``; more ranks than GPUs on a node share them
(with a warning). Without a spec: ``CLSPMV_DEVICE`` when set (per rank, e.g. from a wrapper
script), else ``"local-rank"`` when the node has several GPUs, else clspmv's default device.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..device import Device, devices, select_device
from ..errors import ClspmvWarning

LOCAL_RANK = "local-rank"


def node_rank(comm: Any) -> tuple[int, int]:
    """(rank within this node, ranks on this node), from a shared-memory split of ``comm``."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        return node.rank, node.size
    finally:
        node.Free()


def gpus() -> list[Device]:
    """The GPUs of this node (the Oclgrind simulator left out)."""
    return [d for d in devices() if d.type == "gpu" and not d.is_simulator]


def choose_device(spec: Device | str | None, local_rank: int, local_size: int) -> Device:
    """The device of this rank for ``spec`` (see the module)."""
    if spec is None:
        if os.environ.get("CLSPMV_DEVICE") or os.environ.get("PYOPENCL_CTX"):
            return select_device(None)
        spec = LOCAL_RANK if len(gpus()) > 1 else None
    if isinstance(spec, str) and spec == LOCAL_RANK:
        found = gpus()
        if not found:
            return select_device(None)
        if local_size > len(found) and local_rank == 0:
            warnings.warn(f"{local_size} ranks on this node share {len(found)} GPU(s); start at "
                          f"most {len(found)} ranks per node for one GPU each", ClspmvWarning,
                          stacklevel=3)
        return found[local_rank % len(found)]
    return select_device(spec)
