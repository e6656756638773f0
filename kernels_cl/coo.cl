/* COO (row-sorted triplets); HYB runs the same kernels for its COO part.
 *
 * Build options beyond common.h:
 *   ITEMS  entries per work-item of coo_spmv (a work-group takes TILE = WG * ITEMS consecutive
 *          entries, its share)
 *
 * The forward product y = alpha A x + beta y is a segmented reduction by row over the
 * row-sorted entries, without atomics (Bell & Garland's COO kernel, done as each work-item
 * summing ITEMS consecutive entries in registers plus a keyed scan across the work-items):
 *   coo_spmv     group g takes positions [g TILE, (g + 1) TILE) of its input, each work-item
 *                ITEMS consecutive ones loaded straight into registers (vector loads where
 *                ITEMS is a multiple of 4), as (row, val * x[col]) pairs (entries) or
 *                (row, sum) pairs (carries of the level before). Rows that begin and end inside
 *                the share are stored at once; the partial sums of the share's first and last
 *                row (rows cut by the share's boundaries, or whole) are its two carries,
 *                (carry_row, carry_sum)[2g] and [2g + 1] (a share of one row: the whole sum in
 *                2g, 0 in 2g + 1). The carries, sorted by row, are reduced the same way by the
 *                next launch, and so on until one group takes them all and stores every row
 *                (its first and last row are then complete). A row of millions of entries is
 *                summed by all groups of the first level, then by a tree of levels (each
 *                TILE / 2 times smaller), never one work-item at a time.
 *   coo_empty    y = beta * y on the rows without entries (a bit mask: bit i of empty[i / 32]).
 *   coo_spmv_serial  the first level for CPUs: shares of `items` entries per work-item,
 *                walked in one sequential loop (local memory and barriers cost more than they
 *                save there); two carries per work-item, reduced by coo_spmv's levels.
 * Every y entry is written once and the result is the same on every run. HYB passes beta = 1
 * (its ELL part wrote y first) and has no empty rows to scale.
 *   coo_accumulate_t  the transpose product: atomic adds to y[col] (see its comment). */
#include "common.h"

#define TILE (WG * ITEMS)

/* The arguments of both first-level kernels (coo_spmv, coo_spmv_serial), after their own: the
 * triplets, x, y, the carries they write, alpha and beta. */
#define COO_ARGS \
    __global const INDEX_T *restrict row, __global const INDEX_T *restrict col, \
    __global const VALUE_T *restrict val, __global const VALUE_T *restrict x, \
    __global VALUE_T *restrict y, __global INDEX_T *restrict carry_row, \
    __global ACC_T *restrict carry_sum, const VALUE_T alpha, const VALUE_T beta
#ifdef VALUE_IS_DOUBLE
#define VALUE2_T double2
#else
#define VALUE2_T float2
#endif

/* Inclusive scan over the work-items of `run` restarting where `key` changes (keys never
 * decrease along the work-items, so equal keys are neighbours): returns the sum of the runs of
 * the work-items before lid whose key equals `first` (0 if none). Every work-item must call it;
 * it begins and ends with a barrier. */
inline ACC_T keyed_prefix(__local INDEX_T *keys, __local ACC_T *scan, const INDEX_T key,
                          const ACC_T run, const INDEX_T first, const int lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    keys[lid] = key;
    scan[lid] = run;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < WG; d <<= 1) {
        const ACC_T add = (lid >= d && keys[lid - d] == key) ? scan[lid - d] : (ACC_T)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ACC_T prefix = (lid > 0 && keys[lid - 1] == first) ? scan[lid - 1] : (ACC_T)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    return prefix;
}

/* One level of the segmented reduction (see the top of the file): `carries` = 0 reads the n
 * entries (row, col, val) and x (sums unused); `carries` = 1 reads n carries (row, sums) of the
 * level before (col, val and x unused). Launched with one work-group per TILE positions; with
 * one group it stores every row, its first and last included. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_spmv(BLOCK_ARGS const INDEX_T n, const int carries, __global const ACC_T *restrict sums,
              COO_ARGS)
{
    BLOCK_ROWS(y);
    __local INDEX_T keys[WG];
    __local ACC_T scan[WG];
    __local INDEX_T firsts[WG + 1];  /* each work-item's first row; -1 without positions */
    const int lid = (int)get_local_id(0);
    const INDEX_T g = (INDEX_T)get_group_id(0);
    const bool last_level = get_num_groups(0) == 1;
    const long tile0 = (long)g * TILE;
    const int tile_n = (int)min((long)TILE, (long)n - tile0);  /* positions of the share */
    const long base = tile0 + (long)lid * ITEMS;
    const int cnt = clamp(tile_n - lid * ITEMS, 0, ITEMS);     /* this work-item's positions */
    INDEX_T r[ITEMS];
    ACC_T v[ITEMS];
    if (carries) {
        for (int i = 0; i < ITEMS; ++i) {
            r[i] = i < cnt ? row[base + i] : -1;
            v[i] = i < cnt ? sums[base + i] : (ACC_T)0;
        }
    } else {
        INDEX_T c[ITEMS];
        VALUE_T a[ITEMS];
#if ITEMS % 4 == 0
        if (cnt == ITEMS) {  /* base is a multiple of ITEMS: aligned for 16-byte loads */
#pragma unroll
            for (int q = 0; q < ITEMS / 4; ++q) {
                vstore4(((__global const int4 *)(row + base))[q], q, r);
                vstore4(((__global const int4 *)(col + base))[q], q, c);
            }
#pragma unroll
            for (int q = 0; q < ITEMS / 2; ++q)
                vstore2(((__global const VALUE2_T *)(val + base))[q], q, a);
        } else
#endif
        {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                r[i] = i < cnt ? MAT_INDEX(row, base + i) : -1;
                c[i] = i < cnt ? MAT_INDEX(col, base + i) : 0;
                a[i] = i < cnt ? MAT_VALUE(val, base + i) : (VALUE_T)0;
            }
        }
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)  /* all gathers of x in flight at once */
            v[i] = i < cnt ? MUL(a[i], x[COL(c[i])]) : (ACC_T)0;
    }
    /* the run of this work-item's last row among its positions */
    const INDEX_T last = cnt > 0 ? r[cnt - 1] : -1;
    ACC_T run = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
        if (i < cnt)
            run = r[i] == last ? run + v[i] : (ACC_T)0;
    firsts[lid] = r[0];
    if (lid == 0)
        firsts[WG] = -1;
    ACC_T s = keyed_prefix(keys, scan, last, run, r[0], lid);
    const INDEX_T head = firsts[0];
    /* rows ending at this work-item's positions: at i < cnt - 1 where r[i + 1] differs, and at
     * cnt - 1 unless the next work-item goes on with the row */
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (i < cnt) {
            if (i > 0 && r[i] != r[i - 1])
                s = 0;
            s += v[i];
            const bool tail = lid * ITEMS + i == tile_n - 1;
            const INDEX_T next = i + 1 < cnt ? r[i + 1] : (tail ? -1 : firsts[lid + 1]);
            if (next != r[i]) {  /* row r[i] ends here (within the share) */
                if (last_level || (r[i] != head && !tail)) {
                    STORE_Y(y, r[i], s);
                } else if (r[i] == head) {
                    carry_row[2 * g] = r[i];
                    carry_sum[2 * g] = s;
                    if (tail) {
                        carry_row[2 * g + 1] = r[i];
                        carry_sum[2 * g + 1] = 0;
                    }
                } else {
                    carry_row[2 * g + 1] = r[i];
                    carry_sum[2 * g + 1] = s;
                }
            }
        }
    }
}

/* The same product for CPUs: work-item i alone takes entries [i items, (i + 1) items) and walks
 * them in one sequential loop from global memory (no local memory, no barriers), with the two
 * carries of coo_spmv per work-item. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void coo_spmv_serial(BLOCK_ARGS const INDEX_T nnz, const INDEX_T items, COO_ARGS)
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
        const INDEX_T rk = MAT_INDEX(row, k);
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
        s += MUL(MAT_VALUE(val, k), x[COL(MAT_INDEX(col, k))]);
    }
    if (r == head) {
        carry_row[2 * i] = r;
        carry_sum[2 * i] = s;
        s = 0;
    }
    carry_row[2 * i + 1] = r;
    carry_sum[2 * i + 1] = s;
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
