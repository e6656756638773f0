"""Auto's choice replayed offline from a stored quick calibration (Intel's runtime) fitted
again as stored (the shared part beyond the cache the irregular probes' geometric mean: no
csr-blocks on the large band) and with csr-blocks' large-band time added (the shared part its
ratio there), judged in a cpu_vs_mkl run's search times (each format alone, 5 products: noisy).

    python shared_band_replay.py DEVICE CSR_BLOCKS_BAND_MS FOLDER

FOLDER: a cpu_vs_mkl run with its calibration-*.json and results.json.
"""
import json
import sys
from pathlib import Path

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats.layout import Layout
from clspmv.model import quick
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.quick_blocks import block_probe_matrices
from clspmv.model.quick_large import BANDED, large_probe_matrices, large_probe_plan


def main(device: str, band_ms: float, folder: Path) -> None:
    dev = clspmv.select_device(device)
    layout = Layout.for_device(dev)
    mats = quick.probe_matrices(dev.simd_width, dev.compute_units)
    mats.update(block_probe_matrices("cpu"))
    large = large_probe_matrices(dev.simd_width, dev.compute_units)
    mats.update({k: large[k] for k in large_probe_plan(layout)})
    mats = {k: canonical_csr(v, np.float64) for k, v in mats.items()}
    feats = {k: with_exact_diagonals(features(v, dev.simd_width), v) for k, v in mats.items()}
    stored = json.loads(next(folder.glob("calibration-*.json")).read_text())
    q = stored["measurements"]["quick"]

    def keyed(d: dict[str, float]) -> dict[tuple[str, str], float]:
        return {tuple(k.split("/")): v for k, v in d.items()}  # type: ignore[misc]

    fits = {}
    for label, extra in (("as stored", {}), ("csr-blocks on the band", {
            (BANDED, "csr-blocks"): band_ms / 1e3})):
        large_s = {k: v for k, v in keyed(q["large_s"]).items() if k != (BANDED, "csr-blocks")}
        probes = quick.QuickProbes(keyed(q["kernel_s"]), keyed(q["conversion_s"]), q["stream_bw"],
                                   q["passes"], q["slowest"], q["noisy"], 0.0,
                                   {**large_s, **extra})
        fits[label] = quick.fit_quick(probes, feats, dev, layout=layout)
    score: dict[str, list[float]] = {k: [] for k in fits}
    for rec in json.loads((folder / "results.json").read_text())["records"]:
        ms = rec["search_ms"]
        csr = canonical_csr(resolve(rec["matrix"]).load(), np.float64)
        f = with_exact_diagonals(features(csr, dev.simd_width, compute_units=dev.compute_units),
                                 csr)
        shown = [f"{rec['matrix'][:48]:48s} fastest={min(ms, key=ms.get):10s}"]
        for label, cal in fits.items():
            pred = {k: p.kernel_s for k, p in predict_features(f, cal, 256).items()
                    if p.refused is None and k in ms}
            pick = min(pred, key=pred.get)
            score[label].append(min(ms.values()) / ms[pick])
            shown.append(f"{label}: {pick} ({score[label][-1]:.2f})")
        print(" | ".join(shown), flush=True)
    for label, v in score.items():
        print(f"{label}: auto / fastest (search times) geomean "
              f"{np.exp(np.mean(np.log(v))):.3f}, worst {min(v):.2f}, n={len(v)}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]))
