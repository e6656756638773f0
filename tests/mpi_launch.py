"""The ``mpiexec`` the MPI tests launch: the one on PATH, else the one beside this Python (the
mpich wheel of the ``mpi`` extra installs it into the environment's ``bin/``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def mpiexec() -> str:
    """Its path; skips without mpi4py, fails when mpi4py is there but no mpiexec is."""
    pytest.importorskip("mpi4py", reason='needs mpi4py: pip install "clspmv[mpi]"')
    found = shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable)
                                                                         .parent))
    if found is None:
        pytest.fail('mpi4py is installed but no mpiexec was found: pip install "clspmv[mpi]" '
                    "(the mpich wheel provides it)")
    return found
