/* loss_scale.c: the loss-scale policies as a table, their validation, and the
 * public wrapper of the backend operation (the rule itself is
 * ak_loss_scale_step in loss_scale.h).
 *
 * Where each preset's values come from (the frameworks' sources):
 *   pytorch   torch.amp.GradScaler and _amp_update_scale_: 2^16, x2 / x0.5,
 *             growth_interval 2000; the tracker resets on overflow and at
 *             growth; a growth to a non-finite scale is refused; no floor.
 *   apex      apex.amp LossScaler.update_scale: 2^16, *2 / /2, window 2000,
 *             min_loss_scale None (no floor), max_loss_scale 2^24.
 *   mindspore-manager  DynamicLossScaleManager (and its update cell): 2^24,
 *             scale_factor 2, scale_window 2000, max(scale / factor, 1),
 *             growth unchecked; the update is always dropped on overflow.
 *             Stop: update_loss_scale raises "Dynamic loss scale Continuous
 *             overflow" when bad_step > bad_step_max = 1000 (the 1001st
 *             overflow in a row; mindspore/train/loss_scale_manager.py).
 *   mindspore-amp  mindspore.amp.DynamicLossScaler.adjust: counter =
 *             ((counter + 1) mod window) * finite, growth at counter =
 *             window - 1 only if finite, max(1, scale / factor).  Its
 *             arguments have no defaults: 2^16, 2, 50 are the MindSpore AMP
 *             tutorial's.  The caller skips the step on overflow.
 *   paddle    paddle.amp.GradScaler (dygraph AmpScaler._update): 2^16,
 *             incr_ratio 2, decr_ratio 0.5, incr_every_n_steps 2000,
 *             decr_every_n_nan_or_inf 1; no floor and growth unchecked (the
 *             static-graph update_loss_scaling op floors at 1 and refuses
 *             non-finite growth: set --min-scale 1 for that one).
 *   deepspeed DynamicLossScaler.update_scale with DeepSpeed's config
 *             defaults: initial_scale_power 16, loss_scale_window 1000,
 *             hysteresis 2, min_loss_scale 1, consecutive_hysteresis false,
 *             scale / 2 and scale * 2.  Stop: DynamicLossScaler.update_scale
 *             raises "Current loss scale already at minimum" at an overflow
 *             that would back off from min_scale (raise_error_at_min_scale,
 *             True by default; deepspeed/runtime/fp16/loss_scaler.py).
 *   megatron  Megatron's DynamicGradScaler with its argument defaults:
 *             initial 2^32, min 1, growth 2, backoff 0.5, window 1000,
 *             hysteresis 2.
 *   keras     keras.optimizers.LossScaleOptimizer (Keras 3): 2^15,
 *             dynamic_growth_steps 2000, *2 / /2, no floor, growth
 *             unchecked.  (tf.keras 2 floored at 1 and refused non-finite
 *             growth.)
 *   fixed     MindSpore's FixedLossScaleManager defaults: 128,
 *             drop_overflow_update True.
 * Stop: only DeepSpeed and MindSpore's manager end a run that keeps
 * overflowing (their `stop`, above); PyTorch, Apex, MindSpore's amp, Paddle,
 * Megatron and Keras only skip steps, so their rows keep the default
 * (AK_SCALER_STOP_AMPSCOPE: ampscope's own rule, experiments/train_limits.c).
 * The values agree with ../shared/REFERENCES.md and issue 4; the
 * mindspore-amp init and window are the tutorial's, which neither states.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

typedef struct preset {
    const char *name;
    ak_scaler_config cfg;
} preset;

/* A dynamic preset: it drops the update on overflow, as every framework does;
 * its framework stops a run as `stop_` says (DYN: never, so ampscope's rule). */
#define DYN_STOP(stop_, rule_, init, growth, backoff, window_, hyst, min, max, refuse)             \
    {                                                                                              \
        .kind = AK_SCALER_DYNAMIC, .rule = AK_SCALER_RULE_##rule_, .init_scale = init,             \
        .growth_factor = growth, .backoff_factor = backoff, .window = window_, .hysteresis = hyst, \
        .consecutive_hysteresis = false, .min_scale = min, .max_scale = max,                       \
        .refuse_nonfinite_growth = refuse, .drop_overflow_update = true,                           \
        .stop = AK_SCALER_STOP_##stop_                                                             \
    }
#define DYN(...) DYN_STOP(AMPSCOPE, __VA_ARGS__)

static const preset presets[] = {
    {"none",
     {.kind = AK_SCALER_NONE,
      .rule = AK_SCALER_RULE_PYTORCH,
      .init_scale = 1.0f,
      .growth_factor = 2.0f,
      .backoff_factor = 0.5f,
      .window = 2000,
      .hysteresis = 1,
      .max_scale = INFINITY,
      .drop_overflow_update = false}},
    {"fixed",
     {.kind = AK_SCALER_FIXED,
      .rule = AK_SCALER_RULE_PYTORCH,
      .init_scale = 128.0f,
      .growth_factor = 2.0f,
      .backoff_factor = 0.5f,
      .window = 2000,
      .hysteresis = 1,
      .max_scale = INFINITY,
      .drop_overflow_update = true}},
    /* DYN(rule, init, growth, backoff, window, hysteresis, min, max, refuse non-finite);
     * DYN_STOP(how its framework stops a run, the same ...) */
    {"dynamic", DYN(PYTORCH, 0x1p16f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY, true)},
    {"pytorch", DYN(PYTORCH, 0x1p16f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY, true)},
    {"apex", DYN(PYTORCH, 0x1p16f, 2.0f, 0.5f, 2000, 1, 0.0f, 0x1p24f, false)},
    {"mindspore-manager",
     DYN_STOP(MINDSPORE_BAD_STEPS, PYTORCH, 0x1p24f, 2.0f, 0.5f, 2000, 1, 1.0f, INFINITY, false)},
    {"mindspore-amp", DYN(MINDSPORE_AMP, 0x1p16f, 2.0f, 0.5f, 50, 1, 1.0f, INFINITY, true)},
    {"paddle", DYN(PADDLE, 0x1p16f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY, false)},
    {"deepspeed",
     DYN_STOP(DEEPSPEED_MIN, DEEPSPEED, 0x1p16f, 2.0f, 0.5f, 1000, 2, 1.0f, INFINITY, false)},
    {"megatron", DYN(MEGATRON, 0x1p32f, 2.0f, 0.5f, 1000, 2, 1.0f, INFINITY, false)},
    {"keras", DYN(PYTORCH, 0x1p15f, 2.0f, 0.5f, 2000, 1, 0.0f, INFINITY, false)},
};
#undef DYN
#undef DYN_STOP
#define PRESET_COUNT (sizeof presets / sizeof presets[0])

static const char preset_names[] =
    "none, fixed, dynamic, pytorch, apex, mindspore-manager, mindspore-amp, paddle, deepspeed, "
    "megatron, keras";

static const char *const rule_names[AK_SCALER_RULE_COUNT] = {"pytorch", "mindspore-amp",
                                                             "deepspeed", "megatron", "paddle"};

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
                   "--loss-scale: rule %d is not pytorch, mindspore-amp, deepspeed, megatron or "
                   "paddle",
                   (int)cfg->rule);
    if (!finite_positive(cfg->init_scale))
        return say(msg, msg_len, "--init-scale %g: must be finite and > 0", cfg->init_scale);
    if (!(isfinite(cfg->growth_factor) && cfg->growth_factor > 1.0f))
        return say(msg, msg_len, "--growth-factor %g: must be finite and > 1", cfg->growth_factor);
    if (!(cfg->backoff_factor > 0.0f && cfg->backoff_factor < 1.0f))
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
