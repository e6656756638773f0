"""Model-alone replay with the calibration fit's PRIOR_WEIGHT changed: python run.py WEIGHT SUITE MEASURED CAL... (refit)."""
import sys, runpy, importlib
cal = importlib.import_module("clspmv.model.calibrate")
cal.PRIOR_WEIGHT = float(sys.argv[1])
suite, measured, cals = sys.argv[2], sys.argv[3], sys.argv[4:]
sys.argv = ["model_eval.py", "--suite", suite, "--device", "facts", "--refit", "--measured", measured, "--calibration", *cals]
sys.path.insert(0, "tools")
runpy.run_path("tools/model_eval.py", run_name="__main__")
