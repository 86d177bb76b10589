/* test_loss_scale_op: the cpu backend's ak_loss_scale_update against the
 * pure function ak_loss_scale_step, and its bad arguments. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "ref_loss_scale.h"

/* Whether step i overflows, as a training run might: mostly when the scale
 * is above a limit that moves between 2^12 and 2^20 every 500 steps, now
 * and then at random, and in bursts of 50 steps. */
static bool scripted_overflow(ts_rng *rng, int i, float scale)
{
    const float limit = ldexpf(1.0f, 12 + (i / 500) % 9);
    unsigned percent = scale > limit ? 80 : 3;
    if ((i / 50) % 13 == 6) percent = 70;
    return ts_below(rng, 100) < percent;
}

/* The cpu backend's op equals the pure function, step by step, over a long
 * sequence for every preset (small windows so that growth happens), with
 * found_inf values of every kind: 0 and -0 are clean; 1, -3, inf and NaN
 * are overflows. */
START_TEST(cpu_op_equals_pure_function)
{
    static const char *const presets[] = {
        "none",          "fixed",  "pytorch",   "apex",     "mindspore-manager",
        "mindspore-amp", "paddle", "deepspeed", "megatron", "keras"};
    static const float flags[] = {0.0f, -0.0f, 1.0f, -3.0f, INFINITY, NAN};
    ak_backend *b = kt_open_cpu();
    ak_scaler_state *dev = kt_dev_alloc(b, sizeof *dev);
    float *found = kt_dev_alloc(b, sizeof *found);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 4);
    for (size_t p = 0; p < REF_COUNT(presets); p++) {
        ak_scaler_config cfg = ref_scaler_preset(presets[p]);
        cfg.window = (int32_t)(1 + p % 4);
        if (p == 7) cfg.consecutive_hysteresis = true;
        ak_scaler_state host;
        ck_assert_int_eq(ak_scaler_init(&cfg, &host), AK_OK);
        kt_dev_put(b, dev, &host, sizeof host);
        for (int i = 0; i < 20000; i++) {
            const bool inf = scripted_overflow(&rng, i, host.scale);
            const float f = inf ? flags[2 + ts_below(&rng, 4)] : flags[ts_below(&rng, 2)];
            kt_dev_put(b, found, &f, sizeof f);
            ck_assert_int_eq(ak_loss_scale_update(b, &cfg, dev, found), AK_OK);
            ak_loss_scale_step(&cfg, &host, inf);
            ak_scaler_state got;
            kt_dev_get(b, &got, dev, sizeof got);
            ck_assert_msg(memcmp(&got, &host, sizeof got) == 0, "%s: step %d differs", presets[p],
                          i + 1);
        }
        ck_assert_msg(host.overflows > 500 && host.steps == 20000, "%s", presets[p]);
        if (cfg.kind == AK_SCALER_DYNAMIC)
            ck_assert_msg(host.growths > 100 && host.backoffs > 100,
                          "%s: %lld growths %lld backoffs", presets[p], (long long)host.growths,
                          (long long)host.backoffs);
    }
    kt_dev_free(b, dev);
    kt_dev_free(b, found);
    ak_close(b);
}
END_TEST

START_TEST(op_bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    const ak_scaler_config cfg = ref_scaler_preset("pytorch");
    ak_scaler_state *state = kt_dev_alloc(b, 2 * sizeof *state);
    float *found = kt_dev_alloc(b, 2 * sizeof *found);
    ck_assert_int_eq(ak_scaler_init(&cfg, state), AK_OK);
    ck_assert_int_eq(ak_loss_scale_update(NULL, &cfg, state, found), AK_EINVAL);
    ck_assert_int_eq(ak_loss_scale_update(b, NULL, state, found), AK_EINVAL);
    ck_assert_str_eq(ak_error(b), "ak_loss_scale_update: cfg is NULL");
    ak_scaler_config bad = cfg;
    bad.window = 0;
    ck_assert_int_eq(ak_loss_scale_update(b, &bad, state, found), AK_EINVAL);
    ck_assert_str_eq(ak_error(b), "ak_loss_scale_update: --scale-window 0: must be >= 1");
    ck_assert_int_eq(ak_loss_scale_update(b, &cfg, NULL, found), AK_EINVAL);
    ck_assert_str_eq(ak_error(b), "ak_loss_scale_update: state is NULL");
    ck_assert_int_eq(ak_loss_scale_update(b, &cfg, (ak_scaler_state *)((char *)state + 4), found),
                     AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_loss_scale_update: state (") == ak_error(b) &&
                      strstr(ak_error(b), "is not aligned to 8 bytes"),
                  "%s", ak_error(b));
    ck_assert_int_eq(ak_loss_scale_update(b, &cfg, state, NULL), AK_EINVAL);
    ck_assert_str_eq(ak_error(b), "ak_loss_scale_update: found_inf is NULL");
    ck_assert_int_eq(ak_loss_scale_update(b, &cfg, state, (const float *)((char *)found + 2)),
                     AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "is not aligned to 4 bytes") != NULL, "%s", ak_error(b));
    /* nothing moved, and a good call clears the message */
    ck_assert_int_eq(state->steps, 0);
    ck_assert_int_eq(ak_loss_scale_update(b, &cfg, state, found), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ck_assert_int_eq(state->steps, 1);
    kt_dev_free(b, state);
    kt_dev_free(b, found);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_loss_scale_op");
    TCase *tc = tcase_create("loss_scale_op");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cpu_op_equals_pure_function);
    tcase_add_test(tc, op_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
