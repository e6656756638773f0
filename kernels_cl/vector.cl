/* Dense vector kernels for DeviceMatrix.matmat's fallback, the Krylov solvers and the row
 * scatter and gather of a distributed product.
 *
 * Scalars that one kernel computes and the next consumes (dot products, CG's alpha and beta,
 * BiCGStab's omega) stay in a small device array `s`; kernels read them from there by slot index,
 * so the host only reads the residual norms it needs for the convergence test.
 *
 * Reductions are two passes: `dots`/`basis_dots` leave one partial sum per work-group and pair in
 * `partial[j * groups + g]`; `sum_partials` adds each row of them into s[slot + j].
 */
#include "common.h"

/* dst[dst_off + i * dst_step] = src[src_off + i * src_step] for i < n (a column of a matrix). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void copy_strided(const INDEX_T n,
                  __global const VALUE_T *restrict src, const INDEX_T src_off,
                  const INDEX_T src_step,
                  __global VALUE_T *restrict dst, const INDEX_T dst_off, const INDEX_T dst_step)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        dst[dst_off + i * dst_step] = src[src_off + i * src_step];
}

/* out = a * x + b * y. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void axpby(const INDEX_T n, const VALUE_T a, __global const VALUE_T *x, const VALUE_T b,
           __global const VALUE_T *y, __global VALUE_T *out)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        out[i] = a * x[i] + b * y[i];
}

/* y[rows[i]] += alpha * s[i] for i < n: a product computed on a subset of y's rows (the
 * compacted non-local part of a distributed product, clspmv/distributed) added into y. The rows
 * are distinct, so no two work-items write the same entry. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scatter_add(const INDEX_T n, __global const INDEX_T *restrict rows, const VALUE_T alpha,
                 __global const VALUE_T *restrict s, __global VALUE_T *restrict y)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n) {
        const INDEX_T r = rows[i];
        y[r] = (VALUE_T)((ACC_T)y[r] + MUL(alpha, s[i]));
    }
}

/* dst[i] = src[index[i]] for i < n: the x values a rank of a distributed product sends
 * (clspmv/distributed), gathered on the device before they are copied to the host. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void take(const INDEX_T n, __global const INDEX_T *restrict index,
          __global const VALUE_T *restrict src, __global VALUE_T *restrict dst)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        dst[i] = src[index[i]];
}

/* Tree sum of `value` over the work-group; the total is returned to every work-item. */
inline ACC_T group_sum(__local ACC_T *scratch, ACC_T value)
{
    const int lid = (int)get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    scratch[lid] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

#ifndef NDOT
#define NDOT 1
#endif

/* Partial sums of NDOT (1..3) dot products a0.b0, a1.b1, a2.b2 (unused pointers are ignored). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dots(const INDEX_T n,
          __global const VALUE_T *a0, __global const VALUE_T *b0,
          __global const VALUE_T *a1, __global const VALUE_T *b1,
          __global const VALUE_T *a2, __global const VALUE_T *b2,
          __global ACC_T *partial)
{
    __local ACC_T scratch[WG];
    const INDEX_T stride = (INDEX_T)get_global_size(0);
    const int groups = (int)get_num_groups(0);
    const int g = (int)get_group_id(0);
    ACC_T s0 = 0, s1 = 0, s2 = 0;
    for (INDEX_T i = (INDEX_T)get_global_id(0); i < n; i += stride) {
        s0 += a0[i] * b0[i];
#if NDOT > 1
        s1 += a1[i] * b1[i];
#endif
#if NDOT > 2
        s2 += a2[i] * b2[i];
#endif
    }
    s0 = group_sum(scratch, s0);
#if NDOT > 1
    s1 = group_sum(scratch, s1);
#endif
#if NDOT > 2
    s2 = group_sum(scratch, s2);
#endif
    if (get_local_id(0) == 0) {
        partial[g] = s0;
#if NDOT > 1
        partial[groups + g] = s1;
#endif
#if NDOT > 2
        partial[2 * groups + g] = s2;
#endif
    }
}

/* Partial sums of V_j . w for the rows j < get_num_groups(1) of the basis V (row j at j * ldv). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void basis_dots(const INDEX_T n, __global const VALUE_T *V, const INDEX_T ldv,
                __global const VALUE_T *w, __global ACC_T *partial)
{
    __local ACC_T scratch[WG];
    const int j = (int)get_group_id(1);
    const INDEX_T stride = (INDEX_T)get_global_size(0);
    __global const VALUE_T *v = V + (long)j * ldv;
    ACC_T s = 0;
    for (INDEX_T i = (INDEX_T)get_global_id(0); i < n; i += stride)
        s += v[i] * w[i];
    s = group_sum(scratch, s);
    if (get_local_id(0) == 0)
        partial[j * (int)get_num_groups(0) + (int)get_group_id(0)] = s;
}

/* s[slot + j] = sum of partial[j * groups + g] over g, for j < get_num_groups(1). One
 * work-group per j. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sum_partials(const int groups, __global const ACC_T *partial, __global VALUE_T *s,
                  const int slot)
{
    __local ACC_T scratch[WG];
    const int j = (int)get_group_id(1);
    ACC_T sum = 0;
    for (int g = (int)get_local_id(0); g < groups; g += WG)
        sum += partial[j * groups + g];
    sum = group_sum(scratch, sum);
    if (get_local_id(0) == 0)
        s[slot + j] = (VALUE_T)sum;
}

/* w += sign * sum_j c[c_off + j] * V_j for j < m (Gram-Schmidt with sign = -1, and the GMRES
 * update x += V y with sign = +1). With PRECOND set, the sum is multiplied by d first. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void basis_axpy(const INDEX_T n, const int m, __global const VALUE_T *V, const INDEX_T ldv,
                __global const VALUE_T *c, const int c_off, const VALUE_T sign,
                __global const VALUE_T *d, const int precond, __global VALUE_T *w)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n)
        return;
    ACC_T sum = 0;
    for (int j = 0; j < m; ++j)
        sum += c[c_off + j] * V[(long)j * ldv + i];
    if (precond)
        sum *= d[i];
    w[i] += sign * (VALUE_T)sum;
}

/* v = w / sqrt(s[slot]) into row j of the basis (at v_off) and into the vector u. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void normalize_into(const INDEX_T n, __global const VALUE_T *w, __global const VALUE_T *s,
               const int slot, __global VALUE_T *V, const INDEX_T v_off, __global VALUE_T *u)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n)
        return;
    const VALUE_T scale = (VALUE_T)1 / sqrt(s[slot]);
    const VALUE_T v = w[i] * scale;
    V[v_off + i] = v;
    u[i] = v;
}

/* z = d * r (Jacobi: d holds the inverse diagonal). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scale_by(const INDEX_T n, __global const VALUE_T *d, __global const VALUE_T *r,
              __global VALUE_T *z)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        z[i] = d[i] * r[i];
}

/* CG: alpha = s[rho] / s[pq]; x += alpha p; r -= alpha q; with PRECOND z = d * r. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cg_step(const INDEX_T n, __global const VALUE_T *s, const int rho, const int pq,
             __global VALUE_T *x, __global VALUE_T *r, __global const VALUE_T *p,
             __global const VALUE_T *q, __global const VALUE_T *d, const int precond,
             __global VALUE_T *z)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n)
        return;
    const VALUE_T alpha = s[rho] / s[pq];
    x[i] += alpha * p[i];
    const VALUE_T ri = r[i] - alpha * q[i];
    r[i] = ri;
    if (precond)
        z[i] = d[i] * ri;
}

/* CG: p = z + (s[rho_new] / s[rho_old]) p. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cg_direction(const INDEX_T n, __global const VALUE_T *s, const int rho_new,
                  const int rho_old, __global const VALUE_T *z, __global VALUE_T *p)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n)
        return;
    const VALUE_T beta = s[rho_new] / s[rho_old];
    p[i] = z[i] + beta * p[i];
}

/* BiCGStab direction: first = 1: p = r; else with beta = (s[rho] / s[rho_old]) *
 * (s[alpha] / s[omega]): p = r + beta (p - omega v). Then phat = d * p (PRECOND) or p. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bicg_direction(const INDEX_T n, __global const VALUE_T *s, const int first,
                    const int rho, const int rho_old, const int alpha, const int omega,
                    __global const VALUE_T *r, __global const VALUE_T *v, __global VALUE_T *p,
                    __global const VALUE_T *d, const int precond, __global VALUE_T *phat)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i >= n)
        return;
    VALUE_T pi;
    if (first) {
        pi = r[i];
    } else {
        const VALUE_T w = s[omega];
        const VALUE_T beta = (s[rho] / s[rho_old]) * (s[alpha] / w);
        pi = r[i] + beta * (p[i] - w * v[i]);
    }
    p[i] = pi;
    if (precond)
        phat[i] = d[i] * pi;
}

/* BiCGStab half step: s[alpha] = s[rho] / s[rv]; r -= alpha v (r becomes s);
 * shat = d * r (PRECOND). Work-item 0 stores alpha for the later kernels. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bicg_half(const INDEX_T n, __global VALUE_T *s, const int rho, const int rv,
               const int alpha, __global VALUE_T *r, __global const VALUE_T *v,
               __global const VALUE_T *d, const int precond, __global VALUE_T *shat)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    const VALUE_T a = s[rho] / s[rv];
    if (i == 0)
        s[alpha] = a;
    if (i >= n)
        return;
    const VALUE_T ri = r[i] - a * v[i];
    r[i] = ri;
    if (precond)
        shat[i] = d[i] * ri;
}

/* BiCGStab: x += alpha phat (early exit, when the half step already converged). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bicg_finish(const INDEX_T n, __global const VALUE_T *s, const int alpha,
                 __global VALUE_T *x, __global const VALUE_T *phat)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    if (i < n)
        x[i] += s[alpha] * phat[i];
}

/* BiCGStab full step: s[omega] = s[ts] / s[tt]; x += alpha phat + omega shat; r -= omega t. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bicg_step(const INDEX_T n, __global VALUE_T *s, const int alpha, const int ts,
               const int tt, const int omega, __global VALUE_T *x, __global VALUE_T *r,
               __global const VALUE_T *phat, __global const VALUE_T *shat,
               __global const VALUE_T *t)
{
    const INDEX_T i = (INDEX_T)get_global_id(0);
    const VALUE_T w = s[ts] / s[tt];
    if (i == 0)
        s[omega] = w;
    if (i >= n)
        return;
    x[i] += s[alpha] * phat[i] + w * shat[i];
    r[i] -= w * t[i];
}
