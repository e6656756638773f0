"""The CPU-vs-GPU crossover section of report.md (Ferez's OpenMP-vs-CUDA paper): the best
kernel time of any CPU against any GPU per matrix, in order of entries."""

from __future__ import annotations

from .common import Rec, best, matrices_by_size, num, short_device, spmv_records, table, unique


def crossover_section(records: list[Rec]) -> str:
    """CPU vs GPU by number of entries (Ferez's OpenMP-vs-CUDA paper): best of each kind per
    matrix."""
    out = ["## CPU vs GPU crossover by number of entries", "",
           "Best kernel time on any CPU (PoCL formats, scipy, MKL) against the best on any GPU "
           "(OpenCL formats, cuSPARSE), matrices in order of entries, as in Ferez's “Sparse "
           "Matrix-Vector Product: OpenMP vs CUDA on Hybrid Platforms” (2023). `GPU wall` adds the "
           "PCIe copies of x and y.", ""]
    records = spmv_records(records)
    for dtype in unique(r["dtype"] for r in records):
        here = [r for r in records if r["dtype"] == dtype and r["status"] == "ok"]
        if not any(r["device_type"] == "gpu" for r in here) or not any(
                r["device_type"] == "cpu" for r in here):
            kinds = sorted({r["device_type"].upper() for r in here}) or ["no"]
            out += [f"### {dtype}", "", f"Only {', '.join(kinds)} results: no crossover to "
                    "show.", ""]
            continue
        rows, gpu_wins = [], []
        for m in matrices_by_size(here):
            cpu = best([r for r in here if r["matrix"] == m and r["device_type"] == "cpu"])
            gpu = best([r for r in here if r["matrix"] == m and r["device_type"] == "gpu"])
            if cpu is None or gpu is None:
                continue
            ratio = cpu["kernel_ms"] / gpu["kernel_ms"]
            gpu_wins.append((cpu["nnz"], ratio > 1))
            rows.append([m, str(cpu["nnz"]), f"{short_device(cpu['device'])} {cpu['format']}",
                         num(cpu["kernel_ms"], ".3f"),
                         f"{short_device(gpu['device'])} {gpu['format']}",
                         num(gpu["kernel_ms"], ".3f"), num(gpu.get("wall_ms"), ".3f"),
                         num(ratio, ".2f"), "GPU" if ratio > 1 else "CPU"])
        out += [f"### {dtype}", "", table(rows, ["matrix", "entries", "best CPU", "CPU ms",
                                                 "best GPU", "GPU ms", "GPU wall ms",
                                                 "CPU/GPU time", "faster"]), "",
                crossover_sentence(gpu_wins), ""]
    return "\n".join(out)


def crossover_sentence(gpu_wins: list[tuple[int, bool]]) -> str:
    """Where the GPU starts to win for good, from (entries, GPU faster) pairs sorted by size."""
    if not gpu_wins:
        return "No matrix ran on both a CPU and a GPU."
    if all(win for _, win in gpu_wins):
        return f"The GPU is faster on every matrix (from {gpu_wins[0][0]} entries up)."
    if not any(win for _, win in gpu_wins):
        return "The CPU is faster on every matrix."
    last_cpu = max(i for i, (_, win) in enumerate(gpu_wins) if not win)
    if last_cpu == len(gpu_wins) - 1:
        return ("The CPU is faster on the largest matrix: no crossover in this size range "
                f"(the GPU wins on {sum(w for _, w in gpu_wins)} of {len(gpu_wins)}).")
    return (f"Crossover: the GPU is faster on every matrix from {gpu_wins[last_cpu + 1][0]} "
            f"entries up; the CPU wins at {gpu_wins[last_cpu][0]} entries.")
