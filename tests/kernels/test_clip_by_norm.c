/* test_clip_by_norm: ak_clip_by_norm on the cpu backend.  The reference:
 * PyTorch's clip_grad_norm_ formula written out here, and the products by
 * fpe_f32_mul (fp32) or the exact double product rounded by fpe_f64_to_<fmt>
 * (fp16/bf16), with the x86 NaN rules spelt out. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_tlist.h"

/* x * c as ak_scale multiplies (c an fp32 value): fpe_f32_mul for fp32;
 * for fp16/bf16 a NaN x stays itself, quieted, else a NaN c gives its
 * payload in x's dtype, else inf * 0 the default NaN, else the exact
 * product rounded to nearest even. */
static uint32_t ref_mul(ak_dtype dt, uint32_t x, uint32_t c)
{
    fpe_env env = fpe_env_default();
    if (dt == AK_F32) return fpe_f32_mul(&env, x, c);
    const bool f16 = dt == AK_F16;
    if (kt_is_nan(dt, x)) return x | (f16 ? 0x0200u : 0x0040u);
    if (fpe_f32_isnan(c)) return kt_from_f32(&env, dt, c);
    const double p = kt_value(dt, x) * (double)kt_f32_of(c); /* exact: 11 (8) + 24 bits */
    if (isnan(p)) return kt_default_nan(dt);
    return kt_from_f64(dt, p);
}

/* PyTorch's clip_grad_norm_(max_norm, norm_type=2) coefficient:
 *   total_norm = ||g||_2;  clip_coef = max_norm / (total_norm + 1e-6);
 *   clip_coef_clamped = clamp(clip_coef, max=1.0)   (a NaN stays NaN)
 * in double from the sum of squares, then as fp32 bits; the NaN is the
 * default one. */
static uint32_t ref_coef(double sumsq, float max_norm)
{
    const double total_norm = sqrt(sumsq);
    double clip_coef = (double)max_norm / (total_norm + 1e-6);
    if (isnan(clip_coef)) return kt_default_nan(AK_F32);
    if (clip_coef > 1.0) clip_coef = 1.0;
    return kt_f32_bits((float)clip_coef);
}

/* ---- clipping -------------------------------------------------------------------------- */
/* Every 16-bit pattern, the fp32 mix and a one-element fp32 tensor. */
static kt_tlist clip_inputs(ak_backend *b, uint64_t seed)
{
    static const ak_dtype dts[5] = {AK_F16, AK_BF16, AK_F32, AK_F16, AK_F32};
    const size_t sizes[5] = {65536, 65536, 100000, 0, 1};
    kt_tlist l = kt_tlist_make(b, 5, sizes, dts);
    ts_rng r;
    ts_rng_init(&r, seed);
    for (uint32_t i = 0; i < 65536; i++)
        l.x[0][i] = l.x[1][i] = i;
    kt_fill_f32_bits(&r, l.x[2], sizes[2]);
    uint32_t specials[512];
    const size_t ns = ts_special_values(FPE_FMT_F32, specials, 512);
    memcpy(l.x[2], specials, ns * sizeof *specials);
    l.x[4][0] = 0x40490FDBu; /* pi */
    return l;
}

/* After ak_clip_by_norm with coefficient bits c: every element is
 * ref_mul(x, c), or x itself when c is 1; returns the mismatches. */
static size_t clip_mismatches(kt_tlist *l, uint32_t c, const char *label)
{
    size_t bad = 0;
    for (size_t i = 0; i < l->count; i++) {
        const size_t n = l->t[i].n;
        if (n == 0) continue;
        const ak_dtype dt = l->t[i].dtype;
        uint32_t *got = kt_bits_alloc(n), *want = kt_bits_alloc(n);
        kt_buf_get(&l->bufs[i], got);
        for (size_t j = 0; j < n; j++)
            want[j] = c == 0x3F800000u ? l->x[i][j] : ref_mul(dt, l->x[i][j], c);
        char what[96];
        snprintf(what, sizeof what, "%s: xs[%zu] (%s)", label, i, ak_dtype_name(dt));
        bad += kt_count_mismatches(what, got, want, n, 4);
        free(got);
        free(want);
    }
    return bad;
}

/* The coefficient and every element against PyTorch's formula, for sums of
 * squares below, at and above max_norm^2, huge and tiny ones, and the
 * non-finite and negative ones; with and without coef_out. */
START_TEST(clip_matches_formula)
{
    static const struct {
        double sumsq;
        float max_norm;
    } cases[] = {
        {0.0, 1.0f},                          /* nothing to clip */
        {-0.0, 1.0f},                         /* sqrt(-0) = -0: still nothing */
        {0.25, 1.0f},                         /* norm 0.5 < 1 */
        {1.0, 1.0f},                          /* norm == max_norm: 1 / (1 + 1e-6) clips a little */
        {4.0, 1.0f},                          /* about 0.5 */
        {1e10, 1.0f},                         /* about 1e-5 */
        {25e6, 1000.0f},                      /* about 0.2 */
        {1e6, 1000.0f},                       /* 1 - 1e-9 rounds to 1.0f: left alone */
        {1e300, 5.0f},                        /* about 5e-150: 0 in fp32 */
        {1e-30, 1e-20f},                      /* the 1e-6 dominates: about 1e-14 */
        {1.0, 1.4e-45f},                      /* the least subnormal coefficient */
        {(double)FLT_MAX * FLT_MAX, FLT_MAX}, /* max_norm / max_norm = 1 */
        {4.0 * FLT_MAX * (double)FLT_MAX, FLT_MAX}, /* exactly 0.5 */
        {0x1p256, FLT_MAX},                         /* 1 - 2^-24 (FLT_MAX / 2^128) */
        {3.0e-5, 0.004f},                           /* about 0.73 */
        {INFINITY, 1.0f},                           /* 0: zeros, and NaNs from infinities */
        {NAN, 1.0f},                                /* the default NaN */
        {-1.0, 1.0f},                               /* sqrt(-1) is NaN: likewise */
    };
    ak_backend *b = kt_open_cpu();
    kt_tlist l = clip_inputs(b, ts_seed() + 40);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int with_coef = 0; with_coef < 2; with_coef++) {
            kt_tlist_upload(&l);
            kt_dev_put(b, sumsq, &cases[k].sumsq, sizeof(double));
            const uint32_t marker = kt_marker_nan(AK_F32);
            kt_dev_put(b, coef, &marker, sizeof marker);
            const int rc =
                ak_clip_by_norm(b, l.t, l.count, sumsq, cases[k].max_norm, with_coef ? coef : NULL);
            ck_assert_msg(rc == AK_OK, "%s", ak_error(b));
            const uint32_t want = ref_coef(cases[k].sumsq, cases[k].max_norm);
            uint32_t got;
            kt_dev_get(b, &got, coef, sizeof got);
            ck_assert_msg(got == (with_coef ? want : marker),
                          "case %zu: coef_out 0x%08x, expected 0x%08x", k, got, want);
            char label[64];
            snprintf(label, sizeof label, "case %zu (coef 0x%08x)", k, want);
            ck_assert_uint_eq(clip_mismatches(&l, want, label), 0);
            /* *sumsq is only read */
            ck_assert(memcmp(&(double){kt_sumsq_get(b, sumsq)}, &cases[k].sumsq, sizeof(double)) ==
                      0);
        }
    }
    /* the cases reach what they say they reach */
    ck_assert_uint_eq(ref_coef(1.0, 1.0f), kt_f32_bits((float)(1.0 / (1.0 + 1e-6))));
    ck_assert(ref_coef(1.0, 1.0f) != 0x3F800000u && ref_coef(1e6, 1000.0f) == 0x3F800000u);
    ck_assert_uint_eq(ref_coef(1e300, 5.0f), 0);
    ck_assert_uint_eq(ref_coef(1.0, 1.4e-45f), 1);
    ck_assert_uint_eq(ref_coef((double)FLT_MAX * FLT_MAX, FLT_MAX), 0x3F800000u);
    ck_assert_uint_eq(ref_coef(4.0 * FLT_MAX * (double)FLT_MAX, FLT_MAX), 0x3F000000u);
    ck_assert_uint_eq(ref_coef(0x1p256, FLT_MAX), 0x3F7FFFFFu);
    ck_assert_uint_eq(ref_coef(INFINITY, 1.0f), 0);
    ck_assert_uint_eq(ref_coef(-1.0, 1.0f), 0xFFC00000u);
    kt_tlist_free(&l);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

/* Runs ak_clip_by_norm on one tensor of n elements of dt (host bits x, in
 * place) with *sumsq = s; returns the coefficient's bits. */
static uint32_t clip1(ak_backend *b, ak_dtype dt, uint32_t *x, size_t n, double s, float max_norm)
{
    kt_buf t = kt_buf_alloc(b, n, dt);
    kt_buf_put(&t, x);
    double *sumsq = kt_sumsq_alloc(b, s);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_msg(ak_clip_by_norm(b, &t.t, 1, sumsq, max_norm, coef) == AK_OK, "%s", ak_error(b));
    kt_buf_get(&t, x);
    uint32_t c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert(kt_buf_guards_ok(&t));
    kt_buf_free(&t);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    return c;
}

/* Hand-checked: below max_norm nothing moves (a signaling NaN included);
 * an infinite norm zeroes finite elements (keeping their signs) and makes
 * infinities NaNs; a NaN norm makes everything NaN. */
START_TEST(clip_hand_checked)
{
    ak_backend *b = kt_open_cpu();
    /* norm 3 < 4 */
    uint32_t a[4] = {0x40400000u, 0x7F800001u, 0xFF800000u, 0x80000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, a, 4, 9.0, 4.0f), 0x3F800000u);
    ck_assert(a[0] == 0x40400000u && a[1] == 0x7F800001u && a[2] == 0xFF800000u &&
              a[3] == 0x80000000u);
    /* norm 8, max 4: 4 / (8 + 1e-6) = 0.49999993750000781... -> fp32 0x3EFFFFFE */
    uint32_t h[3] = {0x4000, 0x3C00, 0xC800}; /* 2, 1, -8 (fp16) */
    const uint32_t c = clip1(b, AK_F16, h, 3, 64.0, 4.0f);
    ck_assert_uint_eq(c, 0x3EFFFFFEu);
    /* 2 c = 0.99999988 rounds to 1 in fp16; c rounds to 0.5; -8 c to -4 */
    ck_assert(h[0] == 0x3C00 && h[1] == 0x3800 && h[2] == 0xC400);
    /* infinite norm: coefficient 0 */
    uint32_t f[5] = {0x3FC00000u, 0xC0000000u, 0x7F800000u, 0x7FA00000u, 0x80000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, f, 5, INFINITY, 1.0f), 0);
    ck_assert(f[0] == 0 && f[1] == 0x80000000u && f[2] == 0xFFC00000u && f[3] == 0x7FE00000u &&
              f[4] == 0x80000000u);
    uint32_t g[3] = {0x3F80, 0xFF80, 0x8001}; /* bf16 1, -inf, -least subnormal */
    ck_assert_uint_eq(clip1(b, AK_BF16, g, 3, INFINITY, 1.0f), 0);
    ck_assert(g[0] == 0 && g[1] == 0xFFC0 && g[2] == 0x8000);
    /* NaN norm: the default NaN coefficient; NaN elements keep theirs, quieted */
    uint32_t n[3] = {0x3FC00000u, 0x7F800001u, 0x00000000u};
    ck_assert_uint_eq(clip1(b, AK_F32, n, 3, NAN, 1.0f), 0xFFC00000u);
    ck_assert(n[0] == 0xFFC00000u && n[1] == 0x7FC00001u && n[2] == 0xFFC00000u);
    uint32_t m[2] = {0x3C00, 0x7D01};
    ck_assert_uint_eq(clip1(b, AK_F16, m, 2, NAN, 1.0f), 0xFFC00000u);
    ck_assert(m[0] == 0xFE00 && m[1] == 0x7F01);
    ak_close(b);
}
END_TEST

/* With no elements the coefficient is still written (when asked for). */
START_TEST(clip_empty_list)
{
    ak_backend *b = kt_open_cpu();
    double *sumsq = kt_sumsq_alloc(b, 100.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_int_eq(ak_clip_by_norm(b, NULL, 0, sumsq, 2.0f, coef), AK_OK);
    uint32_t c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_uint_eq(c, ref_coef(100.0, 2.0f));
    const ak_tensor empty[2] = {ak_tensor_none(), ak_tensor_of(NULL, 0, AK_BF16)};
    kt_dev_put(b, sumsq, &(double){1e-2}, sizeof(double));
    ck_assert_int_eq(ak_clip_by_norm(b, empty, 2, sumsq, 2.0f, coef), AK_OK);
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_uint_eq(c, 0x3F800000u);
    ck_assert_int_eq(ak_clip_by_norm(b, empty, 2, sumsq, 2.0f, NULL), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

/* The training-step sequence: sum of squares, clip to half the norm, sum
 * again: the new norm is max_norm to the precision of the elements. */
START_TEST(clip_after_sum_squares)
{
    static const size_t sizes[4] = {3000, 20000, 1, 777};
    static const ak_dtype dts[4] = {AK_F32, AK_BF16, AK_F16, AK_F16};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 50);
    kt_tlist l = kt_tlist_make(b, 4, sizes, dts);
    for (size_t i = 0; i < 4; i++)
        kt_fill_values(&r, dts[i], l.x[i], sizes[i], 0.5);
    kt_tlist_upload(&l);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    ck_assert_int_eq(ak_sum_squares(b, l.t, 4, sumsq), AK_OK);
    const double norm = sqrt(kt_sumsq_get(b, sumsq));
    const float max_norm = (float)(norm / 2);
    float *coef = kt_dev_alloc(b, sizeof(float));
    ck_assert_int_eq(ak_clip_by_norm(b, l.t, 4, sumsq, max_norm, coef), AK_OK);
    float c;
    kt_dev_get(b, &c, coef, sizeof c);
    ck_assert_msg(fabs(c - 0.5) < 1e-6, "coefficient %.9g", (double)c);
    kt_dev_put(b, sumsq, &(double){0.0}, sizeof(double));
    ck_assert_int_eq(ak_sum_squares(b, l.t, 4, sumsq), AK_OK);
    const double clipped = sqrt(kt_sumsq_get(b, sumsq));
    /* each element is off by at most half a bf16 ulp (2^-9 relative) */
    ck_assert_msg(fabs(clipped - max_norm) <= 0x1p-9 * max_norm, "norm %.9g after clipping to %.9g",
                  clipped, (double)max_norm);
    kt_tlist_free(&l);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

START_TEST(clip_by_norm_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    double *sumsq = kt_sumsq_alloc(b, 0.0);
    float *coef = kt_dev_alloc(b, sizeof(float));
    char *xd = x.t.data;

    /* ak_clip_by_norm; xs[3] has an invalid dtype */
    const ak_tensor xs[5] = {x.t, y.t, ak_tensor_none(), ak_tensor_of(xd, 2, (ak_dtype)-3), x.t};
    static const float bad_norms[4] = {0.0f, -1.0f, INFINITY, NAN};
    for (int k = 0; k < 4; k++)
        KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, bad_norms[k], coef), AK_EINVAL,
                        "ak_clip_by_norm: max_norm (", "must be finite and > 0");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, -0.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: max_norm (-0) must be finite and > 0");
    ck_assert_int_eq(ak_clip_by_norm(NULL, xs, 2, sumsq, 1.0f, coef), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, NULL, 1, sumsq, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: xs is NULL with 1 tensors");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, NULL, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: sumsq is NULL");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)((char *)coef + 2)),
                    AK_EINVAL, NULL, "ak_clip_by_norm: coef_out");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)((char *)sumsq + 4)),
                    AK_EINVAL, "ak_clip_by_norm: coef_out (", "overlaps sumsq");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 5, sumsq, 1.0f, coef), AK_EINVAL, NULL,
                    "ak_clip_by_norm: xs[3] has an invalid dtype (-3)");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, (double *)(void *)(y.t.data), 1.0f, coef),
                    AK_EINVAL, "ak_clip_by_norm: sumsq (", "overlaps xs[1]");
    KT_EXPECT_ERROR(b, ak_clip_by_norm(b, xs, 2, sumsq, 1.0f, (float *)(void *)(xd + 36)),
                    AK_EINVAL, "ak_clip_by_norm: coef_out (", "overlaps xs[0]");
    /* nothing to do */
    ck_assert_int_eq(ak_clip_by_norm(b, NULL, 0, sumsq, 1.0f, NULL), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    kt_dev_free(b, sumsq);
    kt_dev_free(b, coef);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_clip_by_norm");
    TCase *tc = tcase_create("clip_by_norm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, clip_matches_formula);
    tcase_add_test(tc, clip_hand_checked);
    tcase_add_test(tc, clip_empty_list);
    tcase_add_test(tc, clip_after_sum_squares);
    tcase_add_test(tc, clip_by_norm_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
