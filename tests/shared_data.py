"""Where the real SuiteSparse matrices are: ``$CLSPMV_MATRICES``, else ``../shared/matrices``
beside the checkout (CI has it; tests that need it skip with a reason when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

MATRICES = Path(
    os.environ.get("CLSPMV_MATRICES")
    or Path(__file__).resolve().parents[2] / "shared" / "matrices"
)
