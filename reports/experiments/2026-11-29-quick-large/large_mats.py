import numpy as np
from clspmv.model.benchmarks import _from_lengths

def big_matrices(rows):
    rng = np.random.default_rng(17)
    powerlaw = np.minimum(rng.zipf(2.0, rows) * 3, 512).astype(np.int64)
    return {"big-powerlaw": _from_lengths(powerlaw // 2 + 1, rows, None, rng),
            "big-random": _from_lengths(np.full(rows, 8, np.int64), rows, None, rng)}

