/* test_loss_scale_presets: the loss-scale presets (kernels/loss_scale.h).
 * Every preset is driven through scripted overflow sequences and its whole
 * scale trajectory is compared, step by step, with a table worked out by
 * hand from that framework's source (the rules are quoted in
 * kernels/loss_scale.c); then the preset values, unknown presets, and the
 * rule and kind names. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "ref_loss_scale.h"

/* A scripted run: events is a string of 'C' (clean step) and 'O' (overflow),
 * scale[i] the scale after step i, and the counters after the last step. */
typedef struct trajectory {
    const char *preset;
    float init;     /* overrides the preset's init_scale */
    int32_t window; /* overrides the preset's window */
    const char *events;
    float scale[16];
    int64_t growths, backoffs, good;
    int32_t hysteresis_left;
} trajectory;

static void check_trajectory(const trajectory *t)
{
    ak_scaler_config cfg = ref_scaler_preset(t->preset);
    cfg.init_scale = t->init;
    cfg.window = t->window;
    char what[96];
    snprintf(what, sizeof what, "%s (init %a, window %d, %s)", t->preset, (double)t->init,
             (int)t->window, t->events);
    ref_scaler_check_run(what, &cfg, t->events, t->scale);
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    for (size_t i = 0; t->events[i]; i++)
        ak_loss_scale_step(&cfg, &s, t->events[i] == 'O');
    ck_assert_msg(s.growths == t->growths, "%s: growths %lld", what, (long long)s.growths);
    ck_assert_msg(s.backoffs == t->backoffs, "%s: backoffs %lld", what, (long long)s.backoffs);
    ck_assert_msg(s.good == t->good, "%s: good %lld", what, (long long)s.good);
    ck_assert_msg(s.hysteresis_left == t->hysteresis_left, "%s: hysteresis_left %d", what,
                  (int)s.hysteresis_left);
    ck_assert_int_eq(s.skipped, s.overflows); /* every preset drops overflowing updates */
}

/* Sequence A, window 3: growth after 3 clean steps, an overflow, a run cut
 * short by an overflow, growth, two overflows, growth.  By hand:
 *   no hysteresis: grow at steps 3, 10, 15; back off at 4, 7, 11, 12.
 *   hysteresis 2 refilled at growth (deepspeed, megatron): the overflow at 4
 *   spends it (no backoff), 7 backs off; growth at 10 refills it, so 11 is
 *   absorbed and 12 backs off; growth at 15 refills it. */

static const trajectory sequence_a[] = {
    {"pytorch",
     0x1p16f,
     3,
     REF_SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     1},
    {"apex",
     0x1p16f,
     3,
     REF_SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     1},
    {"mindspore-manager",
     0x1p24f,
     3,
     REF_SEQ_A,
     {0x1p24f, 0x1p24f, 0x1p25f, 0x1p24f, 0x1p24f, 0x1p24f, 0x1p23f, 0x1p23f, 0x1p23f, 0x1p24f,
      0x1p23f, 0x1p22f, 0x1p22f, 0x1p22f, 0x1p23f},
     3,
     4,
     0,
     1},
    /* the counter wraps: (2 + 1) mod 3 = 0 at each growth */
    {"mindspore-amp",
     0x1p16f,
     3,
     REF_SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     1},
    {"paddle",
     0x1p16f,
     3,
     REF_SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     1},
    /* good = steps since the last overflow (12), not zeroed at growth: 3 */
    {"deepspeed",
     0x1p16f,
     3,
     REF_SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p17f,
      0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p17f},
     3,
     2,
     3,
     2},
    {"megatron",
     0x1p32f,
     3,
     REF_SEQ_A,
     {0x1p32f, 0x1p32f, 0x1p33f, 0x1p33f, 0x1p33f, 0x1p33f, 0x1p32f, 0x1p32f, 0x1p32f, 0x1p33f,
      0x1p33f, 0x1p32f, 0x1p32f, 0x1p32f, 0x1p33f},
     3,
     2,
     0,
     2},
    {"keras",
     0x1p15f,
     3,
     REF_SEQ_A,
     {0x1p15f, 0x1p15f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f,
      0x1p14f, 0x1p13f, 0x1p13f, 0x1p13f, 0x1p14f},
     3,
     4,
     0,
     1},
};

/* Six overflows in a row from 8: without a floor the scale halves every
 * time; with floor 1 it stops there; with hysteresis 2 the first overflow
 * is absorbed. */
#define SEQ_FLOOR "OOOOOO"

static const trajectory sequence_floor[] = {
    {"pytorch", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 1},
    {"apex", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 1},
    {"mindspore-manager", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 1},
    {"mindspore-amp", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 1},
    {"paddle", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 1},
    {"deepspeed", 8.0f, 3, SEQ_FLOOR, {8.0f, 4.0f, 2.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 1},
    {"megatron", 8.0f, 3, SEQ_FLOOR, {8.0f, 4.0f, 2.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 1},
    {"keras", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 1},
};

/* Window 1 near the top: three growths asked for, then an overflow.
 * 2^126 * 2 * 2 = 2^128 overflows fp32: PyTorch and MindSpore amp refuse it
 * and keep 2^127; Paddle, Megatron and Keras take inf, which a backoff
 * cannot bring back (inf * 0.5 = inf).  MindSpore's manager and DeepSpeed
 * keep a Python double: 2^128, 2^129 (inf applied, three growths), and the
 * overflow backs the manager off to 2^128 (still inf in fp32; DeepSpeed's
 * hysteresis absorbs it).  Apex caps at 2^24 instead. */
#define SEQ_TOP "CCCO"

static const trajectory sequence_top[] = {
    {"pytorch", 0x1p126f, 1, SEQ_TOP, {0x1p127f, 0x1p127f, 0x1p127f, 0x1p126f}, 1, 1, 0, 1},
    {"apex", 0x1p23f, 1, SEQ_TOP, {0x1p24f, 0x1p24f, 0x1p24f, 0x1p23f}, 1, 1, 0, 1},
    {"mindspore-manager",
     0x1p126f,
     1,
     SEQ_TOP,
     {0x1p127f, INFINITY, INFINITY, INFINITY},
     3,
     1,
     0,
     1},
    {"mindspore-amp", 0x1p126f, 1, SEQ_TOP, {0x1p127f, 0x1p127f, 0x1p127f, 0x1p126f}, 1, 1, 0, 1},
    {"paddle", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 1},
    /* hysteresis 2: the overflow is absorbed anyway */
    {"deepspeed", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 3, 0, 0, 1},
    {"megatron", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 1},
    {"keras", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 1},
};

START_TEST(presets_sequence_a) { check_trajectory(&sequence_a[_i]); }
END_TEST

START_TEST(presets_to_the_floor) { check_trajectory(&sequence_floor[_i]); }
END_TEST

START_TEST(presets_at_the_top) { check_trajectory(&sequence_top[_i]); }
END_TEST

/* The presets' values, as REFERENCES.md and issue 4 give them. */
START_TEST(preset_values)
{
    static const struct {
        const char *name;
        ak_scaler_kind kind;
        ak_scaler_rule rule;
        float init;
        double growth, backoff;
        int32_t window, hysteresis;
        float min, max;
        bool refuse, drop;
        ak_scale_arith arith;
        bool divides;
    } want[] = {
        {"none", AK_SCALER_NONE, AK_SCALER_RULE_PYTORCH, 1.0f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY,
         false, false, AK_SCALE_ARITH_FP32, false},
        {"fixed", AK_SCALER_FIXED, AK_SCALER_RULE_PYTORCH, 128.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true, AK_SCALE_ARITH_FP32, false},
        {"dynamic", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, true, true, AK_SCALE_ARITH_FP32, false},
        {"pytorch", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, true, true, AK_SCALE_ARITH_FP32_DOUBLE_FACTOR, false},
        {"apex", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         16777216.0f, false, true, AK_SCALE_ARITH_DOUBLE, true},
        {"mindspore-manager", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 16777216.0f, 2.0f, 0.5f,
         2000, 1, 1.0f, INFINITY, false, true, AK_SCALE_ARITH_DOUBLE, false},
        {"mindspore-amp", AK_SCALER_DYNAMIC, AK_SCALER_RULE_MINDSPORE_AMP, 65536.0f, 2.0f, 0.5f, 50,
         1, 1.0f, INFINITY, true, true, AK_SCALE_ARITH_FP32, true},
        {"paddle", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PADDLE, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true, AK_SCALE_ARITH_FP32, false},
        {"deepspeed", AK_SCALER_DYNAMIC, AK_SCALER_RULE_DEEPSPEED, 65536.0f, 2.0f, 0.5f, 1000, 2,
         1.0f, INFINITY, false, true, AK_SCALE_ARITH_DOUBLE, true},
        {"megatron", AK_SCALER_DYNAMIC, AK_SCALER_RULE_MEGATRON, 4294967296.0f, 2.0f, 0.5f, 1000, 2,
         1.0f, INFINITY, false, true, AK_SCALE_ARITH_FP32, false},
        {"keras", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 32768.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true, AK_SCALE_ARITH_FP32, true},
        /* paddle.static.amp.decorate() and the update_loss_scaling op */
        {"paddle-static", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PADDLE, 32768.0f, 2.0, 0.8, 1000, 2,
         1.0f, INFINITY, true, true, AK_SCALE_ARITH_FP32, false},
        /* DynamicLossScaler()'s own defaults: init_scale=2**32, delayed_shift=1 */
        {"deepspeed-zero", AK_SCALER_DYNAMIC, AK_SCALER_RULE_DEEPSPEED, 4294967296.0f, 2.0, 0.5,
         1000, 1, 1.0f, INFINITY, false, true, AK_SCALE_ARITH_DOUBLE, true},
        /* FP16_Optimizer: scale_factor 2, scale_window 1000, min_loss_scale 1, 2^16 */
        {"deepspeed-fp16-optimizer", AK_SCALER_DYNAMIC, AK_SCALER_RULE_DEEPSPEED_FP16_OPT, 65536.0f,
         2.0, 0.5, 1000, 1, 1.0f, INFINITY, false, true, AK_SCALE_ARITH_DOUBLE, true},
        /* tf.keras 2: 2**15, growth_steps 2000, multiplier 2, floor 1, _assign_if_finite */
        {"tf-keras2", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 32768.0f, 2.0, 0.5, 2000, 1, 1.0f,
         INFINITY, true, true, AK_SCALE_ARITH_FP32, true},
    };
    for (size_t i = 0; i < REF_COUNT(want); i++) {
        const ak_scaler_config c = ref_scaler_preset(want[i].name);
        ck_assert_msg(c.kind == want[i].kind && c.rule == want[i].rule, "%s", want[i].name);
        ck_assert_msg(c.init_scale == want[i].init && c.growth_factor == want[i].growth &&
                          c.backoff_factor == want[i].backoff,
                      "%s", want[i].name);
        ck_assert_msg(c.window == want[i].window && c.hysteresis == want[i].hysteresis, "%s",
                      want[i].name);
        ck_assert_msg(c.min_scale == want[i].min && c.max_scale == want[i].max, "%s", want[i].name);
        ck_assert_msg(c.refuse_nonfinite_growth == want[i].refuse, "%s", want[i].name);
        ck_assert_msg(c.drop_overflow_update == want[i].drop, "%s", want[i].name);
        ck_assert_msg(c.arith == want[i].arith && c.backoff_divides == want[i].divides, "%s",
                      want[i].name);
        ck_assert_msg(ak_scaler_preset_source(want[i].name) != NULL, "%s", want[i].name);
        ck_assert_msg(!c.consecutive_hysteresis, "%s", want[i].name);
        ck_assert_msg(ak_scaler_validate(&c, NULL, 0) == AK_OK, "%s", want[i].name);
        ck_assert_msg(strstr(ak_scaler_preset_names(), want[i].name) != NULL, "%s", want[i].name);
    }
    ck_assert_str_eq(ak_scaler_preset_names(),
                     "none, fixed, dynamic, pytorch, apex, mindspore-manager, mindspore-amp, "
                     "paddle, paddle-static, deepspeed, deepspeed-zero, deepspeed-fp16-optimizer, "
                     "megatron, keras, tf-keras2");
    ck_assert(ak_scaler_preset_source("torch") == NULL && ak_scaler_preset_source(NULL) == NULL);
    /* MindSpore's amp.DynamicLossScaler has no defaults: the source says whose these are */
    ck_assert(strstr(ak_scaler_preset_source("mindspore-amp"), "no defaults") != NULL);
}
END_TEST

/* How each preset's framework ends a run that keeps overflowing, from its
 * source: DeepSpeed's DynamicLossScaler raises at an overflow at its minimum
 * scale, MindSpore's DynamicLossScaleManager after more than 1000 overflows
 * in a row (deepspeed and deepspeed-zero build that DynamicLossScaler; the
 * FP16_Optimizer has its own update, which never raises); the others never
 * stop a run, so ampscope's rule applies. */
START_TEST(preset_stops)
{
    static const struct {
        const char *name;
        ak_scaler_stop stop;
    } want[] = {
        {"none", AK_SCALER_STOP_AMPSCOPE},
        {"fixed", AK_SCALER_STOP_AMPSCOPE},
        {"dynamic", AK_SCALER_STOP_AMPSCOPE},
        {"pytorch", AK_SCALER_STOP_AMPSCOPE},
        {"apex", AK_SCALER_STOP_AMPSCOPE},
        {"mindspore-manager", AK_SCALER_STOP_MINDSPORE_BAD_STEPS},
        {"mindspore-amp", AK_SCALER_STOP_AMPSCOPE},
        {"paddle", AK_SCALER_STOP_AMPSCOPE},
        {"deepspeed", AK_SCALER_STOP_DEEPSPEED_MIN},
        {"megatron", AK_SCALER_STOP_AMPSCOPE},
        {"keras", AK_SCALER_STOP_AMPSCOPE},
        /* the update_loss_scaling op only floors at 1 */
        {"paddle-static", AK_SCALER_STOP_AMPSCOPE},
        /* ZeRO's DynamicLossScaler(): raise_error_at_min_scale=True by default */
        {"deepspeed-zero", AK_SCALER_STOP_DEEPSPEED_MIN},
        /* FP16_Optimizer._update_scale: max(cur_scale / scale_factor, min_loss_scale), no raise */
        {"deepspeed-fp16-optimizer", AK_SCALER_STOP_AMPSCOPE},
        /* _DynamicLossScaleState.update: floored at 1, never raises */
        {"tf-keras2", AK_SCALER_STOP_AMPSCOPE},
    };
    for (size_t i = 0; i < REF_COUNT(want); i++)
        ck_assert_msg(ref_scaler_preset(want[i].name).stop == want[i].stop, "%s", want[i].name);
    ak_scaler_config c = ref_scaler_preset("pytorch");
    c.stop = (ak_scaler_stop)AK_SCALER_STOP_COUNT;
    char msg[128];
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--loss-scale: stop rule 3 is unknown");
}
END_TEST

START_TEST(unknown_preset_named)
{
    ak_scaler_config c;
    memset(&c, 0x5A, sizeof c);
    const ak_scaler_config before = c;
    char msg[256];
    ck_assert_int_eq(ak_scaler_preset("torch", &c, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "--loss-scale torch: unknown policy (expected none, fixed, dynamic, "
                          "pytorch, apex, mindspore-manager, mindspore-amp, paddle, paddle-static, "
                          "deepspeed, deepspeed-zero, deepspeed-fp16-optimizer, megatron, keras, "
                          "tf-keras2)");
    ck_assert_int_eq(memcmp(&c, &before, sizeof c), 0);
    ck_assert_int_eq(ak_scaler_preset("Pytorch", &c, NULL, 0), AK_EINVAL); /* names are exact */
    ck_assert_int_eq(ak_scaler_preset(NULL, &c, msg, sizeof msg), AK_EINVAL);
    ck_assert_msg(strstr(msg, "--loss-scale: no policy named (expected none,") == msg, "%s", msg);
    ck_assert_int_eq(ak_scaler_preset("pytorch", NULL, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "ak_scaler_preset: cfg is NULL");
    char tiny[8];
    ck_assert_int_eq(ak_scaler_preset("x", &c, tiny, sizeof tiny), AK_EINVAL);
    ck_assert_str_eq(tiny, "--loss-");
}
END_TEST

START_TEST(names)
{
    static const char *const rules[] = {"pytorch",  "mindspore-amp", "deepspeed",
                                        "megatron", "paddle",        "deepspeed-fp16-optimizer"};
    for (int i = 0; i < 6; i++) {
        ak_scaler_rule r = AK_SCALER_RULE_COUNT;
        ck_assert_int_eq(ak_scaler_rule_from_name(rules[i], &r), AK_OK);
        ck_assert_int_eq((int)r, i);
        ck_assert_str_eq(ak_scaler_rule_name(r), rules[i]);
    }
    ak_scaler_rule r;
    ck_assert_int_eq(ak_scaler_rule_from_name("apex", &r), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_rule_from_name(NULL, &r), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_rule_from_name("pytorch", NULL), AK_EINVAL);
    ck_assert_str_eq(ak_scaler_rule_name((ak_scaler_rule)6), "?");
    ck_assert_str_eq(ak_scale_arith_name(AK_SCALE_ARITH_FP32), "fp32");
    ck_assert_str_eq(ak_scale_arith_name(AK_SCALE_ARITH_FP32_DOUBLE_FACTOR), "fp32-double-factor");
    ck_assert_str_eq(ak_scale_arith_name(AK_SCALE_ARITH_DOUBLE), "double");
    ck_assert_str_eq(ak_scale_arith_name((ak_scale_arith)3), "?");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_NONE), "none");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_FIXED), "fixed");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_DYNAMIC), "dynamic");
    ck_assert_str_eq(ak_scaler_kind_name((ak_scaler_kind)3), "?");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_loss_scale_presets");
    TCase *tc = tcase_create("loss_scale_presets");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, presets_sequence_a, 0, (int)REF_COUNT(sequence_a));
    tcase_add_loop_test(tc, presets_to_the_floor, 0, (int)REF_COUNT(sequence_floor));
    tcase_add_loop_test(tc, presets_at_the_top, 0, (int)REF_COUNT(sequence_top));
    tcase_add_test(tc, preset_values);
    tcase_add_test(tc, preset_stops);
    tcase_add_test(tc, unknown_preset_named);
    tcase_add_test(tc, names);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
