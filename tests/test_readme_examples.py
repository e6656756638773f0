"""Every code block of the README and of the documentation pages (docs/*.md) runs, as a
reader would paste it.

* Python blocks run in a fresh interpreter each (so each must import what it uses), on each
  test device (``CLSPMV_DEVICE``); the MPI block runs under ``mpiexec -n 2``.
* Shell blocks: ``clspmv ...`` commands (benchmarks of minutes, GPU runs) are parsed by the
  command's own argument parser, which rejects an unknown option or value; ``bash dev.sh test``
  is what CI runs, ``bash dev.sh bench`` its benchmark twin (checked in ``test_readme.py``); the
  GPU test command runs on the GPU node.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from clspmv.cli import build_parser

from mpi_launch import mpiexec

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [block for page in PAGES
          for block in re.findall(r"^```(\w*)\n(.*?)^```", page.read_text(encoding="utf-8"),
                                  flags=re.MULTILINE | re.DOTALL)]
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
SHELL = [line.split("#", 1)[0].strip() for lang, code in BLOCKS if lang == "bash"
         for line in code.splitlines() if line.split("#", 1)[0].strip()]
NOT_PARSED = ("bash dev.sh ", "CLSPMV_TEST_DEVICES=gpu python -m pytest")


def run(args: list[str], tmp_path: Path, device) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLSPMV_DEVICE": f"{device.index[0]}:{device.index[1]}",
           "POCL_MAX_PTHREAD_COUNT": "1"}
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_readme_has_examples() -> None:
    assert len(PYTHON) >= 4 and len(SHELL) >= 4


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_block_runs(index: int, tmp_path: Path, device) -> None:
    code = PYTHON[index]
    script = tmp_path / f"block{index}.py"
    script.write_text(code)
    if "from mpi4py import MPI" in code:
        args = [mpiexec(), "-n", "2", sys.executable, str(script)]
    else:
        args = [sys.executable, str(script)]
    done = run(args, tmp_path, device)
    assert done.returncode == 0, f"README block {index}:\n{code}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("line", [s for s in SHELL if not s.startswith(NOT_PARSED)])
def test_shell_command_parses(line: str) -> None:
    command = line.split("&&", 1)[-1].split(";", 1)[0].strip()
    words = shlex.split(command.replace("<date>", "DATE"))
    while words and words[0] in ("python", "python3", "-m"):
        words.pop(0)
    assert words[0] == "clspmv", line
    build_parser().parse_args(words[1:])  # SystemExit(2) on an unknown option or value


def test_every_shell_line_is_covered() -> None:
    for line in SHELL:
        assert line.startswith(NOT_PARSED) or "clspmv" in line, line
