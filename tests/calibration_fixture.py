"""The stored calibration the tests select with (``tests/data/calibration-fixture.json``,
measured once with PoCL 3.1 on a 2-core CPU), for the test modules and the MPI worker."""

from __future__ import annotations

import json
from pathlib import Path

import clspmv
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.calibrate import MEASUREMENT
from clspmv.model.timemodel import TERMS, Calibration, quick_default

FIXTURE = Path(__file__).parent / "data" / "calibration-fixture.json"


def fixture_data() -> dict[str, object]:
    """The stored fixture's JSON, with a coefficient of 0 for each model term added since it
    was measured (its ``terms`` are the first of the model's), and for each format added since
    (``bsr``) the quick default's coefficients of a CPU, the fixture's device class."""
    data = json.loads(FIXTURE.read_text())
    known = list(data["terms"])
    assert TERMS[:len(known)] == tuple(known), "the fixture's terms are not the model's first"
    for coef in data["kernel"].values():
        coef.extend([0.0] * (len(TERMS) - len(known)))
    data["terms"] = list(TERMS)
    quick = quick_default(str(data["device"]), str(data["driver"]), clspmv.__version__, "cpu",
                          SINGLE_FORMATS)
    for fmt in SINGLE_FORMATS:
        data["kernel"].setdefault(fmt, quick.kernel[fmt])  # type: ignore[union-attr]
        data["conversion"].setdefault(fmt, quick.conversion[fmt])  # type: ignore[union-attr]
    return data


def fixture_calibration(device: clspmv.Device) -> Calibration:
    """The stored fixture (:func:`fixture_data`), relabelled as a calibration of ``device``."""
    data = fixture_data()
    data.update(device=device.name, driver=device.driver_version, clspmv=clspmv.__version__,
                measurement=MEASUREMENT)
    return Calibration.from_json(data, SINGLE_FORMATS)
