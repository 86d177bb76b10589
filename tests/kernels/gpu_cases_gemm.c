/* gpu_cases_gemm: ak_gemm on cuda against the cpu backend, same inputs.
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

#include "gpu_ops.h"
#include "ref_gemm.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* One matrix on the host and in both backends' memory. */
typedef struct mat {
    ref_mat h;
    kt_twin d;
} mat;

static void mat_upload(mat *m)
{
    m->d = kt_twin_alloc(cpu, gpu, m->h.n, m->h.dt);
    kt_twin_put(&m->d, m->h.bits);
}

static void mat_free(mat *m)
{
    kt_twin_free(&m->d);
    ref_mat_free(&m->h);
}

static size_t run_case(const go_cmp *cmp, const ref_gcase *c)
{
    char what[256];
    ref_gemm_describe(c, what, sizeof what);
    ts_rng r;
    ts_rng_init(&r, c->seed);
    mat a, b, cm;
    ref_gemm_mats(c, &a.h, &b.h, &cm.h);
    const double scale = c->scale > 0 ? c->scale : 4;
    for (size_t i = 0; i < a.h.n; i++)
        a.h.bits[i] = kt_from_f64(a.h.dt, (2 * ts_uniform(&r) - 1) * scale);
    for (size_t i = 0; i < b.h.n; i++)
        b.h.bits[i] = kt_from_f64(b.h.dt, (2 * ts_uniform(&r) - 1) * scale);
    for (size_t i = 0; i < cm.h.n; i++)
        cm.h.bits[i] = c->nan_c || ref_mat_in_gap(&cm.h, i)
                           ? kt_marker_nan(cm.h.dt)
                           : kt_from_f64(cm.h.dt, 2 * ts_uniform(&r) - 1);
    ref_gemm_plant_specials(c, &a.h, &b.h);
    mat_upload(&a);
    mat_upload(&b);
    mat_upload(&cm);
    ak_gemm_args g = {c->ta,  c->tb,   c->m,   c->n,     c->k,    c->alpha, c->beta, a.d.c.t,
                      a.h.ld, b.d.c.t, b.h.ld, cm.d.c.t, cm.h.ld, c->p.k,   NULL};
    ck_assert_msg(ak_gemm(cpu, &g) == AK_OK, "%s: cpu: %s", what, ak_error(cpu));
    g.a = a.d.g.t, g.b = b.d.g.t, g.c = cm.d.g.t;
    ck_assert_msg(ak_gemm(gpu, &g) == AK_OK, "%s: cuda: %s", what, ak_error(gpu));
    ck_assert_msg(ak_sync(gpu) == AK_OK, "%s: cuda: %s", what, ak_error(gpu));
    uint32_t *gc = malloc((cm.h.n + 1) * 4), *gg = malloc((cm.h.n + 1) * 4);
    kt_buf_get(&cm.d.c, gc);
    kt_buf_get(&cm.d.g, gg);
    const double u = kt_compute_unit(c->p.k), e_in = kt_compute_input_error(c->p.k);
    /* the stated bound less its ulp term, per element (gemm.c) */
    double *bound = calloc(cm.h.n + 1, sizeof *bound);
    ck_assert_ptr_nonnull(bound);
    size_t bad = 0;
    for (size_t i = 0; i < cm.h.n; i++) {
        const size_t row = i / cm.h.ld, col = i % cm.h.ld;
        if (ref_mat_in_gap(&cm.h, i)) {
            if ((gg[i] != cm.h.bits[i] || gc[i] != cm.h.bits[i]) && bad++ < 4)
                printf("%s: gap element %zu written (cpu 0x%x, cuda 0x%x)\n", what, i, gc[i],
                       gg[i]);
            gg[i] = gc[i]; /* checked: equal for the comparison below */
            continue;
        }
        if (c->exact) continue;
        double s = 0, s_raw = 0;
        for (size_t l = 0; l < c->k; l++) {
            const double x = kt_value(a.h.dt, ref_mat_op(&a.h, c->ta, row, l));
            const double y = kt_value(b.h.dt, ref_mat_op(&b.h, c->tb, l, col));
            s += fabs(kt_compute_input(c->p.k, x) * kt_compute_input(c->p.k, y));
            s_raw += fabs(x * y);
        }
        const double cv =
            c->beta == 0 ? 0 : fabs((double)c->beta * kt_value(cm.h.dt, cm.h.bits[i]));
        s = fabs((double)c->alpha) * s + cv;
        s_raw *= fabs((double)c->alpha);
        bound[i] = 2 * (double)(c->k + 4) * 2 * u * s + 2 * e_in * s_raw;
    }
    /* k == 0 and alpha == 0: the same element code on both, equal values */
    static const go_cmp equal = {GO_CLOSE, 0, 0, 0, false, false, "equal values"};
    bad += go_compare(what, c->exact ? &equal : cmp, cm.h.dt, gc, gg, cm.h.n, bound, NULL);
    free(bound);
    free(gc);
    free(gg);
    mat_free(&a);
    mat_free(&b);
    mat_free(&cm);
    return bad;
}

GO_CASE(every_pairing_within_the_bound)
{
    const go_cmp *cmp = &c->cmp;
    static const size_t shapes[][3] = {{1, 1, 1},       {7, 5, 13},   {17, 33, 65},
                                       {3, 64, 200},    {64, 3, 2},   {128, 96, 80},
                                       {256, 256, 256}, {8, 8, 8192}, {1, 300, 1000}};
    static const float scalars[][2] = {{1, 0}, {0.5f, -1.25f}, {-2, 0.75f}, {0.1f, 1}};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            ref_gcase gc = ref_gemm_case(kt_pairings[_i], shapes[s][0], shapes[s][1], shapes[s][2],
                                         t, s * 100 + (size_t)t);
            gc.alpha = scalars[(s + (size_t)t) % 4][0];
            gc.beta = scalars[(s + (size_t)t) % 4][1];
            gc.pad_a = (s + (size_t)t) % 3;
            gc.pad_b = (size_t)t % 2 * 5;
            gc.pad_c = s % 2 * 3;
            /* keep 16-bit results and fp16 partial sums far from overflow */
            if (kt_pairings[_i].out != AK_F32 || kt_pairings[_i].k == AK_COMPUTE_32F_FAST_16F)
                gc.scale = gc.k > 1000 ? 0.25 : 1;
            bad += run_case(cmp, &gc);
        }
    ck_assert_uint_eq(bad, 0);
}

GO_CASE(beta_zero_nan_c_and_specials)
{
    const go_cmp *cmp = &c->cmp;
    size_t bad = 0;
    for (size_t p = 0; p < KT_NPAIRINGS; p++)
        for (int t = 0; t < 4; t++) {
            const ref_gcase nan_c = ref_gemm_nan_c_case(kt_pairings[p], t, p * 10 + (size_t)t);
            bad += run_case(cmp, &nan_c);
            const ref_gcase specials =
                ref_gemm_specials_case(kt_pairings[p], t, p * 10 + (size_t)t + 5);
            bad += run_case(cmp, &specials);
        }
    ck_assert_uint_eq(bad, 0);
}

GO_CASE(k_zero_and_alpha_zero_bit_exact)
{
    const go_cmp *cmp = &c->cmp;
    size_t bad = 0;
    for (size_t p = 0; p < KT_NPAIRINGS; p++)
        for (int v = 0; v < 4; v++) {
            ref_gcase gc =
                ref_gemm_case(kt_pairings[p], 9, 11, v & 1 ? 0 : 5, 0, p * 4 + (size_t)v);
            gc.alpha = v & 1 ? 2.0f : 0.0f;
            gc.beta = v & 2 ? 0.0f : -0.3f;
            gc.pad_c = 3;
            gc.exact = true;
            bad += run_case(cmp, &gc);
        }
    ck_assert_uint_eq(bad, 0);
}

GO_CASE(unsupported_and_bad_arguments_alike)
{
    ak_backend *both[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++) {
        ak_backend *b = both[i];
        kt_buf a = kt_buf_alloc(b, 64, AK_F32), h = kt_buf_alloc(b, 64, AK_BF16);
        ak_gemm_args g = {false, false, 4, 4,   4, 1.0f,           0.0f, h.t,
                          4,     h.t,   4, h.t, 4, AK_COMPUTE_16F, NULL};
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
}

#define GEMM_CMP                                                                                   \
    {                                                                                              \
        GO_CLOSE, 0, 1, 1, false, false,                                                           \
            "kernels/gemm.c: 2 (k + 4) 2u S + 2 e_in S' + ulp_C(max(|C_cuda|, |C_cpu|))"           \
    }
static const go_case rows[] = {
    {"gemm", "every_pairing_within_the_bound", KT_NPAIRINGS, every_pairing_within_the_bound,
     GEMM_CMP},
    {"gemm", "beta_zero_nan_c_and_specials", 1, beta_zero_nan_c_and_specials, GEMM_CMP},
    {"gemm", "k_zero_and_alpha_zero_bit_exact", 1, k_zero_and_alpha_zero_bit_exact, GEMM_CMP},
    {"gemm", "unsupported_and_bad_arguments_alike", 1, unsupported_and_bad_arguments_alike,
     GO_BITS},
};
GO_FAMILY(gemm, rows);
