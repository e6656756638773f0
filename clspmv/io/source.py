"""A Matrix Market file opened for reading: gzip detection, line counting, errors with lines."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from clspmv.errors import MatrixFormatError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 22  # bytes read at a time from the body


def show(token: bytes | str, limit: int = 40) -> str:
    """A short printable quotation of ``token`` for an error message."""
    if isinstance(token, bytes):
        token = token.decode("latin-1")
    token = token.strip()
    if len(token) > limit:
        token = token[:limit] + "..."
    return repr(token)


class Source:
    """A Matrix Market file opened for reading, which keeps count of the lines it has read.

    Gzip decompression failures (truncated or corrupt data) are turned into
    :class:`MatrixFormatError` naming the line that was being read.
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
        self.offset = 0  # number of (decompressed) bytes consumed so far

    def close(self) -> None:
        """Close the file."""
        try:
            if self.gzipped:
                self._fh.close()
        finally:
            self._raw.close()

    def error(self, line: int, reason: str) -> MatrixFormatError:
        """A :class:`MatrixFormatError` for ``line`` of this file."""
        return MatrixFormatError(f"{self.name}: line {line}: {reason}")

    @contextmanager
    def _guard(self, line: Callable[[], int]) -> Iterator[None]:
        if not self.gzipped:
            yield
            return
        try:
            yield
        except (EOFError, OSError, zlib.error) as exc:
            raise self.error(
                line(), f"truncated or corrupt gzip data ({type(exc).__name__}: {exc})"
            ) from exc

    def readline(self, limit: int = -1) -> bytes:
        """The next line (with its newline), or ``b""`` at the end of the file."""
        with self._guard(lambda: self.lineno + 1):
            line = self._fh.readline(limit)
        if line:
            self.lineno += 1
            self.offset += len(line)
        return line

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """Everything after the lines read so far, ``size`` bytes at a time (gzip: at most).

        A decompression failure names the line after the last complete one yielded.
        """
        newlines = 0
        # read1 on gzip returns what one step of decompression yields, so a failure is
        # reported close to the line where the good data ends.
        read = self._fh.read1 if self.gzipped else self._fh.read  # type: ignore[attr-defined]
        while True:
            with self._guard(lambda n=newlines: self.lineno + n + 1):
                chunk = read(size)
            if not chunk:
                return
            newlines += chunk.count(b"\n")
            yield chunk

    def read_rest(self) -> bytes:
        """Everything after the lines read so far, read in chunks."""
        return b"".join(self.chunks())

