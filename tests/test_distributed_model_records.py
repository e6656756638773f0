"""The distributed model (clspmv.distributed.model) replayed on committed measurements: every
record of reports/2026-11-28-gpu-x4-scaling (4x H100 and 4x H200, float64, window and message
exchanges, 2 and 4 ranks) predicted from its own measured inputs (device, staging and network
bandwidths, latencies, sharing) and the matrix's rank costs; the error per record stays within
the bound the model reaches there, and the advice agrees with the measured speedup."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from clspmv.distributed import model

REPORT = Path(__file__).resolve().parents[1] / "reports" / "2026-11-28-gpu-x4-scaling"

RANDOM = "gen:random:n=20000000,k=10"
POISSON = "gen:poisson2d:k=6400"

COSTS = {
    # model.rank_costs(generate(spec), ranks, ranks_per_node=ranks,
    #                  setting=Setting("window", None, 4 << 20, 0.6)), per rank: rows,
    # local_nnz, non_local_nnz, non_local_rows, x_entries, send, halo, window_down, window_up,
    # window_pieces, peers[, scattered] (computed once: the matrices have 200 M entries)
    (POISSON, 2): [
        (20480000, 102380800, 6400, 6400, 20480000, 6400, 6400, 6400, 6400, 1, 1),
        (20480000, 102380800, 6400, 6400, 20480000, 6400, 6400, 6400, 6400, 1, 1),
    ],
    (POISSON, 4): [
        (10240533, 51186663, 6401, 6400, 10240533, 6400, 6400, 6400, 6400, 1, 1),
        (10239467, 51181335, 12801, 12800, 10239467, 12800, 12800, 12800, 12800, 2, 2, True),
        (10239466, 51181330, 12801, 12800, 10239466, 12800, 12800, 12800, 12800, 2, 2, True),
        (10240534, 51186668, 6401, 6400, 10240534, 6400, 6400, 6400, 6400, 1, 1),
    ],
    (RANDOM, 2): [  # each rank copies its whole x slice down, the peer's up
        (10000000, 50002654, 49997346, 10000000, 10000000, 9932688, 9932646, 10000000,
         10000000, 20, 1),
        (10000000, 49998144, 50001856, 10000000, 10000000, 9932646, 9932688, 10000000,
         10000000, 20, 1),
    ],
    (RANDOM, 4): [
        (5000000, 12502406, 37497594, 5000000, 5000000, 13769290, 13769392, 5000000, 15000000,
         30, 3),
        (5000000, 12498036, 37501964, 5000000, 5000000, 13768199, 13768606, 5000000, 15000000,
         30, 3),
        (5000000, 12501764, 37498236, 5000000, 5000000, 13768950, 13767805, 5000000, 15000000,
         30, 3),
        (5000000, 12499924, 37500076, 5000000, 5000000, 13768881, 13769517, 5000000, 15000000,
         30, 3),
    ],
}

BOUND = {("random", "window"): 0.15, ("random", "messages"): 0.26,
         ("poisson2d", "window"): 0.60}
"""|predicted / measured - 1| reached per matrix and path. Messages: MPI's shared-memory
transport ran slower in the products (2.0-2.3 GB/s) than the probe's exchange (2.55-3.35).
Poisson: 0.1 MB exchanged, the time is host steps (40-80 us per kernel enqueue and wait in the
records' timelines against a probed launch latency of 16-25 us) and waits for peers, which the
model does not count: it predicts 17-59 % short."""


def rank_costs(spec: str, ranks: int, path: str) -> list[model.RankCosts]:
    """The committed costs of one matrix, through the window or by messages."""
    out = []
    for rows, local, non_local, nl_rows, x, send, halo, down, up, pieces, peers, *scattered \
            in COSTS[spec, ranks]:
        c = model.RankCosts(rows, local, non_local, nl_rows, x, send=send, halo=halo,
                            send_messages=0, recv_messages=0, scattered=bool(scattered),
                            window_send=send,
                            window_halo=halo, window_down=down, window_up=up,
                            window_pieces=pieces)
        if path == "messages":
            c = replace(c, send_messages=peers, recv_messages=peers, window_send=0,
                        window_halo=0, window_down=0, window_up=0, window_pieces=0)
        out.append(c)
    return out


def machine(record: dict) -> model.Machine:
    """The model's inputs as the bench measured them in the record's run."""
    return model.Machine(record["model_device_gbps"] * 1e9, record["staging_gbps"] * 1e9,
                         record["network_gbps"] * 1e9, record["latency_us"] * 1e-6,
                         launch_latency=record["launch_us"] * 1e-6, sharing=record["sharing"])


def records() -> list[tuple[str, dict]]:
    """The report's records of the matrices whose costs are committed above (the 2-GPU runs of
    the other matrices, h200x2/, have none)."""
    found = []
    for path in sorted(REPORT.glob("**/results.json")):
        for r in json.loads(path.read_text())["records"]:
            if (r.get("operation") == "distributed" and r["status"] == "ok"
                    and (r["matrix"], r["ranks"]) in COSTS):
                found.append((str(path.relative_to(REPORT).parent), r))
    return found


def test_the_records_are_there() -> None:
    runs = {(r["matrix"], r["ranks"], r["exchange"][0]) for _, r in records()}
    assert runs == {(RANDOM, 2, "window"), (RANDOM, 4, "window"), (RANDOM, 2, "messages"),
                    (RANDOM, 4, "messages"), (POISSON, 2, "window"), (POISSON, 4, "window")}


@pytest.mark.parametrize(("where", "record"), records(),
                         ids=[f"{w}:{r['mode']}" for w, r in records()])
def test_model_error_per_record(where: str, record: dict) -> None:
    path = record["exchange"][0]
    costs = rank_costs(record["matrix"], record["ranks"], path)
    # the costs are the run's: its exchanged bytes, by path
    assert record["bytes_sent"] == max(c.send for c in costs) * 8
    assert record["bytes_received"] == max(c.halo for c in costs) * 8
    assert record["window_bytes"] == sum(c.window_send for c in costs) * 8
    if record["matrix"] == RANDOM and path == "window":  # every peer gets the whole slice
        assert record["whole_slice_bytes"] == sum(c.window_up for c in costs) * 8
    m = machine(record)
    predicted = model.predict(costs, m, resident=True)[record["mode"]] * 1e3
    error = predicted / record["kernel_ms"] - 1
    name = record["matrix"].split(":")[1]
    assert abs(error) <= BOUND[name, path], (where, record["mode"], predicted,
                                             record["kernel_ms"])
    # the advice (the best mode against one rank): more ranks paid through the window (best
    # mode 1.12-1.46x one GPU, random; 1.39-1.62x, poisson2d), not by messages (0.13-0.14x)
    helps, message = model.more_ranks_help(costs, m, resident=True)
    assert helps is (path == "window"), message
    best = max(r["speedup_over_one"] for _, r in records() if _run(r) == _run(record))
    assert (best >= model.HELPS) is helps


def _run(record: dict) -> tuple:
    return record["matrix"], record["ranks"], record["exchange"][0], record["devices"][0]
