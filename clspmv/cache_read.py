"""Reading one cache file of :mod:`clspmv.cache_files`, trusting nothing in it: its bytes
without following a symbolic link or waiting on a FIFO, at most :data:`MAX_FILE_BYTES`, with the
version of the file read (:func:`read_file`), and its JSON strictly (:func:`parse_json`: no
``NaN``, no number beyond the floats' range). Standard library only."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 4 << 20
"""Largest cache file read (a calibration with its measurements is about 30-60 kB)."""


def _strict_float(literal: str) -> float:
    """A JSON number as a float; ValueError beyond the floats' range (``1e400``)."""
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the number {literal:.40} is out of range")
    return value


def _no_constant(literal: str) -> object:
    """ValueError for the ``NaN``, ``Infinity`` and ``-Infinity`` that Python's JSON takes."""
    raise ValueError(f"{literal} is not a number")


def parse_json(raw: bytes) -> object:
    """The JSON of ``raw``, strictly: UTF-8, no ``NaN`` or ``Infinity``, no number beyond the
    floats' range; ValueError naming the problem (a nesting too deep for the parser too)."""
    try:
        return json.loads(raw.decode("utf-8"), parse_float=_strict_float,
                          parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("it is nested too deep") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg} at line {err.lineno} column {err.colno})"
                         ) from None


def read_file(path: Path) -> tuple[bytes, tuple[int, ...]] | None:
    """The bytes of ``path`` and its version (inode, size, modification time); None where there
    is no file (nor folder). Opened without following a symbolic link and without waiting on a
    FIFO; OSError / ValueError where it cannot be read or is no regular file of a sane size."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ValueError("it is a symbolic link, which clspmv does not follow") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is a directory" if stat.S_ISDIR(st.st_mode)
                             else "it is no regular file")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise ValueError(f"more than the {MAX_FILE_BYTES} bytes a cache file may have")
    finally:
        os.close(fd)
    return b"".join(chunks), (st.st_ino, st.st_size, st.st_mtime_ns)
