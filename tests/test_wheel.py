"""The wheel of this checkout, installed in a fresh virtual environment, runs a product there.

Proves that the kernels ship inside the wheel (``clspmv/kernels_cl``) and that the console script
works without the checkout. Needs a package index for the build backend and the dependencies;
skipped where none can be reached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted(p.name for p in (ROOT / "kernels_cl").iterdir() if p.is_file())

NETWORK_ERRORS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "Read timed out",
    "No matching distribution found",
    "Could not find a version that satisfies",
)

PROGRAM = """
import sysconfig
import numpy, scipy.sparse as sp
import clspmv, clspmv.build
M = clspmv.DeviceMatrix.from_scipy(sp.eye(50, format="csr") * 2, format="sell")
y = M @ numpy.ones(50)
assert y.shape == (50,) and numpy.all(y == 2), y
print(clspmv.__file__)
print(clspmv.build.kernel_dir())
print(sysconfig.get_paths()["purelib"])
"""


def run(args: list[str | Path], cwd: Path, what: str) -> str:
    """Run ``args``; skip the test when it failed for want of a package index, else fail."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        if any(sign in output for sign in NETWORK_ERRORS):
            pytest.skip(f"{what} needs a package index, which cannot be reached:\n{output[-2000:]}")
        pytest.fail(f"{what} failed with exit code {done.returncode}:\n{output[-6000:]}")
    return done.stdout


@pytest.mark.wheel
@pytest.mark.slow
def test_wheel_installs_and_runs(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", dist, ROOT],
        tmp_path, "building the wheel")
    wheels = list(dist.glob("clspmv-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as whl:
        names = set(whl.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "clspmv = clspmv.entry:main" in whl.read(entry_points).decode()
    assert {f"clspmv/kernels_cl/{k}" for k in KERNELS} <= names
    assert "clspmv/cli.py" in names and "clspmv/__main__.py" in names
    assert "clspmv/model/prior.json" in names  # the quick calibration's data

    venv = tmp_path / "venv"  # without --system-site-packages: only what the wheel pulls in
    run([sys.executable, "-m", "venv", venv], tmp_path, "creating the virtual environment")
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "--disable-pip-version-check", wheels[0]], tmp_path,
        "installing the wheel")

    elsewhere = tmp_path / "elsewhere"  # outside the checkout: nothing to import by accident
    elsewhere.mkdir()
    package, kernel_dir, purelib = run([python, "-I", "-c", PROGRAM], elsewhere,
                                       "the product in the fresh environment").split()[-3:]
    site = Path(purelib).resolve()
    assert site.is_relative_to(venv.resolve()) and site.name == "site-packages"
    assert Path(package).resolve() == site / "clspmv" / "__init__.py"
    assert Path(kernel_dir).resolve() == site / "clspmv" / "kernels_cl"
    assert sorted(p.name for p in Path(kernel_dir).iterdir()) == KERNELS

    results = elsewhere / "results"
    out = run([venv / "bin" / "clspmv", "bench", "gen:poisson2d:k=12", "--formats", "sell,dia",
               "--dtype", "float32", "--baselines", "scipy", "--repeat", "3", "--quiet",
               "--out", results], elsewhere, "the installed clspmv command")
    assert "3 records (3 ok)" in out
    records = json.loads((results / "results.json").read_text())["records"]
    assert [(r["format"], r["nnz"], r["status"]) for r in records] == [
        ("scipy", 672, "ok"), ("sell", 672, "ok"), ("dia", 672, "ok")]  # 5 k^2 - 4 k, k = 12
    assert (results / "report.md").is_file()
