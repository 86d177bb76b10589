/* test_gemm: ak_gemm on the cpu backend against references written here.
 *
 *   - 32F-accumulating pairs: a double-precision reference on the inputs
 *     as the compute type multiplies them (fp16/bf16 rounding by the
 *     emulator's scalar functions, tf32 by tf32_round below, checked by
 *     hand), within the standard bound |err| <= gamma_(k+3) S with
 *     S = |alpha| sum |a b| + |beta c| and gamma_n = n u / (1 - n u),
 *     u = 2^-24, plus one unit in the last place of a 16-bit C;
 *   - 16F: bit for bit against a sequential sum written with the
 *     emulator's fp16 fused multiply-add (never ak_round_sum);
 *   - BLAS semantics (beta == 0 overwrites a NaN C, alpha == 0 and k == 0
 *     give beta C without reading A and B), NaN/inf propagation, leading
 *     dimensions wider than the matrices (the gap must stay untouched),
 *     guard regions and bad arguments.
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* ---- values of the three formats, through the emulator's public API ------- */
static double value_of(ak_dtype dt, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    switch (dt) {
    case AK_F16: return fpe_f16_to_f64(&env, (uint16_t)bits);
    case AK_BF16: return fpe_bf16_to_f64(&env, (uint16_t)bits);
    default: return fpe_f32_to_f64(&env, bits);
    }
}

static uint32_t bits_of(ak_dtype dt, double v)
{
    fpe_env env = fpe_env_default();
    switch (dt) {
    case AK_F16: return fpe_f64_to_f16(&env, v);
    case AK_BF16: return fpe_f64_to_bf16(&env, v);
    default: return fpe_f64_to_f32(&env, v);
    }
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* One unit in the last place of dt at |x| (the subnormal spacing below the
 * normal range). */
static double ulp_of(ak_dtype dt, double x)
{
    const int frac = dt == AK_F16 ? 10 : dt == AK_BF16 ? 7 : 23;
    const int emin = dt == AK_F16 ? -14 : -126;
    int e;
    frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
    if (x == 0 || e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - frac);
}

/* tf32 as kernels/elem/gemm.h documents it, written independently: 10
 * fraction bits, fp32's exponent range with a 2^-136 quantum below 2^-126,
 * to nearest even (rint), past the largest value to infinity. */
static double tf32_round(double v)
{
    if (v != v || isinf(v) || v == 0) return v;
    int e;
    frexp(v, &e);
    int q = e - 1 - 10;
    if (q < -136) q = -136;
    const double r = ldexp(rint(ldexp(v, -q)), q);
    return fabs(r) >= 0x1p128 ? copysign(INFINITY, v) : r;
}

/* An fp32 value as compute type k multiplies it. */
static double input_as(ak_compute k, double v)
{
    fpe_env env = fpe_env_default();
    switch (k) {
    case AK_COMPUTE_32F_FAST_16F: return fpe_f16_to_f64(&env, fpe_f64_to_f16(&env, v));
    case AK_COMPUTE_32F_FAST_16BF: return fpe_bf16_to_f64(&env, fpe_f64_to_bf16(&env, v));
    case AK_COMPUTE_32F_FAST_TF32: return tf32_round(v);
    default: return v;
    }
}

static double gamma_n(double n, double u) { return n * u / (1 - n * u); }

/* ---- host matrices ---------------------------------------------------------- */
/* A random value of dt, |v| < 4, with a full significand before rounding. */
static uint32_t random_elem(ts_rng *r, ak_dtype dt)
{
    const double v = (2 * ts_uniform(r) - 1) * ldexp(1.0, (int)ts_below(r, 5) - 2);
    return bits_of(dt, v);
}

static void pack(ak_dtype dt, const uint32_t *bits, size_t n, void *out)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == AK_F32)
            ((uint32_t *)out)[i] = bits[i];
        else
            ((uint16_t *)out)[i] = (uint16_t)bits[i];
    }
}

static void unpack(ak_dtype dt, const void *in, size_t n, uint32_t *bits)
{
    for (size_t i = 0; i < n; i++)
        bits[i] = dt == AK_F32 ? ((const uint32_t *)in)[i] : ((const uint16_t *)in)[i];
}

/* A NaN pattern of dt, to fill what must not be read or written. */
static uint32_t nan_of(ak_dtype dt)
{
    return dt == AK_F32 ? 0x7FC01234u : dt == AK_F16 ? 0x7E12u : 0x7FD2u;
}

static bool is_nan_bits(ak_dtype dt, uint32_t b) { return value_of(dt, b) != value_of(dt, b); }

typedef struct gcase {
    ak_dtype ab, c;
    ak_compute k;
    size_t m, n, kk;
    bool ta, tb;
    size_t pad_a, pad_b, pad_c; /* leading dimension minus width */
    float alpha, beta;
    bool nan_c;    /* C starts as NaNs (with beta == 0 they must vanish) */
    bool specials; /* NaN and infinities planted in A and B */
    uint64_t seed;
} gcase;

typedef struct gmat {
    size_t rows, cols, ld, n;
    uint32_t *bits;
} gmat;

static gmat gmat_make(size_t rows, size_t cols, size_t pad)
{
    gmat g;
    g.rows = rows;
    g.cols = cols;
    g.ld = cols + pad;
    g.n = rows == 0 ? 0 : (rows - 1) * g.ld + cols;
    g.bits = calloc(g.n ? g.n : 1, sizeof(uint32_t));
    ck_assert_ptr_nonnull(g.bits);
    return g;
}

/* op(M)[i][j] of a stored matrix */
static uint32_t op_elem(const gmat *g, bool t, size_t i, size_t j)
{
    return t ? g->bits[j * g->ld + i] : g->bits[i * g->ld + j];
}

static void describe(const gcase *c, char *out, size_t len)
{
    snprintf(out, len,
             "%s/%s->%s %s m=%zu n=%zu k=%zu ta=%d tb=%d pads=%zu,%zu,%zu alpha=%g beta=%g%s%s",
             ak_dtype_name(c->ab), ak_dtype_name(c->ab), ak_dtype_name(c->c), ak_compute_name(c->k),
             c->m, c->n, c->kk, c->ta, c->tb, c->pad_a, c->pad_b, c->pad_c, (double)c->alpha,
             (double)c->beta, c->nan_c ? " nanC" : "", c->specials ? " specials" : "");
}

/* The 16F reference: the emulator's fp16 fused multiply-add summing in
 * order from -0, then alpha acc + beta c in fp16 (alpha, beta rounded to
 * fp16 first; alpha == 0 means C = beta C, beta == 0 means C is not read). */
static uint32_t ref_16f(const gmat *a, bool ta, const gmat *bm, bool tb, size_t i, size_t j,
                        size_t k, float alpha, float beta, uint32_t c)
{
    fpe_env env = fpe_env_default();
    const uint16_t al = fpe_f32_to_f16(&env, f32_bits(alpha)),
                   be = fpe_f32_to_f16(&env, f32_bits(beta));
    const bool beta_zero = (be & 0x7FFF) == 0;
    if ((al & 0x7FFF) == 0 || k == 0) return beta_zero ? 0 : fpe_f16_mul(&env, be, (uint16_t)c);
    uint16_t acc = 0x8000;
    for (size_t l = 0; l < k; l++)
        acc = fpe_f16_mulAdd(&env, (uint16_t)op_elem(a, ta, i, l), (uint16_t)op_elem(bm, tb, l, j),
                             acc);
    uint16_t t = fpe_f16_mul(&env, al, acc);
    if (!beta_zero) t = fpe_f16_add(&env, t, fpe_f16_mul(&env, be, (uint16_t)c));
    return t;
}

/* Runs one case on the cpu backend and checks every element; returns the
 * number of failures (the first few printed). */
static size_t run_case(ak_backend *b, const gcase *c)
{
    char what[256];
    describe(c, what, sizeof what);
    ts_rng r;
    ts_rng_init(&r, c->seed);
    gmat a = gmat_make(c->ta ? c->kk : c->m, c->ta ? c->m : c->kk, c->pad_a);
    gmat bm = gmat_make(c->tb ? c->n : c->kk, c->tb ? c->kk : c->n, c->pad_b);
    gmat cm = gmat_make(c->m, c->n, c->pad_c);
    for (size_t i = 0; i < a.n; i++)
        a.bits[i] = random_elem(&r, c->ab);
    for (size_t i = 0; i < bm.n; i++)
        bm.bits[i] = random_elem(&r, c->ab);
    for (size_t i = 0; i < cm.n; i++)
        cm.bits[i] = c->nan_c ? nan_of(c->c) : random_elem(&r, c->c);
    /* the gaps between rows of C must not be written */
    for (size_t i = 0; i < cm.n; i++)
        if (i % cm.ld >= cm.cols) cm.bits[i] = nan_of(c->c);
    if (c->specials && c->m >= 4 && c->kk >= 3 && c->n >= 3) {
        const double inf = INFINITY;
        /* op(A)[1][2] NaN, op(A)[3][0] +inf, op(B)[1][2] -inf, op(B)[0][1] 0 */
        a.bits[c->ta ? 2 * a.ld + 1 : 1 * a.ld + 2] = nan_of(c->ab);
        a.bits[c->ta ? 0 * a.ld + 3 : 3 * a.ld + 0] = bits_of(c->ab, inf);
        bm.bits[c->tb ? 2 * bm.ld + 1 : 1 * bm.ld + 2] = bits_of(c->ab, -inf);
        bm.bits[c->tb ? 1 * bm.ld + 0 : 0 * bm.ld + 1] = 0;
    }
    const size_t es = ak_dtype_size(c->ab), cs = ak_dtype_size(c->c);
    void *ha = malloc(a.n * es + 1), *hb = malloc(bm.n * es + 1), *hc = malloc(cm.n * cs + 1);
    ck_assert(ha && hb && hc);
    pack(c->ab, a.bits, a.n, ha);
    pack(c->ab, bm.bits, bm.n, hb);
    pack(c->c, cm.bits, cm.n, hc);
    kt_buf da = kt_buf_alloc(b, a.n, c->ab), db = kt_buf_alloc(b, bm.n, c->ab),
           dc = kt_buf_alloc(b, cm.n, c->c);
    kt_buf_upload(&da, ha);
    kt_buf_upload(&db, hb);
    kt_buf_upload(&dc, hc);
    ak_gemm_args g = {c->ta, c->tb, c->m, c->n,  c->kk, c->alpha, c->beta,
                      da.t,  a.ld,  db.t, bm.ld, dc.t,  cm.ld,    c->k};
    const int rc = ak_gemm(b, &g);
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    kt_buf_download(&dc, hc);
    uint32_t *got = malloc((cm.n ? cm.n : 1) * sizeof *got);
    unpack(c->c, hc, cm.n, got);
    size_t bad = 0;
    ck_assert_msg(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&db) && kt_buf_guards_ok(&dc), "%s",
                  what);
    for (size_t i = 0; i < cm.n; i++) {
        if (i % cm.ld < cm.cols || got[i] == cm.bits[i]) continue;
        if (bad++ < 4) printf("%s: gap element %zu written (0x%x)\n", what, i, got[i]);
    }
    const double u = 0x1p-24;
    const bool alpha_zero =
        c->k == AK_COMPUTE_16F ? fabs((double)c->alpha) < 0x1p-25 : c->alpha == 0;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++) {
            const size_t at = i * cm.ld + j;
            const uint32_t old = cm.bits[at], out = got[at];
            if (c->k == AK_COMPUTE_16F) {
                const uint32_t want =
                    ref_16f(&a, c->ta, &bm, c->tb, i, j, c->kk, c->alpha, c->beta, old);
                if (out == want || (is_nan_bits(AK_F16, out) && is_nan_bits(AK_F16, want)))
                    continue;
                if (bad++ < 4)
                    printf("%s: C[%zu][%zu] = 0x%04x, expected 0x%04x\n", what, i, j, out, want);
                continue;
            }
            double sum = 0, abs_sum = 0;
            for (size_t l = 0; l < c->kk && !alpha_zero; l++) {
                const double x = input_as(c->k, value_of(c->ab, op_elem(&a, c->ta, i, l)));
                const double y = input_as(c->k, value_of(c->ab, op_elem(&bm, c->tb, l, j)));
                sum += x * y;
                abs_sum += fabs(x * y);
            }
            const double cv = c->beta == 0 ? 0 : value_of(c->c, old);
            const double ref = (double)c->alpha * sum + (double)c->beta * cv;
            const double bound =
                gamma_n((double)c->kk + 3, u) *
                    (fabs((double)c->alpha) * abs_sum + fabs((double)c->beta * cv)) +
                (c->c == AK_F32 ? 0x1p-149 * (double)(c->kk + 3) : ulp_of(c->c, ref));
            const double v = value_of(c->c, out);
            bool ok;
            if (ref != ref)
                ok = v != v;
            else if (isinf(ref))
                ok = v == ref;
            else
                ok = fabs(v - ref) <= bound;
            if (!ok && bad++ < 4)
                printf("%s: C[%zu][%zu] = %.9g (0x%x), reference %.17g, bound %.3g\n", what, i, j,
                       v, out, ref, bound);
        }
    kt_buf_free(&da);
    kt_buf_free(&db);
    kt_buf_free(&dc);
    free(ha);
    free(hb);
    free(hc);
    free(got);
    free(a.bits);
    free(bm.bits);
    free(cm.bits);
    return bad;
}

/* ---- the supported pairs ------------------------------------------------------ */
typedef struct pairing {
    ak_dtype ab, c;
    ak_compute k;
} pairing;
static const pairing pairings[] = {
    {AK_F32, AK_F32, AK_COMPUTE_32F},           {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_16F},
    {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_16BF}, {AK_F32, AK_F32, AK_COMPUTE_32F_FAST_TF32},
    {AK_F16, AK_F16, AK_COMPUTE_32F},           {AK_F16, AK_F16, AK_COMPUTE_16F},
    {AK_F16, AK_F32, AK_COMPUTE_32F},           {AK_BF16, AK_BF16, AK_COMPUTE_32F},
    {AK_BF16, AK_F32, AK_COMPUTE_32F},
};
#define NPAIRINGS (sizeof pairings / sizeof pairings[0])

static gcase case_of(pairing p, size_t m, size_t n, size_t k)
{
    gcase c;
    memset(&c, 0, sizeof c);
    c.ab = p.ab;
    c.c = p.c;
    c.k = p.k;
    c.m = m;
    c.n = n;
    c.kk = k;
    c.alpha = 1;
    c.beta = 0;
    c.seed = ts_seed() + m * 131 + n * 17 + k;
    return c;
}

static const size_t shapes[][3] = {{1, 1, 1},    {7, 5, 13}, {17, 33, 65},
                                   {3, 64, 200}, {64, 3, 2}, {5, 9, 1}};
static const float scalars[][2] = {{1, 0}, {0.5f, -1.25f}, {-2, 0.75f}, {0.1f, 1}};

/* Every pair, shape, transpose combination, alpha/beta and padding. */
static size_t sweep(pairing p)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t ab = 0; ab < sizeof scalars / sizeof scalars[0]; ab++) {
                gcase c = case_of(p, shapes[s][0], shapes[s][1], shapes[s][2]);
                c.ta = t & 1;
                c.tb = t >> 1;
                c.alpha = scalars[ab][0];
                c.beta = scalars[ab][1];
                c.pad_a = (s + ab) % 3 == 0 ? 0 : 3;
                c.pad_b = (s + t) % 2 ? 1 : 0;
                c.pad_c = ab % 2 ? 5 : 0;
                c.seed += (uint64_t)t * 1000 + ab;
                bad += run_case(b, &c);
            }
    ak_close(b);
    return bad;
}

START_TEST(every_pairing_shape_and_transpose) { ck_assert_uint_eq(sweep(pairings[_i]), 0); }
END_TEST

START_TEST(beta_zero_overwrites_nan)
{
    /* BLAS, OpenBLAS and cuBLAS: beta == 0 means C is not read */
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    for (size_t p = 0; p < NPAIRINGS; p++)
        for (int t = 0; t < 4; t++) {
            gcase c = case_of(pairings[p], 6, 7, 9);
            c.ta = t & 1;
            c.tb = t >> 1;
            c.nan_c = true;
            c.pad_c = 2;
            c.alpha = -1.5f;
            bad += run_case(b, &c);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

START_TEST(nan_and_inf_propagate)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    for (size_t p = 0; p < NPAIRINGS; p++)
        for (int t = 0; t < 4; t++) {
            gcase c = case_of(pairings[p], 5, 4, 6);
            c.ta = t & 1;
            c.tb = t >> 1;
            c.specials = true;
            c.alpha = t == 3 ? -1 : 1;
            c.beta = 0.5f;
            bad += run_case(b, &c);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* alpha == 0 and k == 0: C = beta C exactly, A and B never read (NaNs). */
START_TEST(alpha_zero_and_k_zero_scale_c)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    for (size_t p = 0; p < NPAIRINGS; p++)
        for (int variant = 0; variant < 4; variant++) {
            const pairing pr = pairings[p];
            const bool k_zero = variant & 1;
            const float alpha = k_zero ? 3.0f : (pr.k == AK_COMPUTE_16F ? 1e-9f : 0.0f);
            const float beta = variant & 2 ? 0.0f : -0.3f;
            const size_t m = 3, n = 4, k = k_zero ? 0 : 2, ldc = 6, cn = (m - 1) * ldc + n;
            uint32_t abits[8], cbits[16], want[16], got[16];
            for (int i = 0; i < 8; i++)
                abits[i] = nan_of(pr.ab);
            for (size_t i = 0; i < cn; i++)
                cbits[i] = random_elem(&r, pr.c);
            cbits[0] = bits_of(pr.c, INFINITY);
            cbits[1] = nan_of(pr.c);
            fpe_env env = fpe_env_default();
            for (size_t i = 0; i < cn; i++) {
                if (i % ldc >= n)
                    want[i] = cbits[i];
                else if (beta == 0)
                    want[i] = 0;
                else if (pr.k == AK_COMPUTE_16F)
                    want[i] =
                        fpe_f16_mul(&env, fpe_f32_to_f16(&env, f32_bits(beta)), (uint16_t)cbits[i]);
                else {
                    /* fp32 product, rounded to C */
                    const uint32_t p32 = fpe_f32_mul(
                        &env, f32_bits(beta),
                        pr.c == AK_F32 ? cbits[i] : bits_of(AK_F32, value_of(pr.c, cbits[i])));
                    want[i] = pr.c == AK_F32 ? p32 : bits_of(pr.c, value_of(AK_F32, p32));
                }
            }
            kt_buf da = kt_buf_alloc(b, 8, pr.ab), dc = kt_buf_alloc(b, cn, pr.c);
            char ha[32], hc[64];
            pack(pr.ab, abits, 8, ha);
            pack(pr.c, cbits, cn, hc);
            kt_buf_upload(&da, ha);
            kt_buf_upload(&dc, hc);
            ak_gemm_args g = {false, false, m,    n, k,    alpha, beta,
                              da.t,  k,     da.t, n, dc.t, ldc,   pr.k};
            ck_assert_msg(ak_gemm(b, &g) == AK_OK, "%s", ak_error(b));
            kt_buf_download(&dc, hc);
            unpack(pr.c, hc, cn, got);
            for (size_t i = 0; i < cn; i++) {
                const bool same =
                    got[i] == want[i] || (is_nan_bits(pr.c, got[i]) && is_nan_bits(pr.c, want[i]));
                ck_assert_msg(same, "%s %s variant %d: C[%zu] = 0x%x, expected 0x%x",
                              ak_dtype_name(pr.ab), ak_compute_name(pr.k), variant, i, got[i],
                              want[i]);
            }
            ck_assert(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&dc));
            kt_buf_free(&da);
            kt_buf_free(&dc);
        }
    ak_close(b);
}
END_TEST

/* The fast types really round their inputs: 1 + 2^-20 times 1. */
START_TEST(fast_types_round_inputs)
{
    ak_backend *b = kt_open_cpu();
    kt_buf a = kt_buf_alloc(b, 1, AK_F32), one = kt_buf_alloc(b, 1, AK_F32),
           c = kt_buf_alloc(b, 1, AK_F32);
    const float x = 1.0f + 0x1p-20f, y = 1.0f;
    kt_buf_upload(&a, &x);
    kt_buf_upload(&one, &y);
    const ak_compute ks[] = {AK_COMPUTE_32F, AK_COMPUTE_32F_FAST_16F, AK_COMPUTE_32F_FAST_16BF,
                             AK_COMPUTE_32F_FAST_TF32};
    const float want[] = {1.0f + 0x1p-20f, 1.0f, 1.0f, 1.0f};
    for (int i = 0; i < 4; i++) {
        ak_gemm_args g = {false, false, 1, 1, 1, 1.0f, 0.0f, a.t, 1, one.t, 1, c.t, 1, ks[i]};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got == want[i], "%s: %a", ak_compute_name(ks[i]), (double)got);
    }
    /* fp16 overflows where bf16 and tf32 do not */
    const float big = 70000.0f;
    kt_buf_upload(&a, &big);
    for (int i = 1; i < 4; i++) {
        ak_gemm_args g = {false, false, 1, 1, 1, 1.0f, 0.0f, a.t, 1, one.t, 1, c.t, 1, ks[i]};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(i == 1 ? isinf(got) : got == (float)input_as(ks[i], 70000.0), "%s: %a",
                      ak_compute_name(ks[i]), (double)got);
    }
    kt_buf_free(&a);
    kt_buf_free(&one);
    kt_buf_free(&c);
    ak_close(b);
}
END_TEST

/* tf32 rounding by hand: input bits -> the tf32 value's fp32 bits. */
START_TEST(tf32_hand_cases)
{
    static const uint32_t cases[][2] = {
        {0x3F800800u, 0x3F800000u}, /* 1 + 2^-12: below half an ulp (2^-11) */
        {0x3F801000u, 0x3F800000u}, /* 1 + 2^-11: a tie, to even (down) */
        {0x3F803000u, 0x3F804000u}, /* 1 + 3 2^-11: a tie above the odd 1 + 2^-10: up */
        {0x3F801001u, 0x3F802000u}, /* just above a tie: up */
        {0xBF801001u, 0xBF802000u}, /* negative: symmetric */
        {0x3FFFF000u, 0x40000000u}, /* carry into the exponent: 2 - 2^-11 -> 2 */
        {0x7F7FEFFFu, 0x7F7FE000u}, /* below the tie at the top: the largest tf32 */
        {0x7F7FF000u, 0x7F800000u}, /* the tie above the largest, odd: infinity */
        {0xFF7FFFFFu, 0xFF800000u}, /* -FLT_MAX: -infinity */
        {0x00001000u, 0x00000000u}, /* 2^-137, half the subnormal quantum: a tie, to 0 */
        {0x00003000u, 0x00004000u}, /* 3 2^-137: tie above an odd quantum: up */
        {0x00001001u, 0x00002000u}, /* just above: one quantum 2^-136 */
        {0x807FFFFFu, 0x80800000u}, /* largest subnormal: up to -2^-126 */
        {0x7F800000u, 0x7F800000u}, /* infinities stay */
        {0x00000000u, 0x00000000u},
    };
    ak_backend *b = kt_open_cpu();
    kt_buf a = kt_buf_alloc(b, 1, AK_F32), one = kt_buf_alloc(b, 1, AK_F32),
           c = kt_buf_alloc(b, 1, AK_F32);
    const float y = 1.0f;
    kt_buf_upload(&one, &y);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_buf_upload(&a, &cases[i][0]);
        ak_gemm_args g = {false, false, 1,     1, 1,   1.0f, 0.0f,
                          a.t,   1,     one.t, 1, c.t, 1,    AK_COMPUTE_32F_FAST_TF32};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        uint32_t got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got == cases[i][1], "tf32(0x%08x) = 0x%08x, expected 0x%08x", cases[i][0],
                      got, cases[i][1]);
        /* the test's own rule, which the random cases rely on */
        const uint32_t mine = bits_of(AK_F32, tf32_round(value_of(AK_F32, cases[i][0])));
        ck_assert_msg(mine == cases[i][1], "tf32_round(0x%08x) = 0x%08x", cases[i][0], mine);
    }
    /* NaNs stay NaNs, even one whose payload lies in the low bits */
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u, 0xFFC00001u};
    for (int i = 0; i < 3; i++) {
        kt_buf_upload(&a, &nans[i]);
        ak_gemm_args g = {false, false, 1,     1, 1,   1.0f, 0.0f,
                          a.t,   1,     one.t, 1, c.t, 1,    AK_COMPUTE_32F_FAST_TF32};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        float got;
        kt_buf_download(&c, &got);
        ck_assert_msg(got != got, "tf32(0x%08x) is not a NaN", nans[i]);
    }
    kt_buf_free(&a);
    kt_buf_free(&one);
    kt_buf_free(&c);
    ak_close(b);
}
END_TEST

/* 16F with operands that overflow, underflow and cancel in fp16. */
START_TEST(compute_16f_edges)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 16);
    size_t bad = 0;
    const float scal[][2] = {{1, 0}, {0.1f, 0.3f}, {-3, 1}, {1e-9f, 2}, {70000.0f, 0}};
    for (int rep = 0; rep < 40; rep++) {
        gcase c =
            case_of(pairings[5], 1 + ts_below(&r, 9), 1 + ts_below(&r, 9), 1 + ts_below(&r, 40));
        c.ta = ts_below(&r, 2);
        c.tb = ts_below(&r, 2);
        c.pad_a = ts_below(&r, 3);
        c.pad_c = ts_below(&r, 3);
        c.alpha = scal[rep % 5][0];
        c.beta = scal[rep % 5][1];
        c.seed = ts_seed() + (uint64_t)rep;
        bad += run_case(b, &c);
    }
    /* magnitudes near the fp16 limits: the generic cases stay below 4 */
    const int16_t scales[] = {-20, -12, 7, 12};
    for (int s = 0; s < 4; s++) {
        const size_t m = 4, n = 5, k = 30;
        uint16_t a[4 * 30], bb[30 * 5], cc[20], out[20];
        for (size_t i = 0; i < m * k; i++)
            a[i] = (uint16_t)bits_of(AK_F16, (2 * ts_uniform(&r) - 1) * ldexp(1, scales[s]));
        for (size_t i = 0; i < k * n; i++)
            bb[i] = (uint16_t)bits_of(AK_F16, 2 * ts_uniform(&r) - 1);
        for (size_t i = 0; i < m * n; i++)
            cc[i] = (uint16_t)bits_of(AK_F16, ts_uniform(&r));
        kt_buf da = kt_buf_alloc(b, m * k, AK_F16), db = kt_buf_alloc(b, k * n, AK_F16),
               dc = kt_buf_alloc(b, m * n, AK_F16);
        kt_buf_upload(&da, a);
        kt_buf_upload(&db, bb);
        kt_buf_upload(&dc, cc);
        ak_gemm_args g = {false, false, m,    n, k,    1.0f, 1.0f,
                          da.t,  k,     db.t, n, dc.t, n,    AK_COMPUTE_16F};
        ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
        kt_buf_download(&dc, out);
        gmat ga = {m, k, k, m * k, NULL}, gb = {k, n, n, k * n, NULL};
        uint32_t abits[4 * 30], bbits[30 * 5];
        for (size_t i = 0; i < m * k; i++)
            abits[i] = a[i];
        for (size_t i = 0; i < k * n; i++)
            bbits[i] = bb[i];
        ga.bits = abits;
        gb.bits = bbits;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                const uint32_t want =
                    ref_16f(&ga, false, &gb, false, i, j, k, 1.0f, 1.0f, cc[i * n + j]);
                const uint32_t got = out[i * n + j];
                if (got != want && !(is_nan_bits(AK_F16, got) && is_nan_bits(AK_F16, want)) &&
                    bad++ < 4)
                    printf("16F scale 2^%d: C[%zu][%zu] = 0x%04x, expected 0x%04x\n", scales[s], i,
                           j, got, want);
            }
        ck_assert(kt_buf_guards_ok(&da) && kt_buf_guards_ok(&db) && kt_buf_guards_ok(&dc));
        kt_buf_free(&da);
        kt_buf_free(&db);
        kt_buf_free(&dc);
    }
    ck_assert_uint_eq(bad, 0);
    /* the sum starts from the first product alone: -1 x 0 = -0 stays -0 */
    kt_buf da = kt_buf_alloc(b, 1, AK_F16), db = kt_buf_alloc(b, 1, AK_F16),
           dc = kt_buf_alloc(b, 1, AK_F16);
    const uint16_t minus_one = 0xBC00, zero = 0;
    uint16_t got;
    kt_buf_upload(&da, &minus_one);
    kt_buf_upload(&db, &zero);
    ak_gemm_args g = {false, false, 1, 1, 1, 1.0f, 0.0f, da.t, 1, db.t, 1, dc.t, 1, AK_COMPUTE_16F};
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    kt_buf_download(&dc, &got);
    ck_assert_uint_eq(got, 0x8000);
    kt_buf_free(&da);
    kt_buf_free(&db);
    kt_buf_free(&dc);
    ak_close(b);
}
END_TEST

/* ---- bad arguments ---------------------------------------------------------------- */
static void expect_fail(ak_backend *b, const ak_gemm_args *g, int code, const char *text)
{
    const int rc = ak_gemm(b, g);
    ck_assert_msg(rc == code, "expected %d, got %d (%s) for '%s'", code, rc, ak_error(b), text);
    ck_assert_msg(strstr(ak_error(b), "ak_gemm: ") == ak_error(b) && strstr(ak_error(b), text),
                  "message '%s' lacks '%s'", ak_error(b), text);
}

START_TEST(bad_arguments)
{
    ak_backend *b = kt_open_cpu();
    static float fa[64], fb[64], fc[64];
    static uint16_t ha[64], hb[64], hc[64];
    const ak_gemm_args ok = {false, false,
                             3,     4,
                             5,     1.0f,
                             0.0f,  ak_tensor_of(fa, 15, AK_F32),
                             5,     ak_tensor_of(fb, 20, AK_F32),
                             4,     ak_tensor_of(fc, 12, AK_F32),
                             4,     AK_COMPUTE_32F};
    ck_assert_int_eq(ak_gemm(b, &ok), AK_OK);
    ck_assert_int_eq(ak_gemm(NULL, &ok), AK_EINVAL);
    ck_assert_int_eq(ak_gemm(b, NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_gemm: g is NULL"), "%s", ak_error(b));
    ak_gemm_args g = ok;
    g.compute = (ak_compute)9;
    expect_fail(b, &g, AK_EINVAL, "invalid compute type (9)");

    /* unsupported pairs name the compute type and the dtypes */
    const ak_tensor a16 = ak_tensor_of(ha, 15, AK_F16), b16 = ak_tensor_of(hb, 20, AK_F16),
                    c16 = ak_tensor_of(hc, 12, AK_F16), abf = ak_tensor_of(ha, 15, AK_BF16),
                    bbf = ak_tensor_of(hb, 20, AK_BF16), cbf = ak_tensor_of(hc, 12, AK_BF16);
    g = ok;
    g.a = abf, g.b = bbf, g.c = cbf, g.compute = AK_COMPUTE_16F;
    expect_fail(b, &g, AK_EUNSUPPORTED,
                "compute type 16F needs fp16 A, B and C, got bf16/bf16/bf16");
    g = ok;
    g.compute = AK_COMPUTE_16F;
    expect_fail(b, &g, AK_EUNSUPPORTED,
                "compute type 16F needs fp16 A, B and C, got fp32/fp32/fp32");
    g = ok;
    g.a = a16, g.b = b16, g.c = c16, g.compute = AK_COMPUTE_32F_FAST_TF32;
    expect_fail(b, &g, AK_EUNSUPPORTED,
                "compute type 32F_FAST_TF32 needs fp32 A, B and C, got fp16/fp16/fp16");
    g.compute = AK_COMPUTE_32F_FAST_16F;
    expect_fail(b, &g, AK_EUNSUPPORTED, "32F_FAST_16F needs fp32");
    g = ok;
    g.a = a16, g.b = bbf;
    expect_fail(b, &g, AK_EUNSUPPORTED,
                "compute type 32F needs A and B of one dtype, got fp16/bf16/fp32");
    g = ok;
    g.c = c16;
    expect_fail(b, &g, AK_EUNSUPPORTED, "with fp32 A and B needs fp32 C, got fp32/fp32/fp16");
    g = ok;
    g.a = a16, g.b = b16, g.c = cbf;
    expect_fail(b, &g, AK_EUNSUPPORTED,
                "with fp16 A and B needs fp16 or fp32 C, got fp16/fp16/bf16");
    g.c = ak_tensor_of(fc, 12, (ak_dtype)7);
    expect_fail(b, &g, AK_EINVAL, "C has an invalid dtype");

    /* shapes and leading dimensions */
    g = ok;
    g.lda = 4;
    expect_fail(b, &g, AK_EINVAL, "lda = 4 is less than the 5 columns of A");
    g = ok;
    g.trans_a = true; /* A is 5 x 3 */
    expect_fail(b, &g, AK_EINVAL, "A has 15 elements, a 5 x 3 matrix with ld 5 needs 23");
    g.lda = 2;
    expect_fail(b, &g, AK_EINVAL, "lda = 2 is less than the 3 columns of A");
    g.lda = 3;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    g = ok;
    g.ldb = 3;
    expect_fail(b, &g, AK_EINVAL, "ldb = 3 is less than the 4 columns of B");
    g = ok;
    g.trans_b = true; /* B is 4 x 5 */
    expect_fail(b, &g, AK_EINVAL, "ldb = 4 is less than the 5 columns of B");
    g = ok;
    g.ldc = 2;
    expect_fail(b, &g, AK_EINVAL, "ldc = 2 is less than the 4 columns of C");
    g = ok;
    g.a.n = 14;
    expect_fail(b, &g, AK_EINVAL, "A has 14 elements, a 3 x 5 matrix with ld 5 needs 15");
    g = ok;
    g.ldc = 6; /* needs 2 * 6 + 4 = 16 */
    expect_fail(b, &g, AK_EINVAL, "C has 12 elements, a 3 x 4 matrix with ld 6 needs 16");
    g = ok;
    g.b.n = 19;
    expect_fail(b, &g, AK_EINVAL, "B has 19 elements");
    g = ok;
    g.a.data = NULL;
    expect_fail(b, &g, AK_EINVAL, "A is NULL");
    g = ok;
    g.c.data = (char *)fc + 2;
    expect_fail(b, &g, AK_EINVAL, "not aligned");
    g = ok;
    g.m = (size_t)INT_MAX + 1;
    expect_fail(b, &g, AK_EINVAL, "m = 2147483648 exceeds INT_MAX");
    g = ok;
    g.lda = (size_t)INT_MAX + 1;
    expect_fail(b, &g, AK_EINVAL, "lda = 2147483648 exceeds INT_MAX");

    /* empty products: nothing to do, nothing touched */
    fc[0] = 42.0f;
    g = ok;
    g.m = 0;
    g.a = ak_tensor_none();
    g.c = ak_tensor_none();
    g.lda = 5;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    g = ok;
    g.n = 0;
    g.ldb = 0, g.ldc = 0;
    ck_assert_int_eq(ak_gemm(b, &g), AK_OK);
    ck_assert(fc[0] == 42.0f);
    ck_assert_str_eq(ak_error(b), "");
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, every_pairing_shape_and_transpose, 0, (int)NPAIRINGS);
    tcase_add_test(tc, beta_zero_overwrites_nan);
    tcase_add_test(tc, nan_and_inf_propagate);
    tcase_add_test(tc, alpha_zero_and_k_zero_scale_c);
    tcase_add_test(tc, fast_types_round_inputs);
    tcase_add_test(tc, tf32_hand_cases);
    tcase_add_test(tc, compute_16f_edges);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
