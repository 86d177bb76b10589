/* test_loss_scale_rule: the loss-scale rule ak_loss_scale_step
 * (kernels/loss_scale.h) by hand: none and fixed, PyTorch reaching 0, growth
 * refusal and caps, the hysteresis of deepspeed, megatron and paddle on one
 * sequence, and every validation message. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "ref_loss_scale.h"

START_TEST(none_and_fixed)
{
    /* none: the scale stays 1 and nothing is skipped, overflows are counted */
    ak_scaler_config none = ref_scaler_preset("none");
    ref_scaler_check_run("none", &none, "CCOC", (const float[]){1.0f, 1.0f, 1.0f, 1.0f});
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&none, &s), AK_OK);
    ck_assert(s.scale == 1.0f && s.inv_scale == 1.0f && s.skip == 0.0f);
    const char *ev = "CCOOC";
    for (int i = 0; ev[i]; i++)
        ak_loss_scale_step(&none, &s, ev[i] == 'O');
    ck_assert_int_eq(s.overflows, 2);
    ck_assert_int_eq(s.skipped, 0);
    ck_assert_int_eq(s.overflows_in_a_row, 0);

    /* fixed: 128 forever; drop_overflow_update decides the skip */
    ak_scaler_config fixed = ref_scaler_preset("fixed");
    ref_scaler_check_run("fixed, drop", &fixed, "COCOO",
                         (const float[]){128.0f, 128.0f, 128.0f, 128.0f, 128.0f});
    ck_assert_int_eq(ak_scaler_init(&fixed, &s), AK_OK);
    ck_assert(s.inv_scale == 0x1p-7f);
    ev = "COCOO";
    static const float skip_drop[] = {0, 1, 0, 1, 1};
    for (int i = 0; ev[i]; i++) {
        ak_loss_scale_step(&fixed, &s, ev[i] == 'O');
        ck_assert_msg(s.skip == skip_drop[i], "step %d", i + 1);
    }
    ck_assert_int_eq(s.overflows, 3);
    ck_assert_int_eq(s.skipped, 3);
    ck_assert_int_eq(s.overflows_in_a_row, 2);
    ck_assert_int_eq(s.growths + s.backoffs, 0);

    fixed.drop_overflow_update = false;
    ref_scaler_check_run("fixed, no drop", &fixed, "COCOO",
                         (const float[]){128.0f, 128.0f, 128.0f, 128.0f, 128.0f});
    ck_assert_int_eq(ak_scaler_init(&fixed, &s), AK_OK);
    for (int i = 0; ev[i]; i++) {
        ak_loss_scale_step(&fixed, &s, ev[i] == 'O');
        ck_assert(s.skip == 0.0f);
    }
    ck_assert_int_eq(s.overflows, 3);
    ck_assert_int_eq(s.skipped, 0);

    /* a scale that is not a power of two: inv_scale is the fp32 quotient */
    fixed.init_scale = 3.0f;
    ck_assert_int_eq(ak_scaler_init(&fixed, &s), AK_OK);
    ck_assert(s.scale == 3.0f && s.inv_scale == 0x1.555556p-2f);
    ak_loss_scale_step(&fixed, &s, true);
    ck_assert(s.scale == 3.0f && s.inv_scale == 0x1.555556p-2f);

    /* a dynamic policy that does not drop: an overflow is counted, not skipped */
    ak_scaler_config dyn = ref_scaler_preset("dynamic");
    dyn.drop_overflow_update = false;
    ck_assert_int_eq(ak_scaler_init(&dyn, &s), AK_OK);
    ak_loss_scale_step(&dyn, &s, true);
    ck_assert(s.skip == 0.0f && s.scale == 32768.0f);
    ck_assert_int_eq(s.skipped, 0);
}
END_TEST

/* PyTorch has no floor: 165 halvings from 2^16 reach 2^-149, the least
 * subnormal; the 166th gives 2^-150, a tie that rounds to even, 0.  Growth
 * cannot leave 0 (0 * 2 = 0 is finite, so it is taken). */
START_TEST(pytorch_reaches_zero)
{
    ak_scaler_config cfg = ref_scaler_preset("pytorch");
    cfg.window = 3;
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    for (int k = 1; k <= 165; k++) {
        ak_loss_scale_step(&cfg, &s, true);
        ck_assert_msg(s.scale == ldexpf(1.0f, 16 - k), "after %d overflows: %a", k,
                      (double)s.scale);
    }
    ck_assert(s.scale == 0x1p-149f);
    ck_assert(s.inv_scale == INFINITY); /* 2^149 overflows fp32 */
    ak_loss_scale_step(&cfg, &s, true);
    ck_assert(s.scale == 0.0f && !signbit(s.scale));
    ck_assert(s.inv_scale == INFINITY);
    ck_assert_int_eq(s.backoffs, 166);
    ck_assert_int_eq(s.overflows_in_a_row, 166);
    for (int i = 0; i < 10; i++)
        ak_loss_scale_step(&cfg, &s, false);
    ck_assert(s.scale == 0.0f);
    ck_assert_int_eq(s.growths, 0);
    ck_assert_int_eq(s.overflows_in_a_row, 0);
    ck_assert_int_eq(s.good, 1); /* 10 clean steps, window 3: grew (to 0) at 3, 6, 9 */
}
END_TEST

/* A refused growth keeps the scale but still zeroes the counter, as PyTorch's
 * _amp_update_scale_ does; without refusal the scale becomes inf. */
START_TEST(growth_refusal)
{
    ak_scaler_config cfg = ref_scaler_preset("dynamic");
    cfg.init_scale = 0x1p127f;
    cfg.window = 2;
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    static const int64_t good[] = {1, 0, 1, 0};
    for (int i = 0; i < 4; i++) {
        ak_loss_scale_step(&cfg, &s, false);
        ck_assert(s.scale == 0x1p127f);
        ck_assert_int_eq(s.good, good[i]);
    }
    ck_assert_int_eq(s.growths, 0);

    cfg.refuse_nonfinite_growth = false;
    ref_scaler_check_run("no refusal", &cfg, "CCCC",
                         (const float[]){0x1p127f, INFINITY, INFINITY, INFINITY});

    /* with refusal off, a cap still holds: min(inf, cap) */
    cfg.max_scale = 0x1p127f;
    ref_scaler_check_run("capped", &cfg, "CCCC",
                         (const float[]){0x1p127f, 0x1p127f, 0x1p127f, 0x1p127f});
    /* a cap that is not a power of two is reached exactly */
    cfg.init_scale = 1000.0f;
    cfg.max_scale = 3000.0f;
    cfg.window = 1;
    ref_scaler_check_run("cap 3000", &cfg, "CCCOC",
                         (const float[]){2000.0f, 3000.0f, 3000.0f, 1500.0f, 3000.0f});
}
END_TEST

/* One sequence, three hysteresis semantics (hysteresis 2, window 3, 2^10):
 * events                    O    O    O    O    C    O    O    O
 *   megatron (per growth    10   9    8    7    7    6    5    4
 *   window; no growth here: spent once, every later overflow backs off)
 *   deepspeed consecutive   10   9    8    7    7    7    6    5
 *   (the clean step refills it, so the overflow at 6 is absorbed)
 *   paddle (in a row, and   10   9    9    8    8    8    7    7
 *   refilled after each backoff: every second overflow backs off)
 * (powers of two).  Deepspeed without consecutive_hysteresis refills only
 * at growth, like megatron, and gives megatron's trajectory. */
START_TEST(hysteresis_semantics)
{
    const char *ev = "OOOOCOOO";
    ak_scaler_config mega = ref_scaler_preset("megatron");
    mega.init_scale = 0x1p10f;
    mega.window = 3;
    static const float megatron[] = {0x1p10f, 0x1p9f, 0x1p8f, 0x1p7f,
                                     0x1p7f,  0x1p6f, 0x1p5f, 0x1p4f};
    ref_scaler_check_run("megatron", &mega, ev, megatron);

    ak_scaler_config ds = ref_scaler_preset("deepspeed");
    ds.init_scale = 0x1p10f;
    ds.window = 3;
    ref_scaler_check_run("deepspeed", &ds, ev, megatron);
    ds.consecutive_hysteresis = true;
    static const float consecutive[] = {0x1p10f, 0x1p9f, 0x1p8f, 0x1p7f,
                                        0x1p7f,  0x1p7f, 0x1p6f, 0x1p5f};
    ref_scaler_check_run("deepspeed consecutive", &ds, ev, consecutive);

    ak_scaler_config pd = ref_scaler_preset("paddle");
    pd.init_scale = 0x1p10f;
    pd.window = 3;
    pd.hysteresis = 2; /* decr_every_n_nan_or_inf = 2 */
    static const float paddle[] = {0x1p10f, 0x1p9f, 0x1p9f, 0x1p8f, 0x1p8f, 0x1p8f, 0x1p7f, 0x1p7f};
    ref_scaler_check_run("paddle", &pd, ev, paddle);

    /* The consecutive flag on sequence A (init 2^16): the overflow at 7
     * follows clean steps, so it is absorbed where megatron backs off. */
    static const float consecutive_a[] = {0x1p16f, 0x1p16f, 0x1p17f, 0x1p17f, 0x1p17f,
                                          0x1p17f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p18f,
                                          0x1p18f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p18f};
    ds.init_scale = 0x1p16f;
    ref_scaler_check_run("deepspeed consecutive, A", &ds, REF_SEQ_A, consecutive_a);

    /* hysteresis_left as each rule keeps it, after each step of ev */
    static const int32_t left_mega[] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const int32_t left_cons[] = {1, 1, 1, 1, 2, 1, 1, 1};
    static const int32_t left_paddle[] = {1, 2, 1, 2, 2, 1, 2, 1};
    const ak_scaler_config *cfgs[] = {&mega, &ds, &pd};
    const int32_t *lefts[] = {left_mega, left_cons, left_paddle};
    ds.init_scale = 0x1p10f;
    for (int c = 0; c < 3; c++) {
        ak_scaler_state s;
        ck_assert_int_eq(ak_scaler_init(cfgs[c], &s), AK_OK);
        ck_assert_int_eq(s.hysteresis_left, 2);
        for (int i = 0; ev[i]; i++) {
            ak_loss_scale_step(cfgs[c], &s, ev[i] == 'O');
            ck_assert_msg(s.hysteresis_left == lefts[c][i], "rule %d step %d: %d", c, i + 1,
                          (int)s.hysteresis_left);
        }
    }
}
END_TEST

/* Every rejection, with its message. */
START_TEST(validation_messages)
{
    char msg[256];
    ck_assert_int_eq(ak_scaler_validate(NULL, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "ak_scaler_validate: cfg is NULL");

    static const struct {
        const char *field;
        const char *message;
    } cases[] = {
        {"kind", "--loss-scale: kind 7 is not none, fixed or dynamic"},
        {"fixed_zero", "--scale 0: must be finite and > 0"},
        {"fixed_inf", "--scale inf: must be finite and > 0"},
        {"rule",
         "--loss-scale: rule 9 is not pytorch, mindspore-amp, deepspeed, megatron, paddle or "
         "deepspeed-fp16-optimizer"},
        {"init_nan", "--init-scale nan: must be finite and > 0"},
        {"init_neg", "--init-scale -1: must be finite and > 0"},
        {"growth_one", "--growth-factor 1: must be finite and > 1"},
        {"growth_inf", "--growth-factor inf: must be finite and > 1"},
        {"backoff_one", "--backoff-factor 1: must be in (0, 1)"},
        {"backoff_zero", "--backoff-factor 0: must be in (0, 1)"},
        {"backoff_nan", "--backoff-factor nan: must be in (0, 1)"},
        {"window_zero", "--scale-window 0: must be >= 1"},
        {"window_neg", "--scale-window -5: must be >= 1"},
        {"hysteresis_zero", "--hysteresis 0: must be >= 1"},
        {"hysteresis_pytorch",
         "--hysteresis 2: the pytorch rule has none (the deepspeed, megatron and paddle rules do)"},
        {"hysteresis_msamp", "--hysteresis 3: the mindspore-amp rule has none (the deepspeed, "
                             "megatron and paddle rules do)"},
        {"consecutive", "--consecutive-hysteresis: only the deepspeed rule has it (this policy "
                        "uses the megatron rule)"},
        {"min_neg", "--min-scale -1: must be finite and >= 0 (0: no floor)"},
        {"min_inf", "--min-scale inf: must be finite and >= 0 (0: no floor)"},
        {"max_zero", "--max-scale 0: must be > 0 (inf: no cap)"},
        {"max_nan", "--max-scale nan: must be > 0 (inf: no cap)"},
        {"min_above_init", "--min-scale 16: above --init-scale 8"},
        {"init_above_max", "--init-scale 65536: above --max-scale 1024"},
    };
    for (size_t i = 0; i < REF_COUNT(cases); i++) {
        ak_scaler_config c = ref_scaler_preset("pytorch");
        const char *f = cases[i].field;
        if (!strcmp(f, "kind")) c.kind = (ak_scaler_kind)7;
        if (!strcmp(f, "fixed_zero")) c = ref_scaler_preset("fixed"), c.init_scale = 0.0f;
        if (!strcmp(f, "fixed_inf")) c = ref_scaler_preset("fixed"), c.init_scale = INFINITY;
        if (!strcmp(f, "rule")) c.rule = (ak_scaler_rule)9;
        if (!strcmp(f, "init_nan")) c.init_scale = NAN;
        if (!strcmp(f, "init_neg")) c.init_scale = -1.0f;
        if (!strcmp(f, "growth_one")) c.growth_factor = 1.0f;
        if (!strcmp(f, "growth_inf")) c.growth_factor = INFINITY;
        if (!strcmp(f, "backoff_one")) c.backoff_factor = 1.0f;
        if (!strcmp(f, "backoff_zero")) c.backoff_factor = 0.0f;
        if (!strcmp(f, "backoff_nan")) c.backoff_factor = NAN;
        if (!strcmp(f, "window_zero")) c.window = 0;
        if (!strcmp(f, "window_neg")) c.window = -5;
        if (!strcmp(f, "hysteresis_zero")) c = ref_scaler_preset("deepspeed"), c.hysteresis = 0;
        if (!strcmp(f, "hysteresis_pytorch")) c.hysteresis = 2;
        if (!strcmp(f, "hysteresis_msamp"))
            c = ref_scaler_preset("mindspore-amp"), c.hysteresis = 3;
        if (!strcmp(f, "consecutive"))
            c = ref_scaler_preset("megatron"), c.consecutive_hysteresis = true;
        if (!strcmp(f, "min_neg")) c.min_scale = -1.0f;
        if (!strcmp(f, "min_inf")) c.min_scale = INFINITY;
        if (!strcmp(f, "max_zero")) c.max_scale = 0.0f;
        if (!strcmp(f, "max_nan")) c.max_scale = NAN;
        if (!strcmp(f, "min_above_init")) c.init_scale = 8.0f, c.min_scale = 16.0f;
        if (!strcmp(f, "init_above_max")) c.max_scale = 1024.0f;
        ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
        ck_assert_msg(strcmp(msg, cases[i].message) == 0, "%s: got \"%s\"", f, msg);
        ck_assert(strchr(msg, '\n') == NULL);
        ck_assert_int_eq(ak_scaler_validate(&c, NULL, 0), AK_EINVAL);
        /* init refuses it too and leaves the state alone */
        ak_scaler_state s;
        memset(&s, 0x3C, sizeof s);
        const ak_scaler_state before = s;
        ck_assert_int_eq(ak_scaler_init(&c, &s), AK_EINVAL);
        ck_assert_int_eq(memcmp(&s, &before, sizeof s), 0);
    }

    /* none checks nothing, fixed only its scale */
    ak_scaler_config c = ref_scaler_preset("none");
    c.window = 0;
    c.init_scale = NAN;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    ck_assert_str_eq(msg, "");
    c = ref_scaler_preset("fixed");
    c.window = -1;
    c.growth_factor = 0.0f;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    /* boundary values that pass: window 1, min = init = max, a factor just above 1 */
    c = ref_scaler_preset("pytorch");
    c.window = 1;
    c.min_scale = c.max_scale = c.init_scale;
    c.growth_factor = 0x1.000002p0f;
    c.backoff_factor = 0x1.fffffep-1f;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    ck_assert_int_eq(ak_scaler_init(&c, NULL), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_init(NULL, &(ak_scaler_state){0}), AK_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_loss_scale_rule");
    TCase *tc = tcase_create("loss_scale_rule");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, none_and_fixed);
    tcase_add_test(tc, pytorch_reaches_zero);
    tcase_add_test(tc, growth_refusal);
    tcase_add_test(tc, hysteresis_semantics);
    tcase_add_test(tc, validation_messages);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
