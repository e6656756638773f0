/* ELLPACK family. Column-major by default, so that neighbouring work-items read neighbouring
 * addresses: slot j of row r lives at (j / T) * (n_pad * T) + r * T + j % T, where n_pad is the
 * row count padded to the device's SIMD width; with T = 1 that is the classic j * n_pad + r.
 * With ROW_MAJOR the rows are stored one after the other, slot j of row r at r * width + j
 * (the untransposed arrays of the OpenMP-vs-CUDA paper; T lanes then read consecutive slots).
 *   ell     T = 1, no row lengths: padding slots hold column -1 and add nothing.
 *   ellr    T = 1, ROW_LENGTHS: the loop stops at each row's own length (ELLPACK-R).
 *   ellr-t  T > 1, ROW_LENGTHS: T work-items per row, partial sums added in local memory.
 *   hyb     uses `ell` for its ELL part.
 * UNROLL (common.h) unrolls the forward product's loop over a row's slots. */
#include "common.h"

/* Array index of a lane's first slot of `row`, and the distance between its successive slots. */
#ifdef ROW_MAJOR
#define SLOT_START(row, lane) ((row) * width + (lane))
#define SLOT_STEP T
#else
#define SLOT_START(row, lane) ((row) * T + (lane))
#define SLOT_STEP (n_pad * T)
#endif

/* One slot of an unrolled group. Without row lengths the first slot holding column -1 ends the
 * row after its group: a group may run past it, and its padding slots add nothing. */
#ifdef ROW_LENGTHS
#define SLOT(acc, idx) { \
    const INDEX_T c_ = MAT_INDEX(col, idx); (acc) += MUL(MAT_VALUE(val, idx), x[COL(c_)]); }
#else
#define SLOT(acc, idx) { \
    const INDEX_T c_ = MAT_INDEX(col, idx); \
    if (c_ >= 0) (acc) += MUL(MAT_VALUE(val, idx), x[COL(c_)]); }
#endif

/* The sum of a lane's slots j = lane, lane + T, ... < len of one row, starting at array index
 * idx: UNROLL slots per iteration, each into its own partial sum (horizontal unrolling), then
 * the rest one by one. */
inline ACC_T ell_row_sum(__global const INDEX_T *restrict colmap,
                         __global const INDEX_T *restrict col,
                         __global const VALUE_T *restrict val,
                         __global const VALUE_T *restrict x,
                         INDEX_T j, INDEX_T idx, const INDEX_T len, const INDEX_T step)
{
    ACC_T sum = 0;
#if UNROLL > 1
    ACC_T part[UNROLL];
    for (int u = 0; u < UNROLL; ++u)
        part[u] = 0;
    for (; len - j > (UNROLL - 1) * T; j += UNROLL * T, idx += UNROLL * step) {
        for (int u = 0; u < UNROLL; ++u)
            SLOT(part[u], idx + u * step)
#ifndef ROW_LENGTHS
        if (col[idx + (UNROLL - 1) * step] < 0) {  /* its SLOT's column: a cache hit */
            j = len;  /* the row ended in this group: nothing is left for the loop below */
            break;
        }
#endif
    }
    for (int u = 0; u < UNROLL; ++u)
        sum += part[u];
#endif
    for (; j < len; j += T, idx += step) {
        const INDEX_T c = MAT_INDEX(col, idx);
#ifdef ROW_LENGTHS
        sum += MUL(MAT_VALUE(val, idx), x[COL(c)]);
#else
        /* no early exit at the first padding slot: with the loop's trip count the same for every
         * work-item (width), the compiler keeps several slots' loads in flight; an exit that
         * waits on each column index made ell 1.7x slower than ellr on the H200 (float32,
         * rows of 27-39 entries, no padding). A padding slot's value is not read. */
        if (c >= 0)
            sum += MUL(MAT_VALUE(val, idx), x[COL(c)]);
#endif
    }
    return sum;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ell_spmv(BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_pad, const INDEX_T width,
              __global const INDEX_T *restrict row_len,
              __global const INDEX_T *restrict col,
              __global const VALUE_T *restrict val,
              __global const VALUE_T *restrict x,
              __global VALUE_T *restrict y,
              const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T row = (INDEX_T)(get_global_id(0) / T);
    const int lane = (int)(get_global_id(0) & (T - 1));
    ACC_T sum = 0;
    if (row < n_rows) {
#ifdef ROW_LENGTHS
        const INDEX_T len = row_len[row];
#else
        const INDEX_T len = width;
#endif
        sum = ell_row_sum(colmap, col, val, x, lane, SLOT_START(row, lane), len, SLOT_STEP);
    }
#if T > 1
    __local ACC_T scratch[WG];
    const int lid = (int)get_local_id(0);
    sum = reduce_lanes(scratch, lid, lane, sum);
#endif
    if (lane == 0 && row < n_rows)
        STORE_Y(y, row, sum);
}

/* Transpose product y += alpha * A^T x (y already scaled by beta): the T work-items of a row
 * scatter its entries into y with atomic adds. Also the ELL part of hyb's transpose product. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ell_spmv_t(BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_pad, const INDEX_T width,
                __global const INDEX_T *restrict row_len,
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
#ifdef ROW_LENGTHS
    const INDEX_T len = row_len[row];
#else
    const INDEX_T len = width;
#endif
    BLOCK_ROWS(x);
    const ACC_T ax = MUL(alpha, x[row]);
    INDEX_T idx = SLOT_START(row, lane);
    for (INDEX_T j = lane; j < len; j += T, idx += SLOT_STEP) {
        const INDEX_T c = col[idx];
#ifndef ROW_LENGTHS
        if (c < 0)
            break;
#endif
        atomic_add_value(y + COL(c), (VALUE_T)(val[idx] * ax));
    }
}

#ifdef KB
/* Several right-hand sides (see MATMAT_ARGS in common.h): T work-items per row, KB sums each. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ell_matmat(BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_pad, const INDEX_T width,
                __global const INDEX_T *restrict row_len,
                __global const INDEX_T *restrict col,
                __global const VALUE_T *restrict val,
                MATMAT_ARGS)
{
    BLOCK_ROWS_MATMAT;
    const int lid = (int)get_local_id(0);
    const int lane = lid & (T - 1);
    const INDEX_T row = (INDEX_T)(get_global_id(0) / T);
    const bool active = row < n_rows;
#ifdef ROW_LENGTHS
    const INDEX_T len = active ? row_len[row] : 0;
#else
    const INDEX_T len = active ? width : 0;
#endif
#if T > 1
    __local ACC_T scratch[KB * WG];
#endif
    for (INDEX_T jb = 0; jb < k; jb += KB) {
        BLOCK_BEGIN(jb)
        INDEX_T idx = SLOT_START(row, lane);
        for (INDEX_T j = lane; j < len; j += T, idx += SLOT_STEP) {
            const INDEX_T c = col[idx];
#ifndef ROW_LENGTHS
            if (c < 0)
                break;
#endif
            BLOCK_ENTRY(val[idx], c)
        }
#if T > 1
        BLOCK_REDUCE(scratch, lid, lane)
#endif
        if (lane == 0 && active)
            BLOCK_STORE(row, jb)
    }
}
#endif
