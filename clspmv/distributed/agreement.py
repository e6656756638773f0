"""What the ranks of a distributed construction must agree on, checked before anything is built.

:meth:`.matrix.DistributedMatrix.from_scipy` is collective: ranks given different arguments take
different paths through the collective calls that follow (one waits for ever, MPI aborts on
messages of different sizes, or the product comes out wrong without an error).
:func:`check_arguments` checks each rank's arguments, converts ``A`` where every rank holds it,
and compares the ranks' :data:`FACTS` in one bounded ``allgather`` (:func:`.collective.agree`):
an invalid argument on some ranks, or a fact that differs, raises
:class:`.collective.DistributedError` on every rank, naming the ranks and their values.

The entries of a matrix given on every rank are compared by a checksum of its canonical CSR
arrays (:func:`digest`): a BLAKE2b hash, exact (one changed bit differs), where a sum of the
values with a tolerance would miss a moved entry. It costs about as much as the conversion every
rank does anyway: 0.41 s against 0.24 s for 10 M entries (124 MB) on the 2-core test machine.
A file each rank reads is compared by its path here and by the shape in its header
(:mod:`.source`), not by its entries.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..canonical import canonical_csr
from ..precision import Precision, resolve
from . import modes
from .collective import agree
from .predicted import check_partition
from .source import is_path

DEFAULT_FORMATS = ("auto", "auto")
"""(local, non-local) formats when none is given: each chosen per rank by
:func:`clspmv.model.select` (the non-local part is usually very sparse, and may take another
format than the local part)."""

FACTS = ("A", "shape", "stored entries", "dtype", "format", "mode", "partition", "row_offsets",
         "machine", "checksum")
"""What every rank's arguments must agree on, as the error names them (in this order): where
``A`` comes from (a matrix on every rank, the file, or the root rank), the shape and the stored
entries of a matrix on every rank, the precision, the requested formats, the mode at
construction, the partition (a name, or the checksum of the weights), ``row_offsets``, whether
``machine`` is None, ``"probe"`` or given, and last the checksum of a matrix on every rank (which
any of the first differences changes too). Not compared: ``device``, ``pinned`` and the format
parameters, which each rank may choose for itself."""


@dataclass(frozen=True)
class Arguments:
    """``from_scipy``'s arguments once every rank agreed: ``mode`` (``"task"`` may have become
    ``"overlap"`` where MPI lacks threads), ``formats`` (local, non-local) and ``timed`` (a
    partition by predicted time)."""

    mode: str
    formats: tuple[str, str]
    timed: bool


def check_arguments(comm: Any, A: object, dtype: object, format: object, mode: str,
                    partition: object, row_offsets: object, root: int | None,
                    machine: object) -> tuple[Arguments, object]:
    """(the :class:`Arguments`, the source of the rows: the canonical CSR matrix where every
    rank holds one, else ``A`` as given: the path, or the root rank's matrix, None elsewhere),
    once each rank's arguments are valid and all agree (see the module); collective, one
    bounded ``allgather``."""

    def check() -> tuple[Arguments, object]:
        checked_mode = modes.check_mode(mode)
        if isinstance(machine, str) and machine != "probe":
            raise ValueError(f"machine must be a clspmv.distributed.model.Machine or 'probe', "
                             f"got {machine!r}")
        formats = _formats(format)
        timed = check_partition(partition)
        if root is not None and not 0 <= root < comm.size:
            raise ValueError(f"root must be a rank of the communicator (0..{comm.size - 1}), "
                             f"got {root}")
        source = A
        if root is None and not is_path(A):
            if A is None:
                raise ValueError("A is None: give the matrix on every rank, or on one rank "
                                 "with root=that rank (the others pass None)")
            source = canonical_csr(A, dtype)
        elif root == comm.rank and A is None:
            raise ValueError(f"the root rank {root} was given no matrix")
        return Arguments(checked_mode, formats, timed), source

    def facts(checked: tuple[Arguments, object]) -> dict[str, object]:
        args, source = checked
        csr = source if root is None and not is_path(A) else None
        if root is not None:
            where = f"on rank {root}"
        elif csr is None:
            where = f"the file {os.fspath(A)!r}"
        else:
            where = "a matrix on every rank"
        return dict(zip(FACTS, (
            where,
            None if csr is None else csr.shape,
            None if csr is None else csr.nnz,
            _precision(dtype, csr),
            args.formats,
            mode,
            partition if isinstance(partition, str) else
            f"weights {digest(np.asarray(partition, np.float64))}",
            None if row_offsets is None else np.asarray(row_offsets).tolist(),
            machine if machine is None or isinstance(machine, str) else "a Machine",
            None if csr is None else digest(csr.indptr, csr.indices, csr.data),
        ), strict=True))

    return agree(comm, "checking the arguments", check, facts=facts)


def digest(*arrays: np.ndarray) -> str:
    """A BLAKE2b checksum (16 hex digits) of the arrays' bytes, in order, each after its length
    (bytes moved from one array to the next change it)."""
    h = hashlib.blake2b(digest_size=8)
    for array in arrays:
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        h.update(np.int64(data.size).tobytes())
        h.update(data)
    return h.hexdigest()


def _precision(dtype: object, csr: Any) -> str:
    """The precision's name: of the converted matrix where there is one, else as requested
    (``"A's type"`` for None)."""
    if csr is not None:
        return resolve(dtype, csr.dtype).name
    return "A's type" if dtype is None else Precision.of(dtype).name


def _formats(format: object) -> tuple[str, str]:
    if format is None:
        return DEFAULT_FORMATS
    if isinstance(format, str):
        return format, format
    pair = tuple(format)  # type: ignore[call-overload]
    if len(pair) != 2 or not all(isinstance(f, str) for f in pair):
        raise ValueError(f"format must be a name or a pair (local, non-local), got {format!r}")
    return pair


__all__ = ["DEFAULT_FORMATS", "FACTS", "Arguments", "check_arguments", "digest"]
