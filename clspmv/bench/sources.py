"""Where the benchmark matrices come from: a MATRIX argument of ``clspmv bench`` is

* a Matrix Market file, ``.mtx`` or ``.mtx.gz``;
* a generator spec ``gen:NAME:key=val,...`` (:mod:`clspmv.bench.generators`);
* ``ss:GROUP/NAME``, a matrix of the SuiteSparse Matrix Collection: downloaded once (with a
  progress bar) from ``$CLSPMV_SUITESPARSE_URL/GROUP/NAME.tar.gz`` (default
  :data:`DEFAULT_URL`), whose archive holds ``NAME/NAME.mtx``, into the cache folder
  ``$CLSPMV_CACHE_DIR`` (default: ``platformdirs.user_cache_dir("clspmv")``) as
  ``suitesparse/GROUP/NAME.mtx``, and read from there afterwards.

:func:`resolve` checks an argument without loading anything; :meth:`Source.load` reads or
generates the matrix.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import scipy.sparse as sp

from .. import io
from ..cache_files import cache_dir
from ..errors import ClspmvError
from . import generators

DEFAULT_URL = "https://suitesparse-collection-website.herokuapp.com/MM"
"""The collection's Matrix Market folder: GROUP/NAME.tar.gz below it."""

SS_PREFIX = "ss:"
_NAME = re.compile(r"[A-Za-z0-9_.+-]+")


class SourceError(ClspmvError, ValueError):
    """A MATRIX argument that names no readable matrix; the message says what to do."""


@dataclass(frozen=True)
class Source:
    """A benchmark matrix: its display name, what kind of source it is, and how to load it."""

    name: str
    kind: str  # "file", "generator" or "suitesparse"
    argument: str
    _load: Callable[[], sp.spmatrix]

    def load(self) -> sp.spmatrix:
        """The matrix (read, generated or downloaded-then-read)."""
        return self._load()


def base_url() -> str:
    """``$CLSPMV_SUITESPARSE_URL``, else :data:`DEFAULT_URL` (no trailing slash)."""
    return (os.environ.get("CLSPMV_SUITESPARSE_URL") or DEFAULT_URL).rstrip("/")


def file_name(path: str) -> str:
    """The file name without ``.mtx`` / ``.mtx.gz``."""
    name = Path(path).name
    for suffix in (".gz", ".mtx"):
        name = name.removesuffix(suffix)
    return name


def parse_suitesparse(argument: str) -> tuple[str, str]:
    """``ss:GROUP/NAME`` -> (GROUP, NAME); SourceError for anything else."""
    group, slash, name = argument.removeprefix(SS_PREFIX).partition("/")
    if not slash or not _NAME.fullmatch(group) or not _NAME.fullmatch(name):
        raise SourceError(f"{argument!r}: expected ss:GROUP/NAME, e.g. ss:HB/bcsstk24 "
                          "(letters, digits, '_', '.', '+', '-')")
    return group, name


def suitesparse_file(group: str, name: str, *, progress: bool = True) -> Path:
    """The cached ``NAME.mtx`` of SuiteSparse matrix GROUP/NAME, downloaded first if absent.

    The archive is downloaded to a temporary file in the cache folder, ``NAME/NAME.mtx`` is
    extracted from it to a temporary file, and that is renamed into place: an interrupted
    download leaves nothing half-written under the final name.
    """
    folder = cache_dir() / "suitesparse" / group
    target = folder / f"{name}.mtx"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    url = f"{base_url()}/{group}/{name}.tar.gz"
    fd, archive = tempfile.mkstemp(prefix=f".{name}.", suffix=".tar.gz", dir=folder)
    fd2, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".mtx", dir=folder)
    os.close(fd2)
    try:
        with os.fdopen(fd, "wb") as out:
            _download(url, out, f"{group}/{name}", progress)
        member = f"{name}/{name}.mtx"
        try:
            with tarfile.open(archive, "r:gz") as tar:
                source = tar.extractfile(member)
                if source is None:
                    raise KeyError(member)
                with open(partial, "wb") as dest, source:
                    shutil.copyfileobj(source, dest, 1 << 20)
        except (KeyError, tarfile.TarError, EOFError, OSError) as err:
            raise SourceError(f"{url}: the download is not a .tar.gz holding {member} "
                              f"({type(err).__name__}: {err})") from None
        os.replace(partial, target)
    finally:
        Path(archive).unlink(missing_ok=True)
        Path(partial).unlink(missing_ok=True)
    return target


def _download(url: str, out, label: str, progress: bool) -> None:
    from tqdm import tqdm

    try:
        response = urllib.request.urlopen(url, timeout=60)
    except urllib.error.HTTPError as err:
        hint = " (no such matrix? names are listed at https://sparse.tamu.edu)" \
            if err.code == 404 else ""
        raise SourceError(f"cannot download {url}: HTTP {err.code} {err.reason}{hint}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise SourceError(f"cannot download {url}: {reason}; check the network, or set "
                          "CLSPMV_SUITESPARSE_URL to a mirror") from None
    with response, tqdm(total=int(response.headers.get("Content-Length") or 0) or None,
                        unit="B", unit_scale=True, desc=f"download {label}",
                        disable=not progress, leave=False) as bar:
        while chunk := response.read(1 << 20):
            out.write(chunk)
            bar.update(len(chunk))


def resolve(argument: str, *, progress: bool = True) -> Source:
    """The :class:`Source` of a MATRIX argument; SourceError when it cannot be one."""
    if argument.startswith(generators.PREFIX):
        try:
            name, params = generators.parse_spec(argument)
        except ValueError as err:
            raise SourceError(str(err)) from None
        spec = generators.canonical_spec(name, params)
        return Source(spec, "generator", argument, lambda: _generate(spec))
    if argument.startswith(SS_PREFIX):
        group, name = parse_suitesparse(argument)
        return Source(f"{group}/{name}", "suitesparse", argument,
                      lambda: io.read(suitesparse_file(group, name, progress=progress)))
    path = Path(argument)
    if path.is_dir():
        raise SourceError(f"{argument}: is a directory; pass its .mtx/.mtx.gz files (or the "
                          "directory itself to clspmv bench / stats, which read every one), "
                          "gen:NAME:key=val,... or ss:GROUP/NAME")
    if not path.is_file():
        raise SourceError(f"{argument}: no such file; a MATRIX is a .mtx/.mtx.gz file, "
                          "gen:NAME:key=val,... or ss:GROUP/NAME")
    return Source(file_name(argument), "file", argument, lambda: io.read(path))


def _generate(spec: str) -> sp.csr_matrix:
    """The matrix of a ``gen:`` spec; SourceError for values the generator refuses (``n=0``)
    or that do not fit in memory (the spec parses, so only generating finds them)."""
    try:
        return generators.generate(spec)
    except (ValueError, MemoryError) as err:
        raise SourceError(f"{spec}: {err or 'out of memory'}; choose other values "
                          "(gen:NAME:key=val,...)") from None


MATRIX_SUFFIXES = (".mtx", ".mtx.gz")
"""The files a directory argument stands for."""


def expand(arguments: list[str]) -> list[str]:
    """``arguments`` with every directory replaced by its ``.mtx`` / ``.mtx.gz`` files (sorted
    by name, not recursive); SourceError for a directory without any."""
    out = []
    for argument in arguments:
        path = Path(argument)
        if argument.startswith((generators.PREFIX, SS_PREFIX)) or not path.is_dir():
            out.append(argument)
            continue
        found = sorted(str(p) for p in path.iterdir()
                       if p.is_file() and p.name.endswith(MATRIX_SUFFIXES))
        if not found:
            raise SourceError(f"{argument}: is a directory without .mtx or .mtx.gz files; pass "
                              "Matrix Market files, gen:NAME:key=val,... or ss:GROUP/NAME")
        out += found
    return out


def resolve_all(arguments: list[str], *, progress: bool = True) -> list[Source]:
    """The :class:`Source` s of MATRIX arguments, directories expanded (:func:`expand`)."""
    return [resolve(a, progress=progress) for a in expand(arguments)]
