/* test_add: ak_add (the residual add) on the cpu backend.  The reference,
 * not from kernels/'s element code, is kt_ref_add (kt.c): the emulator's
 * fpe_<fmt>_add for equal dtypes, else the exact sum's one rounding from
 * the emulator's fp32 add.  Every dtype combination over every 16-bit
 * pattern and the fp32 corner mix, ordinary values that round and cancel,
 * hand cases, y = a and y = b in place, bad arguments. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

#define ADD_N 131072 /* every 16-bit pattern twice */

/* pass 0: a swept (every 16-bit pattern, or the fp32 mix), b from the mix;
 * pass 1 the reverse; pass 2 ordinary values of mixed magnitudes. */
static void fill(ts_rng *r, int pass, ak_dtype dt, bool swept, uint32_t *v)
{
    if (pass == 2) {
        for (size_t i = 0; i < ADD_N; i += 1024)
            kt_fill_values(r, dt, v + i, 1024, ldexp(1.0, (int)ts_below(r, 24) - 12));
        return;
    }
    if (swept && dt != AK_F32) {
        for (size_t i = 0; i < ADD_N; i++)
            v[i] = (uint32_t)(i & 0xFFFF);
        return;
    }
    kt_fill_bits(r, dt, v, ADD_N);
}

/* _i = 9 (y's dtype) + 3 (a's) + b's, kt_dtypes order */
START_TEST(add_matches_reference)
{
    const ak_dtype dy = kt_dtypes[_i / 9], da = kt_dtypes[_i / 3 % 3], db = kt_dtypes[_i % 3];
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 300 + (uint64_t)_i);
    uint32_t *a = kt_bits_alloc(ADD_N), *bv = kt_bits_alloc(ADD_N), *got = kt_bits_alloc(ADD_N),
             *want = kt_bits_alloc(ADD_N);
    kt_buf ta = kt_buf_alloc(b, ADD_N, da), tb = kt_buf_alloc(b, ADD_N, db),
           ty = kt_buf_alloc(b, ADD_N, dy);
    for (int pass = 0; pass < 3; pass++) {
        fill(&r, pass, da, pass == 0, a);
        fill(&r, pass, db, pass == 1, bv);
        kt_buf_put(&ta, a);
        kt_buf_put(&tb, bv);
        ck_assert_msg(ak_add(b, ty.t, ta.t, tb.t) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&ty, got);
        for (size_t i = 0; i < ADD_N; i++)
            want[i] = kt_ref_add(dy, da, db, a[i], bv[i]);
        char what[64];
        snprintf(what, sizeof what, "pass %d: %s = %s + %s", pass, ak_dtype_name(dy),
                 ak_dtype_name(da), ak_dtype_name(db));
        ck_assert_uint_eq(kt_bits_mismatches(what, dy, got, want, ADD_N), 0);
    }
    ck_assert(kt_buf_guards_ok(&ta) && kt_buf_guards_ok(&tb) && kt_buf_guards_ok(&ty));
    kt_buf_free(&ta);
    kt_buf_free(&tb);
    kt_buf_free(&ty);
    free(a);
    free(bv);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* One element y = a + b on the cpu backend. */
static uint32_t add1(ak_backend *b, ak_dtype dy, ak_dtype da, uint32_t a, ak_dtype db, uint32_t bb)
{
    kt_buf ty = kt_buf_alloc(b, 1, dy), ta = kt_buf_alloc(b, 1, da), tb = kt_buf_alloc(b, 1, db);
    kt_buf_put(&ta, &a);
    kt_buf_put(&tb, &bb);
    ck_assert_msg(ak_add(b, ty.t, ta.t, tb.t) == AK_OK, "%s", ak_error(b));
    uint32_t got;
    kt_buf_get(&ty, &got);
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&ta) && kt_buf_guards_ok(&tb));
    kt_buf_free(&ty);
    kt_buf_free(&ta);
    kt_buf_free(&tb);
    return got;
}

/* Hand-checked sums: a residual of fp16 activations in fp32 and back, one
 * rounding where two would differ, overflow, NaN order, signed zeros. */
START_TEST(add_by_hand)
{
    static const struct {
        ak_dtype dy, da;
        uint32_t a;
        ak_dtype db;
        uint32_t b, want;
    } cases[] = {
        /* fp16 + fp16 -> fp32: 65504 + 65504 = 131008, no overflow in fp32 */
        {AK_F32, AK_F16, 0x7BFF, AK_F16, 0x7BFF, 0x47FFE000u},
        /* ... -> fp16: overflows to +inf */
        {AK_F16, AK_F16, 0x7BFF, AK_F16, 0x7BFF, 0x7C00},
        /* fp32 1 + fp32 2^-11 (1 + 2^-23) -> fp16: just above the tie 1 +
         * 2^-11, up to 1 + 2^-10; bf16 2^-100 + fp32 1 + 2^-8 -> bf16: just
         * above the tie, up to 0x3F81, where rounding the sum to double
         * (or fp32) first would land on the tie and round to even, down */
        {AK_F16, AK_F32, 0x3F800000u, AK_F32, 0x3A000001u, 0x3C01},
        {AK_BF16, AK_BF16, 0x0D80, AK_F32, 0x3F808000u, 0x3F81},
        /* fp16 2048 + bf16 1 -> fp16: 2049 is a tie between 2048 and 2050, to even 2048 */
        {AK_F16, AK_F16, 0x6800, AK_BF16, 0x3F80, 0x6800},
        /* NaNs: a's first, quieted; then b's (fp16 payload 0x101 moved up 13
         * bits, quiet bit set); inf - inf the default NaN */
        {AK_F32, AK_F32, 0x7F800001u, AK_F32, 0x7FC00002u, 0x7FC00001u},
        {AK_F32, AK_F32, 0x3F800000u, AK_F16, 0x7D01, 0x7FE02000u},
        {AK_F16, AK_F32, 0x7F800000u, AK_BF16, 0xFF80, 0xFE00},
        /* zeros: -0 + -0 = -0, -0 + +0 = +0, 1 + -1 = +0 */
        {AK_BF16, AK_F16, 0x8000, AK_F32, 0x80000000u, 0x8000},
        {AK_BF16, AK_F16, 0x8000, AK_F32, 0x00000000u, 0x0000},
        {AK_F16, AK_F32, 0x3F800000u, AK_BF16, 0xBF80, 0x0000},
    };
    ak_backend *b = kt_open_cpu();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const uint32_t got = add1(b, cases[k].dy, cases[k].da, cases[k].a, cases[k].db, cases[k].b);
        ck_assert_msg(got == cases[k].want, "case %zu: got 0x%x, expected 0x%x", k, got,
                      cases[k].want);
        ck_assert_uint_eq(kt_ref_add(cases[k].dy, cases[k].da, cases[k].db, cases[k].a, cases[k].b),
                          cases[k].want);
    }
    ak_close(b);
}
END_TEST

/* y = a (and y = b) in place gives what a separate y gives. */
START_TEST(add_in_place)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 330);
    enum { N = 4096 };
    uint32_t *a = kt_bits_alloc(N), *bv = kt_bits_alloc(N), *got = kt_bits_alloc(N),
             *want = kt_bits_alloc(N);
    for (int d = 0; d < 3; d++) {
        const ak_dtype dt = kt_dtypes[d], other = kt_dtypes[(d + 1) % 3];
        kt_fill_bits(&r, dt, a, N);
        kt_fill_bits(&r, other, bv, N);
        for (size_t i = 0; i < N; i++)
            want[i] = kt_ref_add(dt, dt, other, a[i], bv[i]);
        kt_buf ta = kt_buf_alloc(b, N, dt), tb = kt_buf_alloc(b, N, other);
        kt_buf_put(&ta, a);
        kt_buf_put(&tb, bv);
        ck_assert_int_eq(ak_add(b, ta.t, ta.t, tb.t), AK_OK); /* y = a */
        kt_buf_get(&ta, got);
        ck_assert_uint_eq(kt_bits_mismatches("y = a", dt, got, want, N), 0);
        for (size_t i = 0; i < N; i++)
            want[i] = kt_ref_add(dt, other, dt, bv[i], a[i]);
        kt_buf_put(&ta, a);
        ck_assert_int_eq(ak_add(b, ta.t, tb.t, ta.t), AK_OK); /* y = b */
        kt_buf_get(&ta, got);
        ck_assert_uint_eq(kt_bits_mismatches("y = b", dt, got, want, N), 0);
        ck_assert(kt_buf_guards_ok(&ta) && kt_buf_guards_ok(&tb));
        kt_buf_free(&ta);
        kt_buf_free(&tb);
    }
    free(a);
    free(bv);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(add_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf x = kt_buf_alloc(b, 10, AK_F32), y = kt_buf_alloc(b, 10, AK_F32);
    char *xd = x.t.data;
    ck_assert_int_eq(ak_add(NULL, y.t, x.t, x.t), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_add(b, ak_tensor_of(y.t.data, 9, AK_F32), x.t, x.t), AK_EINVAL, NULL,
                    "ak_add: y has 9 elements, expected 10");
    KT_EXPECT_ERROR(b, ak_add(b, y.t, x.t, ak_tensor_of(xd, 8, AK_F32)), AK_EINVAL, NULL,
                    "ak_add: b has 8 elements, expected 10");
    KT_EXPECT_ERROR(b, ak_add(b, y.t, ak_tensor_of(NULL, 10, AK_F16), x.t), AK_EINVAL, NULL,
                    "ak_add: a is NULL with 10 elements");
    KT_EXPECT_ERROR(b, ak_add(b, y.t, x.t, ak_tensor_of(xd, 10, (ak_dtype)7)), AK_EINVAL, NULL,
                    "ak_add: b has an invalid dtype (7)");
    KT_EXPECT_ERROR(b, ak_add(b, ak_tensor_of(xd + 2, 10, AK_F32), x.t, x.t), AK_EINVAL, NULL,
                    "not aligned");
    const ak_tensor head = ak_tensor_of(xd, 4, AK_F32), shifted = ak_tensor_of(xd + 4, 4, AK_F32),
                    other = ak_tensor_of(y.t.data, 4, AK_F32);
    KT_EXPECT_ERROR(b, ak_add(b, shifted, head, other), AK_EINVAL, NULL, "ak_add: y overlaps a");
    KT_EXPECT_ERROR(b, ak_add(b, shifted, other, head), AK_EINVAL, NULL, "ak_add: y overlaps b");
    KT_EXPECT_ERROR(b, ak_add(b, ak_tensor_of(xd, 4, AK_F16), head, head), AK_EINVAL, NULL,
                    "ak_add: y overlaps a");
    /* a and b may be the same tensor; nothing to do when empty */
    ck_assert_int_eq(ak_add(b, y.t, x.t, x.t), AK_OK);
    ck_assert_int_eq(ak_add(b, ak_tensor_none(), ak_tensor_none(), ak_tensor_none()), AK_OK);
    ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&y));
    kt_buf_free(&x);
    kt_buf_free(&y);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_add");
    TCase *tc = tcase_create("add");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, add_matches_reference, 0, 27);
    tcase_add_test(tc, add_by_hand);
    tcase_add_test(tc, add_in_place);
    tcase_add_test(tc, add_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
