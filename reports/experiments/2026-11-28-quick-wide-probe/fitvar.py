"""A parameterised copy of clspmv.model.quick.fit_quick: own multipliers per probed format on the
groups OWN (names of GROUPS)."""
import numpy as np
from scipy.optimize import least_squares
from clspmv.model import quick
from clspmv.model.quick import *  # noqa
from clspmv.model.quick import _group_of_term
from clspmv.model.timemodel import TERMS, Calibration, conversion_terms
from clspmv.model.launches import launches
from clspmv.model.prior import prior_of, scales
from clspmv.formats import SINGLE_FORMATS
from clspmv.version import __version__

OWN = ["cache"]
PULL = 0.5
OWN_PULL = None

def fit_quick(probes, feats, device, formats=SINGLE_FORMATS, prior=None):
    GROUPS = quick.GROUPS
    prior = prior or prior_of(quick.prior_class(device.type))
    shapes = {f: prior.kernel_shape(f) for f in {*formats, *(f for _, f in probes.kernel_s)}}
    first = TERMS.index("launch")
    tiny = [t / (max(launches(f, feats[m]), 1) * shapes[f][first])
            for (m, f), t in probes.kernel_s.items() if m == "launch" and shapes[f][first] > 0]
    launch = float(np.median(tiny))
    cal = Calibration(device.name, device.driver_version, __version__, "quick", device.cache_bytes,
                      launch, probes.stream_bw, probes.stream_bw,
                      x_miss=[list(p) for p in prior.x_miss],
                      stream_miss=[list(p) for p in prior.stream_miss], measurement=quick.QUICK_MEASUREMENT)
    base = {f: np.asarray(shapes[f]) * scales(launch, probes.stream_bw) for f in formats}
    index = {t: g for g, terms in enumerate(GROUPS.values()) for t in terms}
    group = np.array([index[t] for t in TERMS])
    keys = list(probes.kernel_s)
    parts = np.array([np.bincount(group, base[f] * cal.terms(f, feats[m]), len(GROUPS)) for m, f in keys])
    measured = np.log([probes.kernel_s[k] for k in keys])
    probed = sorted({f for _, f in keys})
    of_probe = np.array([probed.index(f) for _, f in keys])
    own_idx = [list(GROUPS).index(g) for g in OWN]
    G, P = len(GROUPS), len(probed)

    def predicted(log_m):
        scaled = parts * np.exp(log_m[:G])
        for j, gi in enumerate(own_idx):
            scaled[:, gi] *= np.exp(log_m[G + j * P: G + (j + 1) * P])[of_probe]
        return scaled.sum(axis=1)

    pulls = np.full(G + len(own_idx) * P, PULL)
    if OWN_PULL is not None:
        pulls[G:] = OWN_PULL
    def residuals(log_m):
        return np.concatenate([np.log(np.maximum(predicted(log_m), 1e-30)) - measured, pulls * log_m])

    log_m = least_squares(residuals, np.zeros(G + len(own_idx) * P)).x
    multiplier = np.exp(log_m[:G])[group]
    coef = {f: base[f] * multiplier for f in formats}
    for j, gi in enumerate(own_idx):
        own = dict(zip(probed, np.exp(log_m[G + j * P: G + (j + 1) * P])))
        for f in formats:
            coef[f] = coef[f] * np.where(group == gi, own.get(f, 1.0), 1.0)
    cal.kernel = {f: [float(v) for v in coef[f]] for f in formats}
    cal.gather_bw = 1.0 / float(np.median([c[TERMS.index("xbytes")] for c in cal.kernel.values() if c[TERMS.index("xbytes")] > 0]))
    ratio = float(np.median([t / np.dot(prior.conversion(f), conversion_terms(f, feats[m])) for (m, f), t in probes.conversion_s.items()]))
    cal.conversion = {f: [float(v) * ratio for v in prior.conversion(f)] for f in formats}
    return cal
