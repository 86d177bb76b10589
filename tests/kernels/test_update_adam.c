/* test_update_adam: ak_update with Adam and AdamW on the cpu backend,
 * against the reference optimizer of ref_update.c, and Adam's first step by
 * hand. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

START_TEST(adam_and_adamw)
{
    const ak_optimizer kinds[] = {AK_OPT_ADAM, AK_OPT_ADAMW};
    for (int k = 0; k < 2; k++) {
        ak_opt_config c = ref_config(kinds[k], 1e-3f, 0);
        ref_run_case(c, ref_lay(true, REF_NONE, AK_F32, AK_F32, AK_F32), 3000, 5, REF_DATA_TYPICAL,
                     40 + k);
        c.weight_decay = 0.01f;
        ref_run_case(c, ref_lay(true, REF_NONE, AK_F32, AK_F32, AK_F32), 3000, 5, REF_DATA_TYPICAL,
                     42 + k);
        c.beta1 = 0.5f;
        c.beta2 = 0.75f;
        c.eps = 1e-3f;
        ref_run_case(c, ref_lay(true, AK_BF16, AK_BF16, AK_BF16, AK_F32), 2000, 4, REF_DATA_TYPICAL,
                     44 + k);
        c = ref_config(kinds[k], 3e-4f, 0.1f);
        c.round = ref_rounding(FPE_SR_PROP, 99);
        ref_run_case(c, ref_lay(true, AK_F16, AK_F16, AK_F16, AK_BF16), 2000, 4, REF_DATA_TYPICAL,
                     46 + k);
    }
}
END_TEST

/* Adam's first step by hand: m = 0.1 g, v = 0.001 g^2, bias-corrected to
 * g and g^2, so delta = -lr g / (|g| + eps) ~ -lr sign(g). */
START_TEST(adam_first_step_by_hand)
{
    ak_backend *b = kt_open_cpu();
    float w[2] = {1.0f, -2.0f}, g[2] = {4.0f, -0.25f}, m[2] = {0, 0}, v[2] = {0, 0};
    ak_param p = {ak_tensor_of(w, 2, AK_F32), ak_tensor_none(), ak_tensor_of(g, 2, AK_F32),
                  ak_tensor_of(m, 2, AK_F32), ak_tensor_of(v, 2, AK_F32)};
    ak_opt_config c = ref_config(AK_OPT_ADAM, 0.125f, 0);
    c.beta1 = 0.5f;
    c.beta2 = 0.75f;
    c.eps = 0x1p-20f;
    ak_opt_state st = {0, 0, 0};
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    /* m = 0.5 g, v = 0.25 g^2 (exact); bc1 = 0.5, bc2 = 0.25: step_size
     * 0.25 and denom = sqrt(0.25 g^2) / 0.5 + eps = |g| + eps */
    ck_assert(m[0] == 2.0f && v[0] == 4.0f && m[1] == -0.125f && v[1] == 0.015625f);
    ck_assert(w[0] == 1.0f - (0.25f * 2.0f) / (4.0f + 0x1p-20f));
    ck_assert(w[1] == -2.0f - (0.25f * -0.125f) / (0.25f + 0x1p-20f));
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_adam");
    TCase *tc = tcase_create("update_adam");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, adam_and_adamw);
    tcase_add_test(tc, adam_first_step_by_hand);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
