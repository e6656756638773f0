/* Definitions shared by every clspmv kernel.
 *
 * Build options (set by clspmv/build.py):
 *   VALUE_T  float or double: matrix and vector values
 *   VALUE_IS_DOUBLE  defined when VALUE_T is double
 *   INDEX_T  int: column indices, row pointers, row lengths
 *   ACC_T    accumulator type (defaults to VALUE_T)
 *   WG       work-group size the kernel is launched with
 *   T        work-items that share one row (kernels that split rows), a power of two <= WG
 */
#ifndef CLSPMV_COMMON_H
#define CLSPMV_COMMON_H

#ifdef VALUE_IS_DOUBLE
/* Requested unconditionally: drivers do not all define the extension macros. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
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

/* y[i] = alpha * sum + beta * y[i], with BLAS semantics: beta == 0 never reads y. */
#define STORE_Y(y, i, sum) \
    ((y)[i] = (beta == (VALUE_T)0) ? (VALUE_T)(alpha * (sum)) \
                                   : (VALUE_T)(alpha * (sum) + beta * (y)[i]))

/* Atomic y[i] += v on global memory. OpenCL C 1.2 has no float atomics, so this is a
 * compare-and-swap loop on the integer of the same width (64-bit needs cl_khr_int64_base_atomics).
 * The loop never reads *p non-atomically (a plain read would race with other work-items' swaps):
 * its first swap guesses that y[i] holds +0.0, which is what scale_y leaves when beta == 0, and
 * every failed swap returns the value actually there for the next try. */
inline void atomic_add_value(volatile __global VALUE_T *p, VALUE_T v)
{
#if defined(VALUE_IS_DOUBLE)
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

/* Sum the T partial sums of each group of T consecutive work-items in local memory.
 * Every work-item of the work-group must call it (it contains barriers). The total of the
 * group that item `lid` belongs to is left in scratch[lid - lane] for lane 0. */
inline ACC_T reduce_lanes(__local ACC_T *scratch, int lid, int lane, ACC_T partial)
{
    scratch[lid] = partial;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = T / 2; step > 0; step >>= 1) {
        if (lane < step)
            scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[lid - lane];
}

#endif
