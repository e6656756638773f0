/* DIA: one array of values per stored diagonal, diagonal d holding A[r, r + offset[d]] at
 * d * n_pad + r. A stored zero is indistinguishable from a gap in the diagonal, so zeros are
 * skipped: DIA treats explicit zeros as absent (documented in clspmv/formats/dia.py). */
#include "common.h"

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
    ACC_T sum = 0;
    for (INDEX_T d = 0; d < n_diags; ++d) {
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
    ACC_T sum = 0;
    for (INDEX_T d = 0; d < n_diags; ++d) {
        const long r = (long)c - offsets[d];
        if (r >= 0 && r < n_rows) {
            const VALUE_T v = val[(long)d * n_pad + r];
            if (v != (VALUE_T)0)
                sum += MUL(v, x[(INDEX_T)r]);
        }
    }
    STORE_Y(y, COL(c), sum);
}
