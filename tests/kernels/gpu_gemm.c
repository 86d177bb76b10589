/* gpu_gemm: ak_gemm on cuda against the cpu backend, same inputs.
 *
 * The bound is the one kernels/gemm.c states: with S = |alpha| sum |a' b'|
 * + |beta c| over the inputs as the compute type multiplies them, S' the
 * same over the unrounded fp32 inputs and u the accumulation's unit
 * (2^-24; 2^-11 for 16F),
 *   |C_cuda - C_cpu| <= 2 (k + 4) 2u S + 2 e_in S' + ulp_C(max(|C_cuda|, |C_cpu|)),
 * e_in = 2 2^-f + 2^-2f for the fast types (f = 10 fp16/tf32, 7 bf16), else 0.
 * NaN positions and the signs of infinities must agree exactly; k == 0 and
 * alpha == 0 (the same element code on both) bit for bit; guard regions and
 * the gaps of wide leading dimensions untouched; unsupported pairs and bad
 * arguments rejected alike.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

static ak_backend *cpu, *gpu;

static void open_both(void)
{
    cpu = kt_open_cpu();
    gpu = kt_open_cuda();
    ck_assert_ptr_nonnull(gpu);
}

static void close_both(void)
{
    ak_close(cpu);
    ak_close(gpu);
}

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

static double ulp_of(ak_dtype dt, double x)
{
    const int frac = dt == AK_F16 ? 10 : dt == AK_BF16 ? 7 : 23;
    const int emin = dt == AK_F16 ? -14 : -126;
    int e;
    frexp(fabs(x), &e);
    if (x == 0 || e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - frac);
}

/* An fp32 input as the cpu rounds it for a fast type (tf32: 10 fraction
 * bits, to nearest even). */
static double input_as(ak_compute k, double v)
{
    fpe_env env = fpe_env_default();
    switch (k) {
    case AK_COMPUTE_32F_FAST_16F: return fpe_f16_to_f64(&env, fpe_f64_to_f16(&env, v));
    case AK_COMPUTE_32F_FAST_16BF: return fpe_bf16_to_f64(&env, fpe_f64_to_bf16(&env, v));
    case AK_COMPUTE_32F_FAST_TF32: {
        if (v == 0 || v != v || isinf(v)) return v;
        int e;
        frexp(v, &e);
        const int q = e - 11 < -136 ? -136 : e - 11;
        return ldexp(rint(ldexp(v, -q)), q);
    }
    default: return v;
    }
}

static double input_error(ak_compute k)
{
    const int f = k == AK_COMPUTE_32F_FAST_16BF ? 7 : 10;
    if (k == AK_COMPUTE_32F || k == AK_COMPUTE_16F) return 0;
    return 2 * ldexp(1, -f) + ldexp(1, -2 * f);
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

static uint32_t nan_of(ak_dtype dt)
{
    return dt == AK_F32 ? 0x7FC01234u : dt == AK_F16 ? 0x7E12u : 0x7FD2u;
}

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

typedef struct gcase {
    pairing p;
    size_t m, n, k;
    bool ta, tb;
    size_t pad_a, pad_b, pad_c;
    float alpha, beta;
    bool nan_c, specials, exact;
    double scale; /* |inputs| < scale */
    uint64_t seed;
} gcase;

/* One matrix in host and both backends' memory. */
typedef struct mat {
    ak_dtype dt;
    size_t rows, cols, ld, n;
    uint32_t *bits;
    kt_buf on_cpu, on_gpu;
} mat;

static mat mat_make(ak_dtype dt, size_t rows, size_t cols, size_t pad)
{
    mat m;
    m.dt = dt;
    m.rows = rows;
    m.cols = cols;
    m.ld = cols + pad;
    m.n = rows == 0 ? 0 : (rows - 1) * m.ld + cols;
    m.bits = calloc(m.n + 1, sizeof(uint32_t));
    ck_assert_ptr_nonnull(m.bits);
    return m;
}

static void mat_upload(mat *m)
{
    void *raw = malloc(m->n * 4 + 4);
    pack(m->dt, m->bits, m->n, raw);
    m->on_cpu = kt_buf_alloc(cpu, m->n, m->dt);
    m->on_gpu = kt_buf_alloc(gpu, m->n, m->dt);
    kt_buf_upload(&m->on_cpu, raw);
    kt_buf_upload(&m->on_gpu, raw);
    free(raw);
}

static void mat_free(mat *m)
{
    ck_assert(kt_buf_guards_ok(&m->on_cpu) && kt_buf_guards_ok(&m->on_gpu));
    kt_buf_free(&m->on_cpu);
    kt_buf_free(&m->on_gpu);
    free(m->bits);
}

static uint32_t op_elem(const mat *m, bool t, size_t i, size_t j)
{
    return t ? m->bits[j * m->ld + i] : m->bits[i * m->ld + j];
}

static size_t run_case(const gcase *c)
{
    char what[256];
    snprintf(what, sizeof what, "%s->%s %s m=%zu n=%zu k=%zu ta=%d tb=%d alpha=%g beta=%g%s%s",
             ak_dtype_name(c->p.ab), ak_dtype_name(c->p.c), ak_compute_name(c->p.k), c->m, c->n,
             c->k, c->ta, c->tb, (double)c->alpha, (double)c->beta, c->nan_c ? " nanC" : "",
             c->specials ? " specials" : "");
    ts_rng r;
    ts_rng_init(&r, c->seed);
    mat a = mat_make(c->p.ab, c->ta ? c->k : c->m, c->ta ? c->m : c->k, c->pad_a);
    mat b = mat_make(c->p.ab, c->tb ? c->n : c->k, c->tb ? c->k : c->n, c->pad_b);
    mat cm = mat_make(c->p.c, c->m, c->n, c->pad_c);
    const double scale = c->scale > 0 ? c->scale : 4;
    for (size_t i = 0; i < a.n; i++)
        a.bits[i] = bits_of(a.dt, (2 * ts_uniform(&r) - 1) * scale);
    for (size_t i = 0; i < b.n; i++)
        b.bits[i] = bits_of(b.dt, (2 * ts_uniform(&r) - 1) * scale);
    for (size_t i = 0; i < cm.n; i++)
        cm.bits[i] = c->nan_c || i % cm.ld >= cm.cols ? nan_of(cm.dt)
                                                      : bits_of(cm.dt, 2 * ts_uniform(&r) - 1);
    if (c->specials && c->m >= 4 && c->k >= 3 && c->n >= 3) {
        a.bits[c->ta ? 2 * a.ld + 1 : 1 * a.ld + 2] = nan_of(a.dt);
        a.bits[c->ta ? 0 * a.ld + 3 : 3 * a.ld + 0] = bits_of(a.dt, INFINITY);
        b.bits[c->tb ? 2 * b.ld + 1 : 1 * b.ld + 2] = bits_of(b.dt, -INFINITY);
        b.bits[c->tb ? 1 * b.ld + 0 : 0 * b.ld + 1] = 0;
    }
    mat_upload(&a);
    mat_upload(&b);
    mat_upload(&cm);
    ak_gemm_args g = {c->ta,      c->tb, c->m,       c->n, c->k,        c->alpha, c->beta,
                      a.on_cpu.t, a.ld,  b.on_cpu.t, b.ld, cm.on_cpu.t, cm.ld,    c->p.k};
    ck_assert_msg(ak_gemm(cpu, &g) == AK_OK, "%s: cpu: %s", what, ak_error(cpu));
    g.a = a.on_gpu.t, g.b = b.on_gpu.t, g.c = cm.on_gpu.t;
    ck_assert_msg(ak_gemm(gpu, &g) == AK_OK, "%s: cuda: %s", what, ak_error(gpu));
    ck_assert_msg(ak_sync(gpu) == AK_OK, "%s: cuda: %s", what, ak_error(gpu));
    void *raw = malloc(cm.n * 4 + 4);
    uint32_t *gc = malloc((cm.n + 1) * 4), *gg = malloc((cm.n + 1) * 4);
    kt_buf_download(&cm.on_cpu, raw);
    unpack(cm.dt, raw, cm.n, gc);
    kt_buf_download(&cm.on_gpu, raw);
    unpack(cm.dt, raw, cm.n, gg);
    const double u = c->p.k == AK_COMPUTE_16F ? 0x1p-11 : 0x1p-24, e_in = input_error(c->p.k);
    size_t bad = 0;
    for (size_t i = 0; i < cm.n; i++) {
        const size_t row = i / cm.ld, col = i % cm.ld;
        if (col >= cm.cols) {
            if ((gg[i] != cm.bits[i] || gc[i] != cm.bits[i]) && bad++ < 4)
                printf("%s: gap element %zu written (cpu 0x%x, cuda 0x%x)\n", what, i, gc[i],
                       gg[i]);
            continue;
        }
        const double vc = value_of(cm.dt, gc[i]), vg = value_of(cm.dt, gg[i]);
        double bound = 0;
        bool ok;
        if (vc != vc || vg != vg)
            ok = vc != vc && vg != vg;
        else if (isinf(vc) || isinf(vg))
            ok = vc == vg;
        else if (c->exact)
            ok = vc == vg;
        else {
            double s = 0, s_raw = 0;
            for (size_t l = 0; l < c->k; l++) {
                const double x = value_of(a.dt, op_elem(&a, c->ta, row, l));
                const double y = value_of(b.dt, op_elem(&b, c->tb, l, col));
                s += fabs(input_as(c->p.k, x) * input_as(c->p.k, y));
                s_raw += fabs(x * y);
            }
            const double cv =
                c->beta == 0 ? 0 : fabs((double)c->beta * value_of(cm.dt, cm.bits[i]));
            s = fabs((double)c->alpha) * s + cv;
            s_raw *= fabs((double)c->alpha);
            bound = 2 * (double)(c->k + 4) * 2 * u * s + 2 * e_in * s_raw +
                    ulp_of(cm.dt, fmax(fabs(vc), fabs(vg)));
            ok = fabs(vc - vg) <= bound;
        }
        if (!ok && bad++ < 4)
            printf("%s: C[%zu][%zu] cpu %.9g (0x%x), cuda %.9g (0x%x), bound %.3g\n", what, row,
                   col, vc, gc[i], vg, gg[i], bound);
    }
    free(raw);
    free(gc);
    free(gg);
    mat_free(&a);
    mat_free(&b);
    mat_free(&cm);
    return bad;
}

static gcase case_of(pairing p, size_t m, size_t n, size_t k, uint64_t seed)
{
    gcase c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.m = m;
    c.n = n;
    c.k = k;
    c.alpha = 1;
    c.seed = ts_seed() + seed;
    return c;
}

START_TEST(every_pairing_within_the_bound)
{
    open_both();
    static const size_t shapes[][3] = {{1, 1, 1},       {7, 5, 13},   {17, 33, 65},
                                       {3, 64, 200},    {64, 3, 2},   {128, 96, 80},
                                       {256, 256, 256}, {8, 8, 8192}, {1, 300, 1000}};
    static const float scalars[][2] = {{1, 0}, {0.5f, -1.25f}, {-2, 0.75f}, {0.1f, 1}};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            gcase c = case_of(pairings[_i], shapes[s][0], shapes[s][1], shapes[s][2],
                              s * 100 + (size_t)t);
            c.ta = t & 1;
            c.tb = t >> 1;
            c.alpha = scalars[(s + (size_t)t) % 4][0];
            c.beta = scalars[(s + (size_t)t) % 4][1];
            c.pad_a = (s + (size_t)t) % 3;
            c.pad_b = (size_t)t % 2 * 5;
            c.pad_c = s % 2 * 3;
            /* keep 16-bit results and fp16 partial sums far from overflow */
            if (pairings[_i].c != AK_F32 || pairings[_i].k == AK_COMPUTE_32F_FAST_16F)
                c.scale = c.k > 1000 ? 0.25 : 1;
            bad += run_case(&c);
        }
    ck_assert_uint_eq(bad, 0);
    close_both();
}
END_TEST

START_TEST(beta_zero_nan_c_and_specials)
{
    open_both();
    size_t bad = 0;
    for (size_t p = 0; p < NPAIRINGS; p++)
        for (int t = 0; t < 4; t++) {
            gcase c = case_of(pairings[p], 6, 7, 9, p * 10 + (size_t)t);
            c.ta = t & 1;
            c.tb = t >> 1;
            c.nan_c = true;
            c.pad_c = 2;
            c.alpha = -1.5f;
            bad += run_case(&c);
            c = case_of(pairings[p], 5, 4, 6, p * 10 + (size_t)t + 5);
            c.ta = t & 1;
            c.tb = t >> 1;
            c.specials = true;
            c.beta = 0.5f;
            c.alpha = t == 3 ? -1 : 1;
            bad += run_case(&c);
        }
    ck_assert_uint_eq(bad, 0);
    close_both();
}
END_TEST

START_TEST(k_zero_and_alpha_zero_bit_exact)
{
    open_both();
    size_t bad = 0;
    for (size_t p = 0; p < NPAIRINGS; p++)
        for (int v = 0; v < 4; v++) {
            gcase c = case_of(pairings[p], 9, 11, v & 1 ? 0 : 5, p * 4 + (size_t)v);
            c.alpha = v & 1 ? 2.0f : 0.0f;
            c.beta = v & 2 ? 0.0f : -0.3f;
            c.pad_c = 3;
            c.exact = true;
            bad += run_case(&c);
        }
    ck_assert_uint_eq(bad, 0);
    close_both();
}
END_TEST

START_TEST(unsupported_and_bad_arguments_alike)
{
    open_both();
    ak_backend *both[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++) {
        ak_backend *b = both[i];
        kt_buf a = kt_buf_alloc(b, 64, AK_F32), h = kt_buf_alloc(b, 64, AK_BF16);
        ak_gemm_args g = {false, false, 4,   4, 4,   1.0f, 0.0f,
                          h.t,   4,     h.t, 4, h.t, 4,    AK_COMPUTE_16F};
        ck_assert_int_eq(ak_gemm(b, &g), AK_EUNSUPPORTED);
        ck_assert_str_eq(ak_error(b),
                         "ak_gemm: compute type 16F needs fp16 A, B and C, got bf16/bf16/bf16");
        g.a = a.t, g.b = a.t, g.c = a.t, g.compute = AK_COMPUTE_16F;
        ck_assert_int_eq(ak_gemm(b, &g), AK_EUNSUPPORTED);
        g.compute = AK_COMPUTE_32F;
        g.c = h.t;
        ck_assert_int_eq(ak_gemm(b, &g), AK_EUNSUPPORTED);
        g.c = a.t;
        g.lda = 3;
        ck_assert_int_eq(ak_gemm(b, &g), AK_EINVAL);
        ck_assert_str_eq(ak_error(b), "ak_gemm: lda = 3 is less than the 4 columns of A");
        g.lda = 4;
        g.ldc = 40;
        ck_assert_int_eq(ak_gemm(b, &g), AK_EINVAL);
        ck_assert(kt_buf_guards_ok(&a) && kt_buf_guards_ok(&h));
        kt_buf_free(&a);
        kt_buf_free(&h);
    }
    close_both();
}
END_TEST

int main(void)
{
    kt_require_cuda_or_skip();
    Suite *s = suite_create("kernels_gpu_gemm");
    TCase *tc = tcase_create("gpu_gemm");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, every_pairing_within_the_bound, 0, (int)NPAIRINGS);
    tcase_add_test(tc, beta_zero_nan_c_and_specials);
    tcase_add_test(tc, k_zero_and_alpha_zero_bit_exact);
    tcase_add_test(tc, unsupported_and_bad_arguments_alike);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
