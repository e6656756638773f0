/* SELL-C-sigma and pJDS: rows sorted by length (within windows of sigma rows; pJDS sorts them
 * all), cut into slices of C = SIMD-width rows, each slice column-major and padded only to its
 * own longest row. slice_ptr[s] is where slice s starts; slot i (sorted order) is row perm[i]
 * of the caller, so the result is written straight back in the caller's order. */
#include "common.h"

/* The matrix arguments every kernel of the file takes first. */
#define SELL_ARGS BLOCK_ARGS const INDEX_T n_rows, __global const INDEX_T *restrict slice_ptr, \
    __global const INDEX_T *restrict row_len, __global const INDEX_T *restrict perm, \
    __global const INDEX_T *restrict col, __global const VALUE_T *restrict val,

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sell_spmv(SELL_ARGS __global const VALUE_T *restrict x,
               __global VALUE_T *restrict y,
               const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n_rows)
        return;
    const INDEX_T len = row_len[i];
    /* i - slice * C rather than i % C: the div/rem pair would become LLVM's `freeze`, which
     * Oclgrind's checker cannot simulate. */
    const INDEX_T slice = i / C;
    INDEX_T idx = slice_ptr[slice] + (i - slice * C);
    ACC_T sum = 0;
    for (INDEX_T j = 0; j < len; ++j, idx += C)
        sum += MUL(MAT_VALUE(val, idx), x[COL(MAT_INDEX(col, idx))]);
    const INDEX_T row = perm[i];
    STORE_Y(y, row, sum);
}

#ifdef SLICE_ITEMS
/* One work-item per slice (SLICE_ITEMS, for CPUs that run a work-group's work-items one after
 * another: PoCL): the slice's C rows side by side, so that each column of the slice is one load
 * of C values, one of C indices and one gather of x (AVX-512's vgatherdpd), where a work-item per
 * row walks its row alone in scalar loads. Launched with one work-item per group (WG = 1), so that
 * PoCL's threads balance single slices, not runs of a window's longest rows
 * (clspmv/formats/sell.py, SLICES_PER_GROUP). The slice runs to its longest row; a shorter
 * row's padding slots are masked out by its length, not multiplied (their value 0 times an x of
 * Inf or NaN would be NaN). Each row sums its entries in their order, as the row kernel does.
 *
 * The C rows are a loop over lanes that the compiler vectorises (the pragma asks for vectors of
 * C), not OpenCL vectors built from C scalar loads of x: LLVM 14 (PyPI's PoCL 3.0) left those
 * as 16 scalar loads and inserts per column, no gather, and took 1.5-1.9 times this loop's time,
 * which it compiles to gathers; LLVM 15 and 16 (PoCL 3.1, 5.0) gather either way, this loop
 * taking 0.92-1.13 times the vectors' time (reports/experiments/2026-11-30-slice-lane-loop). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sell_spmv_slices(SELL_ARGS __global const VALUE_T *restrict x,
                      __global VALUE_T *restrict y,
                      const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T slice = (INDEX_T)get_global_id(0);
    const INDEX_T first = slice * C;
    if (first >= n_rows)
        return;
    ACC_T sum[C];
    INDEX_T lengths[C];
    for (int lane = 0; lane < C; ++lane) {
        sum[lane] = 0;
        lengths[lane] = row_len[first + lane];  /* row_len is padded to whole slices */
    }
    const INDEX_T end = slice_ptr[slice + 1];
    INDEX_T column = 0;
    for (INDEX_T idx = slice_ptr[slice]; idx < end; idx += C, ++column) {
#pragma clang loop unroll(disable) vectorize(enable) vectorize_width(C)
        for (int lane = 0; lane < C; ++lane) {
            const ACC_T term = MUL(MAT_VALUE(val, idx + lane), x[COL(MAT_INDEX(col, idx + lane))]);
            sum[lane] += (column < lengths[lane]) ? term : (ACC_T)0;
        }
    }
    const INDEX_T rows = min((INDEX_T)C, n_rows - first);
    for (INDEX_T lane = 0; lane < rows; ++lane)
        STORE_Y(y, perm[first + lane], sum[lane]);
}
#endif

/* Transpose product y += alpha * A^T x (y already scaled by beta): each slot's row scatters its
 * entries into y with atomic adds. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sell_spmv_t(SELL_ARGS __global const VALUE_T *restrict x,
                 __global VALUE_T *y,
                 const VALUE_T alpha)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n_rows)
        return;
    const INDEX_T len = row_len[i];
    BLOCK_ROWS(x);
    const ACC_T ax = MUL(alpha, x[perm[i]]);
    const INDEX_T slice = i / C;  /* not i % C: see sell_spmv */
    INDEX_T idx = slice_ptr[slice] + (i - slice * C);
    for (INDEX_T j = 0; j < len; ++j, idx += C)
        atomic_add_value(y + COL(col[idx]), (VALUE_T)(val[idx] * ax));
}

#ifdef KB
/* Several right-hand sides (see MATMAT_ARGS in common.h): one work-item per slot, KB sums. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sell_matmat(SELL_ARGS MATMAT_ARGS)
{
    BLOCK_ROWS_MATMAT;
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n_rows)
        return;
    const INDEX_T len = row_len[i];
    const INDEX_T slice = i / C;  /* not i % C: see sell_spmv */
    const INDEX_T first = slice_ptr[slice] + (i - slice * C);
    const INDEX_T row = perm[i];
    for (INDEX_T jb = 0; jb < k; jb += KB) {
        BLOCK_BEGIN(jb)
        INDEX_T idx = first;
        for (INDEX_T j = 0; j < len; ++j, idx += C)
            BLOCK_ENTRY(val[idx], col[idx])
        BLOCK_STORE(row, jb)
    }
}
#endif
