"""The model names formats through their classes only (issue 42): the formats the calibration's
probes time and the formats that take the measured ELL order come from the classes' hooks
(unchanged from when the model named them), the quick calibration's prior is a data file whose
formats a format registered at run time borrows from, and the registries of names that the
package, the command line and the report read are live."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_format_hooks import TOY, ToyCsr

import clspmv
from clspmv import cli_values
from clspmv.errors import ClspmvError
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, register, unregister
from clspmv.formats.csr import CsrScalar
from clspmv.model import order_probe, prior, prior_writer, probes, quick
from clspmv.model.features import features
from clspmv.model.timemodel import Calibration
from clspmv.report import selection


def test_the_probes_time_the_formats_they_timed_when_the_model_named_them() -> None:
    assert quick.probe_formats("cpu") == ("csr-scalar", "csr-blocks", "ellr", "pjds", "sell",
                                          "dia", "csr-merge")
    assert quick.probe_formats("gpu") == ("csr-scalar", "csr-vector", "ellr")
    assert probes.reference_format() == "csr-scalar"
    assert order_probe.probe_format() == "ellr"
    # ellr-t takes row_major with the default False: its layout ignores the measured order
    assert {n for n, c in FORMAT_CLASSES.items() if c.follows_ell_order()} == {"ell", "ellr",
                                                                             "hyb"}


def test_a_probe_takes_exactly_one_format(toy) -> None:
    """A format is a probe's by its own probed_in, not by inheritance; a probe of one format
    refuses several, naming them."""
    assert toy.probed_in == () and TOY not in quick.probe_formats("cpu")
    assert not toy.follows_ell_order()
    heir = type("Heir", (CsrScalar,), {"name": "heir-csr"})
    assert heir.probed_in == () and CsrScalar.probed_in == ("reference", "quick cpu", "quick gpu")
    rival = type("Rival", (ToyCsr,), {"name": "rival-csr", "probed_in": ("reference",)})
    register(rival)
    try:
        assert probes.probed_formats("reference") == ("csr-scalar", "rival-csr")
        with pytest.raises(ClspmvError, match=r"the 'reference' probe times one format, and the "
                                              r"registered formats name 2 \(csr-scalar, "
                                              r"rival-csr\) in their probed_in"):
            probes.reference_format()
    finally:
        unregister("rival-csr")
    with pytest.raises(ClspmvError, match="name none in their probed_in"):
        probes.probed_format("no such probe")


def test_a_format_without_a_prior_borrows_from_its_family(toy) -> None:
    """The toy (trial family csr, a copy conversion) takes per term the median of the CSR
    family's kernel shapes and of the copy conversions; the quick fit scales it as it scales
    the formats the prior names, and the calibration predicts it."""
    cpu = prior.prior_of("cpu")
    assert TOY not in cpu.kernels
    family = [f for f in cpu.kernels if FORMAT_CLASSES[f].trial_family == "csr"]
    copies = [f for f in cpu.conversions if FORMAT_CLASSES[f].conversion_kind == "copy"]
    assert set(family) == {"coo", "csr-scalar", "csr-vector", "csr-aligned", "csr-adaptive",
                           "csr-blocks", "csr-merge"}
    assert set(copies) == {"csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks"}
    borrowed = cpu.kernel_shape(TOY)
    assert borrowed == list(np.median([cpu.kernels[f] for f in family], axis=0))
    assert cpu.conversion(TOY) == list(np.median([cpu.conversions[f] for f in copies], axis=0))
    assert cpu.kernel_shape("ellr") is cpu.kernels["ellr"]  # its own

    dev = SimpleNamespace(name="Fake", driver_version="1", type="cpu", cache_bytes=1 << 25,
                          compute_units=2)
    mats = quick.probe_matrices(16, 2)
    feats = {k: features(v.astype(np.float64), 16) for k, v in mats.items()}
    launch, stream = 1e-6, 2e10
    truth = Calibration("Fake", "1", "0", "quick", dev.cache_bytes, launch, stream, stream,
                        x_miss=cpu.x_miss, stream_miss=cpu.stream_miss)
    truth.kernel = {f: list(np.asarray(cpu.kernel_shape(f))
                            * prior.format_scales(f, launch, stream, 2))
                    for f in quick.probe_formats("cpu")}
    truth.conversion = {f: cpu.conversion(f) for f in quick.probe_formats("cpu")}
    pairs = [(m, f) for m in feats for f in quick.probe_formats("cpu")]
    measured = quick.QuickProbes({p: truth.kernel_time(p[1], feats[p[0]]) for p in pairs},
                                 {p: truth.conversion_time(p[1], feats[p[0]]) for p in pairs},
                                 stream, 1, 0.0, [])
    cal = quick.fit_quick(measured, feats, dev)
    assert set(cal.kernel) == set(SINGLE_FORMATS) and TOY in cal.kernel
    own = cpu.kernels["csr-scalar"]
    for t, (mine, lent) in enumerate(zip(cal.kernel[TOY], borrowed, strict=True)):
        if own[t] > 0 and lent > 0:  # the same multiplier of the same term
            assert mine / lent == pytest.approx(cal.kernel["csr-scalar"][t] / own[t], rel=1e-12)
    assert cal.conversion[TOY] == pytest.approx(cpu.conversion(TOY))  # probes at the prior's
    for m in feats:
        assert 0 < cal.kernel_time(TOY, feats[m]) < 1 and 0 < cal.conversion_time(TOY, feats[m])


@pytest.fixture
def prior_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A prior file of the test's making in place of the shipped one (read afresh)."""
    path = tmp_path / "prior.json"
    monkeypatch.setattr(prior, "PRIOR_FILE", path)
    prior._shipped.cache_clear()
    yield path
    prior._shipped.cache_clear()


def test_the_prior_file_is_checked(prior_file: Path) -> None:
    shipped = json.loads((Path(prior.__file__).with_name("prior.json")).read_text())
    with pytest.raises(ClspmvError, match=r"prior .*prior.json cannot be read .*; reinstall "
                                          r"clspmv"):
        prior.prior_of("cpu")
    for damaged in ("{", b"\xff\xfe{}"):  # not JSON, not UTF-8
        if isinstance(damaged, bytes):
            prior_file.write_bytes(damaged)
        else:
            prior_file.write_text(damaged)
        with pytest.raises(ClspmvError, match=r"prior .*prior.json is damaged \(.*\); reinstall"):
            prior.prior_of("cpu")
    for cls, part in (("cpu", None), ("gpu", "kernel"), ("cpu", "conversion")):
        gone = json.loads(json.dumps(shipped))
        if part is None:
            del gone["classes"][cls]
        else:
            gone["classes"][cls][part] = {}
        prior_file.write_text(json.dumps(gone))
        what = f"{cls} kernel, {cls} conversion" if part is None else f"{cls} {part}"
        with pytest.raises(ClspmvError, match=f"is damaged \\(no {what} coefficients\\); "
                                              "reinstall clspmv"):
            prior.prior_of("gpu")
    short = json.loads(json.dumps(shipped))
    short["classes"]["gpu"]["kernel"]["coo"].pop()
    prior_file.write_text(json.dumps(short))
    with pytest.raises(ClspmvError, match=r"is damaged \(classes.gpu.kernel.coo: .* is not a "
                                          r"list of 11 values\)"):
        prior.prior_of("cpu")
    prior_file.write_text(json.dumps({**shipped, "terms": ["launch", "bytes"]}))
    with pytest.raises(ClspmvError, match=r"is of another model form \(terms \['launch', "
                                          r"'bytes'\], this clspmv's \['launch', 'bytes', "):
        prior.prior_of("cpu")
    prior_file.write_text(json.dumps(shipped))
    assert prior.prior_of("gpu").kernels == shipped["classes"]["gpu"]["kernel"]


def test_the_shipped_prior_is_what_its_writer_writes() -> None:
    text = prior.PRIOR_FILE.read_text()
    data = json.loads(text)
    assert prior_writer.prior_text(data["classes"], data["commit"]) == text


def test_registered_formats_are_seen_live(toy) -> None:
    assert TOY in clspmv.FORMATS and clspmv.FORMATS[-1] == TOY
    assert clspmv.FORMATS == tuple(FORMAT_CLASSES) and clspmv.FORMATS != (TOY,)
    assert TOY in selection.FORMATS
    assert cli_values.formats(f"csr-scalar,{TOY.upper()}") == ["csr-scalar", TOY]
    with pytest.raises(argparse.ArgumentTypeError, match=f"unknown format 'nope'; .*, {TOY}$"):
        cli_values.formats("nope")
    unregister(TOY)
    try:
        assert TOY not in clspmv.FORMATS and list(clspmv.FORMATS) == list(FORMAT_CLASSES)
        assert TOY not in selection.FORMATS
        with pytest.raises(argparse.ArgumentTypeError,
                           match=f"unknown format '{TOY}'; choose 'all', 'auto' or from coo, "):
            cli_values.formats(TOY)
        with pytest.raises(KeyError, match=f"no format '{TOY}' is registered; registered: coo, "):
            unregister(TOY)
    finally:
        register(ToyCsr)  # for the fixture to take back
