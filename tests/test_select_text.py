"""How a :class:`clspmv.model.select.Selection` prints (issue 43): the choice and why, then a
short aligned table of the predictions, instead of the dataclass's fields."""

from __future__ import annotations

import numpy as np

from clspmv.canonical import canonical_csr
from clspmv.model.features import features
from clspmv.model.predict import Prediction
from clspmv.model.select import REASON_WIDTH, Selection
from clspmv.model.strips import StripsPlan

REFUSAL = ("format 'ell' would need 1200080000 bytes for this 20000x20000 matrix with 60000 "
           "entries, against 720004 bytes in CSR (more than 10x); use 'csr-vector' instead")


def _selection(**changes: object) -> Selection:
    f = features(canonical_csr(np.eye(40), np.float64), 8)
    preds = {"csr-scalar": Prediction("csr-scalar", 2.5e-4, 1.5e-3),
             "csr-vector": Prediction("csr-vector", 1.25e-4, 3e-3),
             "ell": Prediction("ell", None, None, REFUSAL)}
    fields: dict[str, object] = dict(format="csr-vector", predictions=preds,
                                     why="least predicted kernel time", expected_products=None,
                                     calibration="measured", cost_ms=1.5, features=f)
    fields.update(changes)
    return Selection(**fields)  # type: ignore[arg-type]


def test_selection_prints_the_choice_why_and_a_table() -> None:
    text = str(_selection())
    lines = text.splitlines()
    assert lines[0] == "format='csr-vector' (measured calibration, selected in 1.5 ms)"
    assert lines[1] == "why: least predicted kernel time"
    assert lines[2].split() == ["format", "kernel", "ms", "conversion", "ms", "refused"]
    # by predicted kernel time, the choice marked, the refused last with their reason cut short
    assert lines[4].split() == ["*", "csr-vector", "0.125", "3"]
    assert lines[5].split() == ["csr-scalar", "0.25", "1.5"]
    assert lines[6].split()[0] == "ell"
    assert lines[6].endswith(REFUSAL[:REASON_WIDTH - 3] + "...") and len(lines) == 7
    # columns aligned: every row's format starts where the header's does
    at = lines[2].index("format")
    assert all(line[at:].split()[0] in ("csr-vector", "csr-scalar", "ell") for line in lines[4:])
    assert repr(_selection()) == f"<Selection {text}>" and len(text) < 600


def test_selection_text_with_products_a_trial_and_strips() -> None:
    text = str(_selection(expected_products=1, trial_ms={"csr-scalar": 0.2, "csr-vector": 0.3}))
    lines = text.splitlines()
    assert lines[2].split()[:7] == ["format", "kernel", "ms", "conversion", "ms", "measured", "ms"]
    # with one product the conversion counts: csr-scalar (1.75 ms) before csr-vector (3.125 ms)
    assert lines[4].split() == ["csr-scalar", "0.25", "1.5", "0.2"]
    assert lines[5].split() == ["*", "csr-vector", "0.125", "3", "0.3"]
    plan = StripsPlan(64, ((0, 20, "csr-scalar"), (20, 40, "ell")), 1e-4, "csr-vector", 1.25e-4,
                      2.0)
    strips = str(_selection(format="strips", strips=plan)).splitlines()[0]
    assert strips == ("format='strips' (measured calibration, selected in 1.5 ms; strips: "
                      "rows 0:20 csr-scalar, rows 20:40 ell)")
