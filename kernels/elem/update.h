/* elem/update.h: one element of an optimizer update, host and device.
 *
 * kernels/cpu/update.c loops over ak_update_elem and kernels/cuda/update.cu
 * runs it in a grid-stride loop, so both backends execute the same fp32
 * operations in the same order (the build forbids contraction into FMA and
 * keeps IEEE division and square root) and agree bit for bit.  The
 * operation sequence itself is written out in kernels/update.c.
 *
 * Values move between storage and fp32 through the emulator's conversions
 * (integer code), never through a hardware conversion, and every NaN that
 * fp32 arithmetic produces is replaced by one canonical NaN before it is
 * stored or rounded: the host's FPU keeps NaN payloads and the GPU's does
 * not, and without this the two backends would store different NaNs.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_UPDATE_H
#define AMPSCOPE_KERNELS_ELEM_UPDATE_H

#include <math.h>

#include "cast.h"
#include "kernels.h"
#include "round.h"

/* The quiet NaN with sign clear and no payload: fp32 0x7FC00000. */
#define AK_CANONICAL_NAN_F32 0x7FC00000u

FPE_INLINE float ak_canonical_nan(float x)
{
    return x == x ? x : ak_f32_from_bits(AK_CANONICAL_NAN_F32);
}
FPE_INLINE bool ak_is_finite(double x) { return x - x == 0.0; }

/* An fp16/bf16 pattern as an fp32 value, exactly. */
FPE_INLINE float ak_widen_f32(ak_dtype dt, uint32_t bits)
{
    return ak_f32_from_bits(ak_widen16_k((fpe_format_id)dt, bits));
}

/* Element i of t as an fp32 value, exactly. */
FPE_INLINE float ak_load_f32(ak_tensor t, size_t i)
{
    if (t.dtype == AK_F32) return ((const float *)t.data)[i];
    return ak_widen_f32(t.dtype, ((const uint16_t *)t.data)[i]);
}

/* Stores the fp32 value x (no NaN but the canonical one) as element i of t,
 * rounded to nearest even. */
FPE_INLINE void ak_store_f32_rne(ak_tensor t, size_t i, float x)
{
    if (t.dtype == AK_F32) {
        ((float *)t.data)[i] = x;
        return;
    }
    fpe_env env = fpe_env_default();
    ((uint16_t *)t.data)[i] =
        (uint16_t)fpe_convert_k(FPE_FMT_F32, (fpe_format_id)t.dtype, &env, ak_f32_bits(x));
}

/* The exact binary64 value of an fp32 value, NaNs built from their bits. */
FPE_INLINE double ak_f32_to_f64(float x)
{
    return x == x ? (double)x : ak_elem_value(FPE_FMT_F32, ak_f32_bits(x));
}

/* ak_opt_step_begin's work, once found-inf has been checked: step += 1
 * and the powers beta^step advance by one product in binary64 (beta^1 at
 * the first step), the same on both backends. */
FPE_INLINE void ak_opt_step_advance(const ak_opt_config *cfg, ak_opt_state *state)
{
    const bool first = state->step == 0;
    state->beta1_pow = first ? (double)cfg->beta1 : state->beta1_pow * (double)cfg->beta1;
    state->beta2_pow = first ? (double)cfg->beta2 : state->beta2_pow * (double)cfg->beta2;
    state->step += 1;
}

/* What every element of one ak_update call shares: the configuration and
 * the step's scalars, each computed once, identically on both backends. */
typedef struct ak_opt_scalars {
    int kind;        /* ak_optimizer */
    bool decay;      /* weight_decay != 0 */
    bool first_step; /* state->step == 1: the momentum buffer starts as the gradient */
    bool nesterov;
    float neg_lr; /* -lr */
    float wd;     /* weight_decay */
    float lr_wd;  /* lr * weight_decay (AdamW's decoupled decay) */
    float momentum;
    float one_minus_damp; /* 1 - dampening */
    float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
    float step_size; /* lr / bias_correction1 */
    float bc2_sqrt;  /* sqrt(bias_correction2) */
    fpe_round mode;  /* cfg->round */
    uint64_t seed;
    uint32_t stream;
    uint64_t index;
    double two_p; /* 2^p, p the precision of the stored weights: 24 (master), 11, 8 (O3) */
} ak_opt_scalars;

/* The bias corrections 1 - beta^step are computed in binary64 from the
 * state's powers and rounded once to fp32; the rest is fp32. */
FPE_INLINE ak_opt_scalars ak_opt_scalars_of(const ak_opt_config *cfg, const ak_param *p,
                                            int64_t step, double beta1_pow, double beta2_pow)
{
    ak_opt_scalars s;
    s.kind = (int)cfg->kind;
    s.decay = cfg->weight_decay != 0.0f;
    s.first_step = step == 1;
    s.nesterov = cfg->nesterov;
    s.neg_lr = -cfg->lr;
    s.wd = cfg->weight_decay;
    s.lr_wd = cfg->lr * cfg->weight_decay;
    s.momentum = cfg->momentum;
    s.one_minus_damp = 1.0f - cfg->dampening;
    s.beta1 = cfg->beta1;
    s.one_minus_beta1 = 1.0f - cfg->beta1;
    s.beta2 = cfg->beta2;
    s.one_minus_beta2 = 1.0f - cfg->beta2;
    s.eps = cfg->eps;
    const float bc1 = (float)(1.0 - beta1_pow), bc2 = (float)(1.0 - beta2_pow);
    s.step_size = cfg->lr / bc1;
    s.bc2_sqrt = sqrtf(bc2);
    s.mode = cfg->round.mode;
    s.seed = cfg->round.seed;
    s.stream = cfg->round.stream;
    s.index = cfg->round.index;
    s.two_p = p->master.data ? 0x1p24 : p->model.dtype == AK_F16 ? 0x1p11 : 0x1p8;
    return s;
}

/* The rounding loss of one call, before it is added to an ak_update_loss. */
typedef struct ak_update_acc {
    uint64_t nonzero, lost, predicted_lost;
    double sum_abs_err, sum_abs_intended;
} ak_update_acc;

/* The intended update of element i (w its stored weight, g its gradient),
 * with the moments m and v updated in place; kind is s->kind (a separate
 * argument so that a loop calling this with a constant is specialized). */
FPE_INLINE float ak_opt_delta_k(int kind, const ak_opt_scalars *s, const ak_param *p, size_t i,
                                float w, float g)
{
    if (kind == AK_OPT_SGD) {
        const float g1 = s->decay ? g + s->wd * w : g;
        return s->neg_lr * g1;
    }
    if (kind == AK_OPT_MOMENTUM) {
        const float g1 = s->decay ? g + s->wd * w : g;
        const float buf = ak_canonical_nan(
            s->first_step ? g1 : s->momentum * ak_load_f32(p->m, i) + s->one_minus_damp * g1);
        ak_store_f32_rne(p->m, i, buf);
        const float g2 = s->nesterov ? g1 + s->momentum * buf : buf;
        return s->neg_lr * g2;
    }
    /* Adam, AdamW */
    const float g1 = (kind == AK_OPT_ADAM && s->decay) ? g + s->wd * w : g;
    const float m = ak_canonical_nan(s->beta1 * ak_load_f32(p->m, i) + s->one_minus_beta1 * g1);
    const float v =
        ak_canonical_nan(s->beta2 * ak_load_f32(p->v, i) + (s->one_minus_beta2 * g1) * g1);
    ak_store_f32_rne(p->m, i, m);
    ak_store_f32_rne(p->v, i, v);
    const float denom = sqrtf(v) / s->bc2_sqrt + s->eps;
    float u = (s->step_size * m) / denom;
    if (kind == AK_OPT_ADAMW && s->decay) u = u + s->lr_wd * w;
    return -u;
}

/* Adds one element's rounding loss to acc: old the stored weight before,
 * intended the update, now the stored weight after (as values).  Only
 * finite old, intended and new values are measured. */
FPE_INLINE void ak_update_account(ak_update_acc *acc, double two_p, double old, double intended,
                                  double now)
{
    if (!ak_is_finite(old) || !ak_is_finite(intended) || !ak_is_finite(now)) return;
    acc->sum_abs_intended += fabs(intended);
    if (intended == 0.0) return;
    acc->nonzero++;
    acc->lost += now == old;
    acc->predicted_lost += fabs(old) >= fabs(intended) * two_p; /* exact: a power of two */
    acc->sum_abs_err += fabs((now - old) - intended);
}

/* Updates element i: the master (rounded to nearest even) and the model
 * copy cast from it in cfg->round, or (no master) the model weights by one
 * rounding of w + delta in cfg->round.  With acc, adds the element's
 * rounding loss. */
FPE_INLINE void ak_update_elem(const ak_opt_scalars *s, const ak_param *p, size_t i,
                               ak_update_acc *acc)
{
    const bool o3 = p->master.data == NULL;
    const float w = ak_load_f32(o3 ? p->model : p->master, i);
    const float g = ak_load_f32(p->grad, i);
    const float delta = ak_canonical_nan(ak_opt_delta_k(s->kind, s, p, i, w, g));
    fpe_env env = ak_elem_env(s->mode, s->seed, s->stream, s->index + i);
    float updated;
    if (!o3) {
        updated = ak_canonical_nan(w + delta);
        ((float *)p->master.data)[i] = updated;
        if (p->model.data)
            ((uint16_t *)p->model.data)[i] = (uint16_t)fpe_convert_k(
                FPE_FMT_F32, (fpe_format_id)p->model.dtype, &env, ak_f32_bits(updated));
    } else {
        const fpe_format_id f = (fpe_format_id)p->model.dtype;
        const uint32_t bits = ak_round_sum(f, &env, ak_f32_to_f64(w), ak_f32_to_f64(delta));
        ((uint16_t *)p->model.data)[i] = (uint16_t)bits;
        updated = ak_widen_f32(p->model.dtype, bits);
    }
    if (acc) ak_update_account(acc, s->two_p, w, delta, updated);
}

#endif
