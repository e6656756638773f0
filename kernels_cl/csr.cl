/* CSR products: T work-items per row.
 *   csr-scalar  T = 1, one work-item per row.
 *   csr-vector  T in {2,4,8,16,32}, the row's entries strided over T lanes, summed in local memory.
 *   csr-aligned T = 16 (half warp) on rows padded to multiples of 16; SKIP_PADDING marks the padded
 *               slots by a negative column index so they never touch x (0 * Inf would be NaN).
 * UNROLL (common.h) unrolls the forward product's loop over a row's entries.
 * LONG_ROWS (common.h): csr_spmv leaves the rows longer than its last argument to the chunks of
 * csr_adaptive.cl; the transpose and several-right-hand-sides kernels take every row. */
#include "common.h"

#ifdef SKIP_PADDING
#define ENTRY(acc, k) { \
    const INDEX_T c_ = MAT_INDEX(col, k); \
    if (c_ >= 0) (acc) += MUL(MAT_VALUE(val, k), x[COL(c_)]); }
#else
#define ENTRY(acc, k) (acc) += MUL(MAT_VALUE(val, k), x[COL(MAT_INDEX(col, k))]);
#endif

/* The sum of a lane's entries k = first, first + T, ... < end of one row: UNROLL entries per
 * iteration, each into its own partial sum (horizontal unrolling), then the rest one by one. */
inline ACC_T csr_row_sum(__global const INDEX_T *restrict colmap,
                         __global const INDEX_T *restrict col,
                         __global const VALUE_T *restrict val,
                         __global const VALUE_T *restrict x, INDEX_T k, const INDEX_T end)
{
    ACC_T sum = 0;
#if UNROLL > 1
    ACC_T part[UNROLL];
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0;
    for (; end - k > (UNROLL - 1) * T; k += UNROLL * T) {
        for (int u = 0; u < UNROLL; ++u)
            ENTRY(part[u], k + u * T)
    }
    for (int u = 0; u < UNROLL; ++u)
        sum += part[u];
#endif
    for (; k < end; k += T)
        ENTRY(sum, k)
    return sum;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_spmv(BLOCK_ARGS const INDEX_T n_rows,
              __global const INDEX_T *restrict row_ptr,
              __global const INDEX_T *restrict col,
              __global const VALUE_T *restrict val,
              __global const VALUE_T *restrict x,
              __global VALUE_T *restrict y,
              const VALUE_T alpha, const VALUE_T beta LONG_ROW_ARG)
{
    BLOCK_ROWS(y);
#if T == 1
    const INDEX_T row = (INDEX_T)get_global_id(0);
    if (row >= n_rows)
        return;
    const INDEX_T begin = row_ptr[row], end = row_ptr[row + 1];
    if (IS_LONG(begin, end))
        return;  /* a long row: its chunks store y */
    const ACC_T sum = csr_row_sum(colmap, col, val, x, begin, end);
    STORE_Y(y, row, sum);
#else
    __local ACC_T scratch[WG];
    const int lid = (int)get_local_id(0);
    const int lane = lid & (T - 1);
    const INDEX_T row = (INDEX_T)(get_global_id(0) / T);
#ifdef LONG_ROWS
    const bool live = row < n_rows && !IS_LONG(row_ptr[row], row_ptr[row + 1]);
#else
    const bool live = row < n_rows;  /* (IS_LONG's constant 0 would be a compiler warning) */
#endif
    ACC_T sum = 0;
    if (live)
        sum = csr_row_sum(colmap, col, val, x, row_ptr[row] + lane, row_ptr[row + 1]);
    sum = reduce_lanes(scratch, lid, lane, sum);
    if (lane == 0 && live)
        STORE_Y(y, row, sum);
#endif
}

/* Transpose product y += alpha * A^T x (y already scaled by beta): the T work-items of a row
 * scatter its entries into y with atomic adds. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_spmv_t(BLOCK_ARGS const INDEX_T n_rows,
                __global const INDEX_T *restrict row_ptr,
                __global const INDEX_T *restrict col,
                __global const VALUE_T *restrict val,
                __global const VALUE_T *restrict x,
                __global VALUE_T *y,
                const VALUE_T alpha)
{
    const INDEX_T row = (INDEX_T)(get_global_id(0) / T);
    const int lane = (int)(get_global_id(0) & (T - 1));
    if (row >= n_rows)
        return;
    BLOCK_ROWS(x);
    const ACC_T ax = MUL(alpha, x[row]);
    const INDEX_T end = row_ptr[row + 1];
    for (INDEX_T k = row_ptr[row] + lane; k < end; k += T) {
        const INDEX_T c = col[k];
#ifdef SKIP_PADDING
        if (c < 0)
            continue;
#endif
        atomic_add_value(y + COL(c), (VALUE_T)(val[k] * ax));
    }
}

#ifdef KB
/* Several right-hand sides (see MATMAT_ARGS in common.h): T work-items per row, KB sums each. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_matmat(BLOCK_ARGS const INDEX_T n_rows,
                __global const INDEX_T *restrict row_ptr,
                __global const INDEX_T *restrict col,
                __global const VALUE_T *restrict val,
                MATMAT_ARGS)
{
    BLOCK_ROWS_MATMAT;
    const int lid = (int)get_local_id(0);
    const int lane = lid & (T - 1);
    const INDEX_T row = (INDEX_T)(get_global_id(0) / T);
    const bool active = row < n_rows;
    const INDEX_T start = active ? row_ptr[row] + lane : 0;
    const INDEX_T end = active ? row_ptr[row + 1] : 0;
#if T > 1
    __local ACC_T scratch[KB * WG];
#endif
    for (INDEX_T jb = 0; jb < k; jb += KB) {
        BLOCK_BEGIN(jb)
        for (INDEX_T e = start; e < end; e += T) {
            const INDEX_T c = col[e];
#ifdef SKIP_PADDING
            if (c < 0)
                continue;
#endif
            BLOCK_ENTRY(val[e], c)
        }
#if T > 1
        BLOCK_REDUCE(scratch, lid, lane)
#endif
        if (lane == 0 && active)
            BLOCK_STORE(row, jb)
    }
}
#endif
