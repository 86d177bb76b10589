/* test_update_specials: ak_update of every optimizer on the cpu backend with
 * special values everywhere (NaNs with payloads, infinities, subnormals,
 * extreme magnitudes), against the reference optimizer of ref_update.c. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* Specials everywhere (NaNs with payloads, infinities, subnormals, extreme
 * values): NaNs of the arithmetic are canonical, the loss skips non-finite
 * elements, and nothing differs from the reference. */
START_TEST(special_values)
{
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++) {
        ak_opt_config c = ref_config((ak_optimizer)kind, 0.5f, 0.25f);
        const int mdt = kind == AK_OPT_SGD ? REF_NONE : AK_F32;
        const int vdt = kind >= AK_OPT_ADAM ? AK_BF16 : REF_NONE;
        ref_run_case(c, ref_lay(true, AK_F16, AK_F32, mdt, vdt), 3000, 2, REF_DATA_SPECIAL,
                     100 + kind);
        c.round = ref_rounding(FPE_SR_PROP, 3);
        ref_run_case(c, ref_lay(true, AK_BF16, AK_F16, kind == AK_OPT_SGD ? REF_NONE : AK_F16, vdt),
                     3000, 2, REF_DATA_SPECIAL, 110 + kind);
        c.round = ak_rounding_rne();
        ref_run_case(c, ref_lay(false, AK_F16, AK_BF16, mdt, vdt), 3000, 2, REF_DATA_SPECIAL,
                     120 + kind);
        ref_run_case(c, ref_lay(false, AK_BF16, AK_F32, mdt, vdt), 3000, 2, REF_DATA_SPECIAL,
                     130 + kind);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_specials");
    TCase *tc = tcase_create("update_specials");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, special_values);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
