#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <immintrin.h>
/* y = A x for CSR with exactly-k rows; variants: scalar, scalar+prefetch, sell-8 with gather */
int main(int argc, char **argv) {
  int n = atoi(argv[1]), k = atoi(argv[2]); int reps = 31;
  int *col = aligned_alloc(64, sizeof(int) * (size_t)n * k);
  double *val = aligned_alloc(64, sizeof(double) * (size_t)n * k), *x = aligned_alloc(64, 8 * (size_t)n), *y = aligned_alloc(64, 8 * (size_t)n);
  unsigned s = 1;
  for (size_t i = 0; i < (size_t)n * k; ++i) { s = s * 1103515245 + 12345; col[i] = (int)(((unsigned long)s * 2654435761u) % n); val[i] = 1.0; }
  for (int i = 0; i < n; ++i) x[i] = 1.0;
  /* sell-8 layout (column-major inside slices of 8 rows) */
  int *scol = aligned_alloc(64, sizeof(int) * (size_t)n * k); double *sval = aligned_alloc(64, 8 * (size_t)n * k);
  for (int sl = 0; sl < n / 8; ++sl) for (int j = 0; j < k; ++j) for (int l = 0; l < 8; ++l) {
    size_t src = (size_t)(sl * 8 + l) * k + j, dst = (size_t)sl * 8 * k + j * 8 + l; scol[dst] = col[src]; sval[dst] = val[src]; }
  int *scol16 = aligned_alloc(64, sizeof(int) * (size_t)n * k); double *sval16 = aligned_alloc(64, 8 * (size_t)n * k);
  for (int sl = 0; sl < n / 16; ++sl) for (int j = 0; j < k; ++j) for (int l = 0; l < 16; ++l) {
    size_t src = (size_t)(sl * 16 + l) * k + j, dst = (size_t)sl * 16 * k + j * 16 + l; scol16[dst] = col[src]; sval16[dst] = val[src]; }
  int *lens = aligned_alloc(64, 4 * (size_t)n), *perm = aligned_alloc(64, 4 * (size_t)n);
  for (int i = 0; i < n; ++i) { lens[i] = k; perm[i] = i; }
  double times[9][64];
  for (int r = 0; r < reps; ++r) {
    for (int variant = 3; variant < 9; ++variant) {
      double t = omp_get_wtime();
      if (variant == 0) {
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; ++i) { double sum = 0; for (int j = i * k; j < (i + 1) * k; ++j) sum += val[j] * x[col[j]]; y[i] = sum; }
      } else if (variant == 1 || variant == 2) {
        int D = variant == 1 ? 32 : 64;
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; ++i) { double sum = 0; for (int j = i * k; j < (i + 1) * k; ++j) { if (j + D < n * k) _mm_prefetch((const char *)&x[col[j + D]], _MM_HINT_T1); sum += val[j] * x[col[j]]; } y[i] = sum; }
      } else if (variant == 6) {  /* C = 16: two vectors per column */
        #pragma omp parallel for schedule(static)
        for (int sl = 0; sl < n / 16; ++sl) {
          __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(); size_t base = (size_t)sl * 16 * k;
          for (int j = 0; j < k; ++j) {
            __m512i c = _mm512_load_si512((const void *)(scol16 + base + j * 16));
            a0 = _mm512_fmadd_pd(_mm512_load_pd(sval16 + base + j * 16), _mm512_i32gather_pd(_mm512_castsi512_si256(c), x, 8), a0);
            a1 = _mm512_fmadd_pd(_mm512_load_pd(sval16 + base + j * 16 + 8), _mm512_i32gather_pd(_mm512_extracti64x4_epi64(c, 1), x, 8), a1);
          }
          _mm512_store_pd(y + sl * 16, a0); _mm512_store_pd(y + sl * 16 + 8, a1);
        }
      } else if (variant == 7 || variant == 8) {  /* C = 8, masked by lengths, stores through perm */
        #pragma omp parallel for schedule(static)
        for (int sl = 0; sl < n / 8; ++sl) {
          __m512d acc = _mm512_setzero_pd(); size_t base = (size_t)sl * 8 * k;
          __m256i len = _mm256_loadu_si256((const __m256i *)(lens + sl * 8)); __m256i colno = _mm256_setzero_si256();
          for (int j = 0; j < k; ++j) {
            __m256i c = _mm256_load_si256((const __m256i *)(scol + base + j * 8));
            __mmask8 m = _mm256_cmpgt_epi32_mask(len, colno); colno = _mm256_add_epi32(colno, _mm256_set1_epi32(1));
            acc = _mm512_add_pd(acc, _mm512_maskz_mul_pd(m, _mm512_load_pd(sval + base + j * 8), _mm512_i32gather_pd(c, x, 8)));
          }
          if (variant == 7) { _mm512_store_pd(y + sl * 8, acc); }
          else { double s[8]; _mm512_storeu_pd(s, acc); for (int l = 0; l < 8; ++l) y[perm[sl * 8 + l]] = s[l]; }
        }
      } else if (variant == 5) {
        #pragma omp parallel for schedule(static)
        for (int sl = 0; sl < n / 8; ++sl) {
          __m512d acc = _mm512_setzero_pd(); size_t base = (size_t)sl * 8 * k;
          for (int j = 0; j < k; ++j) {
            const int *c = scol + base + j * 8;
            __m512d g = _mm512_set_pd(x[c[7]], x[c[6]], x[c[5]], x[c[4]], x[c[3]], x[c[2]], x[c[1]], x[c[0]]);
            acc = _mm512_fmadd_pd(_mm512_load_pd(sval + base + j * 8), g, acc);
          }
          _mm512_store_pd(y + sl * 8, acc);
        }
      } else {
        int D = variant == 3 ? 0 : 8;
        #pragma omp parallel for schedule(static)
        for (int sl = 0; sl < n / 8; ++sl) {
          __m512d acc = _mm512_setzero_pd(); size_t base = (size_t)sl * 8 * k;
          for (int j = 0; j < k; ++j) {
            __m256i c = _mm256_load_si256((const __m256i *)(scol + base + j * 8));
            if (D && base + (j + D) * 8 < (size_t)n * k) { const int *ca = scol + base + (j + D) * 8; for (int l = 0; l < 8; ++l) _mm_prefetch((const char *)&x[ca[l]], _MM_HINT_T1); }
            acc = _mm512_fmadd_pd(_mm512_load_pd(sval + base + j * 8), _mm512_i32gather_pd(c, x, 8), acc);
          }
          _mm512_store_pd(y + sl * 8, acc);
        }
      }
      t = omp_get_wtime() - t; times[variant][r] = t;
    }
  }
  for (int variant = 3; variant < 9; ++variant) {
    double *v = times[variant];
    for (int a = 0; a < reps; ++a) for (int b = a + 1; b < reps; ++b) if (v[b] < v[a]) { double t = v[a]; v[a] = v[b]; v[b] = t; }
    printf("variant %d: median %.3f ms min %.3f\n", variant, v[reps / 2] * 1e3, v[0] * 1e3);
  }
  return 0;
}
