"""Format selection as a library decision: per-device calibration of a time model per format
(:mod:`.calibrate`, stored by :mod:`.store`), predictions for a matrix (:mod:`.predict`) and the
choice of ``format="auto"`` (:mod:`.select`). Features of a matrix: :mod:`.features`; the
models' form: :mod:`.timemodel`."""

from __future__ import annotations

from .calibrate import calibrate
from .features import Features, features, refusal
from .predict import Prediction, predict
from .select import Selection, select
from .store import calibration
from .timemodel import Calibration

__all__ = ["Calibration", "Features", "Prediction", "Selection", "calibrate", "calibration",
           "features", "predict", "refusal", "select"]
