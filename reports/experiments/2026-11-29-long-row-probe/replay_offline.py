"""Auto's choices of quick calibrations fitted again here, with no device: the probes stored in a
quick calibration measured on a machine (dump_facts.py's quick-calibration.json, or --save of
replay.py) and that machine's facts (facts.json), judged in the formats' search times of
tools/cpu_vs_mkl.py runs there (results.json "search_ms"): the least predicted kernel time of
clspmv.model.predict.predict_features, as select() takes it without a trial.

    python replay_offline.py FACTS.json QUICK.json RESULTS.json [RESULTS.json ...]
        [--units N] [--features CACHE.pkl]

--units: the compute units to fit and predict for (default: the facts'). Variants: "before"
(prior-before.json, compute units taken as 1: the fit before the change) and "after" (this
checkout)."""
import argparse
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

from replay_common import fits, judge, stored_probes

from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration

parser = argparse.ArgumentParser()
parser.add_argument("facts")
parser.add_argument("quick")
parser.add_argument("results", nargs="+")
parser.add_argument("--units", type=int, default=0)
parser.add_argument("--features", default="")
args = parser.parse_args()
facts = json.loads(Path(args.facts).read_text())
units = args.units or facts["compute_units"]
simd = facts["simd_width"]
stored = Calibration.from_json(json.loads(Path(args.quick).read_text()), SINGLE_FORMATS)
probes, feats = stored_probes(stored, simd, units)
dev = SimpleNamespace(name=facts["name"], driver_version=facts["driver_version"], type="cpu",
                      cache_bytes=facts["cache_bytes"], compute_units=units)
variants = fits(probes, feats, dev, Layout(**{**facts["layout"], "compute_units": units}))
cache = Path(args.features) if args.features else None
matrix_feats = pickle.loads(cache.read_bytes()) if cache and cache.exists() else {}


def choose(name, csr, cal, measured):
    """The least predicted kernel time of the formats that accept the matrix."""
    if (name, units) not in matrix_feats:
        matrix_feats[(name, units)] = with_exact_diagonals(
            features(csr, simd, compute_units=units), csr)
    preds = predict_features(matrix_feats[(name, units)], cal,
                             min(256, facts["max_work_group_size"]))
    ok = {k: p.kernel_s for k, p in preds.items() if p.refused is None}
    return min(ok, key=ok.get)


judge(args.results, variants, choose)
if cache:
    cache.write_bytes(pickle.dumps(matrix_feats))
