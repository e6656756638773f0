/* csr-blocks: CSR for CPUs, one work-item per block of whole rows.
 *   Rows block_row[b] .. block_row[b + 1] - 1 form block b; the host balances the blocks by
 *   entries (several per compute unit, so that PoCL's dynamic scheduling of work-groups evens out
 *   the cores). A work-item walks its rows and their entries in two plain sequential loops: no
 *   lanes, no local memory, contiguous reads the prefetchers follow.
 *   UNROLL  entries per step of the entry loop (1, 2, 4 or 8): with UNROLL > 1 a step loads
 *           UNROLL values and column indices as vectors (vloadn), gathers the UNROLL x values
 *           into a vector and adds their dot product to the row's sum (two dot products of 4 for
 *           UNROLL = 8), so the compiler emits SIMD multiplies; the rest of the row goes one entry
 *           at a time. (A vector of partial sums was faster still in float32, but Oclgrind's
 *           uninitialised-value checker crashes on vector arithmetic, so the kernels could no
 *           longer be checked; dot() is a builtin it handles.)
 * The entry loop (UNROLL = 1) gathers x before it loads the value: the same sum in the same
 *   order, but Debian's PoCL 3.1 then issues the column index's load ahead of the value's, and
 *   on the 2-core Zen 4 rows of random columns took 10-15 % less time (a 16-core Xeon with PoCL
 *   5.0, PyPI's PoCL 3.0 and Intel's runtime: no change in time; PyPI's compiler loads the
 *   index first either way).
 * The transpose and several-right-hand-sides products of csr-blocks run csr.cl's kernels on the
 * same CSR arrays. */
#include "common.h"

#ifndef UNROLL
#define UNROLL 1
#endif

#if UNROLL > 1
#define VW UNROLL
#include "vectors.h"
#if UNROLL == 8 /* dot() takes at most 4 components */
#define DOT(v, g) (dot(WIDEN(v).lo, WIDEN(g).lo) + dot(WIDEN(v).hi, WIDEN(g).hi))
#else
#define DOT(v, g) dot(WIDEN(v), WIDEN(g))
#endif
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_blocks_spmv(BLOCK_ARGS const INDEX_T n_blocks,
                     __global const INDEX_T *restrict block_row,
                     __global const INDEX_T *restrict row_ptr,
                     __global const INDEX_T *restrict col,
                     __global const VALUE_T *restrict val,
                     __global const VALUE_T *restrict x,
                     __global VALUE_T *restrict y,
                     const VALUE_T alpha, const VALUE_T beta LONG_ROW_ARG)
{
    BLOCK_ROWS(y);
    const INDEX_T b = (INDEX_T)get_global_id(0);
    if (b >= n_blocks)
        return;
    const INDEX_T last = block_row[b + 1];
    INDEX_T k = row_ptr[block_row[b]];
    for (INDEX_T row = block_row[b]; row < last; ++row) {
        const INDEX_T end = row_ptr[row + 1];
        if (IS_LONG(k, end)) {  /* a long row: its chunks store y (common.h, LONG_ROWS) */
            k = end;
            continue;
        }
        ACC_T sum = 0;
#if UNROLL > 1
        for (; k + UNROLL <= end; k += UNROLL) {
            const IVEC_T c = LOAD_INDICES(col + k);
            const VEC_T v = LOAD_VALUES(val + k);
            const VEC_T g = GATHER(c);
            sum += DOT(v, g);
        }
#endif
        for (; k < end; ++k) {
            const VALUE_T xk = x[COL(MAT_INDEX(col, k))];  /* the gather first: see above */
            sum += MUL(MAT_VALUE(val, k), xk);
        }
        STORE_Y(y, row, sum);
    }
}
