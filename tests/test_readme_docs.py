"""The README's and the documentation's links lead somewhere, and the documentation lists every
environment variable the package reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def missing_targets(page: Path) -> list[str]:
    """The targets of a page's Markdown links (relative to the page) and of its {src}`path`
    roles (relative to the checkout) that name no file or folder."""
    text = page.read_text(encoding="utf-8")
    links = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
             if "://" not in t and not t.startswith("#")]
    roles = [m.split("<")[-1].rstrip(">") for m in re.findall(r"\{src\}`([^`]+)`", text)]
    return ([t for t in links if not (page.parent / t).exists()]
            + [t for t in roles if not (ROOT / t).exists()])


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "reports" / "README.md",
                                  ROOT / "reports" / "experiments" / "README.md", *PAGES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_to_files(page: Path) -> None:
    assert missing_targets(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[a](here.md) [b](gone.md#x) {src}`reports/README.md` {src}`reports/gone`")
    (tmp_path / "here.md").write_text("")
    assert missing_targets(page) == ["gone.md", "reports/gone"]


def test_every_environment_variable_is_documented() -> None:
    names = set()
    for path in (ROOT / "clspmv").rglob("*.py"):
        names |= set(re.findall(r"CLSPMV_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    page = (DOCS / "environment.md").read_text(encoding="utf-8")
    assert names and not {n for n in names if f"`{n}`" not in page}, names


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150
