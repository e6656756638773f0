"""The writer of the quick calibration's prior (:data:`.prior.PRIOR_FILE`): :func:`main` derives
it from the full calibrations of :data:`.prior.SOURCES` as committed at a commit of this checkout
(:func:`at_commit`), the formats that count their own idle lanes fitted again in this model form
(:func:`fitted_at_commit`), and writes it one format per line (:func:`prior_text`)::

    python -m clspmv.model.prior_writer 976aa3b
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from ..formats import FORMAT_CLASSES, Format
from .calibrate import refit_stored
from .prior import (
    CONVERSION_SOURCES,
    KERNEL_CHANGES,
    PRIOR_FILE,
    SOURCES,
    added_formats,
    derive,
    own_or_borrowed,
    speedup,
)
from .timemodel import CONVERSION_TERMS, TERMS


def at_commit(commit: str, path: str) -> dict[str, object]:
    """The JSON of ``path`` (gzipped where it ends in ``.gz``) at ``commit`` of the checkout this
    runs in."""
    raw = subprocess.run(["git", "show", f"{commit}:{path}"], check=True, capture_output=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    return json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)


def prior_text(priors: dict[str, dict[str, object]], commit: str) -> str:
    """The JSON of :data:`PRIOR_FILE` for ``priors`` (per device class :func:`derive`'s
    tables) derived at ``commit``: one format per line, coefficients to 4 digits."""
    def coefficients(table_: dict[str, list[float]]) -> str:
        return ",\n".join(f"        {json.dumps(fmt)}: [{', '.join(f'{c:.4g}' for c in coef)}]"
                           for fmt, coef in table_.items())

    def variants(table_: dict[str, dict[str, float]]) -> str:
        return json.dumps({f: {v: float(f"{x:.4g}") for v, x in d.items()}
                           for f, d in table_.items()})

    def curve(points: list[list[float]]) -> str:
        return f"[{', '.join(f'[{b:.0f}, {m:.4g}]' for b, m in points)}]"

    classes = ",\n".join(
        f'    {json.dumps(kind)}: {{\n'
        f'      "kernel": {{\n{coefficients(prior["kernel"])}\n      }},\n'  # type: ignore
        f'      "conversion": {{\n{coefficients(prior["conversion"])}\n      }},\n'  # type: ignore
        f'      "x_miss": {curve(prior["x_miss"])},\n'  # type: ignore[arg-type]
        f'      "stream_miss": {curve(prior["stream_miss"])},\n'  # type: ignore[arg-type]
        f'      "variants": {variants(prior["variants"])}\n    }}'  # type: ignore[arg-type]
        for kind, prior in priors.items())
    return (f'{{\n  "commit": {json.dumps(commit)},\n  "terms": {json.dumps(list(TERMS))},\n'
            f'  "conversion_terms": {json.dumps(list(CONVERSION_TERMS))},\n'
            f'  "classes": {{\n{classes}\n  }}\n}}\n')


def fitted_at_commit(commit: str, path: str) -> dict[str, object]:
    """The full calibration of ``path`` at ``commit`` as JSON, the formats that count their own
    idle lanes (:func:`counts_own_lanes`) fitted again in this model form to the timings it
    keeps (:func:`clspmv.model.calibrate.refit_stored`): their ``idle lanes`` term is not the one
    they were fitted with. The other formats keep their stored coefficients: their terms are the
    same, and refitted with today's features they moved too (on the 32-core node's timings of
    the offsuite and cpu suites auto / fastest went from 0.955 to 0.932: ``hyb`` taken on dense
    rows at 0.61, ``reports/experiments/2026-11-30-idle-lanes``)."""
    data = at_commit(commit, path)
    kernel = data["kernel"]
    own = [f for f in kernel if counts_own_lanes(f)]  # type: ignore[union-attr]
    fitted = refit_stored(data, tuple(kernel))  # type: ignore[arg-type]
    # the sources' form differs from this one by the name of the idle lanes' term alone
    return {**data, "terms": list(TERMS),
            "kernel": {**kernel, **{f: fitted.kernel[f] for f in own}}}  # type: ignore[dict-item]


def counts_own_lanes(fmt: str) -> bool:
    """Whether library format ``fmt`` counts its idle lanes its own way
    (:meth:`~clspmv.formats.costs.FormatCosts.idle_lanes` overridden: ``sell``, ``pjds``)."""
    cls = FORMAT_CLASSES.get(fmt)
    return cls is not None and cls.idle_lanes.__func__ is not Format.idle_lanes.__func__


def main(commit: str) -> None:
    """Write :data:`PRIOR_FILE` from :data:`SOURCES` at ``commit``, the conversions of
    :data:`CONVERSION_SOURCES` at theirs (each read by :func:`fitted_at_commit`), the borrowed
    shapes of :func:`added_formats`, the variants' speed-ups of :data:`KERNEL_CHANGES`."""
    priors = {kind: derive(fitted_at_commit(commit, p) for p in paths)
              for kind, paths in SOURCES.items()}
    commits = [commit]
    for kind, (at, paths) in CONVERSION_SOURCES.items():
        priors[kind]["conversion"] = derive(fitted_at_commit(at, p)
                                            for p in paths)["conversion"]
        commits.append(at)
    for kind, prior in priors.items():
        for fmt in added_formats():
            cls = FORMAT_CLASSES[fmt]
            prior["kernel"][fmt] = own_or_borrowed(  # type: ignore[index]
                prior["kernel"], fmt,  # type: ignore[arg-type]
                lambda c, cls=cls: c.trial_family == cls.trial_family)
            prior["conversion"][fmt] = own_or_borrowed(  # type: ignore[index]
                prior["conversion"], fmt,  # type: ignore[arg-type]
                lambda c, cls=cls: c.conversion_kind == cls.conversion_kind)
        prior["variants"] = {}
        if kind in KERNEL_CHANGES:
            variant, files = KERNEL_CHANGES[kind]
            pairs = [(at_commit(*before), at_commit(*after)) for before, after in files]
            prior["variants"] = {f: {variant: speedup(pairs, f)}
                                 for f, cls in FORMAT_CLASSES.items()
                                 if variant in cls.kernel_variants}
            commits.append(files[-1][1][0])
    PRIOR_FILE.write_text(prior_text(priors, "+".join(commits)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "976aa3b")
