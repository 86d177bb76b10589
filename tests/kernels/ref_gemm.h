/* ref_gemm.h: what test_gemm.c and gpu_cases_gemm.c share: the cases and their
 * host matrices (the compute types' rounding is in kt.h). */
#ifndef AMPSCOPE_TESTS_REF_GEMM_H
#define AMPSCOPE_TESTS_REF_GEMM_H

#include "kt.h"

typedef struct ref_gcase {
    kt_pairing p;
    size_t m, n, k;
    bool ta, tb;
    size_t pad_a, pad_b, pad_c; /* leading dimension minus width */
    float alpha, beta;
    bool nan_c;    /* C starts as NaNs (with beta == 0 they must vanish) */
    bool specials; /* NaN and infinities planted in A and B */
    bool exact;    /* gpu_cases_gemm: cuda and cpu must agree bit for bit */
    double scale;  /* gpu_cases_gemm: |inputs| < scale (0: 4) */
    uint64_t seed;
} ref_gcase;

/* p with op(A) m x k, op(B) k x n, transposes' bit 0 giving ta and bit 1
 * tb, alpha 1, beta 0, generator seed ts_seed() + seed; the rest zero. */
ref_gcase ref_gemm_case(kt_pairing p, size_t m, size_t n, size_t k, int transposes, uint64_t seed);
/* BLAS, OpenBLAS and cuBLAS: beta == 0 means C is not read.  A 6 x 7 x 9
 * case with C all NaN (gap of 2 between its rows), alpha -1.5, beta 0. */
ref_gcase ref_gemm_nan_c_case(kt_pairing p, int transposes, uint64_t seed);
/* A 5 x 4 x 6 case with ref_gemm_plant_specials's NaN and infinities,
 * beta 0.5, alpha -1 for transposes 3 (both). */
ref_gcase ref_gemm_specials_case(kt_pairing p, int transposes, uint64_t seed);
/* "fp16/fp16->fp32 32F m=.. n=.. k=.. ta=.. tb=.. pads=.. alpha=.. beta=.." */
void ref_gemm_describe(const ref_gcase *c, char *out, size_t len);

/* A stored row-major matrix of dt with leading dimension ld, as bits. */
typedef struct ref_mat {
    ak_dtype dt;
    size_t rows, cols, ld, n; /* n: (rows - 1) ld + cols elements */
    uint32_t *bits;
} ref_mat;

/* rows x cols with ld = cols + pad, zero bits. */
ref_mat ref_mat_make(ak_dtype dt, size_t rows, size_t cols, size_t pad);
void ref_mat_free(ref_mat *m);
/* op(M)[i][j]: M[i][j], or M[j][i] when t. */
uint32_t ref_mat_op(const ref_mat *m, bool t, size_t i, size_t j);
/* Whether stored element i lies in the gap between rows (never written). */
bool ref_mat_in_gap(const ref_mat *m, size_t i);
/* A, B and C of c as stored (A is k x m when ta, ...), zero bits. */
void ref_gemm_mats(const ref_gcase *c, ref_mat *a, ref_mat *b, ref_mat *cm);
/* When c->specials and the shape has room: op(A)[1][2] NaN, op(A)[3][0]
 * +inf, op(B)[1][2] -inf, op(B)[0][1] 0. */
void ref_gemm_plant_specials(const ref_gcase *c, ref_mat *a, ref_mat *b);

#endif
