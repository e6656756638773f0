/* Vectors of VW matrix entries (VW = 2, 4, 8 or 16, defined by the including file before it
 * includes this header): csr_blocks.cl's unrolled row loop (VW = UNROLL) loads VW values and
 * column indices at once and gathers the VW x values they need; dia.cl's row chunks load VW
 * values and VW entries of x.
 *   VEC_T, IVEC_T   VW values, VW indices
 *   VLOAD           vloadVW
 *   LOAD_INDICES(p) VW column indices from p: one unaligned vector load where the compiler is
 *                   clang before 16 (Debian's PoCL 3.1 on LLVM 15, PyPI's PoCL 3.0, Oclgrind),
 *                   whose vloadVW of 16 indices came out as eight loads and six shuffles per
 *                   step of sell's slices (vectors then, a loop over lanes now): 1.03x in
 *                   geometric mean over 12 irregular matrices on the 2-core Xeon, 0.86-1.13x
 *                   each; csr-blocks' steps of 4 1.02x (PoCL 3.1), 1.16x (PoCL 3.0)
 *                   (reports/experiments/2026-11-29-unaligned-indices).
 *                   vloadVW elsewhere: LLVM 16 (PoCL 5.0) loads the indices one by one for its
 *                   scalar loads of x either way, and measured 0.93-0.96x with the vector load.
 *                   -DNO_UNALIGNED_INDICES builds vloadVW everywhere (tools/define_ab.py's A/B)
 *   LOAD_VALUES(p)  VW values from p: scalar loads for 8 and 16 of them, which the compiler merges
 *                   again (eight float64 values through vload8 came out wrong with PoCL 3.0, the
 *                   pocl extra with LLVM 14: tests/test_csr_blocks.py, the uneven matrix; right
 *                   with PoCL 3.1)
 *   GATHER(c)       the VW values x[COL(c.s0)], x[COL(c.s1)], ...
 *   WIDEN(v)        v in the accumulator type: with dtype="mixed" (float values, double sums)
 *                   the vectors are widened first, so products and sums are double like MUL's */
#ifndef CLSPMV_VECTORS_H
#define CLSPMV_VECTORS_H

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define VEC_T CAT(VALUE_T, VW)
#define IVEC_T CAT(INDEX_T, VW)
#define VLOAD CAT(vload, VW)

#if defined(__clang__) && __clang_major__ < 16 && !defined(NO_UNALIGNED_INDICES)
typedef INDEX_T IVEC_UNALIGNED_T __attribute__((ext_vector_type(VW), aligned(sizeof(INDEX_T))));
#define LOAD_INDICES(p) (*(__global const IVEC_UNALIGNED_T *)(p))
#else
#define LOAD_INDICES(p) VLOAD(0, p)
#endif

#if VW == 2
#define LOAD_VALUES(p) VLOAD(0, p)
#define GATHER(c) (VEC_T)(x[COL(c.s0)], x[COL(c.s1)])
#elif VW == 4
#define LOAD_VALUES(p) VLOAD(0, p)
#define GATHER(c) (VEC_T)(x[COL(c.s0)], x[COL(c.s1)], x[COL(c.s2)], x[COL(c.s3)])
#elif VW == 8
#define LOAD_VALUES(p) (VEC_T)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7])
#define GATHER(c) (VEC_T)(x[COL(c.s0)], x[COL(c.s1)], x[COL(c.s2)], x[COL(c.s3)], \
                          x[COL(c.s4)], x[COL(c.s5)], x[COL(c.s6)], x[COL(c.s7)])
#elif VW == 16
#define LOAD_VALUES(p) (VEC_T)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                               (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], \
                               (p)[15])
#define GATHER(c) (VEC_T)(x[COL(c.s0)], x[COL(c.s1)], x[COL(c.s2)], x[COL(c.s3)], \
                          x[COL(c.s4)], x[COL(c.s5)], x[COL(c.s6)], x[COL(c.s7)], \
                          x[COL(c.s8)], x[COL(c.s9)], x[COL(c.sa)], x[COL(c.sb)], \
                          x[COL(c.sc)], x[COL(c.sd)], x[COL(c.se)], x[COL(c.sf)])
#else
#error "VW must be 2, 4, 8 or 16"
#endif

#if defined(ACC_IS_DOUBLE) && !defined(VALUE_IS_DOUBLE)
#define WIDEN(v) CAT(convert_double, VW)(v)
#else
#define WIDEN(v) (v)
#endif

#endif
