/* loss_scale.c: the loss-scale policies as a table, their validation, and the
 * public wrapper of the backend operation (the rule itself is
 * ak_loss_scale_step in loss_scale.h).
 *
 * Each preset row carries its source: the framework file and class its rule,
 * number type and values come from (ak_scaler_preset_source; run.json keeps
 * it).  In short:
 *   pytorch   torch/amp/grad_scaler.py GradScaler and _amp_update_scale_
 *             (aten/src/ATen/native/cuda/AmpKernels.cu, cpu/AmpGradScalerKernels.cpp):
 *             2^16, x2 / x0.5, growth_interval 2000; fp32 scale times the
 *             double factor rounded to fp32; growth to inf refused; no floor.
 *   apex      apex/amp/scaler.py LossScaler.update_scale: 2^16, _loss_scale
 *             * 2. and / 2. in a Python float, window 2000, no floor,
 *             max_loss_scale 2^24.
 *   mindspore-manager  mindspore/train/loss_scale_manager.py
 *             DynamicLossScaleManager.update_loss_scale: 2^24, a Python
 *             float times scale_factor 2 or times decrease_ratio = 1 /
 *             scale_factor, max(., 1), scale_window 2000, growth unchecked.
 *             Stop: update_loss_scale raises "Dynamic loss scale Continuous
 *             overflow" when bad_step > bad_step_max = 1000 (the 1001st
 *             overflow in a row).
 *   mindspore-amp  mindspore/amp.py DynamicLossScaler.adjust: an fp32
 *             Parameter, x factor / factor, max(1, .), growth only if finite,
 *             counter = ((counter + 1) mod window) * finite.  Its arguments
 *             have no defaults: 2^16, 2, 50 are the MindSpore tutorial's
 *             (docs tutorials/source_en/beginner/mixed_precision.md,
 *             DynamicLossScaler(scale_value=2**16, scale_factor=2,
 *             scale_window=50)).
 *   paddle    python/paddle/amp/grad_scaler.py AmpScaler._update (dygraph):
 *             fp32 tensor x ratio, 2^16, 2, 0.5, incr_every_n_steps 2000,
 *             decr_every_n_nan_or_inf 1; no floor, growth unchecked.
 *   paddle-static  python/paddle/static/amp/decorator.py decorate() defaults
 *             (2^15, incr_every_n_steps 1000, decr_every_n_nan_or_inf 2,
 *             incr_ratio 2, decr_ratio 0.8) with the update_loss_scaling op
 *             (paddle/phi/kernels/impl/amp_kernel_impl.h Update): fp32 x
 *             ratio, floor 1, a growth to inf keeps the scale.
 *   deepspeed deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler with
 *             runtime/config.py's values when the fp16 section has a
 *             dynamic-loss-scale key: 2^16, loss_scale_window 1000,
 *             hysteresis 2, min_loss_scale 1; a Python float, cur_scale /
 *             scale_factor and * scale_factor, growth unchecked.
 *             Stop: update_scale raises "Current loss scale already at
 *             minimum" at an overflow that would back off from min_scale
 *             (raise_error_at_min_scale, True by default).
 *   deepspeed-zero  the same DynamicLossScaler built by ZeRO (runtime/zero/
 *             stage_1_and_2.py, stage3.py: CreateLossScaler with
 *             dynamic_loss_args None) when the fp16 section has no
 *             dynamic-loss-scale key: its constructor defaults, init_scale
 *             2^32, delayed_shift 1 (no hysteresis), window 1000, min 1.
 *             Stop: as deepspeed (raise_error_at_min_scale defaults to True).
 *   deepspeed-fp16-optimizer  deepspeed/runtime/fp16/fused_optimizer.py
 *             FP16_Optimizer._update_scale: its own counter (stable_interval:
 *             the first growth after window + 1 clean steps), no hysteresis,
 *             scale_factor 2 (a Python float, divided), 2^16
 *             (initial_scale_power 16), window 1000, min 1.  It never
 *             raises: max(cur_scale / scale_factor, min_loss_scale).
 *   megatron  megatron/core/optimizer/grad_scaler.py DynamicGradScaler with
 *             Megatron's argument defaults: 2^32, min 1, growth 2, backoff
 *             0.5, window 1000, hysteresis 2; fp32 tensors, growth unchecked.
 *   keras     keras/src/optimizers/loss_scale_optimizer.py (Keras 3): an fp32
 *             dynamic_scale, * 2.0 and / 2.0, 2^15, dynamic_growth_steps 2000,
 *             no floor, growth unchecked.
 *   tf-keras2 tf.keras 2's keras/mixed_precision/loss_scale_optimizer.py
 *             _DynamicLossScaleState.update: fp32, / multiplier 2 floored at
 *             1, growth assigned only if finite (_assign_if_finite), 2^15,
 *             growth_steps 2000.
 *   fixed     MindSpore's FixedLossScaleManager defaults: 128,
 *             drop_overflow_update True.
 *   dynamic   PyTorch's values in ampscope's own fp32 arithmetic.
 * Stop: only DeepSpeed's DynamicLossScaler (deepspeed, deepspeed-zero) and
 * MindSpore's manager end a run that keeps overflowing (their `stop`, above);
 * PyTorch, Apex, MindSpore's amp, Paddle (both), DeepSpeed's FP16_Optimizer,
 * Megatron and Keras (both) only skip steps, so their rows keep the default
 * (AK_SCALER_STOP_AMPSCOPE: ampscope's own rule, experiments/train_limits.c).
 * The values agree with ../shared/REFERENCES.md and issue 4.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

typedef struct preset {
    const char *name;
    ak_scaler_config cfg;
    const char *source;
} preset;

/* A dynamic preset: it drops the update on overflow, as every framework does;
 * its framework stops a run as `stop_` says (DYN: never, so ampscope's rule). */
#define DYN_STOP(stop_, rule_, init, growth, backoff, window_, hyst, min, max, refuse, arith_,     \
                 divides)                                                                          \
    {                                                                                              \
        .kind = AK_SCALER_DYNAMIC, .rule = AK_SCALER_RULE_##rule_, .init_scale = init,             \
        .growth_factor = growth, .backoff_factor = backoff, .window = window_, .hysteresis = hyst, \
        .consecutive_hysteresis = false, .min_scale = min, .max_scale = max,                       \
        .refuse_nonfinite_growth = refuse, .drop_overflow_update = true,                           \
        .arith = AK_SCALE_ARITH_##arith_, .backoff_divides = divides,                              \
        .stop = AK_SCALER_STOP_##stop_                                                             \
    }
#define DYN(...) DYN_STOP(AMPSCOPE, __VA_ARGS__)

static const preset presets[] = {
    {"none",
     {.kind = AK_SCALER_NONE,
      .rule = AK_SCALER_RULE_PYTORCH,
      .init_scale = 1.0f,
      .growth_factor = 2.0,
      .backoff_factor = 0.5,
      .window = 2000,
      .hysteresis = 1,
      .max_scale = INFINITY,
      .drop_overflow_update = false},
     "no loss scaling"},
    {"fixed",
     {.kind = AK_SCALER_FIXED,
      .rule = AK_SCALER_RULE_PYTORCH,
      .init_scale = 128.0f,
      .growth_factor = 2.0,
      .backoff_factor = 0.5,
      .window = 2000,
      .hysteresis = 1,
      .max_scale = INFINITY,
      .drop_overflow_update = true},
     "mindspore/train/loss_scale_manager.py FixedLossScaleManager() defaults"},
    /* DYN(rule, init, growth, backoff, window, hysteresis, min, max, refuse non-finite,
     *     arithmetic, backoff divides by the growth factor);
     * DYN_STOP(how its framework stops a run, the same ...) */
    {"dynamic", DYN(PYTORCH, 0x1p16f, 2.0, 0.5, 2000, 1, 0.0f, INFINITY, true, FP32, false),
     "PyTorch's GradScaler values in ampscope's fp32 arithmetic"},
    {"pytorch",
     DYN(PYTORCH, 0x1p16f, 2.0, 0.5, 2000, 1, 0.0f, INFINITY, true, FP32_DOUBLE_FACTOR, false),
     "torch/amp/grad_scaler.py GradScaler() and _amp_update_scale_ "
     "(aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, cuda/AmpKernels.cu)"},
    {"apex", DYN(PYTORCH, 0x1p16f, 2.0, 0.5, 2000, 1, 0.0f, 0x1p24f, false, DOUBLE, true),
     "apex/amp/scaler.py LossScaler.update_scale"},
    {"mindspore-manager",
     DYN_STOP(MINDSPORE_BAD_STEPS, PYTORCH, 0x1p24f, 2.0, 0.5, 2000, 1, 1.0f, INFINITY, false,
              DOUBLE, false),
     "mindspore/train/loss_scale_manager.py DynamicLossScaleManager.update_loss_scale"},
    {"mindspore-amp",
     DYN(MINDSPORE_AMP, 0x1p16f, 2.0, 0.5, 50, 1, 1.0f, INFINITY, true, FP32, true),
     "mindspore/amp.py DynamicLossScaler.adjust; it has no defaults: 2^16, 2, 50 are the "
     "MindSpore tutorial's (tutorials/source_en/beginner/mixed_precision.md)"},
    {"paddle", DYN(PADDLE, 0x1p16f, 2.0, 0.5, 2000, 1, 0.0f, INFINITY, false, FP32, false),
     "python/paddle/amp/grad_scaler.py GradScaler() and AmpScaler._update (dygraph)"},
    {"paddle-static", DYN(PADDLE, 0x1p15f, 2.0, 0.8, 1000, 2, 1.0f, INFINITY, true, FP32, false),
     "python/paddle/static/amp/decorator.py decorate() defaults and the update_loss_scaling op "
     "(paddle/phi/kernels/impl/amp_kernel_impl.h Update)"},
    {"deepspeed",
     DYN_STOP(DEEPSPEED_MIN, DEEPSPEED, 0x1p16f, 2.0, 0.5, 1000, 2, 1.0f, INFINITY, false, DOUBLE,
              true),
     "deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale with "
     "deepspeed/runtime/config.py's fp16 defaults (a dynamic-loss-scale key given)"},
    {"deepspeed-zero",
     DYN_STOP(DEEPSPEED_MIN, DEEPSPEED, 0x1p32f, 2.0, 0.5, 1000, 1, 1.0f, INFINITY, false, DOUBLE,
              true),
     "deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler() defaults, as ZeRO "
     "(deepspeed/runtime/zero/stage_1_and_2.py) builds it with no dynamic-loss-scale key"},
    {"deepspeed-fp16-optimizer",
     DYN(DEEPSPEED_FP16_OPT, 0x1p16f, 2.0, 0.5, 1000, 1, 1.0f, INFINITY, false, DOUBLE, true),
     "deepspeed/runtime/fp16/fused_optimizer.py FP16_Optimizer._update_scale"},
    {"megatron", DYN(MEGATRON, 0x1p32f, 2.0, 0.5, 1000, 2, 1.0f, INFINITY, false, FP32, false),
     "megatron/core/optimizer/grad_scaler.py DynamicGradScaler with Megatron's argument "
     "defaults"},
    {"keras", DYN(PYTORCH, 0x1p15f, 2.0, 0.5, 2000, 1, 0.0f, INFINITY, false, FP32, true),
     "keras/src/optimizers/loss_scale_optimizer.py LossScaleOptimizer (Keras 3)"},
    {"tf-keras2", DYN(PYTORCH, 0x1p15f, 2.0, 0.5, 2000, 1, 1.0f, INFINITY, true, FP32, true),
     "tf.keras 2: keras/mixed_precision/loss_scale_optimizer.py _DynamicLossScaleState.update"},
};
#undef DYN
#undef DYN_STOP
#define PRESET_COUNT (sizeof presets / sizeof presets[0])

static const char preset_names[] =
    "none, fixed, dynamic, pytorch, apex, mindspore-manager, mindspore-amp, paddle, "
    "paddle-static, deepspeed, deepspeed-zero, deepspeed-fp16-optimizer, megatron, keras, "
    "tf-keras2";

static const char *const rule_names[AK_SCALER_RULE_COUNT] = {
    "pytorch", "mindspore-amp", "deepspeed", "megatron", "paddle", "deepspeed-fp16-optimizer"};
static const char *const arith_names[AK_SCALE_ARITH_COUNT] = {"fp32", "fp32-double-factor",
                                                              "double"};

static int say(char *msg, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Writes the message (when there is a buffer) and returns AK_EINVAL. */
static int say(char *msg, size_t len, const char *fmt, ...)
{
    if (msg && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return AK_EINVAL;
}

const char *ak_scaler_preset_names(void) { return preset_names; }

const char *ak_scaler_preset_source(const char *name)
{
    for (size_t i = 0; name && i < PRESET_COUNT; i++)
        if (strcmp(name, presets[i].name) == 0) return presets[i].source;
    return NULL;
}

int ak_scaler_preset(const char *name, ak_scaler_config *cfg, char *msg, size_t msg_len)
{
    if (msg && msg_len > 0) msg[0] = '\0';
    if (!cfg) return say(msg, msg_len, "ak_scaler_preset: cfg is NULL");
    if (!name)
        return say(msg, msg_len, "--loss-scale: no policy named (expected %s)", preset_names);
    for (size_t i = 0; i < PRESET_COUNT; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            *cfg = presets[i].cfg;
            return AK_OK;
        }
    }
    return say(msg, msg_len, "--loss-scale %s: unknown policy (expected %s)", name, preset_names);
}

const char *ak_scaler_kind_name(ak_scaler_kind kind)
{
    switch (kind) {
    case AK_SCALER_NONE: return "none";
    case AK_SCALER_FIXED: return "fixed";
    case AK_SCALER_DYNAMIC: return "dynamic";
    }
    return "?";
}

const char *ak_scaler_rule_name(ak_scaler_rule rule)
{
    return (unsigned)rule < AK_SCALER_RULE_COUNT ? rule_names[rule] : "?";
}

const char *ak_scale_arith_name(ak_scale_arith arith)
{
    return (unsigned)arith < AK_SCALE_ARITH_COUNT ? arith_names[arith] : "?";
}

int ak_scaler_rule_from_name(const char *name, ak_scaler_rule *rule)
{
    if (!name || !rule) return AK_EINVAL;
    for (int i = 0; i < AK_SCALER_RULE_COUNT; i++) {
        if (strcmp(name, rule_names[i]) == 0) {
            *rule = (ak_scaler_rule)i;
            return AK_OK;
        }
    }
    return AK_EINVAL;
}

static bool finite_positive(float x) { return isfinite(x) && x > 0.0f; }

int ak_scaler_validate(const ak_scaler_config *cfg, char *msg, size_t msg_len)
{
    if (msg && msg_len > 0) msg[0] = '\0';
    if (!cfg) return say(msg, msg_len, "ak_scaler_validate: cfg is NULL");
    switch (cfg->kind) {
    case AK_SCALER_NONE: return AK_OK;
    case AK_SCALER_FIXED:
        if (!finite_positive(cfg->init_scale))
            return say(msg, msg_len, "--scale %g: must be finite and > 0", cfg->init_scale);
        return AK_OK;
    case AK_SCALER_DYNAMIC: break;
    default:
        return say(msg, msg_len, "--loss-scale: kind %d is not none, fixed or dynamic",
                   (int)cfg->kind);
    }
    if ((unsigned)cfg->rule >= AK_SCALER_RULE_COUNT)
        return say(msg, msg_len,
                   "--loss-scale: rule %d is not pytorch, mindspore-amp, deepspeed, megatron, "
                   "paddle or deepspeed-fp16-optimizer",
                   (int)cfg->rule);
    if ((unsigned)cfg->arith >= AK_SCALE_ARITH_COUNT)
        return say(msg, msg_len,
                   "--loss-scale: arithmetic %d is not fp32, fp32-double-factor or double",
                   (int)cfg->arith);
    if (!finite_positive(cfg->init_scale))
        return say(msg, msg_len, "--init-scale %g: must be finite and > 0", cfg->init_scale);
    /* the fp32 arithmetic multiplies by the factors rounded to fp32: they must stay in range */
    const bool fp32 = cfg->arith == AK_SCALE_ARITH_FP32;
    if (!(isfinite(cfg->growth_factor) && cfg->growth_factor > 1.0 &&
          (!fp32 || (isfinite((float)cfg->growth_factor) && (float)cfg->growth_factor > 1.0f))))
        return say(msg, msg_len, "--growth-factor %g: must be finite and > 1", cfg->growth_factor);
    if (!(cfg->backoff_factor > 0.0 && cfg->backoff_factor < 1.0 &&
          (!fp32 || ((float)cfg->backoff_factor > 0.0f && (float)cfg->backoff_factor < 1.0f))))
        return say(msg, msg_len, "--backoff-factor %g: must be in (0, 1)", cfg->backoff_factor);
    if (cfg->window < 1)
        return say(msg, msg_len, "--scale-window %ld: must be >= 1", (long)cfg->window);
    if (cfg->hysteresis < 1)
        return say(msg, msg_len, "--hysteresis %ld: must be >= 1", (long)cfg->hysteresis);
    if ((unsigned)cfg->stop >= AK_SCALER_STOP_COUNT)
        return say(msg, msg_len, "--loss-scale: stop rule %d is unknown", (int)cfg->stop);
    const bool has_hysteresis = cfg->rule == AK_SCALER_RULE_DEEPSPEED ||
                                cfg->rule == AK_SCALER_RULE_MEGATRON ||
                                cfg->rule == AK_SCALER_RULE_PADDLE;
    if (cfg->hysteresis > 1 && !has_hysteresis)
        return say(msg, msg_len,
                   "--hysteresis %ld: the %s rule has none (the deepspeed, megatron and paddle "
                   "rules do)",
                   (long)cfg->hysteresis, rule_names[cfg->rule]);
    if (cfg->consecutive_hysteresis && cfg->rule != AK_SCALER_RULE_DEEPSPEED)
        return say(msg, msg_len,
                   "--consecutive-hysteresis: only the deepspeed rule has it (this policy uses "
                   "the %s rule)",
                   rule_names[cfg->rule]);
    if (!(isfinite(cfg->min_scale) && cfg->min_scale >= 0.0f))
        return say(msg, msg_len, "--min-scale %g: must be finite and >= 0 (0: no floor)",
                   cfg->min_scale);
    if (!(cfg->max_scale > 0.0f))
        return say(msg, msg_len, "--max-scale %g: must be > 0 (inf: no cap)", cfg->max_scale);
    if (cfg->min_scale > cfg->init_scale)
        return say(msg, msg_len, "--min-scale %g: above --init-scale %g", cfg->min_scale,
                   cfg->init_scale);
    if (cfg->init_scale > cfg->max_scale)
        return say(msg, msg_len, "--init-scale %g: above --max-scale %g", cfg->init_scale,
                   cfg->max_scale);
    return AK_OK;
}

int ak_scaler_init(const ak_scaler_config *cfg, ak_scaler_state *state)
{
    if (!state || ak_scaler_validate(cfg, NULL, 0) != AK_OK) return AK_EINVAL;
    memset(state, 0, sizeof *state);
    state->scale = cfg->kind == AK_SCALER_NONE ? 1.0f : cfg->init_scale;
    state->master_scale = state->scale;
    state->inv_scale = 1.0f / state->scale;
    state->hysteresis_left = cfg->kind == AK_SCALER_DYNAMIC ? cfg->hysteresis : 1;
    return AK_OK;
}

int ak_loss_scale_update(ak_backend *b, const ak_scaler_config *cfg, ak_scaler_state *state,
                         const float *found_inf)
{
    static const char call[] = "ak_loss_scale_update";
    AK_BEGIN(b);
    if (!cfg) return ak_fail(b, AK_EINVAL, call, "cfg is NULL");
    char why[256];
    if (ak_scaler_validate(cfg, why, sizeof why) != AK_OK)
        return ak_fail(b, AK_EINVAL, call, "%s", why);
    int rc = ak_check_ptr(b, call, "state", state, _Alignof(ak_scaler_state));
    if (!rc) rc = ak_check_ptr(b, call, "found_inf", found_inf, _Alignof(float));
    if (rc) return rc;
    return b->ops->loss_scale_update(b, cfg, state, found_inf);
}
