/* loss_scale.h: the loss-scale rule, as one pure update (state, found_inf) -> state.
 *
 * ak_loss_scale_step() below is the only code that moves a loss scale in
 * ampscope.  It is host+device inline code (FPE_INLINE): the cpu backend calls
 * it, the cuda backend runs it in a one-thread kernel (so a training step
 * never waits for the host), and analyze/ replays traces with it.
 *
 * A policy is a table of parameters (ak_scaler_config) plus a rule switch
 * (ak_scaler_rule) that selects how the counters move where frameworks
 * differ.  The presets (ak_scaler_preset) are rows of that table, taken from
 * each framework's source; kernels/loss_scale.c lists them with the source
 * each value comes from.
 *
 * Arithmetic (cfg->arith): the number type the framework keeps its scale in
 * and the operation it moves it by.  move(x) below is one of:
 *   fp32 (ampscope's own, Megatron, Paddle, Keras, MindSpore's amp): the fp32
 *     product scale * (float)factor, or with backoff_divides the fp32 quotient
 *     scale / (float)growth_factor, rounded to nearest even;
 *   fp32-double-factor (PyTorch's _amp_update_scale_): the fp32 scale times
 *     the double factor, in double, rounded once to fp32 (with a factor such
 *     as 1.7 that is not an fp32 number this is not the fp32 product);
 *   double (a Python float: Apex, DeepSpeed, MindSpore's manager): the scale
 *     is the double master_scale, moved by double operations; the fp32 scale
 *     applied is (float)master_scale (inf once it passes fp32's maximum: every
 *     step then overflows and backs off until it is back in range, as the
 *     framework's fp32 loss does), and inv_scale is (float)(1.0 / master_scale)
 *     (the frameworks' grad.mul_(1. / scale)).
 * backoff_divides: the backoff divides by the framework's one scale factor
 * (growth_factor: DeepSpeed's cur_scale / scale_factor, MindSpore amp's
 * scale_value / scale_factor, Apex's and Keras's / 2) instead of
 * multiplying by backoff_factor.  The floor and cap are then applied to the
 * result in the same type: max(x, min_scale), min(x, max_scale).
 * master_scale is kept for every arithmetic (for the fp32 ones it equals
 * scale), so growths, backoffs and the floor are judged on the framework's
 * own number.  Every operation is a single IEEE one (the build keeps IEEE
 * division and no FTZ; CUDA doubles are IEEE), so host and GPU give the same
 * bits.

 * Per step, with found_inf (an overflow was found in this step's gradients):
 *
 *   skip = found_inf and drop_overflow_update        (every kind)
 *
 *   none:    the scale stays 1.     fixed: the scale stays init_scale.
 *
 *   dynamic, an overflow:
 *     the growth counter `good` becomes 0 (every rule);
 *     if hysteresis_left > 1: hysteresis_left -= 1 and the scale is kept;
 *     else the scale backs off: scale = max(move(scale), min_scale)
 *          (paddle rule: then hysteresis_left = hysteresis).
 *   dynamic, a clean step:
 *     paddle rule, or deepspeed rule with consecutive_hysteresis:
 *       hysteresis_left = hysteresis;
 *     the growth counter moves as the rule says, and says whether to grow:
 *       pytorch:        good += 1; grow when good == window, then good = 0
 *                       (PyTorch's growth tracker, Apex's _unskipped, Keras's
 *                       step_counter, MindSpore's manager, Megatron's and
 *                       Paddle's counters; megatron and paddle use it too);
 *       mindspore-amp:  grow when good == window - 1; good = (good + 1) mod window;
 *       deepspeed:      good += 1 (steps since the last overflow, not zeroed at
 *                       growth); grow when good is a multiple of window;
 *       deepspeed-fp16-optimizer: good += 1 as deepspeed; grow when good - 1
 *                       is a positive multiple of window (FP16_Optimizer's
 *                       stable_interval: the first growth after window + 1
 *                       clean steps, then every window);
 *     at a growth: hysteresis_left = hysteresis, x = move(scale),
 *       and unless (refuse_nonfinite_growth and x is inf) scale = min(x, max_scale).
 *
 *   Then inv_scale = 1 / scale and the counts move.
 *
 * Hysteresis, what each rule does with it (hysteresis = H overflows make a
 * backoff):
 *   deepspeed:  DeepSpeed's cur_hysteresis: spent by overflows, refilled at
 *               growth, or on every clean step with consecutive_hysteresis (so
 *               then the H overflows must come in a row).
 *   megatron:   Megatron's hysteresis tracker: spent by overflows, refilled
 *               only at growth, so it counts overflows per growth window.
 *               (Megatron lets its tracker go to 0 and below; every overflow
 *               then backs off, which hysteresis_left = 1 says the same way.)
 *   paddle:     decr_every_n_nan_or_inf: the H overflows must come in a row,
 *               and after a backoff the next H are needed again
 *               (hysteresis_left = H - decr_count).
 *   pytorch, mindspore-amp, deepspeed-fp16-optimizer: no hysteresis (H must
 *               be 1).
 * The pytorch, mindspore-amp and deepspeed counters give the same scale
 * trajectory for every sequence; deepspeed without consecutive_hysteresis
 * and megatron do too.  They stay separate rules so that the state holds
 * each framework's own counters.
 */
#ifndef AMPSCOPE_KERNELS_LOSS_SCALE_H
#define AMPSCOPE_KERNELS_LOSS_SCALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpe_inline.h" /* FPE_INLINE: host+device under nvcc */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ak_scaler_kind {
    AK_SCALER_NONE = 0,   /* no loss scaling: the scale is 1 */
    AK_SCALER_FIXED = 1,  /* a constant scale, init_scale (MindSpore's FixedLossScaleManager) */
    AK_SCALER_DYNAMIC = 2 /* grown and backed off by the rule */
} ak_scaler_kind;

/* Where frameworks' counters differ (see the rule above). */
typedef enum ak_scaler_rule {
    AK_SCALER_RULE_PYTORCH = 0,
    AK_SCALER_RULE_MINDSPORE_AMP = 1,
    AK_SCALER_RULE_DEEPSPEED = 2,
    AK_SCALER_RULE_MEGATRON = 3,
    AK_SCALER_RULE_PADDLE = 4,
    AK_SCALER_RULE_DEEPSPEED_FP16_OPT = 5
} ak_scaler_rule;
#define AK_SCALER_RULE_COUNT 6

/* The number type the scale is kept in, and how a factor moves it (see
 * Arithmetic above). */
typedef enum ak_scale_arith {
    AK_SCALE_ARITH_FP32 = 0,               /* one fp32 product or quotient */
    AK_SCALE_ARITH_FP32_DOUBLE_FACTOR = 1, /* PyTorch: fp32 scale x double factor -> fp32 */
    AK_SCALE_ARITH_DOUBLE = 2              /* a Python float: the double master_scale */
} ak_scale_arith;
#define AK_SCALE_ARITH_COUNT 3

/* How the policy's framework ends a run whose steps keep overflowing (the
 * training loop applies it: experiments/train_limits.c).  A preset's row
 * sets it; a framework that never stops a run leaves the default, and then
 * ampscope's own rule (--diverge-after overflowing steps in a row) ends it. */
typedef enum ak_scaler_stop {
    AK_SCALER_STOP_AMPSCOPE = 0,           /* the framework never stops: ampscope's rule */
    AK_SCALER_STOP_DEEPSPEED_MIN = 1,      /* DeepSpeed's DynamicLossScaler with
                                              raise_error_at_min_scale (its default): an overflow
                                              that would back off from the minimum scale raises */
    AK_SCALER_STOP_MINDSPORE_BAD_STEPS = 2 /* MindSpore's DynamicLossScaleManager: more than
                                              bad_step_max = 1000 overflows in a row raise */
} ak_scaler_stop;
#define AK_SCALER_STOP_COUNT 3

typedef struct ak_scaler_config {
    ak_scaler_kind kind;
    ak_scaler_rule rule;          /* dynamic only */
    float init_scale;             /* fixed: the scale; dynamic: the first scale */
    double growth_factor;         /* > 1 (a double: a Python factor such as 1.7 is one) */
    double backoff_factor;        /* in (0, 1); unused when backoff_divides */
    int32_t window;               /* clean steps per growth (growth interval), >= 1 */
    int32_t hysteresis;           /* overflows per backoff, >= 1 */
    bool consecutive_hysteresis;  /* deepspeed rule: every clean step refills the hysteresis */
    float min_scale;              /* the floor of a backoff; 0: none */
    float max_scale;              /* the cap of a growth; +inf: none */
    bool refuse_nonfinite_growth; /* a growth that would give inf keeps the scale */
    bool drop_overflow_update;    /* an overflowing step is skipped (state.skip = 1) */
    ak_scale_arith arith;         /* the scale's number type and operation */
    bool backoff_divides;         /* a backoff is scale / growth_factor (one scale factor) */
    ak_scaler_stop stop;          /* how the framework ends a diverged run (dynamic only) */
} ak_scaler_config;

/* The scaler's state, in backend memory for ak_loss_scale_update (fill it
 * with ak_scaler_init on the host, then ak_to_device). */
typedef struct ak_scaler_state {
    float scale;     /* the scale the next step multiplies its loss by */
    float inv_scale; /* 1 / scale (fp32): what ak_unscale_check reads */
    float skip;      /* 1.0f when the step just decided must not update the weights, else 0.0f:
                        pass &state->skip to ak_opt_step_begin and ak_update as found_inf */
    int32_t hysteresis_left;    /* overflows, with no refill between, that make the next
                                   backoff (1: the next overflow backs off) */
    int64_t good;               /* the rule's growth counter (see the rule) */
    int64_t steps;              /* updates so far */
    int64_t overflows;          /* steps whose found_inf was set */
    int64_t skipped;            /* steps whose skip was set */
    int64_t growths;            /* steps at which the scale rose */
    int64_t backoffs;           /* steps at which the scale fell */
    int64_t overflows_in_a_row; /* overflowing steps in a row, up to the last step */
    double master_scale;        /* the framework's own number: the double scale of the
                                   double arithmetic (it may pass fp32's maximum, where
                                   scale is inf); for the fp32 ones equal to scale */
} ak_scaler_state;

/* ---- the rule ------------------------------------------------------------- */
FPE_INLINE bool ak_scale_is_finite(float x) { return x - x == 0.0f; }
FPE_INLINE bool ak_scale_is_finite_d(double x) { return x - x == 0.0; }

/* move(scale) of the rule: the scale a growth (grow) or a backoff gives,
 * before the floor and the cap, in cfg->arith (exact in double for the fp32
 * arithmetics, whose result is an fp32 number). */
FPE_INLINE double ak_scale_moved(const ak_scaler_config *cfg, const ak_scaler_state *s, bool grow)
{
    if (cfg->arith == AK_SCALE_ARITH_DOUBLE) {
        const double m = s->master_scale;
        if (grow) return m * cfg->growth_factor;
        return cfg->backoff_divides ? m / cfg->growth_factor : m * cfg->backoff_factor;
    }
    if (cfg->arith == AK_SCALE_ARITH_FP32_DOUBLE_FACTOR) {
        const double m = (double)s->scale;
        if (grow) return (double)(float)(m * cfg->growth_factor);
        return (double)(float)(cfg->backoff_divides ? m / cfg->growth_factor
                                                    : m * cfg->backoff_factor);
    }
    const float x = s->scale, g = (float)cfg->growth_factor;
    float y;
    if (grow)
        y = x * g;
    else
        y = cfg->backoff_divides ? x / g : x * (float)cfg->backoff_factor;
    return (double)y;
}

/* Applies one step's outcome to state (the rule is spelled out above).  cfg
 * must have passed ak_scaler_validate and state come from ak_scaler_init and
 * this function. */
FPE_INLINE void ak_loss_scale_step(const ak_scaler_config *cfg, ak_scaler_state *state,
                                   bool found_inf)
{
    ak_scaler_state *s = state;
    const bool skip = found_inf && cfg->drop_overflow_update;
    s->steps += 1;
    s->overflows += found_inf ? 1 : 0;
    s->overflows_in_a_row = found_inf ? s->overflows_in_a_row + 1 : 0;
    s->skip = skip ? 1.0f : 0.0f;
    s->skipped += skip ? 1 : 0;
    if (cfg->kind != AK_SCALER_DYNAMIC) return;

    const double old = s->master_scale;
    double next = old;
    if (found_inf) {
        s->good = 0;
        if (s->hysteresis_left > 1) {
            s->hysteresis_left -= 1;
        } else {
            const double x = ak_scale_moved(cfg, s, false);
            next = x < (double)cfg->min_scale ? (double)cfg->min_scale : x;
            if (cfg->rule == AK_SCALER_RULE_PADDLE) s->hysteresis_left = cfg->hysteresis;
        }
    } else {
        if (cfg->rule == AK_SCALER_RULE_PADDLE ||
            (cfg->rule == AK_SCALER_RULE_DEEPSPEED && cfg->consecutive_hysteresis))
            s->hysteresis_left = cfg->hysteresis;
        bool grow;
        if (cfg->rule == AK_SCALER_RULE_MINDSPORE_AMP) {
            grow = s->good == (int64_t)cfg->window - 1;
            s->good = (s->good + 1) % cfg->window;
        } else if (cfg->rule == AK_SCALER_RULE_DEEPSPEED) {
            s->good += 1;
            grow = s->good % cfg->window == 0;
        } else if (cfg->rule == AK_SCALER_RULE_DEEPSPEED_FP16_OPT) {
            s->good += 1;
            grow = s->good > 1 && (s->good - 1) % cfg->window == 0;
        } else {
            s->good += 1;
            grow = s->good == cfg->window;
            if (grow) s->good = 0;
        }
        if (grow) {
            s->hysteresis_left = cfg->hysteresis;
            const double x = ak_scale_moved(cfg, s, true);
            if (ak_scale_is_finite_d(x) || !cfg->refuse_nonfinite_growth)
                next = x > (double)cfg->max_scale ? (double)cfg->max_scale : x;
        }
    }
    s->master_scale = next;
    s->scale = (float)next;
    s->inv_scale = cfg->arith == AK_SCALE_ARITH_DOUBLE ? (float)(1.0 / next) : 1.0f / s->scale;
    s->growths += next > old ? 1 : 0;
    s->backoffs += next < old ? 1 : 0;
}

/* ---- configuration (kernels/loss_scale.c) ----------------------------------- */
/* Fills *cfg with a named policy: "none", "fixed" (MindSpore's
 * FixedLossScaleManager: 128, dropping overflowing updates), "dynamic"
 * (PyTorch's values in ampscope's fp32 arithmetic, to be overridden), or a
 * framework preset: "pytorch", "apex", "mindspore-manager", "mindspore-amp",
 * "paddle", "paddle-static", "deepspeed", "deepspeed-zero",
 * "deepspeed-fp16-optimizer", "megatron", "keras", "tf-keras2".  Returns 0,
 * or AK_EINVAL with msg = "--loss-scale
 * NAME: unknown policy (expected ...)" listing the valid names (msg may be
 * NULL). */
int ak_scaler_preset(const char *name, ak_scaler_config *cfg, char *msg, size_t msg_len);
/* "none, fixed, dynamic, pytorch, apex, ..., tf-keras2" */
const char *ak_scaler_preset_names(void);
/* Where the preset's rule and values come from (the framework's file and
 * class, and for values a framework leaves to its user, whose they are); NULL
 * for an unknown name. */
const char *ak_scaler_preset_source(const char *name);

/* Checks the values the kind uses.  Returns 0, or AK_EINVAL with a
 * one-line msg naming the option as the command line spells it
 * ("--scale-window 0: must be >= 1").  msg may be NULL. */
int ak_scaler_validate(const ak_scaler_config *cfg, char *msg, size_t msg_len);

/* The state before the first step: scale = master_scale = init_scale (1 for
 * none), inv_scale = 1 / scale, hysteresis_left = hysteresis (1 unless dynamic),
 * counters 0, skip 0.  Returns AK_EINVAL (state untouched) when cfg or
 * state is NULL or cfg fails ak_scaler_validate. */
int ak_scaler_init(const ak_scaler_config *cfg, ak_scaler_state *state);

const char *ak_scaler_kind_name(ak_scaler_kind kind); /* "none", "fixed", "dynamic"; "?" */
const char *ak_scaler_rule_name(ak_scaler_rule rule); /* "pytorch", "mindspore-amp", ...; "?" */
/* "fp32", "fp32-double-factor", "double"; "?" */
const char *ak_scale_arith_name(ak_scale_arith arith);
/* The rule named "pytorch", "mindspore-amp", "deepspeed", "megatron",
 * "paddle" or "deepspeed-fp16-optimizer": 0, or AK_EINVAL for any other
 * name. */
int ak_scaler_rule_from_name(const char *name, ak_scaler_rule *rule);

/* ---- the backend operation (kernels/loss_scale.c) ---------------------------- */
typedef struct ak_backend ak_backend;
/* One step of the rule on the backend: ak_loss_scale_step(cfg, state,
 * *found_inf != 0) where state and found_inf are in backend memory (a NaN
 * found_inf counts as set).  On cuda a one-thread kernel queued on the
 * backend's stream: no host round trip.  cfg is validated here (AK_EINVAL
 * with ak_scaler_validate's message). */
int ak_loss_scale_update(ak_backend *b, const ak_scaler_config *cfg, ak_scaler_state *state,
                         const float *found_inf);

#ifdef __cplusplus
}
#endif
#endif
