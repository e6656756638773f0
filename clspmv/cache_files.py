"""Files clspmv keeps per device in the user cache directory: where they live, their key, and
how they are read, written and measured when several threads and processes share them.

A file is ``<cache>/<kind>-<device>-<driver><host>-<clspmv version>.json``: a new driver or
clspmv version measures again; for a CPU device ``<host>`` is the host's processor
(:func:`host_cpu`: PoCL names a device by its instruction set and vendor, so a VM moved from one
processor generation to another kept the name while the fastest formats changed). ``<cache>``
is ``platformdirs.user_cache_dir("clspmv")`` or the directory in ``CLSPMV_CACHE_DIR``
(:func:`cache_dir`; the deprecated ``CLSPMV_CACHE`` is read with a warning). The
calibration (:mod:`clspmv.model.store`) and the ELL order (:mod:`clspmv.ell_order`) live there.

What the files promise, whatever else runs:

- one measurement of a file's contents at a time, across the threads of a process (a lock per
  file) and across processes (``filelock`` on ``<file>.lock``): :func:`measuring`; the waiting
  side says so (a note logged at WARNING, :func:`_say_waiting`), naming the lock, and then reads
  what the other measured; a side that did not wait does not read again;
- a reader sees a whole file or none: :func:`write_json` writes a temporary file of a unique
  name made exclusively in the same folder, then renames it over the file, which replaces a
  symbolic link there rather than writing through it; :func:`read_checked` follows none;
- a file that is not what clspmv writes (not JSON, truncated, ``NaN``, ``1e400``, a string
  where a number belongs, nested too deep, larger than :data:`clspmv.cache_read.MAX_FILE_BYTES`,
  a directory, a link, unreadable: :mod:`clspmv.cache_read`) is reported by one warning per
  version of the file and taken as missing;
- a folder where no file can be made (read-only, not a directory, not creatable) gives one
  warning, and the callers keep what they measure in memory for the process.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import platform
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import filelock

from .cache_read import parse_json, read_file
from .cache_schema import Check
from .errors import ClspmvWarning
from .version import __version__

if TYPE_CHECKING:
    from .device import Device

T = TypeVar("T")
logger = logging.getLogger(__name__)
LOCK_WAIT_S = 900.0
"""Longest wait for another thread or process measuring the same file (five times the longest
calibration, 3 minutes on a 2-core CPU); after it this one measures too, with a warning."""

_FOLDER_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR,
                  errno.EEXIST, errno.ENOSPC, errno.EDQUOT}
"""Errors of making a file that say the folder cannot hold any."""

_state = threading.Lock()
_thread_locks: dict[Path, threading.Lock] = {}
_unusable_folders: set[Path] = set()
_warned: set[tuple[object, ...]] = set()


def _after_fork() -> None:
    """A forked child starts with fresh locks: one that another thread of the parent held at
    the fork would never be released in the child."""
    global _state
    _state = threading.Lock()
    _thread_locks.clear()


os.register_at_fork(after_in_child=_after_fork)


CACHE_VARIABLE = "CLSPMV_CACHE_DIR"
"""The environment variable naming clspmv's cache folder (device files, downloaded matrices)."""
DEPRECATED_CACHE_VARIABLE = "CLSPMV_CACHE"
"""Its former name (once the downloaded matrices' folder): still read, with a warning."""


def cache_dir() -> Path:
    """clspmv's cache folder: ``$CLSPMV_CACHE_DIR``, else the deprecated ``$CLSPMV_CACHE`` (one
    :class:`~clspmv.errors.ClspmvWarning` per process saying which to use; ignored where
    ``CLSPMV_CACHE_DIR`` is set too), else ``platformdirs.user_cache_dir("clspmv")``."""
    current = os.environ.get(CACHE_VARIABLE)
    former = os.environ.get(DEPRECATED_CACHE_VARIABLE)
    if former:
        old, new = DEPRECATED_CACHE_VARIABLE, CACHE_VARIABLE
        said = (f"${old} is deprecated and ignored, since ${new} is set: unset {old}" if current
                else f"${old} is deprecated: set {new}={former} instead (the one cache folder "
                f"of clspmv); {old} is still read for now")
        _warn_once(("deprecated", old), said)
    chosen = current or former
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_cache_dir("clspmv"))


@functools.cache
def host_cpu() -> str:
    """The host's processor: vendor, family and model from ``/proc/cpuinfo`` (e.g.
    ``AuthenticAMD-26-2``), else what :func:`platform.processor` or :func:`platform.machine`
    says. Part of a CPU device's key because PoCL names two processor generations alike while
    their fastest layouts differ (``reports/2026-11-26-cpu-2core-zen5-suites/summary.txt``,
    item 3)."""
    try:
        pairs = (line.split(":", 1) for line in Path("/proc/cpuinfo").read_text()
                 .splitlines()[:30] if ":" in line)
        fields = {k.strip(): v.strip() for k, v in pairs}
        found = [fields.get(k, "") for k in ("vendor_id", "cpu family", "model")]
        if all(found):
            return "-".join(found)
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measures_on_first_use(device: Device) -> bool:
    """Whether ``device`` without a stored file may be measured on first use: not with
    ``CLSPMV_CALIBRATE=0`` and never on a simulator (:attr:`clspmv.Device.is_simulator`,
    :mod:`clspmv.probing`: its times say nothing about a device, and a calibration there takes
    hours); then a stored file is still read, and what is missing takes its documented
    default."""
    return os.environ.get("CLSPMV_CALIBRATE", "1") != "0" and not device.is_simulator


def device_file(device: Device, kind: str) -> Path:
    """The cache file of ``kind`` (``"calibration"``, ``"ell-order"``) for ``device``."""
    host = f"-{host_cpu()}" if device.type == "cpu" else ""
    key = f"{device.name}-{device.driver_version}{host}-{__version__}"
    return cache_dir() / f"{kind}-{re.sub(r'[^A-Za-z0-9._-]+', '_', key)}.json"


def forget() -> None:
    """Forget the warnings given and the folders found unusable in this process (they are
    tried, and warned about, again)."""
    with _state:
        _unusable_folders.clear()
        _warned.clear()


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
"""The folder of clspmv's modules, which :func:`user_stacklevel` steps over."""


def user_stacklevel() -> int:
    """The ``stacklevel`` of a :func:`warnings.warn` called by this function's caller that names
    the first line outside clspmv: the user's call, however deep in clspmv the warning is made
    (``skip_file_prefixes`` does this from Python 3.12)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _warn_once(key: tuple[object, ...], message: str) -> None:
    """One :class:`~clspmv.errors.ClspmvWarning` per ``key`` and process, naming the user's
    line (:func:`user_stacklevel`)."""
    with _state:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, ClspmvWarning, stacklevel=user_stacklevel())


def _folder_unusable(folder: Path, err: OSError) -> None:
    """Remember that ``folder`` cannot hold files and say so once."""
    with _state:
        _unusable_folders.add(folder)
    _warn_once(("folder", folder), f"clspmv cache folder {folder} cannot hold files "
               f"({err.strerror or err}); what clspmv measures is kept in memory for this "
               "process only (CLSPMV_CACHE_DIR can name a writable folder)")


def _usable(folder: Path) -> bool:
    """Whether ``folder`` may hold files: made where missing; False (warned once) where it
    cannot be made or a file could not be made in it before."""
    with _state:
        if folder in _unusable_folders:
            return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _folder_unusable(folder, err)
        return False
    return True


def where_stored(path: Path) -> str:
    """Where what is measured for ``path`` goes, as a note says it: ``stored in <path>``, or
    kept in memory where its folder cannot hold files (found so, and warned, before:
    :func:`_usable`), so that no note claims a file that will not be written."""
    if _usable(path.parent):
        return f"stored in {path}"
    return "kept in memory for this process only: the cache folder cannot hold files"

def read_checked(path: Path, what: str, check: Callable[[object], T],
                 instead: str) -> T | None:
    """What ``check`` makes of the JSON in ``path`` (:func:`parse_json`); None where there is no
    file, and None with one warning per version of the file where it is unusable:
    unreadable, no regular file, no strict JSON, or ``check`` raises ValueError, TypeError or
    KeyError (the reason). The warning names ``what`` (``"calibration file"``), the file, the
    reason and ``instead`` (what happens now)."""
    version: tuple[int, ...] = ()
    try:
        found = read_file(path)
        if found is None:
            return None
        raw, version = found
        return check(parse_json(raw))
    except (OSError, ValueError, TypeError, KeyError) as err:
        reason = (f"it cannot be read ({err.strerror or err})" if isinstance(err, OSError)
                  else f"no field {err}" if isinstance(err, KeyError) else str(err))
        _warn_once(("read", path, version, reason),
                   f"{what} {path} is unusable ({reason}); {instead}")
        return None


def write_json(path: Path, data: object, check: Check) -> bool:
    """Store ``data`` as ``path``: into a temporary file of a unique name made exclusively in the
    same folder (:func:`tempfile.mkstemp`), synced, then renamed over ``path`` (a reader sees
    the old file or the new one, never a part; a symbolic link at ``path`` is replaced, not
    written through). False where it is not stored, with one warning, and the caller keeps
    ``data`` in memory for the process: where ``check`` (the shape the file is read back with)
    rejects it, where the folder cannot hold files (one warning per folder), or where the file
    cannot be written (a directory in the way, a full disk)."""
    try:
        check(data, "")
        text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    except ValueError as err:
        _warn_once(("invalid", path), f"what clspmv measured for {path} is invalid ({err}); "
                   "it is kept in memory for this process, not stored")
        return False
    folder = path.parent
    if not _usable(folder):
        return False
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        _folder_unusable(folder, err)
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:  # also Ctrl-C: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not isinstance(err, OSError):
            raise
        _warn_once(("write", path), f"cannot store {path} ({err.strerror or err}); what "
                   "clspmv measured is kept in memory for this process only")
        return False
    return True


def _lock_path(path: Path) -> Path:
    """The lock file of ``path``: ``<path>.lock``."""
    return path.with_name(path.name + ".lock")


def _say_waiting(what: str, who: str, lock: Path) -> None:
    """The one note of a waiting thread or process, logged at WARNING: it may wait for minutes,
    and Python's last-resort handler prints a WARNING on stderr where the program configured no
    logging, so a library user sees why it is blocked too (the ``clspmv`` command shows it
    through its own handler)."""
    logger.warning("waiting for %s, which %s is measuring (lock %s)", what, who, lock)


def _file_lock(path: Path, what: str) -> tuple[filelock.FileLock | None, bool]:
    """``path``'s lock file ``<path>.lock`` held by this process (waiting for another that holds
    it, at most :data:`LOCK_WAIT_S`), or None where it cannot be taken (warned); and whether
    another process held it."""
    lock_path = _lock_path(path)
    if not _usable(path.parent):
        return None, False
    lock = filelock.FileLock(str(lock_path))
    try:
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            _say_waiting(what, "another process", lock_path)
            lock.acquire(timeout=LOCK_WAIT_S)
            return lock, True
    except filelock.Timeout:
        _warn_once(("wait", lock_path), f"waited {LOCK_WAIT_S:.0f} s for {lock_path}; "
                   f"measuring {what} here too")
        return None, True
    except OSError as err:
        if err.errno in _FOLDER_ERRNOS:
            _folder_unusable(path.parent, err)
        else:  # a link or another file planted at the lock's name: never followed
            _warn_once(("lock", lock_path), f"cannot take the lock {lock_path} "
                       f"({err.strerror or err}); measuring {what} without it, so another "
                       "process may measure it at the same time")
        return None, False
    return lock, False


def _version(path: Path) -> tuple[int, ...] | None:
    """The version of the file at ``path`` (inode, size, modification time), None for none."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@contextlib.contextmanager
def measuring(path: Path, what: str) -> Iterator[bool]:
    """Hold the right to measure what ``path`` stores (``what``, e.g. ``"the calibration of
    <device>"``): one thread of this process at a time (a lock per file: filelock's locks are
    per thread, and one thread taking a second on the same file waits on itself) and one
    process at a time (:func:`_file_lock`). A thread or process that has to wait says so (a
    note logged at WARNING: :func:`_say_waiting`), naming ``what`` and the lock.

    Yields whether ``path`` may have been stored since the caller last read it: True where this
    one waited for another thread or process, or the file changed while the locks were taken;
    only then need the caller read it again before measuring. (A measurement stored between
    the caller's read and this call is not seen: the file is measured twice, never wrongly.)
    Not reentrant."""
    before = _version(path)
    with _state:
        inner = _thread_locks.setdefault(path, threading.Lock())
    held = inner.acquire(blocking=False)
    waited = not held
    if waited:
        _say_waiting(what, "another thread of this process", _lock_path(path))
        held = inner.acquire(timeout=LOCK_WAIT_S)
        if not held:
            _warn_once(("wait", path), f"waited {LOCK_WAIT_S:.0f} s for another thread; "
                       f"measuring {what} here too")
    outer, outer_waited = _file_lock(path, what)
    try:
        yield waited or outer_waited or _version(path) != before
    finally:
        if outer is not None:
            outer.release()
        if held:
            inner.release()
