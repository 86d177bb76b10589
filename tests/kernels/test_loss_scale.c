/* test_loss_scale: the loss-scale rule (kernels/loss_scale.h).
 *
 * Every preset is driven through scripted overflow sequences and its whole
 * scale trajectory is compared, step by step, with a table worked out by
 * hand from that framework's source (the rules are quoted in
 * kernels/loss_scale.c).  Then: none and fixed, PyTorch reaching 0, growth
 * refusal and caps, the hysteresis of deepspeed, megatron and paddle on one
 * sequence, the preset values, every validation message, and the cpu
 * backend's ak_loss_scale_update against the pure function. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* A scripted run: events is a string of 'C' (clean step) and 'O' (overflow),
 * scale[i] the scale after step i, and the counters after the last step. */
typedef struct trajectory {
    const char *preset;
    float init;     /* overrides the preset's init_scale */
    int32_t window; /* overrides the preset's window */
    const char *events;
    float scale[16];
    int64_t growths, backoffs, good, steps_at_min;
    int32_t hysteresis_left;
} trajectory;

static ak_scaler_config preset_or_fail(const char *name)
{
    ak_scaler_config cfg;
    char msg[256];
    ck_assert_msg(ak_scaler_preset(name, &cfg, msg, sizeof msg) == AK_OK, "%s", msg);
    return cfg;
}

/* Runs the events through ak_loss_scale_step and checks every step's scale,
 * inverse and skip decision, then the final counters. */
static void check_run(const char *what, const ak_scaler_config *cfg, const char *events,
                      const float *scale)
{
    char msg[256];
    ck_assert_msg(ak_scaler_validate(cfg, msg, sizeof msg) == AK_OK, "%s: %s", what, msg);
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(cfg, &s), AK_OK);
    int64_t overflows = 0;
    for (size_t i = 0; events[i]; i++) {
        const bool inf = events[i] == 'O';
        overflows += inf;
        ak_loss_scale_step(cfg, &s, inf);
        ck_assert_msg(s.scale == scale[i], "%s: step %zu (%c): scale %a, expected %a", what, i + 1,
                      events[i], (double)s.scale, (double)scale[i]);
        ck_assert_msg(s.inv_scale == 1.0f / scale[i], "%s: step %zu: inv_scale %a", what, i + 1,
                      (double)s.inv_scale);
        const float skip = inf && cfg->drop_overflow_update ? 1.0f : 0.0f;
        ck_assert_msg(s.skip == skip, "%s: step %zu (%c): skip %g", what, i + 1, events[i],
                      (double)s.skip);
        ck_assert_int_eq(s.steps, (int64_t)i + 1);
        ck_assert_int_eq(s.overflows, overflows);
    }
}

static void check_trajectory(const trajectory *t)
{
    ak_scaler_config cfg = preset_or_fail(t->preset);
    cfg.init_scale = t->init;
    cfg.window = t->window;
    char what[96];
    snprintf(what, sizeof what, "%s (init %a, window %d, %s)", t->preset, (double)t->init,
             (int)t->window, t->events);
    check_run(what, &cfg, t->events, t->scale);
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    for (size_t i = 0; t->events[i]; i++)
        ak_loss_scale_step(&cfg, &s, t->events[i] == 'O');
    ck_assert_msg(s.growths == t->growths, "%s: growths %lld", what, (long long)s.growths);
    ck_assert_msg(s.backoffs == t->backoffs, "%s: backoffs %lld", what, (long long)s.backoffs);
    ck_assert_msg(s.good == t->good, "%s: good %lld", what, (long long)s.good);
    ck_assert_msg(s.steps_at_min == t->steps_at_min, "%s: steps_at_min %lld", what,
                  (long long)s.steps_at_min);
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
#define SEQ_A "CCCOCCOCCCOOCCC"

static const trajectory sequence_a[] = {
    {"pytorch",
     0x1p16f,
     3,
     SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     0,
     1},
    {"apex",
     0x1p16f,
     3,
     SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     0,
     1},
    {"mindspore-manager",
     0x1p24f,
     3,
     SEQ_A,
     {0x1p24f, 0x1p24f, 0x1p25f, 0x1p24f, 0x1p24f, 0x1p24f, 0x1p23f, 0x1p23f, 0x1p23f, 0x1p24f,
      0x1p23f, 0x1p22f, 0x1p22f, 0x1p22f, 0x1p23f},
     3,
     4,
     0,
     0,
     1},
    /* the counter wraps: (2 + 1) mod 3 = 0 at each growth */
    {"mindspore-amp",
     0x1p16f,
     3,
     SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     0,
     1},
    {"paddle",
     0x1p16f,
     3,
     SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p16f,
      0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f},
     3,
     4,
     0,
     0,
     1},
    /* good = steps since the last overflow (12), not zeroed at growth: 3 */
    {"deepspeed",
     0x1p16f,
     3,
     SEQ_A,
     {0x1p16f, 0x1p16f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p17f,
      0x1p17f, 0x1p16f, 0x1p16f, 0x1p16f, 0x1p17f},
     3,
     2,
     3,
     0,
     2},
    {"megatron",
     0x1p32f,
     3,
     SEQ_A,
     {0x1p32f, 0x1p32f, 0x1p33f, 0x1p33f, 0x1p33f, 0x1p33f, 0x1p32f, 0x1p32f, 0x1p32f, 0x1p33f,
      0x1p33f, 0x1p32f, 0x1p32f, 0x1p32f, 0x1p33f},
     3,
     2,
     0,
     0,
     2},
    {"keras",
     0x1p15f,
     3,
     SEQ_A,
     {0x1p15f, 0x1p15f, 0x1p16f, 0x1p15f, 0x1p15f, 0x1p15f, 0x1p14f, 0x1p14f, 0x1p14f, 0x1p15f,
      0x1p14f, 0x1p13f, 0x1p13f, 0x1p13f, 0x1p14f},
     3,
     4,
     0,
     0,
     1},
};

/* Six overflows in a row from 8: without a floor the scale halves every
 * time; with floor 1 it stops there and steps_at_min counts the steps
 * that ended at 1; with hysteresis 2 the first overflow is absorbed. */
#define SEQ_FLOOR "OOOOOO"

static const trajectory sequence_floor[] = {
    {"pytorch", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 0, 1},
    {"apex", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 0, 1},
    {"mindspore-manager", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 4, 1},
    {"mindspore-amp", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 4, 1},
    {"paddle", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 0, 1},
    {"deepspeed", 8.0f, 3, SEQ_FLOOR, {8.0f, 4.0f, 2.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 3, 1},
    {"megatron", 8.0f, 3, SEQ_FLOOR, {8.0f, 4.0f, 2.0f, 1.0f, 1.0f, 1.0f}, 0, 3, 0, 3, 1},
    {"keras", 8.0f, 3, SEQ_FLOOR, {4.0f, 2.0f, 1.0f, 0.5f, 0.25f, 0.125f}, 0, 6, 0, 0, 1},
};

/* Window 1 near the top: three growths asked for, then an overflow.
 * 2^126 * 2 * 2 = 2^128 overflows fp32: PyTorch and MindSpore amp refuse it
 * and keep 2^127; the others take inf, which a backoff cannot bring back
 * (inf * 0.5 = inf).  Apex caps at 2^24 instead. */
#define SEQ_TOP "CCCO"

static const trajectory sequence_top[] = {
    {"pytorch", 0x1p126f, 1, SEQ_TOP, {0x1p127f, 0x1p127f, 0x1p127f, 0x1p126f}, 1, 1, 0, 0, 1},
    {"apex", 0x1p23f, 1, SEQ_TOP, {0x1p24f, 0x1p24f, 0x1p24f, 0x1p23f}, 1, 1, 0, 0, 1},
    {"mindspore-manager",
     0x1p126f,
     1,
     SEQ_TOP,
     {0x1p127f, INFINITY, INFINITY, INFINITY},
     2,
     0,
     0,
     0,
     1},
    {"mindspore-amp",
     0x1p126f,
     1,
     SEQ_TOP,
     {0x1p127f, 0x1p127f, 0x1p127f, 0x1p126f},
     1,
     1,
     0,
     0,
     1},
    {"paddle", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 0, 1},
    /* hysteresis 2: the overflow is absorbed anyway */
    {"deepspeed", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 0, 1},
    {"megatron", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 0, 1},
    {"keras", 0x1p126f, 1, SEQ_TOP, {0x1p127f, INFINITY, INFINITY, INFINITY}, 2, 0, 0, 0, 1},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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
        float init, growth, backoff;
        int32_t window, hysteresis;
        float min, max;
        bool refuse, drop;
    } want[] = {
        {"none", AK_SCALER_NONE, AK_SCALER_RULE_PYTORCH, 1.0f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY,
         false, false},
        {"fixed", AK_SCALER_FIXED, AK_SCALER_RULE_PYTORCH, 128.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true},
        {"dynamic", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, true, true},
        {"pytorch", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, true, true},
        {"apex", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         16777216.0f, false, true},
        {"mindspore-manager", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 16777216.0f, 2.0f, 0.5f,
         2000, 1, 1.0f, INFINITY, false, true},
        {"mindspore-amp", AK_SCALER_DYNAMIC, AK_SCALER_RULE_MINDSPORE_AMP, 65536.0f, 2.0f, 0.5f, 50,
         1, 1.0f, INFINITY, true, true},
        {"paddle", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PADDLE, 65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true},
        {"deepspeed", AK_SCALER_DYNAMIC, AK_SCALER_RULE_DEEPSPEED, 65536.0f, 2.0f, 0.5f, 1000, 2,
         1.0f, INFINITY, false, true},
        {"megatron", AK_SCALER_DYNAMIC, AK_SCALER_RULE_MEGATRON, 4294967296.0f, 2.0f, 0.5f, 1000, 2,
         1.0f, INFINITY, false, true},
        {"keras", AK_SCALER_DYNAMIC, AK_SCALER_RULE_PYTORCH, 32768.0f, 2.0f, 0.5f, 2000, 1, 0.0f,
         INFINITY, false, true},
    };
    for (size_t i = 0; i < COUNT(want); i++) {
        const ak_scaler_config c = preset_or_fail(want[i].name);
        ck_assert_msg(c.kind == want[i].kind && c.rule == want[i].rule, "%s", want[i].name);
        ck_assert_msg(c.init_scale == want[i].init && c.growth_factor == want[i].growth &&
                          c.backoff_factor == want[i].backoff,
                      "%s", want[i].name);
        ck_assert_msg(c.window == want[i].window && c.hysteresis == want[i].hysteresis, "%s",
                      want[i].name);
        ck_assert_msg(c.min_scale == want[i].min && c.max_scale == want[i].max, "%s", want[i].name);
        ck_assert_msg(c.refuse_nonfinite_growth == want[i].refuse, "%s", want[i].name);
        ck_assert_msg(c.drop_overflow_update == want[i].drop, "%s", want[i].name);
        ck_assert_msg(!c.consecutive_hysteresis, "%s", want[i].name);
        ck_assert_msg(ak_scaler_validate(&c, NULL, 0) == AK_OK, "%s", want[i].name);
        ck_assert_msg(strstr(ak_scaler_preset_names(), want[i].name) != NULL, "%s", want[i].name);
    }
    ck_assert_str_eq(ak_scaler_preset_names(),
                     "none, fixed, dynamic, pytorch, apex, mindspore-manager, mindspore-amp, "
                     "paddle, deepspeed, megatron, keras");
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
                          "pytorch, apex, mindspore-manager, mindspore-amp, paddle, deepspeed, "
                          "megatron, keras)");
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
    static const char *const rules[] = {"pytorch", "mindspore-amp", "deepspeed", "megatron",
                                        "paddle"};
    for (int i = 0; i < 5; i++) {
        ak_scaler_rule r = AK_SCALER_RULE_COUNT;
        ck_assert_int_eq(ak_scaler_rule_from_name(rules[i], &r), AK_OK);
        ck_assert_int_eq((int)r, i);
        ck_assert_str_eq(ak_scaler_rule_name(r), rules[i]);
    }
    ak_scaler_rule r;
    ck_assert_int_eq(ak_scaler_rule_from_name("apex", &r), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_rule_from_name(NULL, &r), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_rule_from_name("pytorch", NULL), AK_EINVAL);
    ck_assert_str_eq(ak_scaler_rule_name((ak_scaler_rule)5), "?");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_NONE), "none");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_FIXED), "fixed");
    ck_assert_str_eq(ak_scaler_kind_name(AK_SCALER_DYNAMIC), "dynamic");
    ck_assert_str_eq(ak_scaler_kind_name((ak_scaler_kind)3), "?");
}
END_TEST

START_TEST(none_and_fixed)
{
    /* none: the scale stays 1 and nothing is skipped, overflows are counted */
    ak_scaler_config none = preset_or_fail("none");
    check_run("none", &none, "CCOC", (const float[]){1.0f, 1.0f, 1.0f, 1.0f});
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&none, &s), AK_OK);
    ck_assert(s.scale == 1.0f && s.inv_scale == 1.0f && s.skip == 0.0f);
    const char *ev = "CCOOC";
    for (int i = 0; ev[i]; i++)
        ak_loss_scale_step(&none, &s, ev[i] == 'O');
    ck_assert_int_eq(s.overflows, 2);
    ck_assert_int_eq(s.skipped, 0);
    ck_assert_int_eq(s.overflows_in_a_row, 0);
    ck_assert_int_eq(s.steps_at_min, 0);

    /* fixed: 128 forever; drop_overflow_update decides the skip */
    ak_scaler_config fixed = preset_or_fail("fixed");
    check_run("fixed, drop", &fixed, "COCOO",
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
    check_run("fixed, no drop", &fixed, "COCOO",
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
    ak_scaler_config dyn = preset_or_fail("dynamic");
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
    ak_scaler_config cfg = preset_or_fail("pytorch");
    cfg.window = 3;
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    for (int k = 1; k <= 165; k++) {
        ak_loss_scale_step(&cfg, &s, true);
        ck_assert_msg(s.scale == ldexpf(1.0f, 16 - k), "after %d overflows: %a", k,
                      (double)s.scale);
        ck_assert_int_eq(s.steps_at_min, 0);
    }
    ck_assert(s.scale == 0x1p-149f);
    ck_assert(s.inv_scale == INFINITY); /* 2^149 overflows fp32 */
    ak_loss_scale_step(&cfg, &s, true);
    ck_assert(s.scale == 0.0f && !signbit(s.scale));
    ck_assert(s.inv_scale == INFINITY);
    ck_assert_int_eq(s.backoffs, 166);
    ck_assert_int_eq(s.steps_at_min, 1);
    ck_assert_int_eq(s.overflows_in_a_row, 166);
    for (int i = 0; i < 10; i++)
        ak_loss_scale_step(&cfg, &s, false);
    ck_assert(s.scale == 0.0f);
    ck_assert_int_eq(s.growths, 0);
    ck_assert_int_eq(s.steps_at_min, 11);
    ck_assert_int_eq(s.overflows_in_a_row, 0);
    ck_assert_int_eq(s.good, 1); /* 10 clean steps, window 3: grew (to 0) at 3, 6, 9 */
}
END_TEST

/* A refused growth keeps the scale but still zeroes the counter, as PyTorch's
 * _amp_update_scale_ does; without refusal the scale becomes inf. */
START_TEST(growth_refusal)
{
    ak_scaler_config cfg = preset_or_fail("dynamic");
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
    check_run("no refusal", &cfg, "CCCC", (const float[]){0x1p127f, INFINITY, INFINITY, INFINITY});

    /* with refusal off, a cap still holds: min(inf, cap) */
    cfg.max_scale = 0x1p127f;
    check_run("capped", &cfg, "CCCC", (const float[]){0x1p127f, 0x1p127f, 0x1p127f, 0x1p127f});
    /* a cap that is not a power of two is reached exactly */
    cfg.init_scale = 1000.0f;
    cfg.max_scale = 3000.0f;
    cfg.window = 1;
    check_run("cap 3000", &cfg, "CCCOC",
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
    ak_scaler_config mega = preset_or_fail("megatron");
    mega.init_scale = 0x1p10f;
    mega.window = 3;
    static const float megatron[] = {0x1p10f, 0x1p9f, 0x1p8f, 0x1p7f,
                                     0x1p7f,  0x1p6f, 0x1p5f, 0x1p4f};
    check_run("megatron", &mega, ev, megatron);

    ak_scaler_config ds = preset_or_fail("deepspeed");
    ds.init_scale = 0x1p10f;
    ds.window = 3;
    check_run("deepspeed", &ds, ev, megatron);
    ds.consecutive_hysteresis = true;
    static const float consecutive[] = {0x1p10f, 0x1p9f, 0x1p8f, 0x1p7f,
                                        0x1p7f,  0x1p7f, 0x1p6f, 0x1p5f};
    check_run("deepspeed consecutive", &ds, ev, consecutive);

    ak_scaler_config pd = preset_or_fail("paddle");
    pd.init_scale = 0x1p10f;
    pd.window = 3;
    pd.hysteresis = 2; /* decr_every_n_nan_or_inf = 2 */
    static const float paddle[] = {0x1p10f, 0x1p9f, 0x1p9f, 0x1p8f, 0x1p8f, 0x1p8f, 0x1p7f, 0x1p7f};
    check_run("paddle", &pd, ev, paddle);

    /* The consecutive flag on sequence A (init 2^16): the overflow at 7
     * follows clean steps, so it is absorbed where megatron backs off. */
    static const float consecutive_a[] = {0x1p16f, 0x1p16f, 0x1p17f, 0x1p17f, 0x1p17f,
                                          0x1p17f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p18f,
                                          0x1p18f, 0x1p17f, 0x1p17f, 0x1p17f, 0x1p18f};
    ds.init_scale = 0x1p16f;
    check_run("deepspeed consecutive, A", &ds, SEQ_A, consecutive_a);

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
         "--loss-scale: rule 9 is not pytorch, mindspore-amp, deepspeed, megatron or paddle"},
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
    for (size_t i = 0; i < COUNT(cases); i++) {
        ak_scaler_config c = preset_or_fail("pytorch");
        const char *f = cases[i].field;
        if (!strcmp(f, "kind")) c.kind = (ak_scaler_kind)7;
        if (!strcmp(f, "fixed_zero")) c = preset_or_fail("fixed"), c.init_scale = 0.0f;
        if (!strcmp(f, "fixed_inf")) c = preset_or_fail("fixed"), c.init_scale = INFINITY;
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
        if (!strcmp(f, "hysteresis_zero")) c = preset_or_fail("deepspeed"), c.hysteresis = 0;
        if (!strcmp(f, "hysteresis_pytorch")) c.hysteresis = 2;
        if (!strcmp(f, "hysteresis_msamp")) c = preset_or_fail("mindspore-amp"), c.hysteresis = 3;
        if (!strcmp(f, "consecutive"))
            c = preset_or_fail("megatron"), c.consecutive_hysteresis = true;
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
    ak_scaler_config c = preset_or_fail("none");
    c.window = 0;
    c.init_scale = NAN;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    ck_assert_str_eq(msg, "");
    c = preset_or_fail("fixed");
    c.window = -1;
    c.growth_factor = 0.0f;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    /* boundary values that pass: window 1, min = init = max, a factor just above 1 */
    c = preset_or_fail("pytorch");
    c.window = 1;
    c.min_scale = c.max_scale = c.init_scale;
    c.growth_factor = 0x1.000002p0f;
    c.backoff_factor = 0x1.fffffep-1f;
    ck_assert_int_eq(ak_scaler_validate(&c, msg, sizeof msg), AK_OK);
    ck_assert_int_eq(ak_scaler_init(&c, NULL), AK_EINVAL);
    ck_assert_int_eq(ak_scaler_init(NULL, &(ak_scaler_state){0}), AK_EINVAL);
}
END_TEST

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
    for (size_t p = 0; p < COUNT(presets); p++) {
        ak_scaler_config cfg = preset_or_fail(presets[p]);
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
    const ak_scaler_config cfg = preset_or_fail("pytorch");
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
    Suite *s = suite_create("kernels_loss_scale");
    TCase *tc = tcase_create("loss_scale");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, presets_sequence_a, 0, (int)COUNT(sequence_a));
    tcase_add_loop_test(tc, presets_to_the_floor, 0, (int)COUNT(sequence_floor));
    tcase_add_loop_test(tc, presets_at_the_top, 0, (int)COUNT(sequence_top));
    tcase_add_test(tc, preset_values);
    tcase_add_test(tc, unknown_preset_named);
    tcase_add_test(tc, names);
    tcase_add_test(tc, none_and_fixed);
    tcase_add_test(tc, pytorch_reaches_zero);
    tcase_add_test(tc, growth_refusal);
    tcase_add_test(tc, hysteresis_semantics);
    tcase_add_test(tc, validation_messages);
    tcase_add_test(tc, cpu_op_equals_pure_function);
    tcase_add_test(tc, op_bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
