"""A Matrix Market file opened for reading: gzip detection, bounded lines, errors with lines.

The file is read as a stream, decompressed on the fly where it is gzip (recognised by its magic
bytes), and handed out as pieces of whole lines of at most about :data:`CHUNK` bytes: nothing is
copied to disk, and no read holds more than one piece and one line of :data:`LINE_LIMIT` bytes.
Decompression and line-length failures become :class:`~clspmv.errors.MatrixFormatError` naming
the line.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import IO, NamedTuple

from clspmv.errors import MatrixFormatError

GZIP_MAGIC = b"\x1f\x8b"
_GZIP_FAILURES = (EOFError, OSError, zlib.error)  # what truncated or corrupt gzip data raises
CHUNK = 1 << 22
"""Bytes of the body handed out at a time (a piece ends at the last newline within it)."""
LINE_LIMIT = 1 << 20
"""Longest line accepted, in bytes without its line feed: a data line is a few dozen bytes, a
comment a few hundred."""


def show(token: bytes | str, limit: int = 40) -> str:
    """A short printable quotation of ``token`` for an error message."""
    if isinstance(token, bytes):
        token = token.decode("latin-1")
    token = token.strip()
    if len(token) > limit:
        token = token[:limit] + "..."
    return repr(token)


class Piece(NamedTuple):
    """Whole lines of the body: ``data`` (each line ends with a newline, but the file's last
    line may not) and the 1-based number of its first line."""

    data: bytes
    first_line: int


class Source:
    """A Matrix Market file opened for reading, which keeps count of the lines it has read.

    Gzip files (single or concatenated members, as gzip writes them) are decompressed as they
    are read; truncated or corrupt data raises :class:`MatrixFormatError` naming the line that
    was being read.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        raw = open(path, "rb")  # closed in close()
        try:
            self.gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
        except BaseException:
            raw.close()
            raise
        self._raw = raw
        self._fh: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if self.gzipped else raw
        self.lineno = 0  # number of complete or partial lines consumed so far
        self.failed_line = 0  # the line of the last error made
        self.corrupt = False  # whether the gzip data was found corrupt

    def close(self) -> None:
        """Close the file."""
        try:
            if self.gzipped:
                self._fh.close()
        finally:
            self._raw.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, line: int, reason: str) -> MatrixFormatError:
        """A :class:`MatrixFormatError` for ``line`` of this file."""
        self.failed_line = line
        return MatrixFormatError(f"{self.name}: line {line}: {reason}")

    @contextmanager
    def blaming_corruption(self) -> Iterator[None]:
        """Within it, a problem found in the data of a gzip file whose rest is corrupt is
        reported as the corruption (at the problem's line): corrupt deflate data decodes to
        garbage before the checksum at the end shows it."""
        try:
            yield
        except MatrixFormatError:
            if self.gzipped and not self.corrupt:
                line = self.failed_line
                while True:
                    block, failure = self._read(CHUNK)
                    if failure is not None:
                        raise self._corrupt(line, failure) from failure
                    if not block:
                        break
            raise

    def too_long(self, line: int) -> MatrixFormatError:
        """The error for a line longer than :data:`LINE_LIMIT`."""
        return self.error(line, f"line longer than {LINE_LIMIT} bytes (no Matrix Market line is; "
                                "is this a Matrix Market file?)")

    def _corrupt(self, line: int, exc: BaseException) -> MatrixFormatError:
        self.corrupt = True
        return self.error(line, f"truncated or corrupt gzip data ({type(exc).__name__}: {exc})")

    def _read(self, size: int) -> tuple[bytes, BaseException | None]:
        """Up to ``size`` bytes (``b""`` at the end), and the gzip failure that cut them short.

        Gzip data is read a step of decompression at a time, so that what was good before a
        failure is still handed out and the failure is reported close to where it is.
        """
        if not self.gzipped:
            return self._fh.read(size), None
        steps: list[bytes] = []
        got = 0
        try:
            while got < size:
                step = self._fh.read1(size - got)  # type: ignore[attr-defined]
                if not step:
                    break
                steps.append(step)
                got += len(step)
        except _GZIP_FAILURES as exc:
            return b"".join(steps), exc
        return b"".join(steps), None

    def readline(self) -> bytes:
        """The next line (with its newline), or ``b""`` at the end of the file.

        Raises :class:`MatrixFormatError` for a line longer than :data:`LINE_LIMIT`.
        """
        try:
            line = self._fh.readline(LINE_LIMIT + 1)
        except _GZIP_FAILURES as exc:
            if not self.gzipped:
                raise
            raise self._corrupt(self.lineno + 1, exc) from exc
        if len(line) > LINE_LIMIT and not line.endswith(b"\n"):
            raise self.too_long(self.lineno + 1)
        if line:
            self.lineno += 1
        return line

    def pieces(self, size: int = CHUNK) -> Generator[Piece, int | None, None]:
        """Everything after the lines read so far, as pieces of whole lines.

        The caller sends each piece after the first the number of its first line (``send``:
        it has counted the lines of the piece before, parsing it); ``next`` counts them here.

        A piece holds the lines that end within ``size`` bytes read (at least one line); the
        last piece holds the file's last line even without a final newline. A line longer than
        :data:`LINE_LIMIT` raises :class:`MatrixFormatError` as soon as that many bytes of it
        were read, so a body without newlines costs neither memory nor quadratic time.
        """
        line = self.lineno + 1
        partial: list[bytes] = []  # the start of a line that the reads so far end with
        partial_size = 0
        while True:
            block, failure = self._read(size)
            cut = block.rfind(b"\n") + 1
            if not cut:
                partial.append(block)
                partial_size += len(block)
                if partial_size > LINE_LIMIT:
                    raise self.too_long(line)
            else:
                data = (b"".join([*partial, memoryview(block)[:cut]]) if partial_size
                        else block[:cut])
                partial, partial_size = [block[cut:]], len(block) - cut
                long_line = _long_line(data)
                if long_line >= 0:  # the lines before it first: they may hold an earlier error
                    if long_line:
                        yield Piece(data[:long_line], line)
                    raise self.too_long(line + data.count(b"\n", 0, long_line))
                told = yield Piece(data, line)
                line = told if told is not None else line + data.count(b"\n")
                if partial_size > LINE_LIMIT:
                    raise self.too_long(line)
            if failure is not None:
                raise self._corrupt(line, failure)
            if not block:
                break
        if partial_size:
            yield Piece(b"".join(partial), line)


def _long_line(data: bytes) -> int:
    """The offset in ``data`` of its first line longer than :data:`LINE_LIMIT`, or -1.

    Every window of half that size holds a newline unless such a line (or one nearly as long,
    then measured) spans it, so a few ``find`` calls suffice.
    """
    window = LINE_LIMIT // 2
    for start in range(0, len(data), window):
        if data.find(b"\n", start, start + window) >= 0:
            continue
        begin = data.rfind(b"\n", 0, start) + 1
        end = data.find(b"\n", start)
        if (end if end >= 0 else len(data)) - begin > LINE_LIMIT:
            return begin
    return -1
