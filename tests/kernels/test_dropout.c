/* test_dropout: ak_dropout_forward and ak_dropout_backward on the cpu
 * backend.  The reference is written here from kernels.h's rule: the
 * emulator's Philox word fpe_random_bits(key, 0x44524F50 'DROP', offset +
 * i), kept when bits / 2^32 >= p; scale = (float)(1 / (1 - p)); y = x * mask
 * * scale in fp32 (C float arithmetic, correctly rounded), converted to y's
 * dtype.  Also: the kept fraction over 10^6 elements within a binomial
 * bound, the same mask forward and backward and across calls, another for
 * another offset, offsets that split a tensor, p = 0, the signs and NaNs
 * of dropped elements, finite differences, bad p and bad arguments. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"

static bool ref_kept(float p, uint64_t key, uint64_t index)
{
    const uint32_t bits = fpe_random_bits(key, 0x44524F50u, index);
    return (double)bits / 4294967296.0 >= (double)p;
}

/* y for element x (dtype dx) as PyTorch's x * mask * scale, to dtype dy;
 * ordinary values only (no NaN or inf: those are checked by hand). */
static uint32_t ref_value(ak_dtype dy, ak_dtype dx, float p, bool kept, uint32_t x)
{
    const float scale = (float)(1.0 / (1.0 - (double)p));
    const float v = kt_f32_of(kt_to_f32(dx, x));
    const float y = (v * (kept ? 1.0f : 0.0f)) * scale;
    return kt_convert(AK_F32, dy, kt_f32_bits(y));
}

START_TEST(forward_matches_reference)
{
    static const float ps[4] = {0.1f, 0.5f, 0.3f, 0.999f};
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 500);
    const size_t n = 5000;
    uint32_t *x = kt_bits_alloc(n), *got = kt_bits_alloc(n), *want = kt_bits_alloc(n);
    for (int c = 0; c < 9; c++) {
        const ak_dtype dy = kt_dtypes[c / 3], dx = kt_dtypes[c % 3];
        const float p = ps[c % 4];
        const uint64_t key = 0x0123456789ABCDEFull + (uint64_t)c, offset = 1000u * (uint64_t)c;
        kt_fill_values(&r, dx, x, n, 3.0);
        kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, n, dy);
        kt_buf_put(&tx, x);
        ck_assert_int_eq(ak_dropout_forward(b, p, key, offset, ty.t, tx.t), AK_OK);
        kt_buf_get(&ty, got);
        for (size_t i = 0; i < n; i++)
            want[i] = ref_value(dy, dx, p, ref_kept(p, key, offset + i), x[i]);
        ck_assert_msg(kt_bits_mismatches("dropout y", dy, got, want, n) == 0, "y %s x %s p %g",
                      ak_dtype_name(dy), ak_dtype_name(dx), (double)p);
        /* the backward is the same map with dy in x's place */
        ck_assert_int_eq(ak_dropout_backward(b, p, key, offset, ty.t, tx.t), AK_OK);
        kt_buf_get(&ty, got);
        ck_assert_uint_eq(kt_bits_mismatches("dropout dx", dy, got, want, n), 0);
        ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty));
        kt_buf_free(&tx);
        kt_buf_free(&ty);
    }
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* Kept counts of x = 1 over 10^6 elements: y = scale where kept, +0 where
 * dropped.  The count K is binomial(n, q), q = 1 - p up to 2^-32; the test
 * asks |K - n q| <= 6 sqrt(n q (1 - q)) (a 6-sigma bound: a true binomial
 * leaves it with probability below 2e-9). */
START_TEST(kept_fraction_binomial)
{
    static const float ps[3] = {0.1f, 0.5f, 0.9f};
    ak_backend *b = kt_open_cpu();
    const size_t n = 1000000;
    float *ones = malloc(n * sizeof *ones), *y = malloc(n * sizeof *y);
    ck_assert(ones && y);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    kt_buf tx = kt_buf_alloc(b, n, AK_F32), ty = kt_buf_alloc(b, n, AK_F32);
    kt_buf_upload(&tx, ones);
    for (int k = 0; k < 3; k++) {
        const double q = 1.0 - (double)ps[k];
        ck_assert_int_eq(ak_dropout_forward(b, ps[k], 42u + (uint64_t)k, 0, ty.t, tx.t), AK_OK);
        kt_buf_download(&ty, y);
        size_t kept = 0;
        const float scale = (float)(1.0 / q);
        for (size_t i = 0; i < n; i++) {
            ck_assert(y[i] == 0.0f || y[i] == scale);
            kept += y[i] != 0.0f;
        }
        const double sigma = sqrt((double)n * q * (1.0 - q));
        ck_assert_msg(fabs((double)kept - (double)n * q) <= 6.0 * sigma,
                      "p %g: %zu kept of %zu, expected %.0f +- %.0f", (double)ps[k], kept, n,
                      (double)n * q, 6.0 * sigma);
    }
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    free(ones);
    free(y);
    ak_close(b);
}
END_TEST

/* The mask of (key, offset) over n ones: which elements are kept. */
static void mask_of(ak_backend *b, bool backward, float p, uint64_t key, uint64_t offset, size_t n,
                    bool *kept)
{
    float *ones = malloc(n * sizeof *ones), *y = malloc(n * sizeof *y);
    ck_assert(ones && y);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    kt_buf tx = kt_buf_alloc(b, n, AK_F32), ty = kt_buf_alloc(b, n, AK_F32);
    kt_buf_upload(&tx, ones);
    if (backward)
        ck_assert_int_eq(ak_dropout_backward(b, p, key, offset, ty.t, tx.t), AK_OK);
    else
        ck_assert_int_eq(ak_dropout_forward(b, p, key, offset, ty.t, tx.t), AK_OK);
    kt_buf_download(&ty, y);
    for (size_t i = 0; i < n; i++)
        kept[i] = y[i] != 0.0f;
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    free(ones);
    free(y);
}

START_TEST(mask_is_keyed)
{
    ak_backend *b = kt_open_cpu();
    enum { N = 20000 };
    static bool fwd[N], bwd[N], again[N], other[N], tail[N / 2], rekeyed[N];
    const uint64_t key = 7, offset = 123456789012ull;
    mask_of(b, false, 0.4f, key, offset, N, fwd);
    mask_of(b, true, 0.4f, key, offset, N, bwd);
    mask_of(b, false, 0.4f, key, offset, N, again);
    mask_of(b, false, 0.4f, key, offset + N, N, other);
    mask_of(b, false, 0.4f, key, offset + N / 2, N / 2, tail);
    mask_of(b, false, 0.4f, key + 1, offset, N, rekeyed);
    size_t differ_offset = 0, differ_key = 0;
    for (size_t i = 0; i < N; i++) {
        ck_assert(fwd[i] == bwd[i] && fwd[i] == again[i]);
        ck_assert(fwd[i] == ref_kept(0.4f, key, offset + i));
        if (i >= N / 2) ck_assert(tail[i - N / 2] == fwd[i]); /* the second half by offset */
        differ_offset += fwd[i] != other[i];
        differ_key += fwd[i] != rekeyed[i];
    }
    /* independent masks differ in 2 p q = 48% of places: far from 0 */
    ck_assert_uint_gt(differ_offset, N / 3);
    ck_assert_uint_gt(differ_key, N / 3);
    ak_close(b);
}
END_TEST

/* By hand: signs of dropped elements, NaNs and infinities, p = 0. */
START_TEST(specials_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* key 7, offset 0, p = 0.5: find a dropped and a kept index first */
    size_t dropped = 0, kept = 0;
    while (ref_kept(0.5f, 7, dropped))
        dropped++;
    while (!ref_kept(0.5f, 7, kept))
        kept++;
    static const struct {
        uint32_t x, if_dropped, if_kept;
    } cases[] = {
        {0x3FC00000u, 0x00000000u, 0x40400000u}, /* 1.5: +0, 3 */
        {0xBFC00000u, 0x80000000u, 0xC0400000u}, /* -1.5: -0 (x * 0), -3 */
        {0x80000000u, 0x80000000u, 0x80000000u}, /* -0 */
        {0x7F800000u, 0xFFC00000u, 0x7F800000u}, /* inf: inf * 0 the default NaN; inf */
        {0xFF800000u, 0xFFC00000u, 0xFF800000u},
        {0x7FC01234u, 0x7FC01234u, 0x7FC01234u}, /* a quiet NaN stays itself */
        {0x7F801234u, 0x7FC01234u, 0x7FC01234u}, /* a signaling NaN is quieted */
        {0x7F7FFFFFu, 0x00000000u, 0x7F800000u}, /* the largest fp32 doubles to inf */
    };
    const size_t ncases = sizeof cases / sizeof cases[0];
    const size_t n = (dropped > kept ? dropped : kept) + 1;
    uint32_t *x = kt_bits_alloc(n), *got = kt_bits_alloc(n);
    kt_buf tx = kt_buf_alloc(b, n, AK_F32), ty = kt_buf_alloc(b, n, AK_F32);
    for (size_t k = 0; k < ncases; k++) {
        x[dropped] = x[kept] = cases[k].x;
        kt_buf_put(&tx, x);
        ck_assert_int_eq(ak_dropout_forward(b, 0.5f, 7, 0, ty.t, tx.t), AK_OK);
        kt_buf_get(&ty, got);
        ck_assert_msg(got[dropped] == cases[k].if_dropped && got[kept] == cases[k].if_kept,
                      "x 0x%08x: dropped 0x%08x kept 0x%08x", cases[k].x, got[dropped], got[kept]);
        /* p = 0 copies, signaling NaNs and all */
        ck_assert_int_eq(ak_dropout_forward(b, 0.0f, 7, 0, ty.t, tx.t), AK_OK);
        kt_buf_get(&ty, got);
        ck_assert_uint_eq(got[dropped], cases[k].x);
    }
    /* p = 0 converts: fp32 1 + 2^-11 + 2^-23 -> fp16 rounds up to 1 + 2^-10 */
    kt_buf th = kt_buf_alloc(b, n, AK_F16);
    x[0] = 0x3F800000u | 0x1000u | 1u;
    kt_buf_put(&tx, x);
    ck_assert_int_eq(ak_dropout_forward(b, 0.0f, 7, 0, th.t, tx.t), AK_OK);
    kt_buf_get(&th, got);
    ck_assert_uint_eq(got[0], 0x3C01);
    /* in place: y = x gives what a separate y gives */
    for (size_t i = 0; i < n; i++)
        x[i] = kt_f32_bits(1.0f + (float)i);
    kt_buf_put(&tx, x);
    ck_assert_int_eq(ak_dropout_forward(b, 0.5f, 7, 0, ty.t, tx.t), AK_OK);
    ck_assert_int_eq(ak_dropout_forward(b, 0.5f, 7, 0, tx.t, tx.t), AK_OK);
    uint32_t *in_place = kt_bits_alloc(n);
    kt_buf_get(&ty, got);
    kt_buf_get(&tx, in_place);
    ck_assert_uint_eq(kt_count_mismatches("in place", in_place, got, n, 4), 0);
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&th));
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    kt_buf_free(&th);
    free(x);
    free(got);
    free(in_place);
    ak_close(b);
}
END_TEST

typedef struct fd_ctx {
    uint64_t key;
} fd_ctx;

static void dropout_fd_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const fd_ctx *c = ctx;
    ck_assert_int_eq(ak_dropout_forward(b, 0.5f, c->key, 99, y->t, x->t), AK_OK);
}

/* dL/dx = dropout_backward(dy = r); p = 1/2 (scale 2) keeps y exact. */
START_TEST(gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    enum { N = 40 };
    float x[N], rv[N], grad[N];
    kt_fd_points(&r, ts_seed() + 510, x, rv, N);
    const fd_ctx ctx = {0xD00Du};
    kt_buf tr = kt_buf_alloc(b, N, AK_F32), tg = kt_buf_alloc(b, N, AK_F32);
    kt_buf_upload(&tr, rv);
    ck_assert_int_eq(ak_dropout_backward(b, 0.5f, ctx.key, 99, tg.t, tr.t), AK_OK);
    kt_buf_download(&tg, grad);
    kt_fd_check(b, dropout_fd_forward, &ctx, N, N, x, rv, grad, 0x1p-10);
    kt_buf_free(&tr);
    kt_buf_free(&tg);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    char *xd = x.t.data;
    static const char fw[] = "ak_dropout_forward: ", bw[] = "ak_dropout_backward: ";
    static const float bad_p[] = {-0.1f, 1.0f, 1.5f, -INFINITY, INFINITY};
    for (size_t k = 0; k < sizeof bad_p / sizeof bad_p[0]; k++) {
        KT_EXPECT_ERROR(b, ak_dropout_forward(b, bad_p[k], 1, 0, y.t, x.t), AK_EINVAL, fw,
                        "must be in [0, 1)");
        KT_EXPECT_ERROR(b, ak_dropout_backward(b, bad_p[k], 1, 0, y.t, x.t), AK_EINVAL, bw,
                        "must be in [0, 1)");
    }
    KT_EXPECT_ERROR(b, ak_dropout_forward(b, NAN, 1, 0, y.t, x.t), AK_EINVAL, fw,
                    "p (nan) must be in [0, 1)");
    KT_EXPECT_ERROR(b, ak_dropout_forward(b, 1.0f, 1, 0, y.t, x.t), AK_EINVAL, fw,
                    "p (1) must be in [0, 1)");
    ck_assert_int_eq(ak_dropout_forward(NULL, 0.5f, 1, 0, y.t, x.t), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_dropout_forward(b, 0.5f, 1, 0, ak_tensor_of(y.t.data, 9, AK_F32), x.t),
                    AK_EINVAL, fw, "y has 9 elements, expected 10");
    KT_EXPECT_ERROR(b, ak_dropout_backward(b, 0.5f, 1, 0, y.t, ak_tensor_of(NULL, 10, AK_F16)),
                    AK_EINVAL, bw, "dy is NULL with 10 elements");
    KT_EXPECT_ERROR(b, ak_dropout_backward(b, 0.5f, 1, 0, ak_tensor_of(xd, 10, (ak_dtype)9), x.t),
                    AK_EINVAL, bw, "dx has an invalid dtype (9)");
    KT_EXPECT_ERROR(b,
                    ak_dropout_forward(b, 0.5f, 1, 0, ak_tensor_of(xd + 4, 4, AK_F32),
                                       ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, fw, "y overlaps x");
    KT_EXPECT_ERROR(b,
                    ak_dropout_backward(b, 0.5f, 1, 0, ak_tensor_of(xd, 4, AK_F16),
                                        ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, bw, "dx overlaps dy");
    ck_assert_int_eq(ak_dropout_forward(b, 0.5f, 1, 0, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_dropout");
    TCase *tc = tcase_create("dropout");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_matches_reference);
    tcase_add_test(tc, kept_fraction_binomial);
    tcase_add_test(tc, mask_is_keyed);
    tcase_add_test(tc, specials_by_hand);
    tcase_add_test(tc, gradient_matches_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
