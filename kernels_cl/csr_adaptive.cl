/* csr-adaptive: load-balanced CSR products (formats/csr_adaptive.py describes the layout).
 *
 * Build options beyond common.h:
 *   CAP    entries of one row block (and of one chunk of a long row); CAP values fit local memory
 *   ALIGN  a power of two (default 1): a row block whose first entry e is not a multiple of
 *          ALIGN is loaded from the multiple before it, so that every warp's loads start on a
 *          line; the e % ALIGN entries before e belong to earlier rows, their products land in
 *          local memory before the block's and are never read (the partition keeps e % ALIGN
 *          plus the block's entries within CAP, and starts a long row's chunks after its first
 *          at multiples of ALIGN)
 *   PRELOAD  passes of a row block whose row pointers each work-item loads before the barrier,
 *          at once (default 1; formats/csr_adaptive.py's PRELOAD_PASSES on GPUs)
 *   LANE_SUMS  running sums of each work-item summing a row from local memory (default 1;
 *          formats/csr_adaptive.py's LANE_SUMS): that many local loads in flight at once
 *   LANE_STEP_COST, PASS_COST  the lanes' cost model (formats/csr_adaptive.py's constants of
 *          the same names): csr_adaptive_lanes exists where both are defined
 *
 * csr_adaptive_spmv runs n_blocks + n_chunks work-groups. Group g < n_blocks takes row block g
 * (rows blocks[4g] .. blocks[4g+1]-1, entries blocks[4g+2] .. blocks[4g+3]-1, at most CAP: the
 * entry range is stored so that the loads of the entries wait for one load, not for the row
 * pointers too, and each work-item loads its first row's two pointers beside the entries, not
 * after the barrier): its work-items stream the block's
 * products val * x[col] into local memory with consecutive (coalesced) loads, then sum each row
 * there, block_lanes[g] work-items per row (chosen on the host from the block's row lengths,
 * WG / lanes rows at a time, a pass; with warp shuffles and at most 32 lanes the passes need no
 * barrier between them, so each warp goes on at its own pace). Group n_blocks + c
 * takes chunk c of a long row (entries chunks[2c] .. chunks[2c+1]-1) and writes its sum to
 * partial[c]; csr_adaptive_combine then adds the chunks of each long row (a work-group per long
 * row: a strided loop, then a tree, in a fixed order) and stores y.
 * No atomics: every y entry is written once, the result is the same on every run.
 *
 * SPLIT_ROWS (formats/adaptive_split.py): the groups take tiles of CAP consecutive entries
 * whatever the rows. A block (6 values: first row, end row, first entry, end entry, head piece,
 * tail piece) sums each of its rows' entries within its tile; its first row, when it began in
 * an earlier tile (head piece >= 0), and its last row, when it goes on in a later one (tail
 * piece >= 0), go to partial[piece] instead of y. A chunk (3 values: first entry, end entry,
 * piece) writes partial[piece]. csr_adaptive_combine adds the pieces of the split rows of many
 * pieces, csr_adaptive_combine_short those of the others, one work-item each. */
#include "common.h"

#ifdef SPLIT_ROWS
#define BLOCK_VALUES 6
#define CHUNK_VALUES 3
#else
#define BLOCK_VALUES 4
#define CHUNK_VALUES 2
#endif

#define LOADS ((CAP + WG - 1) / WG)  /* entries per work-item of a full block */
#ifndef ALIGN
#define ALIGN 1
#endif
#ifndef PRELOAD
#define PRELOAD 1
#endif
#ifndef LANE_SUMS
#define LANE_SUMS 1
#endif

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
        const INDEX_T first = chunks[CHUNK_VALUES * c];
        const INDEX_T n = chunks[CHUNK_VALUES * c + 1] - first;
        LOAD_ENTRIES(cols, vals, col + first, val + first, n, lid)
        ACC_T sum = 0;
#pragma unroll
        for (int it = 0; it < LOADS; ++it)
            if (lid + it * WG < n)
                sum += MUL(vals[it], x[COL(cols[it])]);
        sum = reduce_width(scratch, lid, lid, WG, sum);
        if (lid == 0)
#ifdef SPLIT_ROWS
            partial[chunks[CHUNK_VALUES * c + 2]] = sum;
#else
            partial[c] = sum;
#endif
        return;
    }

    const INDEX_T first = blocks[BLOCK_VALUES * group];
    const INDEX_T n_rows = blocks[BLOCK_VALUES * group + 1] - first;
    const INDEX_T start = blocks[BLOCK_VALUES * group + 2];
    const INDEX_T n = blocks[BLOCK_VALUES * group + 3] - start;
    const INDEX_T base = start & ~(ALIGN - 1);  /* where the loads start (see ALIGN) */
    const INDEX_T loaded = n + (start - base);
#ifdef SPLIT_ROWS
    const INDEX_T head = blocks[BLOCK_VALUES * group + 4];
    const INDEX_T tail = blocks[BLOCK_VALUES * group + 5];
/* a row's entries within the tile: its first row may begin before it, its last end after it */
#define ROW_BEGIN(r) (max(row_ptr[first + (r)], start) - base)
#define ROW_END(r) (min(row_ptr[first + (r) + 1], start + n) - base)
#define STORE_ROW(r, sum) do { \
        if ((r) == 0 && head >= 0) \
            partial[head] = (sum); \
        else if ((r) == n_rows - 1 && tail >= 0) \
            partial[tail] = (sum); \
        else \
            STORE_Y(y, first + (r), (sum)); \
    } while (0)
#else
#define ROW_BEGIN(r) (row_ptr[first + (r)] - base)
#define ROW_END(r) (row_ptr[first + (r) + 1] - base)
#define STORE_ROW(r, sum) STORE_Y(y, first + (r), (sum))
#endif
/* rb, re: the entries of the block's row rr within products (0, 0 past the block's rows) */
#define ROW_RANGE(rr, rb, re) do { \
        (rb) = (rr) < n_rows ? ROW_BEGIN(rr) : 0; \
        (re) = (rr) < n_rows ? ROW_END(rr) : 0; \
    } while (0)
#ifdef CLSPMV_WARP_SUM
#define SCRATCH_USED(lanes) ((lanes) > 32)  /* narrower groups sum through shuffles */
#else
#define SCRATCH_USED(lanes) 1
#endif
/* sum: a lane's products of a row (rb .. re-1, every lanes-th from its own) in LANE_SUMS running
 * sums, so that that many local loads are in flight at once, then added in a fixed order */
#define LANE_SUM(sum, rb, re) do { \
        ACC_T parts_[LANE_SUMS]; \
        _Pragma("unroll") \
        for (int k_ = 0; k_ < LANE_SUMS; ++k_) \
            parts_[k_] = 0; \
        INDEX_T i_ = (rb) + lane; \
        for (; i_ + (LANE_SUMS - 1) * lanes < (re); i_ += LANE_SUMS * lanes) { \
            _Pragma("unroll") \
            for (int k_ = 0; k_ < LANE_SUMS; ++k_) \
                parts_[k_] += products[i_ + k_ * lanes]; \
        } \
        for (; i_ < (re); i_ += lanes) \
            parts_[0] += products[i_]; \
        _Pragma("unroll") \
        for (int k_ = 1; k_ < LANE_SUMS; ++k_) \
            parts_[0] += parts_[k_]; \
        (sum) = parts_[0]; \
    } while (0)
/* one pass's row rr (entries rb .. re-1 of products) summed by its lanes and stored; the barrier
 * only where the sum went through scratch, which the next pass writes again */
#define SUM_ROW(rr, rb, re) do { \
        const INDEX_T r_ = (rr); \
        ACC_T sum_ = 0; \
        if (r_ < n_rows) \
            LANE_SUM(sum_, rb, re); \
        if (lanes > 1) { \
            sum_ = reduce_width(scratch, lid, lane, lanes, sum_); \
            if (SCRATCH_USED(lanes)) \
                barrier(CLK_LOCAL_MEM_FENCE); \
        } \
        if (lane == 0 && r_ < n_rows) \
            STORE_ROW(r_, sum_); \
    } while (0)
    const int lanes = block_lanes[group];  /* chosen on the host from this block's rows */
    const int lane = lid & (lanes - 1);
    const int slots = WG / lanes;  /* rows summed at once */
    /* the row pointers of this work-item's rows of the first PRELOAD passes (pass p sums rows
     * p * slots .. p * slots + slots - 1): the first pass's loaded beside the entries, the
     * others after the products, all arriving while the group waits at the barrier */
    INDEX_T begins[PRELOAD], ends[PRELOAD];
    ROW_RANGE(lid / lanes, begins[0], ends[0]);
    {
        LOAD_ENTRIES(cols, vals, col + base, val + base, loaded, lid)
#pragma unroll
        for (int it = 0; it < LOADS; ++it)
            if (lid + it * WG < loaded)
                products[lid + it * WG] = MUL(vals[it], x[COL(cols[it])]);
    }
#pragma unroll
    for (int p = 1; p < PRELOAD; ++p)
        ROW_RANGE(p * slots + lid / lanes, begins[p], ends[p]);
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int p = 0; p < PRELOAD; ++p) {
        if (p * slots >= n_rows)
            break;
        SUM_ROW(p * slots + lid / lanes, begins[p], ends[p]);
    }
    for (INDEX_T r0 = PRELOAD * slots; r0 < n_rows; r0 += slots) {  /* later passes */
        const INDEX_T rr = r0 + lid / lanes;
        INDEX_T rb, re;
        ROW_RANGE(rr, rb, re);
        SUM_ROW(rr, rb, re);
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

#ifdef SPLIT_ROWS
/* y[split_rows[l]] = alpha * (sum of partial[split_ptr[l] .. split_ptr[l+1]-1]) + beta * y, one
 * work-item per split row of few pieces, in their order. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_adaptive_combine_short(BLOCK_ARGS const INDEX_T n_split,
                                __global const INDEX_T *restrict split_rows,
                                __global const INDEX_T *restrict split_ptr,
                                __global const ACC_T *restrict partial,
                                __global VALUE_T *restrict y,
                                const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T l = (INDEX_T)get_global_id(0);
    if (l >= n_split)
        return;
    ACC_T sum = 0;
    const INDEX_T end = split_ptr[l + 1];
    for (INDEX_T p = split_ptr[l]; p < end; ++p)
        sum += partial[p];
    STORE_Y(y, split_rows[l], sum);
}
#endif

/* The work-items per row of each row block (block_lanes[b], the power of two L <= WG that
 * minimises sum over its passes of ceil(longest row / L) + LANE_STEP_COST * log2 L + PASS_COST,
 * a pass being WG / L consecutive rows of the block, ties to the fewer lanes: the cost model of
 * formats/csr_adaptive.py's block_lanes, which defines LANE_STEP_COST and PASS_COST), one
 * work-item per block, run once at the upload from the row pointers already on the device (the
 * host's version walks every row: most of a conversion in GPU layouts). Not with SPLIT_ROWS;
 * built where the format defines the cost model's constants (not for the chunks of csr_chunks). */
#if defined(LANE_STEP_COST) && defined(PASS_COST)
__kernel void csr_adaptive_lanes(BLOCK_ARGS const INDEX_T n_blocks,
                                 __global const INDEX_T *restrict row_ptr,
                                 __global const INDEX_T *restrict blocks,
                                 __global INDEX_T *restrict block_lanes)
{
    const INDEX_T b = (INDEX_T)get_global_id(0);
    if (b >= n_blocks)
        return;
    const INDEX_T first = blocks[BLOCK_VALUES * b], end = blocks[BLOCK_VALUES * b + 1];
    ulong best_cost = ULONG_MAX;
    INDEX_T best = 1;
    ulong steps = 0;
    for (INDEX_T lanes = 1; lanes <= WG; lanes *= 2, ++steps) {
        const INDEX_T rows = WG / lanes;  /* a pass */
        ulong cost = 0;
        for (INDEX_T p = first; p < end; p += rows) {
            const INDEX_T stop = min(p + rows, end);
            INDEX_T longest = 0;
            for (INDEX_T r = p; r < stop; ++r)
                longest = max(longest, row_ptr[r + 1] - row_ptr[r]);
            cost += (ulong)((longest + lanes - 1) / lanes) + LANE_STEP_COST * steps + PASS_COST;
        }
        if (cost < best_cost) {
            best_cost = cost;
            best = lanes;
        }
    }
    block_lanes[b] = best;
}
#endif
