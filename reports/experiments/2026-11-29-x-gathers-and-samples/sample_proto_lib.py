"""The row sample of sample_proto.py: 8 blocks of consecutive rows spread over the matrix,
each block's columns shifted by its rows' shift (cyclically), so that diagonals keep their offsets."""
import numpy as np
import scipy.sparse as sp
def row_sample(csr, share, min_entries, blocks):
    n_rows, n_cols = csr.shape
    target = min(csr.nnz, max(int(csr.nnz * share), min_entries))
    if target >= csr.nnz:
        return csr
    per = target / blocks
    ptr = csr.indptr
    starts = np.linspace(0, n_rows, blocks, endpoint=False).astype(np.int64)
    rows, cols, vals, new_ptr = [], [], [], [0]
    r_new = 0
    pieces = []
    for s in starts:
        e = int(np.searchsorted(ptr, ptr[s] + per, side="left"))
        e = max(e, s + 1); e = min(e, n_rows)
        sub = csr[s:e]
        shift = r_new - s
        sub = sub.tocoo()
        c = (sub.col + shift) % n_cols
        pieces.append(sp.csr_matrix((sub.data, (sub.row, c)), shape=(e - s, n_cols)))
        r_new += e - s
    out = sp.vstack(pieces, format="csr")
    out.sort_indices()
    return out
