"""The reading loop shared by :func:`clspmv.io.read`, :func:`~clspmv.io.read_coo` and
:func:`~clspmv.io.read_rows`: header, then the body piece by piece, each piece by the fast path
where its scans allow (:mod:`clspmv.io.fast`), else by the validating reader
(:mod:`clspmv.io.validating`), both accepting the one language of :mod:`clspmv.io.grammar`.

The first problem in file order is raised, whichever path read the pieces before it: a
malformed line among the declared entries, a data line beyond them, too few of them at the end.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator

from clspmv.io.entries import Collector, Entries
from clspmv.io.fast import parse_canonical
from clspmv.io.header import Header, parse_header
from clspmv.io.source import CHUNK, Piece, Source
from clspmv.io.validating import parse_piece


def _next_piece(pieces: Generator[Piece, int | None, None], first_line: int) -> Piece | None:
    """The next piece of ``pieces`` (:meth:`Source.pieces`), told the number of its first line
    (the lines of the pieces before it were counted by whoever parsed them), or ``None``."""
    try:
        return pieces.send(first_line)
    except StopIteration:
        return None


def read_entries(src: Source, header: Header, *, fast: bool = True,
                 chunk_size: int = CHUNK) -> Iterator[Entries]:
    """The entries of the body of ``src`` (whose header has been read), piece by piece.

    ``fast=False`` sends every piece to the validating reader (for tests that compare the
    two paths).
    """
    found = 0
    last_line = src.lineno  # the number of the file's last line read so far
    pieces = src.pieces(chunk_size)
    piece = next(pieces, None)
    while piece is not None:
        entries = parse_canonical(piece.data, header, found) if fast else None
        if entries is not None:
            last_line = piece.first_line + entries.count - 1  # one line an entry
            parts: Iterable[tuple[Entries, int]] = [(entries, last_line)]
        else:
            parts = parse_piece(src, piece, header, found)
        for entries, line in parts:
            found += entries.count
            last_line = line
            yield entries
        piece = _next_piece(pieces, last_line + 1)
    if found < header.entries:
        raise src.error(
            last_line,
            f"too few entries: the file ends here with {found} entries, "
            f"but the size line declares {header.entries}",
        )


def collect(path: str | os.PathLike[str], *, rows: Callable[[Header], tuple[int, int]] | None
            = None, fast: bool = True, chunk_size: int = CHUNK,
            fold_at: int | None = None) -> Collector:
    """Read the whole file and keep the entries of the rows ``rows(header)`` (default: all),
    their duplicates folded from ``fold_at`` entries on (see :class:`Collector`; for a CSR
    result only)."""
    with Source(path) as src, src.blaming_corruption():
        header = parse_header(src)
        start, stop = rows(header) if rows is not None else (0, header.rows)
        kept = Collector(header, start, stop, fold_at=fold_at, name=src.name)
        for entries in read_entries(src, header, fast=fast, chunk_size=chunk_size):
            kept.add(entries)
        return kept
