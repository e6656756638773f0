"""Matrix Market (``.mtx`` / ``.mtx.gz``) reading and writing.

:func:`read` reads ``coordinate`` files (fields ``real``, ``integer`` and ``pattern``;
symmetries ``general``, ``symmetric`` and ``skew-symmetric``) and ``array`` files (fields
``real`` and ``integer``, symmetry ``general``) into a float64 :class:`scipy.sparse.csr_matrix`.
Gzip compression is recognised by its magic bytes, whatever the file is called.
:func:`read_rows` reads a range of rows only, streaming the file; :func:`read_header` reads
the shape and kind; :func:`write` writes ``coordinate real general`` or ``symmetric`` files
that :func:`read` turns back into the same matrix, bit for bit.

Every problem with a file raises :class:`~clspmv.errors.MatrixFormatError` with a message of
the form ``"<file>: line <N>: <what is wrong>"``, ``N`` being the 1-based number of the
offending line of the (decompressed) file. Declared sizes are checked before anything is
allocated: more than 2**31 - 1 rows or columns (the kernels' 32-bit indices) is an error, and a
declared entry count is only compared with the entries actually found.

Modules: ``source`` (the opened file), ``header`` (banner and size line), ``validating`` (the
reader that names the bad line), ``fast`` (fast_matrix_market behind cheap checks), ``rows``
(row ranges), ``writing``.
"""

from __future__ import annotations

import os

import scipy.sparse as sp

from clspmv.io.fast import body_could_hold, read_fast
from clspmv.io.header import Header, parse_header, read_header
from clspmv.io.rows import read_rows
from clspmv.io.source import Source
from clspmv.io.validating import read_validating
from clspmv.io.writing import write

__all__ = ["Header", "read", "read_header", "read_rows", "write"]


def read(path: str | os.PathLike[str]) -> sp.csr_matrix:
    """Read a Matrix Market file into a float64 CSR matrix.

    The header is checked first; the body is then parsed by fast_matrix_market (through
    ``scipy.io.mmread``, with its threads) where a scan shows the canonical layout, else by
    the validating reader, which reads the file or names the line that is wrong (see
    :mod:`clspmv.io.fast`). Both give the same matrix, bit for bit. A gzip file is
    decompressed to a temporary file for the fast parser (as large as the plain file).

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).

    Returns:
        A :class:`scipy.sparse.csr_matrix` of dtype float64 with sorted column indices.
        Duplicate coordinate entries are summed; explicitly stored zeros are kept as
        entries. ``symmetric`` files are mirrored, ``skew-symmetric`` ones mirrored with
        negated values, and ``pattern`` entries get the value 1.0. Zeros of an ``array``
        (dense) file are not stored.

    Raises:
        MatrixFormatError: the file is malformed or of an unsupported kind (complex,
            Hermitian, vector); the message names the file and the line.
        OSError: the file cannot be opened.
    """
    src = Source(path)
    try:
        header = parse_header(src)
        gzipped = src.gzipped
    finally:
        src.close()
    if body_could_hold(path, gzipped, header):
        A = read_fast(path, gzipped, header)
        if A is not None:
            return A
    return read_validating(path)
