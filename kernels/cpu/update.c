/* cpu/update.c: the optimizer step and update on the host (the arithmetic
 * is spelled out in kernels/update.c).
 *
 * The work goes in chunks of AK_UPDATE_CHUNK elements, as the GPU gathers
 * the rounding loss per thread and block.  Parameters with fp32 masters (O0, O1, O2) take a fast
 * path that gives the same bits as the element loop of elem/update.h (which the cuda backend runs):
 * the master update is fp32 arithmetic in a loop the compiler specializes per optimizer, and the
 * 16-bit model copy, if any, is the emulator's array conversion fpe_chop_f32_to_u16, whose element
 * i is fpe_convert_k with sr_index env.sr_index + i, as in the element code.  Without masters (O3)
 * in the six deterministic modes, w + delta is rounded to odd at binary32's 24 bits in a vector
 * loop and that is rounded to the model's format by the same array conversion (model_chunk);
 * in the stochastic modes, and for the elements that loop leaves, ak_update_elem's exact sum
 * (ak_round_sum) runs. */
#include "backend.h"
#include "elem/update.h"

enum { AK_UPDATE_CHUNK = 1024 };

int ak_cpu_opt_step_begin(ak_backend *b, const ak_opt_config *cfg, ak_opt_state *state,
                          const float *found_inf)
{
    (void)b;
    if (found_inf && *found_inf != 0.0f) return AK_OK;
    ak_opt_step_advance(cfg, state);
    return AK_OK;
}

/* Elements start .. start+len-1 of the gradient as fp32 values. */
static const float *grad_chunk(const ak_param *p, size_t start, size_t len, float *buf)
{
    if (p->grad.dtype == AK_F32) return (const float *)p->grad.data + start;
    ak_cpu_widen16((fpe_format_id)p->grad.dtype, (const uint16_t *)p->grad.data + start, len, buf);
    return buf;
}

/* One chunk with fp32 masters: the masters in place, then the model copy. */
FPE_INLINE void master_chunk(int kind, const ak_opt_scalars *s, const ak_param *p, size_t start,
                             size_t len, ak_update_acc *acc)
{
    float gbuf[AK_UPDATE_CHUNK];
    const float *g = grad_chunk(p, start, len, gbuf);
    float *master = (float *)p->master.data + start;
    for (size_t i = 0; i < len; i++) {
        const float w = master[i];
        const float delta = ak_canonical_nan(ak_opt_delta_k(kind, s, p, start + i, w, g[i]));
        const float updated = ak_canonical_nan(w + delta);
        master[i] = updated;
        if (acc) ak_update_account(acc, s->two_p, w, delta, updated);
    }
    if (p->model.data) {
        fpe_env env = ak_elem_env(s->mode, s->seed, s->stream, s->index + start);
        (void)fpe_chop_f32_to_u16(&env, (fpe_format_id)p->model.dtype, master,
                                  (uint16_t *)p->model.data + start, len, NULL);
    }
}

/* w + d (fp32 values) rounded to odd at 24 bits, as binary32 bits, where that is exact to do
 * in binary32 arithmetic; *left set where it is not (a NaN or infinite operand, a zero sum whose
 * sign the mode decides, or a magnitude from 2^126 up, where the sum or TwoSum's terms could
 * overflow).  TwoSum gives s + e = w + d exactly (s = w + d rounded to nearest, which the host
 * does); when e != 0 the truncation of w + d to 24 bits is s, or s one step toward zero when e
 * points toward zero, and setting its last bit makes the round-to-odd value.  Sums below 2^-125
 * are exact in binary32 (both operands are multiples of 2^-149), so e == 0 there.
 *
 * Rounding that value to p <= 22 bits (fp16 11, bf16 8) in any deterministic mode gives the
 * rounding of w + d itself (Boldo and Melquiond, IEEE TC 57(4), 2008): when inexact, it and
 * w + d lie strictly between the same two consecutive 24-bit values with an even last bit, and
 * every p-bit value, every midpoint of two of them and the overflow threshold is such a value. */
FPE_INLINE uint32_t sum_odd_f32(float w, float d, uint32_t *left)
{
    const float s = w + d;
    const float dv = s - w, wv = s - dv;
    const float e = (w - wv) + (d - dv);
    const uint32_t us = ak_f32_bits(s), ue = ak_f32_bits(e);
    const uint32_t inexact = (ue & 0x7FFFFFFFu) != 0;         /* e may be -0 when exact */
    const uint32_t toward_zero = inexact & ((ue ^ us) >> 31); /* e's sign is not s's */
    const uint32_t big = 0x7E800000u;                         /* |x| >= 2^126, infinities, NaNs */
    const uint32_t aw = ak_f32_bits(w) & 0x7FFFFFFFu, ad = ak_f32_bits(d) & 0x7FFFFFFFu;
    const uint32_t as = us & 0x7FFFFFFFu;
    /* branch-free: each comparison as a 0/1 word */
    *left =
        (uint32_t)(aw >= big) | (uint32_t)(ad >= big) | (uint32_t)(as >= big) | (uint32_t)(as == 0);
    return (us - toward_zero) | inexact;
}

/* One chunk without masters (O3) in a deterministic mode: the deltas, their sums rounded to odd,
 * the array conversion of those, then the exact sum for the elements sum_odd_f32 left. */
FPE_INLINE void model_chunk(int kind, const ak_opt_scalars *s, const ak_param *p, size_t start,
                            size_t len, ak_update_acc *acc)
{
    float gbuf[AK_UPDATE_CHUNK], w[AK_UPDATE_CHUNK], delta[AK_UPDATE_CHUNK], odd[AK_UPDATE_CHUNK];
    uint32_t left[AK_UPDATE_CHUNK];
    const float *g = grad_chunk(p, start, len, gbuf);
    const fpe_format_id f = (fpe_format_id)p->model.dtype;
    uint16_t *model = (uint16_t *)p->model.data + start;
    ak_cpu_widen16(f, model, len, w);
    for (size_t i = 0; i < len; i++)
        delta[i] = ak_canonical_nan(ak_opt_delta_k(kind, s, p, start + i, w[i], g[i]));
    uint32_t any_left = 0;
    for (size_t i = 0; i < len; i++) {
        odd[i] = ak_f32_from_bits(sum_odd_f32(w[i], delta[i], &left[i]));
        any_left |= left[i];
    }
    fpe_env env = ak_elem_env(s->mode, s->seed, s->stream, s->index + start);
    (void)fpe_chop_f32_to_u16(&env, f, odd, model, len, NULL);
    for (size_t i = 0; any_left && i < len; i++) {
        if (!left[i]) continue;
        fpe_env e = ak_elem_env(s->mode, s->seed, s->stream, s->index + start + i);
        model[i] = (uint16_t)ak_round_sum(f, &e, ak_f32_to_f64(w[i]), ak_f32_to_f64(delta[i]));
    }
    if (acc)
        for (size_t i = 0; i < len; i++)
            ak_update_account(acc, s->two_p, w[i], delta[i],
                              ak_widen_f32(p->model.dtype, model[i]));
}

static void elem_chunk(const ak_opt_scalars *s, const ak_param *p, size_t start, size_t len,
                       ak_update_acc *acc)
{
    for (size_t i = start; i < start + len; i++)
        ak_update_elem(s, p, i, acc);
}

/* The chunk routine for s and p: kind a constant in each fast one. */
typedef void (*chunk_fn)(const ak_opt_scalars *, const ak_param *, size_t, size_t, ak_update_acc *);
#define AK_CHUNK_KINDS(X)                                                                          \
    X(master, AK_OPT_SGD, sgd)                                                                     \
    X(master, AK_OPT_MOMENTUM, momentum)                                                           \
    X(master, AK_OPT_ADAM, adam)                                                                   \
    X(master, AK_OPT_ADAMW, adamw)                                                                 \
    X(model, AK_OPT_SGD, sgd)                                                                      \
    X(model, AK_OPT_MOMENTUM, momentum)                                                            \
    X(model, AK_OPT_ADAM, adam)                                                                    \
    X(model, AK_OPT_ADAMW, adamw)
#define AK_DEFINE_CHUNK(path, kind, name)                                                          \
    static void path##_##name(const ak_opt_scalars *s, const ak_param *p, size_t start,            \
                              size_t len, ak_update_acc *acc)                                      \
    {                                                                                              \
        path##_chunk(kind, s, p, start, len, acc);                                                 \
    }
AK_CHUNK_KINDS(AK_DEFINE_CHUNK)
#undef AK_DEFINE_CHUNK

static chunk_fn chunk_for(const ak_opt_scalars *s, const ak_param *p)
{
    static const chunk_fn master[] = {master_sgd, master_momentum, master_adam, master_adamw};
    const bool known = s->kind >= AK_OPT_SGD && s->kind <= AK_OPT_ADAMW;
    static const chunk_fn model[] = {model_sgd, model_momentum, model_adam, model_adamw};
    if (known && p->master.data) return master[s->kind - AK_OPT_SGD];
    const bool sixteen = p->model.dtype == AK_F16 || p->model.dtype == AK_BF16;
    if (known && !p->master.data && sixteen && s->mode < FPE_SR_PROP)
        return model[s->kind - AK_OPT_SGD];
    return elem_chunk;
}

int ak_cpu_update(ak_backend *b, const ak_opt_config *cfg, const ak_param *p,
                  const ak_opt_state *state, const float *found_inf, ak_update_loss *loss)
{
    (void)b;
    if (found_inf && *found_inf != 0.0f) {
        if (loss) loss->skipped += 1;
        return AK_OK;
    }
    const ak_opt_scalars s =
        ak_opt_scalars_of(cfg, p, state->step, state->beta1_pow, state->beta2_pow);
    const size_t n = p->master.data ? p->master.n : p->model.n;
    const chunk_fn run = chunk_for(&s, p);
    ak_update_acc acc = {0, 0, 0, 0.0, 0.0};
    for (size_t start = 0; start < n; start += AK_UPDATE_CHUNK) {
        const size_t len = n - start > AK_UPDATE_CHUNK ? AK_UPDATE_CHUNK : n - start;
        ak_update_acc part = {0, 0, 0, 0.0, 0.0};
        run(&s, p, start, len, loss ? &part : NULL);
        acc.nonzero += part.nonzero;
        acc.lost += part.lost;
        acc.predicted_lost += part.predicted_lost;
        acc.sum_abs_err += part.sum_abs_err;
        acc.sum_abs_intended += part.sum_abs_intended;
    }
    if (!loss) return AK_OK;
    loss->elements += n;
    loss->nonzero += acc.nonzero;
    loss->lost += acc.lost;
    loss->predicted_lost += acc.predicted_lost;
    loss->sum_abs_err += acc.sum_abs_err;
    loss->sum_abs_intended += acc.sum_abs_intended;
    return AK_OK;
}
