"""clspmv.cache_files beyond the races: the one cache variable (issue 43) and when a measuring
side needs to read the file again (issue 46 review)."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from clspmv import cache_files
from clspmv.errors import ClspmvWarning


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Neither variable set, and no warning given yet in this process."""
    monkeypatch.delenv("CLSPMV_CACHE_DIR", raising=False)
    monkeypatch.delenv("CLSPMV_CACHE", raising=False)
    cache_files.forget()
    yield
    cache_files.forget()


def test_the_cache_folder_variable(monkeypatch, tmp_path) -> None:
    import platformdirs

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither variable, or the current one: no warning
        assert cache_files.cache_dir() == Path(platformdirs.user_cache_dir("clspmv"))
        monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "new"))
        assert cache_files.cache_dir() == tmp_path / "new"


def test_the_former_variable_is_read_with_a_warning(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CLSPMV_CACHE", str(tmp_path / "old"))
    with pytest.warns(ClspmvWarning) as said:
        assert cache_files.cache_dir() == tmp_path / "old"
    assert [str(w.message) for w in said] == [
        f"$CLSPMV_CACHE is deprecated: set CLSPMV_CACHE_DIR={tmp_path / 'old'} instead (the one "
        "cache folder of clspmv); CLSPMV_CACHE is still read for now"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_files.cache_dir() == tmp_path / "old"  # once per process


def test_the_former_variable_is_ignored_beside_the_current(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CLSPMV_CACHE", str(tmp_path / "old"))
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "new"))
    with pytest.warns(ClspmvWarning, match=r"^\$CLSPMV_CACHE is deprecated and ignored, since "
                                           r"\$CLSPMV_CACHE_DIR is set: unset CLSPMV_CACHE$"):
        assert cache_files.cache_dir() == tmp_path / "new"


# -- measuring: read again only where another may have stored the file -----------------------
def test_no_second_read_when_nobody_was_waited_for(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="clspmv")
    path = tmp_path / "calibration-x.json"
    with cache_files.measuring(path, "the calibration of x") as again:
        assert again is False
    path.write_text("{not json")  # an unusable file, unchanged while the locks are taken
    with cache_files.measuring(path, "the calibration of x") as again:
        assert again is False
    assert not caplog.records  # no note: nothing was waited for


def test_a_second_read_after_waiting_for_another_thread(tmp_path, caplog) -> None:
    """The thread that waited is told to read again (the other stored the file), and says it
    waited as a WARNING of clspmv.cache_files (it may wait for minutes: a library user sees it
    without configuring logging)."""
    caplog.set_level(logging.INFO, logger="clspmv")
    path = tmp_path / "calibration-x.json"
    inside, told = threading.Event(), []

    def other() -> None:
        with cache_files.measuring(path, "the calibration of x"):
            inside.set()
            time.sleep(0.3)
            path.write_text("{}")

    first = threading.Thread(target=other)
    first.start()
    inside.wait(10)
    with cache_files.measuring(path, "the calibration of x") as again:
        told.append(again)
    first.join(10)
    assert told == [True]
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("clspmv.cache_files", logging.WARNING, "waiting for the calibration of x, which "
         f"another thread of this process is measuring (lock {path}.lock)")]


def test_blocking_notes_reach_a_program_without_logging(tmp_path) -> None:
    """A program that configured no logging still sees why it waits (Python's last-resort
    handler prints WARNINGs on stderr), and no INFO note."""
    code = ("import logging, pathlib\n"
            "from clspmv import cache_files\n"
            "logging.getLogger('clspmv.cache_files').info('an INFO note')\n"
            "cache_files._say_waiting('the calibration of x', 'another process', "
            "pathlib.Path('/c/x.lock'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "", "waiting for the calibration of x, which another process is measuring (lock "
        "/c/x.lock)\n")


def test_no_stored_claim_where_the_folder_cannot_hold_files(tmp_path) -> None:
    """Notes say where a measurement goes: the file, or memory once the folder was found unable
    to hold files (after its warning), never a file that will not be written."""
    path = tmp_path / "calibration-x.json"
    assert cache_files.where_stored(path) == f"stored in {path}"
    blocked = tmp_path / "a-file" / "calibration-x.json"
    (tmp_path / "a-file").write_text("")
    with pytest.warns(ClspmvWarning, match="cannot hold files") as warned:
        said = cache_files.where_stored(blocked)
    assert said == "kept in memory for this process only: the cache folder cannot hold files"
    assert warned[0].filename == __file__  # the user's line, not clspmv's


def test_a_second_read_when_the_file_changed_meanwhile(tmp_path, monkeypatch) -> None:
    """Stored by another process between this one's read and its lock, without a wait: read
    again too."""
    path = tmp_path / "calibration-x.json"
    real = cache_files._file_lock

    def stored_first(where, what):
        path.write_text("{}")
        return real(where, what)

    monkeypatch.setattr(cache_files, "_file_lock", stored_first)
    with cache_files.measuring(path, "the calibration of x") as again:
        assert again is True
