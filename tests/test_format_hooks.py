"""A format added in three places (issue 42): a class, a kernel file (here ``csr.cl``, reused)
and the registry. A toy format, a plain CSR kernel under a new name whose cost hooks answer, is
registered at run time: conversion, products, transposes, pickling, the model's prediction, the
trial and the bench take it without any other file changing. Also: the model holds no format's
name (its modules name formats through the classes only), and a format missing a cost hook the
model needs fails loudly, naming the format and the hook."""

from __future__ import annotations

import ast
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

import clspmv
from clspmv import bandwidth
from clspmv.bench import plan as bench_plan
from clspmv.bench import runner
from clspmv.bench.metadata import run_meta
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.formats import (
    FORMAT_CLASSES,
    SINGLE_FORMATS,
    MissingCostHook,
    register,
)
from clspmv.formats.base import INDEX_DTYPE, Layout, Triplets, scalar
from clspmv.formats.costs import CONVERSION_KINDS, check_cost_hooks, csr_bytes_read
from clspmv.formats.row_kernels import RowKernels
from clspmv.formats.strips import Strips
from clspmv.model import trial as trials
from clspmv.model.features import features
from clspmv.model.predict import Prediction, predict_features
from clspmv.model.select import select
from clspmv.model.timemodel import CONVERSION_RATE, TERMS, quick_default
from clspmv.precision import resolve

from oracle import assert_matches

TOY = "toy-csr"


class ToyCsr(RowKernels):
    """One work-item per row over the plain CSR arrays: the kernels of ``csr.cl`` (``csr_*``
    with T = 1), declared here alone."""

    name = TOY
    kernel_file = "csr.cl"
    family = "csr"  # the kernels' prefix
    trial_family = "csr"
    conversion_kind = "copy"

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout) -> ToyCsr:
        arrays = {"row_ptr": csr.indptr.astype(INDEX_DTYPE), "col": csr.indices.astype(INDEX_DTYPE),
                  "val": csr.data}
        return cls(csr.shape, csr.dtype, layout, arrays, threads_per_row=1)

    def defines(self) -> dict[str, object]:
        return self.row_loop_defines()

    def matrix_args(self) -> tuple[int, tuple[object, ...]]:
        b = self.buffers
        return self.shape[0], (scalar(self.shape[0]), b["row_ptr"], b["col"], b["val"])

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        rows = np.repeat(np.arange(self.shape[0]), np.diff(arrays["row_ptr"]))
        return rows, arrays["col"], arrays["val"]

    @classmethod
    def matrix_bytes(cls, f) -> int:  # type: ignore[no-untyped-def]
        return csr_bytes_read(f, f.slots_of(cls.name))


def _matrix(n: int = 500, seed: int = 7) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.02, random_state=rng, format="csr")
    A.setdiag(4.0)
    return A.tocsr()


def test_registered_format_is_every_generic_path(toy, device: clspmv.Device) -> None:
    assert TOY in SINGLE_FORMATS and Strips.block_formats[TOY] is toy
    A = _matrix()
    dtype = np.dtype(np.float64 if device.fp64 else np.float32)
    x = np.random.default_rng(1).standard_normal(A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, format=TOY, device=device, dtype=dtype)
    assert M.format == TOY and isinstance(M._fmt, toy)
    assert_matches(M.matvec(x), A, x, dtype)
    assert_matches(M.rmatvec(x, method="atomic"), A.T.tocsr(), x, dtype)
    assert_matches(M.rmatvec(x, method="transpose"), A.T.tocsr(), x, dtype)
    X = np.random.default_rng(2).standard_normal((A.shape[1], 3))
    for k in range(3):
        assert_matches(M.matmat(X)[:, k], A, X[:, k], dtype)
    N = pickle.loads(pickle.dumps(M))
    assert N.format == TOY and np.array_equal(N.matvec(x), M.matvec(x))
    assert (abs(N.to_scipy() - A.astype(dtype)) > 0).nnz == 0
    # a block of the composite format
    S = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       blocks=[[0, 200, TOY, {}], [200, 500, "csr-scalar", {}]])
    assert_matches(S.matvec(x), A, x, dtype)


def test_model_costs_the_registered_format_by_its_hooks(toy) -> None:
    """With csr-scalar's coefficients and no tail of long rows, the toy (one work-item per row
    over the same arrays, a copy conversion) is predicted exactly as csr-scalar; its terms are
    those of its hooks."""
    csr = canonical_csr(_matrix(2000), np.float64)
    f = features(csr, 8, compute_units=2)
    assert "csr-scalar" not in f.splits and TOY not in f.slots  # unpadded: its entries
    cal = quick_default("d", "v", "x", "cpu", tuple(SINGLE_FORMATS))
    assert cal.conversion[TOY] == cal.conversion["csr-scalar"]
    cal.kernel[TOY] = list(cal.kernel["csr-scalar"])
    preds = predict_features(f, cal)
    assert preds[TOY].refused is None
    assert preds[TOY].kernel_s == preds["csr-scalar"].kernel_s > 0
    assert preds[TOY].conversion_s == preds["csr-scalar"].conversion_s > 0
    terms = cal.terms(TOY, f)
    assert terms[TERMS.index("launch")] == 1 and terms[TERMS.index("work-items")] == f.rows
    streamed = toy.matrix_bytes(f) + (f.rows + f.cols) * 8
    assert terms[TERMS.index("bytes")] + terms[TERMS.index("cached bytes")] == streamed
    # in the trial it is one of the CSR family, of which two are tried: not csr-vector
    ranked = {name: Prediction(name, ms * 1e-3, 1e-3) for name, ms in
              ((TOY, 1.0), ("csr-scalar", 1.05), ("ellr", 1.1), ("csr-vector", 1.2),
               ("sell", 1.3))}
    assert trials.candidates(ranked, None) == [TOY, "csr-scalar", "ellr", "sell"]


def test_trial_and_selection_take_the_registered_format(toy, device: clspmv.Device) -> None:
    csr = canonical_csr(_matrix(3000), np.float32)
    precision = resolve(np.float32, np.float32)
    done = trials.run(csr, device, precision, [TOY, "csr-scalar"])
    assert set(done.kernel_ms) == {TOY, "csr-scalar"} and done.winner in done.kernel_ms
    assert done.converted.name == done.winner
    cal = fixture_calibration(device)  # the toy gets the quick default's coefficients
    chosen = select(csr, device, calibration_=cal, trial=False)
    assert chosen.predictions[TOY].kernel_s is not None and TOY in str(chosen)


def test_bench_runs_the_registered_format(toy, device: clspmv.Device, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)  # as test_bench's
    todo = bench_plan.Plan(sources=resolve_all(["gen:poisson2d:k=30"], progress=False),
                           devices=[device], formats=[TOY, "csr-scalar"], baselines=[],
                           repeat=2, warmup=1, progress=False, transpose=True)
    results = runner.Results(tmp_path / "bench", run_meta(todo, "test"))
    runner.Runner(todo, results).run()
    records = {(r.format, r.operation): r for r in results.records}
    assert records[TOY, "spmv"].status == "ok", records[TOY, "spmv"].reason
    assert records[TOY, "spmv"].kernel_ms > 0
    transposes = [r for (fmt, op), r in records.items() if fmt == TOY and op != "spmv"]
    assert transposes and all(r.status in ("ok", "skipped") for r in transposes), [
        (r.operation, r.status, r.reason) for r in transposes]


def test_a_format_without_a_needed_hook_is_refused_naming_it() -> None:
    for name in SINGLE_FORMATS:  # every format of the library answers
        check_cost_hooks(FORMAT_CLASSES[name])
    assert set(CONVERSION_RATE) == set(CONVERSION_KINDS)  # the quick default costs every kind
    members = {"kernel_file": "csr.cl", "family": "csr", "defines": ToyCsr.defines,
               "matrix_args": ToyCsr.matrix_args, "to_coo": ToyCsr.to_coo,
               "from_csr": ToyCsr.from_csr}
    bare = type("Bare", (RowKernels,), {"name": "bare", **members})
    with pytest.raises(MissingCostHook, match=r"format 'bare' \(Bare\) declares no "
                                              r"trial_family: its family for the trial"):
        register(bare)
    family = type("Family", (RowKernels,), {"name": "bare", "trial_family": "csr", **members})
    with pytest.raises(MissingCostHook, match=r"format 'bare' \(Family\) declares no "
                                              r"conversion_kind: how its conversion costs"):
        register(family)
    kind = type("Kind", (family,), {"conversion_kind": "copy"})
    with pytest.raises(MissingCostHook, match=r"declares no matrix_bytes\(\): the bytes of the "
                                              r"matrix its product reads"):
        register(kind)
    padded = type("Padded", (ToyCsr,), {"name": "bare", "padded": True})
    with pytest.raises(MissingCostHook, match=r"declares no slots\(\): the slots it stores"):
        register(padded)
    odd = type("Odd", (ToyCsr,), {"name": "bare", "conversion_kind": "free"})
    with pytest.raises(ValueError, match="declares conversion_kind 'free'; choose one of copy"):
        register(odd)
    assert "bare" not in FORMAT_CLASSES
    with pytest.raises(ValueError, match="format 'csr-scalar' is already registered"):
        register(type("Other", (ToyCsr,), {"name": "csr-scalar"}))
    assert FORMAT_CLASSES["csr-scalar"].__name__ == "CsrScalar"
    with pytest.raises(TypeError, match="register takes a subclass of clspmv.formats.Format"):
        register(object)  # type: ignore[arg-type]
    from clspmv.format_choice import CHOSEN
    from clspmv.formats import RESERVED_NAMES

    assert set(CHOSEN) == RESERVED_NAMES  # what format= chooses among, the selection's names
    for reserved in sorted(RESERVED_NAMES):
        with pytest.raises(ValueError, match=f"format name '{reserved}' is reserved: "
                                             f"format='{reserved}' asks the selection to choose"):
            register(type("Chooser", (ToyCsr,), {"name": reserved}))
        assert reserved not in FORMAT_CLASSES


def _string_constants(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of ``tree`` that are not docstrings (a string standing alone as a
    statement: a module's, class's, function's or attribute's documentation)."""
    docs = {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docs:
            yield node


def test_docstrings_are_not_string_constants() -> None:
    source = '"""Module."""\nX = "dia"\n"""X\'s doc."""\ndef f():\n    """F."""\n    return "ell"\n'
    assert [c.value for c in _string_constants(ast.parse(source))] == ["dia", "ell"]


MODEL = Path(clspmv.__file__).parent / "model"


@pytest.mark.parametrize("path", sorted(MODEL.glob("*.py")), ids=lambda p: p.name)
def test_the_model_names_no_format(path: Path) -> None:
    names = set(FORMAT_CLASSES)
    found = [f"{path.name}:{c.lineno}: {c.value!r}"
             for c in _string_constants(ast.parse(path.read_text())) if c.value in names]
    assert not found, "format names as string literals in clspmv/model: " + "; ".join(found)
