"""Baselines (scipy, MKL, cuSPARSE through a stand-in cupy) and ``--formats auto``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import bandwidth
from clspmv.bench import baseline_cusparse, baselines
from clspmv.bench import generators as g
from clspmv.cli import main
from clspmv.matrix import canonical_csr

from fake_cupy import FakeCupy, cuda_device_count

HAVE_MKL = importlib.util.find_spec("sparse_dot_mkl") is not None
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason='sparse_dot_mkl absent: pip install '
                                                   '".[mkl]"')


@pytest.fixture
def problem() -> tuple[sp.csr_matrix, np.ndarray]:
    A = canonical_csr(g.random(3000, 7, seed=1), np.float64)
    return A, np.random.default_rng(2).standard_normal(3000)


def test_scipy(problem) -> None:
    A, x = problem
    r = baselines.scipy_product(A, x, warmup=1, repeat=4)
    assert r.status == "ok" and r.threads == 1 and "(scipy, 1 thread)" in r.device
    assert r.timing.repeats == 4 and r.timing.min_ms <= r.timing.median_ms <= r.timing.max_ms
    assert np.array_equal(r.y, A @ x)


# -- MKL ------------------------------------------------------------------------------------------
@needs_mkl
def test_libmkl_rt_of_the_pip_package_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MKL_RT", raising=False)
    path = baselines.find_mkl_rt()
    assert path is not None and Path(path).is_file() and "libmkl_rt" in Path(path).name
    assert Path(path).parent.name == "lib"


@needs_mkl
def test_mkl_loads_without_paths_set(tmp_path: Path) -> None:
    """In a fresh interpreter with neither MKL_RT nor LD_LIBRARY_PATH, the baseline runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("MKL_RT", "LD_LIBRARY_PATH")}
    program = (
        "import numpy as np, scipy.sparse as sp\n"
        "from clspmv.bench import baselines\n"
        "A = sp.random(200, 200, density=0.05, format='csr', random_state=0)\n"
        "A.indices = A.indices.astype(np.int32); A.indptr = A.indptr.astype(np.int32)\n"
        "x = np.ones(200)\n"
        "r = baselines.mkl_product(A, x, threads=1, repeat=3)\n"
        "assert r.status == 'ok', r.reason\n"
        "assert np.allclose(r.y, A @ x)\n"
        "print(r.device)\n")
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "(MKL, 1 thread)" in done.stdout


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mkl_product(problem, dtype) -> None:
    A, x = problem
    A, x = canonical_csr(A, dtype), x.astype(dtype)
    r = baselines.mkl_product(A, x, threads=2, warmup=1, repeat=3)
    assert r.status == "ok" and r.threads == 2 and "(MKL, 2 threads)" in r.device
    assert r.y.dtype == dtype
    np.testing.assert_allclose(r.y, A.astype(np.float64) @ x.astype(np.float64),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_mkl_absent(problem, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sparse_dot_mkl", None)
    r = baselines.mkl_product(*problem)
    assert r.status == "absent" and r.timing is None
    assert r.reason.startswith("sparse_dot_mkl cannot be imported")
    assert 'pip install "clspmv[mkl]"' in r.reason


# -- cuSPARSE through a stand-in for cupy ---------------------------------------------------------
def test_cusparse(problem, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCupy()
    fake.install(monkeypatch)
    A, x = problem
    r = baseline_cusparse.cusparse_product(A, x, warmup=2, repeat=5)
    assert r.status == "ok" and r.device == "Fake GPU (cuSPARSE)" and r.device_type == "gpu"
    assert r.timing.repeats == 5 and r.timing.median_ms == pytest.approx(0.25)
    assert np.array_equal(r.y, A @ x) and fake.freed == 1
    assert fake.copies == [baseline_cusparse.COVER_BYTES] * 7 and r.params == ""


def test_cusparse_times_the_gpu_work_alone(problem, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's part of cupy's call (0.6 ms here) is not timed: the copy each product is
    queued behind doubles until it outlasts it, and the time is the kernels' 0.25 ms."""
    fake = FakeCupy(host_ms=0.6)
    fake.install(monkeypatch)
    r = baseline_cusparse.cusparse_product(*problem, warmup=1, repeat=3)
    assert r.timing.median_ms == pytest.approx(0.25) and r.params == ""
    mib = 1 << 20
    assert fake.copies == [256 * mib, 512 * mib, 1024 * mib] + [1024 * mib] * 3


def test_cusparse_says_when_host_time_is_included(problem,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A host part that outlasts the largest copy is timed, and the record says so."""
    fake = FakeCupy(host_ms=3.0)
    fake.install(monkeypatch)
    r = baseline_cusparse.cusparse_product(*problem, warmup=1, repeat=4)
    assert max(fake.copies) == baseline_cusparse.COVER_LIMIT
    assert r.timing.median_ms == pytest.approx(0.25 + 3.0 - 2.0)
    assert r.params == "host time included in 4 of 4 samples (not covered by a 2048 MiB copy)"


@pytest.mark.parametrize("fake, reason", [
    (FakeCupy(devices=0), "cupy finds no CUDA device"),
    (FakeCupy(devices=-1), "cupy finds no CUDA device: cudaErrorNoDevice"),
    (FakeCupy(oom=True), "out of GPU memory: out of memory allocating 1 GB"),
])
def test_cusparse_absent(problem, monkeypatch: pytest.MonkeyPatch, fake: FakeCupy,
                         reason: str) -> None:
    fake.install(monkeypatch)
    r = baseline_cusparse.cusparse_product(*problem)
    assert r.status == "absent" and r.reason.startswith(reason) and r.timing is None


@pytest.mark.skipif(cuda_device_count() < 1, reason="no cupy with a CUDA device here")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cusparse_on_a_real_gpu(problem, dtype) -> None:
    A, x = problem
    A, x = canonical_csr(A, dtype), x.astype(dtype)
    r = baseline_cusparse.cusparse_product(A, x, warmup=1, repeat=5)
    assert r.status == "ok" and r.device.endswith("(cuSPARSE)") and r.timing.median_ms > 0
    np.testing.assert_allclose(r.y, A.astype(np.float64) @ x.astype(np.float64),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)


def test_cusparse_without_cupy(problem, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    r = baseline_cusparse.cusparse_product(*problem)
    assert r.status == "absent" and "cupy cannot be imported" in r.reason
    assert "pip install cupy-cuda12x" in r.reason


def test_cusparse_in_a_run_gives_gpu_speedups_and_a_crossover(
        device: clspmv.Device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeCupy().install(monkeypatch)
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda d: 4 << 20)
    out = tmp_path / "run"
    argv = ["bench", "gen:poisson2d:k=10", "gen:random:n=5000,k=6", "--formats", "csr-scalar",
            "--dtype", "float32", "--baselines", "scipy,cusparse", "--repeat", "3",
            "--device", f"{device.index[0]}:{device.index[1]}", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())["records"]
    (cusparse,) = [r for r in records if r["format"] == "cusparse" and r["nnz"] == 460]
    assert cusparse["status"] == "ok" and cusparse["kernel_ms"] == pytest.approx(0.25)
    for r in records:
        if r["status"] == "ok":
            assert r["speedups"]["cusparse"] == pytest.approx(0.25 / r["kernel_ms"])
    report = (out / "report.md").read_text()
    crossover = report.split("## CPU vs GPU crossover")[1].split("\n## ")[0]
    assert "| matrix" in crossover
    if device.type != "gpu":  # with a real GPU in the run, its own formats may be the best GPU
        assert "Fake GPU cusparse" in crossover
    if device.type == "cpu":
        assert "Only" not in crossover.split("###")[1]
