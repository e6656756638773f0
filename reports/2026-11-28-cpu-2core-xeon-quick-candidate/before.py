"""Run a tool or the CLI with the quick calibration as it was before this report (de280cd): that
commit's ``fit_quick`` (one multiplier per group of terms) and CPU probes (csr-scalar, csr-blocks,
ellr); everything else as checked out.

    python before.py tools/quick_crossval.py ARGS...
    python before.py -m clspmv calibrate --quick --force --device 1:0
"""

import runpy
import subprocess
import sys
import types

import clspmv.model.quick as quick

BEFORE = "de280cd"
source = subprocess.run(["git", "show", f"{BEFORE}:clspmv/model/quick.py"], check=True,
                        capture_output=True, text=True).stdout
old = types.ModuleType("clspmv.model.quick_before")
old.__package__ = "clspmv.model"
sys.modules[old.__name__] = old  # its dataclass looks its module up
exec(compile(source, f"{BEFORE}:clspmv/model/quick.py", "exec"), old.__dict__)
quick.fit_quick = old.fit_quick
quick.probe_formats = {"cpu": ("csr-scalar", "csr-blocks", "ellr"),
                       "gpu": ("csr-scalar", "csr-vector", "ellr")}.__getitem__
if sys.argv[1] == "-m":
    sys.argv = [sys.argv[2], *sys.argv[3:]]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
