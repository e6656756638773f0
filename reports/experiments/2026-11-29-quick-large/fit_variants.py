"""Fit quick calibrations from probes-*.json: 'ship' (current fit_quick) and 'big' (with the big
probes, own memory multipliers per format probed there). Writes calibration JSONs."""
import json, sys
from pathlib import Path
import numpy as np
from scipy.optimize import least_squares
from types import SimpleNamespace
from clspmv.device import select_device
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model import quick as Q
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.timemodel import Calibration, TERMS
from clspmv.model.prior import prior_of, scales
from clspmv.model.launches import launches
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from large_mats import big_matrices

def load_probes(d):
    q = d["quick"]
    split = lambda t: {tuple(k.split("/")): v for k, v in t.items()}
    return Q.QuickProbes(split(q["kernel_s"]), split(q["conversion_s"]), q["stream_bw"], q["passes"], q["slowest"], q["noisy"], q["seconds"])

def fit_big(probes, feats, bigk, bigfeats, device, layout, pull=Q.PULL, groups_big=("memory",), formats=SINGLE_FORMATS):
    base_cal = Q.fit_quick(probes, feats, device, layout=layout)  # for launch, scales
    prior = prior_of("cpu")
    shapes = {f: prior.kernel_shape(f, layout) for f in formats}
    first = TERMS.index("launch")
    launch = base_cal.launch_s
    base = {f: np.asarray(shapes[f]) * scales(launch, probes.stream_bw) for f in formats}
    group = Q._group_of_term()
    G = list(Q.GROUPS)
    rows = []  # (parts, measured, format)
    for (m, f), t in probes.kernel_s.items():
        rows.append((np.bincount(group, base[f] * base_cal.terms(f, feats[m]), len(G)), t, f, "small"))
    for m, d in bigk.items():
        for f, t in d.items():
            rows.append((np.bincount(group, base[f] * base_cal.terms(f, bigfeats[m]), len(G)), t, f, "big"))
    own_keys = sorted({(f, "cache") for _, _, f, k in rows if k == "small"} |
                      {(f, g) for _, _, f, k in rows if k == "big" for g in groups_big})
    parts = np.array([r[0] for r in rows]); meas = np.log([r[1] for r in rows])
    own_idx = np.zeros((len(rows), len(G)), int) - 1
    for i, (_, _, f, _) in enumerate(rows):
        for gi, g in enumerate(G):
            if (f, g) in own_keys:
                own_idx[i, gi] = own_keys.index((f, g))
    def pred(lm):
        gm = np.exp(lm[:len(G)]); om = np.exp(np.concatenate([lm[len(G):], [0.0]]))
        return (parts * gm * om[own_idx]).sum(1)
    res = lambda lm: np.concatenate([np.log(np.maximum(pred(lm), 1e-30)) - meas, pull * lm])
    lm = least_squares(res, np.zeros(len(G) + len(own_keys))).x
    gm = np.exp(lm[:len(G)])
    own = dict(zip(own_keys, np.exp(lm[len(G):])))
    cal = base_cal
    cal.kernel = {f: [float(v) for v in base[f] * gm[group] * np.array([own.get((f, G[g]), 1.0) for g in group])] for f in formats}
    cal.gather_bw = 1.0 / float(np.median([c[TERMS.index("xbytes")] for c in cal.kernel.values() if c[TERMS.index("xbytes")] > 0]))
    return cal, gm, own

if __name__ == "__main__":
    d = json.load(open(sys.argv[1])); outdir = Path(sys.argv[2]); outdir.mkdir(exist_ok=True)
    dev = select_device("1:0")
    probes = load_probes(d)
    mats = {k: canonical_csr(v, np.float64) for k, v in Q.probe_matrices(dev.simd_width, dev.compute_units).items()}
    feats = {k: with_exact_diagonals(features(v, dev.simd_width), v) for k, v in mats.items()}
    bm = {k: canonical_csr(v, np.float64) for k, v in big_matrices(d["rows"]).items()}
    bfeats = {k: with_exact_diagonals(features(v, dev.simd_width), v) for k, v in bm.items()}
    bigk = {k: v["kernel_s"] for k, v in d["big"].items()}
    layout = Layout.for_device(dev)
    ship = Q.fit_quick(probes, feats, dev, layout=layout)
    (outdir / "ship.json").write_text(json.dumps(ship.to_json()))
    for k in bigk:
        print("ship pred", k, {f: round(ship.kernel_time(f, bfeats[k]) * 1e3, 2) for f in bigk[k]})
        print("     meas", k, {f: round(t * 1e3, 2) for f, t in bigk[k].items()})
    for label, gb, pull in [("big-mem", ("memory",), Q.PULL), ("big-all", ("memory", "cache"), Q.PULL), ("big-mem-p02", ("memory",), 0.2)]:
        cal, gm, own = fit_big(probes, feats, bigk, bfeats, dev, layout, pull=pull, groups_big=gb)
        print(label, "groups", np.round(gm, 3), {f"{a}/{b}": round(v, 3) for (a, b), v in own.items()})
        for k in bigk:
            print("   pred", k, {f: round(cal.kernel_time(f, bfeats[k]) * 1e3, 2) for f in bigk[k]})
        (outdir / f"{label}.json").write_text(json.dumps(cal.to_json()))
