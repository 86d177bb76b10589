/* test_update_step: ak_opt_step_begin and skipping on the cpu backend: with
 * found_inf set nothing is written and the state does not advance; the step
 * counter and the powers beta^step. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* found_inf set: nothing is written, the state does not advance, and the
 * call is counted as skipped; zero: the step runs. */
START_TEST(skip_on_found_inf)
{
    const size_t n = 500;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 77);
    const ref_layout L = ref_lay(true, AK_F16, AK_F32, AK_F32, AK_BF16);
    ref_param x = ref_param_open(&L, n);
    ak_backend *b = x.d.b;
    ref_mirror *h = &x.h;
    ref_rig *d = &x.d;
    ak_opt_state *state = d->state;
    ak_update_loss *loss = d->loss, got;
    float *found_inf = d->found_inf;
    ref_fill_all(&r, REF_DATA_TYPICAL, &L, h);
    ref_mirror_put(d, h);
    ak_opt_config c = ref_config(AK_OPT_ADAM, 1e-3f, 0);
    const float flags[] = {1.0f, NAN, -INFINITY};
    for (int k = 0; k < 3; k++) {
        kt_dev_put(b, found_inf, &flags[k], sizeof(float));
        ck_assert_int_eq(ak_opt_step_begin(b, &c, state, found_inf), AK_OK);
        ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, loss), AK_OK);
        ck_assert_uint_eq(ref_mirror_compare(d, h), 0);
        ak_opt_state st;
        kt_dev_get(b, &st, state, sizeof st);
        ck_assert(st.step == 0 && st.beta1_pow == 0 && st.beta2_pow == 0);
        kt_dev_get(b, &got, loss, sizeof got);
        ck_assert_uint_eq(got.skipped, (uint64_t)k + 1);
        ck_assert(got.elements == 0 && got.nonzero == 0 && got.sum_abs_intended == 0);
    }
    ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, NULL), AK_OK); /* no loss: fine */
    ck_assert_uint_eq(ref_mirror_compare(d, h), 0);
    const float zero = 0.0f;
    kt_dev_put(b, found_inf, &zero, sizeof zero);
    ck_assert_int_eq(ak_opt_step_begin(b, &c, state, found_inf), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, loss), AK_OK);
    ref_state rs = {0, 0, 0};
    ref_begin(&c, &rs);
    ref_update_step(&c, &rs, &L, h, NULL);
    ck_assert_uint_eq(ref_mirror_compare(d, h), 0);
    kt_dev_get(b, &got, loss, sizeof got);
    ck_assert_uint_eq(got.skipped, 3);
    ck_assert_uint_eq(got.elements, n);
    ref_param_close(&x);
}
END_TEST

/* The step counter and the powers beta^step (products in binary64). */
START_TEST(step_state)
{
    ak_backend *b = kt_open_cpu();
    ak_opt_config c = ref_config(AK_OPT_ADAMW, 1e-3f, 0);
    c.beta1 = 0.8f;
    c.beta2 = 0.995f;
    ak_opt_state *state = kt_dev_alloc(b, sizeof *state), st;
    double p1 = 1, p2 = 1;
    for (int s = 1; s <= 50; s++) {
        ck_assert_int_eq(ak_opt_step_begin(b, &c, state, NULL), AK_OK);
        kt_dev_get(b, &st, state, sizeof st);
        p1 *= (double)0.8f;
        p2 *= (double)0.995f;
        ck_assert_int_eq(st.step, s);
        ck_assert(st.beta1_pow == p1 && st.beta2_pow == p2);
        ck_assert(fabs(st.beta2_pow - pow((double)0.995f, s)) <= 1e-14 * st.beta2_pow);
    }
    kt_dev_free(b, state);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update_step");
    TCase *tc = tcase_create("update_step");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, skip_on_found_inf);
    tcase_add_test(tc, step_state);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
