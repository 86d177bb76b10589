/* test_update_loss: the rounding loss ak_update records (ak_update_loss) on
 * the cpu backend: the 2^p rule (w = 2048, delta = 1 in fp16: predicted
 * lost, and lost) and stochastic rounding's lost count against the random
 * words. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* One SGD step with lr 1 and gradient -delta on hand-made weights. */
static ak_update_loss one_sgd_step(const ref_layout *L, const ak_rounding *r, const float *w,
                                   const float *delta, size_t n, uint32_t *stored_after)
{
    ref_param x = ref_param_open(L, n);
    ref_mirror *h = &x.h;
    for (size_t i = 0; i < n; i++) {
        if (L->master)
            h->master[i] = kt_f32_bits(w[i]);
        else
            h->model[i] = ref_narrow_rne(L->model, w[i]);
        ck_assert(ref_widen(L->master ? AK_F32 : L->model,
                            L->master ? h->master[i] : h->model[i]) == w[i]);
        h->grad[i] = kt_f32_bits(-delta[i]);
    }
    ref_mirror_put(&x.d, h);
    ak_opt_config c = ref_config(AK_OPT_SGD, 1.0f, 0);
    c.round = *r;
    ak_update_loss out;
    ck_assert_int_eq(ak_update(x.d.b, &c, &x.d.p, x.d.state, NULL, x.d.loss), AK_OK);
    kt_dev_get(x.d.b, &out, x.d.loss, sizeof out);
    kt_buf_get(&x.d.buf[L->master ? REF_MASTER : REF_MODEL], stored_after);
    ref_param_close(&x);
    return out;
}

/* The rule |w| >= 2^p |delta| (p = 11 fp16, 8 bf16, 24 fp32) and what
 * rounding to nearest does at and around it, worked by hand. */
START_TEST(two_to_the_p_rule)
{
    const ak_rounding rne = ak_rounding_rne();
    uint32_t after[8];
    /* fp16 (O3): ulp(2048) = 2, ulp(1024) = 1 */
    {
        const float w[] = {2048, 2048, 2048, 1024, -2048, 2048, 0.0f};
        const float d[] = {1, 1.5f, 0.75f, 0.5f, -1, 1.0009765625f, 1};
        const ref_layout L = ref_lay(false, AK_F16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 7, after);
        /* 2049 -> 2048 (tie to even): predicted, lost.  2049.5 -> 2050:
         * not predicted (2048 < 3072), not lost.  2048.75 -> 2048: both.
         * 1024.5 -> 1024 (tie): both.  -2049 -> -2048: both.  2049.0009..
         * -> 2050: not predicted, not lost.  0 + 1 = 1: neither. */
        const uint16_t want[] = {0x6800, 0x6801, 0x6800, 0x6400, 0xE800, 0x6801, 0x3C00};
        for (int i = 0; i < 7; i++)
            ck_assert_uint_eq(after[i], want[i]);
        ck_assert_uint_eq(l.elements, 7);
        ck_assert_uint_eq(l.nonzero, 7);
        ck_assert_uint_eq(l.lost, 4);
        ck_assert_uint_eq(l.predicted_lost, 4);
        /* errors: 1 + 0.5 + 0.75 + 0.5 + 1 + (2 - 1.0009765625) + 0 */
        ck_assert(l.sum_abs_err == 3.75 + 0.9990234375);
        ck_assert(l.sum_abs_intended == 1 + 1.5 + 0.75 + 0.5 + 1 + 1.0009765625 + 1);
    }
    /* bf16 (O3): ulp(256) = 2 */
    {
        const float w[] = {256, 256, 255};
        const float d[] = {1, 2, 1};
        const ref_layout L = ref_lay(false, AK_BF16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 3, after);
        /* 257 -> 256: both; 258: neither; 255 + 1 = 256: not predicted (255 < 256), not lost */
        ck_assert_uint_eq(after[0], 0x4380);
        ck_assert_uint_eq(after[1], 0x4381);
        ck_assert_uint_eq(after[2], 0x4380);
        ck_assert_uint_eq(l.lost, 1);
        ck_assert_uint_eq(l.predicted_lost, 1);
    }
    /* fp32 master: ulp(2^24) = 2 */
    {
        const float w[] = {0x1p24f, 0x1p24f, 0x1p24f, 1.0f};
        const float d[] = {1, 2, 0x1p-24f, 0x1p-24f};
        const ref_layout L = ref_lay(true, REF_NONE, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 4, after);
        /* 2^24 + 1 -> 2^24: both.  2^24 + 2: neither.  2^24 + 2^-24: both.
         * 1 + 2^-24 -> 1 (tie to even): predicted (1 >= 2^24 * 2^-24), lost */
        ck_assert(kt_f32_of(after[0]) == 0x1p24f && kt_f32_of(after[1]) == 0x1p24f + 2);
        ck_assert(kt_f32_of(after[3]) == 1.0f);
        ck_assert_uint_eq(l.lost, 3);
        ck_assert_uint_eq(l.predicted_lost, 3);
    }
    /* the master is stored: an O2 model copy that changes does not count */
    {
        const float w[] = {2049};
        const float d[] = {1};
        const ref_layout L = ref_lay(true, AK_F16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 1, after);
        ck_assert(kt_f32_of(after[0]) == 2050.0f);
        ck_assert_uint_eq(l.lost, 0);
        ck_assert_uint_eq(l.predicted_lost, 0);
    }
}
END_TEST

/* Stochastic rounding of 2048 + 1 in fp16 (exactly half an ulp): the weight
 * moves to 2050 iff the element's random word is below 2^31. */
START_TEST(stochastic_lost_counts)
{
    enum { N = 4096 };
    static float w[N], d[N];
    static uint32_t after[N];
    for (int i = 0; i < N; i++) {
        w[i] = 2048;
        d[i] = 1;
    }
    const ak_rounding r = ref_rounding(FPE_SR_PROP, 0xFEEDFACEull);
    const ref_layout L = ref_lay(false, AK_F16, AK_F32, REF_NONE, REF_NONE);
    ak_update_loss l = one_sgd_step(&L, &r, w, d, N, after);
    uint64_t stayed = 0;
    for (int i = 0; i < N; i++) {
        const bool up = fpe_random_bits(r.seed, r.stream, r.index + (uint64_t)i) < 0x80000000u;
        ck_assert_uint_eq(after[i], up ? 0x6801 : 0x6800);
        stayed += !up;
    }
    ck_assert_uint_eq(l.lost, stayed);
    ck_assert_uint_eq(l.predicted_lost, N);
    ck_assert(l.sum_abs_err == (double)N); /* |±1| each */
    ck_assert(stayed > N / 2 - 200 && stayed < N / 2 + 200);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_loss");
    TCase *tc = tcase_create("update_loss");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, two_to_the_p_rule);
    tcase_add_test(tc, stochastic_lost_counts);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
