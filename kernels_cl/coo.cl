/* COO (row-sorted triplets); HYB runs these kernels for its COO part.
 *   coo_accumulate  y += alpha * A x: each work-item takes CHUNK consecutive entries, sums runs of
 *                   equal row index and adds each run to y atomically. */
#include "common.h"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_accumulate(BLOCK_ARGS const INDEX_T nnz, const INDEX_T chunk,
                    __global const INDEX_T *restrict row,
                    __global const INDEX_T *restrict col,
                    __global const VALUE_T *restrict val,
                    __global const VALUE_T *restrict x,
                    __global VALUE_T *y,
                    const VALUE_T alpha)
{
    BLOCK_ROWS(y);
    const long start = (long)get_global_id(0) * chunk;
    if (start >= nnz)
        return;
    const INDEX_T end = (INDEX_T)min((long)nnz, start + chunk);
    INDEX_T r = row[start];
    ACC_T sum = 0;
    for (INDEX_T k = (INDEX_T)start; k < end; ++k) {
        const INDEX_T rk = row[k];
        if (rk != r) {
            atomic_add_value(y + r, (VALUE_T)((ACC_T)alpha * sum));
            r = rk;
            sum = 0;
        }
        sum += MUL(val[k], x[COL(col[k])]);
    }
    atomic_add_value(y + r, (VALUE_T)((ACC_T)alpha * sum));
}

/* Transpose product y += alpha * A^T x (y already scaled by beta): each work-item takes CHUNK
 * consecutive entries and adds each to y[col] atomically. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_accumulate_t(BLOCK_ARGS const INDEX_T nnz, const INDEX_T chunk,
                      __global const INDEX_T *restrict row,
                      __global const INDEX_T *restrict col,
                      __global const VALUE_T *restrict val,
                      __global const VALUE_T *restrict x,
                      __global VALUE_T *y,
                      const VALUE_T alpha)
{
    BLOCK_ROWS(x);
    const long start = (long)get_global_id(0) * chunk;
    if (start >= nnz)
        return;
    const INDEX_T end = (INDEX_T)min((long)nnz, start + chunk);
    for (INDEX_T k = (INDEX_T)start; k < end; ++k)
        atomic_add_value(y + COL(col[k]), (VALUE_T)(val[k] * MUL(alpha, x[row[k]])));
}
