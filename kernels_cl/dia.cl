/* DIA: one array of values per stored diagonal, diagonal d holding A[r, r + offset[d]] at
 * d * n_pad + r. A stored zero is indistinguishable from a gap in the diagonal, so zeros are
 * skipped: DIA treats explicit zeros as absent (documented in clspmv/formats/dia.py).
 *
 * GROUP_RUNS (clspmv's default on GPUs): the offsets ascend (clspmv/formats/dia.py stores them
 * sorted), so the diagonals that cross a work-group's rows (or, transposed, its columns) inside the matrix are one contiguous run of
 * them: the work-group finds the run's ends by binary search, the same for all its work-items
 * (uniform control flow, no divergence), and loops over that run alone. A matrix whose
 * diagonals wrap around (a periodic lattice: offsets d and d - n) then reads each row's own
 * diagonals, not twice as many. The bounds test per diagonal stays for the work-groups at the
 * matrix's edges. Without it every work-item walks all diagonals: PoCL runs a work-group's
 * work-items one after another, and the search's loop (bounds read from memory) kept its
 * compiler from running them as vectors (2026-11-26-dia in reports/: the 5-point stencil's
 * product 1.4-1.6x slower). */
#include "common.h"

/* The first d in [lo, hi) with offsets[d] >= key, or hi when there is none. */
inline INDEX_T first_offset_at_least(__global const INDEX_T *restrict offsets, INDEX_T lo,
                                     INDEX_T hi, const long key)
{
    while (lo < hi) {
        const INDEX_T mid = lo + (hi - lo) / 2;
        if ((long)offsets[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dia_spmv(BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_cols, const INDEX_T n_pad,
              const INDEX_T n_diags,
              __global const INDEX_T *restrict offsets,
              __global const VALUE_T *restrict val,
              __global const VALUE_T *restrict x,
              __global VALUE_T *restrict y,
              const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T row = (INDEX_T)get_global_id(0);
    if (row >= n_rows)
        return;
#ifdef GROUP_RUNS
    /* 0 <= r + offset < n_cols for some row r of the work-group */
    const long top = (long)get_group_id(0) * WG;
    const long bottom = min(top + WG, (long)n_rows) - 1;
    const INDEX_T first = first_offset_at_least(offsets, 0, n_diags, -bottom);
    const INDEX_T end = first_offset_at_least(offsets, first, n_diags, (long)n_cols - top);
#else
    const INDEX_T first = 0, end = n_diags;
#endif
    ACC_T sum = 0;
    for (INDEX_T d = first; d < end; ++d) {
        const long c = (long)row + offsets[d];
        if (c >= 0 && c < n_cols) {
            const VALUE_T v = MAT_VALUE(val, (long)d * n_pad + row);
            if (v != (VALUE_T)0)
                sum += MUL(v, x[COL((INDEX_T)c)]);
        }
    }
    STORE_Y(y, row, sum);
}

/* Transpose product y = alpha * A^T x + beta * y without atomics: output c gathers
 * A[c - offset[d], c] from every diagonal d. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dia_spmv_t(BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_cols, const INDEX_T n_pad,
                const INDEX_T n_diags,
                __global const INDEX_T *restrict offsets,
                __global const VALUE_T *restrict val,
                __global const VALUE_T *restrict x,
                __global VALUE_T *restrict y,
                const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(x);
    const INDEX_T c = (INDEX_T)get_global_id(0);
    if (c >= n_cols)
        return;
#ifdef GROUP_RUNS
    /* c - n_rows < offset <= c (0 <= c - offset < n_rows) for some column c of the work-group */
    const long left = (long)get_group_id(0) * WG;
    const long right = min(left + WG, (long)n_cols) - 1;
    const INDEX_T first = first_offset_at_least(offsets, 0, n_diags, left - n_rows + 1);
    const INDEX_T end = first_offset_at_least(offsets, first, n_diags, right + 1);
#else
    const INDEX_T first = 0, end = n_diags;
#endif
    ACC_T sum = 0;
    for (INDEX_T d = first; d < end; ++d) {
        const long r = (long)c - offsets[d];
        if (r >= 0 && r < n_rows) {
            const VALUE_T v = val[(long)d * n_pad + r];
            if (v != (VALUE_T)0)
                sum += MUL(v, x[(INDEX_T)r]);
        }
    }
    STORE_Y(y, COL(c), sum);
}
