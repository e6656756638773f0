/* Kernels every format shares (the atomic add itself is atomic_add_value in common.h).
 *   scale_y_t        y = beta * y on the columns a transpose product adds into atomically
 *                    (beta == 0 writes zeros without reading y)
 *   atomic_add_kind  which atomic add atomic_add_value compiles to on this device
 *   spin             a register-only busy loop of a set length (clspmv/cover.py) */
#include "common.h"

/* y[COL(i)] = beta * y[COL(i)] for i < n: the columns a transpose product's block adds into
 * (row0 unused: it shifts x there). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scale_y_t(BLOCK_ARGS const INDEX_T n, __global VALUE_T *restrict y, const VALUE_T beta)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        y[COL(i)] = (beta == (VALUE_T)0) ? (VALUE_T)0 : beta * y[COL(i)];
}

/* out[0] = 1 when atomic_add_value uses the native float add (see common.h), else 0. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void atomic_add_kind(__global int *out)
{
    if (get_global_id(0) == 0) {
#ifdef CLSPMV_NATIVE_ATOMIC_ADD
        out[0] = 1;
#else
        out[0] = 0;
#endif
    }
}

/* out[0] = a value that depends on `rounds` iterations of an integer recurrence: one work-item
 * busy on registers for a time proportional to `rounds` (clspmv/cover.py queues it before a
 * timed product; it touches one int, so the caches keep what the product left there). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void spin(__global uint *out, const int rounds)
{
    if (get_global_id(0) != 0)
        return;
    uint v = out[0];
    for (int i = 0; i < rounds; ++i)  /* quadratic: no closed form a compiler could use */
        v = v * v + (uint)i;
    out[0] = v;
}
