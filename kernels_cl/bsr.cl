/* BSR: the matrix as dense BS x BS blocks (BS a build option, 1 to 8) in block-CSR order: block
 * row br holds the blocks block_ptr[br] .. block_ptr[br + 1] - 1, block j at block column
 * block_col[j], its values at val[j * BS * BS ..] column by column (entry (r, c) of the block at
 * c * BS + r), so that a column of the block times one entry of x adds to BS consecutive sums.
 * The padding inside the blocks holds zeros, and a stored zero cannot be told from it: a row whose
 * sum is not finite is summed again with zeros skipped (careful_sums: an Inf in x meets no
 * padding; explicit zeros are absent, as in DIA: clspmv/formats/bsr.py). The rows and columns are whole blocks (the host pads neither).
 *
 * bsr_spmv_runs (CPUs: work-groups of one work-item): work-item w walks the block rows
 * runs[w] .. runs[w + 1] - 1 (balanced by blocks on the host), a block at a time, its BS sums in
 * registers: per block BS * BS contiguous values and BS contiguous entries of x, the inner loop
 * over a column of the block one SIMD multiply-add that the compiler unrolls.
 * bsr_spmv (GPUs): a work-item per row; the BS rows of a block row read each column of a block
 * side by side.
 * bsr_spmv_t: a work-item per row adds its terms to y atomically. */
#include "common.h"

#ifndef BS
#error "BS (the block size) must be defined"
#endif

#define BSR_ARGS BLOCK_ARGS const INDEX_T n_rows, __global const INDEX_T *restrict runs, \
    __global const INDEX_T *restrict block_ptr, __global const INDEX_T *restrict block_col, \
    __global const VALUE_T *restrict val, __global const VALUE_T *restrict x

/* v * xv in the accumulator type, nothing for a zero v (padding or an explicit zero) */
#define TERM(v, xv) (((v) != (VALUE_T)0) ? MUL(v, xv) : (ACC_T)0)

/* The sums of block row br's rows r0 .. r0 + rows - 1 (rows: BS or 1) again, term by term, zeros
 * skipped: for rows whose fast sum is not finite. The fast loops multiply the padding's zeros
 * too, which adds nothing where x is finite; where a row's sum is Inf or NaN, a zero may have
 * met an infinite or NaN x (or a stored entry did), and the row is summed again without them.
 * (Tested per term or per column of x in the fast loop, the CPU kernel ran 1.06-1.56x slower on
 * a 16-core Xeon under PoCL 5.0.) */
inline void careful_sums(ACC_T *sums, const int r0, const int rows, const INDEX_T br,
                         __global const INDEX_T *restrict block_ptr,
                         __global const INDEX_T *restrict block_col,
                         __global const VALUE_T *restrict val,
                         __global const INDEX_T *restrict colmap,
                         __global const VALUE_T *restrict x)
{
    for (int r = 0; r < rows; ++r)
        sums[r] = 0;
    const INDEX_T end = block_ptr[br + 1];
    for (INDEX_T j = block_ptr[br]; j < end; ++j) {
        const long base = (long)j * (BS * BS) + r0;
        const long column = (long)block_col[j] * BS;
        for (int c = 0; c < BS; ++c) {
            const VALUE_T xv = x[COL((INDEX_T)(column + c))];
            for (int r = 0; r < rows; ++r)
                sums[r] += TERM(val[base + c * BS + r], xv);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bsr_spmv_runs(BSR_ARGS, __global VALUE_T *restrict y, const VALUE_T alpha,
                   const VALUE_T beta, const INDEX_T n_runs)
{
    BLOCK_ROWS(y);
    const INDEX_T w = (INDEX_T)get_global_id(0);
    if (w >= n_runs)
        return;
    const INDEX_T last = runs[w + 1];
    for (INDEX_T br = runs[w]; br < last; ++br) {
        ACC_T sums[BS];
        for (int r = 0; r < BS; ++r)
            sums[r] = 0;
        const INDEX_T end = block_ptr[br + 1];
        for (INDEX_T j = block_ptr[br]; j < end; ++j) {
            const long base = (long)j * (BS * BS);
            const long column = (long)block_col[j] * BS;
            for (int c = 0; c < BS; ++c) {
                const VALUE_T xv = x[COL((INDEX_T)(column + c))];
                for (int r = 0; r < BS; ++r)
                    sums[r] += MUL(MAT_VALUE(val, base + c * BS + r), xv);
            }
        }
        ACC_T nan_if_not_finite = 0;  /* s * 0 is NaN for an infinite or NaN s */
        for (int r = 0; r < BS; ++r)
            nan_if_not_finite += sums[r] * (ACC_T)0;
        if (nan_if_not_finite != nan_if_not_finite)
            careful_sums(sums, 0, BS, br, block_ptr, block_col, val, colmap, x);
        const long row = (long)br * BS;
        for (int r = 0; r < BS; ++r)
            STORE_Y(y, row + r, sums[r]);
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bsr_spmv(BSR_ARGS, __global VALUE_T *restrict y, const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T row = (INDEX_T)get_global_id(0);
    if (row >= n_rows)
        return;
    const INDEX_T br = row / BS;
    const int r = (int)(row - br * BS);
    ACC_T sum[1] = {0};
    const INDEX_T end = block_ptr[br + 1];
    for (INDEX_T j = block_ptr[br]; j < end; ++j) {
        const long base = (long)j * (BS * BS) + r;
        const long column = (long)block_col[j] * BS;
        for (int c = 0; c < BS; ++c)
            sum[0] += MUL(MAT_VALUE(val, base + c * BS), x[COL((INDEX_T)(column + c))]);
    }
    if (!isfinite(sum[0]))
        careful_sums(sum, r, 1, br, block_ptr, block_col, val, colmap, x);
    STORE_Y(y, row, sum[0]);
}

/* y = alpha * A^T x + y (beta applied before by scale_y_t): row `row` adds alpha * x[row] times
 * its row of each block to the block's BS columns of y. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bsr_spmv_t(BSR_ARGS, __global VALUE_T *y, const VALUE_T alpha)
{
    const INDEX_T row = (INDEX_T)get_global_id(0);
    if (row >= n_rows)
        return;
    BLOCK_ROWS(x);
    const ACC_T ax = MUL(alpha, x[row]);
    const INDEX_T br = row / BS;
    const int r = (int)(row - br * BS);
    const INDEX_T end = block_ptr[br + 1];
    for (INDEX_T j = block_ptr[br]; j < end; ++j) {
        const long base = (long)j * (BS * BS) + r;
        const long column = (long)block_col[j] * BS;
        for (int c = 0; c < BS; ++c) {
            const VALUE_T v = val[base + c * BS];
            if (v != (VALUE_T)0)
                atomic_add_value(y + COL((INDEX_T)(column + c)), (VALUE_T)(v * ax));
        }
    }
}
