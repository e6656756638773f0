"""The README's test command is the one CI runs, character for character."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def code_lines(markdown: str) -> list[str]:
    """The lines inside the fenced code blocks of ``markdown``, stripped."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def pytest_lines(lines: list[str]) -> list[str]:
    """The lines that run pytest (``... -m pytest ...`` or ``pytest ...``)."""
    return [line for line in lines if re.search(r"-m pytest\b|^pytest\b", line)]


def test_readme_test_command_is_the_ci_command() -> None:
    readme = pytest_lines(code_lines((ROOT / "README.md").read_text()))
    ci = pytest_lines([line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()])
    assert readme, "the README shows no pytest command"
    assert ci == [readme[0]], (
        f"the README's first test command {readme[0]!r} must be the one pytest line of .ci/run, "
        f"which has {ci}"
    )


def test_readme_names_every_format() -> None:
    import clspmv

    table = (ROOT / "README.md").read_text()
    missing = [f for f in clspmv.FORMATS if f"| `{f}` |" not in table]
    assert not missing, f"the README's format table lacks {missing}"


def test_gpu_commands_are_the_same_in_both_readmes() -> None:
    """The GPU node commands of the transpose / matmat / solver numbers: README.md repeats
    those of reports/README.md, character for character."""
    def gpu_lines(path: Path) -> list[str]:
        return [line for line in code_lines(path.read_text())
                if line.startswith("source .whl/gpu-env.sh")
                and any(flag in line for flag in ("--transpose", "--matmat", "--solver"))]

    readme, reports = gpu_lines(ROOT / "README.md"), gpu_lines(ROOT / "reports" / "README.md")
    assert len(reports) == 3 and readme == reports
    assert all(len(line) < 2000 and "--max-seconds" in line and "$OUT/" in line
               for line in readme)
