/* csr-merge: merge-path CSR (formats/csr_merge.py describes the path, the shares and the
 * split rows).
 *
 * Build options beyond common.h:
 *   ITEMS  csr_merge_tiles: path steps per work-item (a tile is WG * ITEMS steps)
 *   LANES  csr_merge_fixup: work-items per split row, a power of two <= WG
 *
 * Share s runs from path coordinate (path_row[s], path_entry[s]) to (path_row[s+1],
 * path_entry[s+1]): rows whose end it consumes and entries it consumes. It stores every row that
 * starts and ends inside it in y, writes partial[2s] (its carry: the sum of its entries of row
 * path_row[s+1], the row it ends in) and, when it starts inside a row and ends that row,
 * partial[2s+1] (its head: the sum of its entries of that row). csr_merge_fixup completes the
 * split rows. No atomics: every y entry is written once, the same way on every run.
 *
 * As blocks of a larger matrix (BLOCK_ARGS, common.h): every kernel shifts y by row0 once, at its
 * start, and reads x through COL; the shares, split rows and partial buffer are the block's own
 * (row numbers in them are the block's). */
#include "common.h"

/* The arguments of both walks of the shares (csr_merge_tiles, csr_merge_chunks), after their
 * count of shares: the CSR arrays, the path coordinates of the shares, x, y, the carries and
 * heads (partial), alpha and beta. */
#define MERGE_ARGS \
    __global const INDEX_T *restrict row_ptr, __global const INDEX_T *restrict col, \
    __global const VALUE_T *restrict val, __global const INDEX_T *restrict path_row, \
    __global const INDEX_T *restrict path_entry, __global const VALUE_T *restrict x, \
    __global VALUE_T *restrict y, __global ACC_T *restrict partial, const VALUE_T alpha, \
    const VALUE_T beta

#ifdef ITEMS
#define TILE (WG * ITEMS)

/* One work-group per tile of TILE path steps. The tile's products val * x[col] and its row ends
 * (as offsets from the tile's first entry) are staged in local memory with consecutive loads;
 * each work-item then searches its diagonal lid * ITEMS there and walks ITEMS steps. A
 * segmented scan over the work-items' carries (keyed by the local row they end in) gives the
 * work-item finishing a row the sum of the earlier work-items' entries of it. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_merge_tiles(BLOCK_ARGS const INDEX_T n_tiles, MERGE_ARGS)
{
    BLOCK_ROWS(y);  /* the block's rows of y; partial belongs to the block */
    __local ACC_T products[TILE];
    __local INDEX_T ends[TILE];
    __local INDEX_T keys[WG];
    __local ACC_T sums[WG];
    const int lid = (int)get_local_id(0);
    const INDEX_T g = (INDEX_T)get_group_id(0);
    const INDEX_T i0 = path_row[g];
    const INDEX_T j0 = path_entry[g];
    const INDEX_T nr = path_row[g + 1] - i0;   /* row ends in the tile */
    const INDEX_T ne = path_entry[g + 1] - j0; /* entries in the tile */

    {   /* all loads of a work-item in flight at once, then the gathers of x */
        INDEX_T cols[ITEMS];
        VALUE_T vals[ITEMS];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const INDEX_T k = lid + it * WG;
            cols[it] = k < ne ? MAT_INDEX(col, j0 + k) : 0;
            vals[it] = k < ne ? MAT_VALUE(val, j0 + k) : (VALUE_T)0;
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const INDEX_T k = lid + it * WG;
            if (k < ne)
                products[k] = MUL(vals[it], x[COL(cols[it])]);
            if (k < nr)
                ends[k] = row_ptr[i0 + 1 + k] - j0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* this work-item's start: row ends k before diagonal d are those with ends[k] + k < d */
    const INDEX_T d = min((INDEX_T)(lid * ITEMS), nr + ne);
    INDEX_T lo = max((INDEX_T)0, d - ne);
    INDEX_T hi = min(d, nr);
    while (lo < hi) {
        const INDEX_T mid = (lo + hi) >> 1;
        if (ends[mid] + mid < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    INDEX_T ti = lo, tj = d - lo;
    const INDEX_T first_row = ti;
    ACC_T sum = 0, head = 0;
    bool finished = false;  /* a row end consumed: head holds the first row's sum */
    for (int it = 0; it < ITEMS; ++it) {
        if (ti < nr && ends[ti] <= tj) {
            if (finished)
                STORE_Y(y, i0 + ti, sum);
            else
                head = sum;
            finished = true;
            sum = 0;
            ++ti;
        } else if (tj < ne) {
            sum += products[tj];
            ++tj;
        }
    }

    /* inclusive segmented scan of the carries, keyed by the local row each work-item ends in
     * (keys never decrease, so equal keys are contiguous) */
    keys[lid] = ti;
    sums[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = 1; off < WG; off <<= 1) {
        ACC_T add = 0;
        if (lid >= off && keys[lid - off] == ti)
            add = sums[lid - off];
        barrier(CLK_LOCAL_MEM_FENCE);
        sums[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (finished) {  /* the first row this work-item ends: add the earlier work-items' part */
        const ACC_T total = head + ((lid > 0 && keys[lid - 1] == first_row) ? sums[lid - 1]
                                                                            : (ACC_T)0);
        if (first_row == 0 && j0 > row_ptr[i0])  /* the row began in an earlier tile */
            partial[2 * g + 1] = total;
        else
            STORE_Y(y, i0 + first_row, total);
    }
    if (lid == WG - 1)
        partial[2 * g] = sums[lid];
}
#endif

/* One work-item per chunk of the path, walked in sequential loops (for CPUs). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_merge_chunks(BLOCK_ARGS const INDEX_T n_chunks, MERGE_ARGS)
{
    BLOCK_ROWS(y);  /* the block's rows of y; partial belongs to the block */
    const INDEX_T s = (INDEX_T)get_global_id(0);
    if (s >= n_chunks)
        return;
    INDEX_T row = path_row[s];
    INDEX_T k = path_entry[s];
    const INDEX_T last = path_row[s + 1];
    const INDEX_T stop = path_entry[s + 1];
    if (row < last) {  /* the first row ends in this chunk; it may have begun before */
        const bool began = k > row_ptr[row];
        const INDEX_T end = row_ptr[row + 1];
        ACC_T sum = 0;
        for (; k < end; ++k)
            sum += MUL(MAT_VALUE(val, k), x[COL(MAT_INDEX(col, k))]);
        if (began)
            partial[2 * s + 1] = sum;
        else
            STORE_Y(y, row, sum);
        ++row;
    }
    for (; row < last; ++row) {
        const INDEX_T end = row_ptr[row + 1];
        ACC_T sum = 0;
        for (; k < end; ++k)
            sum += MUL(MAT_VALUE(val, k), x[COL(MAT_INDEX(col, k))]);
        STORE_Y(y, row, sum);
    }
    ACC_T carry = 0;  /* entries of the row the chunk ends in */
    for (; k < stop; ++k)
        carry += MUL(MAT_VALUE(val, k), x[COL(MAT_INDEX(col, k))]);
    partial[2 * s] = carry;
}

#ifdef LANES
/* Split rows t = first .. n_split - 1, r = split_row[t]: y[r] = alpha * (carries of shares
 * carry_first[t] .. head_share[t] - 1, then the head of share head_share[t]) + beta * y[r];
 * LANES work-items per split row, the carries strided over them and summed by a tree. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void csr_merge_fixup(BLOCK_ARGS const INDEX_T first, const INDEX_T n_split,
                     __global const INDEX_T *restrict split_row,
                     __global const INDEX_T *restrict carry_first,
                     __global const INDEX_T *restrict head_share,
                     __global const ACC_T *restrict partial,
                     __global VALUE_T *restrict y,
                     const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);  /* the block's rows of y; partial belongs to the block */
    const INDEX_T t = first + (INDEX_T)(get_global_id(0) / LANES);
    const int lid = (int)get_local_id(0);
    const int lane = lid & (LANES - 1);
    ACC_T sum = 0;
    if (t < n_split) {
        const INDEX_T end = head_share[t];
        for (INDEX_T s = carry_first[t] + lane; s < end; s += LANES)
            sum += partial[2 * s];
    }
#if LANES > 1
    __local ACC_T scratch[WG];
    sum = reduce_width(scratch, lid, lane, LANES, sum);
#endif
    if (lane == 0 && t < n_split)
        STORE_Y(y, split_row[t], sum + partial[2 * head_share[t] + 1]);
}
#endif
