"""Matrix Market (``.mtx`` / ``.mtx.gz``) reading and writing.

:func:`read` reads ``coordinate`` files (fields ``real``, ``integer`` and ``pattern``;
symmetries ``general``, ``symmetric`` and ``skew-symmetric``) and ``array`` files (fields
``real`` and ``integer``, symmetry ``general``) into a float64 :class:`scipy.sparse.csr_array`;
:func:`read_coo` into a COO array without any per-row array, as ``scipy.io.mmread`` does. The
results are scipy sparse arrays (``csr_array``, ``coo_array``): ``A @ x`` is the product and
``A * x`` elementwise; ``scipy.sparse.csr_matrix(A)`` makes the matrix class of the same arrays
without copying them.
Gzip compression is recognised by its magic bytes, whatever the file is called, and
decompressed as the file is read (nothing is written to disk). :func:`read_rows` reads a range
of rows only; :func:`read_header` reads the shape and kind; :func:`write` writes
``coordinate real general`` or ``symmetric`` files that :func:`read` turns back into the same
matrix, bit for bit.

Every reader accepts exactly the language of :mod:`clspmv.io.grammar`, and every problem with a
file raises :class:`~clspmv.errors.MatrixFormatError` with a message of the form
``"<file>: line <N>: <what is wrong>"``, ``N`` being the 1-based number of the offending line of
the (decompressed) file (an unreadable file raises :class:`OSError`). Resources are bounded by
what the file holds, never by what its header declares: the body is read in pieces of
:data:`~clspmv.io.source.CHUNK` bytes of whole lines, a line is at most
:data:`~clspmv.io.source.LINE_LIMIT` bytes, the entries are held as they are read (16 bytes
each; for a CSR result, their duplicates summed along the way where they are many) and the
result is assembled after the whole body was read and checked. The peak of a read is at most
twice the arrays it returns plus 64 MiB, wherever its duplicates are in the file (see
:class:`~clspmv.io.entries.Collector`), and its time linear in the file's size (plus the row
pointer's for :func:`read`, which is refused where it is absurd for the entries read). More
than 2**31 - 1 rows or columns (the kernels' 32-bit indices) is an error.

Modules: ``grammar`` (the language), ``source`` (the opened file, in pieces), ``header`` (banner
and size line), ``fast`` (fast_matrix_market behind cheap checks), ``validating`` (the reader
that names the bad line), ``entries`` (what is kept of the entries read), ``held`` (the entries
held, and their folding), ``assembly`` (the scipy matrix made of them), ``reader`` (the loop
over the pieces), ``rows`` (row ranges), ``writing``.
"""

from __future__ import annotations

import os

import scipy.sparse as sp

from clspmv.io.entries import FOLD_ENTRIES
from clspmv.io.header import Header, read_header
from clspmv.io.reader import collect
from clspmv.io.rows import read_rows
from clspmv.io.writing import write

__all__ = ["Header", "read", "read_coo", "read_header", "read_rows", "write"]


def read(path: str | os.PathLike[str]) -> sp.csr_array:
    """Read a Matrix Market file into a float64 CSR array.

    The header is checked first; the body is then read piece by piece, each parsed by
    fast_matrix_market (through ``scipy.io.mmread``, with its threads) where cheap scans show
    the canonical layout, else by the validating reader, which reads it or names the line that
    is wrong (see :mod:`clspmv.io.fast`). Both give the same entries, bit for bit.

    Memory: once 2**18 entries are held (16 bytes each, mirrors of a symmetric file
    included), they are folded, one entry per position (16 bytes), and so are the entries read
    since whenever they reach 2**18 or an eighth of the positions: duplicates never take more
    than that, wherever they are in the file (:class:`~clspmv.io.entries.Collector`). The CSR
    arrays (12 bytes an entry and 4 a row) are made from the folded positions, already in CSR
    order, with the column indices written over them (:mod:`clspmv.io.assembly`); a general
    file written column by column (as SuiteSparse writes them) is folded in column order, its
    entries appended rather than merged, and made CSC then transposed once (a peak of both,
    twice the arrays returned). The row
    pointer is the one array sized by the declared shape rather than by the entries read; it
    is allocated last, once the body has been read and checked, so a header that lies about its
    entries fails before it. A tall file with few entries (a valid file may declare up to
    2**31 - 1 rows, and scipy reads it) therefore costs 4 bytes a row here: up to 256 MiB
    whatever it holds, beyond that up to 64 times the arrays of its entries and within the
    memory available; past those, the read is refused before the row pointer is allocated (a
    header of two billion rows for one entry would take 8 GB), and :func:`read_coo` reads the
    file without that array.

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).

    Returns:
        A :class:`scipy.sparse.csr_array` of dtype float64 with sorted column indices,
        equal to ``read_coo(path).tocsr()``: duplicate coordinate entries summed (in scipy's
        order), explicitly stored zeros kept as entries, ``symmetric`` files mirrored,
        ``skew-symmetric`` ones mirrored with negated values, ``pattern`` entries 1.0, zeros of
        an ``array`` (dense) file not stored. Bit for bit where the file holds fewer than
        2**18 entries (mirrors included); from there on, every position's values are added one
        at a time in file order, a fold at a time (the file's own entries since the previous
        fold, then their mirrors), so a sum of three or more duplicates may differ from
        scipy's in its last bits (scipy adds them in the order its sort of a row leaves them,
        the file's order only in rows of 16 entries or fewer).

    Raises:
        MatrixFormatError: the file is malformed or of an unsupported kind (complex,
            Hermitian, vector), or declares rows whose row pointer is absurd for its entries
            or beyond the memory available (see above); the message names the file and the
            line.
        OSError: the file cannot be opened or read.
    """
    return collect(path, fold_at=FOLD_ENTRIES).csr()


def read_coo(path: str | os.PathLike[str]) -> sp.coo_array:
    """Read a Matrix Market file into a float64 COO array, without any per-row array.

    The entries as ``scipy.io.mmread`` returns them (for the files both accept): the file's
    own entries in file order, then the mirrored off-diagonal entries of a symmetric or
    skew-symmetric file; duplicates not summed. Memory: the entries (16 bytes each) and, while
    they are joined, one more array of them.

    Raises:
        MatrixFormatError: as :func:`read`.
        OSError: the file cannot be opened or read.
    """
    return collect(path).coo()
