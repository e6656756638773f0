"""format="auto"'s trial of its likeliest formats on the device (clspmv.model.trial)."""

from __future__ import annotations

import importlib
import pickle
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

import clspmv
from clspmv.bench.generators import generate
from clspmv.formats import Format, convert
from clspmv.formats.strips import Strips
from clspmv.matrix import canonical_csr
from clspmv.model import Prediction, select
from clspmv.model.strips import StripsPlan
from clspmv.precision import resolve

from oracle import assert_matches

trials = importlib.import_module("clspmv.model.trial")
store = importlib.import_module("clspmv.model.store")
probes = importlib.import_module("clspmv.model.probes")
strips_trial = importlib.import_module("clspmv.model.strips_trial")
select_module = importlib.import_module("clspmv.model.select")  # the package exports select()

POISSON = sp.diags([-1.0, -1.0, 4.0, -1.0, -1.0], [-40, -1, 0, 1, 40], shape=(1600, 1600),
                   format="csr")


def predictions(**kernel_ms: float | None) -> dict[str, Prediction]:
    """Predictions of the given kernel ms (None: refused), each converted in 1 ms."""
    return {f.replace("_", "-"): Prediction(f.replace("_", "-"), None, None, "refuses")
            if ms is None else Prediction(f.replace("_", "-"), ms * 1e-3, 1e-3)
            for f, ms in kernel_ms.items()}


def test_candidates_are_the_best_three_and_each_familys_best_in_the_band() -> None:
    preds = predictions(csr_blocks=1.0, csr_merge=1.05, csr_scalar=1.1, coo=1.2, ellr=1.9,
                        ell=1.95, sell=2.1, dia=None, pjds=1.99)
    # three CSR kernels, then ELL's best (1.9 <= 2.0) and pjds (1.99); sell, a family of its
    # own, is beyond the band (2.1)
    assert trials.candidates(preds, None) == ["csr-blocks", "csr-merge", "csr-scalar", "ellr",
                                              "pjds"]
    both = predictions(csr_blocks=1.0, csr_merge=1.05, csr_scalar=1.1, sell=1.5, pjds=1.4)
    assert trials.candidates(both, None) == ["csr-blocks", "csr-merge", "csr-scalar", "pjds",
                                             "sell"]
    far = predictions(csr_blocks=1.0, csr_merge=1.05, csr_scalar=1.1, ellr=2.1, sell=None)
    assert trials.candidates(far, None) == ["csr-blocks", "csr-merge", "csr-scalar"]
    # with expected products the ranking counts the conversions: 1 ms each, so no change here
    assert trials.candidates(preds, 10) == trials.candidates(preds, None)
    assert trials.candidates(predictions(ell=None), None) == []
    # the CSR family's two best: csr-blocks, fourth overall, behind csr-scalar and both sliced
    # formats, is tried; csr-merge, the family's third, is not
    csr = predictions(csr_scalar=1.0, pjds=1.1, sell=1.2, csr_blocks=1.3, csr_merge=1.4,
                      ellr=3.0)
    assert trials.candidates(csr, None) == ["csr-scalar", "pjds", "sell", "csr-blocks"]
    assert trials.FAMILY_TRIES == {"csr": 2}


def test_worth_weighs_the_trial_against_the_expected_products() -> None:
    preds = predictions(csr_blocks=1.0, ellr=1.2)
    names = ["csr-blocks", "ellr"]
    cost = trials.predicted_seconds(preds, names, "cpu")  # 2 conversions + their products
    # 20 and 17 rounds (until each one's products reach STEADY_S), each an untimed and a timed
    # product, after one warm-up
    assert cost == pytest.approx(2e-3 + 41 * 1e-3 + 35 * 1.2e-3)
    needed = cost / (trials.SHARE * 1e-3)  # products of the best (1 ms) that make it a share
    assert trials.worth(preds, names, int(needed) + 1, "cpu")
    assert not trials.worth(preds, names, int(needed) - 1, "cpu")
    # a GPU's rounds are as many here (fewer than MAX_COVERED_ROUNDS)
    assert trials.predicted_seconds(preds, names, "gpu") == pytest.approx(cost)


def test_planned_rounds_follow_kernel_times_rule() -> None:
    """Each format's rounds until its own products add up to STEADY_S: REPEATS at least,
    MAX_ROUNDS at most on a CPU, MAX_COVERED_ROUNDS on a GPU."""
    seconds = {"fast": 1e-5, "mid": 3e-4, "slow": 0.05}
    assert probes.planned_rounds(seconds, 5, "cpu") == {"fast": 200, "mid": 67, "slow": 5}
    # a GPU's products timed behind the spin: MAX_COVERED_ROUNDS at most
    assert probes.planned_rounds(seconds, 5, "gpu") == {"fast": 50, "mid": 50, "slow": 5}


@pytest.fixture
def stored(device, tmp_path, monkeypatch):
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    store.forget()
    store.save(fixture_calibration(device), device)
    yield
    store.forget()


def test_a_trial_takes_the_fastest_measured_and_keeps_it_on_the_device(device, stored,
                                                                        monkeypatch) -> None:
    csr = canonical_csr(POISSON)
    names = trials.candidates(select(csr, device, trial=False).predictions, None)
    slowest_predicted = names[-1]

    def measured(formats, x, y, repeat):  # the last candidate is the fastest on this "device"
        assert repeat == trials.REPEATS and set(formats) == set(names)
        return {n: (0.5e-3 if n == slowest_predicted else 1e-3) for n in formats}

    monkeypatch.setattr(trials, "kernel_times", measured)
    sel = select(csr, device, trial=True)
    assert sel.format == slowest_predicted and set(sel.trial_ms) == set(names)
    assert sel.trial_ms[slowest_predicted] == pytest.approx(0.5)
    assert f"{len(names)} formats tried" in sel.why and sel.trial_s > 0
    assert isinstance(sel.converted, Format) and sel.converted.name == slowest_predicted


def test_a_near_tie_keeps_the_models_choice(device, stored, monkeypatch) -> None:
    csr = canonical_csr(POISSON)
    names = trials.candidates(select(csr, device, trial=False).predictions, None)
    near = 1 / (1 + trials.MARGIN) + 0.01  # faster than the model's choice, within the margin
    monkeypatch.setattr(trials, "kernel_times", lambda formats, x, y, repeat: {
        n: (near if n == names[-1] else 1.0) * 1e-3 for n in formats})
    sel = select(csr, device, trial=True)
    assert sel.format == names[0] and min(sel.trial_ms, key=sel.trial_ms.get) == names[-1]


def test_from_scipy_with_a_trial_uses_the_winner_without_converting_again(device, stored,
                                                                          monkeypatch) -> None:
    conversions = []
    real = clspmv.matrix.convert
    monkeypatch.setattr(clspmv.matrix, "convert", lambda *a, **k: conversions.append(a[1])
                        or real(*a, **k))
    M = clspmv.DeviceMatrix.from_scipy(POISSON, device=device, trial=True)
    sel = M.selection
    fastest = min(sel.trial_ms, key=sel.trial_ms.get)
    assert M.format == sel.format and (M.format == fastest or sel.trial_ms[fastest]
                                       * (1 + trials.MARGIN) > sel.trial_ms[M.format])
    assert sel.converted is None and conversions == []  # the trial's own matrix, let go of
    # converted from from_scipy's own copy: its buffers are its arrays where the device shares
    # host memory (clspmv.host_buffers.matrix_buffer)
    flags = [b.get_info(cl.mem_info.FLAGS) for k, b in M._fmt.buffers.items()
             if k in M._fmt._specs and b.size > 8]  # the matrix's arrays, not scratch
    assert all(bool(f & cl.mem_flags.USE_HOST_PTR) == device.shares_host_pointer for f in flags)
    x = np.linspace(-1, 1, 1600)
    assert_matches(M @ x, POISSON, x, np.dtype(np.float64))
    assert_matches(M.T @ x, POISSON.T.tocsr(), x, np.dtype(np.float64))


def test_a_trial_runs_when_the_expected_products_pay_for_it(device, stored) -> None:
    csr = canonical_csr(POISSON)
    assert select(csr, device).trial_ms is None  # one product: the model alone
    assert select(csr, device, expected_products=10).trial_ms is None
    assert select(csr, device, expected_products=10**9).trial_ms
    assert select(csr, device, expected_products=10**9, trial=False).trial_ms is None
    # a block with compact columns is laid out with its map: the trial's matrices lack it
    M = clspmv.DeviceMatrix.from_scipy(POISSON[:, :800], device=device,
                                       column_map=np.arange(800) * 2, expected_products=10**9)
    assert M.selection.trial_ms is None


def test_a_trial_leaves_out_what_the_device_cannot_hold(device, stored, monkeypatch) -> None:
    """A candidate whose upload fails is left out; with none left the model's choice stands,
    the reason said."""
    csr = canonical_csr(POISSON)
    names = trials.candidates(select(csr, device, trial=False).predictions, None)
    real = trials.convert
    fits = {names[0]}

    def convert(csr, name, *args, **kw):  # a format whose upload finds no room
        fmt = real(csr, name, *args, **kw)
        if name not in fits:
            def full(dev):
                raise clspmv.DeviceError(f"no room for {name}")
            fmt.upload = full
        return fmt

    monkeypatch.setattr(trials, "convert", convert)
    sel = select(csr, device, trial=True)
    assert sel.trial_ms is not None and list(sel.trial_ms) == [names[0]]
    fits.clear()
    sel = select(csr, device, trial=True)
    assert sel.trial_ms is None and sel.format == select(csr, device).format
    assert "the trial failed (no format of the trial" in sel.why


def test_formats_refusing_in_a_trial_are_skipped(device) -> None:
    csr = canonical_csr(sp.random(2000, 2000, density=0.01, format="csr", random_state=3))
    precision = resolve(np.float64, np.float64)
    done = trials.run(csr, device, precision, ["dia", "csr-scalar"])  # dia pads absurdly
    assert set(done.kernel_ms) == {"csr-scalar"} and done.winner == "csr-scalar"
    with pytest.raises(ValueError, match=r"no format of the trial \(dia\) accepts the matrix"):
        trials.run(csr, device, precision, ["dia"])


STACKED = "gen:stacked:k=20,scale=13,edges=8"
CUT = 7680  # a strip boundary inside the stencil's 8000 rows


@pytest.fixture
def planned(monkeypatch):
    """A worthwhile strips plan (ellr above, csr-vector below) for :data:`STACKED`, as if the
    model had found it; returns (matrix, plan)."""
    A = canonical_csr(generate(STACKED))
    plan = StripsPlan(512, ((0, CUT, "ellr"), (CUT, A.shape[0], "csr-vector")), 0.5,
                      "csr-vector", 1.0, 0.0)
    monkeypatch.setattr(select_module, "plan_for_device", lambda csr, dev, cal: plan)
    return A, plan


def fake_times(block_fastest: dict[int, str], strips_s: float, single_s: float):
    """kernel_times of a "device" where each block (by its rows) measures its format of
    ``block_fastest`` fastest (0.5 ms, the others 1 ms), the whole matrix's candidates 2 ms
    and, timed side by side, the joined strips ``strips_s`` and the single winner ``single_s``."""
    def measured(formats, x, y, repeat):
        assert repeat == trials.REPEATS
        if "strips" in formats:
            return {n: strips_s if n == "strips" else single_s for n in formats}
        rows = next(iter(formats.values())).shape[0]
        return {n: 0.5e-3 if block_fastest.get(rows) == n else (1e-3 if rows in block_fastest
                                                                 else 2e-3) for n in formats}
    return measured


@pytest.mark.parametrize("dtype", ["float64", "mixed"])
def test_a_strips_trial_joins_each_blocks_fastest_format(device, stored, planned,
                                                         monkeypatch, dtype: str) -> None:
    """Each block takes its fastest measured candidate, the joined blocks beat the single
    format side by side, and from_scipy keeps the trial's joined matrix (no second conversion),
    in the precision asked for; its products and transposed products match scipy, and a copy
    and a pickled one (rebuilt from its parameters) are the same matrix."""
    A, plan = planned
    if dtype == "mixed":
        A = A.astype(np.float32)
    cal = store.calibration(device)
    blocks = strips_trial.block_candidates(A, device, cal, plan, None)
    assert [b.rows for b in blocks] == [(0, CUT), (CUT, A.shape[0])]
    assert [b.names[0] for b in blocks] == ["ellr", "csr-vector"]  # the plan's first
    other = blocks[0].names[-1]  # a candidate the model ranked behind the plan's ellr
    assert other != "ellr"
    fastest = {CUT: other, A.shape[0] - CUT: "csr-vector"}
    monkeypatch.setattr(trials, "kernel_times", fake_times(fastest, 1e-3, 2e-3))
    monkeypatch.setattr(strips_trial, "kernel_times", fake_times(fastest, 1e-3, 2e-3))
    conversions = []
    real = clspmv.matrix.convert
    monkeypatch.setattr(clspmv.matrix, "convert", lambda *a, **k: conversions.append(a[1])
                        or real(*a, **k))
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, trial=True, dtype=dtype,
                                       expected_products=select_module.STRIPS_MIN_PRODUCTS)
    sel = M.selection
    assert M.format == "strips" and conversions == [] and M.precision == dtype
    assert [b[2] for b in sel.strips.blocks] == [other, "csr-vector"]
    assert [b[2] for b in M.params["blocks"]] == [other, "csr-vector"]
    assert sel.trial_ms["strips"] == pytest.approx(1.0)
    assert "row strips measured 1 ms against the fastest single format tried" in sel.why
    assert "(the model's plan: rows 0:7680 ellr" in sel.why
    value = np.dtype(np.float32 if dtype == "mixed" else np.float64)
    x = np.linspace(-1, 1, A.shape[1]).astype(value)
    for same in (M, M.copy(), pickle.loads(pickle.dumps(M))):
        assert same.params == M.params and same.precision == dtype
        assert_matches(same @ x, A, x, value)
        assert_matches(same.T @ x, A.T.tocsr(), x, value)
    assert_matches(M.to_scipy() @ x, A, x, value)


def test_a_strips_trial_falls_back_when_a_block_fits_nowhere(device, stored, planned,
                                                             monkeypatch) -> None:
    """A block whose candidates all fail: no strips matrix, and the single formats' trial
    decides (it runs once)."""
    A, _ = planned
    real = trials.run
    whole = []

    def run(csr, device, precision, names, owned=False):
        if csr.shape[0] == CUT:
            raise ValueError("no format of the trial fits")
        whole.append(names)
        return real(csr, device, precision, names, owned)

    monkeypatch.setattr(trials, "run", run)
    monkeypatch.setattr(trials, "kernel_times", fake_times({}, 1e-3, 2e-3))
    sel = select(A, device, expected_products=select_module.STRIPS_MIN_PRODUCTS, trial=True)
    assert sel.format != "strips" and "strips" not in sel.trial_ms and len(whole) == 1
    assert "formats tried" in sel.why


@pytest.mark.parametrize("gain, single_s, strips_kept", [
    (0.5, 0.99e-3, True), (0.5, 0.9e-3, False), (0.07, 1.06e-3, True), (0.07, 1.02e-3, False)])
def test_a_strips_trial_overturns_the_models_choice_only_on_a_clear_gain(
        device, stored, planned, monkeypatch, single_s: float, strips_kept: bool,
        gain: float) -> None:
    """The model's choice (strips for a plan predicted AUTO_MARGIN faster, else the single
    format) stands unless the other measured MARGIN faster (joined blocks: 1 ms)."""
    A, plan = planned
    monkeypatch.setattr(select_module, "plan_for_device", lambda csr, dev, cal: replace(
        plan, predicted_s=1.0 - gain))
    times = fake_times({}, 1e-3, single_s)
    monkeypatch.setattr(trials, "kernel_times", times)
    monkeypatch.setattr(strips_trial, "kernel_times", times)
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, trial=True,
                                       expected_products=select_module.STRIPS_MIN_PRODUCTS)
    single = min((k for k in M.selection.trial_ms if k != "strips"),
                 key=M.selection.trial_ms.get)
    assert M.format == ("strips" if strips_kept else single)
    assert M.selection.trial_ms["strips"] == pytest.approx(1.0)
    assert M.selection.trial_ms[single] == pytest.approx(single_s * 1e3)
    x = np.linspace(-1, 1, A.shape[1])
    assert_matches(M @ x, A, x, np.dtype(np.float64))


def test_a_strips_trial_runs_when_the_expected_products_pay_for_it(device, stored, planned,
                                                                  monkeypatch) -> None:
    A, plan = planned
    assert select(A, device, strips=True).trial_ms is None  # one product: the model's plan
    few = select_module.STRIPS_MIN_PRODUCTS
    blocks = strips_trial.block_candidates(A, device, store.calibration(device), plan, few)
    preds = select(A, device, trial=False).predictions
    cost = strips_trial.predicted_seconds(preds, trials.candidates(preds, few), blocks,
                                          device.type)
    paid = cost / (trials.SHARE * few)  # the plan's product time that makes it a share
    for scale, tried in ((2.0, True), (0.5, False)):
        monkeypatch.setattr(select_module, "plan_for_device", lambda csr, dev, cal, s=scale:
                            replace(plan, predicted_s=s * paid, single_s=2 * s * paid))
        sel = select(A, device, expected_products=few)
        assert (sel.trial_ms is not None) is tried and sel.strips is not None
        assert sel.format == "strips" or tried


def test_of_uploaded_reads_its_plan_off_the_blocks(device) -> None:
    """The plan comes from the uploaded blocks (another work-group size recorded); blocks not
    uploaded, or unlike, are refused."""
    A = canonical_csr(generate(STACKED))
    precision = resolve(np.float64, np.float64)
    layout = Strips.layout_for(device)
    narrow = replace(layout, work_group_size=layout.work_group_size // 2)
    top = convert(A[:CUT], "ellr", narrow, precision)
    bottom = convert(A[CUT:], "csr-vector", layout, precision)
    top.upload(device)
    with pytest.raises(ValueError, match="must all be uploaded"):
        Strips.of_uploaded(A.shape, layout, [(0, CUT, top), (CUT, A.shape[0], bottom)])
    single = convert(A[CUT:], "csr-vector", layout, resolve(np.float32, np.float32))
    single.upload(device)
    with pytest.raises(ValueError, match="share one device, value type and sum type"):
        Strips.of_uploaded(A.shape, layout, [(0, CUT, top), (CUT, A.shape[0], single)])
    bottom.upload(device)
    joined = Strips.of_uploaded(A.shape, layout, [(0, CUT, top), (CUT, A.shape[0], bottom)])
    assert joined.plan == [(0, CUT, "ellr", {"work_group_size": narrow.work_group_size}),
                           (CUT, A.shape[0], "csr-vector", {})]
    M = clspmv.DeviceMatrix(joined, device)
    x = np.linspace(-1, 1, A.shape[1])
    assert_matches(M @ x, A, x, np.dtype(np.float64))
