"""The node's shared-memory window in the distributed model (:mod:`.model`): which values each
rank copies through it, as :func:`.node_exchange.plan_routes` lays them out, and their time.

Peers of the same node (:mod:`.node_exchange`) use no network, the copies device -> window and
window -> device instead (whole x slices counted as their size), the pieces of both directions
in flight at once on two queues. Measured on four H100s (reports/2026-11-28-gpu-x4-scaling,
random matrix): the two directions do *not* each run at the pinned rate: 2 ranks moved 80 MB
down and 80 MB up each in 2.8-3.2 ms, their sum at the pinned 54 GB/s (2.95 ms; the larger
direction alone would be 1.5 ms). So a rank's window copies take their bytes, both directions
together, over :attr:`.model.Machine.staging_bandwidth`, plus a launch latency per piece of the
direction with more pieces (4 ranks: 40 MB down in 10 pieces and 120 MB up in 30 took 3.9-4.1
ms; 2.9 ms of bytes and 30 launches of 39 us).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .node_exchange import Setting, piece_values, takes_whole

if TYPE_CHECKING:
    from .model import Machine, RankCosts


def window_seconds(c: RankCosts, machine: Machine) -> float:
    """Seconds of one rank's window copies (both directions in flight at once; see the
    module): its values down and up over :attr:`.model.Machine.staging_bandwidth`, plus a
    launch latency per piece of the direction with more pieces."""
    values = c.window_down + c.window_up
    return (values * c.value_bytes / machine.staging_bandwidth
            + c.window_pieces * machine.launch_latency)


def window_fields(counts: np.ndarray, slices: np.ndarray, ranks_per_node: int | None,
                  setting: Setting, value_bytes: int) -> list[dict[str, int]]:
    """Per rank the exchange's fields of :class:`.model.RankCosts` (``send_messages``,
    ``recv_messages``, ``window_send``, ``window_halo``, ``window_down``, ``window_up``,
    ``window_pieces``) from ``counts[j, k]`` (values rank j receives from rank k) and the
    ranks' x ``slices``: consecutive groups of ``ranks_per_node`` ranks (None: one rank each)
    share a window unless ``setting.exchange`` is ``messages``."""
    ranks = counts.shape[0]
    nodes = np.arange(ranks) // (ranks_per_node or 1)
    window = (nodes[:, None] == nodes[None, :]) & (ranks_per_node is not None
                                                   and setting.exchange != "messages")
    through = counts * window
    down, up, pieces = _window_paths(through, slices, setting, value_bytes)
    return [{"send_messages": int(np.count_nonzero(counts[:, j] * ~window[:, j])),
             "recv_messages": int(np.count_nonzero(counts[j] * ~window[j])),
             "window_send": int(through[:, j].sum()), "window_halo": int(through[j].sum()),
             "window_down": down[j], "window_up": up[j], "window_pieces": pieces[j]}
            for j in range(ranks)]


def _window_paths(through: np.ndarray, slices: np.ndarray, setting: Setting, value_bytes: int
                  ) -> tuple[list[int], list[int], list[int]]:
    """Per rank (values down, values up, pieces of the longer direction) through the window for
    ``through[j, k]`` values rank j receives from rank k of its node: a reader needing at least
    ``setting.whole`` of a writer's x slice gets all of it (written once for all such readers,
    :func:`.node_exchange.takes_whole`); a writer cuts its slot into pieces of
    :func:`.node_exchange.piece_values` values."""
    whole = takes_whole(through, slices[None, :], setting.whole)  # reader k, writer j: [k, j]
    np.fill_diagonal(whole, False)
    parts = through * ~whole
    has_whole = whole.any(axis=0)
    down = parts.sum(axis=0) + slices * has_whole
    per = np.array([piece_values(int(t), value_bytes, setting.chunk) for t in down], np.int64)
    # pieces[k, j]: pieces of writer j's slot that reader k copies out
    pieces = -(-parts // per[None, :]) + whole * -(-slices // per)[None, :]
    n_down = (-(-parts // per[None, :])).sum(axis=0) + has_whole * -(-slices // per)
    n_up = pieces.sum(axis=1)
    up = parts.sum(axis=1) + (whole * slices[None, :]).sum(axis=1)
    return ([int(v) for v in down], [int(v) for v in up],
            [int(v) for v in np.maximum(n_down, n_up)])
