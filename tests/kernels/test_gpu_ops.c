/* test_gpu_ops: the comparisons of the gpu table (gpu_ops.c) on hand-made
 * results, without a device: what each kind of go_cmp accepts and what it
 * rejects, so that a gpu case cannot pass by a comparison that never fails;
 * and the table itself: every row runs something and names its ops. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "gpu_ops.h"

static size_t one(const go_cmp *cmp, ak_dtype dt, uint32_t cpu, uint32_t gpu)
{
    return go_compare("x", cmp, dt, &cpu, &gpu, 1, NULL, NULL);
}

START_TEST(exact_is_bits)
{
    ck_assert_uint_eq(one(&go_bits, AK_F32, 0x3F800000u, 0x3F800000u), 0);
    ck_assert_uint_eq(one(&go_bits, AK_F32, 0x3F800000u, 0x3F800001u), 1);
    ck_assert_uint_eq(one(&go_bits, AK_F32, 0x00000000u, 0x80000000u), 1); /* -0 is not +0 */
    ck_assert_uint_eq(one(&go_bits, AK_F32, 0x7FC00000u, 0xFFC00000u), 1); /* NaN bits */
    const uint16_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
    ck_assert_uint_eq(go_compare_packed("p", &go_bits, AK_F16, a, b, 3), 1);
    ck_assert_uint_eq(go_compare_packed("p", &go_bits, AK_F16, a, a, 3), 0);
}
END_TEST

START_TEST(steps_and_specials)
{
    const go_cmp step = {GO_CLOSE, 1, 0, 0, true, false, "one step"};
    ck_assert_uint_eq(one(&step, AK_F16, 0x3C00, 0x3C01), 0);
    ck_assert_uint_eq(one(&step, AK_F16, 0x3C00, 0x3C02), 1);
    ck_assert_uint_eq(one(&step, AK_F16, 0x0000, 0x8000), 0); /* -0 and +0: one point */
    ck_assert_uint_eq(one(&step, AK_F16, 0x7E00, 0x7E00), 0); /* the same NaN */
    ck_assert_uint_eq(one(&step, AK_F16, 0x7E00, 0xFE00), 1); /* nan_bits: other bits */
    ck_assert_uint_eq(one(&step, AK_F16, 0x7E00, 0x3C00), 1); /* NaN where a number is */
    ck_assert_uint_eq(one(&step, AK_F16, 0x7C00, 0xFC00), 1); /* the sign of inf */
    ck_assert_uint_eq(one(&step, AK_F16, 0x7BFF, 0x7C00), 1); /* max and inf, no inf_step */
    go_cmp any_nan = step;
    any_nan.nan_bits = false;
    ck_assert_uint_eq(one(&any_nan, AK_F16, 0x7E00, 0xFE00), 0);
    go_cmp inf_step = step;
    inf_step.inf_step = true;
    ck_assert_uint_eq(one(&inf_step, AK_F16, 0x7BFF, 0x7C00), 0);
    ck_assert_uint_eq(one(&inf_step, AK_F16, 0x7BFE, 0x7C00), 1);
    ck_assert_uint_eq(one(&inf_step, AK_F16, 0xFBFF, 0x7C00), 1);
}
END_TEST

START_TEST(bounds)
{
    /* ulps of the larger magnitude, plus rel * scale[i] plus extra[i] */
    const go_cmp b = {GO_CLOSE, 0, 2, 0.5, false, false, "2 ulp + s/2"};
    const uint32_t cpu[3] = {kt_f32_bits(1.0f), kt_f32_bits(1.0f), kt_f32_bits(1.0f)};
    const uint32_t gpu[3] = {kt_f32_bits(1.0f + 0x1p-22f), kt_f32_bits(1.0f + 0x1p-21f),
                             kt_f32_bits(1.25f)};
    const double s[3] = {0, 0, 0.5}, none[3] = {0, 0, 0}, extra[3] = {0, 0x1p-22, 0};
    ck_assert_uint_eq(go_compare("b", &b, AK_F32, cpu, gpu, 3, s, NULL), 1); /* [1]: 4 ulp */
    ck_assert_uint_eq(go_compare("b", &b, AK_F32, cpu, gpu, 3, s, extra), 0);
    ck_assert_uint_eq(go_compare("b", &b, AK_F32, cpu, gpu, 3, none, extra), 1); /* [2] */
    const go_cmp rel = {GO_REL, 0, 0, 1e-12, false, false, "1e-12"};
    ck_assert(go_agree_f64(&rel, 1.0, 1.0 + 1e-13));
    ck_assert(!go_agree_f64(&rel, 1.0, 1.0 + 1e-11));
    ck_assert(go_agree_f64(&rel, NAN, NAN));
    ck_assert(!go_agree_f64(&rel, INFINITY, -INFINITY));
}
END_TEST

START_TEST(every_row_runs_something)
{
    for (size_t f = 0; f < go_nfamilies; f++) {
        const go_family *fam = go_families[f];
        ck_assert_msg(fam->count > 0 && fam->cpu && fam->gpu, "family %s", fam->name);
        for (size_t k = 0; k < fam->count; k++) {
            const go_case *c = &fam->cases[k];
            ck_assert_msg(c->run && c->loops > 0 && c->ops && c->ops[0] && c->cmp.bound, "%s/%s",
                          fam->name, c->name);
            for (size_t j = 0; j < k; j++)
                ck_assert_msg(strcmp(fam->cases[j].name, c->name) != 0, "%s/%s twice", fam->name,
                              c->name);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_gpu_ops");
    TCase *tc = tcase_create("gpu_ops");
    tcase_add_test(tc, exact_is_bits);
    tcase_add_test(tc, steps_and_specials);
    tcase_add_test(tc, bounds);
    tcase_add_test(tc, every_row_runs_something);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
