"""The stored calibration the tests select with (``tests/data/calibration-fixture.json``,
measured once with PoCL 3.1 on a 2-core CPU), for the test modules and the MPI worker."""

from __future__ import annotations

import json
from pathlib import Path

import clspmv
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.calibrate import MEASUREMENT
from clspmv.model.timemodel import Calibration, quick_default

FIXTURE = Path(__file__).parent / "data" / "calibration-fixture.json"


def fixture_calibration(device: clspmv.Device) -> Calibration:
    """The stored fixture, relabelled as a calibration of ``device``; a format added since the
    fixture was measured gets the quick default's coefficients."""
    data = json.loads(FIXTURE.read_text())
    data.update(device=device.name, driver=device.driver_version, clspmv=clspmv.__version__,
                measurement=MEASUREMENT)
    quick = quick_default(device.name, device.driver_version, clspmv.__version__, device.type,
                          SINGLE_FORMATS)
    for fmt in SINGLE_FORMATS:
        data["kernel"].setdefault(fmt, quick.kernel[fmt])
        data["conversion"].setdefault(fmt, quick.conversion[fmt])
    return Calibration.from_json(data, SINGLE_FORMATS)
