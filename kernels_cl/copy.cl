/* Streaming kernels that measure a device's memory bandwidth (clspmv/bandwidth.py: the reports'
 * yardstick and the calibration's streaming prior).
 *
 * Build options: VALUE_T (float or double), VEC (1, 2, 4, 8 or 16: elements per vector load),
 * WG (work-group size). Each work-item of `copy_vec` moves one vector; each work-item of
 * `read_vec` reads one vector and compares it with a value the buffer never holds, so the load
 * cannot be optimised away while nothing is written (a read-only stream). */
#include "common.h"

#ifndef VEC
#define VEC 1
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
typedef VALUE_T vec_t;
#else
typedef CAT(VALUE_T, VEC) vec_t;
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void copy_vec(const long n_vec, __global const vec_t *restrict src, __global vec_t *restrict dst)
{
    const long i = get_global_id(0);
    if (i < n_vec)
        dst[i] = src[i];
}

#if VEC == 1
#define HOLDS(v, x) ((v) == (x))
#else
#define HOLDS(v, x) any((v) == (vec_t)(x))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void read_vec(const long n_vec, __global const vec_t *restrict src, __global int *restrict found,
              const VALUE_T absent)
{
    const long i = get_global_id(0);
    if (i < n_vec && HOLDS(src[i], absent))
        found[0] = 1;
}
