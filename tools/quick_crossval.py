"""Leave-one-device-out cross-validation of the quick calibration, with no device.

    python tools/quick_crossval.py [--commit 976aa3b] [--suites demo cpu ...]
        [--noise 0.05] [--seeds 3] [--stream-ratio 1.0] [--by-machine] [--features DIR]
        [--full FULL.json [FULL2.json] --quick QUICK.json ...] [--out results.json]

For each device of the prior's sources (``clspmv.model.prior.SOURCES`` at ``--commit``; a
device is a name and driver, as ``derive`` counts them) and each of its full calibrations:

1. the prior is derived (``clspmv.model.prior.derive``) from the OTHER devices' calibrations;
2. the device's quick probes are synthesised: the probe matrices' kernel and conversion times
   its full calibration predicts, times lognormal noise of ``--noise`` (``--seeds`` draws), the
   streaming bandwidth its full calibration's times ``--stream-ratio`` (the quick probe's
   buffers are smaller than the full one's: on the 2-core Xeon it measured 0.3 times the full
   calibration's);
3. the quick calibration is fitted to them (``clspmv.model.quick.fit_quick``) and every matrix of
   the suites is chosen for by it and by the full calibration as ``format="auto"`` does with
   neither a trial nor a strips plan (the least predicted kernel time; the occupied diagonals
   counted exactly): ``full(quick's choice) / full(full's choice)``, per suite the share within
   5 % (target 90 %) and the worst (target 1.25), as ``tools/quick_agreement.py`` reports them.

``--full`` with ``--quick``: the same score for quick calibrations measured on a device (their
probes, stored in ``measurements["quick"]``, fitted again with the prior of every source) against
its full calibration(s): a device the prior never saw (calibration files, gzipped or not).
``--by-machine``: a held-out calibration's processor is left out of the prior under every driver
(by device, the default, a Zen 5 under PoCL 3.1 is scored with the prior of the same Zen 5 under
PoCL 3.0 among its sources).

The suites' features are computed once per (SIMD width, compute units) and kept in
``--features`` (pickled :class:`clspmv.model.features.Features`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import pickle
import sys
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import SUITES, suite
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.model import prior as prior_mod
from clspmv.model import prior_writer, quick
from clspmv.model.features import Features, features, refusal, with_exact_diagonals
from clspmv.model.predict import kernel_time, predict_features
from clspmv.model.timemodel import Calibration

WITHIN = 1.05
WORST = 1.25
TUNING = ("demo", "cpu", "anchors", "irregular", "irregular-small")
"""The suites the quick method may be tuned on; the others are held out."""
Key = tuple[int, int]
"""(SIMD width, compute units): what the features of a matrix depend on."""


def suite_features(names: Iterable[str], keys: set[Key], folder: Path
                   ) -> dict[str, dict[str, dict[Key, Features]]]:
    """Per suite, per matrix, per key the features (diagonals counted exactly), computed once
    and kept in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, dict[Key, Features]]] = {}
    for name in names:
        out[name] = {}
        for source in resolve_all(list(suite(name)), progress=False):
            path = folder / f"{name}--{source.name.replace('/', '_')[:120]}.pkl"
            kept: dict[Key, Features] = pickle.loads(path.read_bytes()) if path.exists() else {}
            if not keys <= set(kept):
                csr = canonical_csr(source.load(), np.float64)
                for c, cu in keys - set(kept):
                    kept[(c, cu)] = with_exact_diagonals(features(csr, c, compute_units=cu), csr)
                path.write_bytes(pickle.dumps(kept))
            out[name][source.name] = kept
    return out


def kernel_times(cal: Calibration, f: Features) -> dict[str, float]:
    """Predicted kernel seconds of every format accepting ``f`` (work-groups of 256)."""
    return {k: p.kernel_s for k, p in predict_features(f, cal, 256).items()
            if p.refused is None}


def choice(times: dict[str, float]) -> str:
    """The format of least time (ties by name, as the selection breaks them)."""
    return min(times, key=lambda k: (times[k], k))


def ratios(full: Calibration, quick_cal: Calibration, mats: dict[str, dict[Key, Features]],
           key: Key) -> dict[str, tuple[float, str, str]]:
    """Per matrix ``full(quick's choice) / full(full's choice)``, with both choices."""
    out = {}
    for name, per_key in mats.items():
        truth = kernel_times(full, per_key[key])
        best, pick = choice(truth), choice(kernel_times(quick_cal, per_key[key]))
        out[name] = (truth[pick] / truth[best], pick, best)
    return out


def summary(values: Iterable[float]) -> tuple[int, int, float]:
    """(matrices within 5 %, matrices, worst ratio)."""
    r = np.array(list(values))
    return int(np.count_nonzero(r <= WITHIN)), int(r.size), float(r.max())


def probe_features(facts: dict[str, int]) -> dict[str, Features]:
    """The probe matrices' features on a device of ``facts``, as the quick calibration takes
    them."""
    mats = quick.probe_matrices(facts["simd_width"], facts["compute_units"])
    return {k: with_exact_diagonals(features(canonical_csr(v, np.float64), facts["simd_width"]),
                                    canonical_csr(v, np.float64)) for k, v in mats.items()}


def synthetic_probes(truth: Calibration, kind: str, feats: dict[str, Features],
                     rng: np.random.Generator, noise: float, stream_ratio: float
                     ) -> quick.QuickProbes:
    """The quick probes of the device ``truth`` calibrated, as its full model predicts them
    (times lognormal noise of ``noise``)."""
    pairs = [(m, f) for m in feats for f in quick.probe_formats(kind)
             if refusal(f, feats[m]) is None]
    wobble = np.exp(noise * rng.standard_normal(2 * len(pairs)))
    kernel_s = {p: kernel_time(truth, p[1], feats[p[0]]) * w
                for p, w in zip(pairs, wobble[:len(pairs)], strict=True)}
    conversion_s = {p: truth.conversion_time(p[1], feats[p[0]]) * w
                    for p, w in zip(pairs, wobble[len(pairs):], strict=True)}
    return quick.QuickProbes(kernel_s, conversion_s, truth.stream_bw * stream_ratio, 1, 0.0, [])


def stand_in(cal: Calibration, kind: str, compute_units: int) -> SimpleNamespace:
    """What :func:`clspmv.model.quick.fit_quick` reads of a device, from its calibration and
    its facts' compute units."""
    return SimpleNamespace(name=cal.device, driver_version=cal.driver, type=kind,
                           cache_bytes=cal.cache_bytes, compute_units=compute_units)


def read_json(path: str) -> dict[str, object]:
    """The JSON in the file ``path`` (gzipped where its name ends in ``.gz``)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def class_prior(calibrations: list[dict[str, object]]) -> prior_mod.ClassPrior:
    """The prior :func:`clspmv.model.prior.derive` makes of ``calibrations`` (no kernel
    variants: the calibrations' own kernels)."""
    d = prior_mod.derive(calibrations)
    return prior_mod.ClassPrior(d["kernel"], d["conversion"], d["x_miss"],  # type: ignore
                                d["stream_miss"], {})  # type: ignore[arg-type]


def device_of(data: dict[str, object]) -> str:
    """A source calibration's device, as :func:`clspmv.model.prior.derive` counts them."""
    return f"{data['device']} {data['driver']}"


def machine_of(data: dict[str, object]) -> str:
    """A source calibration's processor, whatever its driver: the device name after its
    driver's prefixes (PoCL names a CPU ``pthread-skylake-avx512-AMD EPYC`` or
    ``pthread-AMD EPYC`` by its version)."""
    return str(data["device"]).split("-")[-1]


def cross_validation(commit: str, names: list[str], folder: Path, noise: float, seeds: int,
                     stream_ratio: float, by_machine: bool = False) -> list[dict[str, object]]:
    """Per class, held-out calibration and seed: per suite the summary and per matrix the
    ratio and choices. ``by_machine``: every calibration of the held-out one's processor is
    left out of the prior (another driver's included), not only those of its device."""
    held = machine_of if by_machine else device_of
    records: list[dict[str, object]] = []
    for kind, paths in prior_mod.SOURCES.items():
        sources = [(p, prior_writer.at_commit(commit, p)) for p in paths]
        facts = {p: d["measurements"]["facts"] for p, d in sources}  # type: ignore[index]
        keys = {(f["simd_width"], f["compute_units"]) for f in facts.values()}
        mats = suite_features(names, keys, folder)
        for path, data in sources:
            others = [d for _, d in sources if held(d) != held(data)]
            if not others:
                continue
            held_prior = class_prior(others)
            truth = Calibration.from_json(data, SINGLE_FORMATS)
            feats = probe_features(facts[path])
            key = (facts[path]["simd_width"], facts[path]["compute_units"])
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                probes = synthetic_probes(truth, kind, feats, rng, noise, stream_ratio)
                cal = quick.fit_quick(probes, feats, stand_in(truth, kind, key[1]),
                                      prior=held_prior)
                for name in names:
                    per = ratios(truth, cal, mats[name], key)
                    records.append({"class": kind, "held_out": path, "device": device_of(data),
                                    "processor": f"{machine_of(data)} {data['driver']}",
                                    "seed": seed, "suite": name,
                                    "summary": summary(r for r, _, _ in per.values()),
                                    "matrices": per})
    return records


def measured_check(commit: str, names: list[str], folder: Path, fulls: list[str],
                   quicks: list[str]) -> list[dict[str, object]]:
    """The quick calibrations of ``quicks`` (files), their probes fitted again with the prior
    of every CPU source, against each full calibration of ``fulls``."""
    every = class_prior([prior_writer.at_commit(commit, p) for p in prior_mod.SOURCES["cpu"]])
    records: list[dict[str, object]] = []
    for full_path in fulls:
        data = read_json(full_path)
        full = Calibration.from_json(data, SINGLE_FORMATS)
        facts = data["measurements"]["facts"]
        key = (facts["simd_width"], facts["compute_units"])
        mats = suite_features(names, {key}, folder)
        feats = probe_features(facts)
        for quick_path in quicks:
            stored = read_json(quick_path)["measurements"]["quick"]
            probes = quick.QuickProbes(
                {tuple(k.split("/")): v for k, v in stored["kernel_s"].items()},  # type: ignore
                {tuple(k.split("/")): v for k, v in stored["conversion_s"].items()},  # type: ignore
                stored["stream_bw"], stored["passes"], stored["slowest"], stored["noisy"])
            cal = quick.fit_quick(probes, feats, stand_in(full, facts["type"], key[1]),
                                  prior=every)
            for name in names:
                per = ratios(full, cal, mats[name], key)
                records.append({"full": full_path, "quick": quick_path, "suite": name,
                                "summary": summary(r for r, _, _ in per.values()),
                                "matrices": per})
    return records


def table(records: list[dict[str, object]], row: str, names: list[str]) -> str:
    """A Markdown table: a row per value of ``row`` (pooled over the records sharing it), per
    suite the matrices within 5 % / matrices and the worst ratio."""
    rows: dict[str, dict[str, list[tuple[int, int, float]]]] = {}
    for r in records:
        rows.setdefault(str(r[row]), {}).setdefault(str(r["suite"]), []).append(
            r["summary"])  # type: ignore[arg-type]
    lines = [f"| {row} | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, per in rows.items():
        cells = []
        for name in names:
            got = per.get(name, [])
            within, total = sum(g[0] for g in got), sum(g[1] for g in got)
            worst = max((g[2] for g in got), default=float("nan"))
            mark = "" if within >= 0.9 * total and worst <= WORST else " ✗"
            cells.append(f"{100 * within / max(total, 1):.0f} % {worst:.2f}{mark}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def score(records: list[dict[str, object]], names: Iterable[str]) -> str:
    """One line over the records of the suites ``names``: the (row, suite) cells meeting both
    targets, the matrices within 5 %, the worst ratio and the geometric mean ratio."""
    got = [r for r in records if r["suite"] in names]
    cells = sum(1 for r in got if r["summary"][0] >= 0.9 * r["summary"][1]  # type: ignore
                and r["summary"][2] <= WORST)  # type: ignore[index]
    every = [m[0] for r in got for m in r["matrices"].values()]  # type: ignore[attr-defined]
    return (f"cells meeting both targets {cells}/{len(got)}, matrices within 5 % "
            f"{100 * np.mean(np.array(every) <= WITHIN):.1f} %, worst {max(every):.2f}, "
            f"geometric mean {np.exp(np.mean(np.log(every))):.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="976aa3b")
    parser.add_argument("--suites", nargs="+", default=list(SUITES))
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--stream-ratio", type=float, default=1.0)
    parser.add_argument("--by-machine", action="store_true",
                        help="leave out the held-out processor under every driver")
    parser.add_argument("--features", type=Path, default=Path("/tmp/clspmv-crossval-features"))
    parser.add_argument("--full", nargs="*", default=[])
    parser.add_argument("--quick", nargs="*", default=[])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    cv = cross_validation(args.commit, args.suites, args.features, args.noise, args.seeds,
                          args.stream_ratio, args.by_machine)
    print(f"## Cross-validation (noise {args.noise}, {args.seeds} seeds, stream ratio "
          f"{args.stream_ratio}, left out: the held-out "
          f"{'processor' if args.by_machine else 'device'}): per held-out calibration, within "
          "5 % and worst\n")
    for r in cv:
        r["fold"] = f"{r['class']} {Path(str(r['held_out'])).parent.name} ({r['processor']})"
    print(table(cv, "fold", args.suites) + "\n")
    for kind in prior_mod.SOURCES:
        of_kind = [r for r in cv if r["class"] == kind]
        print(f"- {kind}, tuning suites: {score(of_kind, TUNING)}")
        print(f"- {kind}, held-out suites: {score(of_kind, set(args.suites) - set(TUNING))}")
    print()
    measured = measured_check(args.commit, args.suites, args.features, args.full, args.quick)
    if measured:
        for r in measured:
            r["pair"] = f"{Path(str(r['quick'])).parent.name} vs {Path(str(r['full'])).parent.name}"
        print("## Measured quick probes against full calibrations\n")
        print(table(measured, "pair", args.suites) + "\n")
        print(f"- every suite: {score(measured, args.suites)}\n")
    if args.out:
        args.out.write_text(json.dumps({"cross_validation": cv, "measured": measured}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
