/* DIA: one array of values per stored diagonal, diagonal d holding A[r, r + offset[d]] at
 * d * n_pad + r, zero where the diagonal lies outside the matrix. A stored zero is
 * indistinguishable from a gap in the diagonal, so zeros are skipped: DIA treats explicit zeros
 * as absent (documented in clspmv/formats/dia.py).
 *
 * DIAGONAL_RUNS (= R, clspmv's default on GPUs): the offsets ascend, so the diagonals crossing a
 * stretch of R rows (R columns in the transpose) inside the matrix are one contiguous run of
 * them, stored by the host as [first, end) per stretch in runs (runs_t). A warp of R rows reads
 * its run once and loops over it without a bounds test or a branch: the padding it meets at the
 * matrix's edges holds zeros, x is read at a clamped index and the zero product dropped by a
 * select (no NaN from an Inf in x), so the loads of consecutive diagonals overlap. A matrix
 * whose diagonals wrap around (offsets d and d - n) reads only the half crossing each stretch.
 * Without it every work-item walks every diagonal with a bounds test and skips zeros by a
 * branch (CPUs, where the branch-free loop was slower: reports/2026-11-26-dia; with row_chunks
 * their forward product runs dia_spmv_chunks below). */
#include "common.h"

/* The slot of row r >= 0 on diagonal d: d * n_pad + r; with ROW_CHUNKS the values are stored
 * chunk by chunk of ROW_CHUNKS rows, each chunk's run of diagonals (those crossing it inside the
 * matrix: chunks[3c] .. chunks[3c + 1] - 1, stored from slot chunks[3c + 2] * ROW_CHUNKS on) one
 * diagonal after another, so that a walk of a chunk's diagonals reads one stream of values, not
 * one per diagonal, and no diagonal's stretch outside the matrix. d must cross row r inside the
 * matrix. (r - c * ROW_CHUNKS, not r % ROW_CHUNKS: Oclgrind 21.10 cannot run the LLVM freeze
 * that a division and a remainder of the same value become.) */
#ifdef ROW_CHUNKS
inline long chunk_slot(__global const INDEX_T *restrict chunks, const INDEX_T d, const long r)
{
    const long c = r / ROW_CHUNKS;
    return ((long)chunks[3 * c + 2] + d - chunks[3 * c]) * ROW_CHUNKS + (r - c * ROW_CHUNKS);
}
#define SLOT(d, r) chunk_slot(chunks, d, r)
#else
#define SLOT(d, r) ((long)(d) * n_pad + (r))
#endif

/* Every kernel's arguments (Dia._args in clspmv/formats/dia.py); runs: the forward product's
 * runs, or the transpose's (runs_t), or the offsets standing in, unread; chunks: ROW_CHUNKS's
 * table (SLOT above), or the offsets standing in. */
#define DIA_ARGS BLOCK_ARGS const INDEX_T n_rows, const INDEX_T n_cols, const INDEX_T n_pad, \
    const INDEX_T n_diags, __global const INDEX_T *restrict offsets, \
    __global const INDEX_T *restrict runs, __global const INDEX_T *restrict chunks, \
    __global const VALUE_T *restrict val, \
    __global const VALUE_T *restrict x, __global VALUE_T *restrict y, \
    const VALUE_T alpha, const VALUE_T beta

#ifndef ROW_CHUNKS /* with row chunks the forward product is dia_spmv_chunks */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dia_spmv(DIA_ARGS)
{
    BLOCK_ROWS(y);
    const INDEX_T row = (INDEX_T)get_global_id(0);
    if (row >= n_rows)
        return;
    ACC_T sum = 0;
#ifdef DIAGONAL_RUNS
    const INDEX_T stretch = 2 * (row / DIAGONAL_RUNS);
    const INDEX_T end = runs[stretch + 1];
    for (INDEX_T d = runs[stretch]; d < end; ++d) {
        const long c = clamp((long)row + offsets[d], 0L, (long)n_cols - 1);
        const VALUE_T v = MAT_VALUE(val, SLOT(d, row));
        const VALUE_T xv = x[COL((INDEX_T)c)];
        sum += (v != (VALUE_T)0) ? MUL(v, xv) : (ACC_T)0;
    }
#else
    for (INDEX_T d = 0; d < n_diags; ++d) {
        const long c = (long)row + offsets[d];
        if (c >= 0 && c < n_cols) {
            const VALUE_T v = MAT_VALUE(val, SLOT(d, row));
            if (v != (VALUE_T)0)
                sum += MUL(v, x[COL((INDEX_T)c)]);
        }
    }
#endif
    STORE_Y(y, row, sum);
}
#endif

/* Transpose product y = alpha * A^T x + beta * y without atomics: output c gathers
 * A[c - offset[d], c] from every diagonal d (with DIAGONAL_RUNS from its stretch's run, the
 * row index clamped into the matrix and the value of a row outside it dropped by a select). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dia_spmv_t(DIA_ARGS)
{
    BLOCK_ROWS(x);
    const INDEX_T c = (INDEX_T)get_global_id(0);
    if (c >= n_cols)
        return;
    ACC_T sum = 0;
#ifdef DIAGONAL_RUNS
    const INDEX_T stretch = 2 * (c / DIAGONAL_RUNS);
    const INDEX_T end = runs[stretch + 1];
    for (INDEX_T d = runs[stretch]; d < end; ++d) {
        const long r = (long)c - offsets[d];
        const INDEX_T inside = (INDEX_T)clamp(r, 0L, (long)n_rows - 1);
        const VALUE_T v = val[r == inside ? SLOT(d, inside) : 0];  /* a row inside: d crosses it */
        const VALUE_T xv = x[inside];
        sum += (r == inside && v != (VALUE_T)0) ? MUL(v, xv) : (ACC_T)0;
    }
#else
    for (INDEX_T d = 0; d < n_diags; ++d) {
        const long r = (long)c - offsets[d];
        if (r >= 0 && r < n_rows) {
            const VALUE_T v = val[SLOT(d, r)];
            if (v != (VALUE_T)0)
                sum += MUL(v, x[(INDEX_T)r]);
        }
    }
#endif
    STORE_Y(y, COL(c), sum);
}

/* ROW_CHUNKS (row_chunks=True, for CPUs; a work-group of one work-item): each work-item takes
 * rows_per_item consecutive rows, in chunks of ROW_CHUNKS rows whose sums it keeps in an array;
 * for each diagonal it walks the chunk's rows that the diagonal crosses inside the matrix, a
 * loop over consecutive values and consecutive entries of x that the compiler vectorises (PoCL
 * runs one work-item's loop, not work-items side by side), then stores the chunk's rows. The
 * chunk's values are one stream (SLOT above). */
#ifdef ROW_CHUNKS
/* CHUNK_VW: a chunk whose every diagonal crosses all its rows inside the matrix (all chunks but
 * those at the matrix's edges) keeps its sums in ROW_CHUNKS / CHUNK_VW vectors of CHUNK_VW rows,
 * in registers, and adds each diagonal's stretch to them: one load of values and one of x per
 * vector and diagonal, where the array of sums is also loaded and stored again per diagonal;
 * the vectors are then stored into y as they are (alpha and beta applied to whole vectors), not
 * row by row through the array of sums: kernel time 0.60-0.94x on 3-16 diagonals and 0.93-1.01x
 * on a 27-point stencil on a 16-core Xeon with PoCL 5.0, 0.85-1.05x (median 0.95) on the 2-core
 * Zen 4 with Debian's PoCL 3.1, 0.94-1.05x with PyPI's PoCL 3.0 on the Xeon
 * (reports/experiments/2026-11-30-dia-vector-store).
 * On the 2-core Xeon (reports/experiments/2026-11-29-dia-chunk-vectors): 1.05-1.26x in float64
 * and 1.2-1.7x in float32 with Debian's PoCL 3.1, 1.05-1.75x with Intel's runtime (0.97 on 3
 * diagonals), with PyPI's PoCL 3.0 1.04-1.37x from 27 diagonals on and 0.87-0.99x on 3-5. Not
 * with a column map (x is then a gather) nor with float values summed in double
 * (dtype="mixed": 0.81-0.96x with Debian's PoCL). A zero value's term is dropped by zeroing its
 * x (a gap times an Inf or NaN in x gives no NaN). */
#if !defined(COLMAP) && (defined(VALUE_IS_DOUBLE) || !defined(ACC_IS_DOUBLE))
/* 64-byte vectors, 32-byte ones with NARROW_VECTORS (set by clspmv where the compiler aborts
 * on wider ones: Device.narrow_vectors in clspmv/device.py) */
#if defined(VALUE_IS_DOUBLE) && defined(NARROW_VECTORS)
#define VW 4
#elif defined(VALUE_IS_DOUBLE)
#define VW 8
#elif defined(NARROW_VECTORS)
#define VW 8
#else
#define VW 16
#endif
#define CHUNK_VW VW
#include "vectors.h"
#endif
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dia_spmv_chunks(DIA_ARGS, const INDEX_T rows_per_item)
{
    BLOCK_ROWS(y);
    const long begin = (long)get_global_id(0) * rows_per_item;
    const long end = min(begin + (long)rows_per_item, (long)n_rows);
    for (long r0 = begin; r0 < end; r0 += ROW_CHUNKS) {
        const long count = min((long)ROW_CHUNKS, end - r0);
        ACC_T sums[ROW_CHUNKS];
        for (int i = 0; i < ROW_CHUNKS; ++i)
            sums[i] = 0;
        const long c = r0 / ROW_CHUNKS;  /* r0 starts chunk c: its run and first slot */
        const INDEX_T first = chunks[3 * c], end_d = chunks[3 * c + 1];
        const long base = (long)chunks[3 * c + 2] * ROW_CHUNKS;
#ifdef CHUNK_VW
        if (count == ROW_CHUNKS && first < end_d && r0 + offsets[first] >= 0
                && r0 + ROW_CHUNKS + offsets[end_d - 1] <= (long)n_cols) {
            VEC_T acc[ROW_CHUNKS / CHUNK_VW];
            for (int j = 0; j < ROW_CHUNKS / CHUNK_VW; ++j)
                acc[j] = 0;
            for (INDEX_T d = first; d < end_d; ++d) {
                __global const VALUE_T *v = val + base + (long)(d - first) * ROW_CHUNKS;
                __global const VALUE_T *xs = x + r0 + offsets[d];
                for (int j = 0; j < ROW_CHUNKS / CHUNK_VW; ++j) {
                    const VEC_T vv = LOAD_VALUES(v + j * CHUNK_VW);
                    const VEC_T xv = LOAD_VALUES(xs + j * CHUNK_VW);
                    acc[j] += vv * select((VEC_T)0, xv, vv != (VEC_T)0);
                }
            }
            __global VALUE_T *ys = y + r0;  /* the chunk's rows, stored from the vectors */
            for (int j = 0; j < ROW_CHUNKS / CHUNK_VW; ++j) {
                VEC_T out = (VEC_T)alpha * acc[j];
                if (beta != (VALUE_T)0)
                    out += (VEC_T)beta * LOAD_VALUES(ys + j * CHUNK_VW);
                CAT(vstore, CHUNK_VW)(out, j, ys);
            }
            continue;
        }
#endif
        for (INDEX_T d = first; d < end_d; ++d) {
            const long offset = offsets[d];
            /* rows r0 + i with 0 <= r0 + i + offset < n_cols */
            const int lo = (int)clamp(-offset - r0, 0L, count);
            const int hi = (int)clamp((long)n_cols - offset - r0, (long)lo, count);
            const long diagonal = base + (long)(d - first) * ROW_CHUNKS;  /* SLOT(d, r0) */
            const long column = r0 + offset;
            for (int i = lo; i < hi; ++i) {
                const VALUE_T v = MAT_VALUE(val, diagonal + i);
                const VALUE_T xv = x[COL((INDEX_T)(column + i))];
                sums[i] += (v != (VALUE_T)0) ? MUL(v, xv) : (ACC_T)0;
            }
        }
        for (int i = 0; i < count; ++i)
            STORE_Y(y, r0 + i, sums[i]);
    }
}
#endif
