"""Predicted time of one distributed product per mode (pjds-multigpu.txt, sections 2.2 and 3).

No measurement happens here except in :func:`probe`: the model takes the matrix's per-rank
quantities (:class:`RankCosts`) and the machine's bandwidths (:class:`Machine`) and adds

* the kernels' memory traffic over the device bandwidth, from the paper's code balance (1): per
  stored entry a value, an index and ``alpha`` values of x (``alpha`` = 1: no reuse of x from
  cache; ``1 / Nnzr``: each x entry loaded once), per row y read and written. The non-local part
  is a second pass over the rows it stores (the paper's extra ``8 / Nnzr`` bytes/flop), y read
  and written at a row offset (a contiguous range of rows, :func:`.partition.non_local_span`),
  or, where it is compacted to scattered rows (:class:`~.matrix.DistributedMatrix`), its product
  writes a scratch vector and the scatter reads the scratch, the row indices and y and writes y;
* the host staging over the host <-> device bandwidth (the paper's ``T_PCI``, eq. 2): the halo
  up and the values to send down every product, plus x up and y down when the vectors live on
  the host;
* the network: a latency per message and the larger of the bytes sent and received over the
  network bandwidth;
* the node's shared-memory window (peers of the same node): no network, the copies through
  the window instead (:mod:`.window_model`);
* a latency per device command (kernel launch or host <-> device copy; :func:`launches` counts
  them per term), which dominates small products and CPU devices, where a launch costs tens of
  microseconds next to kernels of a few.
* the sharing of a node (:attr:`Machine.sharing`): ranks whose devices share memory and cores
  (a CPU device per rank, several ranks on one GPU) slow each other's kernels; the kernel terms
  are multiplied by the factor :func:`probe_sharing` measures, a kernel's time with every rank
  running its own at once over its time alone (1 for ranks with devices of their own). On the
  2-core CPU, one PoCL thread per rank, two ranks' local kernels took 1.15-1.26x their time
  alone (tools/distributed_contention.py, two runs), which the model without this term missed
  (it predicted poisson2d 15-45 % short in every run).

The modes combine the terms (section 3.1): ``vector`` adds everything; ``overlap`` and ``task``
run the exchange (copy down, messages and window copies at once, halo up) beside the device's
local kernel, which is enqueued first: in ``overlap`` the host thread completes the messages
while the device computes (MPI progresses inside the wait), in ``task`` a second thread does.
Neither can hide more than the local kernel's time. The time of a product is the slowest rank's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from .collective import barrier_asleep
from .modes import MODES
from .node_exchange import Setting, read_setting
from .partition import balanced_offsets, check_offsets, non_local_span, owners, row_offsets
from .probe_timing import both_ways, launch_latency, ping_pong
from .window_model import window_fields, window_seconds

HELPS = 1.1
"""Predicted speedup below which more ranks are not worth it."""


@dataclass(frozen=True)
class Machine:
    """Bandwidths (bytes/s) and latency (s) the model needs; :func:`probe` measures them."""

    device_bandwidth: float
    """Memory bandwidth of one device (each rank has its own, or its share of a shared one)."""
    staging_bandwidth: float
    """Host <-> device copies (PCIe for GPUs through pinned memory; a host memcpy for CPUs)."""
    network_bandwidth: float
    """Between two ranks."""
    network_latency: float
    """Per message."""
    alpha: float = 1.0
    """The paper's x reuse factor, between 1/Nnzr (each x entry loaded once) and 1 (no cache)."""
    launch_latency: float = 0.0
    """Seconds each device command (kernel launch, host <-> device copy) adds to a product."""
    sharing: float = 1.0
    """Kernel time with every rank running its kernel at once / alone (:func:`probe_sharing`):
    above 1 where ranks share a device's memory or cores."""
    host_overhead: float = 0.0
    """Seconds the host adds to one product beyond its device commands (its Python, the wait for
    the queue), which one product alone cannot hide: :func:`host_overhead` measures it on one
    rank; 0 for products back to back, where the host enqueues the next while the device
    computes."""


@dataclass(frozen=True)
class RankCosts:
    """What one rank moves per product."""

    rows: int
    local_nnz: int
    non_local_nnz: int
    non_local_rows: int
    """Rows the non-local part stores (y is read and written again for them)."""
    x_entries: int
    send: int
    """x values sent per product."""
    halo: int
    """x values received per product."""
    send_messages: int
    """MPI messages sent per product (peers reached through the window not counted)."""
    recv_messages: int
    value_bytes: int = 8
    index_bytes: int = 4
    scattered: bool = False
    """The non-local part stores scattered rows: its product goes into a scratch vector that a
    second kernel adds into y (else it adds into y at a row offset)."""
    window_send: int = 0
    """Of :attr:`send`, the values for peers of this rank's node (through the window)."""
    window_halo: int = 0
    """Of :attr:`halo`, the values from peers of this rank's node."""
    window_down: int = 0
    """Values copied device -> window per product: this rank's whole x slice once where a peer
    gets it whole, plus the values picked for each other peer of the node."""
    window_up: int = 0
    """Values copied window -> device per product: the whole slices and the picked values this
    rank receives from peers of its node."""
    window_pieces: int = 0
    """Copies of the window's pipeline per product in the direction with more of them."""

    @property
    def message_send(self) -> int:
        """Values sent through MPI messages."""
        return self.send - self.window_send

    @property
    def message_halo(self) -> int:
        """Values received through MPI messages."""
        return self.halo - self.window_halo


def kernel_bytes(nnz: int, rows: int, value_bytes: int, index_bytes: int, alpha: float) -> float:
    """Bytes one product pass moves: the code balance (1) of the paper times the flops."""
    return nnz * (value_bytes + index_bytes + alpha * value_bytes) + 2 * rows * value_bytes


def non_local_bytes(c: RankCosts, alpha: float) -> float:
    """Bytes of the non-local part's product: the kernel over its rows, plus (scattered rows)
    the scratch written and the scatter (scratch, row index, y read and written)."""
    v, i, k = c.value_bytes, c.index_bytes, c.non_local_rows
    if not c.scattered:
        return kernel_bytes(c.non_local_nnz, k, v, i, alpha)
    return kernel_bytes(c.non_local_nnz, 0, v, i, alpha) + k * v + k * (3 * v + i)


def launches(c: RankCosts, resident: bool = False) -> dict[str, int]:
    """Device commands per product in each term of :func:`terms` (``network`` has none):
    the gather kernel and its copy down (device vectors; a host gather otherwise), the halo up,
    the local kernel, the non-local kernel and its scatter (scattered rows), x up and y down
    (host vectors). A format that launches two kernels (e.g. hyb) counts as one."""
    rows = c.rows > 0
    non_local = int(rows and c.halo > 0)
    return {
        "local": int(rows),
        "non_local": non_local * (2 if c.scattered else 1),
        "send_down": (2 if resident else 0) * int(c.message_send > 0),
        "halo_up": int(rows and c.message_halo > 0),
        "x_up": 0 if resident else int(c.x_entries > 0),
        "y_down": 0 if resident else int(rows),
        "network": 0,
    }


def terms(c: RankCosts, machine: Machine, resident: bool = False) -> dict[str, float]:
    """The seconds of each part of one rank's product: ``local``, ``non_local`` (kernels),
    ``send_down``, ``halo_up``, ``x_up``, ``y_down`` (staging) and ``network``; each part's
    device commands (:func:`launches`) add ``machine.launch_latency`` each. The MPI messages'
    share of the exchange only (the window's: :func:`window_seconds`)."""
    v, b_dev, b_stage = c.value_bytes, machine.device_bandwidth, machine.staging_bandwidth
    vectors = 0.0 if resident else 1.0
    send, halo = c.message_send, c.message_halo
    net = 0.0
    if send or halo:
        net = (machine.network_latency * max(c.send_messages, c.recv_messages)
               + max(send, halo) * v / machine.network_bandwidth)
    seconds = {
        "local": (kernel_bytes(c.local_nnz, c.rows, v, c.index_bytes, machine.alpha) / b_dev
                  * machine.sharing),
        "non_local": non_local_bytes(c, machine.alpha) / b_dev * machine.sharing,
        "send_down": send * v / b_stage,
        "halo_up": halo * v / b_stage,
        "x_up": vectors * c.x_entries * v / b_stage,
        "y_down": vectors * c.rows * v / b_stage,
        "network": net,
    }
    counts = launches(c, resident)
    return {k: t + counts[k] * machine.launch_latency for k, t in seconds.items()}


def rank_time(c: RankCosts, machine: Machine, mode: str, resident: bool = False) -> float:
    """Predicted seconds of one rank's product in ``mode``."""
    t = terms(c, machine, resident)
    # the window's copies run while the host waits for the messages (plan.ExchangePlan.wait)
    exchange = t["send_down"] + max(t["network"], window_seconds(c, machine)) + t["halo_up"]
    after = t["non_local"] + t["y_down"] + machine.host_overhead
    if mode == "vector":
        return exchange + t["x_up"] + t["local"] + after
    if mode in ("overlap", "task"):
        return t["x_up"] + max(exchange, t["local"]) + after
    raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")


def predict(costs: list[RankCosts], machine: Machine, resident: bool = False
            ) -> dict[str, float]:
    """Predicted seconds per product for each mode: the slowest rank's."""
    return {mode: max(rank_time(c, machine, mode, resident) for c in costs) for mode in MODES}


def rank_costs(A: Any, ranks: int, partition: object = "nnz", offsets: object = None,
               value_bytes: int = 8, ranks_per_node: int | None = None,
               setting: Setting | None = None) -> list[RankCosts]:
    """The :class:`RankCosts` of every rank when ``A`` (scipy.sparse) is distributed over
    ``ranks`` as :meth:`DistributedMatrix.from_scipy` would (no MPI, no device).

    ``ranks_per_node``: consecutive ranks sharing a node, whose values go through the node's
    window as :class:`.plan.ExchangePlan` sends them under ``setting`` (None:
    :func:`.node_exchange.read_setting`, the environment's); None: every rank a node of its
    own (MPI messages to every peer)."""
    csr = sp.csr_matrix(A)
    m, n = csr.shape
    row_nnz = np.diff(csr.indptr)
    o = (row_offsets(row_nnz, ranks, partition) if offsets is None
         else check_offsets(offsets, m, ranks))
    cols = o if m == n else balanced_offsets(np.ones(n), ranks)
    counts = np.zeros((ranks, ranks), np.int64)  # counts[j, k]: values j receives from k
    parts = []
    for j in range(ranks):
        block = csr[int(o[j]): int(o[j + 1])]
        c = block.indices.astype(np.int64)
        mine = (c >= cols[j]) & (c < cols[j + 1])
        halo = np.unique(c[~mine])
        counts[j] = np.bincount(owners(halo, cols), minlength=ranks)
        row_of = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
        nl_rows = np.unique(row_of[~mine])
        span = non_local_span(nl_rows)
        stored = nl_rows.size if span is None else span[1] - span[0]
        parts.append((block.shape[0], int(mine.sum()), int((~mine).sum()), int(stored),
                      span is None and stored > 0))
    setting = read_setting() if setting is None else setting
    exchange = window_fields(counts, np.diff(cols), ranks_per_node, setting, value_bytes)
    return [RankCosts(rows, loc, nl, nl_rows, int(cols[j + 1] - cols[j]),
                      send=int(counts[:, j].sum()), halo=int(counts[j].sum()),
                      value_bytes=value_bytes, scattered=bool(scattered), **exchange[j])
            for j, (rows, loc, nl, nl_rows, scattered) in enumerate(parts)]


def one_rank(costs: list[RankCosts]) -> RankCosts:
    """The costs of the same matrix on one rank (everything local, nothing exchanged)."""
    first = costs[0]
    return RankCosts(rows=sum(c.rows for c in costs),
                     local_nnz=sum(c.local_nnz + c.non_local_nnz for c in costs),
                     non_local_nnz=0, non_local_rows=0, x_entries=sum(c.x_entries for c in costs),
                     send=0, halo=0, send_messages=0, recv_messages=0,
                     value_bytes=first.value_bytes, index_bytes=first.index_bytes)


def speedup(costs: list[RankCosts], machine: Machine, resident: bool = False
            ) -> tuple[float, str]:
    """(predicted speedup of the best mode over one rank, that mode)."""
    single = rank_time(one_rank(costs), alone(machine), "vector", resident)
    times = predict(costs, machine, resident)
    best = min(times, key=times.get)
    return (single / times[best] if times[best] > 0 else 1.0), best


def alone(machine: Machine) -> Machine:
    """``machine`` for one rank on its own (no :attr:`Machine.sharing`)."""
    return replace(machine, sharing=1.0)


def more_ranks_help(costs: list[RankCosts], machine: Machine, resident: bool = False,
                    threshold: float = HELPS) -> tuple[bool, str]:
    """(whether the predicted speedup over one rank reaches ``threshold``, a sentence saying so
    for the user)."""
    s, mode = speedup(costs, machine, resident)
    ranks = len(costs)
    if s >= threshold:
        return True, f"{ranks} ranks are predicted {s:.2f}x faster than one (mode {mode!r})"
    return False, (f"{ranks} ranks are predicted only {s:.2f}x faster than one (best mode "
                   f"{mode!r}, below {threshold:g}x): the exchange costs about what the extra "
                   "devices save; one device may serve as well")


def host_overhead(one: RankCosts, machine: Machine, seconds: dict[str, float],
                  resident: bool = False) -> float:
    """The :attr:`Machine.host_overhead` of measured one-rank products: ``seconds`` per mode of
    one product on one rank (costs ``one``) less the model's time for it without the host's
    share, the median over the modes (0 where the model already predicts more)."""
    device_only = alone(replace(machine, host_overhead=0.0))
    gaps = [s - rank_time(one, device_only, mode, resident) for mode, s in seconds.items()]
    return max(0.0, float(np.median(gaps))) if gaps else 0.0


def effective_bandwidth(c: RankCosts, local_seconds: float, alpha: float = 1.0) -> float:
    """The device bandwidth a measured local part reached (its bytes by the code balance over
    its kernel seconds, e.g. ``D.timings["local"]``, which hold no launch latency): a better
    ``device_bandwidth`` than :func:`probe`'s buffer copy where kernels reach much less than a
    copy (a CPU device limited to one thread, irregular x access). Measured on one rank alone:
    :attr:`Machine.sharing` applies on top where ranks share a node."""
    if local_seconds <= 0:
        raise ValueError(f"local_seconds must be > 0, got {local_seconds}")
    return kernel_bytes(c.local_nnz, c.rows, c.value_bytes, c.index_bytes, alpha) / local_seconds


def probe(comm: Any, device: Any, nbytes: int = 1 << 24, repeats: int = 5,
          exchange_bytes: int = 1 << 26) -> Machine:
    """Measure a :class:`Machine` (collective): device copy bandwidth (device to device, counted
    as read + write), host -> device bandwidth from pinned memory (``nbytes``), the network
    between ranks 0 and 1 and the latency of a device command
    (:func:`.probe_timing.launch_latency`). Every rank returns rank 0's figures.

    The network is measured as a product uses it: both ranks send at once (``Sendrecv``) from
    and into the host buffers of the exchange (pinned on GPUs); the latency is half the best
    round trip of 8 bytes, the bandwidth ``exchange_bytes`` each way over the time beyond that.
    On the two-H200 node a one-way ping-pong of 16 MiB read 8-10 GB/s while the products'
    exchanges of 37-76 MiB each way ran at 3.6 GB/s: both directions share the copy, and the
    model predicted those products at half their time."""
    import pyopencl as cl

    from .staging import HostBuffers

    ctx, queue = device.context, device.queue
    count = nbytes // 8
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    host = HostBuffers(device, np.float64, pinned=True)(count)

    def best(run) -> float:
        run().wait()
        times = []
        for _ in range(repeats):
            event = run()
            event.wait()
            times.append((event.profile.end - event.profile.start) * 1e-9)
        return max(min(times), 1e-9)

    device_bw = 2 * nbytes / best(lambda: cl.enqueue_copy(queue, b, a))
    stage_bw = nbytes / best(lambda: cl.enqueue_copy(queue, a, host))
    latency, net_bw = 0.0, float("inf")
    if comm.size > 1:
        latency = ping_pong(comm, np.zeros(1), repeats * 20) / 2
        buffers = HostBuffers(device, np.float64, pinned=device.type == "gpu")
        n = exchange_bytes // 8 if comm.rank < 2 else 0
        both = both_ways(comm, buffers(n), buffers(n), repeats)
        net_bw = exchange_bytes / max(both - latency, 1e-9)
    launch = launch_latency(device, repeats)
    figures = comm.bcast((device_bw, stage_bw, net_bw, latency), root=0)
    return Machine(*figures, launch_latency=comm.bcast(launch, root=0))


def probe_sharing(comm: Any, kernel: Callable[[], float], repeats: int = 3,
                  rounds: int = 3) -> float:
    """:attr:`Machine.sharing` (collective): ``kernel()`` (its seconds, e.g. from profiling
    events) in rounds of ``repeats`` calls on each rank alone (the others asleep: an
    ``Ibarrier`` polled with sleeps) and then ``repeats`` on every rank at once, interleaved so
    that a drift of the machine touches both alike; one round to warm up (on the 2-core CPU the
    first round read 1.04 where the next ones read 1.15-1.16), then ``rounds`` counted. The
    slowest rank's median together over the slowest rank's median alone (at least 1; 1 on one
    rank). Every rank returns rank 0's figure."""
    if comm.size == 1:
        return 1.0
    alone: list[float] = []
    together: list[float] = []
    for i in range(rounds + 1):
        counted = i > 0
        for r in range(comm.size):
            if comm.rank == r:
                times = [kernel() for _ in range(repeats)]
                alone += times if counted else []
            barrier_asleep(comm)
        comm.Barrier()
        times = [kernel() for _ in range(repeats)]
        together += times if counted else []
        comm.Barrier()
    every = comm.allgather((float(np.median(alone)), float(np.median(together))))
    slowest_alone = max(a for a, _ in every)
    factor = max(t for _, t in every) / slowest_alone if slowest_alone > 0 else 1.0
    return comm.bcast(max(1.0, factor), root=0)
