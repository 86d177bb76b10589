/* test_update: ak_opt_step_begin and ak_update on the cpu backend.
 *
 * The reference is written here from PyTorch's torch.optim formulas in plain
 * C float and double arithmetic, in the order kernels/update.c states
 * (the build forbids FMA contraction, so every operation rounds once):
 * fp32 masters and moments must match bit for bit over several steps.
 * Low-precision moments, gradients and O2 model copies go through the
 * emulator's public conversions (fpe_f32_to_f16, fpe_bf16_to_f32, ...) with
 * the random index of each element; O3 weights are the exact sum w + delta
 * (formed in binary64, where the test data keep it exact) rounded by
 * fpe_f64_to_f16/bf16.  The loss counts and sums are recomputed from the
 * values before and after.  Hand-made cases check the 2^p rule
 * (w = 2048, delta = 1 in fp16: predicted lost, and lost), stochastic
 * rounding's lost count against the random words, skipping on found-inf,
 * the step state, NaN handling, bad arguments and the guard bytes.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_update.h"

/* ---- host values ------------------------------------------------------------ */
/* An element's value in fp32, exactly (the emulator's widening). */
static float widen(int dt, uint32_t bits)
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
static uint32_t narrow_rne(int dt, float x)
{
    fpe_env env = fpe_env_default();
    return narrow(dt, &env, x);
}

/* kernels/update.c: NaNs of fp32 arithmetic become 0x7FC00000. */
static float canon(float x) { return isnan(x) ? kt_f32_of(0x7FC00000u) : x; }

/* ---- the reference optimizer ---------------------------------------------------- */
typedef struct ref_state {
    int64_t step;
    double b1p, b2p;
} ref_state;

static void ref_begin(const ak_opt_config *c, ref_state *s)
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
typedef struct mirror { /* element bits, fp16/bf16 in the low half */
    size_t n;
    uint32_t *master, *model, *grad, *m, *v;
} mirror;

static uint32_t *alloc_bits(size_t n) { return calloc(n ? n : 1, sizeof(uint32_t)); }

static mirror mirror_alloc(size_t n)
{
    mirror h = {n, alloc_bits(n), alloc_bits(n), alloc_bits(n), alloc_bits(n), alloc_bits(n)};
    return h;
}
/* The mirror of part k (REF_MASTER ... REF_V). */
static uint32_t *mirror_part(const mirror *h, int k)
{
    uint32_t *const parts[REF_PARTS] = {h->master, h->model, h->grad, h->m, h->v};
    return parts[k];
}

static void mirror_free(mirror *h)
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
    const double vlo = fabs(widen(dt, lo));
    /* their spacing, a power of two; past the largest finite value the
     * format continues with the top binade's spacing */
    const uint32_t inf = dt == AK_F16 ? 0x7C00u : 0x7F80u;
    const double q = hi < inf ? fabs(widen(dt, hi)) - vlo : vlo - fabs(widen(dt, lo - 1));
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
static void ref_update(const ak_opt_config *c, const ref_state *s, const ref_layout *L, mirror *h,
                       ak_update_loss *loss)
{
    const int p = L->master ? 24 : L->model == AK_F16 ? 11 : 8;
    for (size_t i = 0; i < h->n; i++) {
        const float w = L->master ? kt_f32_of(h->master[i]) : widen(L->model, h->model[i]);
        const float g = widen(L->grad, h->grad[i]);
        float m = L->m != REF_NONE ? widen(L->m, h->m[i]) : 0,
              v = L->v != REF_NONE ? widen(L->v, h->v[i]) : 0;
        const float d = canon(ref_delta(c, s, w, g, &m, &v));
        if (c->kind != AK_OPT_SGD) h->m[i] = narrow_rne(L->m, m);
        if (c->kind == AK_OPT_ADAM || c->kind == AK_OPT_ADAMW) h->v[i] = narrow_rne(L->v, v);
        fpe_env env = kt_env_of(&c->round, i);
        float now;
        if (L->master) {
            now = canon(w + d);
            h->master[i] = kt_f32_bits(now);
            if (L->model != REF_NONE) h->model[i] = narrow(L->model, &env, now);
        } else {
            h->model[i] = o3_sum(L->model, &env, w, d, h->model[i]);
            now = widen(L->model, h->model[i]);
        }
        if (loss) ref_loss_add(loss, p, w, d, now);
    }
}

/* ---- backend tensors ------------------------------------------------------------------- */
static void dev_put(ref_rig *d, const mirror *h)
{
    for (int k = 0; k < REF_PARTS; k++)
        kt_buf_put(&d->buf[k], mirror_part(h, k));
}

/* Compares the backend's tensors with the mirror; returns the mismatches. */
static size_t dev_compare(ref_rig *d, const mirror *h)
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
enum { DATA_TYPICAL, DATA_SPECIAL };

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
    if (data == DATA_SPECIAL) {
        kt_fill_bits(r, (ak_dtype)dt, bits, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        bits[i] = narrow_rne(dt, typical(r, lo, hi));
}

/* Weights, moments (nonnegative v) and the first gradient. */
static void fill_all(ts_rng *r, int data, const ref_layout *L, mirror *h)
{
    fill(r, data, L->master ? AK_F32 : REF_NONE, h->master, h->n, -10, 3);
    if (L->master && L->model != REF_NONE) /* the model copy as the master's cast */
        for (size_t i = 0; i < h->n; i++)
            h->model[i] = narrow_rne(L->model, kt_f32_of(h->master[i]));
    else
        fill(r, data, L->model, h->model, h->n, -10, 3);
    fill(r, data, L->grad, h->grad, h->n, -12, 2);
    fill(r, data, L->m, h->m, h->n, -14, -2);
    fill(r, data, L->v, h->v, h->n, -20, -4);
    /* as in training, v >= m^2 (a nonzero m with v = 0 would make an update of lr m / eps) */
    if (data == DATA_TYPICAL && L->v != REF_NONE)
        for (size_t i = 0; i < h->n; i++) {
            const float m = widen(L->m, h->m[i]);
            h->v[i] = narrow_rne(L->v, fabsf(widen(L->v, h->v[i])) + m * m);
        }
}

/* ---- the driver ------------------------------------------------------------------------------ */
/* A parameter of n elements: its host mirror (zero) and its memory on the
 * cpu backend (ref_rig: zero state, loss record and found_inf). */
typedef struct param {
    mirror h;
    ref_rig d;
} param;

static param param_open(const ref_layout *L, size_t n)
{
    param x;
    x.h = mirror_alloc(n);
    ref_rig_open(&x.d, kt_open_cpu(), L, n);
    return x;
}

static void param_close(param *x)
{
    ak_backend *b = x->d.b;
    ref_rig_close(&x->d);
    ak_close(b);
    mirror_free(&x->h);
}

/* Runs `steps` steps of cfg on a fresh parameter with layout L (a new
 * gradient each step), comparing everything with the reference after each. */
static void run_case(ak_opt_config cfg, ref_layout L, size_t n, int steps, int data, uint64_t seed)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() ^ seed);
    param x = param_open(&L, n);
    ak_backend *b = x.d.b;
    float *found_inf = x.d.found_inf; /* zero: never skips */
    fill_all(&r, data, &L, &x.h);
    ref_state rs = {0, 0, 0};
    ak_update_loss want;
    memset(&want, 0, sizeof want);
    for (int s = 0; s < steps; s++) {
        if (s > 0) fill(&r, data, L.grad, x.h.grad, n, -12, 2);
        dev_put(&x.d, &x.h);
        ck_assert_int_eq(ak_opt_step_begin(b, &cfg, x.d.state, s % 2 ? found_inf : NULL), AK_OK);
        ref_begin(&cfg, &rs);
        const int rc = ak_update(b, &cfg, &x.d.p, x.d.state, s % 2 ? NULL : found_inf, x.d.loss);
        ck_assert_msg(rc == AK_OK, "ak_update: %s", ak_error(b));
        ref_update(&cfg, &rs, &L, &x.h, &want);
        want.elements += n;
        const size_t bad = dev_compare(&x.d, &x.h);
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
    param_close(&x);
}

static ak_rounding rounding(fpe_round mode, uint64_t seed)
{
    return kt_rounding(mode, seed, 7, 1000);
}

/* ---- tests --------------------------------------------------------------------------------------
 */
START_TEST(sgd)
{
    const int grads[] = {AK_F32, AK_F16, AK_BF16};
    for (int k = 0; k < 3; k++) {
        run_case(ref_config(AK_OPT_SGD, 0.05f, 0),
                 ref_lay(true, REF_NONE, grads[k], REF_NONE, REF_NONE), 3000, 3, DATA_TYPICAL,
                 1 + k);
        run_case(ref_config(AK_OPT_SGD, 0.01f, 1e-2f),
                 ref_lay(true, AK_F16, grads[k], REF_NONE, REF_NONE), 3000, 3, DATA_TYPICAL, 4 + k);
    }
    ak_opt_config c = ref_config(AK_OPT_SGD, 0.01f, 1e-3f);
    c.round = rounding(FPE_SR_PROP, 11);
    run_case(c, ref_lay(true, AK_BF16, AK_F32, REF_NONE, REF_NONE), 3000, 3, DATA_TYPICAL, 7);
}
END_TEST

START_TEST(momentum)
{
    const struct {
        float momentum, dampening;
        bool nesterov;
        int mdt;
        float wd;
    } cases[] = {{0.9f, 0, false, AK_F32, 0},    {0.9f, 0.1f, false, AK_F32, 1e-4f},
                 {0.9f, 0, true, AK_F32, 1e-4f}, {0.5f, 0.5f, false, AK_BF16, 0},
                 {0.99f, 0, true, AK_F16, 0},    {0.0f, 0, false, AK_F32, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ak_opt_config c = ref_config(AK_OPT_MOMENTUM, 0.02f, cases[k].wd);
        c.momentum = cases[k].momentum;
        c.dampening = cases[k].dampening;
        c.nesterov = cases[k].nesterov;
        run_case(c, ref_lay(true, REF_NONE, AK_F32, cases[k].mdt, REF_NONE), 3000, 4, DATA_TYPICAL,
                 20 + k);
        c.round = rounding(FPE_SR_EQUAL, 5 + k);
        run_case(c, ref_lay(true, AK_F16, AK_F16, cases[k].mdt, REF_NONE), 2000, 3, DATA_TYPICAL,
                 30 + k);
    }
}
END_TEST

START_TEST(adam_and_adamw)
{
    const ak_optimizer kinds[] = {AK_OPT_ADAM, AK_OPT_ADAMW};
    for (int k = 0; k < 2; k++) {
        ak_opt_config c = ref_config(kinds[k], 1e-3f, 0);
        run_case(c, ref_lay(true, REF_NONE, AK_F32, AK_F32, AK_F32), 3000, 5, DATA_TYPICAL, 40 + k);
        c.weight_decay = 0.01f;
        run_case(c, ref_lay(true, REF_NONE, AK_F32, AK_F32, AK_F32), 3000, 5, DATA_TYPICAL, 42 + k);
        c.beta1 = 0.5f;
        c.beta2 = 0.75f;
        c.eps = 1e-3f;
        run_case(c, ref_lay(true, AK_BF16, AK_BF16, AK_BF16, AK_F32), 2000, 4, DATA_TYPICAL,
                 44 + k);
        c = ref_config(kinds[k], 3e-4f, 0.1f);
        c.round = rounding(FPE_SR_PROP, 99);
        run_case(c, ref_lay(true, AK_F16, AK_F16, AK_F16, AK_BF16), 2000, 4, DATA_TYPICAL, 46 + k);
    }
}
END_TEST

/* O3: no master; the fp16/bf16 weights are updated by one rounding. */
START_TEST(o3_every_optimizer_and_mode)
{
    const fpe_round modes[] = {FPE_RNE, FPE_SR_PROP, FPE_SR_EQUAL, FPE_RZ, FPE_RO};
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++)
        for (int k = 0; k < 5; k++)
            for (int model = AK_F16; model <= AK_BF16; model++) {
                ak_opt_config c = ref_config(
                    (ak_optimizer)kind, kind >= AK_OPT_ADAM ? 1e-3f : 0.01f, k % 2 ? 1e-2f : 0);
                c.round = rounding(modes[k], 1234 + (uint64_t)k);
                const int mv = kind == AK_OPT_SGD ? REF_NONE : model;
                run_case(c,
                         ref_lay(false, model, AK_F32, mv, kind >= AK_OPT_ADAM ? AK_F32 : REF_NONE),
                         2000, 3, DATA_TYPICAL, 60 + (uint64_t)(kind * 10 + k * 2 + model));
            }
}
END_TEST

/* Updates far below the weights' last bit (lr 2^-30): most sums are not
 * exact in binary64, and every mode decides between w and its neighbour. */
START_TEST(o3_tiny_updates)
{
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int model = AK_F16; model <= AK_BF16; model++) {
            ak_opt_config c = ref_config(AK_OPT_SGD, 0x1p-30f, 0);
            c.round = rounding((fpe_round)mode, 555 + (uint64_t)mode);
            run_case(c, ref_lay(false, model, AK_F32, REF_NONE, REF_NONE), 3000, 2, DATA_TYPICAL,
                     200 + (uint64_t)(mode * 2 + model));
        }
}
END_TEST

/* Specials everywhere (NaNs with payloads, infinities, subnormals, extreme
 * values): NaNs of the arithmetic are canonical, the loss skips non-finite
 * elements, and nothing differs from the reference. */
START_TEST(special_values)
{
    for (int kind = AK_OPT_SGD; kind <= AK_OPT_ADAMW; kind++) {
        ak_opt_config c = ref_config((ak_optimizer)kind, 0.5f, 0.25f);
        const int mdt = kind == AK_OPT_SGD ? REF_NONE : AK_F32;
        const int vdt = kind >= AK_OPT_ADAM ? AK_BF16 : REF_NONE;
        run_case(c, ref_lay(true, AK_F16, AK_F32, mdt, vdt), 3000, 2, DATA_SPECIAL, 100 + kind);
        c.round = rounding(FPE_SR_PROP, 3);
        run_case(c, ref_lay(true, AK_BF16, AK_F16, kind == AK_OPT_SGD ? REF_NONE : AK_F16, vdt),
                 3000, 2, DATA_SPECIAL, 110 + kind);
        c.round = ak_rounding_rne();
        run_case(c, ref_lay(false, AK_F16, AK_BF16, mdt, vdt), 3000, 2, DATA_SPECIAL, 120 + kind);
        run_case(c, ref_lay(false, AK_BF16, AK_F32, mdt, vdt), 3000, 2, DATA_SPECIAL, 130 + kind);
    }
}
END_TEST

/* One SGD step with lr 1 and gradient -delta on hand-made weights. */
static ak_update_loss one_sgd_step(const ref_layout *L, const ak_rounding *r, const float *w,
                                   const float *delta, size_t n, uint32_t *stored_after)
{
    param x = param_open(L, n);
    mirror *h = &x.h;
    for (size_t i = 0; i < n; i++) {
        if (L->master)
            h->master[i] = kt_f32_bits(w[i]);
        else
            h->model[i] = narrow_rne(L->model, w[i]);
        ck_assert(widen(L->master ? AK_F32 : L->model, L->master ? h->master[i] : h->model[i]) ==
                  w[i]);
        h->grad[i] = kt_f32_bits(-delta[i]);
    }
    dev_put(&x.d, h);
    ak_opt_config c = ref_config(AK_OPT_SGD, 1.0f, 0);
    c.round = *r;
    ak_update_loss out;
    ck_assert_int_eq(ak_update(x.d.b, &c, &x.d.p, x.d.state, NULL, x.d.loss), AK_OK);
    kt_dev_get(x.d.b, &out, x.d.loss, sizeof out);
    kt_buf_get(&x.d.buf[L->master ? REF_MASTER : REF_MODEL], stored_after);
    param_close(&x);
    return out;
}

/* The rule |w| >= 2^p |delta| (p = 11 fp16, 8 bf16, 24 fp32) and what
 * rounding to nearest does at and around it, worked by hand. */
START_TEST(two_to_the_p_rule)
{
    const ak_rounding rne = ak_rounding_rne();
    uint32_t after[8];
    /* fp16 (O3): ulp(2048) = 2, ulp(1024) = 1 */
    {
        const float w[] = {2048, 2048, 2048, 1024, -2048, 2048, 0.0f};
        const float d[] = {1, 1.5f, 0.75f, 0.5f, -1, 1.0009765625f, 1};
        const ref_layout L = ref_lay(false, AK_F16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 7, after);
        /* 2049 -> 2048 (tie to even): predicted, lost.  2049.5 -> 2050:
         * not predicted (2048 < 3072), not lost.  2048.75 -> 2048: both.
         * 1024.5 -> 1024 (tie): both.  -2049 -> -2048: both.  2049.0009..
         * -> 2050: not predicted, not lost.  0 + 1 = 1: neither. */
        const uint16_t want[] = {0x6800, 0x6801, 0x6800, 0x6400, 0xE800, 0x6801, 0x3C00};
        for (int i = 0; i < 7; i++)
            ck_assert_uint_eq(after[i], want[i]);
        ck_assert_uint_eq(l.elements, 7);
        ck_assert_uint_eq(l.nonzero, 7);
        ck_assert_uint_eq(l.lost, 4);
        ck_assert_uint_eq(l.predicted_lost, 4);
        /* errors: 1 + 0.5 + 0.75 + 0.5 + 1 + (2 - 1.0009765625) + 0 */
        ck_assert(l.sum_abs_err == 3.75 + 0.9990234375);
        ck_assert(l.sum_abs_intended == 1 + 1.5 + 0.75 + 0.5 + 1 + 1.0009765625 + 1);
    }
    /* bf16 (O3): ulp(256) = 2 */
    {
        const float w[] = {256, 256, 255};
        const float d[] = {1, 2, 1};
        const ref_layout L = ref_lay(false, AK_BF16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 3, after);
        /* 257 -> 256: both; 258: neither; 255 + 1 = 256: not predicted (255 < 256), not lost */
        ck_assert_uint_eq(after[0], 0x4380);
        ck_assert_uint_eq(after[1], 0x4381);
        ck_assert_uint_eq(after[2], 0x4380);
        ck_assert_uint_eq(l.lost, 1);
        ck_assert_uint_eq(l.predicted_lost, 1);
    }
    /* fp32 master: ulp(2^24) = 2 */
    {
        const float w[] = {0x1p24f, 0x1p24f, 0x1p24f, 1.0f};
        const float d[] = {1, 2, 0x1p-24f, 0x1p-24f};
        const ref_layout L = ref_lay(true, REF_NONE, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 4, after);
        /* 2^24 + 1 -> 2^24: both.  2^24 + 2: neither.  2^24 + 2^-24: both.
         * 1 + 2^-24 -> 1 (tie to even): predicted (1 >= 2^24 * 2^-24), lost */
        ck_assert(kt_f32_of(after[0]) == 0x1p24f && kt_f32_of(after[1]) == 0x1p24f + 2);
        ck_assert(kt_f32_of(after[3]) == 1.0f);
        ck_assert_uint_eq(l.lost, 3);
        ck_assert_uint_eq(l.predicted_lost, 3);
    }
    /* the master is stored: an O2 model copy that changes does not count */
    {
        const float w[] = {2049};
        const float d[] = {1};
        const ref_layout L = ref_lay(true, AK_F16, AK_F32, REF_NONE, REF_NONE);
        ak_update_loss l = one_sgd_step(&L, &rne, w, d, 1, after);
        ck_assert(kt_f32_of(after[0]) == 2050.0f);
        ck_assert_uint_eq(l.lost, 0);
        ck_assert_uint_eq(l.predicted_lost, 0);
    }
}
END_TEST

/* Stochastic rounding of 2048 + 1 in fp16 (exactly half an ulp): the weight
 * moves to 2050 iff the element's random word is below 2^31. */
START_TEST(stochastic_lost_counts)
{
    enum { N = 4096 };
    static float w[N], d[N];
    static uint32_t after[N];
    for (int i = 0; i < N; i++) {
        w[i] = 2048;
        d[i] = 1;
    }
    const ak_rounding r = rounding(FPE_SR_PROP, 0xFEEDFACEull);
    const ref_layout L = ref_lay(false, AK_F16, AK_F32, REF_NONE, REF_NONE);
    ak_update_loss l = one_sgd_step(&L, &r, w, d, N, after);
    uint64_t stayed = 0;
    for (int i = 0; i < N; i++) {
        const bool up = fpe_random_bits(r.seed, r.stream, r.index + (uint64_t)i) < 0x80000000u;
        ck_assert_uint_eq(after[i], up ? 0x6801 : 0x6800);
        stayed += !up;
    }
    ck_assert_uint_eq(l.lost, stayed);
    ck_assert_uint_eq(l.predicted_lost, N);
    ck_assert(l.sum_abs_err == (double)N); /* |±1| each */
    ck_assert(stayed > N / 2 - 200 && stayed < N / 2 + 200);
}
END_TEST

/* found_inf set: nothing is written, the state does not advance, and the
 * call is counted as skipped; zero: the step runs. */
START_TEST(skip_on_found_inf)
{
    const size_t n = 500;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 77);
    const ref_layout L = ref_lay(true, AK_F16, AK_F32, AK_F32, AK_BF16);
    param x = param_open(&L, n);
    ak_backend *b = x.d.b;
    mirror *h = &x.h;
    ref_rig *d = &x.d;
    ak_opt_state *state = d->state;
    ak_update_loss *loss = d->loss, got;
    float *found_inf = d->found_inf;
    fill_all(&r, DATA_TYPICAL, &L, h);
    dev_put(d, h);
    ak_opt_config c = ref_config(AK_OPT_ADAM, 1e-3f, 0);
    const float flags[] = {1.0f, NAN, -INFINITY};
    for (int k = 0; k < 3; k++) {
        kt_dev_put(b, found_inf, &flags[k], sizeof(float));
        ck_assert_int_eq(ak_opt_step_begin(b, &c, state, found_inf), AK_OK);
        ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, loss), AK_OK);
        ck_assert_uint_eq(dev_compare(d, h), 0);
        ak_opt_state st;
        kt_dev_get(b, &st, state, sizeof st);
        ck_assert(st.step == 0 && st.beta1_pow == 0 && st.beta2_pow == 0);
        kt_dev_get(b, &got, loss, sizeof got);
        ck_assert_uint_eq(got.skipped, (uint64_t)k + 1);
        ck_assert(got.elements == 0 && got.nonzero == 0 && got.sum_abs_intended == 0);
    }
    ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, NULL), AK_OK); /* no loss: fine */
    ck_assert_uint_eq(dev_compare(d, h), 0);
    const float zero = 0.0f;
    kt_dev_put(b, found_inf, &zero, sizeof zero);
    ck_assert_int_eq(ak_opt_step_begin(b, &c, state, found_inf), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &d->p, state, found_inf, loss), AK_OK);
    ref_state rs = {0, 0, 0};
    ref_begin(&c, &rs);
    ref_update(&c, &rs, &L, h, NULL);
    ck_assert_uint_eq(dev_compare(d, h), 0);
    kt_dev_get(b, &got, loss, sizeof got);
    ck_assert_uint_eq(got.skipped, 3);
    ck_assert_uint_eq(got.elements, n);
    param_close(&x);
}
END_TEST

/* The step counter and the powers beta^step (products in binary64). */
START_TEST(step_state)
{
    ak_backend *b = kt_open_cpu();
    ak_opt_config c = ref_config(AK_OPT_ADAMW, 1e-3f, 0);
    c.beta1 = 0.8f;
    c.beta2 = 0.995f;
    ak_opt_state *state = kt_dev_alloc(b, sizeof *state), st;
    double p1 = 1, p2 = 1;
    for (int s = 1; s <= 50; s++) {
        ck_assert_int_eq(ak_opt_step_begin(b, &c, state, NULL), AK_OK);
        kt_dev_get(b, &st, state, sizeof st);
        p1 *= (double)0.8f;
        p2 *= (double)0.995f;
        ck_assert_int_eq(st.step, s);
        ck_assert(st.beta1_pow == p1 && st.beta2_pow == p2);
        ck_assert(fabs(st.beta2_pow - pow((double)0.995f, s)) <= 1e-14 * st.beta2_pow);
    }
    kt_dev_free(b, state);
    ak_close(b);
}
END_TEST

/* After the first momentum step the buffer is the gradient itself, then
 * momentum * buf + (1 - dampening) * g; by hand. */
START_TEST(momentum_first_step_by_hand)
{
    ak_backend *b = kt_open_cpu();
    float w[1] = {1.0f}, g[1] = {0.5f}, m[1] = {123.0f};
    ak_param p = {ak_tensor_of(w, 1, AK_F32), ak_tensor_none(), ak_tensor_of(g, 1, AK_F32),
                  ak_tensor_of(m, 1, AK_F32), ak_tensor_none()};
    ak_opt_config c = ref_config(AK_OPT_MOMENTUM, 0.25f, 0);
    c.momentum = 0.5f;
    c.dampening = 0.5f;
    ak_opt_state st = {0, 0, 0};
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    ck_assert(m[0] == 0.5f && w[0] == 1.0f - 0.125f);
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    ck_assert(m[0] == 0.5f * 0.5f + 0.5f * 0.5f && w[0] == 0.875f - 0.125f);
    c.nesterov = true;
    c.dampening = 0;
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    /* buf = 0.5 * 0.5 + 0.5 = 0.75; g2 = 0.5 + 0.5 * 0.75 = 0.875 */
    ck_assert(m[0] == 0.75f && w[0] == 0.75f - 0.25f * 0.875f);
    ak_close(b);
}
END_TEST

/* Adam's first step by hand: m = 0.1 g, v = 0.001 g^2, bias-corrected to
 * g and g^2, so delta = -lr g / (|g| + eps) ~ -lr sign(g). */
START_TEST(adam_first_step_by_hand)
{
    ak_backend *b = kt_open_cpu();
    float w[2] = {1.0f, -2.0f}, g[2] = {4.0f, -0.25f}, m[2] = {0, 0}, v[2] = {0, 0};
    ak_param p = {ak_tensor_of(w, 2, AK_F32), ak_tensor_none(), ak_tensor_of(g, 2, AK_F32),
                  ak_tensor_of(m, 2, AK_F32), ak_tensor_of(v, 2, AK_F32)};
    ak_opt_config c = ref_config(AK_OPT_ADAM, 0.125f, 0);
    c.beta1 = 0.5f;
    c.beta2 = 0.75f;
    c.eps = 0x1p-20f;
    ak_opt_state st = {0, 0, 0};
    ck_assert_int_eq(ak_opt_step_begin(b, &c, &st, NULL), AK_OK);
    ck_assert_int_eq(ak_update(b, &c, &p, &st, NULL, NULL), AK_OK);
    /* m = 0.5 g, v = 0.25 g^2 (exact); bc1 = 0.5, bc2 = 0.25: step_size
     * 0.25 and denom = sqrt(0.25 g^2) / 0.5 + eps = |g| + eps */
    ck_assert(m[0] == 2.0f && v[0] == 4.0f && m[1] == -0.125f && v[1] == 0.015625f);
    ck_assert(w[0] == 1.0f - (0.25f * 2.0f) / (4.0f + 0x1p-20f));
    ck_assert(w[1] == -2.0f - (0.25f * -0.125f) / (0.25f + 0x1p-20f));
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    float w[4] = {1, 2, 3, 4}, g[4] = {0}, m[4] = {0}, v[4] = {0};
    uint16_t h[4] = {0};
    ak_opt_state st = {0, 0, 0};
    ak_update_loss loss;
    memset(&loss, 0, sizeof loss);
    const ak_param good = {ak_tensor_of(w, 4, AK_F32), ak_tensor_of(h, 4, AK_F16),
                           ak_tensor_of(g, 4, AK_F32), ak_tensor_of(m, 4, AK_F32),
                           ak_tensor_of(v, 4, AK_F32)};
    const ak_opt_config base = ref_config(AK_OPT_ADAM, 1e-3f, 0);
    ck_assert_int_eq(ak_update(b, &base, &good, &st, NULL, &loss), AK_OK);

    /* the configuration */
    struct {
        const char *text;
        ak_opt_config c;
    } bad[16];
    int nb = 0;
#define BAD_CFG(field, value, k, message)                                                          \
    do {                                                                                           \
        bad[nb].c = base;                                                                          \
        bad[nb].c.kind = (k);                                                                      \
        bad[nb].c.field = (value);                                                                 \
        bad[nb++].text = (message);                                                                \
    } while (0)
    BAD_CFG(lr, -1.0f, AK_OPT_SGD, "ak_update: cfg->lr is -1");
    BAD_CFG(lr, NAN, AK_OPT_ADAM, "cfg->lr is nan");
    BAD_CFG(weight_decay, INFINITY, AK_OPT_SGD, "cfg->weight_decay is inf");
    BAD_CFG(momentum, -0.5f, AK_OPT_MOMENTUM, "cfg->momentum is -0.5");
    BAD_CFG(dampening, 1.5f, AK_OPT_MOMENTUM, "cfg->dampening is 1.5");
    BAD_CFG(nesterov, true, AK_OPT_MOMENTUM, "cfg->nesterov needs");
    BAD_CFG(beta1, 1.0f, AK_OPT_ADAM, "cfg->beta1 is 1");
    BAD_CFG(beta2, -0.1f, AK_OPT_ADAMW, "cfg->beta2 is -0.1");
    BAD_CFG(eps, 0.0f, AK_OPT_ADAM, "cfg->eps is 0");
    BAD_CFG(eps, INFINITY, AK_OPT_ADAMW, "cfg->eps is inf");
    BAD_CFG(kind, (ak_optimizer)9, (ak_optimizer)9, "cfg->kind is 9");
    BAD_CFG(round.mode, (fpe_round)8, AK_OPT_ADAM, "cfg->round.mode is 8");
    bad[5].c.dampening = 0.5f; /* nesterov with dampening */
    for (int k = 0; k < nb; k++) {
        KT_EXPECT_ERROR(b, ak_update(b, &bad[k].c, &good, &st, NULL, &loss), AK_EINVAL, NULL,
                        bad[k].text);
        KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &bad[k].c, &st, NULL), AK_EINVAL, NULL,
                        strstr(bad[k].text, "cfg->"));
        ck_assert_msg(strncmp(ak_error(b), "ak_opt_step_begin: ", 19) == 0, "%s", ak_error(b));
    }
    /* unused fields are not checked: SGD ignores the betas */
    ak_opt_config sgd_cfg = base;
    sgd_cfg.kind = AK_OPT_SGD;
    sgd_cfg.beta1 = 7;
    ck_assert_int_eq(ak_update(b, &sgd_cfg, &good, &st, NULL, &loss), AK_OK);
    ck_assert_str_eq(ak_error(b), "");

    /* pointers */
    KT_EXPECT_ERROR(b, ak_update(b, NULL, &good, &st, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: cfg is NULL");
    KT_EXPECT_ERROR(b, ak_update(b, &base, NULL, &st, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: p is NULL");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, NULL, NULL, &loss), AK_EINVAL, NULL,
                    "ak_update: state is NULL");
    KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &base, NULL, NULL), AK_EINVAL, NULL,
                    "ak_opt_step_begin: state is NULL");
    char raw[64] __attribute__((aligned(16)));
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, (ak_opt_state *)(raw + 4), NULL, &loss),
                    AK_EINVAL, NULL, "state");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, &st, (const float *)(raw + 2), &loss), AK_EINVAL,
                    NULL, "found_inf");
    KT_EXPECT_ERROR(b, ak_opt_step_begin(b, &base, &st, (const float *)(raw + 1)), AK_EINVAL, NULL,
                    "found_inf");
    KT_EXPECT_ERROR(b, ak_update(b, &base, &good, &st, NULL, (ak_update_loss *)(raw + 4)),
                    AK_EINVAL, NULL, "loss");
    ck_assert_int_eq(ak_update(NULL, &base, &good, &st, NULL, &loss), AK_EINVAL);
    ck_assert_int_eq(ak_opt_step_begin(NULL, &base, &st, NULL), AK_EINVAL);

    /* tensors: good with `change` made must fail with text */
#define BAD_PARAM(change, text)                                                                    \
    do {                                                                                           \
        p = good;                                                                                  \
        change;                                                                                    \
        KT_EXPECT_ERROR(b, ak_update(b, &base, &p, &st, NULL, &loss), AK_EINVAL, NULL, (text));    \
    } while (0)
    ak_param p;
    BAD_PARAM(p.master = ak_tensor_of(h, 4, AK_F16), "p->master is fp16 (expected fp32)");
    BAD_PARAM(p.model = ak_tensor_of(w, 4, AK_F32), "p->model is fp32");
    BAD_PARAM((p.master = ak_tensor_none(), p.model = ak_tensor_none()), "both none");
    BAD_PARAM(p.grad = ak_tensor_of(g, 3, AK_F32), "p->grad has 3 elements, expected 4");
    BAD_PARAM(p.grad = ak_tensor_none(), "p->grad");
    BAD_PARAM(p.model = ak_tensor_of(h, 5, AK_F16), "p->model has 5 elements");
    BAD_PARAM(p.v = ak_tensor_of(v, 2, AK_F32), "p->v has 2 elements");
    BAD_PARAM(p.m = ak_tensor_none(), "p->m is none");
    ak_opt_config mom = base;
    mom.kind = AK_OPT_MOMENTUM;
    KT_EXPECT_ERROR(b, ak_update(b, &mom, &p, &st, NULL, &loss), AK_EINVAL, NULL, "p->m is none");
    BAD_PARAM(p.v = ak_tensor_none(), "p->v is none");
    ck_assert_int_eq(ak_update(b, &mom, &p, &st, NULL, &loss), AK_OK); /* momentum needs no v */
    BAD_PARAM(p.m = ak_tensor_of((char *)m + 2, 4, AK_F32), "not aligned");
    BAD_PARAM(p.grad = ak_tensor_of(g, 4, (ak_dtype)5), "invalid dtype");

    /* nothing was written by the failures, and empty work is fine */
    ak_update_loss before = loss;
    p = good;
    p.master = ak_tensor_none();
    p.model = ak_tensor_of(h, 0, AK_F16);
    p.grad = ak_tensor_of(g, 0, AK_F32);
    p.m = ak_tensor_none();
    p.v = ak_tensor_none();
    ck_assert_int_eq(ak_update(b, &sgd_cfg, &p, &st, NULL, &loss), AK_OK);
    ck_assert(memcmp(&before, &loss, sizeof loss) == 0);
    ck_assert_uint_eq(loss.elements, 4 + 4 + 4); /* the three calls that ran */
    ak_close(b);
#undef BAD_CFG
#undef BAD_PARAM
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_update");
    TCase *tc = tcase_create("update");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sgd);
    tcase_add_test(tc, momentum);
    tcase_add_test(tc, adam_and_adamw);
    tcase_add_test(tc, o3_every_optimizer_and_mode);
    tcase_add_test(tc, o3_tiny_updates);
    tcase_add_test(tc, special_values);
    tcase_add_test(tc, two_to_the_p_rule);
    tcase_add_test(tc, stochastic_lost_counts);
    tcase_add_test(tc, skip_on_found_inf);
    tcase_add_test(tc, step_state);
    tcase_add_test(tc, momentum_first_step_by_hand);
    tcase_add_test(tc, adam_first_step_by_hand);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
