"""The README's two setup commands: the test one is what CI runs, character for character."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def code_lines(markdown: str) -> list[str]:
    """The lines inside the fenced code blocks of ``markdown``, stripped, comments removed."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    lines = (line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines())
    return [line for line in lines if line]


def test_readme_starts_with_the_two_commands() -> None:
    first = code_lines((ROOT / "README.md").read_text())[:2]
    assert first == ["bash dev.sh bench", "bash dev.sh test"], first


def test_ci_runs_the_readme_test_command() -> None:
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    commands = [line for line in ci if "dev.sh" in line or "pytest" in line]
    assert commands == ["bash dev.sh test"], commands


def test_dev_sh_runs_the_tests_and_the_bench() -> None:
    script = (ROOT / "dev.sh").read_text()
    assert 'tox "$@"' in script or 'python -m pytest -q "$@"' in script
    assert 'clspmv bench "$@"' in script
