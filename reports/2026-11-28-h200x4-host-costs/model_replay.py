"""The distributed model (clspmv.distributed.model.predict) replayed on every committed 2- and
4-rank record of the Poisson and random matrices whose rank costs tests/
test_distributed_model_records.py holds: reports/2026-11-28-gpu-x4-scaling,
reports/2026-11-28-h200x4-scaling and this folder's runs; each predicted from its own run's
measured inputs (bandwidths, latencies, launch latency, sharing, the 1-rank host overhead).

    python reports/2026-11-28-h200x4-host-costs/model_replay.py   # from the project root
"""

import glob
import gzip
import json
import sys
from dataclasses import replace

sys.path.insert(0, "tests")

from test_distributed_model_records import COSTS, machine, rank_costs  # noqa: E402

from clspmv.distributed import model  # noqa: E402


def records(path: str) -> list[dict]:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)["records"]


def main() -> None:
    files = (glob.glob("reports/2026-11-28-gpu-x4-scaling/**/results.json", recursive=True)
             + glob.glob("reports/2026-11-28-h200x4-scaling/**/*-n4/results.json",
                         recursive=True)
             + glob.glob("reports/2026-11-28-h200x4-host-costs/runs/*.json.gz"))
    errors: dict[tuple, list[float]] = {}
    for path in sorted(files):
        for r in records(path):
            if (r.get("operation") != "distributed" or r["status"] != "ok"
                    or (r["matrix"], r["ranks"]) not in COSTS):
                continue
            exchange = r["exchange"][0]
            m = replace(machine(r), host_overhead=r.get("host_overhead_us", 0) * 1e-6)
            costs = rank_costs(r["matrix"], r["ranks"], exchange)
            predicted = model.predict(costs, m, resident=True)[r["mode"]] * 1e3
            key = (r["matrix"].split(":")[1], r["ranks"], exchange)
            errors.setdefault(key, []).append(100 * (predicted / r["kernel_ms"] - 1))
    print("| matrix | ranks | exchange | records | model error, % (min / median / max) |")
    print("|---|---|---|---|---|")
    for (name, ranks, exchange), e in sorted(errors.items()):
        e.sort()
        print(f"| {name} | {ranks} | {exchange} | {len(e)} | {e[0]:+.0f} / "
              f"{e[len(e) // 2]:+.0f} / {e[-1]:+.0f} |")


if __name__ == "__main__":
    main()
