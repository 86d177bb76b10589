/* test_update_sgd: ak_update with SGD and SGD with momentum on the cpu
 * backend, against the reference optimizer of ref_update.c (fp32 masters
 * and moments bit for bit over several steps, low-precision parts through
 * the emulator's conversions), and momentum's first steps by hand. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

START_TEST(sgd)
{
    const int grads[] = {AK_F32, AK_F16, AK_BF16};
    for (int k = 0; k < 3; k++) {
        ref_run_case(ref_config(AK_OPT_SGD, 0.05f, 0),
                     ref_lay(true, REF_NONE, grads[k], REF_NONE, REF_NONE), 3000, 3,
                     REF_DATA_TYPICAL, 1 + k);
        ref_run_case(ref_config(AK_OPT_SGD, 0.01f, 1e-2f),
                     ref_lay(true, AK_F16, grads[k], REF_NONE, REF_NONE), 3000, 3, REF_DATA_TYPICAL,
                     4 + k);
    }
    ak_opt_config c = ref_config(AK_OPT_SGD, 0.01f, 1e-3f);
    c.round = ref_rounding(FPE_SR_PROP, 11);
    ref_run_case(c, ref_lay(true, AK_BF16, AK_F32, REF_NONE, REF_NONE), 3000, 3, REF_DATA_TYPICAL,
                 7);
}
END_TEST

START_TEST(momentum)
{
    const struct {
        float momentum, dampening;
        bool nesterov;
        int mdt;
        float wd;
    } cases[] = {{0.9f, 0, false, AK_F32, 0},    {0.9f, 0.1f, false, AK_F32, 1e-4f},
                 {0.9f, 0, true, AK_F32, 1e-4f}, {0.5f, 0.5f, false, AK_BF16, 0},
                 {0.99f, 0, true, AK_F16, 0},    {0.0f, 0, false, AK_F32, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ak_opt_config c = ref_config(AK_OPT_MOMENTUM, 0.02f, cases[k].wd);
        c.momentum = cases[k].momentum;
        c.dampening = cases[k].dampening;
        c.nesterov = cases[k].nesterov;
        ref_run_case(c, ref_lay(true, REF_NONE, AK_F32, cases[k].mdt, REF_NONE), 3000, 4,
                     REF_DATA_TYPICAL, 20 + k);
        c.round = ref_rounding(FPE_SR_EQUAL, 5 + k);
        ref_run_case(c, ref_lay(true, AK_F16, AK_F16, cases[k].mdt, REF_NONE), 2000, 3,
                     REF_DATA_TYPICAL, 30 + k);
    }
}
END_TEST

/* After the first momentum step the buffer is the gradient itself, then
 * momentum * buf + (1 - dampening) * g; by hand. */
START_TEST(momentum_first_step_by_hand)
{
    ak_backend *b = kt_open_cpu();
    float w[1] = {1.0f}, g[1] = {0.5f}, m[1] = {123.0f};
    ak_param p = {ak_tensor_of(w, 1, AK_F32), ak_tensor_none(), ak_tensor_of(g, 1, AK_F32),
                  ak_tensor_of(m, 1, AK_F32), ak_tensor_none()};
    ak_opt_config c = ref_config(AK_OPT_MOMENTUM, 0.25f, 0);
    c.momentum = 0.5f;
    c.dampening = 0.5f;
    ak_opt_state st = {0, 0, 0};
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    ck_assert(m[0] == 0.5f && w[0] == 1.0f - 0.125f);
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    ck_assert(m[0] == 0.5f * 0.5f + 0.5f * 0.5f && w[0] == 0.875f - 0.125f);
    c.nesterov = true;
    c.dampening = 0;
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    /* buf = 0.5 * 0.5 + 0.5 = 0.75; g2 = 0.5 + 0.5 * 0.75 = 0.875 */
    ck_assert(m[0] == 0.75f && w[0] == 0.75f - 0.25f * 0.875f);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_sgd");
    TCase *tc = tcase_create("update_sgd");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sgd);
    tcase_add_test(tc, momentum);
    tcase_add_test(tc, momentum_first_step_by_hand);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
