"""The folder of a run: its results (:data:`clspmv.bench.records.RESULTS_FILES`) and its report
(:data:`REPORT_FILES`: report.md and the plots). One run per folder, never two side by side.

``clspmv bench`` makes a new folder for every run (:func:`new_folder`: ``<date>-<host>``, then
``-2``, ``-3``, ...; ``mkdir`` is atomic, so two runs started at once never share one) and
writes into a folder named with ``--out`` only when it holds no run's files, unless forced
(:func:`claim`), which removes them before the new run writes anything: even an interrupted run
leaves only its own files there. A report remade from a run's results in its own folder
replaces the old one as a whole (:func:`clear_report`); :func:`clspmv.report.write` itself
removes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..bench.records import RESULTS_FILES
from ..errors import ClspmvError
from .common import PLOTS

REPORT = "report.md"
REPORT_FILES = (REPORT, *PLOTS)
"""Glob patterns of the files of a report (report.md and every plot it may draw)."""


class FolderError(ClspmvError):
    """An output folder that holds another run's files or cannot be made; the message names
    the folder and the fix."""


def files_of(folder: Path, patterns: tuple[str, ...] = (*RESULTS_FILES, *REPORT_FILES)
             ) -> list[Path]:
    """The files in ``folder`` matching ``patterns`` (default: a run's results and report)."""
    if not folder.is_dir():
        return []
    return sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file()})


def remove(files: list[Path]) -> None:
    """Delete ``files`` (the report first, so that no report outlives the files it shows)."""
    for path in sorted(files, key=lambda p: p.name != REPORT):
        path.unlink(missing_ok=True)


def clear_report(folder: Path) -> None:
    """Delete the report in ``folder`` (report.md and every plot), keeping its results: before
    a report of them is made anew (``clspmv report`` in the run's own folder)."""
    remove(files_of(folder, REPORT_FILES))


def _cannot_make(folder: Path, err: OSError) -> FolderError:
    return FolderError(f"{folder}: cannot make the folder ({err.strerror or err}); choose one "
                       "you can write with --out DIR")


def new_folder(base: Path) -> Path:
    """Make and return the first of ``base``, ``base-2``, ``base-3``, ... that does not exist
    yet (each made with one ``mkdir``: a folder made by a concurrent run is skipped)."""
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _cannot_make(base.parent, err) from None
    path, n = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")
        except OSError as err:
            raise _cannot_make(path, err) from None


def claim(folder: Path, force: bool) -> Path:
    """``folder``, made if needed, emptied of any run's results and report: FolderError naming
    them when it holds some, unless ``force`` (then they are deleted)."""
    found = files_of(folder)
    if found and not force:
        names = ", ".join(p.name for p in found[:3]) + (", ..." if len(found) > 3 else "")
        raise FolderError(f"{folder} holds the files of another run ({names}); choose a new "
                          "folder with --out DIR, or pass --force to replace them")
    remove(found)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _cannot_make(folder, err) from None
    if not os.access(folder, os.W_OK | os.X_OK):  # now, not at the first record minutes later
        raise FolderError(f"{folder}: cannot write into the folder (permission denied); choose "
                          "one you can write with --out DIR")
    return folder
