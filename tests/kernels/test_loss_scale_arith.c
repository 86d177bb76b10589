/* test_loss_scale_arith: the scale's number types and operations
 * (kernels/loss_scale.h, Arithmetic): one growth and one backoff in each of
 * fp32, fp32-double-factor and double, multiplying and dividing, checked
 * against values worked out by hand; the floor and cap in each type; a
 * double scale past fp32's maximum and below its smallest subnormal; and
 * the validation of factors that do not survive fp32. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "ref_loss_scale.h"

/* a dynamic policy, window 1, no floor or cap, in the given arithmetic */
static ak_scaler_config policy(ak_scale_arith arith, bool divides, double growth, double backoff,
                               float init)
{
    ak_scaler_config c = ref_scaler_preset("dynamic");
    c.arith = arith;
    c.backoff_divides = divides;
    c.growth_factor = growth;
    c.backoff_factor = backoff;
    c.window = 1;
    c.min_scale = 0.0f;
    c.max_scale = INFINITY;
    c.refuse_nonfinite_growth = false;
    c.init_scale = init;
    return c;
}

static ak_scaler_state after(const ak_scaler_config *c, const char *events)
{
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(c, &s), AK_OK);
    for (size_t i = 0; events[i]; i++)
        ak_loss_scale_step(c, &s, events[i] == 'O');
    return s;
}

/* Each operation's own rounding, with values whose rounding is known by
 * hand (the bits of 1.7 itself are in test_loss_scale_frameworks). */
START_TEST(one_growth_and_one_backoff)
{
    /* (2^24 + 2) * 1.5 = 25165827: exact in double; above 2^24 the fp32 ulp
     * is 2, 25165827 is halfway between 25165826 (odd significand 12582913)
     * and 25165828 (even): ties to even gives 25165828. */
    ak_scaler_config c = policy(AK_SCALE_ARITH_FP32, false, 1.5, 0.5, 16777218.0f);
    ak_scaler_state s = after(&c, "C");
    ck_assert(s.scale == 25165828.0f && s.master_scale == 25165828.0);
    c.arith = AK_SCALE_ARITH_FP32_DOUBLE_FACTOR;
    s = after(&c, "C");
    ck_assert(s.scale == 25165828.0f && s.master_scale == 25165828.0);
    c.arith = AK_SCALE_ARITH_DOUBLE;
    s = after(&c, "C");
    ck_assert(s.master_scale == 25165827.0 && s.scale == 25165828.0f);
    ck_assert(s.inv_scale == (float)(1.0 / 25165827.0));

    /* a factor that is no fp32 number: 1 + 2^-30 is 1.0f, so validation
     * refuses it for the fp32 product; the double-factor product (2^24 + 2)(1
     * + 2^-30) is 2^24 + 2 + 2^-6 + ..., which rounds back to 2^24 + 2 (no
     * growth); the double keeps it. */
    c = policy(AK_SCALE_ARITH_FP32, false, 1.0 + 0x1p-30, 0.5, 16777218.0f);
    char msg[256];
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--growth-factor 1: must be finite and > 1");
    c.arith = AK_SCALE_ARITH_FP32_DOUBLE_FACTOR;
    s = after(&c, "C");
    ck_assert(s.scale == 16777218.0f && s.growths == 0);
    c.arith = AK_SCALE_ARITH_DOUBLE;
    s = after(&c, "C");
    ck_assert(s.master_scale == 16777218.0 + 16777218.0 * 0x1p-30 && s.growths == 1);
    ck_assert(s.scale == 16777218.0f);

    /* backoff: multiplying by 1/3 and dividing by 3.  (1/3)f = 0x1.555556p-2
     * (rounded up); 3 * that = 1 + 2^-25, under half an ulp: 1, as 3 / 3. */
    c = policy(AK_SCALE_ARITH_FP32, false, 3.0, 1.0 / 3.0, 3.0f);
    s = after(&c, "O");
    ck_assert(s.scale == 1.0f);
    c.backoff_divides = true; /* 3 / 3 = 1 exactly */
    s = after(&c, "O");
    ck_assert(s.scale == 1.0f && s.master_scale == 1.0);
    c.arith = AK_SCALE_ARITH_DOUBLE; /* 3 / 3 = 1 in double too */
    s = after(&c, "O");
    ck_assert(s.scale == 1.0f && s.master_scale == 1.0);
    /* from 10: 10 / 3 = 0x1.aaaaaaaaaaaabp1 in double, applied as 0x1.aaaaaap1
     * (the bits cut off, 0xaa.., are under half an ulp); the fp32 quotient is
     * that fp32 number; the fp32 product 10 * 0x1.555556p-2 = 0x1.aaaaaaep1
     * rounds up to 0x1.aaaaacp1. */
    c.init_scale = 10.0f;
    s = after(&c, "O");
    ck_assert(s.master_scale == 0x1.aaaaaaaaaaaabp1 && s.scale == 0x1.aaaaaap1f);
    c.arith = AK_SCALE_ARITH_FP32;
    s = after(&c, "O");
    ck_assert(s.master_scale == 0x1.aaaaaap1 && s.scale == 0x1.aaaaaap1f);
    c.backoff_divides = false;
    s = after(&c, "O");
    ck_assert(s.scale == 0x1.aaaaacp1f);
    c.arith = AK_SCALE_ARITH_FP32_DOUBLE_FACTOR; /* 10 * 0x1.5555555555555p-2, once */
    s = after(&c, "O");
    ck_assert(s.scale == 0x1.aaaaaap1f);
}
END_TEST

/* The floor and the cap are taken in the scale's own type. */
START_TEST(floor_and_cap)
{
    /* floor 1 from 1.5, backoff x0.5: 0.75 -> 1 in every type */
    for (int a = 0; a < AK_SCALE_ARITH_COUNT; a++) {
        ak_scaler_config c = policy((ak_scale_arith)a, false, 2.0, 0.5, 1.5f);
        c.min_scale = 1.0f;
        ak_scaler_state s = after(&c, "OO");
        ck_assert(s.scale == 1.0f && s.master_scale == 1.0);
        ck_assert_int_eq(s.backoffs, 1);
        /* cap 2^24 from 2^23 + 1, growth x2: 2^24 + 2 -> 2^24 */
        c = policy((ak_scale_arith)a, false, 2.0, 0.5, 8388609.0f);
        c.max_scale = 16777216.0f;
        s = after(&c, "CC");
        ck_assert(s.scale == 16777216.0f && s.master_scale == 16777216.0);
        ck_assert_int_eq(s.growths, 1);
    }
}
END_TEST

/* A double scale passes fp32's maximum and comes back; it goes below the
 * smallest fp32 subnormal where the fp32 scale is 0 (REFERENCES.md). */
START_TEST(double_beyond_fp32)
{
    ak_scaler_config c = policy(AK_SCALE_ARITH_DOUBLE, true, 2.0, 0.5, 0x1p127f);
    ak_scaler_state s = after(&c, "CCC");
    ck_assert(s.master_scale == 0x1p130 && isinf(s.scale) && s.inv_scale == 0x1p-130f);
    ck_assert_int_eq(s.growths, 3);
    s = after(&c, "CCCOOOO");
    ck_assert(s.master_scale == 0x1p126 && s.scale == 0x1p126f);
    ck_assert_int_eq(s.backoffs, 4);
    /* refusing a non-finite growth refuses only the double's own inf */
    c.refuse_nonfinite_growth = true;
    s = after(&c, "C");
    ck_assert(s.master_scale == 0x1p128 && isinf(s.scale));
    c.init_scale = FLT_MAX;
    c.growth_factor = 0x1p800;
    s = after(&c, "CC"); /* FLT_MAX * 2^800 is finite; * 2^1600 is not: kept */
    ck_assert(s.master_scale == (double)FLT_MAX * 0x1p800 && s.growths == 1);
    /* the fp32 types take inf (or refuse it) at 2^128 */
    c = policy(AK_SCALE_ARITH_FP32_DOUBLE_FACTOR, false, 2.0, 0.5, 0x1p127f);
    s = after(&c, "CO");
    ck_assert(isinf(s.scale) && isinf(s.master_scale)); /* inf * 0.5 stays inf */
    c.refuse_nonfinite_growth = true;
    s = after(&c, "C");
    ck_assert(s.scale == 0x1p127f && s.growths == 0);

    /* down: 2^-149 / 2 = 2^-150 is 0 in fp32 (ties to even) but not in double */
    c = policy(AK_SCALE_ARITH_DOUBLE, true, 2.0, 0.5, 0x1p-149f);
    s = after(&c, "O");
    ck_assert(s.master_scale == 0x1p-150 && s.scale == 0.0f && s.inv_scale == INFINITY);
    s = after(&c, "OC");
    ck_assert(s.master_scale == 0x1p-149 && s.scale == 0x1p-149f);
    c.arith = AK_SCALE_ARITH_FP32;
    s = after(&c, "OC"); /* fp32: 0, and 0 * 2 stays 0 */
    ck_assert(s.scale == 0.0f && s.master_scale == 0.0);
}
END_TEST

/* Factors and arithmetics that cannot be used are refused by name. */
START_TEST(validation)
{
    char msg[256];
    ak_scaler_config c = policy(AK_SCALE_ARITH_FP32, false, 2.0, 1e-50, 8.0f);
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--backoff-factor 1e-50: must be in (0, 1)");
    c.arith = AK_SCALE_ARITH_DOUBLE; /* a double takes it */
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    c = policy(AK_SCALE_ARITH_FP32, false, 1e39, 0.5, 8.0f);
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--growth-factor 1e+39: must be finite and > 1");
    c.arith = AK_SCALE_ARITH_FP32_DOUBLE_FACTOR;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    c.arith = (ak_scale_arith)3;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--loss-scale: arithmetic 3 is not fp32, fp32-double-factor or double");
    ak_scaler_state s;
    memset(&s, 0x3C, sizeof s);
    const ak_scaler_state before = s;
    ck_assert_int_eq(ak_scaler_init(&c, &s), AK_EINVAL);
    ck_assert_int_eq(memcmp(&s, &before, sizeof s), 0);
    /* init: master_scale is the first scale */
    c = policy(AK_SCALE_ARITH_DOUBLE, true, 2.0, 0.5, 0x1p32f);
    ck_assert_int_eq(ak_scaler_init(&c, &s), AK_OK);
    ck_assert(s.master_scale == 0x1p32 && s.scale == 0x1p32f && s.inv_scale == 0x1p-32f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_loss_scale_arith");
    TCase *tc = tcase_create("loss_scale_arith");
    tcase_add_test(tc, one_growth_and_one_backoff);
    tcase_add_test(tc, floor_and_cap);
    tcase_add_test(tc, double_beyond_fp32);
    tcase_add_test(tc, validation);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
