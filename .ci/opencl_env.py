"""Runs a command (pytest) of a tox environment on exactly one OpenCL implementation.

    python .ci/opencl_env.py IMPLEMENTATION -- COMMAND...

IMPLEMENTATION is one of

- ``installed``: the drivers installed on the machine, as the OpenCL loader finds them (CI's:
  Debian's pocl-opencl-icd, which ``dev.sh test`` installs);
- ``pypi-pocl``: only the PoCL of ``pocl-binary-distribution`` (the ``pocl`` extra), which puts
  its ICD beside pyopencl's loader; the machine's ICD folder is hidden by an empty one;
- ``intel``: only Intel's CPU runtime from PyPI (``intel-opencl-rt``): an ICD file naming the
  environment's ``lib/libintelocl.so``, in a folder of the environment's own.

For the last two, tox sets ``OCL_ICD_VENDORS`` to a folder of the environment, which this script
fills (ocl-icd then reads that folder instead of /etc/OpenCL/vendors; pyopencl's wheel adds the
ICDs beside it, Oclgrind's when installed). It prints the platforms seen, fails when the
environment sees another implementation than the one named, and asks ``python -m clspmv.doctor
--require-device`` whether a device builds and runs kernels. Where none does, a PyPI
implementation is said to be skipped (PoCL 3.0's LLVM does not know every CPU) and the command
is not run; for the installed drivers that is a failure. A script rather than tox settings: the
ICD file names a path that exists only once the environment is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SKIPPABLE = {"pypi-pocl": "PoCL from PyPI (pocl-binary-distribution)",
             "intel": "Intel's CPU OpenCL runtime from PyPI (intel-opencl-rt)"}
"""The implementations from PyPI, which may not work on every CPU: their environment skips."""

EXPECTED_PLATFORM = {"pypi-pocl": "Portable Computing Language", "intel": "Intel(R) OpenCL"}


def write_vendors(implementation: str) -> None:
    """Fills the folder ``OCL_ICD_VENDORS`` names, which must lie inside this environment, with
    the one ICD file of ``implementation`` (none for PyPI's PoCL, whose ICD lies beside pyopencl's
    loader). It deletes nothing: another ICD file there is an error."""
    folder = os.environ.get("OCL_ICD_VENDORS", "")
    prefix = Path(sys.prefix).resolve()
    vendors = Path(folder).resolve()
    if not folder or not vendors.is_relative_to(prefix):
        sys.exit(f"{implementation}: OCL_ICD_VENDORS must name a folder inside this environment "
                 f"({prefix}), not {folder!r}: run this through tox, whose tox.ini sets it")
    vendors.mkdir(parents=True, exist_ok=True)
    ours = {"intel": "intel-cpu.icd"}.get(implementation)
    others = sorted(p.name for p in vendors.glob("*.icd") if p.name != ours)
    if others:
        sys.exit(f"{implementation}: {vendors} holds other ICD files ({', '.join(others)}); "
                 "this environment must see one implementation: remove them")
    if implementation == "intel":
        library = prefix / "lib" / "libintelocl.so"
        if not library.exists():
            sys.exit(f"intel: {library} is missing: install intel-opencl-rt in this environment "
                     "(tox.ini's deps of testenv:intel)")
        (vendors / ours).write_text(f"{library}\n")


def platforms() -> list[str]:
    """The names and versions of the OpenCL platforms this environment sees, in a process of
    their own (a broken driver must not take this script down)."""
    listing = subprocess.run(
        [sys.executable, "-c", "import pyopencl as cl\n"
         "for p in cl.get_platforms(): print(f'{p.name} ({p.version.strip()})')"],
        capture_output=True, text=True, check=False)
    if listing.returncode != 0:
        last = (listing.stderr.strip().splitlines() or ["(no output)"])[-1]
        if "PLATFORM_NOT_FOUND" in listing.stderr:
            return []
        sys.exit(f"listing the OpenCL platforms failed: {last}")
    return listing.stdout.splitlines()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or argv[0] not in ("installed", *SKIPPABLE):
        sys.exit("usage: python .ci/opencl_env.py installed|pypi-pocl|intel -- COMMAND...")
    implementation, command = argv[0], argv[2:]
    if implementation != "installed":
        write_vendors(implementation)
    seen = platforms()
    print(f"{implementation}: OpenCL platforms seen: {'; '.join(seen) or 'none'}", flush=True)
    expected = EXPECTED_PLATFORM.get(implementation)
    others = [p for p in seen if expected and not p.startswith((expected, "Oclgrind"))]
    if others:
        sys.exit(f"{implementation}: this environment must see only {SKIPPABLE[implementation]}"
                 f", but it sees {'; '.join(others)}: its OCL_ICD_VENDORS is not in force")
    check = subprocess.run([sys.executable, "-m", "clspmv.doctor", "--require-device"],
                           capture_output=True, text=True, check=False)
    verdict = check.stdout.strip() or check.stderr.strip()
    print(f"{implementation}: {verdict}", flush=True)
    if check.returncode != 0:
        if implementation in SKIPPABLE and check.returncode == 1:
            print(f"SKIPPED ENVIRONMENT {implementation}: {SKIPPABLE[implementation]} builds no "
                  f"kernel on this CPU ({verdict}); the tests did not run in this environment",
                  flush=True)
            return 0
        return check.returncode
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
