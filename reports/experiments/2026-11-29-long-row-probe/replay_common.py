"""What replay.py (on a device) and replay_offline.py (without one) share: a stored quick
calibration's probes, the fits before and after the change, and the judging of each fit's
choices in tools/cpu_vs_mkl.py runs' search times."""
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats.layout import Layout
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.prior import ClassPrior
from clspmv.model.quick import QuickProbes, fit_quick, probe_matrices
from clspmv.model.quick_blocks import block_probe_matrices
from clspmv.model.quick_large import large_probe_matrices
from clspmv.model.timemodel import Calibration


def stored_probes(cal: Calibration, simd: int, units: int) -> tuple[QuickProbes, dict]:
    """The probes ``cal`` stores (those of this checkout's probe matrices) and the features of
    those matrices for a device of ``simd`` lanes and ``units`` compute units."""
    q = cal.measurements["quick"]

    def keyed(d):
        return {tuple(k.split("/", 1)): v for k, v in d.items()}

    mats = {**probe_matrices(simd, units), **block_probe_matrices("cpu"),
            **large_probe_matrices(simd, units)}
    kernel_s = {k: v for k, v in keyed(q["kernel_s"]).items() if k[0] in mats}
    probes = QuickProbes(kernel_s, keyed(q["conversion_s"]), q["stream_bw"], q["passes"],
                         q["slowest"], q["noisy"], q["seconds"], keyed(q.get("large_s", {})))
    feats = {}
    for k, v in mats.items():
        c = canonical_csr(v, np.float64)
        feats[k] = with_exact_diagonals(features(c, simd), c)
    return probes, feats


def fits(probes: QuickProbes, feats: dict, dev: object, layout: Layout) -> dict:
    """"after" (this checkout's fit) and "before" (prior-before.json, compute units as 1)."""
    old = json.loads((Path(__file__).parent / "prior-before.json").read_text())["classes"]["cpu"]
    one = SimpleNamespace(name=dev.name, driver_version=dev.driver_version, type="cpu",
                          cache_bytes=dev.cache_bytes, compute_units=1)
    return {"after": fit_quick(probes, feats, dev, layout=layout),
            "before": fit_quick(probes, feats, one, layout=layout, prior=ClassPrior(
                old["kernel"], old["conversion"], old["x_miss"], old["stream_miss"],
                old["variants"]))}


def judge(paths: list[str], variants: dict, choose: Callable) -> None:
    """Print per matrix of the first results file each variant's choice (``choose(name, csr,
    calibration, search_ms)``) and its search time over the fastest format's in every file;
    then per variant and file the geometric mean and worst of those ratios."""
    runs = [{r["matrix"]: r["search_ms"] for r in json.loads(Path(p).read_text())["records"]}
            for p in paths]
    ratios = {(label, i): [] for label in variants for i in range(len(runs))}
    for name in runs[0]:
        csr = canonical_csr(resolve(name).load(), np.float64)
        line = f"{name[:50]:50s}"
        for label, cal in variants.items():
            choice = choose(name, csr, cal, runs[0][name])
            line += f" | {label}: {choice:11s}"
            for i, run in enumerate(runs):
                measured = run.get(name)
                if measured:
                    ratios[(label, i)].append(min(measured.values())
                                              / measured.get(choice, np.inf))
                    line += f" {ratios[(label, i)][-1]:.2f}"
        print(line, flush=True)
    for (label, i), r in ratios.items():
        r = np.array(r)
        print(f"{label} in {paths[i]}: geometric mean {np.exp(np.log(r).mean()):.3f}, "
              f"worst {r.min():.3f}")
