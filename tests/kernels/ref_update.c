/* ref_update.c: the optimizer tests' shared pieces (see ref_update.h). */
#include "ref_update.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const ref_part_names[REF_PARTS] = {"master", "model", "grad", "m", "v"};

ref_layout ref_lay(bool master, int model, int grad, int m, int v)
{
    ref_layout L = {master, model, grad, m, v};
    return L;
}

int ref_part_dtype(const ref_layout *L, int k)
{
    switch (k) {
    case REF_MASTER: return L->master ? AK_F32 : REF_NONE;
    case REF_MODEL: return L->model;
    case REF_GRAD: return L->grad;
    case REF_M: return L->m;
    default: return L->v;
    }
}

ak_opt_config ref_config(ak_optimizer kind, float lr, float weight_decay)
{
    ak_opt_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.lr = lr;
    c.weight_decay = weight_decay;
    c.momentum = 0.9f;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.round = ak_rounding_rne();
    return c;
}

void ref_rig_open(ref_rig *r, ak_backend *b, const ref_layout *L, size_t n)
{
    memset(r, 0, sizeof *r);
    r->b = b;
    ak_tensor *t[REF_PARTS] = {&r->p.master, &r->p.model, &r->p.grad, &r->p.m, &r->p.v};
    for (int k = 0; k < REF_PARTS; k++) {
        const int dt = ref_part_dtype(L, k);
        if (dt == REF_NONE)
            r->buf[k].t = ak_tensor_none();
        else
            r->buf[k] = kt_buf_alloc(b, n, (ak_dtype)dt);
        *t[k] = r->buf[k].t;
    }
    r->state = kt_dev_alloc(b, sizeof *r->state);
    r->loss = kt_dev_alloc(b, sizeof *r->loss);
    r->found_inf = kt_dev_alloc(b, sizeof(float));
}

void ref_rig_close(ref_rig *r)
{
    for (int k = 0; k < REF_PARTS; k++)
        if (r->buf[k].base) {
            ck_assert_msg(kt_buf_guards_ok(&r->buf[k]), "%s: %s's guard bytes",
                          ak_backend_name(r->b), ref_part_names[k]);
            kt_buf_free(&r->buf[k]);
        }
    kt_dev_free(r->b, r->state);
    kt_dev_free(r->b, r->loss);
    kt_dev_free(r->b, r->found_inf);
}

void ref_check_loss(const ak_update_loss *got, const ak_update_loss *want, const char *got_name,
                    const char *want_name)
{
    ck_assert_uint_eq(got->elements, want->elements);
    ck_assert_uint_eq(got->nonzero, want->nonzero);
    ck_assert_uint_eq(got->lost, want->lost);
    ck_assert_uint_eq(got->predicted_lost, want->predicted_lost);
    ck_assert_uint_eq(got->skipped, want->skipped);
    ck_assert_msg(
        kt_agree_within(got->sum_abs_err, want->sum_abs_err, 1e-12 * fabs(want->sum_abs_err)),
        "sum_abs_err: %s %.17g, %s %.17g", got_name, got->sum_abs_err, want_name,
        want->sum_abs_err);
    ck_assert_msg(kt_agree_within(got->sum_abs_intended, want->sum_abs_intended,
                                  1e-12 * fabs(want->sum_abs_intended)),
                  "sum_abs_intended: %s %.17g, %s %.17g", got_name, got->sum_abs_intended,
                  want_name, want->sum_abs_intended);
}

/* ==== the cpu tests' reference optimizer and driver (test_update_*.c) ==== */
/* ---- host values ------------------------------------------------------------ */
/* An element's value in fp32, exactly (the emulator's widening). */
float ref_widen(int dt, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    if (dt == AK_F16) return kt_f32_of(fpe_f16_to_f32(&env, (uint16_t)bits));
    if (dt == AK_BF16) return kt_f32_of(fpe_bf16_to_f32(&env, (uint16_t)bits));
    return kt_f32_of(bits);
}

/* fp32 -> dt in env's mode (the emulator's conversion). */
static uint32_t narrow(int dt, fpe_env *env, float x)
{
    if (dt == AK_F16) return fpe_f32_to_f16(env, kt_f32_bits(x));
    if (dt == AK_BF16) return fpe_f32_to_bf16(env, kt_f32_bits(x));
    return kt_f32_bits(x);
}
uint32_t ref_narrow_rne(int dt, float x)
{
    fpe_env env = fpe_env_default();
    return narrow(dt, &env, x);
}

/* kernels/update.c: NaNs of fp32 arithmetic become 0x7FC00000. */
static float canon(float x) { return isnan(x) ? kt_f32_of(0x7FC00000u) : x; }

/* ---- the reference optimizer ---------------------------------------------------- */
void ref_begin(const ak_opt_config *c, ref_state *s)
{
    s->b1p = s->step == 0 ? (double)c->beta1 : s->b1p * c->beta1;
    s->b2p = s->step == 0 ? (double)c->beta2 : s->b2p * c->beta2;
    s->step++;
}

/* PyTorch's update of one element: returns the intended delta and updates
 * *m, *v in fp32. */
static float ref_delta(const ak_opt_config *c, const ref_state *s, float w, float g, float *m,
                       float *v)
{
    const float lr = c->lr, wd = c->weight_decay;
    switch (c->kind) {
    case AK_OPT_SGD:
        if (wd != 0) g = g + wd * w; /* grad.add(param, alpha=wd) */
        return -lr * g;              /* param.add_(grad, alpha=-lr) */
    case AK_OPT_MOMENTUM: {
        if (wd != 0) g = g + wd * w;
        float buf = s->step == 1 ? g : c->momentum * *m + (1.0f - c->dampening) * g;
        *m = canon(buf);
        g = c->nesterov ? g + c->momentum * *m : *m;
        return -lr * g;
    }
    default: { /* Adam, AdamW */
        if (c->kind == AK_OPT_ADAM && wd != 0) g = g + wd * w;
        *m = canon(c->beta1 * *m + (1.0f - c->beta1) * g);
        *v = canon(c->beta2 * *v + (1.0f - c->beta2) * g * g);
        const float bc1 = (float)(1.0 - s->b1p), bc2 = (float)(1.0 - s->b2p);
        const float step_size = lr / bc1;
        const float denom = sqrtf(*v) / sqrtf(bc2) + c->eps;
        float d = step_size * *m / denom;
        if (c->kind == AK_OPT_ADAMW && wd != 0) d = d + lr * wd * w;
        return -d;
    }
    }
}

/* ---- layouts and host mirrors ------------------------------------------------------ */
static uint32_t *alloc_bits(size_t n) { return calloc(n ? n : 1, sizeof(uint32_t)); }

static ref_mirror mirror_alloc(size_t n)
{
    ref_mirror h = {n, alloc_bits(n), alloc_bits(n), alloc_bits(n), alloc_bits(n), alloc_bits(n)};
    return h;
}
/* The mirror of part k (REF_MASTER ... REF_V). */
static uint32_t *mirror_part(const ref_mirror *h, int k)
{
    uint32_t *const parts[REF_PARTS] = {h->master, h->model, h->grad, h->m, h->v};
    return parts[k];
}

static void mirror_free(ref_mirror *h)
{
    free(h->master);
    free(h->model);
    free(h->grad);
    free(h->m);
    free(h->v);
}

/* Adds the element's loss as kernels.h defines it. */
static void ref_loss_add(ak_update_loss *L, int p, double old, double intended, double now)
{
    if (!isfinite(old) || !isfinite(intended) || !isfinite(now)) return;
    L->sum_abs_intended += fabs(intended);
    if (intended == 0) return;
    L->nonzero++;
    if (now == old) L->lost++;
    if (fabs(old) >= ldexp(fabs(intended), p)) L->predicted_lost++;
    L->sum_abs_err += fabs((now - old) - intended);
}

/* w + d rounded to dt (w nonzero finite, its bits w_bits) when d lies
 * wholly below w's last bit, so the exact sum lies strictly between two
 * neighbours of dt: w and the next one toward d.  Each mode picks one by
 * its definition; for the stochastic modes frac32 is the distance from the
 * lower magnitude in 2^-32 units of their spacing, truncated. */
static uint32_t tiny_update(int dt, const fpe_env *env, float w, uint32_t w_bits, float d)
{
    const uint32_t sign = w_bits & 0x8000u, mag = w_bits & 0x7FFFu;
    const bool outward = (signbit(d) != 0) == (signbit(w) != 0); /* d moves w away from zero */
    const uint32_t lo = outward ? mag : mag - 1, hi = lo + 1;    /* magnitudes around w + d */
    const double vlo = fabs(ref_widen(dt, lo));
    /* their spacing, a power of two; past the largest finite value the
     * format continues with the top binade's spacing */
    const uint32_t inf = dt == AK_F16 ? 0x7C00u : 0x7F80u;
    const double q = hi < inf ? fabs(ref_widen(dt, hi)) - vlo : vlo - fabs(ref_widen(dt, lo - 1));
    const double t = ldexp(fabs(d) / q, 32); /* exact */
    const double frac32 = outward ? floor(t) : ldexp(1.0, 32) - ceil(t);
    const uint32_t rnd = fpe_random_bits(env->sr_seed, env->sr_stream, env->sr_index);
    const bool negative = sign != 0;
    bool up;
    switch (env->round) {
    case FPE_RNE:
    case FPE_RNA: up = frac32 > ldexp(1.0, 31); break; /* never a tie: |d| is tiny */
    case FPE_RZ: up = false; break;
    case FPE_RD: up = negative; break;
    case FPE_RU: up = !negative; break;
    case FPE_RO: up = !(lo & 1); break;
    case FPE_SR_PROP: up = rnd < frac32; break;
    default: up = rnd >> 31; break; /* stoch_equal: inexact */
    }
    return sign | (up ? hi : lo);
}

/* The O3 weight (old bits w_bits, value w) after adding d: the exact sum
 * rounded by the emulator when binary64 holds it, tiny_update when w
 * dominates, and when d dominates (special values only, nearest even) d
 * nudged by a stand-in for w of w's sign that keeps the sum exact: both
 * lie strictly between the same neighbours of d's 24 bits.  NaNs,
 * infinities and exact zeros as IEEE 754 and the x86 specialization say
 * (the first NaN quieted; inf - inf the default NaN). */
static uint32_t o3_sum(int dt, fpe_env *env, float w, float d, uint32_t w_bits)
{
    if (isnan(w) || isnan(d)) return narrow(dt, env, isnan(w) ? w : d);
    if (isinf(w) && isinf(d) && signbit(w) != signbit(d)) return dt == AK_F16 ? 0xFE00 : 0xFFC0;
    double sum = (double)w + (double)d;
    if (sum == 0) { /* IEEE 754: x + (-x) is +0, -0 rounding down; (-0) + (-0) = -0 */
        const bool neg = signbit(w) == signbit(d) ? signbit(w) != 0 : env->round == FPE_RD;
        return neg ? 0x8000u : 0; /* fp16 and bf16 alike */
    }
    if (isfinite(sum) && (sum - w != d || sum - d != w)) {
        if (fabsf(w) > fabsf(d)) return tiny_update(dt, env, w, w_bits, d);
        ck_assert_msg(env->round == FPE_RNE, "test data: w %a + d %a is not exact in binary64", w,
                      d);
        sum = (double)d + copysign(ldexp(1.0, ilogb(d) - 30), w);
    }
    return dt == AK_F16 ? fpe_f64_to_f16(env, sum) : fpe_f64_to_bf16(env, sum);
}

/* One ak_update of every element of h. */
void ref_update_step(const ak_opt_config *c, const ref_state *s, const ref_layout *L, ref_mirror *h,
                     ak_update_loss *loss)
{
    const int p = L->master ? 24 : L->model == AK_F16 ? 11 : 8;
    for (size_t i = 0; i < h->n; i++) {
        const float w = L->master ? kt_f32_of(h->master[i]) : ref_widen(L->model, h->model[i]);
        const float g = ref_widen(L->grad, h->grad[i]);
        float m = L->m != REF_NONE ? ref_widen(L->m, h->m[i]) : 0,
              v = L->v != REF_NONE ? ref_widen(L->v, h->v[i]) : 0;
        const float d = canon(ref_delta(c, s, w, g, &m, &v));
        if (c->kind != AK_OPT_SGD) h->m[i] = ref_narrow_rne(L->m, m);
        if (c->kind == AK_OPT_ADAM || c->kind == AK_OPT_ADAMW) h->v[i] = ref_narrow_rne(L->v, v);
        fpe_env env = kt_env_of(&c->round, i);
        float now;
        if (L->master) {
            now = canon(w + d);
            h->master[i] = kt_f32_bits(now);
            if (L->model != REF_NONE) h->model[i] = narrow(L->model, &env, now);
        } else {
            h->model[i] = o3_sum(L->model, &env, w, d, h->model[i]);
            now = ref_widen(L->model, h->model[i]);
        }
        if (loss) ref_loss_add(loss, p, w, d, now);
    }
}

/* ---- backend tensors ------------------------------------------------------------------- */
void ref_mirror_put(ref_rig *d, const ref_mirror *h)
{
    for (int k = 0; k < REF_PARTS; k++)
        kt_buf_put(&d->buf[k], mirror_part(h, k));
}

/* Compares the backend's tensors with the mirror; returns the mismatches. */
size_t ref_mirror_compare(ref_rig *d, const ref_mirror *h)
{
    size_t bad = 0;
    for (int k = 0; k < REF_PARTS; k++) {
        kt_buf *buf = &d->buf[k];
        if (!buf->base) continue;
        uint32_t *got = alloc_bits(buf->t.n);
        kt_buf_get(buf, got);
        bad += kt_count_mismatches(ref_part_names[k], got, mirror_part(h, k), buf->t.n, 4);
        free(got);
        ck_assert_msg(kt_buf_guards_ok(buf), "%s: guard bytes overwritten", ref_part_names[k]);
    }
    return bad;
}

/* ---- data -------------------------------------------------------------------------------- */
/* A value of training size: sign, 24 random bits, magnitude 2^lo .. 2^hi;
 * a few exact zeros of either sign. */
static float typical(ts_rng *r, int lo, int hi)
{
    if (ts_below(r, 32) == 0) return ts_below(r, 2) ? 0.0f : -0.0f;
    const float x =
        (float)ldexp(1.0 + ts_uniform(r), lo + (int)ts_below(r, (uint32_t)(hi - lo + 1)));
    return ts_below(r, 2) ? -x : x;
}

static void fill(ts_rng *r, int data, int dt, uint32_t *bits, size_t n, int lo, int hi)
{
    if (dt == REF_NONE) return;
    if (data == REF_DATA_SPECIAL) {
        kt_fill_bits(r, (ak_dtype)dt, bits, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        bits[i] = ref_narrow_rne(dt, typical(r, lo, hi));
}

/* Weights, moments (nonnegative v) and the first gradient. */
void ref_fill_all(ts_rng *r, int data, const ref_layout *L, ref_mirror *h)
{
    fill(r, data, L->master ? AK_F32 : REF_NONE, h->master, h->n, -10, 3);
    if (L->master && L->model != REF_NONE) /* the model copy as the master's cast */
        for (size_t i = 0; i < h->n; i++)
            h->model[i] = ref_narrow_rne(L->model, kt_f32_of(h->master[i]));
    else
        fill(r, data, L->model, h->model, h->n, -10, 3);
    fill(r, data, L->grad, h->grad, h->n, -12, 2);
    fill(r, data, L->m, h->m, h->n, -14, -2);
    fill(r, data, L->v, h->v, h->n, -20, -4);
    /* as in training, v >= m^2 (a nonzero m with v = 0 would make an update of lr m / eps) */
    if (data == REF_DATA_TYPICAL && L->v != REF_NONE)
        for (size_t i = 0; i < h->n; i++) {
            const float m = ref_widen(L->m, h->m[i]);
            h->v[i] = ref_narrow_rne(L->v, fabsf(ref_widen(L->v, h->v[i])) + m * m);
        }
}

/* ---- the driver ------------------------------------------------------------------------------ */
ref_param ref_param_open(const ref_layout *L, size_t n)
{
    ref_param x;
    x.h = mirror_alloc(n);
    ref_rig_open(&x.d, kt_open_cpu(), L, n);
    return x;
}

void ref_param_close(ref_param *x)
{
    ak_backend *b = x->d.b;
    ref_rig_close(&x->d);
    ak_close(b);
    mirror_free(&x->h);
}

/* Runs `steps` steps of cfg on a fresh parameter with layout L (a new
 * gradient each step), comparing everything with the reference after each. */
void ref_run_case(ak_opt_config cfg, ref_layout L, size_t n, int steps, int data, uint64_t seed)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() ^ seed);
    ref_param x = ref_param_open(&L, n);
    ak_backend *b = x.d.b;
    float *found_inf = x.d.found_inf; /* zero: never skips */
    ref_fill_all(&r, data, &L, &x.h);
    ref_state rs = {0, 0, 0};
    ak_update_loss want;
    memset(&want, 0, sizeof want);
    for (int s = 0; s < steps; s++) {
        if (s > 0) fill(&r, data, L.grad, x.h.grad, n, -12, 2);
        ref_mirror_put(&x.d, &x.h);
        ck_assert_int_eq(ak_opt_step_begin(b, &cfg, x.d.state, s % 2 ? found_inf : NULL), AK_OK);
        ref_begin(&cfg, &rs);
        const int rc = ak_update(b, &cfg, &x.d.p, x.d.state, s % 2 ? NULL : found_inf, x.d.loss);
        ck_assert_msg(rc == AK_OK, "ak_update: %s", ak_error(b));
        ref_update_step(&cfg, &rs, &L, &x.h, &want);
        want.elements += n;
        const size_t bad = ref_mirror_compare(&x.d, &x.h);
        ck_assert_msg(bad == 0, "optimizer %d, step %d: %zu mismatches", (int)cfg.kind, s + 1, bad);
        ak_opt_state st;
        kt_dev_get(b, &st, x.d.state, sizeof st);
        ck_assert_int_eq(st.step, rs.step);
        ck_assert(st.beta1_pow == rs.b1p && st.beta2_pow == rs.b2p);
        ak_update_loss got;
        kt_dev_get(b, &got, x.d.loss, sizeof got);
        ref_check_loss(&got, &want, "got", "expected");
        cfg.round.index += n; /* fresh random bits for the next step */
    }
    ref_param_close(&x);
}

ak_rounding ref_rounding(fpe_round mode, uint64_t seed) { return kt_rounding(mode, seed, 7, 1000); }
