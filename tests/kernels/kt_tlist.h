/* kt_tlist.h: lists of tensors of mixed dtypes, as ak_sum_squares and
 * ak_clip_by_norm take them, with the host copy of their elements, their
 * exact sum of squares, and the double in backend memory those ops
 * accumulate into (shared by test_sum_squares and test_clip_by_norm). */
#ifndef AMPSCOPE_TESTS_KT_TLIST_H
#define AMPSCOPE_TESTS_KT_TLIST_H

#include "kt.h"

/* A list of tensors on one backend, with the host copy of their elements
 * (one uint32_t each). */
typedef struct kt_tlist {
    size_t count;
    kt_buf *bufs;
    ak_tensor *t;
    uint32_t **x;
} kt_tlist;

/* count tensors of sizes[i] elements of dts[i] (a size 0 has no memory). */
kt_tlist kt_tlist_make(ak_backend *b, size_t count, const size_t *sizes, const ak_dtype *dts);
/* The host copies to the backend. */
void kt_tlist_upload(kt_tlist *l);
/* Fails the test if a guard was overwritten. */
void kt_tlist_free(kt_tlist *l);
/* The exact squares summed in order in long double (64-bit significand). */
long double kt_tlist_sum_squares(const kt_tlist *l);

/* A double in backend memory holding v; its value. */
double *kt_sumsq_alloc(ak_backend *b, double v);
double kt_sumsq_get(ak_backend *b, const double *p);

#endif
