/* Definitions shared by every clspmv kernel.
 *
 * Build options (set by clspmv/build.py):
 *   VALUE_T  float or double: matrix and vector values
 *   VALUE_IS_DOUBLE  defined when VALUE_T is double
 *   INDEX_T  int: column indices, row pointers, row lengths
 *   ACC_T    accumulator type (defaults to VALUE_T); double with VALUE_T float is clspmv's
 *            dtype="mixed": every product MUL(a, b) and every sum in double, y rounded once
 *   ACC_IS_DOUBLE  defined when ACC_T is double
 *   WG       work-group size the kernel is launched with
 *   T        work-items that share one row (kernels that split rows), a power of two <= WG
 *   KB       columns of X per block in the several-right-hand-sides kernels (*_matmat)
 *   UNROLL   entries of a row per loop iteration in the forward products of csr.cl and ell.cl
 *            (1, 2, 4 or 8; default 1, the plain loop), each into a partial sum of its own
 *   ROW_MAJOR ell.cl: rows stored one after the other instead of column-major (see ell.cl)
 *   NATIVE_ATOMICS  use cl_ext_float_atomics (set together with -cl-std=CL3.0 or CL2.0)
 *   COLMAP   the matrix is a block with compact column numbers and a column map (see BLOCK_ARGS)
 *   NARROW_VECTORS  OpenCL vectors of 32 bytes at most, where the compiler aborts on wider ones
 *            (clspmv's Device.narrow_vectors; dia.cl's row chunks)
 */
#ifndef CLSPMV_COMMON_H
#define CLSPMV_COMMON_H

#if defined(VALUE_IS_DOUBLE) || defined(ACC_IS_DOUBLE)
/* Requested unconditionally: drivers do not all define the extension macros. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef VALUE_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

#ifndef VALUE_T
#error "VALUE_T must be defined (float or double)"
#endif
#ifndef INDEX_T
#define INDEX_T int
#endif
#ifndef ACC_T
#define ACC_T VALUE_T
#endif
#ifndef T
#define T 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

/* Formats as blocks of a larger matrix. Every kernel of a format (all of csr.cl, ell.cl,
 * sell.cl, dia.cl, coo.cl, csr_adaptive.cl, csr_blocks.cl, csr_merge.cl and scale_y_t) takes
 * BLOCK_ARGS first (Format.run in clspmv/formats/base.py passes them to every launch):
 *   row0    the block's first row in the vector indexed by rows: y of a forward product (and Y
 *           of A X), x of a transpose product. A kernel moves that pointer once, at its start
 *           (BLOCK_ROWS(y), BLOCK_ROWS(x), or Y += row0 * yrs), so it writes rows
 *           [row0, row0 + m) of a longer y (alpha and beta touch those rows only), or reads
 *           rows [row0, row0 + m) of a longer x. Permutations (sell, pjds) index within the
 *           block, after the shift, so they compose with it.
 *   colmap  with -DCOLMAP the block's columns are numbered 0..k-1 and its column c is column
 *           colmap[c] of the full-length vector indexed by columns: every x read of a forward
 *           product and every y entry a transpose product writes goes through COL(c). Without
 *           COLMAP it is an unused argument (any buffer) and COL(c) is c. */
#define BLOCK_ARGS const INDEX_T row0, __global const INDEX_T *restrict colmap,
/* LONG_ROWS (the CSR main kernels of a matrix with long rows, formats/csr_chunks.py): the forward
 * kernel takes one more argument, the longest row it sums, and leaves longer rows (and their y)
 * to csr_adaptive.cl's chunks over the same arrays. */
#ifdef LONG_ROWS
#define LONG_ROW_ARG , const INDEX_T long_row
#define IS_LONG(begin, end) ((end) - (begin) > long_row)
#else
#define LONG_ROW_ARG
#define IS_LONG(begin, end) 0
#endif
#define BLOCK_ROWS(v) ((v) += row0)
#ifdef COLMAP
#define COL(c) colmap[c]
#else
#define COL(c) (c)
#endif

/* a * b in the accumulator type. Every sum of products uses it: for float32 values summed in
 * double (dtype="mixed") the product is then exact, so only the double sum rounds; otherwise it
 * is the plain product. */
#define MUL(a, b) ((ACC_T)(a) * (ACC_T)(b))

/* MAT_INDEX(a, i), MAT_VALUE(a, i): element i of one of the matrix's own arrays (column or row
 * indices, values), which a forward product reads once. With STREAM_HINT (clspmv/build.py sets
 * it where Device.stream_hint, NVIDIA's OpenCL, which takes inline PTX: for float64 values, and
 * for float32 values in the formats with Format.stream_float32, whose products it made faster
 * there: reports/2026-11-27-h200-x-loads) the
 * load is PTX's ld.global.cs, "cache streaming": its lines are the first to go when the cache
 * needs room, so the matrix's stream does not push x out of L2 between two gathers of the same
 * line. On an H100 that made csr-adaptive and csr-merge 5-13 % faster on matrices of 33-39 M
 * entries with scattered columns (x of 16-32 MB); on stencils and Poisson matrices of 0.4-122 M
 * entries single formats moved from 10 % slower (sell, 10 us products) to 7 % faster, and the
 * fastest format of each was as fast or faster (reports/2026-11-25-h100-stream/).
 * Elsewhere a plain load; also the vector loads of coo's full work-items and of csr-blocks
 * (vload), which take no hint. */
#if defined(STREAM_HINT)
#define STREAM_LOAD(name, type, ptx, constraint) \
    inline type name(__global const type *p) \
    { \
        type v; \
        __asm__ __volatile__("ld.global.cs." ptx " %0, [%1];" : "=" constraint(v) : "l"(p)); \
        return v; \
    }
STREAM_LOAD(stream_index, int, "s32", "r")
#ifdef VALUE_IS_DOUBLE
STREAM_LOAD(stream_value, double, "f64", "d")
#else
STREAM_LOAD(stream_value, float, "f32", "f")
#endif
#define MAT_INDEX(a, i) stream_index((a) + (i))
#define MAT_VALUE(a, i) stream_value((a) + (i))
#else
#define MAT_INDEX(a, i) ((a)[i])
#define MAT_VALUE(a, i) ((a)[i])
#endif

/* y[i] = alpha * sum + beta * y[i] in the accumulator type, rounded once to VALUE_T, with BLAS
 * semantics: beta == 0 never reads y. */
#define STORE_Y(y, i, sum) \
    ((y)[i] = (beta == (VALUE_T)0) ? (VALUE_T)((ACC_T)alpha * (sum)) \
                                   : (VALUE_T)((ACC_T)alpha * (sum) + MUL(beta, (y)[i])))

/* Atomic y[i] += v on global memory, in VALUE_T (also with a wider ACC_T: a work-item's own sum
 * is ACC_T, rounded to VALUE_T for the add, so a transpose product's y accumulates in VALUE_T).
 * With NATIVE_ATOMICS (set by clspmv only for devices reporting cl_ext_float_atomics, together with
 * -cl-std=CL3.0) and the compiler's feature macro for this value type, the extension's
 * atomic_fetch_add_explicit is used. Otherwise (OpenCL C 1.2 has no float atomics) it is a
 * compare-and-swap loop on the integer of the same width; 64-bit needs cl_khr_int64_base_atomics.
 * The CAS loop compares integers, so NaN values do not make it spin. It never reads *p
 * non-atomically (a plain read would race with other work-items' swaps): its first swap guesses
 * that y[i] holds +0.0, which is what scale_y_t leaves when beta == 0, and every failed swap returns
 * the value actually there for the next try. */
#if defined(NATIVE_ATOMICS) && defined(VALUE_IS_DOUBLE) && defined(__opencl_c_ext_fp64_global_atomic_add)
#define CLSPMV_NATIVE_ATOMIC_ADD 1
#elif defined(NATIVE_ATOMICS) && !defined(VALUE_IS_DOUBLE) && defined(__opencl_c_ext_fp32_global_atomic_add)
#define CLSPMV_NATIVE_ATOMIC_ADD 1
#endif

inline void atomic_add_value(volatile __global VALUE_T *p, VALUE_T v)
{
#if defined(CLSPMV_NATIVE_ATOMIC_ADD) && defined(VALUE_IS_DOUBLE)
    atomic_fetch_add_explicit((volatile __global atomic_double *)p, v, memory_order_relaxed,
                              memory_scope_device);
#elif defined(CLSPMV_NATIVE_ATOMIC_ADD)
    atomic_fetch_add_explicit((volatile __global atomic_float *)p, v, memory_order_relaxed,
                              memory_scope_device);
#elif defined(VALUE_IS_DOUBLE)
    volatile __global long *ip = (volatile __global long *)p;
    long assumed = 0;
    long old = atom_cmpxchg(ip, assumed, as_long(as_double(assumed) + v));
    while (old != assumed) {
        assumed = old;
        old = atom_cmpxchg(ip, assumed, as_long(as_double(assumed) + v));
    }
#else
    volatile __global int *ip = (volatile __global int *)p;
    int assumed = 0;
    int old = atomic_cmpxchg(ip, assumed, as_int(as_float(assumed) + v));
    while (old != assumed) {
        assumed = old;
        old = atomic_cmpxchg(ip, assumed, as_int(as_float(assumed) + v));
    }
#endif
}

#if defined(WARP_SHUFFLE) && WG % 32 == 0
/* WARP_SHUFFLE (clspmv/build.py sets it where Device.warp_shuffle: NVIDIA's OpenCL, which takes
 * inline PTX and runs work-groups as warps of 32 work-items): groups of up to 32 lanes sum in
 * registers with PTX's shfl.sync.bfly, no local memory and no barrier; wider groups as below.
 * On an H200 (float64) csr-vector's products took 0.72-0.79x as long on power-law, Chung-Lu and
 * 2-D Poisson matrices of 5-39 M entries, csr-adaptive's 0.98-1.0x, the other formats' the same
 * (reports/2026-11-25-h200-shuffle/shuffle-ab.txt). Groups wider than a warp keep local memory:
 * a warp sum followed by one pass over the warps' sums had made csr-adaptive's long-row chunks
 * 4-7 % slower on the dense-row and arrow matrices (variants-probe.txt there). */
inline float shuffle_xor_float(float v, int mask)
{
    float r;
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;"
                         : "=f"(r) : "f"(v), "r"(mask));
    return r;
}
#if defined(ACC_IS_DOUBLE) || defined(VALUE_IS_DOUBLE)
inline double shuffle_xor_acc(double v, int mask)  /* a double as its two 32-bit halves */
{
    const int2 w = as_int2(v);
    int lo, hi;
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;"
                         : "=r"(lo) : "r"(w.x), "r"(mask));
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;"
                         : "=r"(hi) : "r"(w.y), "r"(mask));
    return as_double((int2)(lo, hi));
}
#else
#define shuffle_xor_acc shuffle_xor_float
#endif
#define CLSPMV_WARP_SUM 1
#endif

/* Sum the partial sums of each group of `lanes` consecutive work-items (a power of two) in
 * local memory; `lane` is the item's position in its group. Every work-item of the work-group
 * must call it with the same `lanes` (it contains barriers). Each item gets its group's total
 * (with WARP_SHUFFLE and lanes <= 32: each lane its own butterfly's total, the same sum in
 * another order; callers store lane 0's). */
inline ACC_T reduce_width(__local ACC_T *scratch, int lid, int lane, int lanes, ACC_T partial)
{
#ifdef CLSPMV_WARP_SUM
    if (lanes <= 32) {  /* the same for the whole work-group: no barrier is skipped by some */
        for (int mask = lanes / 2; mask > 0; mask >>= 1)
            partial += shuffle_xor_acc(partial, mask);
        return partial;
    }
#endif
    scratch[lid] = partial;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = lanes / 2; step > 0; step >>= 1) {
        if (lane < step)
            scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[lid - lane];
}

/* reduce_width over groups of T work-items. */
inline ACC_T reduce_lanes(__local ACC_T *scratch, int lid, int lane, ACC_T partial)
{
    return reduce_width(scratch, lid, lane, T, partial);
}

#ifdef KB
/* Several right-hand sides, Y = alpha * A X + beta * Y with X n x k and Y m x k. Element (i, j)
 * of X is X[i * xrs + j * xcs] (row-major: xrs = k, xcs = 1; column-major: xrs = 1, xcs = n),
 * likewise Y with yrs, ycs. Columns go in blocks of KB: each work-item keeps KB sums, so every
 * matrix entry is read once per block. In the last block the surplus sums read the last column
 * again (a valid address) and are never stored. A block's rows start at row row0 of Y
 * (BLOCK_ROWS_MATMAT, at the kernel's start) and its column c is row COL(c) of X. */
#define MATMAT_ARGS const INDEX_T k, \
    __global const VALUE_T *restrict X, const INDEX_T xrs, const INDEX_T xcs, \
    __global VALUE_T *restrict Y, const INDEX_T yrs, const INDEX_T ycs, \
    const VALUE_T alpha, const VALUE_T beta

#define BLOCK_ROWS_MATMAT (Y += row0 * yrs)

/* Start a block at column jb: zero sums, offsets of its KB columns in X. */
#define BLOCK_BEGIN(jb) \
    ACC_T sums[KB]; INDEX_T xoff[KB]; \
    for (int t_ = 0; t_ < KB; ++t_) { \
        sums[t_] = 0; \
        xoff[t_] = min((jb) + t_, k - 1) * xcs; \
    }

/* sums += v * X[c, block]. */
#define BLOCK_ENTRY(v, c) { \
    const VALUE_T v_ = (v); \
    const INDEX_T base_ = COL(c) * xrs; \
    for (int t_ = 0; t_ < KB; ++t_) \
        sums[t_] += MUL(v_, X[base_ + xoff[t_]]); \
}

/* Y[row, block] = alpha * sums + beta * Y[row, block] (beta == 0 never reads Y). */
#define BLOCK_STORE(row, jb) \
    for (int t_ = 0; t_ < KB && (jb) + t_ < k; ++t_) \
        STORE_Y(Y, (row) * yrs + ((jb) + t_) * ycs, sums[t_]);

/* reduce_lanes for KB sums at once; scratch holds KB * WG values. Every work-item of the group
 * must call it; it begins with a barrier so that the previous block's reads are complete. */
#define BLOCK_REDUCE(scratch, lid, lane) { \
    barrier(CLK_LOCAL_MEM_FENCE); \
    for (int t_ = 0; t_ < KB; ++t_) \
        scratch[t_ * WG + lid] = sums[t_]; \
    barrier(CLK_LOCAL_MEM_FENCE); \
    for (int step_ = T / 2; step_ > 0; step_ >>= 1) { \
        if (lane < step_) \
            for (int t_ = 0; t_ < KB; ++t_) \
                scratch[t_ * WG + lid] += scratch[t_ * WG + lid + step_]; \
        barrier(CLK_LOCAL_MEM_FENCE); \
    } \
    for (int t_ = 0; t_ < KB; ++t_) \
        sums[t_] = scratch[t_ * WG + lid - lane]; \
}
#endif

#endif
