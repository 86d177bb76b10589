/* allreduce.c: the low-precision ring all-reduce of allreduce.h, in one process for a
 * simulated world, and the element steps the MPI transport shares.  Pure computation: the
 * arithmetic is the emulator's (fpe.h) in the CUDA environment (RNE, subnormals kept,
 * canonical NaNs), as the frameworks' kernels and NCCL's sums run on the GPU. */
#include "allreduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fpe_internal.h" /* fpe_f32_bits, fpe_f32_from_bits */
#include "util.h"

/* ---- the formats' bits ------------------------------------------------------------------- */
static uint32_t exp_mask(fpe_format_id f)
{
    return f == FPE_FMT_F16 ? 0x7C00u : f == FPE_FMT_BF16 ? 0x7F80u : 0x7F800000u;
}
static uint32_t frac_mask(fpe_format_id f)
{
    return f == FPE_FMT_F16 ? 0x03FFu : f == FPE_FMT_BF16 ? 0x007Fu : 0x007FFFFFu;
}
static int is_zero(fpe_format_id f, uint32_t u) { return (u & (exp_mask(f) | frac_mask(f))) == 0; }
static int is_finite(fpe_format_id f, uint32_t u) { return (u & exp_mask(f)) != exp_mask(f); }
static int is_inf(fpe_format_id f, uint32_t u)
{
    return (u & (exp_mask(f) | frac_mask(f))) == exp_mask(f);
}
static int is_subnormal(fpe_format_id f, uint32_t u)
{
    return (u & exp_mask(f)) == 0 && (u & frac_mask(f)) != 0;
}

/* fp32 bits rounded to f (RNE), and f's bits widened to fp32 (exact). */
static uint32_t from_f32(fpe_env *env, fpe_format_id f, uint32_t u)
{
    if (f == FPE_FMT_F16) return fpe_f32_to_f16(env, u);
    if (f == FPE_FMT_BF16) return fpe_f32_to_bf16(env, u);
    return u;
}
static uint32_t to_f32(fpe_env *env, fpe_format_id f, uint32_t u)
{
    if (f == FPE_FMT_F16) return fpe_f16_to_f32(env, (uint16_t)u);
    if (f == FPE_FMT_BF16) return fpe_bf16_to_f32(env, (uint16_t)u);
    return u;
}

/* x (format f) times the fp32 constant k in fp32, rounded to f: a CUDA tensor op with a CPU
 * scalar in fp32 opmath. */
static uint32_t scale_in(fpe_env *env, fpe_format_id f, uint32_t x, uint32_t k)
{
    return from_f32(env, f, fpe_f32_mul(env, to_f32(env, f, x), k));
}

static uint32_t f32_of_double(fpe_env *env, double v) { return fpe_f64_to_f32(env, v); }

/* ---- the element steps ------------------------------------------------------------------- */
double ar_pre_factor(const ar_config *c, int world) { return c->pre == 0 ? (double)world : c->pre; }

double ar_divisor(const ar_config *c, int world)
{
    return c->post ? (double)world : ar_pre_factor(c, world);
}

ar_plan ar_plan_make(const ar_config *c, int world)
{
    fpe_env env = fpe_env_cuda();
    const double pre = ar_pre_factor(c, world);
    ar_plan p = {c, world, pre != 1.0, c->post && pre != (double)world, 0, 0};
    p.k_pre = f32_of_double(&env, 1.0 / pre);
    p.k_post = f32_of_double(&env, pre / (double)world);
    return p;
}

uint32_t ar_message(const ar_plan *p, float g, ar_stats *s)
{
    fpe_env env = fpe_env_cuda();
    const ar_config *c = p->config;
    const uint32_t gu = fpe_f32_bits(g);
    const uint32_t b = from_f32(&env, c->grad, gu);
    uint32_t m;
    int flushed_by_scale = 0;
    if (c->order == AR_ORDER_SCALE_FIRST && p->pre_scale) {
        const uint32_t b32 = to_f32(&env, c->grad, b);
        const uint32_t prod = fpe_f32_mul(&env, b32, p->k_pre);
        flushed_by_scale = !is_zero(FPE_FMT_F32, b32) && is_zero(FPE_FMT_F32, prod);
        m = from_f32(&env, c->comm, prod);
    } else {
        const uint32_t cast = from_f32(&env, c->comm, to_f32(&env, c->grad, b));
        m = p->pre_scale ? scale_in(&env, c->comm, cast, p->k_pre) : cast;
        flushed_by_scale = !is_zero(c->comm, cast) && is_zero(c->comm, m);
    }
    if (s) {
        const int nonzero = !is_zero(FPE_FMT_F32, gu) && is_finite(FPE_FMT_F32, gu);
        s->inputs_nonzero += nonzero;
        if (nonzero && !flushed_by_scale && is_zero(c->comm, m)) s->flushed_cast++;
        if (nonzero && flushed_by_scale) s->flushed_prescale++;
        s->subnormal_messages += is_subnormal(c->comm, m);
        s->overflow_cast += is_finite(FPE_FMT_F32, gu) && is_inf(c->comm, m);
    }
    return m;
}

uint32_t ar_add(fpe_format_id fmt, uint32_t a, uint32_t b)
{
    fpe_env env = fpe_env_cuda();
    if (fmt == FPE_FMT_F16) return fpe_f16_add(&env, (uint16_t)a, (uint16_t)b);
    if (fmt == FPE_FMT_BF16) return fpe_bf16_add(&env, (uint16_t)a, (uint16_t)b);
    return fpe_f32_add(&env, a, b);
}

float ar_finish(const ar_plan *p, uint32_t sum)
{
    fpe_env env = fpe_env_cuda();
    const ar_config *c = p->config;
    const uint32_t s = p->post_scale ? scale_in(&env, c->comm, sum, p->k_post) : sum;
    if (c->grad == c->comm) return fpe_f32_from_bits(to_f32(&env, c->comm, s));
    return fpe_f32_from_bits(
        to_f32(&env, c->grad, from_f32(&env, c->grad, to_f32(&env, c->comm, s))));
}

void ar_chunk(size_t n, int world, int c, size_t *begin, size_t *end)
{
    /* floor(c n / N) without overflow for n < 2^44 and N <= 2^20 */
    *begin = (size_t)(((unsigned long long)n * (unsigned)c) / (unsigned)world);
    *end = (size_t)(((unsigned long long)n * (unsigned)(c + 1)) / (unsigned)world);
}

int ar_check_config(const ar_config *c, int world, char *msg, size_t msg_len)
{
    if (!c) return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: no configuration");
    if ((int)c->grad < 0 || c->grad > FPE_FMT_F32 || (int)c->comm < 0 || c->comm > FPE_FMT_F32)
        return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce %s: bad format",
                       c->name ? c->name : "");
    if (world < 1 || world > AR_MAX_WORLD)
        return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: world size %d is not in [1, %d]",
                       world, AR_MAX_WORLD);
    if (!(c->pre >= 0) || !isfinite(c->pre) || (c->pre > 0 && c->pre < 1e-30))
        return ut_fail(msg, msg_len, AR_EINPUT,
                       "all-reduce: pre-divide factor %g is not 0 (the world size) or positive",
                       c->pre);
    return AR_OK;
}

/* ---- statistics -------------------------------------------------------------------------- */
void ar_stats_result(const ar_config *c, uint32_t sum, float result, double exact,
                     double loss_scale, int all_messages_finite, ar_stats *s, double *err2,
                     double *ref2)
{
    const double scale = loss_scale > 0 ? loss_scale : 1.0;
    s->elements++;
    if (!isfinite(result)) {
        s->nonfinite_results++;
        s->found_inf = 1;
        if (all_messages_finite && is_inf(c->comm, sum)) s->overflow_in_sum++;
        return;
    }
    s->subnormal_results += is_subnormal(c->comm, sum);
    if (!isfinite(exact)) return;
    if (result == 0 && exact != 0) s->zero_results++;
    const double e = fabs((double)result - exact) / scale;
    if (e > s->max_abs_error) s->max_abs_error = e;
    *err2 += e * e;
    *ref2 += (exact / scale) * (exact / scale);
}

void ar_stats_finish(ar_stats *s, double err2, double ref2)
{
    s->rel_l2_error = ref2 > 0 ? sqrt(err2 / ref2) : err2 > 0 ? INFINITY : 0.0;
}

/* ---- the simulated world ----------------------------------------------------------------- */
typedef struct neumaier {
    double sum, comp;
} neumaier;

static void neumaier_add(neumaier *a, double x)
{
    const double t = a->sum + x;
    if (fabs(a->sum) >= fabs(x))
        a->comp += (a->sum - t) + x;
    else
        a->comp += (x - t) + a->sum;
    a->sum = t;
}

static double neumaier_value(const neumaier *a)
{
    return isfinite(a->sum) ? a->sum + a->comp : a->sum; /* inf or NaN: the plain sum */
}

int ar_reduce(const ar_call *call, float *out, ar_stats *stats, char *msg, size_t msg_len)
{
    if (!call) return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: no call");
    int st = ar_check_config(call->config, call->world, msg, msg_len);
    if (st) return st;
    const ar_config *c = call->config;
    const int world = call->world;
    const ar_plan plan = ar_plan_make(c, world);
    const size_t n = call->n;
    if (n > 0 && !out) return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: no output buffer");
    if (n > 0 && !call->grads && !call->gen)
        return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: no gradients (grads or gen)");
    if (n > 0 && call->grads)
        for (int r = 0; r < world; r++)
            if (!call->grads[r])
                return ut_fail(msg, msg_len, AR_EINPUT, "all-reduce: rank %d's gradient is NULL",
                               r);
    if (stats) memset(stats, 0, sizeof *stats);
    if (n == 0) return AR_OK;

    const size_t max_len = n / (size_t)world + 1;
    uint32_t *acc = malloc(max_len * sizeof *acc);
    unsigned char *finite = malloc(max_len);
    neumaier *exact = stats ? calloc(max_len, sizeof *exact) : NULL;
    float *tmp = call->gen ? malloc(max_len * sizeof *tmp) : NULL;
    if (!acc || !finite || (stats && !exact) || (call->gen && !tmp)) {
        st = ut_fail(msg, msg_len, AR_ENOMEM, "all-reduce: out of memory (%zu elements)", n);
        goto done;
    }
    double err2 = 0, ref2 = 0;
    for (int ch = 0; ch < world; ch++) {
        size_t begin, end;
        ar_chunk(n, world, ch, &begin, &end);
        const size_t len = end - begin;
        if (len == 0) continue;
        if (exact) memset(exact, 0, len * sizeof *exact);
        /* chunk ch's sum starts at rank ch and goes round the ring */
        for (int k = 0; k < world; k++) {
            const int r = (ch + k) % world;
            const float *g;
            if (call->grads) {
                g = call->grads[r] + begin;
            } else {
                if (call->gen(call->gen_ctx, r, begin, len, tmp)) {
                    st = ut_fail(msg, msg_len, AR_EINPUT,
                                 "all-reduce: the gradient callback failed for rank %d", r);
                    goto done;
                }
                g = tmp;
            }
            for (size_t i = 0; i < len; i++) {
                const uint32_t m = ar_message(&plan, g[i], stats);
                if (k == 0) {
                    acc[i] = m;
                    finite[i] = (unsigned char)is_finite(c->comm, m);
                } else {
                    acc[i] = ar_add(c->comm, acc[i], m);
                    finite[i] &= (unsigned char)is_finite(c->comm, m);
                }
                if (exact) neumaier_add(&exact[i], (double)g[i]);
            }
        }
        for (size_t i = 0; i < len; i++) {
            out[begin + i] = ar_finish(&plan, acc[i]);
            if (stats)
                ar_stats_result(c, acc[i], out[begin + i],
                                neumaier_value(&exact[i]) / ar_divisor(c, world), call->loss_scale,
                                finite[i], stats, &err2, &ref2);
        }
    }
    if (stats) ar_stats_finish(stats, err2, ref2);
done:
    free(acc);
    free(finite);
    free(exact);
    free(tmp);
    return st;
}
