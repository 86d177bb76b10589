/* test_loss_scale_frameworks: every framework preset against that
 * framework's own update, transcribed below from its source as plain
 * float/double code with the framework's own counters (cur_iter and
 * last_overflow_iter, growth trackers, hysteresis trackers), independent of
 * kernels/loss_scale.h.  Each case drives the preset and the transcription
 * through one overflow sequence (bursts, growth boundaries, the floor, the
 * top of fp32's range, factors 1.7 and 3) and compares the scale applied,
 * the framework's own number and the skip at every step.  Literal values
 * with their derivation anchor the transcriptions where the number types
 * part. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "ref_loss_scale.h"

/* ---- the frameworks' updates, from their sources ------------------------- */

/* One transcription's state: the framework's scale in its own type (scale32
 * for an fp32 tensor or variable, scale64 for a Python float), its
 * counters, and whether it raised. */
typedef struct fw {
    float scale32;
    double scale64;
    bool is_double;
    long cur_iter, last_overflow_iter, counter, bad;
    int hysteresis;
    bool raised;
} fw;

typedef struct fw_args {
    double f;    /* the growth factor (the one scale factor where there is one) */
    double b;    /* the backoff multiplier of two-factor frameworks */
    long window; /* growth interval */
    int hyst;    /* DeepSpeed's delayed_shift, Megatron's hysteresis, Paddle's
                    decr_every_n_nan_or_inf */
    double min, max;
} fw_args;

/* torch: AmpGradScalerKernels.cpp _amp_update_scale_cpu_kernel (float scale,
 * double factors) */
static void torch_update(fw *w, const fw_args *a, bool inf)
{
    if (inf) {
        w->scale32 = (float)(w->scale32 * a->b);
        w->counter = 0;
    } else {
        long successful = w->counter + 1;
        if (successful == a->window) {
            float new_scale = (float)(w->scale32 * a->f);
            if (isfinite(new_scale)) w->scale32 = new_scale;
            w->counter = 0;
        } else {
            w->counter = successful;
        }
    }
}

/* apex/amp/scaler.py LossScaler.update_scale: _loss_scale a Python float, its
 * 2. is a->f here; min_loss_scale None (0) or a floor */
static void apex_update(fw *w, const fw_args *a, bool overflow)
{
    if (overflow) {
        if (a->min > 0)
            w->scale64 = fmax(a->min, w->scale64 / a->f);
        else
            w->scale64 = w->scale64 / a->f;
        w->counter = 0;
    } else {
        w->counter += 1;
    }
    if (w->counter == a->window) {
        w->scale64 = fmin(a->max, w->scale64 * a->f);
        w->counter = 0;
    }
}

/* mindspore/train/loss_scale_manager.py DynamicLossScaleManager:
 * cur_iter = 1, last_overflow_iter = 0, decrease_ratio = 1 / scale_factor */
static void ms_manager_update(fw *w, const fw_args *a, bool overflow)
{
    const double increase_ratio = a->f, decrease_ratio = 1 / a->f;
    if (overflow) {
        w->scale64 = fmax(w->scale64 * decrease_ratio, 1);
        w->last_overflow_iter = w->cur_iter;
    } else if ((w->cur_iter - w->last_overflow_iter) % a->window == 0) {
        w->scale64 *= increase_ratio;
    }
    w->cur_iter += 1;
}

/* mindspore/amp.py DynamicLossScaler.adjust: an fp32 Parameter; the Python
 * factor enters the fp32 ops as an fp32 number */
static void ms_amp_update(fw *w, const fw_args *a, bool inf)
{
    const float factor = (float)a->f, scale_mul_factor = w->scale32 * factor;
    if (!inf) {
        if (w->counter == a->window - 1)
            w->scale32 = isfinite(scale_mul_factor) ? scale_mul_factor : w->scale32;
    } else {
        w->scale32 = fmaxf(1.0f, w->scale32 / factor);
    }
    w->counter = ((w->counter + 1) % a->window) * (inf ? 0 : 1);
}

/* python/paddle/amp/grad_scaler.py AmpScaler._update: the fp32 tensor times
 * a Python ratio, which the scale op takes as an fp32 attribute */
static void paddle_update(fw *w, const fw_args *a, bool inf)
{
    if (inf) {
        w->counter = 0;
        w->bad += 1;
        if (w->bad == a->hyst) {
            w->scale32 = w->scale32 * (float)a->b;
            w->bad = 0;
        }
    } else {
        w->bad = 0;
        w->counter += 1;
        if (w->counter == a->window) {
            w->scale32 = w->scale32 * (float)a->f;
            w->counter = 0;
        }
    }
}

/* paddle/phi/kernels/impl/amp_kernel_impl.h Update (the static
 * update_loss_scaling op): T = float, incr_ratio and decr_ratio float */
static void paddle_op_update(fw *w, const fw_args *a, bool inf)
{
    const float incr_ratio = (float)a->f, decr_ratio = (float)a->b;
    if (inf) {
        w->counter = 0;
        w->bad = w->bad + 1;
        if (w->bad == a->hyst) {
            float new_loss_scaling = w->scale32 * decr_ratio;
            w->scale32 = new_loss_scaling < 1.0f ? 1.0f : new_loss_scaling;
            w->bad = 0;
        }
    } else {
        w->bad = 0;
        w->counter = w->counter + 1;
        if (w->counter == a->window) {
            float new_loss_scaling = w->scale32 * incr_ratio;
            w->scale32 = isfinite(new_loss_scaling) ? new_loss_scaling : w->scale32;
            w->counter = 0;
        }
    }
}

/* deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale:
 * cur_iter = 0, last_overflow_iter = -1, cur_hysteresis = delayed_shift,
 * consecutive_hysteresis False, raise_error_at_min_scale True */
static void deepspeed_update(fw *w, const fw_args *a, bool overflow)
{
    if (overflow) {
        if (a->hyst == 1 || w->hysteresis == 1) {
            if (w->scale64 == a->min)
                w->raised = true; /* "Current loss scale already at minimum" */
            else
                w->scale64 = fmax(w->scale64 / a->f, a->min);
        } else {
            w->hysteresis -= 1;
        }
        w->last_overflow_iter = w->cur_iter;
    } else if ((w->cur_iter - w->last_overflow_iter) % a->window == 0) {
        w->hysteresis = a->hyst;
        w->scale64 *= a->f;
    }
    w->cur_iter += 1;
}

/* deepspeed/runtime/fp16/fused_optimizer.py FP16_Optimizer._update_scale */
static void fp16_optimizer_update(fw *w, const fw_args *a, bool skip)
{
    if (skip) {
        w->scale64 = fmax(w->scale64 / a->f, a->min);
        w->last_overflow_iter = w->cur_iter;
    } else {
        long stable_interval = (w->cur_iter - w->last_overflow_iter) - 1;
        if (stable_interval > 0 && stable_interval % a->window == 0) w->scale64 *= a->f;
    }
    w->cur_iter += 1;
}

/* megatron/core/optimizer/grad_scaler.py DynamicGradScaler.update: fp32
 * tensors (the factors are torch.tensor(..., dtype=float)) */
static void megatron_update(fw *w, const fw_args *a, bool found_inf)
{
    if (found_inf) {
        w->counter = 0;
        w->hysteresis -= 1;
        if (w->hysteresis <= 0) w->scale32 = fmaxf(w->scale32 * (float)a->b, (float)a->min);
    } else {
        w->counter += 1;
        if (w->counter == a->window) {
            w->counter = 0;
            w->hysteresis = a->hyst;
            w->scale32 = w->scale32 * (float)a->f;
        }
    }
}

/* keras/src/optimizers/loss_scale_optimizer.py (Keras 3): dynamic_scale an
 * fp32 variable, * 2.0 and / 2.0 (a->f here) */
static void keras3_update(fw *w, const fw_args *a, bool inf)
{
    if (inf) {
        w->counter = 0;
        w->scale32 = w->scale32 / (float)a->f;
    } else if (w->counter == a->window - 1) {
        w->counter = 0;
        w->scale32 = w->scale32 * (float)a->f;
    } else {
        w->counter += 1;
    }
}

/* tf.keras 2 keras/mixed_precision/loss_scale_optimizer.py
 * _DynamicLossScaleState.update: fp32, multiplier a->f */
static void tf_keras2_update(fw *w, const fw_args *a, bool inf)
{
    if (!inf) {
        if (w->counter + 1 >= a->window) {
            float new_loss_scale = w->scale32 * (float)a->f;
            if (isfinite(new_loss_scale)) w->scale32 = new_loss_scale; /* _assign_if_finite */
            w->counter = 0;
        } else {
            w->counter += 1;
        }
    } else {
        w->scale32 = fmaxf(w->scale32 / (float)a->f, 1.0f);
        w->counter = 0;
    }
}

typedef void (*fw_update)(fw *, const fw_args *, bool);

static const struct {
    const char *preset;
    fw_update update;
    bool is_double;
} frameworks[] = {
    {"pytorch", torch_update, false},
    {"apex", apex_update, true},
    {"mindspore-manager", ms_manager_update, true},
    {"mindspore-amp", ms_amp_update, false},
    {"paddle", paddle_update, false},
    {"paddle-static", paddle_op_update, false},
    {"deepspeed", deepspeed_update, true},
    {"deepspeed-zero", deepspeed_update, true},
    {"deepspeed-fp16-optimizer", fp16_optimizer_update, true},
    {"megatron", megatron_update, false},
    {"keras", keras3_update, false},
    {"tf-keras2", tf_keras2_update, false},
};

/* ---- the cases ------------------------------------------------------------ */
typedef struct fw_case {
    const char *preset;
    float init;     /* 0: the preset's */
    int32_t window; /* 0: the preset's */
    double factor;  /* 0: the preset's; else --scale-factor F (growth F, backoff 1/F) */
    const char *events;
} fw_case;

#define TOP 0x1p126f
/* bursts and growth boundaries at window 3 */
#define BURSTS   "CCCOCCOOCCCCCCOOOCCCC"
#define BOUNDARY "CCCCCCCCCOCCCCCCC"
#define FLOOR    "OOOOOOOOOOOOOOOOOOOOCCC"
#define UPTOP    "CCCCCOOOOOOCC"
#define GROWTHS  "CCCCCCCCCCCCCCCCCCCCCCCCOCCCOCC"

static const fw_case cases[] = {
    {"pytorch", 0, 3, 0, BURSTS},
    {"pytorch", 0, 1, 1.7, GROWTHS},
    {"pytorch", 0, 2, 3, BURSTS},
    {"pytorch", 8, 3, 0, FLOOR},
    {"pytorch", TOP, 1, 0, UPTOP},
    {"apex", 0, 3, 0, BURSTS},
    {"apex", 0x1p20f, 1, 3, GROWTHS},
    {"apex", 8, 3, 1.7, FLOOR},
    {"mindspore-manager", 0, 3, 0, BURSTS},
    {"mindspore-manager", 0, 1, 1.7, GROWTHS},
    {"mindspore-manager", 8, 3, 3, FLOOR},
    {"mindspore-manager", TOP, 1, 0, UPTOP},
    {"mindspore-amp", 0, 3, 0, BURSTS},
    {"mindspore-amp", 0, 1, 1.7, GROWTHS},
    {"mindspore-amp", 8, 3, 3, FLOOR},
    {"mindspore-amp", TOP, 1, 0, UPTOP},
    {"paddle", 0, 3, 0, BURSTS},
    {"paddle", 0, 1, 3, GROWTHS},
    {"paddle", 8, 2, 1.7, FLOOR},
    {"paddle", TOP, 1, 0, UPTOP},
    {"paddle-static", 0, 3, 0, BURSTS},
    {"paddle-static", 0, 1, 1.7, GROWTHS},
    {"paddle-static", 8, 3, 0, FLOOR},
    {"paddle-static", TOP, 1, 0, UPTOP},
    {"deepspeed", 0, 3, 0, BURSTS},
    {"deepspeed", 0, 1, 1.7, GROWTHS},
    {"deepspeed", 0, 2, 3, BURSTS},
    {"deepspeed", TOP, 1, 0, UPTOP},
    {"deepspeed-zero", 0, 3, 0, BURSTS},
    {"deepspeed-zero", 0, 1, 3, GROWTHS},
    {"deepspeed-zero", 0, 4, 0, BOUNDARY},
    {"deepspeed-zero", TOP, 1, 0, UPTOP},
    {"deepspeed-zero", 0x1p125f, 1, 3, UPTOP},
    {"deepspeed-fp16-optimizer", 0, 3, 0, BURSTS},
    {"deepspeed-fp16-optimizer", 0, 4, 0, BOUNDARY},
    {"deepspeed-fp16-optimizer", 0, 1, 1.7, GROWTHS},
    {"deepspeed-fp16-optimizer", 8, 3, 3, FLOOR},
    {"deepspeed-fp16-optimizer", TOP, 1, 0, UPTOP},
    {"megatron", 0, 3, 0, BURSTS},
    {"megatron", 0, 1, 1.7, GROWTHS},
    {"megatron", 8, 3, 3, FLOOR},
    {"megatron", TOP, 1, 0, UPTOP},
    {"keras", 0, 3, 0, BURSTS},
    {"keras", 0, 1, 3, GROWTHS},
    {"keras", 8, 3, 1.7, FLOOR},
    {"keras", TOP, 1, 0, UPTOP},
    {"tf-keras2", 0, 3, 0, BURSTS},
    {"tf-keras2", 0, 1, 1.7, GROWTHS},
    {"tf-keras2", 8, 3, 3, FLOOR},
    {"tf-keras2", TOP, 1, 0, UPTOP},
};

START_TEST(preset_is_its_framework)
{
    const fw_case *c = &cases[_i];
    size_t k = 0;
    while (strcmp(frameworks[k].preset, c->preset) != 0)
        k++;
    ak_scaler_config cfg = ref_scaler_preset(c->preset);
    if (c->init) cfg.init_scale = c->init;
    if (c->window) cfg.window = c->window;
    if (c->factor) cfg.growth_factor = c->factor, cfg.backoff_factor = 1.0 / c->factor;
    /* the framework's arguments, as its user would pass them */
    const fw_args a = {.f = c->factor ? c->factor : 2.0,
                       .b = c->factor ? 1.0 / c->factor : cfg.backoff_factor,
                       .window = cfg.window,
                       .hyst = cfg.hysteresis,
                       .min = cfg.min_scale,
                       .max = cfg.max_scale};
    fw w = {.scale32 = cfg.init_scale,
            .scale64 = cfg.init_scale,
            .is_double = frameworks[k].is_double,
            .last_overflow_iter = -1,
            .hysteresis = cfg.hysteresis};
    if (frameworks[k].update == ms_manager_update) w.cur_iter = 1, w.last_overflow_iter = 0;
    char what[160];
    snprintf(what, sizeof what, "%s (init %a, window %d, factor %g, %s)", c->preset,
             (double)cfg.init_scale, (int)cfg.window, a.f, c->events);
    ak_scaler_state s;
    ck_assert_int_eq(ak_scaler_init(&cfg, &s), AK_OK);
    for (size_t i = 0; c->events[i]; i++) {
        const bool inf = c->events[i] == 'O';
        /* DeepSpeed raises here; ampscope ends the run on this test of the
         * state before the step (train_limits.c) */
        const bool ds = frameworks[k].update == deepspeed_update;
        const bool raises_here =
            ds && inf && (a.hyst == 1 || w.hysteresis == 1) && w.scale64 == a.min;
        ck_assert_msg(!ds || raises_here == (inf && s.hysteresis_left <= 1 &&
                                             s.master_scale == (double)cfg.min_scale),
                      "%s: step %zu: the stop test disagrees", what, i + 1);
        if (raises_here) break;
        frameworks[k].update(&w, &a, inf);
        ak_loss_scale_step(&cfg, &s, inf);
        const float applied = w.is_double ? (float)w.scale64 : w.scale32;
        const double own = w.is_double ? w.scale64 : (double)w.scale32;
        ck_assert_msg(s.scale == applied && s.master_scale == own,
                      "%s: step %zu (%c): scale %a (master %a), the framework's %a (%a)", what,
                      i + 1, c->events[i], (double)s.scale, s.master_scale, (double)applied, own);
        ck_assert_msg(s.skip == (inf ? 1.0f : 0.0f), "%s: step %zu: skip", what, i + 1);
        /* unscaling: 1/scale in fp32, or the double 1. / scale rounded */
        const float inv = w.is_double ? (float)(1.0 / w.scale64) : 1.0f / w.scale32;
        ck_assert_msg(s.inv_scale == inv, "%s: step %zu: inv_scale %a, expected %a", what, i + 1,
                      (double)s.inv_scale, (double)inv);
    }
}
END_TEST

/* ---- literal anchors ------------------------------------------------------ */
/* x1.7 from 2^16, window 1, five growths.  PyTorch rounds each double product
 * to fp32; ampscope's fp32 product uses 1.7f = 0x1.b33334p0:
 *   growth 4: both 0x1.0b4468p19; growth 5: (double)0x1.0b4468p19 * 1.7 =
 *   0x1.c65aaf..p19 -> fp32 0x1.c65ab0p19, but 0x1.0b4468p19 * 1.7f rounds to
 *   0x1.c65ab2p19.  DeepSpeed's Python float 2^16 * 1.7^5 = 0x1.c65aaf78feef4p19
 *   is applied as 0x1.c65ab0p19, and growth 6 (0x1.82337b8d3f182p20) as
 *   0x1.82337cp20 where the fp32 product gives 0x1.82337ep20. */
START_TEST(literal_values)
{
    ak_scaler_config pt = ref_scaler_preset("pytorch"), fp = ref_scaler_preset("dynamic"),
                     ds = ref_scaler_preset("deepspeed-zero");
    pt.window = fp.window = ds.window = 1;
    pt.growth_factor = fp.growth_factor = ds.growth_factor = 1.7;
    pt.init_scale = fp.init_scale = ds.init_scale = 0x1p16f;
    ak_scaler_state a, b, c;
    ak_scaler_init(&pt, &a), ak_scaler_init(&fp, &b), ak_scaler_init(&ds, &c);
    for (int i = 0; i < 4; i++)
        ak_loss_scale_step(&pt, &a, false), ak_loss_scale_step(&fp, &b, false),
            ak_loss_scale_step(&ds, &c, false);
    ck_assert(a.scale == 0x1.0b4468p19f && b.scale == 0x1.0b4468p19f && c.scale == 0x1.0b4468p19f);
    ak_loss_scale_step(&pt, &a, false), ak_loss_scale_step(&fp, &b, false),
        ak_loss_scale_step(&ds, &c, false);
    ck_assert(a.scale == 0x1.c65ab0p19f && b.scale == 0x1.c65ab2p19f);
    ck_assert(c.master_scale == 0x1.c65aaf78feef4p19 && c.scale == 0x1.c65ab0p19f);
    ak_loss_scale_step(&ds, &c, false), ak_loss_scale_step(&fp, &b, false);
    ck_assert(c.master_scale == 0x1.82337b8d3f182p20 && c.scale == 0x1.82337cp20f);
    ck_assert(b.scale == 0x1.82337ep20f);

    /* DeepSpeed past fp32's maximum and back (window 1, no hysteresis):
     * 2^127 -> 2^128 (inf applied, 1/2^128 = 2^-128 unscales) -> the overflow
     * halves the double to 2^127, finite again. */
    ds.growth_factor = 2.0;
    ds.init_scale = 0x1p127f;
    ak_scaler_init(&ds, &c);
    ak_loss_scale_step(&ds, &c, false);
    ck_assert(c.master_scale == 0x1p128 && isinf(c.scale) && c.inv_scale == 0x1p-128f);
    ck_assert_int_eq(c.growths, 1);
    ak_loss_scale_step(&ds, &c, true);
    ck_assert(c.master_scale == 0x1p127 && c.scale == 0x1p127f && c.inv_scale == 0x1p-127f);
    ck_assert_int_eq(c.backoffs, 1);

    /* Paddle's static op backs off by 0.8f = 0x1.99999ap-1 every 2 overflows
     * in a row from 2^15: 2^15 * 0x1.99999ap-1 = 0x1.99999ap14 (exact, 24
     * bits), then 0x1.99999ap14 * 0x1.99999ap-1 = 0x1.47ae16p14 rounded (the product is
     * 0x1.47ae151eb852p14: the bits cut off are over half an ulp). */
    ak_scaler_config ps = ref_scaler_preset("paddle-static");
    ak_scaler_init(&ps, &a);
    static const char ev[] = "OOOCOO";
    static const float want[] = {0x1p15f,        0x1.99999ap14f, 0x1.99999ap14f,
                                 0x1.99999ap14f, 0x1.99999ap14f, 0x1.47ae16p14f};
    for (int i = 0; ev[i]; i++) {
        ak_loss_scale_step(&ps, &a, ev[i] == 'O');
        ck_assert_msg(a.scale == want[i], "paddle-static step %d: %a", i + 1, (double)a.scale);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_loss_scale_frameworks");
    TCase *tc = tcase_create("loss_scale_frameworks");
    tcase_add_loop_test(tc, preset_is_its_framework, 0, (int)REF_COUNT(cases));
    tcase_add_test(tc, literal_values);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
