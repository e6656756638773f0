"""Ranks that disagree, or fail on their own, fail together with one clear error: the suite
launches ``mpiexec -n 2`` and ``-n 3`` itself, each running every case of
``distributed_agreement_worker.py`` once (PoCL limited to one thread per rank), with a timeout
so that a rank left waiting fails the launch instead of hanging it. Each case is reported as its
own test.

Cases: every rank raising the same DistributedError naming the differing argument and its value
per rank (an invalid mode on one rank; the mode, dtype, partition by name and by weights,
row_offsets, format, shape, entries by checksum, A missing, a path against a matrix, the root,
machine="probe" on one rank, a file whose header differs), or the rank that failed and its
error (conversion, a DeviceError on upload, format selection, an allocation after the exchange
plan); after each, a matrix built on the same communicator matches scipy (the ranks are still in
step). Besides: ranks on different communicators (the waiting ones give up after
CLSPMV_MPI_TIMEOUT seconds), a different mode per rank set after construction (products still
right), and a closed matrix refusing products.
"""

from __future__ import annotations

from functools import cache

import pytest
from distributed_agreement_worker import CASES

from mpi_launch import assert_case_passed, launch

RANKS = (2, 3)
LAUNCH_TIMEOUT = 300
"""Seconds one mpiexec launch may take (all its cases: 6-8 s on the 2-core CI machine once the
kernels are built; the first launch also builds them)."""


@cache
def _launch(ranks: int) -> dict[str, object]:
    """The results of ``mpiexec -n ranks distributed_agreement_worker.py`` (with the default
    bound of CLSPMV_MPI_TIMEOUT: one case sets its own)."""
    return launch("distributed_agreement_worker.py", ranks, LAUNCH_TIMEOUT,
                  drop=("CLSPMV_MPI_TIMEOUT",)).results


@pytest.mark.parametrize("ranks,case", [(n, c) for n in RANKS for c in CASES],
                         ids=[f"n{n}-{c}" for n in RANKS for c in CASES])
def test_agreement_case(ranks: int, case: str) -> None:
    assert_case_passed(_launch(ranks), case, ranks)


# -- no MPI launch needed ------------------------------------------------------------------
def test_timeout_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mpi4py")
    from clspmv.distributed.collective import DEFAULT_TIMEOUT, TIMEOUT_ENV, timeout
    from clspmv.errors import SettingError

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert timeout() == DEFAULT_TIMEOUT
    for text, seconds in (("2.5", 2.5), (" 30 ", 30.0), ("0", None), ("", DEFAULT_TIMEOUT)):
        monkeypatch.setenv(TIMEOUT_ENV, text)
        assert timeout() == seconds, text
    for text in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(TIMEOUT_ENV, text)
        with pytest.raises(SettingError, match=rf"\${TIMEOUT_ENV}='{text}' is not a number of "
                                               r"seconds above 0 \(0: no bound\); set it to "
                                               rf"one \(e.g. {TIMEOUT_ENV}=600\), or unset it"):
            timeout()


def test_checksum_sees_every_array() -> None:
    """The checksum of a matrix differs when one value, one column index or the row pointers
    change, and when the bytes move between arrays."""
    pytest.importorskip("mpi4py")
    import numpy as np
    from distributed_agreement_worker import uneven

    from clspmv.canonical import canonical_csr
    from clspmv.distributed.agreement import digest

    A = canonical_csr(uneven())
    base = digest(A.indptr, A.indices, A.data)
    assert base == digest(A.indptr.copy(), A.indices.copy(), A.data.copy())
    assert len(base) == 16
    changed = []
    for name, index in (("data", 3), ("indices", 3), ("indptr", 5)):
        arrays = {k: getattr(A, k).copy() for k in ("indptr", "indices", "data")}
        arrays[name][index] += 1
        changed.append(digest(arrays["indptr"], arrays["indices"], arrays["data"]))
    data = A.data.copy()
    data[0] = np.nextafter(data[0], np.inf)  # one bit
    changed.append(digest(A.indptr, A.indices, data))
    changed.append(digest(A.indptr, np.concatenate([A.indices, A.data.view(np.int32)]),
                          np.zeros(0)))
    assert base not in changed and len(set(changed)) == len(changed), changed


def test_product_stamps() -> None:
    """Stamps of the same product agree, scalars within a relative 1e-12 too; a different
    number, kind, alpha or beta raises, naming both products and the ranks."""
    pytest.importorskip("mpi4py")
    from clspmv.distributed import DistributedError
    from clspmv.distributed.product_stamp import check, stamp

    own = stamp(4, False, 0.1 + 0.2, -1.5)
    check(own, stamp(4, False, 0.3, -1.5 * (1 + 1e-13)), 2, 0)  # reduced in another order
    for other in (stamp(5, False, 0.1 + 0.2, -1.5), stamp(4, True, 0.1 + 0.2, -1.5),
                  stamp(4, False, 0.3 * (1 + 1e-11), -1.5), stamp(4, False, 0.1 + 0.2, 0.0)):
        with pytest.raises(DistributedError) as raised:
            check(own, other, 2, 0)
        kind = "A.T x" if other[1] else "A x"
        assert str(raised.value).startswith(
            f"rank 2 sent the values of its product {int(other[0])} ({kind}, alpha="
            f"{float(other[2])!r}, beta={float(other[3])!r}) to this rank (rank 0), which runs "
            "its product 4 (A x, alpha=0.30000000000000004, beta=-1.5): every product is "
            "collective")
