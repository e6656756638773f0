"""The quick calibration's block probe (:mod:`.quick`): on CPUs the formats that take only
matrices of dense blocks (probed in ``"quick cpu blocks"``: ``bsr``) are timed on a block matrix of
their own, and each one's multiplier of its work in the cache is fitted to it alone, under the
group multipliers the other probes fitted, so that no other format's model moves."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import least_squares

from .benchmarks import block_probe_matrix
from .probes import probed_formats

BLOCK_PROBE_NODES = 16
"""Nodes a side of the block probe's grid (:func:`block_probe_matrices`)."""
BLOCK_PROBE_SIZE = 4
"""Unknowns per node of the block probe: its blocks' side."""


def block_probe_formats() -> tuple[str, ...]:
    """The formats the block probe times, each fitted alone to it: those probed in ``"quick cpu
    blocks"`` (:attr:`~clspmv.formats.costs.FormatCosts.probed_in`)."""
    return probed_formats("quick cpu blocks")


def block_probe_matrices(device_class: str) -> dict[str, sp.csr_matrix]:
    """The block probe's matrix on CPUs where a format is probed in ``"quick cpu blocks"``
    (``bsr``): 4x4 blocks on the 7-point stencil of a 16^3 grid
    (:func:`clspmv.model.benchmarks.block_probe_matrix`, 0.43 M entries, in the cache); none
    elsewhere. Each such format takes no other probe matrix (it finds no blocks in them), and
    its own multiplier of its work in the cache is fitted to this probe alone, after the groups
    (:func:`clspmv.model.quick.fit_quick`): its prior shape is borrowed
    (:func:`clspmv.model.prior.added_formats`), and in the cache its products ran 0.77-1.07
    times the fastest other format's on a 16-core Xeon under PoCL 5.0, 1.54 times on the 2-core
    Xeon under PoCL 3.1 (the probe's pattern there; ``reports/experiments/2026-11-29-bsr``)."""
    if device_class != "cpu" or not block_probe_formats():
        return {}
    return {"blocks": block_probe_matrix(BLOCK_PROBE_NODES, BLOCK_PROBE_SIZE)}


def own_multiplier(parts: np.ndarray, in_cache: np.ndarray, measured: np.ndarray,
                   pull: float) -> float:
    """The multiplier of the terms ``in_cache`` that fits probes of per-term predicted seconds
    ``parts`` (a row per probe) to their ``measured`` seconds, in the logarithm of the times and
    drawn towards 1 with the weight ``pull`` (the joint fit's,
    :data:`clspmv.model.quick.PULL`)."""
    rest, cache = parts[:, ~in_cache].sum(axis=1), parts[:, in_cache].sum(axis=1)

    def residuals(log_o: np.ndarray) -> np.ndarray:
        times = np.maximum(rest + cache * np.exp(log_o[0]), 1e-30)
        return np.concatenate([np.log(times) - np.log(measured), pull * log_o])

    return float(np.exp(least_squares(residuals, np.zeros(1)).x[0]))


__all__ = ["BLOCK_PROBE_NODES", "BLOCK_PROBE_SIZE", "block_probe_formats", "block_probe_matrices",
           "own_multiplier"]
