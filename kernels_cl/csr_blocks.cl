/* csr-blocks: CSR for CPUs, one work-item per block of whole rows.
 *   Rows block_row[b] .. block_row[b + 1] - 1 form block b; the host balances the blocks by
 *   entries (several per compute unit, so that PoCL's dynamic scheduling of work-groups evens out
 *   the cores). A work-item walks its rows and their entries in two plain sequential loops: no
 *   lanes, no local memory, contiguous reads the prefetchers follow.
 *   UNROLL  independent partial sums per row (1, 2 or 4): entry k of a row adds to sum k % UNROLL
 *           (in its main part), which breaks the dependency chain of the additions; the sums are
 *           added in order at the end of the row.
 * The transpose and several-right-hand-sides products of csr-blocks run csr.cl's kernels on the
 * same CSR arrays. */
#include "common.h"

#ifndef UNROLL
#define UNROLL 1
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_blocks_spmv(const INDEX_T n_blocks,
                     __global const INDEX_T *restrict block_row,
                     __global const INDEX_T *restrict row_ptr,
                     __global const INDEX_T *restrict col,
                     __global const VALUE_T *restrict val,
                     __global const VALUE_T *restrict x,
                     __global VALUE_T *restrict y,
                     const VALUE_T alpha, const VALUE_T beta)
{
    const INDEX_T b = (INDEX_T)get_global_id(0);
    if (b >= n_blocks)
        return;
    const INDEX_T last = block_row[b + 1];
    INDEX_T k = row_ptr[block_row[b]];
    for (INDEX_T row = block_row[b]; row < last; ++row) {
        const INDEX_T end = row_ptr[row + 1];
        ACC_T part[UNROLL];
        for (int u = 0; u < UNROLL; ++u)
            part[u] = 0;
        for (; k + UNROLL <= end; k += UNROLL)
            for (int u = 0; u < UNROLL; ++u)
                part[u] += val[k + u] * x[col[k + u]];
        for (; k < end; ++k)
            part[0] += val[k] * x[col[k]];
        for (int u = 1; u < UNROLL; ++u)
            part[0] += part[u];
        STORE_Y(y, row, part[0]);
    }
}
