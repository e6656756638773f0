"""``mpiexec -n N clspmv bench --distributed [--modes vector,overlap,task] MATRIX...``: the
distributed product of :class:`clspmv.distributed.DistributedMatrix` per mode, against the same
code on one rank and against the paper's model (pjds-multigpu.txt, sections 2.2 and 3); above
400 lines because the operation, its fields and its measurement are one thing.

Every rank runs ``clspmv bench`` with the same arguments; the runner's loop is the same on every
rank (same matrices, value types, one device each), the per-format loop and the baselines are
off (``--distributed`` measures only this operation), and this operation's
:meth:`Distributed.run_device` is collective. Only rank 0 writes results.json and the report
(:func:`clspmv.bench.mpirun.results_for`); the others keep nothing.

Per matrix, value type and mode, one record (``operation`` ``distributed``, ``method``
``"<mode>, <N> ranks"``, ``format`` ``"<local>/<non-local>"``):

* the time of one product: every rank waits at a barrier, runs ``D.matvec`` on pyopencl vectors
  (x and y stay on the device; only the exchanged values are staged) and waits for its queue;
  a product takes the slowest rank's time; ``kernel_ms`` is the median over the repeats, min
  and max beside it. The modes take turns (:func:`measure_modes`): a warm-up of every mode for
  at least :data:`WARM_SECONDS`, then the repeats in :data:`ROUNDS` rounds over the modes, so
  that a slow spell of the node falls on every mode alike;
* the time per product back to back (``stream_ms``): every rank waits at a barrier, runs
  ``repeat`` products without waiting for its queue between them, then waits for it; the slowest
  rank's time / ``repeat``, median of :data:`STREAM_ROUNDS` rounds (over the modes in turn):
  what a loop of products costs, where the host enqueues the next product while the device
  computes (the 1-rank reference's figure likewise; the time of one product above also counts
  the host's enqueueing and its wait for the queue, which one product cannot hide);
* its parts from :attr:`DistributedMatrix.timings` (each rank's median over the repeats, the
  largest over the ranks): local and non-local kernels, host staging (the copies of the product
  recorded below: the timed ones run without profiling, :attr:`DistributedMatrix.time_copies`),
  gathering the send buffer, the exchange (start to completion);
* the bytes each rank sends and receives per product;
* ``timeline``: the steps of one product after the timed ones (the timed ones record none:
  :attr:`DistributedMatrix.record_timeline`), per rank (host steps and OpenCL commands: first
  start, last stop, busy time and count per step, ms since the rank's product began;
  :meth:`clspmv.distributed.timeline.Timeline.summary`), where each microsecond went;
* the 1-rank reference: **in the same run**, rank 0 alone on a sub-communicator of size 1 (the
  same DistributedMatrix code, the whole matrix local, the same device, format, mode, x and
  repeats) while the other ranks wait without spinning; ``speedup_over_one`` = its time / the
  N-rank time, ``efficiency`` = speedup / N. Without mpiexec (one rank) the run is its own
  reference: efficiency 1;
* the model's prediction (:mod:`clspmv.distributed.model`): the device bandwidth is the one the
  1-rank reference's local kernel reached (:func:`~clspmv.distributed.model.effective_bandwidth`;
  its median over the modes),
  staging bandwidth, network bandwidth and latency are measured by
  :func:`~clspmv.distributed.model.probe` in the same run, the sharing of a node
  (``sharing``: each rank's local kernel at once over alone,
  :func:`~clspmv.distributed.model.probe_sharing`); ``predicted_ms`` per mode for the N ranks,
  the relative ``model_error_pct`` and the predicted efficiency.

Each mode's last product (pyopencl vectors, as timed) is checked against scipy (the whole
y gathered on rank 0) under the per-row bound of :mod:`clspmv.bench.reference`.
``--max-seconds`` is refused with ``--distributed``: the ranks would decide on their own clocks
when to stop, and hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..device import Device, events_ns
from .errors import classify, first_lines
from .mpirun import world
from .operation import Case, Context, Operation, check, set_times
from .records import Record, device_label
from .reference import Problem
from .timing import summarize

OPERATION = "distributed"
"""The ``operation`` of the distributed records."""

PARTS = ("local", "non_local", "staging", "gather", "communication")
"""The parts of a product (keys of :attr:`DistributedMatrix.timings`), each ``<part>_ms``."""

REFERENCE_SAME_RUN = "rank 0 alone on a size-1 sub-communicator, in the same run"
REFERENCE_ITSELF = "this run (one rank)"

POLL_SECONDS = 0.005
"""How often a rank waiting for rank 0's reference looks whether it is done."""

STREAM_ROUNDS = 3
"""Rounds of products back to back (each ``repeat`` products); ``stream_ms`` is their median."""

ROUNDS = 5
"""Rounds over the modes of the timed products: each mode's ``repeat`` products are spread over
this many, between the other modes' (measured one mode after the other, 10 products each, one
configuration spread by up to 1.6x on 4 H200s: reports/2026-11-28-h200x4-host-costs)."""

WARM_SECONDS = 0.2
"""Seconds of products (every mode in turn) before the timed ones, at least: GPU and CPU clocks
take tens of milliseconds to rise from idle."""


# -- measuring ------------------------------------------------------------------------------------
@dataclass
class Measured:
    """One mode on one communicator, as rank 0 sees it after gathering every rank's samples."""

    product: np.ndarray
    """Seconds of each timed product: the slowest rank's."""
    parts: dict[str, float]
    """Seconds of each part: per rank the median over the products, then the largest rank's."""
    imbalance: float
    """Largest rank's kernel seconds (local + non-local) / the mean over the ranks."""
    y: np.ndarray
    """The last product (whole y), to check."""
    timeline: list[list[dict[str, Any]]]
    """One product's timeline per rank, after the timed ones (:meth:`.Timeline.summary`)."""
    stream: float
    """Seconds per product back to back: the slowest rank's, median over the rounds."""

    @property
    def median(self) -> float:
        return float(np.median(self.product))


def measure_modes(D: Any, problem: Problem, modes: Sequence[str], warmup: int, repeat: int
                  ) -> dict[str, Measured | None]:
    """Check and time ``D`` in each of ``modes`` (collective over ``D.comm``); rank 0 gets a
    :class:`Measured` per mode, the others None. The modes take turns: a warm-up of every mode
    (at least ``warmup`` products each, until rank 0 has spent :data:`WARM_SECONDS`), then
    :data:`ROUNDS` rounds of timed products, then the back-to-back rounds, each round visiting
    every mode: what the node does slowly for a while falls on every mode alike."""
    import pyopencl.array as cl_array

    comm, queue = D.comm, D.device.queue
    c0, c1 = D.col_range  # renumbered by a graph partition: this rank's rows' own x entries
    x_local = problem.x[c0:c1] if D.permutation is None else problem.x[D.global_rows]
    x_dev = cl_array.to_device(queue, np.ascontiguousarray(x_local, D.dtype))
    y_dev = cl_array.empty(queue, D.local_shape[0], D.dtype)

    def product(mode: str) -> None:
        D.mode = mode
        D.matvec(x_dev, y_dev)
        queue.finish()

    started, rounds = time.perf_counter(), 0
    while True:  # rank 0 decides when the warm-up ends: every rank runs as many products
        for mode in modes:
            product(mode)
        rounds += 1
        if not comm.bcast(rounds < warmup or time.perf_counter() - started < WARM_SECONDS):
            break
    samples = {mode: np.empty((repeat, 1 + len(PARTS))) for mode in modes}
    for first in range(min(ROUNDS, repeat)):
        for mode in modes:
            product(mode)  # the first after a change of mode, untimed
            for i in range(first, repeat, ROUNDS):
                comm.Barrier()
                start = time.perf_counter()
                D.matvec(x_dev, y_dev)
                queue.finish()
                samples[mode][i, 0] = time.perf_counter() - start
                parts = D.timings
                samples[mode][i, 1:] = [parts[p] for p in PARTS]
    timelines = {}
    for mode in modes:
        D.mode = mode
        D.record_timeline = True  # one product more, its steps recorded (records cost time)
        comm.Barrier()
        D.matvec(x_dev, y_dev)
        queue.finish()
        D.record_timeline = False
        # the timed products' copies ran unprofiled (D.time_copies off, as users run them):
        # their staging time is this recorded product's
        samples[mode][:, 1 + PARTS.index("staging")] = D.timings["staging"]
        timelines[mode] = comm.gather(D.last_timeline.summary(), root=0)
    streams: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(STREAM_ROUNDS):
        for mode in modes:
            D.mode = mode
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(repeat):
                D.matvec(x_dev, y_dev)
            queue.finish()
            streams[mode].append((time.perf_counter() - start) / repeat)
    return {mode: _gathered(D, mode, product, y_dev, samples[mode], timelines[mode],
                            streams[mode]) for mode in modes}


def _gathered(D: Any, mode: str, product: Callable[[str], None], y_dev: Any,
              samples: np.ndarray, timeline: Any, stream: list[float]) -> Measured | None:
    """One more product in ``mode`` (its y is checked) and every rank's figures of ``mode``
    gathered (collective): rank 0's :class:`Measured`, None elsewhere."""
    comm, queue = D.comm, D.device.queue
    product(mode)
    gathered = comm.gather(samples, root=0)
    streams = comm.gather(stream, root=0)
    blocks = comm.gather(y_dev.get(queue), root=0)
    rows = comm.gather(D.global_rows, root=0)
    if comm.rank != 0:
        return None
    y = np.empty(sum(block.size for block in blocks), D.dtype)
    y[np.concatenate(rows)] = np.concatenate(blocks)  # in the user's order
    every = np.stack(gathered)  # ranks x repeats x (product, parts...)
    medians = np.median(every, axis=1)  # ranks x (product, parts...)
    kernels = medians[:, 1] + medians[:, 2]
    mean = float(kernels.mean())
    return Measured(product=every[:, :, 0].max(axis=0),
                    parts={p: float(medians[:, 1 + i].max()) for i, p in enumerate(PARTS)},
                    imbalance=float(kernels.max()) / mean if mean > 0 else 1.0, y=y,
                    timeline=timeline,
                    stream=float(np.median(np.max(streams, axis=0))))


def measure_all(comm: Any, problem: Problem, device: Device, conf: dict[str, Any], dtype: Any,
                warmup: int, repeat: int) -> tuple[Any, dict[str, Measured | None]]:
    """Build the DistributedMatrix over ``comm`` and measure every mode of ``conf``; (the matrix,
    mode -> :class:`Measured` on rank 0). The caller closes the matrix."""
    from ..distributed import DistributedMatrix

    formats = tuple(conf["formats"]) if conf.get("formats") else None
    D = DistributedMatrix.from_scipy(problem.csr, comm, format=formats, mode="vector",
                                     device=device, dtype=dtype,
                                     partition=conf.get("partition", "auto"))
    return D, measure_modes(D, problem, conf["modes"], warmup, repeat)


def one_rank_reference(problem: Problem, device: Device, conf: dict[str, Any], dtype: Any,
                       warmup: int, repeat: int) -> dict[str, Any]:
    """Rank 0 alone on a sub-communicator of size 1 measures every mode while the others wait
    (an ``Ibarrier`` polled with sleeps: they take no CPU from rank 0); every rank gets
    ``{"ms": {mode: median ms}, "stream_ms": {mode: back-to-back ms}, "local_s": local kernel
    seconds, "costs": RankCosts, "error": reason or None}``."""
    from mpi4py import MPI

    comm = world()
    sub = comm.Split(0 if comm.rank == 0 else MPI.UNDEFINED, 0)
    out: dict[str, Any] = {"ms": {}, "stream_ms": {}, "local_s": None, "costs": None,
                           "error": None}
    if comm.rank == 0:
        try:
            # the whole matrix as it is: no partition to make on one rank (a graph partition's
            # renumbering alone would change the reference's locality)
            D, measured = measure_all(sub, problem, device, {**conf, "partition": "rows"},
                                      dtype, warmup, repeat)
            try:
                out.update(_reference_ms(measured))
                out["local_s"] = _local_seconds(measured)
                out["costs"] = D.costs()
            finally:
                D.close()
        except Exception as err:
            out["error"] = f"{type(err).__name__}: {err}"
        finally:
            sub.Free()
    done = comm.Ibarrier()
    while not done.Test():
        time.sleep(POLL_SECONDS)
    return comm.bcast(out, root=0)


def _reference_ms(measured: dict[str, Measured | None]) -> dict[str, dict[str, float]]:
    """A 1-rank run's milliseconds per mode: one product (``ms``) and back to back
    (``stream_ms``)."""
    return {"ms": {mode: m.median * 1e3 for mode, m in measured.items()},
            "stream_ms": {mode: m.stream * 1e3 for mode, m in measured.items()}}


def _local_seconds(measured: dict[str, Measured | None]) -> float:
    """The 1-rank local kernel's seconds for the model: the median over the modes measured
    (each a median over its repeats): one product measured three times, in the same run, spread
    by up to 1.6x on the shared 2-core CPU, more than the model's target."""
    return float(np.median([m.parts["local"] for m in measured.values() if m is not None]))


def machine_for(comm: Any, device: Device, costs: Any, local_seconds: float | None,
                D: Any = None) -> Any:
    """The model's :class:`~clspmv.distributed.model.Machine` (collective): probed staging,
    network and launch latency, the device bandwidth the 1-rank local kernel reached (the
    probed copy bandwidth where there is none) and the sharing of a node
    (:func:`~clspmv.distributed.model.probe_sharing` with each rank's local kernel of ``D``)."""
    from ..distributed import model

    probed = model.probe(comm, device)
    bandwidth = probed.device_bandwidth
    if costs is not None and local_seconds:
        bandwidth = model.effective_bandwidth(costs, local_seconds)
    sharing = model.probe_sharing(comm, _local_kernel(D)) if D is not None else 1.0
    return (replace(probed, device_bandwidth=bandwidth, sharing=sharing),
            probed.device_bandwidth)


def _local_kernel(D: Any) -> Any:
    """Seconds of one product of ``D``'s local part (profiling events; 0 without rows)."""
    import pyopencl.array as cl_array

    q = D.device.queue
    m, n = D.local_shape
    x = cl_array.zeros(q, n, D.dtype)
    y = cl_array.zeros(q, m, D.dtype)

    def run() -> float:
        if not m:
            return 0.0
        D.local.matvec(x, y)
        q.finish()
        return events_ns(D.local.last_events) * 1e-9
    return run


# -- the operation --------------------------------------------------------------------------------
class Distributed(Operation):
    """The distributed product per mode (``--distributed``), run on each rank's device."""

    name = OPERATION
    fields = {
        "ranks": "MPI ranks (one device each)",
        "mode": "vector | overlap | task (pjds-multigpu.txt, section 3.1)",
        "formats": "(local, non-local) format of each rank, distinct pairs (with format "
                   "auto, the default: what each rank's selection chose)",
        "partition": "how the rows were cut (time: balanced by predicted kernel time; nnz; "
                     "rows; graph: renumbered by the graph partitioner first; the 1-rank "
                     "reference: the whole matrix, not renumbered)",
        "devices": "the ranks' devices, distinct labels",
        "local_ms": "local kernel time: per rank the median over the products, the largest "
                    "rank's",
        "non_local_ms": "non-local kernel time (same rule)",
        "staging_ms": "host <-> device copies of the exchanged values (of the product recorded "
                      "for the timeline: the timed ones do not profile their copies)",
        "gather_ms": "host time filling the send buffer (same rule)",
        "communication_ms": "exchange, start to completion, wall clock (same rule)",
        "imbalance": "largest rank's kernel time (local + non-local) / the ranks' mean",
        "bytes_sent": "bytes one rank sends per product, the largest rank's",
        "bytes_received": "bytes one rank receives per product, the largest rank's",
        "bytes_exchanged": "bytes sent per product, summed over the ranks",
        "exchange": "how halo values moved: the ranks' distinct paths (window: a node's "
                    "shared-memory window; messages: MPI; $CLSPMV_EXCHANGE chooses)",
        "window_bytes": "bytes sent per product through shared-memory windows, summed over "
                        "the ranks",
        "whole_slice_bytes": "bytes received per product as whole x slices through the "
                             "windows (a peer needing >= $CLSPMV_EXCHANGE_WHOLE of a slice), "
                             "summed over the ranks",
        "timeline": "one product after the timed ones, per rank: per host step and OpenCL "
                    "command kind its first start, last stop, busy time (ms since the rank's "
                    "product began) and count",
        "reference": "where the 1-rank time comes from",
        "reference_ms": "time per product of the same mode, format and device on one rank",
        "speedup_over_one": "reference_ms / kernel_ms",
        "stream_ms": "time per product back to back: barrier, repeat products without waiting "
                     "for the queue between them, queue finished; the slowest rank's time / "
                     "repeat, median of 3 rounds",
        "stream_reference_ms": "stream_ms of the same mode, format and device on one rank",
        "stream_speedup_over_one": "stream_reference_ms / stream_ms",
        "efficiency": "speedup_over_one / ranks (parallel efficiency)",
        "predicted_ms": "the model's time per product for this mode and these ranks "
                        "(clspmv.distributed.model.predict, vectors resident on the device), "
                        "host_overhead included",
        "predicted_stream_ms": "the model's time per product back to back (predicted_ms "
                               "without the host overhead)",
        "stream_model_error_pct": "100 * (predicted_stream_ms - stream_ms) / stream_ms",
        "host_overhead_us": "the host's share of one product the model adds "
                            "(clspmv.distributed.model.host_overhead: the 1-rank reference's "
                            "product time less the model's device time for it, median over "
                            "the modes)",
        "predicted_one_ms": "the model's time for the whole matrix on one rank",
        "predicted_efficiency": "predicted_one_ms / (ranks * predicted_ms)",
        "model_error_pct": "100 * (predicted_ms - kernel_ms) / kernel_ms",
        "model_device_gbps": "the model's device bandwidth: what the 1-rank local kernel "
                             "reached (code balance bytes / its time)",
        "probed_copy_gbps": "the device's copy bandwidth (model.probe), for comparison",
        "staging_gbps": "host -> device copy bandwidth (model.probe)",
        "network_gbps": "rank 0 <-> 1 bandwidth, ping-pong (model.probe; none on one rank)",
        "latency_us": "rank 0 <-> 1 latency, half a round trip (model.probe)",
        "launch_us": "microseconds per device command, kernel launch or copy (model.probe)",
        "sharing": "the local kernel's time with every rank running its own at once / alone "
                   "(model.probe_sharing): the model's kernel terms are multiplied by it",
        "advice": "the model's verdict on these ranks against one "
                  "(clspmv.distributed.model.more_ranks_help: below 1.1x predicted, one device "
                  "may serve as well)",
    }
    formulas = {
        "kernel_ms": "median over the repeats of one product's wall time (barrier, D.matvec on "
                     "pyopencl x and y, queue finished), the slowest rank's",
        "gflops": "2 * nnz / kernel_ms (the whole matrix over all ranks)",
        "gbps": "min_bytes of the whole matrix / kernel_ms (all devices together)",
    }

    def active(self, plan: Any) -> bool:
        return bool(getattr(plan, "distributed", None))

    def settings(self, plan: Any) -> dict[str, Any]:
        ranks = world().size
        return {OPERATION: {
            "ranks": ranks, "modes": list(plan.distributed),
            "formats": list(plan.distributed_formats) if plan.distributed_formats else None,
            "partition": plan.distributed_partition,
            "vectors": "device (pyopencl x and y)",
            "reference": REFERENCE_SAME_RUN if ranks > 1 else REFERENCE_ITSELF}}

    def steps(self, plan: Any) -> int:
        return len(plan.distributed)

    def run_device(self, context: Context, problem: Problem, device: Device) -> None:
        run(context, problem, device)


def run(context: Context, problem: Problem, device: Device) -> None:
    """Every mode of the run's settings on ``device`` (collective over ``MPI.COMM_WORLD``);
    rank 0 adds the records to ``context.results``."""
    from ..distributed import model

    comm = world()
    conf = context.results.meta["settings"][OPERATION]
    warmup, repeat = context.settings.warmup, context.settings.repeat
    dtype = "mixed" if problem.accuracy.mixed else problem.csr.dtype
    ranks = comm.size
    ref = (one_rank_reference(problem, device, conf, dtype, warmup, repeat) if ranks > 1
           else None)
    D, status, reason = None, "ok", ""
    measured: dict[str, Measured | None] = {}
    try:
        D, measured = measure_all(comm, problem, device, conf, dtype, warmup, repeat)
    except Exception as err:  # raised on every rank alike (the library agrees on failures)
        status, reason = _classify(err)
    try:
        if D is not None:
            facts = _facts(D)
            if ref is None:  # one rank: the run is its own reference
                ref = {**_reference_ms(measured), "local_s": _local_seconds(measured),
                       "costs": D.costs(), "error": None}
            machine, copy_bw = machine_for(comm, device, ref["costs"], ref["local_s"], D)
            if ref["costs"] is not None and ref["ms"]:
                machine = replace(machine, host_overhead=model.host_overhead(
                    ref["costs"], machine, {m: ms * 1e-3 for m, ms in ref["ms"].items()},
                    resident=True))
            costs = D.all_costs()
            predicted = model.predict(costs, machine, resident=True)
            streamed = model.predict(costs, replace(machine, host_overhead=0.0), resident=True)
            advice = model.more_ranks_help(costs, machine, resident=True)[1]
    finally:
        if D is not None:
            D.close()
    if comm.rank != 0:
        for mode in conf["modes"]:
            context.progress(f"{problem.name} distributed {mode}")
        return
    from ..distributed import DEFAULT_FORMATS

    fmt = "/".join(conf.get("formats") or DEFAULT_FORMATS)
    for mode in conf["modes"]:
        rec = problem.record(device_label(device), device.type, fmt)
        DISTRIBUTED.start(rec, problem, _case(mode, ranks), None)
        rec.extra.update(ranks=ranks, mode=mode)
        rec.status, rec.reason = status, reason
        if status == "ok":
            _fill(rec, problem, measured[mode], facts, ref, mode, ranks)
            _fill_model(rec, machine, copy_bw, (predicted[mode], streamed[mode]), ref, ranks,
                        mode)
            if ranks > 1:
                rec.extra["advice"] = advice
        context.results.add(rec)
        context.progress(f"{problem.name} distributed {mode}")


def _classify(err: Exception) -> tuple[str, str]:
    """(status, reason) of a construction that failed on every rank: a
    :class:`~clspmv.distributed.DistributedError` is classified by its local cause and keeps
    its message (which names every failing rank)."""
    from ..distributed import DistributedError

    if isinstance(err, DistributedError) and isinstance(err.__cause__, Exception):
        return classify(err.__cause__, "converting")[0], first_lines(err)
    return classify(err, "converting")


def _case(mode: str, ranks: int) -> Case:
    return Case(OPERATION, f"{mode}, {ranks} ranks")


def _facts(D: Any) -> dict[str, Any]:
    """What every rank knows of its part, gathered on every rank (collective)."""
    sent, received = D.bytes_exchanged
    paths = D.plan.bytes_by_path
    used = "+".join(p for p in ("window", "messages") if sum(paths[p])) or "none"
    mine = (sent, received, "/".join(f or "none" for f in D.formats), device_label(D.device),
            D.partition, used, paths["window"][0], D.plan.whole_size * D.dtype.itemsize)
    every = D.comm.allgather(mine)
    return {"partition": every[0][4],
            "exchange": list(dict.fromkeys(e[5] for e in every)),
            "window_bytes": sum(e[6] for e in every),
            "whole_slice_bytes": sum(e[7] for e in every),
            "bytes_sent": max(e[0] for e in every),
            "bytes_received": max(e[1] for e in every),
            "bytes_exchanged": sum(e[0] for e in every),
            "formats": list(dict.fromkeys(e[2] for e in every)),
            "devices": list(dict.fromkeys(e[3] for e in every))}


def _fill(rec: Record, problem: Problem, m: Measured, facts: dict[str, Any],
          ref: dict[str, Any], mode: str, ranks: int) -> None:
    check(rec, problem, m.y)
    set_times(rec, summarize(m.product * 1e9))
    rec.extra.update(facts)
    rec.extra.update({f"{p}_ms": m.parts[p] * 1e3 for p in PARTS})
    rec.extra["imbalance"] = m.imbalance
    rec.extra["timeline"] = m.timeline
    rec.extra["reference"] = REFERENCE_SAME_RUN if ranks > 1 else REFERENCE_ITSELF
    one = ref["ms"].get(mode)
    if ref["error"]:
        rec.extra["reference"] += f" (failed: {ref['error']})"
    if one and rec.kernel_ms:
        rec.extra.update(reference_ms=one, speedup_over_one=one / rec.kernel_ms,
                         efficiency=one / rec.kernel_ms / ranks)
    rec.extra["stream_ms"] = m.stream * 1e3
    one_stream = ref.get("stream_ms", {}).get(mode)
    if one_stream and m.stream > 0:
        rec.extra.update(stream_reference_ms=one_stream,
                         stream_speedup_over_one=one_stream / (m.stream * 1e3))


def _fill_model(rec: Record, machine: Any, copy_bw: float, predicted: tuple[float, float],
                ref: dict[str, Any], ranks: int, mode: str) -> None:
    """The model's inputs and its predictions (``predicted``: seconds of one product and of one
    back to back) with their errors."""
    from ..distributed import model

    predicted_s, streamed_s = predicted

    rec.extra.update(model_device_gbps=machine.device_bandwidth / 1e9,
                     probed_copy_gbps=copy_bw / 1e9,
                     staging_gbps=machine.staging_bandwidth / 1e9,
                     network_gbps=machine.network_bandwidth / 1e9,
                     latency_us=machine.network_latency * 1e6,
                     launch_us=machine.launch_latency * 1e6, sharing=machine.sharing,
                     host_overhead_us=machine.host_overhead * 1e6,
                     predicted_ms=predicted_s * 1e3, predicted_stream_ms=streamed_s * 1e3)
    if rec.kernel_ms:
        rec.extra["model_error_pct"] = 100.0 * (predicted_s * 1e3 - rec.kernel_ms) / rec.kernel_ms
    stream_ms = rec.extra.get("stream_ms")
    if stream_ms:
        rec.extra["stream_model_error_pct"] = 100.0 * (streamed_s * 1e3 - stream_ms) / stream_ms
    if ref.get("costs") is not None:
        one = model.rank_time(ref["costs"], model.alone(machine), mode, resident=True)
        rec.extra["predicted_one_ms"] = one * 1e3
        if predicted_s > 0:
            rec.extra["predicted_efficiency"] = one / (ranks * predicted_s)


DISTRIBUTED = Distributed()
