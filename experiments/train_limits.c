/* train_limits.c: what a loss-scale policy does at its limits, as its
 * framework does: the notes run.json keeps (its floor, a growth past fp32's
 * maximum) and the checks after every step that end a diverged run
 * (exit 3) (train_internal.h). */
#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"

#include <stdio.h>
#include <string.h>

/* Where a preset's framework stands when its scale grows past fp32's
 * maximum without refusing it (see ../shared/REFERENCES.md). */
static const char *unrefused_growth(const char *preset)
{
    static const struct {
        const char *preset, *note;
    } notes[] = {
        {"paddle", "Paddle's dygraph GradScaler multiplies its fp32 scale unchecked: it is inf, "
                   "and every later step overflows"},
        {"megatron", "Megatron's DynamicGradScaler multiplies its fp32 scale tensor unchecked: it "
                     "is inf, and every later step overflows"},
        {"keras", "Keras 3's LossScaleOptimizer doubles its fp32 dynamic_scale unchecked: it is "
                  "inf, and every later step overflows"},
    };
    for (size_t i = 0; preset && i < sizeof notes / sizeof notes[0]; i++)
        if (strcmp(preset, notes[i].preset) == 0) return notes[i].note;
    return "--refuse-nonfinite-growth is off: the scale is inf, and every later step overflows";
}

/* run.json's scaler_floor and scaler_nonfinite_growth: what this policy
 * does when every step overflows and when its scale would grow past fp32's
 * maximum, as its framework does. */
void train_record_scaler_notes(train_state *r)
{
    const ak_scaler_config *c = &r->o->scaler;
    const char *source = ak_scaler_preset_source(r->o->scaler_name);
    if (source) rec_run_set_string(r->record, "scaler_source", source);
    if (c->kind != AK_SCALER_DYNAMIC) return;
    char text[512];
    static const char *const arith[AK_SCALE_ARITH_COUNT] = {
        "fp32: the fp32 scale times the fp32 factor, one rounding",
        "fp32-double-factor: the fp32 scale times the double factor, rounded once to fp32 "
        "(PyTorch's _amp_update_scale_)",
        "double: the scale is a Python float (double), which may pass fp32's maximum and come "
        "back; the fp32 scale applied is (float)scale, inf beyond fp32's range"};
    snprintf(text, sizeof text, "%s; a backoff %s", arith[c->arith],
             c->backoff_divides ? "divides by the one scale factor"
                                : "multiplies by backoff_factor");
    rec_run_set_string(r->record, "scaler_arithmetic", text);
    if (c->min_scale > 0)
        snprintf(text, sizeof text, "%g: backoffs stop there; %s", (double)c->min_scale,
                 c->rule == AK_SCALER_RULE_DEEPSPEED
                     ? "an overflow at it ends the run, as DeepSpeed's raise_error_at_min_scale "
                       "does (exit 3)"
                     : "the run ends after --diverge-after steps in a row there (exit 3)");
    else
        snprintf(text, sizeof text,
                 "none: backoffs take the scale to 0 (fp32 halvings from 2^16 reach 0 at the "
                 "166th); the run ends after --diverge-after steps in a row at 0 (exit 3)");
    rec_run_set_string(r->record, "scaler_floor", text);
    if (c->refuse_nonfinite_growth)
        snprintf(text, sizeof text,
                 "refused: a growth to a non-finite scale keeps the scale (PyTorch's GradScaler, "
                 "MindSpore's DynamicLossScaler)");
    else if (ak_scale_is_finite(c->max_scale))
        snprintf(text, sizeof text, "capped: min(scale x %g, --max-scale %g)",
                 (double)c->growth_factor, (double)c->max_scale);
    else if (c->arith == AK_SCALE_ARITH_DOUBLE)
        snprintf(text, sizeof text,
                 "taken: the scale is a Python float (double), as in %s: past fp32's maximum "
                 "the fp32 scale applied is inf, every step overflows and backs off until the "
                 "scale is back in fp32's range; the run goes on",
                 source ? source : "the framework");
    else
        snprintf(text, sizeof text,
                 "taken: the fp32 scale becomes inf (%s); the run ends there (exit 3)",
                 unrefused_growth(r->o->scaler_name));
    rec_run_set_string(r->record, "scaler_nonfinite_growth", text);
}

/* After a step: whether the scaler's state ends the run (msg says why):
 * a scale that grew to inf (every later step would overflow and be
 * skipped), DeepSpeed's error on an overflow at its minimum scale, a
 * dynamic scale at its floor (or at 0) for --diverge-after steps, and for
 * a fixed scale or none, --diverge-after overflowing steps in a row. */
bool train_numerical_stop(train_state *r, int64_t step, char *msg, size_t len)
{
    const train_options *o = r->o;
    const ak_scaler_config *c = &o->scaler;
    const ak_scaler_state *was = &r->before, *now = &r->after;
    const bool overflow = now->overflows > was->overflows;
    /* the framework's own number: a double scale past fp32's maximum comes back */
    if (!ak_scale_is_finite_d(now->master_scale)) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: at step %lld the loss scale %g grew past fp32's maximum (to %g): %s",
                (long long)step, (double)was->scale, (double)now->scale,
                unrefused_growth(o->scaler_name));
        return true;
    }
    if (c->kind == AK_SCALER_DYNAMIC && c->rule == AK_SCALER_RULE_DEEPSPEED && overflow &&
        was->hysteresis_left <= 1 && was->master_scale == (double)c->min_scale) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: step %lld overflowed at the minimum loss scale %g; DeepSpeed raises "
                "'Current loss scale already at minimum - cannot decrease scale anymore' here",
                (long long)step, (double)c->min_scale);
        return true;
    }
    if (o->diverge_after <= 0) return false;
    if (c->kind == AK_SCALER_DYNAMIC && now->steps_at_min >= o->diverge_after) {
        if (c->min_scale > 0)
            ut_fail(msg, len, TRAIN_DIVERGED,
                    "diverged: the loss scale stayed at --min-scale %g for %lld steps in a row "
                    "(step %lld)",
                    (double)c->min_scale, (long long)now->steps_at_min, (long long)step);
        else
            ut_fail(msg, len, TRAIN_DIVERGED,
                    "diverged: the loss scale fell to 0 (the policy has no floor) and stayed "
                    "there for %lld steps in a row (step %lld)",
                    (long long)now->steps_at_min, (long long)step);
        return true;
    }
    if (c->kind != AK_SCALER_DYNAMIC && now->overflows_in_a_row >= o->diverge_after) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: the gradients overflowed on %lld steps in a row %s %g (step %lld)",
                (long long)now->overflows_in_a_row,
                c->kind == AK_SCALER_FIXED ? "at the fixed loss scale" : "with no loss scaling:",
                (double)now->scale, (long long)step);
        return true;
    }
    return false;
}
