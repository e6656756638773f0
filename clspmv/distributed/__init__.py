"""Distributed sparse matrix-vector products over MPI (mpi4py), one OpenCL device per rank.

>>> from mpi4py import MPI
>>> from clspmv.distributed import DistributedMatrix
>>> D = DistributedMatrix.from_scipy(A, MPI.COMM_WORLD, mode="task")   # A on every rank
>>> y_local = D.matvec(x[slice(*D.col_range)])                        # this rank's rows of A x
>>> y = D.matvec_global(x)                                            # all of A x, every rank
>>> x_local, info = clspmv.solvers.cg(D, b[slice(*D.row_range)])

Run under ``mpiexec -n N python -m mpi4py script.py`` (an uncaught error on one rank then
aborts every rank). Modules: :mod:`.agreement` (the arguments every rank must share),
:mod:`.collective` (agreed steps, bounded waits), :mod:`.partition` (row blocks),
:mod:`.source` (each rank's rows), :mod:`.plan` (the exchange pattern), :mod:`.modes` (vector,
overlap and task schedules), :mod:`.staging` (host buffers), :mod:`.placement` (device per rank),
:mod:`.matrix` (:class:`DistributedMatrix`), :mod:`.model` (predicted time per product and mode).
"""

from __future__ import annotations

try:
    import mpi4py  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError('clspmv.distributed needs mpi4py and an MPI library: pip install '
                      '"clspmv[mpi]"') from err

from . import model
from .agreement import DEFAULT_FORMATS
from .collective import CollectiveTimeout, DistributedError, MPISpace
from .matrix import DistributedMatrix
from .modes import MODES
from .partition import PARTITIONS, balanced_offsets, row_offsets

__all__ = [
    "DEFAULT_FORMATS",
    "MODES",
    "PARTITIONS",
    "CollectiveTimeout",
    "DistributedError",
    "DistributedMatrix",
    "MPISpace",
    "balanced_offsets",
    "model",
    "row_offsets",
]
