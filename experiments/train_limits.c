/* train_limits.c: every rule that ends a diverged run (exit 3, the reason
 * in run.json's end_reason), in one place, and what a loss-scale policy
 * does at its limits, as its framework does (train_internal.h).
 *
 * After every step, in this order:
 *   1. a non-finite loss where nothing skips the step: in O0, or with
 *      --loss-scale none in any mode;
 *   2. NaN or infinity in the stored weights after the update (the fp32
 *      masters where the mode keeps them; train_step.c checks them on the
 *      backend);
 *   3. a loss scale grown past fp32's maximum in an fp32 arithmetic (every
 *      later step overflows); a double scale (a Python float: Apex,
 *      DeepSpeed, MindSpore's manager) past it goes on, as its framework
 *      does: its inf fp32 scale overflows and backs off back into range;
 *   4. the framework's own stop, the preset's `stop` (kernels/loss_scale.c):
 *      DeepSpeed raises at an overflow at its minimum scale, MindSpore's
 *      DynamicLossScaleManager after more than 1000 overflows in a row;
 *   5. ampscope's rule: K overflowing (skipped) steps in a row.  Clean steps
 *      never count, whatever the scale: a healthy run sitting at its floor
 *      goes on, as it does in every framework.  K is --diverge-after (0:
 *      never); by default none where the framework stops runs itself (4),
 *      else for a dynamic scaler hysteresis x (the backoffs from the top of
 *      its range to its floor + 1; for a double scale the top is the first
 *      growth past fp32's maximum: top_of_range), so a healthy scaler that
 *      had to back off all the way down never trips it, and at least 100;
 *      for a fixed scale or none, 100. */
#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

/* ampscope's rule's K for a fixed scale or none, and the least default K. */
#define OVERFLOW_LIMIT_FLOOR 100
/* the most overflows the default K's count runs (a backoff factor near 1) */
#define BACKOFF_COUNT_LIMIT 65536

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

/* The top of a dynamic scaler's range, the largest scale it can reach:
 * --max-scale where there is one.  Else, in the fp32 arithmetics, fp32's
 * largest power of two, 2^127 (a growth from it overflows: it is refused, or
 * the run ends, rule 3).  In the double arithmetic (a Python float) the scale
 * can pass fp32's maximum, but only by one growth: a growth needs clean
 * steps, and a step is clean only while the fp32 scale applied,
 * (float)master_scale, is finite.  So its top is the first scale of the
 * growth chain from --init-scale whose fp32 is inf (2^128 for the presets:
 * 2^k and factor 2), found by the rule's own growth; a factor so near 1 that
 * the chain is longer than BACKOFF_COUNT_LIMIT is bounded by fp32's maximum
 * x the factor. */
static double top_of_range(const ak_scaler_config *c)
{
    double top = 0x1p127;
    if (ak_scale_is_finite(c->max_scale)) {
        top = c->max_scale;
    } else if (c->arith == AK_SCALE_ARITH_DOUBLE) {
        ak_scaler_state s;
        memset(&s, 0, sizeof s);
        s.scale = c->init_scale;
        s.master_scale = c->init_scale;
        top = (double)FLT_MAX * c->growth_factor;
        for (int i = 0; i < BACKOFF_COUNT_LIMIT; i++) {
            const double x = ak_scale_moved(c, &s, true);
            if (!ak_scale_is_finite((float)x)) {
                top = x;
                break;
            }
            s.master_scale = x;
            s.scale = (float)x;
        }
    }
    return top < c->min_scale ? c->min_scale : top;
}

/* The backoffs a dynamic scaler takes from the top of its range down to
 * where the fp32 scale applied reaches its floor (--min-scale, or 0 where
 * there is none: a double scale's further halvings below fp32's range
 * change no step), counted by running the rule itself on overflows, so each
 * framework's arithmetic counts. */
static int64_t backoffs_to_floor(const ak_scaler_config *c)
{
    ak_scaler_state s;
    if (ak_scaler_init(c, &s) != 0) return 0;
    const double top = top_of_range(c);
    s.master_scale = top; /* an fp32 number for the fp32 arithmetics */
    s.scale = (float)top; /* inf for a double top past fp32's maximum */
    for (int i = 0; i < BACKOFF_COUNT_LIMIT && s.scale > c->min_scale; i++) {
        const double before = s.master_scale;
        const bool backs_off = s.hysteresis_left <= 1;
        ak_loss_scale_step(c, &s, true);
        if (backs_off && s.master_scale == before) break; /* rounding keeps it: no floor below */
    }
    return s.backoffs;
}

/* ampscope's rule's K (0: the rule is off), as the header says. */
static int64_t overflow_limit(const train_options *o)
{
    const ak_scaler_config *c = &o->scaler;
    if (o->diverge_after >= 0) return o->diverge_after;
    if (c->kind != AK_SCALER_DYNAMIC) return OVERFLOW_LIMIT_FLOOR;
    if (c->stop != AK_SCALER_STOP_AMPSCOPE) return 0;
    const int64_t k = (int64_t)c->hysteresis * (backoffs_to_floor(c) + 1);
    return k > OVERFLOW_LIMIT_FLOOR ? k : OVERFLOW_LIMIT_FLOOR;
}

/* run.json's divergence_rule: which stop applies to overflowing steps. */
static void record_divergence_rule(const train_options *o, rec_run *into)
{
    const ak_scaler_config *c = &o->scaler;
    const int64_t k = overflow_limit(o);
    char framework[256] = "", ours[256];
    if (c->kind == AK_SCALER_DYNAMIC && c->stop == AK_SCALER_STOP_DEEPSPEED_MIN)
        snprintf(framework, sizeof framework,
                 "DeepSpeed's: an overflow at the minimum loss scale %g ends the run (exit 3), as "
                 "DynamicLossScaler's raise_error_at_min_scale does",
                 (double)c->min_scale);
    else if (c->kind == AK_SCALER_DYNAMIC && c->stop == AK_SCALER_STOP_MINDSPORE_BAD_STEPS)
        snprintf(framework, sizeof framework,
                 "MindSpore's: more than 1000 overflowing steps in a row end the run (exit 3), as "
                 "DynamicLossScaleManager's bad_step_max does");
    if (k == 0)
        snprintf(ours, sizeof ours, "%s", o->diverge_after == 0 ? "--diverge-after 0" : "");
    else if (o->diverge_after > 0)
        snprintf(ours, sizeof ours,
                 "ampscope's: %lld overflowing steps in a row end the run (exit 3; "
                 "--diverge-after)",
                 (long long)k);
    else if (c->kind == AK_SCALER_DYNAMIC)
        snprintf(ours, sizeof ours,
                 "ampscope's: %lld overflowing steps in a row end the run (exit 3): at least 100 "
                 "and hysteresis %d x (%lld backoffs from %g%s to %g, + 1)",
                 (long long)k, (int)c->hysteresis, (long long)backoffs_to_floor(c), top_of_range(c),
                 top_of_range(c) > FLT_MAX
                     ? " (the double scale's first growth past fp32's maximum)"
                     : "",
                 (double)c->min_scale);
    else
        snprintf(ours, sizeof ours,
                 "ampscope's: %lld overflowing steps in a row end the run (exit 3)", (long long)k);
    char text[600];
    if (framework[0] && k > 0)
        snprintf(text, sizeof text, "%s; and %s", framework, ours);
    else if (framework[0])
        snprintf(text, sizeof text, "%s", framework);
    else if (k > 0)
        snprintf(text, sizeof text, "%s", ours);
    else
        snprintf(text, sizeof text, "none: %s turns ampscope's rule off", ours);
    rec_run_set_string(into, "divergence_rule", text);
}

/* run.json's notes: scaler_source (the preset's framework file), and for a
 * dynamic scaler scaler_arithmetic (its number type), scaler_floor and
 * scaler_nonfinite_growth: what this policy does when every step overflows
 * and when its scale would grow past fp32's maximum, as its framework does;
 * divergence_rule for every policy. */
void train_record_scaler_notes(const train_options *o, rec_run *into)
{
    const ak_scaler_config *c = &o->scaler;
    const char *source = ak_scaler_preset_source(o->scaler_name);
    if (source) rec_run_set_string(into, "scaler_source", source);
    record_divergence_rule(o, into);
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
    rec_run_set_string(into, "scaler_arithmetic", text);
    if (c->min_scale > 0)
        snprintf(text, sizeof text, "%g: backoffs stop there", (double)c->min_scale);
    else
        snprintf(text, sizeof text,
                 "none: backoffs can take the scale to 0 (fp32 halvings from 2^16 reach it at the "
                 "166th), where every step overflows");
    rec_run_set_string(into, "scaler_floor", text);
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
                 unrefused_growth(o->scaler_name));
    rec_run_set_string(into, "scaler_nonfinite_growth", text);
}

/* What the stored weights are, for the message: the fp32 masters where
 * the mode keeps a low-precision copy beside them, else the weights. */
static const char *stored_weights(const train_state *r, char *buf, size_t len)
{
    const model *m = r->m;
    for (int k = 0; k < m->n_params; k++)
        if (m->params[k].w32.data && m->params[k].wlow.data) return "fp32 master weights";
    for (int k = 0; k < m->n_params; k++)
        if (!m->params[k].w32.data) {
            snprintf(buf, len, "%s weights (%s keeps no fp32 master)",
                     ak_dtype_name(m->params[k].wlow.dtype), prec_mode_name(r->o->prec.mode));
            return buf;
        }
    return "fp32 weights";
}

bool train_numerical_stop(train_state *r, int64_t step, float loss, char *msg, size_t len)
{
    const train_options *o = r->o;
    const ak_scaler_config *c = &o->scaler;
    const ak_scaler_state *was = &r->before, *now = &r->after;
    const bool overflow = now->overflows > was->overflows;
    /* 1. nothing skips this step: its NaN reaches the weights */
    if (!ak_scale_is_finite(loss) && (o->prec.mode == PREC_O0 || c->kind == AK_SCALER_NONE)) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: the loss is %g at step %lld in %s%s (try a "
                "smaller --lr)",
                (double)loss, (long long)step, prec_mode_name(o->prec.mode),
                c->kind == AK_SCALER_NONE ? " with no loss scaling" : "");
        return true;
    }
    /* 2. */
    if (r->weights_nonfinite) {
        char what[96];
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: the %s hold a NaN or an infinity after the update of step %lld",
                stored_weights(r, what, sizeof what), (long long)step);
        return true;
    }
    /* 3. the framework's own number: a double scale past fp32's maximum
     * (an inf fp32 scale) backs off and comes back; only the fp32 ones end */
    if (!ak_scale_is_finite_d(now->master_scale)) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: at step %lld the loss scale %g grew past fp32's maximum (to %g): %s",
                (long long)step, (double)was->scale, (double)now->scale,
                unrefused_growth(o->scaler_name));
        return true;
    }
    /* 4. DeepSpeed's update_scale: an overflow that would back off
     * (hysteresis spent) from cur_scale == min_scale raises */
    if (c->kind == AK_SCALER_DYNAMIC && c->stop == AK_SCALER_STOP_DEEPSPEED_MIN && overflow &&
        was->hysteresis_left <= 1 && was->master_scale == (double)c->min_scale) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: DeepSpeed's rule: step %lld overflowed at the minimum loss scale %g; "
                "DeepSpeed raises 'Current loss scale already at minimum - cannot decrease scale "
                "anymore' here (raise_error_at_min_scale)",
                (long long)step, (double)c->min_scale);
        return true;
    }
    /* MindSpore's update_loss_scale: bad_step > bad_step_max (1000) raises */
    if (c->kind == AK_SCALER_DYNAMIC && c->stop == AK_SCALER_STOP_MINDSPORE_BAD_STEPS &&
        now->overflows_in_a_row > 1000) {
        ut_fail(msg, len, TRAIN_DIVERGED,
                "diverged: MindSpore's rule: %lld overflowing steps in a row, steps %lld to %lld; "
                "DynamicLossScaleManager raises 'Dynamic loss scale Continuous overflow' after "
                "more than 1000 (bad_step_max)",
                (long long)now->overflows_in_a_row, (long long)(step + 1 - now->overflows_in_a_row),
                (long long)step);
        return true;
    }
    /* 5. */
    if (!overflow) return false;
    const int64_t k = overflow_limit(o);
    if (k == 0 || now->overflows_in_a_row < k) return false;
    char scale[64];
    if (c->kind == AK_SCALER_NONE)
        snprintf(scale, sizeof scale, "with no loss scaling");
    else
        snprintf(scale, sizeof scale, "the last at the %s loss scale %g",
                 c->kind == AK_SCALER_FIXED ? "fixed" : "dynamic", (double)was->scale);
    ut_fail(msg, len, TRAIN_DIVERGED,
            "diverged: ampscope's rule: %lld overflowing steps in a row, steps %lld to %lld (%s; "
            "--diverge-after %lld%s)",
            (long long)now->overflows_in_a_row, (long long)(step + 1 - now->overflows_in_a_row),
            (long long)step, scale, (long long)k, o->diverge_after < 0 ? ", the default" : "");
    return true;
}
