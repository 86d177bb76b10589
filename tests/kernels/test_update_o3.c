/* test_update_o3: ak_update without a master (O3) on the cpu backend: the
 * fp16/bf16 weights are the exact sum w + delta (formed in binary64, where
 * the test data keep it exact) rounded once by fpe_f64_to_f16/bf16, for every
 * optimizer and rounding mode, and updates far below the weights' last bit. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* O3: no master; the fp16/bf16 weights are updated by one rounding. */
START_TEST(o3_every_optimizer_and_mode)
{
    const fpe_round modes[] = {FPE_RNE, FPE_SR_PROP, FPE_SR_EQUAL, FPE_RZ, FPE_RO};
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++)
        for (int k = 0; k < 5; k++)
            for (int model = AK_F16; model <= AK_BF16; model++) {
                ak_opt_config c = ref_config(
                    (ak_optimizer)kind, kind >= AK_OPT_ADAM ? 1e-3f : 0.01f, k % 2 ? 1e-2f : 0);
                c.round = ref_rounding(modes[k], 1234 + (uint64_t)k);
                const int mv = kind == AK_OPT_SGD ? REF_NONE : model;
                ref_run_case(
                    c, ref_lay(false, model, AK_F32, mv, kind >= AK_OPT_ADAM ? AK_F32 : REF_NONE),
                    2000, 3, REF_DATA_TYPICAL, 60 + (uint64_t)(kind * 10 + k * 2 + model));
            }
}
END_TEST

/* Updates far below the weights' last bit (lr 2^-30): most sums are not
 * exact in binary64, and every mode decides between w and its neighbour. */
START_TEST(o3_tiny_updates)
{
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int model = AK_F16; model <= AK_BF16; model++) {
            ak_opt_config c = ref_config(AK_OPT_SGD, 0x1p-30f, 0);
            c.round = ref_rounding((fpe_round)mode, 555 + (uint64_t)mode);
            ref_run_case(c, ref_lay(false, model, AK_F32, REF_NONE, REF_NONE), 3000, 2,
                         REF_DATA_TYPICAL, 200 + (uint64_t)(mode * 2 + model));
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_o3");
    TCase *tc = tcase_create("update_o3");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, o3_every_optimizer_and_mode);
    tcase_add_test(tc, o3_tiny_updates);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
