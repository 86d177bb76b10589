/* update.c: the optimizer step and update wrappers (kernels.h, "optimizer
 * updates and their rounding loss"), and the exact arithmetic both backends
 * perform (kernels/elem/update.h is its code).
 *
 * Notation: every operation below is one fp32 operation rounded to nearest
 * even (no FMA), evaluated in the order written; "double" marks binary64.
 * w is the stored weight (the fp32 master, or with no master the fp16/bf16
 * model weight widened exactly), g the gradient (any dtype, widened
 * exactly), m and v the moments (any dtype, widened exactly; the new values
 * are computed in fp32, used in fp32 for this step and stored rounded to
 * nearest even to their dtype).  The formulas are PyTorch's torch.optim
 * (and its fused Adam/AdamW kernel's order of operations).
 *
 * ak_opt_step_begin (unless found-inf): beta_pow := step == 0 ? beta :
 * beta_pow * beta (double, beta widened exactly), for beta1 and beta2;
 * step += 1.
 *
 * Per call (identical on both backends, from cfg and the state):
 *   bc1 = fp32(1 - beta1_pow)  (double, rounded once)   step_size = lr / bc1
 *   bc2 = fp32(1 - beta2_pow)  (double, rounded once)   bc2_sqrt = sqrt(bc2)
 *   lr_wd = lr * weight_decay
 *
 * Per element, the intended update delta:
 *   SGD:       g1 = wd != 0 ? g + (wd * w) : g
 *              delta = (-lr) * g1
 *   MOMENTUM:  g1 as SGD
 *              buf = state->step == 1 ? g1 : (momentum * m) + ((1 - dampening) * g1);  m := buf
 *              g2 = nesterov ? g1 + (momentum * buf) : buf
 *              delta = (-lr) * g2
 *   ADAM:      g1 as SGD (L2 decay added to the gradient)
 *              m := (beta1 * m) + ((1 - beta1) * g1)
 *              v := (beta2 * v) + (((1 - beta2) * g1) * g1)
 *              denom = (sqrt(v) / bc2_sqrt) + eps
 *              delta = -((step_size * m) / denom)
 *   ADAMW:     as ADAM with g1 = g, and the decoupled decay applied with the
 *              step (one rounding of the weight, not two):
 *              delta = -(((step_size * m) / denom) + (lr_wd * w))   (the decay term when wd != 0)
 *   (1 - dampening), (1 - beta1), (1 - beta2) and -lr are fp32 operations on
 *   the configuration.
 *
 * Then, element i using random index cfg->round.index + i:
 *   with a master (O0-O2):  master := w + delta (fp32, nearest even);
 *                           model  := master cast to fp16/bf16 in cfg->round
 *                           (fpe_f32_to_f16/bf16), when a model is given;
 *   without (O3):           model  := the exact w + delta rounded once to the
 *                           model's format in cfg->round (ak_round_sum).
 *
 * NaNs: a NaN from fp32 arithmetic (m, v, delta, the new master) is
 * replaced by 0x7FC00000 before it is stored or rounded further, since the
 * host and the GPU produce different NaN bits; NaNs read from memory keep
 * their payloads through the emulator's conversions.
 *
 * The rounding loss (ak_update_loss) compares the old stored value with the
 * new one (both exact as doubles) for elements whose old value, delta and
 * new value are all finite: nonzero counts delta != 0, lost those whose
 * stored value did not change (as values: -0 == +0), predicted_lost those
 * with |w| >= 2^p |delta| (p of the stored format), sum_abs_err adds
 * |(new - old) - delta| and sum_abs_intended |delta|, in double.
 * elements counts every element of a call that was not skipped.  A call
 * with no elements does nothing (found-inf is not read, nothing counted).
 */
#include <math.h>

#include "backend.h"

static bool finite_at_least(float x, float lo) { return isfinite(x) && x >= lo; }

/* The configuration's values, as far as the optimizer uses them. */
static int check_config(ak_backend *b, const char *call, const ak_opt_config *cfg)
{
    if (!cfg) return ak_fail(b, AK_EINVAL, call, "cfg is NULL");
    if ((unsigned)cfg->kind > (unsigned)AK_OPT_ADAMW)
        return ak_fail(b, AK_EINVAL, call,
                       "cfg->kind is %d (expected AK_OPT_SGD, AK_OPT_MOMENTUM, AK_OPT_ADAM or "
                       "AK_OPT_ADAMW)",
                       (int)cfg->kind);
    if (!finite_at_least(cfg->lr, 0.0f))
        return ak_fail(b, AK_EINVAL, call, "cfg->lr is %g (expected finite and >= 0)", cfg->lr);
    if (!finite_at_least(cfg->weight_decay, 0.0f))
        return ak_fail(b, AK_EINVAL, call, "cfg->weight_decay is %g (expected finite and >= 0)",
                       cfg->weight_decay);
    if ((unsigned)cfg->round.mode >= FPE_ROUND_COUNT)
        return ak_fail(b, AK_EINVAL, call, "cfg->round.mode is %d (expected an fpe_round)",
                       (int)cfg->round.mode);
    if (cfg->kind == AK_OPT_MOMENTUM) {
        if (!finite_at_least(cfg->momentum, 0.0f))
            return ak_fail(b, AK_EINVAL, call, "cfg->momentum is %g (expected finite and >= 0)",
                           cfg->momentum);
        if (!(cfg->dampening >= 0.0f && cfg->dampening <= 1.0f))
            return ak_fail(b, AK_EINVAL, call, "cfg->dampening is %g (expected in [0, 1])",
                           cfg->dampening);
        if (cfg->nesterov && (cfg->momentum <= 0.0f || cfg->dampening != 0.0f))
            return ak_fail(
                b, AK_EINVAL, call,
                "cfg->nesterov needs cfg->momentum > 0 and cfg->dampening 0 (got %g, %g)",
                cfg->momentum, cfg->dampening);
    }
    if (cfg->kind == AK_OPT_ADAM || cfg->kind == AK_OPT_ADAMW) {
        if (!(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f))
            return ak_fail(b, AK_EINVAL, call, "cfg->beta1 is %g (expected in [0, 1))", cfg->beta1);
        if (!(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f))
            return ak_fail(b, AK_EINVAL, call, "cfg->beta2 is %g (expected in [0, 1))", cfg->beta2);
        if (!(isfinite(cfg->eps) && cfg->eps > 0.0f))
            return ak_fail(b, AK_EINVAL, call, "cfg->eps is %g (expected finite and > 0)",
                           cfg->eps);
    }
    return AK_OK;
}

static int check_optional_ptr(ak_backend *b, const char *call, const char *what, const void *ptr,
                              size_t align)
{
    return ptr ? ak_check_ptr(b, call, what, ptr, align) : AK_OK;
}

int ak_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state,
                      const float *found_inf)
{
    static const char call[] = "ak_opt_step_begin";
    AK_BEGIN(b);
    int rc = check_config(b, call, cfg);
    if (!rc) rc = ak_check_ptr(b, call, "state", state, _Alignof(ak_opt_state));
    if (!rc) rc = check_optional_ptr(b, call, "found_inf", found_inf, _Alignof(float));
    if (rc) return rc;
    return b->ops->opt_step_begin(b, cfg, state, found_inf);
}

static bool given(ak_tensor t) { return t.data != NULL || t.n != 0; }

int ak_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p, const ak_opt_state *state,
              const float *found_inf, ak_update_loss *loss)
{
    static const char call[] = "ak_update";
    AK_BEGIN(b);
    int rc = check_config(b, call, cfg);
    if (!rc) rc = ak_check_ptr(b, call, "p", p, 1);
    if (!rc) rc = ak_check_ptr(b, call, "state", state, _Alignof(ak_opt_state));
    if (!rc) rc = check_optional_ptr(b, call, "found_inf", found_inf, _Alignof(float));
    if (!rc) rc = check_optional_ptr(b, call, "loss", loss, _Alignof(ak_update_loss));
    if (rc) return rc;

    const bool has_master = given(p->master), has_model = given(p->model);
    if (!has_master && !has_model)
        return ak_fail(b, AK_EINVAL, call, "p->master and p->model are both none (one is needed)");
    if (has_master && p->master.dtype != AK_F32)
        return ak_fail(b, AK_EINVAL, call, "p->master is %s (expected fp32)",
                       ak_dtype_name(p->master.dtype));
    if (has_model && p->model.dtype != AK_F16 && p->model.dtype != AK_BF16)
        return ak_fail(b, AK_EINVAL, call, "p->model is %s (expected fp16 or bf16)",
                       ak_dtype_name(p->model.dtype));
    const size_t n = has_master ? p->master.n : p->model.n;
    const bool needs_m = cfg->kind != AK_OPT_SGD;
    const bool needs_v = cfg->kind == AK_OPT_ADAM || cfg->kind == AK_OPT_ADAMW;
    rc = ak_check_optional(b, call, "p->master", p->master, n);
    if (!rc) rc = ak_check_optional(b, call, "p->model", p->model, n);
    if (!rc) rc = ak_check_tensor(b, call, "p->grad", p->grad, n);
    if (!rc && needs_m && !given(p->m))
        rc = ak_fail(b, AK_EINVAL, call, "p->m is none (this optimizer keeps a first moment)");
    if (!rc && needs_v && !given(p->v))
        rc = ak_fail(b, AK_EINVAL, call, "p->v is none (this optimizer keeps a second moment)");
    if (!rc) rc = ak_check_optional(b, call, "p->m", p->m, n);
    if (!rc) rc = ak_check_optional(b, call, "p->v", p->v, n);
    if (rc || n == 0) return rc;
    return b->ops->update(b, cfg, p, state, found_inf, loss);
}
