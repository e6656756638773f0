"""The per-device cache files shared by threads and processes (:mod:`clspmv.cache_files`, issue
46): one measurement at a time, whole files only, planted links never followed, an unusable
folder kept in memory, damaged files rebuilt with one warning, nothing measured on a simulator.

No test measures a device: the calibration (``store.calibrate``) and the ELL order's probe
(``order_probe.measure_ell_order``) are replaced by counting stand-ins that take a moment, so
that the threads and processes overlap while one of them "measures"."""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from ell_orders import order_from

import clspmv
from clspmv import cache_files, cache_read, ell_order
from clspmv.device import SIMULATOR
from clspmv.ell_order import ROW_MAJOR_WIDTH
from clspmv.errors import ClspmvWarning, DeviceError
from clspmv.formats import SINGLE_FORMATS
from clspmv.model import order_probe
from clspmv.model.calibrate import MEASUREMENT
from clspmv.model.timemodel import Calibration, quick_default

from oracle import assert_matches

store = importlib.import_module("clspmv.model.store")
calibrate_mod = importlib.import_module("clspmv.model.calibrate")
probes = importlib.import_module("clspmv.model.probes")

A = sp.diags([1.0 + k for k in range(5)], range(5), shape=(300, 300), format="csr")
X = np.linspace(-1, 1, 300)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache of this test's own, measuring on first use (by the stand-ins); what the
    process remembers forgotten before and after."""
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    ell_order._memory.clear()
    store.forget()
    yield tmp_path / "cache"
    ell_order._memory.clear()
    store.forget()


def stand_in(device) -> Calibration:
    """What the calibration stand-ins return: the quick default, labelled measured."""
    cal = quick_default(device.name, device.driver_version, clspmv.__version__, device.type,
                        SINGLE_FORMATS, device.cache_bytes)
    cal.kind, cal.measurement = "measured", MEASUREMENT
    return cal


@pytest.fixture
def calibrations(monkeypatch) -> list[str]:
    """Replace the calibration by :func:`stand_in` after 0.3 s; the names of the threads it ran
    in, one per measurement."""
    runs: list[str] = []

    def fake(device, progress=True):
        runs.append(threading.current_thread().name)
        time.sleep(0.3)
        return stand_in(device)

    monkeypatch.setattr(store, "calibrate", fake)
    return runs


@pytest.fixture
def orders(monkeypatch) -> list[str]:
    """Replace the ELL order's probe by one taking 0.3 s that finds row-major from 4 slots."""
    runs: list[str] = []

    def fake(device, precision, rows=0):
        runs.append(threading.current_thread().name)
        time.sleep(0.3)
        return order_from(4)

    monkeypatch.setattr(order_probe, "measure_ell_order", fake)
    return runs


def in_threads(work, n: int = 4) -> list[object]:
    """``work()`` in ``n`` threads started together; their results (a failure re-raised)."""
    results: list[object] = [None] * n
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work()
        except BaseException as err:  # noqa: BLE001 - handed to the test's thread
            results[i] = err

    threads = [threading.Thread(target=run, args=(i,), name=f"worker-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


# -- one measurement at a time -----------------------------------------------------------------
def notes(caplog) -> str:
    """The notes clspmv logged (what the CLI shows on stderr), one per line."""
    return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("clspmv"))


def test_threads_calibrate_once(device, cache, calibrations, caplog) -> None:
    """Four threads' format="auto" on an empty cache: one calibration; the three others say
    they wait (a WARNING of clspmv.cache_files, naming the device and the lock: a library user
    without logging set sees it) and take it; the one measuring says so (a WARNING of
    clspmv.model.store: the full calibration takes minutes)."""
    caplog.set_level(logging.INFO, logger="clspmv")
    found = in_threads(lambda: clspmv.DeviceMatrix.from_scipy(A, device=device))
    assert len(calibrations) == 1
    assert {M.format for M in found} == {found[0].format}
    for M in found:
        assert_matches(M @ X, A, X, np.float64)
    lock = store.calibration_path(device).name + ".lock"
    waiting = f"waiting for the calibration of {device.name}, which another thread of this " \
              f"process is measuring (lock {store.calibration_path(device)}.lock)"
    said = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert said.count(("clspmv.cache_files", logging.WARNING, waiting)) == 3, said
    measuring = [(name, level) for name, level, text in said if "measuring it once" in text]
    assert measuring == [("clspmv.model.store", logging.WARNING)], said
    assert notes(caplog).count(lock) == 3
    assert store.load(device) is not None


def test_threads_measure_the_ell_order_once(device, cache, orders, caplog) -> None:
    """Four threads' format="ellr" on a device without an order: one measurement (where
    work-items do not run in lockstep), every matrix in the order measured."""
    caplog.set_level(logging.INFO, logger="clspmv")
    found = in_threads(lambda: clspmv.DeviceMatrix.from_scipy(A, "ellr", device=device))
    lockstep = found[0]._fmt.layout.lockstep
    assert len(orders) == (0 if lockstep else 1)
    assert {M.params["row_major"] for M in found} == {0 if lockstep else 1}  # 5 slots >= 4
    assert_matches(found[0] @ X, A, X, np.float64)
    if not lockstep:
        assert notes(caplog).count(f"waiting for the ELL order of {device.name}") == 3
        assert ell_order.stored(device) and ell_order.row_major_widths(device) == (4, 4)


def test_a_waiter_bounded_by_lock_wait_measures_itself(device, cache, calibrations,
                                                      monkeypatch, caplog) -> None:
    """A lock held past LOCK_WAIT_S (here by a process that hangs): this one says it waits,
    then measures anyway, with one warning naming the lock."""
    caplog.set_level(logging.INFO, logger="clspmv")
    monkeypatch.setattr(cache_files, "LOCK_WAIT_S", 0.2)
    path = store.calibration_path(device)
    path.parent.mkdir(parents=True)
    hold = ("import filelock, sys, time; held = filelock.FileLock(sys.argv[1]); "
            "held.acquire(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", hold, f"{path}.lock"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.warns(ClspmvWarning) as got:
            store.calibration(device, progress=False)
    finally:
        holder.kill()
        holder.communicate()
    assert [str(w.message) for w in got] == [
        f"waited 0 s for {path}.lock; measuring the calibration of {device.name} here too"]
    assert len(calibrations) == 1
    assert (f"waiting for the calibration of {device.name}, which another process is measuring "
            f"(lock {path}.lock)") in notes(caplog)


CHILD = textwrap.dedent("""
    import os, sys, time, types
    from pathlib import Path
    import clspmv
    from clspmv.model import store
    from clspmv.model.calibrate import MEASUREMENT
    from clspmv.model.timemodel import quick_default

    here, saves = Path(sys.argv[1]), int(sys.argv[2])
    # no logging configured: the waiting note still reaches stderr, a WARNING that Python's
    # last-resort handler prints
    device = types.SimpleNamespace(name="Race Device", driver_version="1.0", type="gpu",
                                   is_simulator=False, cache_bytes=1 << 20)

    def cheap(device, progress=True):
        with open(here / "measured", "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(0.5)
        cal = quick_default(device.name, device.driver_version, clspmv.__version__,
                            device.type, store.SINGLE_FORMATS, device.cache_bytes)
        cal.kind, cal.measurement = "measured", MEASUREMENT
        return cal

    store.calibrate = cheap
    (here / f"ready-{os.getpid()}").touch()
    while not (here / "go").exists():
        time.sleep(0.01)
    cal = store.calibration(device, progress=False)
    print(cal.kind, cal.launch_s)
    for i in range(saves):
        cal.seconds = float(i)
        assert store.save(cal, device) is not None
""")
"""A process of the race tests: calibrates a made-up device (through a stand-in taking 0.5 s
that counts itself in ``<here>/measured``) once all are let go, then saves the calibration
``<saves>`` times."""


def test_processes_calibrate_once_and_save_whole_files(device, tmp_path, monkeypatch) -> None:
    """Three processes needing the calibration of one device at once: one measures, the others
    say they wait for the lock file and read what it stored. Then each saves it 150 times while
    this one reads it: every save succeeds, every read finds a whole valid file, and no
    temporary file is left."""
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    store.forget()
    same = replace(device, name="Race Device", driver_version="1.0", type="gpu")  # the child's
    path = store.calibration_path(same)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), "150"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    reads: list[object] = []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        (tmp_path / "go").touch()
        while any(p.poll() is None for p in procs):
            if path.exists():
                raw = path.read_bytes()
                reads.append(store.load(same) if raw.endswith(b"}\n") else raw)
            time.sleep(0.002)
    done = [(p.returncode, *p.communicate()) for p in procs]
    assert [code for code, _, _ in done] == [0, 0, 0], [err for _, _, err in done]
    assert len((tmp_path / "measured").read_text().split()) == 1
    assert len({out for _, out, _ in done}) == 1 and done[0][1].startswith("measured ")
    waited = [err for _, _, err in done if "waiting for the calibration of Race Device, which "
              f"another process is measuring (lock {path}.lock)" in err]
    assert len(waited) == 2
    assert len(reads) > 10 and all(isinstance(r, Calibration) for r in reads), reads[:3]
    assert not said and sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, f"{path.name}.lock"])
    store.forget()


# -- links, folders, full disks -------------------------------------------------------------------
def test_planted_links_are_never_followed(device, cache, calibrations, orders) -> None:
    """Links planted at the calibration's name, its lock's, the old fixed temporary name and the
    ELL order's: their targets stay as they were; the files are stored in place of the links."""
    cache.mkdir()
    cal_path, order_path = store.calibration_path(device), ell_order.order_path(device)
    victims = {}
    for at in (cal_path, Path(f"{cal_path}.lock"), cal_path.with_suffix(".tmp"), order_path):
        victims[at] = cache.parent / f"victim-{at.name}"
        victims[at].write_text("precious\n")
        at.symlink_to(victims[at])
    with pytest.warns(ClspmvWarning) as got:
        store.calibration(device, progress=False)
        assert ell_order.row_major_widths(device) == (ROW_MAJOR_WIDTH,) * 2
        ell_order.save(device, order_from(4))
    assert [str(w.message) for w in got] == [
        f"calibration file {cal_path} is unusable (it is a symbolic link, which clspmv does not "
        "follow); it will be rebuilt",
        f"cannot take the lock {cal_path}.lock (Too many levels of symbolic links); measuring "
        f"the calibration of {device.name} without it, so another process may measure it at "
        "the same time",
        f"ELL order file {order_path} is unusable (it is a symbolic link, which clspmv does "
        f"not follow); rows of {ROW_MAJOR_WIDTH} slots or more are row-major until it is "
        "measured again (by the next calibration, or by a named ELL format where "
        "CLSPMV_CALIBRATE allows)"]
    assert len(calibrations) == 1 and not orders
    assert all(v.read_text() == "precious\n" for v in victims.values())
    assert not cal_path.is_symlink() and not order_path.is_symlink()
    store.forget()
    ell_order._memory.clear()
    assert store.load(device).kind == "measured"
    assert ell_order.row_major_widths(device) == (4, 4)


def unwritable_folder(kind: str, tmp_path: Path) -> Path:
    """A cache folder that cannot hold files: ``file`` (a file stands there), ``under-file``
    (missing, below a file: cannot be made), ``read-only`` (a folder without write permission,
    or for root, who writes anyway, /sys/kernel)."""
    if kind == "file":
        (tmp_path / "cache").write_text("")
        return tmp_path / "cache"
    if kind == "under-file":
        (tmp_path / "file").write_text("")
        return tmp_path / "file" / "cache"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for place in (folder, Path("/sys/kernel")):
        try:
            fd, name = tempfile.mkstemp(dir=place)
        except OSError:
            return place
        os.close(fd)
        os.unlink(name)
    pytest.skip("no folder this user cannot write to")


@pytest.mark.parametrize("kind", ["file", "under-file", "read-only"])
def test_an_unusable_folder_keeps_results_in_memory(device, cache, calibrations, orders,
                                                    monkeypatch, tmp_path, kind) -> None:
    """A cache folder that cannot hold files: one warning; format="ellr" and format="auto" work,
    each measurement made once and kept for the process."""
    folder = unwritable_folder(kind, tmp_path)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(folder))
    with pytest.warns(ClspmvWarning) as got:
        for _ in range(2):
            M = clspmv.DeviceMatrix.from_scipy(A, "ellr", device=device)
            assert_matches(M @ X, A, X, np.float64)
            assert_matches(clspmv.DeviceMatrix.from_scipy(A, device=device) @ X, A, X,
                           np.float64)
    reason = {"file": "File exists", "under-file": "Not a directory",
              "read-only": "Permission denied"}[kind]
    assert [str(w.message) for w in got] == [
        f"clspmv cache folder {folder} cannot hold files ({reason}); what clspmv measures is "
        "kept in memory for this process only (CLSPMV_CACHE_DIR can name a writable folder)"]
    assert len(calibrations) == 1 and len(orders) == (0 if M._fmt.layout.lockstep else 1)
    if kind == "read-only":
        assert not list(folder.glob("*clspmv*")) and not list(folder.glob("*.json*"))


def test_a_full_disk_keeps_the_calibration_in_memory(device, cache, calibrations,
                                                     monkeypatch) -> None:
    """No space for the file: one warning naming it, no temporary file left, the calibration
    measured once and kept for the process."""
    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_files.os, "fsync", full)
    path = store.calibration_path(device)
    with pytest.warns(ClspmvWarning) as got:
        store.calibration(device, progress=False)
        store.calibration(device, progress=False)
    assert [str(w.message) for w in got] == [
        f"cannot store {path} (No space left on device); what clspmv measured is kept in "
        "memory for this process only"]
    assert len(calibrations) == 1 and not path.exists()
    assert not [p for p in cache.iterdir() if p.name != path.name + ".lock"]  # no temporary


# -- damaged files --------------------------------------------------------------------------------
def damaged(kind: str, text: str) -> str | bytes:
    """The calibration file ``text`` damaged as ``kind``."""
    data = json.loads(text)
    if kind == "deep":
        return "[" * 100_000 + "]" * 100_000
    if kind == "nested-too-deep":
        data["kernel"]["coo"] = [[[[1.0]]]]
    elif kind == "1e400":
        return text.replace(f'"launch_s": {json.dumps(data["launch_s"])}', '"launch_s": 1e400')
    elif kind == "nan":
        data["kernel"]["coo"][0] = float("nan")
    elif kind == "infinity":
        data["conversion"]["coo"][1] = float("inf")
    elif kind == "string":
        data["stream_bw"] = "fast"
    elif kind == "bool":
        data["cache_bytes"] = True
    elif kind == "negative":
        data["gather_bw"] = -1.0
    elif kind == "huge-int":
        data["cache_bytes"] = 10**400
    elif kind == "list":
        return json.dumps([data])
    elif kind == "unknown-field":
        data["speed"] = 1
    elif kind == "nested-type":
        data["kind"] = "measured"
        data["measurements"] = {"device": "d"}
    elif kind == "curve":
        data["x_miss"] = [[2.0, 0.5], [1.0, 0.6]]
    elif kind == "truncated":
        return text[: len(text) // 2]
    elif kind == "empty":
        return ""
    elif kind == "binary":
        return b"\xff\xfe\x00"
    elif kind == "large":
        return text + " " * cache_read.MAX_FILE_BYTES
    return json.dumps(data, allow_nan=True)


DAMAGES = {
    "deep": "it is nested too deep",
    "nested-too-deep": "kernel.coo[0]: [[[1.0]]] is not a number",
    "1e400": "the number 1e400 is out of range",
    "nan": "NaN is not a number",
    "infinity": "Infinity is not a number",
    "string": "stream_bw: 'fast' is not a number",
    "bool": "cache_bytes: True is not a number",
    "negative": "gather_bw: -1.0 is out of range (above 0, at most 1e+15)",
    "huge-int": "cache_bytes: 1000000",
    "list": "the file: list where an object belongs",
    "unknown-field": "unknown field 'speed'",
    "nested-type": "measurements: no field 'driver'",
    "curve": "x_miss: sizes do not rise",
    "truncated": "not JSON (",
    "empty": "not JSON (Expecting value at line 1 column 1)",
    "binary": "not UTF-8 text",
    "large": "more than the 4194304 bytes a cache file may have",
}


@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_a_damaged_calibration_is_rebuilt_with_one_warning(device, cache, calibrations,
                                                          kind) -> None:
    store.save(stand_in(device), device)
    path = store.calibration_path(device)
    text = damaged(kind, path.read_text())
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    store.forget()
    with pytest.warns(ClspmvWarning) as got:
        store.calibration(device, progress=False)
        store.forget()  # read again: the rebuilt file, no warning
        store.calibration(device, progress=False)
    assert len(got) == 1 and len(calibrations) == 1
    message = str(got[0].message)
    assert message.startswith(f"calibration file {path} is unusable (")
    assert DAMAGES[kind] in message and message.endswith("; it will be rebuilt")


def test_a_damaged_file_warns_once_without_measuring(device, cache, calibrations,
                                                     monkeypatch) -> None:
    """CLSPMV_CALIBRATE=0: a damaged file gives the quick default with one warning, however
    often it is read; a new damage warns again."""
    monkeypatch.setenv("CLSPMV_CALIBRATE", "0")
    path = store.calibration_path(device)
    path.parent.mkdir(parents=True)
    path.write_text("{")
    with pytest.warns(ClspmvWarning, match="the quick default stands in") as got:
        for _ in range(5):
            assert store.calibration(device).kind == "quick-default"
    assert len(got) == 1 and not calibrations
    path.write_text("[]")
    with pytest.warns(ClspmvWarning, match="list where an object belongs"):
        store.calibration(device)


@pytest.mark.parametrize("obstacle", ["directory", "unreadable"])
def test_no_regular_readable_file_in_the_way(device, cache, calibrations, monkeypatch,
                                             obstacle) -> None:
    """A directory where the file belongs: said once when read, once when it cannot be
    replaced, the calibration kept in memory; a file that cannot be read (EACCES): rebuilt."""
    path = store.calibration_path(device)
    if obstacle == "directory":
        path.mkdir(parents=True)
        (path / "inside").write_text("kept\n")
        reason, then = "it is a directory", [f"cannot store {path} ("]
    else:
        store.save(stand_in(device), device)
        store.forget()
        opener = os.open

        def denied(name, flags, *args):
            if Path(name) == path and not flags & os.O_CREAT:
                raise PermissionError(13, "Permission denied", str(name))
            return opener(name, flags, *args)

        monkeypatch.setattr(cache_files.os, "open", denied)
        reason, then = "it cannot be read (Permission denied)", []
    with pytest.warns(ClspmvWarning) as got:
        store.calibration(device, progress=False)
        store.calibration(device, progress=False)
    said = [str(w.message) for w in got]
    assert said[0] == f"calibration file {path} is unusable ({reason}); it will be rebuilt"
    assert len(said) == 1 + len(then)
    assert all(s.startswith(t) for s, t in zip(said[1:], then, strict=True))
    assert len(calibrations) == 1
    if obstacle == "directory":
        assert (path / "inside").read_text() == "kept\n"


# -- the simulator --------------------------------------------------------------------------------
def test_nothing_is_measured_on_a_simulator(device, cache, monkeypatch) -> None:
    """On the Oclgrind simulator (here the test device renamed to its platform, and the real one
    where installed) a named ELL format and format="auto" measure nothing and warn nothing: the
    default ELL order and the quick default; an explicit calibration is refused."""
    simulated = [replace(device, platform=SIMULATOR)]
    simulated += [d for d in clspmv.devices() if d.is_simulator]
    with pytest.raises(DeviceError, match=r"is the Oclgrind simulator: clspmv measures nothing "
                       r"on it \(a calibration would run for hours"):
        store.calibration(simulated[0], force=True)

    def never(*args, **kwargs):
        raise AssertionError("measured on a simulator")

    for module, name in ((order_probe, "measure_ell_order"), (order_probe, "kernel_times"),
                         (calibrate_mod, "measure"), (calibrate_mod, "kernel_times"),
                         (store, "calibrate"), (probes, "kernel_times"),
                         (probes, "probe_x_cache")):
        monkeypatch.setattr(module, name, never)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sim in simulated:
            order_probe.ensure_ell_order(sim, "ellr", {})
            assert ell_order.row_major_widths(sim) == (ROW_MAJOR_WIDTH,) * 2
            assert store.calibration(sim).kind == "quick-default"
        M = clspmv.DeviceMatrix.from_scipy(A, "hyb", device=simulated[0])
        assert_matches(M @ X, A, X, np.float64)
        auto = clspmv.DeviceMatrix.from_scipy(A, device=simulated[0])
        assert auto.selection.calibration == "quick-default"
    assert not list(cache.glob("*.json"))
