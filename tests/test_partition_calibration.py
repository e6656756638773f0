"""partition="time" weighs rows with a quick calibration as with a full one, never with the
quick default (clspmv.distributed.predicted.partition_calibration)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

from clspmv.distributed import predicted


@pytest.mark.parametrize("kind, taken", [("measured", True), ("quick", True),
                                         ("quick-default", False)])
def test_partition_calibration_kinds(device, monkeypatch, kind, taken) -> None:
    cal = dataclasses.replace(fixture_calibration(device), kind=kind)
    asked: list[str] = []
    monkeypatch.setattr(predicted, "load", lambda d: asked.append("load") or cal)
    monkeypatch.setattr(predicted, "calibration", lambda d: asked.append("measure") or cal)
    assert predicted.partition_calibration(device, measure=False) is (cal if taken else None)
    assert predicted.partition_calibration(device, measure=True) is (cal if taken else None)
    assert asked == ["load", "measure"]
    assert predicted.WEIGHING_KINDS == ("measured", "quick")


def test_a_quick_calibration_weighs_rows(device) -> None:
    """The same coefficients weigh the same rows whatever the calibration's kind: the rows'
    predicted seconds, a dense row costing more than a stencil's."""
    rows = sp.random_array((4000, 4000), density=0.002, format="csr", random_state=1)
    rows = sp.vstack([rows, sp.csr_array(np.ones((4, 4000)))], format="csr")
    full = fixture_calibration(device)
    quick = dataclasses.replace(full, kind="quick")
    weights = predicted.row_weights(sp.csr_matrix(rows), device, quick)
    np.testing.assert_array_equal(weights, predicted.row_weights(sp.csr_matrix(rows), device,
                                                                 full))
    assert weights.shape == (4004,) and (weights > 0).all()
    assert weights[-1] > 10 * np.median(weights[:4000])
