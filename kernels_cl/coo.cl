/* COO (row-sorted triplets); HYB runs coo_spmv and coo_combine for its COO part.
 *
 * Build options beyond common.h:
 *   ITEMS  entries per work-item of coo_spmv (a work-group takes TILE = WG * ITEMS consecutive
 *          entries, its share) and of the tiles of coo_combine
 *
 * The forward product y = alpha A x + beta y is a segmented reduction by row over the
 * row-sorted entries, without atomics (Bell & Garland's COO kernel, done as each work-item
 * summing ITEMS consecutive entries plus a keyed scan across the work-items):
 *   coo_spmv     group g takes entries [g TILE, (g + 1) TILE): coalesced loads of row, col, val
 *                into local memory as (row, val * x[col]) pairs, then segment_scan. Rows that
 *                begin and end inside the share are stored at once; the partial sums of the
 *                share's first and last row (rows cut by the share's boundaries, or whole) are
 *                its two carries, (carry_row, carry_sum)[2g] and [2g + 1] (a share of one row:
 *                the whole sum in 2g, 0 in 2g + 1).
 *   coo_combine  one work-group: the same segmented reduction over the carries, in tiles of
 *                TILE, each tile's last segment carried into the next; stores the carry rows.
 *                A row of millions of entries is summed by all groups of coo_spmv and then
 *                by the whole combine group, never one work-item at a time.
 *   coo_empty    y = beta * y on the rows without entries (a bit mask: bit i of empty[i / 32]).
 *   coo_spmv_serial  coo_spmv for CPUs: shares of `items` entries per work-item, walked
 *                in one sequential loop (local memory and barriers cost more than they save
 *                there); two carries per work-item, combined by coo_combine.
 * Every y entry is written once and the result is the same on every run. HYB passes beta = 1
 * (its ELL part wrote y first) and has no empty rows to scale.
 *   coo_accumulate_t  the transpose product: atomic adds to y[col] (see its comment). */
#include "common.h"

#define TILE (WG * ITEMS)

/* The (row, value) pairs rows[p], vals[p], p < n <= TILE, of a tile in local memory are summed by
 * row: work-item lid takes positions lid * ITEMS .. lid * ITEMS + ITEMS - 1. Each sums the last
 * run of equal rows among its positions; a scan over the work-items, keyed by the row of each
 * one's last position (sorted rows: equal keys are neighbours), adds the runs of the preceding
 * work-items that end in that row. Returns the sum of the tile's values before position
 * lid * ITEMS of the row at that position (0 where the row starts there): the work-item then
 * walks its positions again from it (see SEGMENT_WALK). Every work-item must call it (barriers);
 * it ends with a barrier, and the caller must put one between its reads of keys or scan and
 * the next call. */
inline ACC_T segment_scan(__local const INDEX_T *rows, __local const ACC_T *vals,
                          __local INDEX_T *keys, __local ACC_T *scan, const int n, const int lid)
{
    const int first = lid * ITEMS;
    ACC_T run = 0;
    INDEX_T last = -1;  /* work-items without positions: key -1, after all the others */
    for (int i = 0; i < ITEMS && first + i < n; ++i) {
        const INDEX_T r = rows[first + i];
        if (r != last)
            run = 0;
        run += vals[first + i];
        last = r;
    }
    keys[lid] = last;
    scan[lid] = run;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < WG; d <<= 1) {  /* inclusive scan of the runs, restarting at each key */
        const ACC_T add = (lid >= d && keys[lid - d] == last) ? scan[lid - d] : (ACC_T)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return (lid > 0 && first < n && keys[lid - 1] == rows[first]) ? scan[lid - 1] : (ACC_T)0;
}

/* Walk the work-item's positions p with the running sum s of the row at p (started from
 * segment_scan's result); END runs where p is the last position of its row in the tile. */
#define SEGMENT_WALK(rows, vals, n, lid, s, END) \
    for (int i_ = 0; i_ < ITEMS && (lid) * ITEMS + i_ < (n); ++i_) { \
        const int p = (lid) * ITEMS + i_; \
        const INDEX_T r = rows[p]; \
        if (i_ > 0 && r != rows[p - 1]) \
            s = 0; \
        s += vals[p]; \
        if (p == (n) - 1 || rows[p + 1] != r) { END } \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_spmv(BLOCK_ARGS const INDEX_T nnz,
              __global const INDEX_T *restrict row,
              __global const INDEX_T *restrict col,
              __global const VALUE_T *restrict val,
              __global const VALUE_T *restrict x,
              __global VALUE_T *restrict y,
              __global INDEX_T *restrict carry_row,
              __global ACC_T *restrict carry_sum,
              const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    __local INDEX_T rows[TILE];
    __local ACC_T vals[TILE];
    __local INDEX_T keys[WG];
    __local ACC_T scan[WG];
    const int lid = (int)get_local_id(0);
    const INDEX_T g = (INDEX_T)get_group_id(0);
    const long start = (long)g * TILE;
    const int n = (int)min((long)TILE, (long)nnz - start);
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {  /* consecutive work-items, consecutive entries */
        const int p = lid + it * WG;
        if (p < n) {
            rows[p] = row[start + p];
            vals[p] = MUL(val[start + p], x[COL(col[start + p])]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ACC_T s = segment_scan(rows, vals, keys, scan, n, lid);
    const INDEX_T head = rows[0];
    SEGMENT_WALK(rows, vals, n, lid, s, {
        if (r == head) {
            carry_row[2 * g] = r;
            carry_sum[2 * g] = s;
            if (p == n - 1) {
                carry_row[2 * g + 1] = r;
                carry_sum[2 * g + 1] = 0;
            }
        } else if (p == n - 1) {
            carry_row[2 * g + 1] = r;
            carry_sum[2 * g + 1] = s;
        } else {
            STORE_Y(y, r, s);
        }
    })
}

/* The same product for CPUs: work-item i alone takes entries [i items, (i + 1) items) and walks
 * them in one sequential loop from global memory (no local memory, no barriers), with the two
 * carries of coo_spmv per work-item. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_spmv_serial(BLOCK_ARGS const INDEX_T nnz, const INDEX_T items,
                     __global const INDEX_T *restrict row,
                     __global const INDEX_T *restrict col,
                     __global const VALUE_T *restrict val,
                     __global const VALUE_T *restrict x,
                     __global VALUE_T *restrict y,
                     __global INDEX_T *restrict carry_row,
                     __global ACC_T *restrict carry_sum,
                     const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    const INDEX_T i = (INDEX_T)get_global_id(0);
    const long start = (long)i * items;
    if (start >= nnz)
        return;
    const INDEX_T end = (INDEX_T)min((long)nnz, start + items);
    const INDEX_T head = row[start];
    INDEX_T r = head;
    ACC_T s = 0;
    for (INDEX_T k = (INDEX_T)start; k < end; ++k) {
        const INDEX_T rk = row[k];
        if (rk != r) {  /* row r ends at k - 1 */
            if (r == head) {
                carry_row[2 * i] = r;
                carry_sum[2 * i] = s;
            } else {
                STORE_Y(y, r, s);
            }
            r = rk;
            s = 0;
        }
        s += MUL(val[k], x[COL(col[k])]);
    }
    if (r == head) {
        carry_row[2 * i] = r;
        carry_sum[2 * i] = s;
        s = 0;
    }
    carry_row[2 * i + 1] = r;
    carry_sum[2 * i + 1] = s;
}

/* One work-group: y[r] = alpha * (sum of the carries of row r) + beta * y[r] for every row of
 * the n_carries carries (sorted by row). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_combine(BLOCK_ARGS const INDEX_T n_carries,
                 __global const INDEX_T *restrict carry_row,
                 __global const ACC_T *restrict carry_sum,
                 __global VALUE_T *restrict y,
                 const VALUE_T alpha, const VALUE_T beta)
{
    BLOCK_ROWS(y);
    __local INDEX_T rows[TILE];
    __local ACC_T vals[TILE];
    __local INDEX_T keys[WG];
    __local ACC_T scan[WG];
    __local INDEX_T tail_row;  /* the previous tile's last row and its sum there */
    __local ACC_T tail_sum;
    const int lid = (int)get_local_id(0);
    INDEX_T prev_row = -1;
    ACC_T prev_sum = 0;
    for (INDEX_T start = 0; start < n_carries; start += TILE) {
        const int n = (int)min((INDEX_T)TILE, n_carries - start);
        for (int p = lid; p < n; p += WG) {
            const INDEX_T r = carry_row[start + p];
            rows[p] = r;
            vals[p] = carry_sum[start + p] + ((p == 0 && r == prev_row) ? prev_sum : (ACC_T)0);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        ACC_T s = segment_scan(rows, vals, keys, scan, n, lid);
        SEGMENT_WALK(rows, vals, n, lid, s, {
            /* the tile's last row goes on into the next tile: carry it there */
            const bool goes_on = p == n - 1 && n_carries - start > n
                                 && carry_row[start + n] == r;
            if (p == n - 1) {
                tail_row = goes_on ? r : -1;
                tail_sum = s;
            }
            if (!goes_on)
                STORE_Y(y, r, s);
        })
        barrier(CLK_LOCAL_MEM_FENCE);  /* also: rows, vals, keys, scan free for the next tile */
        prev_row = tail_row;
        prev_sum = tail_sum;
    }
}

/* y[i] = beta * y[i] (0 when beta == 0, y not read) for the rows i < n whose bit is set. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_empty(BLOCK_ARGS const INDEX_T n, __global const uint *restrict empty,
               __global VALUE_T *restrict y, const VALUE_T beta)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    BLOCK_ROWS(y);
    if (i < n && (empty[i >> 5] >> (i & 31)) & 1u)
        y[i] = (beta == (VALUE_T)0) ? (VALUE_T)0 : beta * y[i];
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
