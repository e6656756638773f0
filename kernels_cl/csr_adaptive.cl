/* csr-adaptive: load-balanced CSR products (formats/csr_adaptive.py describes the layout).
 *
 * Build options beyond common.h:
 *   CAP  entries of one row block (and of one chunk of a long row); CAP values fit local memory
 *
 * csr_adaptive_spmv runs n_blocks + n_chunks work-groups. Group g < n_blocks takes row block g
 * (rows blocks[4g] .. blocks[4g+1]-1, entries blocks[4g+2] .. blocks[4g+3]-1, at most CAP: the
 * entry range is stored so that the loads of the entries wait for one load, not for the row
 * pointers too, and each work-item loads its first row's two pointers beside the entries, not
 * after the barrier): its work-items stream the block's
 * products val * x[col] into local memory with consecutive (coalesced) loads, then sum each row
 * there, block_lanes[g] work-items per row (chosen on the host from the block's row lengths,
 * WG / lanes rows at a time). Group n_blocks + c
 * takes chunk c of a long row (entries chunks[2c] .. chunks[2c+1]-1) and writes its sum to
 * partial[c]; csr_adaptive_combine then adds the chunks of each long row (a work-group per long
 * row: a strided loop, then a tree, in a fixed order) and stores y.
 * No atomics: every y entry is written once, the result is the same on every run. */
#include "common.h"

#define LOADS ((CAP + WG - 1) / WG)  /* entries per work-item of a full block */

/* Work-item lid's entries i = lid + it * WG (it < LOADS, i < n <= CAP) of the run starting at
 * col, val: their column indices and values into registers, with a fixed, unrolled trip count,
 * so that each work-item has 2 * LOADS independent loads in flight at once, then the LOADS
 * gathers of x (a strided loop would wait for one load at a time: latency-bound). Slots with
 * i >= n hold 0 and are never used: the products are masked by i < n again. */
#define LOAD_ENTRIES(cols, vals, col, val, n, lid) \
    INDEX_T cols[LOADS]; \
    VALUE_T vals[LOADS]; \
    _Pragma("unroll") \
    for (int it_ = 0; it_ < LOADS; ++it_) { \
        const INDEX_T i_ = (lid) + it_ * WG; \
        cols[it_] = i_ < (n) ? MAT_INDEX(col, i_) : 0; \
        vals[it_] = i_ < (n) ? MAT_VALUE(val, i_) : (VALUE_T)0; \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_adaptive_spmv(BLOCK_ARGS const INDEX_T n_blocks,
                       __global const INDEX_T *restrict row_ptr,
                       __global const INDEX_T *restrict col,
                       __global const VALUE_T *restrict val,
                       __global const INDEX_T *restrict blocks,
                       __global const INDEX_T *restrict block_lanes,
                       __global const INDEX_T *restrict chunks,
                       __global const VALUE_T *restrict x,
                       __global VALUE_T *restrict y,
                       __global ACC_T *restrict partial,
                       const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    __local ACC_T products[CAP];
    __local ACC_T scratch[WG];
    const int lid = (int)get_local_id(0);
    const INDEX_T group = (INDEX_T)get_group_id(0);

    if (group >= n_blocks) {  /* one chunk of a long row: entries in registers, then a tree */
        const INDEX_T c = group - n_blocks;
        const INDEX_T first = chunks[2 * c];
        const INDEX_T n = chunks[2 * c + 1] - first;
        LOAD_ENTRIES(cols, vals, col + first, val + first, n, lid)
        ACC_T sum = 0;
#pragma unroll
        for (int it = 0; it < LOADS; ++it)
            if (lid + it * WG < n)
                sum += MUL(vals[it], x[COL(cols[it])]);
        sum = reduce_width(scratch, lid, lid, WG, sum);
        if (lid == 0)
            partial[c] = sum;
        return;
    }

    const INDEX_T first = blocks[4 * group];
    const INDEX_T n_rows = blocks[4 * group + 1] - first;
    const INDEX_T start = blocks[4 * group + 2];
    const INDEX_T n = blocks[4 * group + 3] - start;
    const int lanes = block_lanes[group];  /* chosen on the host from this block's rows */
    const int lane = lid & (lanes - 1);
    const int slots = WG / lanes;  /* rows summed at once */
    /* this work-item's row of the first pass, and its entries in the block */
    INDEX_T r = lid / lanes;
    INDEX_T row_begin = 0, row_end = 0;
    if (r < n_rows) {
        row_begin = row_ptr[first + r] - start;
        row_end = row_ptr[first + r + 1] - start;
    }
    {
        LOAD_ENTRIES(cols, vals, col + start, val + start, n, lid)
#pragma unroll
        for (int it = 0; it < LOADS; ++it)
            if (lid + it * WG < n)
                products[lid + it * WG] = MUL(vals[it], x[COL(cols[it])]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (INDEX_T r0 = 0; r0 < n_rows; r0 += slots) {  /* once when lanes > 1 */
        if (r0 > 0) {  /* a later pass (one lane per row, more rows than work-items) */
            r = r0 + lid / lanes;
            if (r < n_rows) {
                row_begin = row_ptr[first + r] - start;
                row_end = row_ptr[first + r + 1] - start;
            }
        }
        ACC_T sum = 0;
        if (r < n_rows)
            for (INDEX_T i = row_begin + lane; i < row_end; i += lanes)
                sum += products[i];
        if (lanes > 1) {
            sum = reduce_width(scratch, lid, lane, lanes, sum);
            barrier(CLK_LOCAL_MEM_FENCE);  /* all have read scratch before the next pass */
        }
        if (lane == 0 && r < n_rows)
            STORE_Y(y, first + r, sum);
    }
}

/* y[long_rows[l]] = alpha * (sum of partial[long_ptr[l] .. long_ptr[l+1]-1]) + beta * y, one
 * work-group per long row. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_adaptive_combine(BLOCK_ARGS const INDEX_T n_long,
                          __global const INDEX_T *restrict long_rows,
                          __global const INDEX_T *restrict long_ptr,
                          __global const ACC_T *restrict partial,
                          __global VALUE_T *restrict y,
                          const VALUE_T alpha, const VALUE_T beta)
{
    /* one work-group per long row (n_long groups exactly): its chunks' sums in a strided loop,
     * then a tree, so that a row of thousands of chunks does not wait on one work-item's loop
     * (a row of 4 M entries, about 500 chunks, took twice the rest of the product that way) */
    BLOCK_ROWS(y);
    __local ACC_T scratch[WG];
    const int lid = (int)get_local_id(0);
    const INDEX_T l = (INDEX_T)get_group_id(0);
    ACC_T sum = 0;
    const INDEX_T end = long_ptr[l + 1];
    for (INDEX_T p = long_ptr[l] + lid; p < end; p += WG)
        sum += partial[p];
    sum = reduce_width(scratch, lid, lid, WG, sum);
    if (lid == 0)
        STORE_Y(y, long_rows[l], sum);
}
