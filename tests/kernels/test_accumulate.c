/* test_accumulate: ak_accumulate on the cpu backend.  The reference, not
 * from kernels/'s element code: kt_ref_add (kt.c), the emulator's
 * fpe_<fmt>_add(x, y) for equal dtypes, else the exact sum's one rounding
 * built from the emulator's fp32 add (rounded to odd where needed). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* x + y rounded once to y's dtype, x the first operand (its NaN wins). */
static uint32_t ref_accumulate(ak_dtype dy, ak_dtype dx, uint32_t y, uint32_t x)
{
    return kt_ref_add(dy, dx, dy, x, y);
}

/* ---- accumulate ----------------------------------------------------------------- */
#define ACC_N 131072 /* every 16-bit pattern twice */

/* Operands of one pass: 0 sweeps y (every 16-bit pattern, or the fp32 mix)
 * against x from the mix; 1 the reverse; 2 ordinary values of mixed
 * magnitudes, so that sums round and cancel. */
static void fill_operands(ts_rng *r, int pass, ak_dtype dt, bool swept, uint32_t *v, size_t n)
{
    if (pass == 2) {
        for (size_t i = 0; i < n; i += 1024)
            kt_fill_values(r, dt, v + i, n - i < 1024 ? n - i : 1024,
                           ldexp(1.0, (int)ts_below(r, 24) - 12));
        return;
    }
    if (swept && dt != AK_F32) {
        for (size_t i = 0; i < n; i++)
            v[i] = (uint32_t)(i & 0xFFFF);
        return;
    }
    kt_fill_bits(r, dt, v, n);
}

/* _i = 3 * (y's dtype) + x's dtype (kt_dtypes order) */
START_TEST(accumulate_matches_emulator)
{
    const ak_dtype dy = kt_dtypes[_i / 3], dx = kt_dtypes[_i % 3];
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + (uint64_t)_i);
    uint32_t *y = kt_bits_alloc(ACC_N), *x = kt_bits_alloc(ACC_N), *got = kt_bits_alloc(ACC_N),
             *want = kt_bits_alloc(ACC_N);
    kt_buf ty = kt_buf_alloc(b, ACC_N, dy), tx = kt_buf_alloc(b, ACC_N, dx);
    for (int pass = 0; pass < 3; pass++) {
        fill_operands(&r, pass, dy, pass == 0, y, ACC_N);
        fill_operands(&r, pass, dx, pass == 1, x, ACC_N);
        kt_buf_put(&ty, y);
        kt_buf_put(&tx, x);
        ck_assert_msg(ak_accumulate(b, ty.t, tx.t) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&ty, got);
        for (size_t i = 0; i < ACC_N; i++)
            want[i] = ref_accumulate(dy, dx, y[i], x[i]);
        char what[64];
        snprintf(what, sizeof what, "y (%s) += x (%s), pass %d", ak_dtype_name(dy),
                 ak_dtype_name(dx), pass);
        ck_assert_uint_eq(kt_count_mismatches(what, got, want, ACC_N, 4), 0);
        kt_buf_get(&tx, got); /* x is only read */
        ck_assert_uint_eq(kt_count_mismatches("x after", got, x, ACC_N, 4), 0);
    }
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tx));
    kt_buf_free(&ty);
    kt_buf_free(&tx);
    free(y);
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* y = y + y (x is y itself): every 16-bit pattern and the fp32 mix. */
START_TEST(accumulate_onto_itself)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 20);
    uint32_t *y = kt_bits_alloc(ACC_N), *got = kt_bits_alloc(ACC_N), *want = kt_bits_alloc(ACC_N);
    for (int d = 0; d < 3; d++) {
        const ak_dtype dt = kt_dtypes[d];
        fill_operands(&r, 0, dt, true, y, ACC_N);
        kt_buf t = kt_buf_alloc(b, ACC_N, dt);
        kt_buf_put(&t, y);
        ck_assert_msg(ak_accumulate(b, t.t, t.t) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&t, got);
        for (size_t i = 0; i < ACC_N; i++)
            want[i] = ref_accumulate(dt, dt, y[i], y[i]);
        ck_assert_uint_eq(kt_count_mismatches(ak_dtype_name(dt), got, want, ACC_N, 4), 0);
        ck_assert(kt_buf_guards_ok(&t));
        kt_buf_free(&t);
    }
    free(y);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* One element y (dtype dy) += x (dtype dx) on the cpu backend. */
static uint32_t accumulate1(ak_backend *b, ak_dtype dy, uint32_t y, ak_dtype dx, uint32_t x)
{
    kt_buf ty = kt_buf_alloc(b, 1, dy), tx = kt_buf_alloc(b, 1, dx);
    kt_buf_put(&ty, &y);
    kt_buf_put(&tx, &x);
    ck_assert_msg(ak_accumulate(b, ty.t, tx.t) == AK_OK, "%s", ak_error(b));
    uint32_t got;
    kt_buf_get(&ty, &got);
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tx));
    kt_buf_free(&ty);
    kt_buf_free(&tx);
    return got;
}

/* Hand-checked sums: ties, a double rounding that round-to-odd avoids,
 * overflow, inf - inf, which NaN wins, signed zeros, subnormals. */
START_TEST(accumulate_special_cases)
{
    static const struct {
        ak_dtype dy;
        uint32_t y;
        ak_dtype dx;
        uint32_t x, want;
    } cases[] = {
        /* fp16 y, fp32 x: 1 + 2^-11 is a tie (to even: 1); 2^-11 + 2^-24 rounds up */
        {AK_F16, 0x3C00, AK_F32, 0x3A000000u, 0x3C00},
        {AK_F16, 0x3C00, AK_F32, 0x3A000001u, 0x3C01},
        /* 65504 + 16 = 65520 rounds past the largest fp16 */
        {AK_F16, 0x7BFF, AK_F32, 0x41800000u, 0x7C00},
        /* inf + -inf: the default NaN */
        {AK_F16, 0x7C00, AK_F32, 0xFF800000u, 0xFE00},
        /* both NaNs: x's wins (payload's top bits), quieted */
        {AK_F16, 0x7D01, AK_F32, 0x7FC02000u, 0x7E01},
        {AK_F16, 0x7D01, AK_F32, 0x3F800000u, 0x7F01},
        {AK_F16, 0x7D01, AK_F16, 0xFC01, 0xFE01},
        /* -0 + -0 = -0; -0 + +0 = +0; 1 + -1 = +0 */
        {AK_F16, 0x8000, AK_F32, 0x80000000u, 0x8000},
        {AK_F16, 0x8000, AK_F32, 0x00000000u, 0x0000},
        {AK_F16, 0x3C00, AK_F32, 0xBF800000u, 0x0000},
        /* bf16 y = 2^-100, x = 1 + 2^-8 (a bf16 tie): the exact sum is just
         * above the tie and rounds up, where the double sum would be the
         * tie itself and round to even (down) */
        {AK_BF16, 0x0D80, AK_F32, 0x3F808000u, 0x3F81},
        /* -2^-100 + (1 + 2^-7 + 2^-8): just below a tie whose even side is up */
        {AK_BF16, 0x8D80, AK_F32, 0x3F818000u, 0x3F81},
        /* fp32: 1 + 2^-24 ties to even; 2^-24 (1 + 2^-23) rounds up */
        {AK_F32, 0x3F800000u, AK_F32, 0x33800000u, 0x3F800000u},
        {AK_F32, 0x3F800000u, AK_F32, 0x33800001u, 0x3F800001u},
        /* subnormals are kept: 2^-149 + 2^-149 */
        {AK_F32, 0x00000001u, AK_F32, 0x00000001u, 0x00000002u},
        /* fp32 NaNs: x's, quieted; inf - inf the default NaN */
        {AK_F32, 0x7FC00001u, AK_F32, 0xFF800001u, 0xFFC00001u},
        {AK_F32, 0x7F800000u, AK_F32, 0xFF800000u, 0xFFC00000u},
        /* fp32 y + fp16 x: 2^24 + 1 is a tie (to even: 2^24) */
        {AK_F32, 0x4B800000u, AK_F16, 0x3C00, 0x4B800000u},
    };
    ak_backend *b = kt_open_cpu();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint32_t got = accumulate1(b, cases[k].dy, cases[k].y, cases[k].dx, cases[k].x);
        ck_assert_msg(got == cases[k].want, "case %zu: %s 0x%x + %s 0x%x: got 0x%x, expected 0x%x",
                      k, ak_dtype_name(cases[k].dy), cases[k].y, ak_dtype_name(cases[k].dx),
                      cases[k].x, got, cases[k].want);
        /* and the reference agrees with the hand-checked value */
        ck_assert_uint_eq(ref_accumulate(cases[k].dy, cases[k].dx, cases[k].y, cases[k].x),
                          cases[k].want);
    }
    ak_close(b);
}
END_TEST

/* ---- bad arguments ----------------------------------------------------------------------- */
START_TEST(accumulate_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    char *xd = x.t.data;

    /* ak_accumulate */
    ck_assert_int_eq(ak_accumulate(NULL, y.t, x.t), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_accumulate(b, ak_tensor_of(y.t.data, 9, AK_F32), x.t), AK_EINVAL, NULL,
                    "ak_accumulate: y has 9 elements, expected 10");
    KT_EXPECT_ERROR(b, ak_accumulate(b, y.t, ak_tensor_of(NULL, 10, AK_F16)), AK_EINVAL, NULL,
                    "ak_accumulate: x is NULL with 10 elements");
    KT_EXPECT_ERROR(b, ak_accumulate(b, y.t, ak_tensor_of(xd, 10, (ak_dtype)7)), AK_EINVAL, NULL,
                    "ak_accumulate: x has an invalid dtype (7)");
    KT_EXPECT_ERROR(b,
                    ak_accumulate(b, ak_tensor_of(xd + 2, 4, AK_F32), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, NULL, "ak_accumulate: y");
    ck_assert_msg(strstr(ak_error(b), "not aligned"), "%s", ak_error(b));
    KT_EXPECT_ERROR(b,
                    ak_accumulate(b, ak_tensor_of(xd + 4, 4, AK_F32), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, "ak_accumulate: y (fp32 at", "overlap");
    KT_EXPECT_ERROR(b, ak_accumulate(b, ak_tensor_of(xd, 4, AK_F16), ak_tensor_of(xd, 4, AK_F32)),
                    AK_EINVAL, "ak_accumulate: y (fp16 at", "and x (fp32 at");
    ck_assert_int_eq(ak_accumulate(b, x.t, x.t), AK_OK); /* y = 2y */
    ck_assert_int_eq(ak_accumulate(b, ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_accumulate");
    TCase *tc = tcase_create("accumulate");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, accumulate_matches_emulator, 0, 9);
    tcase_add_test(tc, accumulate_onto_itself);
    tcase_add_test(tc, accumulate_special_cases);
    tcase_add_test(tc, accumulate_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
