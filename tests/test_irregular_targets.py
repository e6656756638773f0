"""tools/irregular_targets.py names the runs whose cuSPARSE times include cupy's host time."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from clspmv.bench import methodology
from clspmv.report.compat import LEGACY_KERNEL

TOOL = Path(__file__).resolve().parent.parent / "tools" / "irregular_targets.py"


@pytest.mark.parametrize("method, flagged", [
    (None, True),  # a run that recorded no methodology: the legacy bullets
    ([LEGACY_KERNEL], True),
    (list(methodology.METHOD), False),
])
def test_old_cusparse_timing_is_named(method: list[str] | None, flagged: bool, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    run = {} if method is None else {"method": method}
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"meta": {"runs": [run]}, "records": []}))
    monkeypatch.setattr(sys, "argv", ["irregular_targets.py", str(path)])
    runpy.run_path(str(TOOL), run_name="__main__")
    out = capsys.readouterr().out
    assert ("1 of 1 runs timed cuSPARSE with cupy's host time" in out) == flagged
