/* gpu_conv: ak_conv2d_forward/backward on cuda against the cpu backend.
 *
 * Both lower the convolution to the same GEMMs with the same index code
 * (kernels/elem/im2col.h), so they differ only as their GEMMs do
 * (kernels/gemm.c states the bound): with S the sum of |products| of an
 * output (from a direct double reference), u the accumulation's unit and
 * e_in the fast types' input-rounding term,
 *   y:     2 (K + 4) 2u S + 2 e_in S + 2 ulp_y(GEMM part) + 2 ulp_y(y)
 *   dw:    2 (NP + 4) 2u S + 2 e_in S + 2 ulp_dw(dw)
 *   dx:    (2 (O + 4) 2u + 2 u_dcol) S + 2 e_in S + 2 ulp_dx(dx)
 *   dbias: ulp_dbias(dbias) + 2^-45 S  (binary64 sums in different orders)
 * with K = in_ch k_h k_w, NP = batch out_h out_w, O = out_ch.  Where no
 * sum can round (a one-hot kernel, exact inputs) the results must be equal.
 * NaN positions and infinity signs agree exactly; guards stay intact.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

static ak_backend *cpu, *gpu;

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

static double input_error(ak_compute k)
{
    const int f = k == AK_COMPUTE_32F_FAST_16BF ? 7 : 10;
    if (k == AK_COMPUTE_32F || k == AK_COMPUTE_16F) return 0;
    return 2 * ldexp(1, -f) + ldexp(1, -2 * f);
}

static size_t out_h(const ak_conv2d *c) { return (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1; }
static size_t out_w(const ak_conv2d *c) { return (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1; }

/* The sums of |products| of every output of the forward and backward. */
static void abs_sums(const ak_conv2d *c, const double *x, const double *w, const double *dy,
                     double *sy, double *sx, double *sw)
{
    const size_t nx = c->batch * c->in_ch * c->in_h * c->in_w,
                 nw = c->out_ch * c->in_ch * c->k_h * c->k_w;
    const size_t oh = out_h(c), ow = out_w(c), ny = c->batch * c->out_ch * oh * ow;
    memset(sy, 0, ny * sizeof *sy);
    memset(sx, 0, nx * sizeof *sx);
    memset(sw, 0, nw * sizeof *sw);
    for (size_t n = 0; n < c->batch; n++)
        for (size_t o = 0; o < c->out_ch; o++)
            for (size_t oy = 0; oy < oh; oy++)
                for (size_t ox = 0; ox < ow; ox++)
                    for (size_t ci = 0; ci < c->in_ch; ci++)
                        for (size_t ki = 0; ki < c->k_h; ki++)
                            for (size_t kj = 0; kj < c->k_w; kj++) {
                                const long iy = (long)(oy * c->stride + ki) - (long)c->pad;
                                const long ix = (long)(ox * c->stride + kj) - (long)c->pad;
                                if (iy < 0 || ix < 0 || iy >= (long)c->in_h || ix >= (long)c->in_w)
                                    continue;
                                const size_t xi =
                                    ((n * c->in_ch + ci) * c->in_h + (size_t)iy) * c->in_w +
                                    (size_t)ix;
                                const size_t wi = ((o * c->in_ch + ci) * c->k_h + ki) * c->k_w + kj;
                                const size_t yi = ((n * c->out_ch + o) * oh + oy) * ow + ox;
                                sy[yi] += fabs(x[xi] * w[wi]);
                                sx[xi] += fabs(w[wi] * dy[yi]);
                                sw[wi] += fabs(x[xi] * dy[yi]);
                            }
}

/* A host tensor and its copies on both backends. */
typedef struct tens {
    ak_dtype dt;
    size_t n;
    uint32_t *bits;
    double *v;
    kt_buf on_cpu, on_gpu;
} tens;

static tens t_make(ak_dtype dt, size_t n)
{
    tens t;
    memset(&t, 0, sizeof t);
    t.dt = dt;
    t.n = n;
    t.bits = calloc(n + 1, sizeof *t.bits);
    t.v = calloc(n + 1, sizeof *t.v);
    ck_assert(t.bits && t.v);
    return t;
}

static void t_upload(tens *t)
{
    void *raw = malloc(t->n * 4 + 4);
    for (size_t i = 0; i < t->n; i++) {
        t->v[i] = value_of(t->dt, t->bits[i]);
        if (t->dt == AK_F32)
            ((uint32_t *)raw)[i] = t->bits[i];
        else
            ((uint16_t *)raw)[i] = (uint16_t)t->bits[i];
    }
    t->on_cpu = kt_buf_alloc(cpu, t->n, t->dt);
    t->on_gpu = kt_buf_alloc(gpu, t->n, t->dt);
    kt_buf_upload(&t->on_cpu, raw);
    kt_buf_upload(&t->on_gpu, raw);
    free(raw);
}

static void t_random(tens *t, ts_rng *r)
{
    for (size_t i = 0; i < t->n; i++)
        t->bits[i] = bits_of(t->dt, 2 * ts_uniform(r) - 1);
    t_upload(t);
}

/* An output: NaNs on both sides (must be overwritten). */
static tens t_output(ak_dtype dt, size_t n)
{
    tens t = t_make(dt, n);
    for (size_t i = 0; i < n; i++)
        t.bits[i] = dt == AK_F32 ? 0x7FC00000u : dt == AK_F16 ? 0x7E00u : 0x7FC0u;
    t_upload(&t);
    return t;
}

static void t_free(tens *t)
{
    ck_assert(kt_buf_guards_ok(&t->on_cpu) && kt_buf_guards_ok(&t->on_gpu));
    kt_buf_free(&t->on_cpu);
    kt_buf_free(&t->on_gpu);
    free(t->bits);
    free(t->v);
}

/* Compares the two backends' results: NaN and inf exactly, values within
 * rel s[i] + ulps ulp(max) + extra[i] (all zero: equal values). */
static size_t compare(const char *what, tens *t, const double *s, double rel, double ulps,
                      const double *extra)
{
    void *raw = malloc(t->n * 4 + 4);
    uint32_t *gc = malloc((t->n + 1) * 4), *gg = malloc((t->n + 1) * 4);
    ck_assert(ak_sync(gpu) == AK_OK);
    kt_buf_download(&t->on_cpu, raw);
    for (size_t i = 0; i < t->n; i++)
        gc[i] = t->dt == AK_F32 ? ((uint32_t *)raw)[i] : ((uint16_t *)raw)[i];
    kt_buf_download(&t->on_gpu, raw);
    for (size_t i = 0; i < t->n; i++)
        gg[i] = t->dt == AK_F32 ? ((uint32_t *)raw)[i] : ((uint16_t *)raw)[i];
    size_t bad = 0;
    for (size_t i = 0; i < t->n; i++) {
        const double vc = value_of(t->dt, gc[i]), vg = value_of(t->dt, gg[i]);
        double bound = 0;
        bool ok;
        if (vc != vc || vg != vg)
            ok = vc != vc && vg != vg;
        else if (isinf(vc) || isinf(vg))
            ok = vc == vg;
        else {
            bound = rel * (s ? s[i] : 0) + ulps * ulp_of(t->dt, fmax(fabs(vc), fabs(vg))) +
                    (extra ? extra[i] : 0);
            ok = fabs(vc - vg) <= bound;
        }
        if (!ok && bad++ < 4)
            printf("%s[%zu]: cpu %.9g (0x%x), cuda %.9g (0x%x), bound %.3g\n", what, i, vc, gc[i],
                   vg, gg[i], bound);
    }
    free(raw);
    free(gc);
    free(gg);
    return bad;
}

static ak_tensor side(const tens *t, int on_gpu) { return on_gpu ? t->on_gpu.t : t->on_cpu.t; }

typedef struct pairing {
    ak_dtype in, out;
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

static ak_conv2d geom(size_t batch, size_t in_ch, size_t in_h, size_t in_w, size_t out_ch,
                      size_t k_h, size_t k_w, size_t stride, size_t pad)
{
    ak_conv2d c = {batch, in_ch, in_h, in_w, out_ch, k_h, k_w, stride, pad, AK_COMPUTE_32F};
    return c;
}

static const ak_conv2d shapes[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 0, AK_COMPUTE_32F},     {2, 3, 7, 6, 4, 3, 3, 2, 1, AK_COMPUTE_32F},
    {1, 2, 9, 9, 3, 3, 2, 3, 2, AK_COMPUTE_32F},     {3, 1, 5, 5, 2, 1, 1, 1, 0, AK_COMPUTE_32F},
    {3, 2, 5, 4, 2, 5, 4, 1, 2, AK_COMPUTE_32F},     {16, 1, 32, 32, 6, 5, 5, 1, 0, AK_COMPUTE_32F},
    {16, 6, 14, 14, 16, 5, 5, 1, 0, AK_COMPUTE_32F}, {2, 2, 3, 8, 2, 3, 3, 4, 1, AK_COMPUTE_32F},
    {1, 4, 11, 13, 5, 3, 3, 2, 2, AK_COMPUTE_32F},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Forward and backward of one shape and pairing on both backends. */
static size_t run_case(ak_conv2d c, pairing p, size_t variant, bool one_hot, bool nan_x)
{
    static const ak_dtype others[] = {AK_F32, AK_F16, AK_BF16};
    c.compute = p.k;
    char what[200];
    snprintf(what, sizeof what, "N%zu C%zu %zux%zu O%zu k%zux%zu s%zu p%zu %s %s->%s%s%s", c.batch,
             c.in_ch, c.in_h, c.in_w, c.out_ch, c.k_h, c.k_w, c.stride, c.pad, ak_compute_name(p.k),
             ak_dtype_name(p.in), ak_dtype_name(p.out), one_hot ? " one-hot" : "",
             nan_x ? " nan" : "");
    ts_rng r;
    ts_rng_init(&r, ts_seed() + variant * 977 + c.in_h);
    const size_t nx = c.batch * c.in_ch * c.in_h * c.in_w, nw = c.out_ch * c.in_ch * c.k_h * c.k_w;
    const size_t P = out_h(&c) * out_w(&c), ny = c.batch * c.out_ch * P, np = c.batch * P;
    const size_t kk = c.in_ch * c.k_h * c.k_w;
    const ak_dtype bd = others[variant % 3], dxd = others[(variant + 1) % 3];
    tens x = t_make(p.in, nx), w = t_make(p.in, nw), bias = t_make(bd, c.out_ch),
         dy = t_make(p.in, ny);
    for (size_t i = 0; i < nx; i++)
        x.bits[i] = bits_of(p.in, 2 * ts_uniform(&r) - 1);
    if (nan_x && nx > 3) {
        x.bits[nx / 2] = bits_of(p.in, NAN);
        x.bits[1] = bits_of(p.in, -INFINITY);
    }
    t_upload(&x);
    if (one_hot) { /* w[o][c][ki][kj] = 1 at a tap of its own for the first channels, else 0 */
        for (size_t o = 0; o < c.out_ch && o < kk; o++)
            w.bits[o * kk + kk - 1 - o] = bits_of(p.in, 1.0);
        t_upload(&w);
    } else
        t_random(&w, &r);
    t_random(&bias, &r);
    t_random(&dy, &r);
    tens y = t_output(p.out, ny), dx = t_output(dxd, nx), dw = t_output(p.out, nw),
         db = t_output(bd, c.out_ch);
    ak_backend *both[2] = {cpu, gpu};
    for (int i = 0; i < 2; i++) {
        ak_backend *b = both[i];
        const int on_gpu = i;
        ck_assert_msg(ak_conv2d_forward(b, &c, side(&y, on_gpu), side(&x, on_gpu), side(&w, on_gpu),
                                        side(&bias, on_gpu)) == AK_OK,
                      "%s: %s: %s", what, ak_backend_name(b), ak_error(b));
        ck_assert_msg(ak_conv2d_backward(b, &c, side(&dx, on_gpu), side(&dw, on_gpu),
                                         side(&db, on_gpu), side(&dy, on_gpu), side(&x, on_gpu),
                                         side(&w, on_gpu)) == AK_OK,
                      "%s: %s: %s", what, ak_backend_name(b), ak_error(b));
    }
    double *sy = calloc(ny + 1, 8), *sx = calloc(nx + 1, 8), *sw = calloc(nw + 1, 8),
           *sb = calloc(c.out_ch + 1, 8);
    double *gemm_part = calloc(ny + 1, 8);
    abs_sums(&c, x.v, w.v, dy.v, sy, sx, sw);
    for (size_t i = 0; i < ny; i++)
        sb[i / P % c.out_ch] += fabs(dy.v[i]);
    const double u = p.k == AK_COMPUTE_16F ? 0x1p-11 : 0x1p-24, e_in = input_error(p.k);
    size_t bad = 0;
    char name[240];
    if (one_hot) {
        /* one product per output, the rest exact zeros: equal on both */
        snprintf(name, sizeof name, "%s y", what);
        bad += compare(name, &y, NULL, 0, 0, NULL);
        snprintf(name, sizeof name, "%s dx", what);
        bad += compare(name, &dx, NULL, 0, 0, NULL);
    } else {
        /* y = RN(GEMM) + bias, rounded again: a unit of the GEMM part too */
        for (size_t i = 0; i < ny; i++)
            gemm_part[i] = 2 * ulp_of(p.out, sy[i]);
        snprintf(name, sizeof name, "%s y", what);
        bad += compare(name, &y, sy, 2 * (double)(kk + 4) * 2 * u + 2 * e_in, 2, gemm_part);
        snprintf(name, sizeof name, "%s dx", what);
        bad +=
            compare(name, &dx, sx, 2 * (double)(c.out_ch + 4) * 2 * u + 2 * u + 2 * e_in, 2, NULL);
    }
    snprintf(name, sizeof name, "%s dw", what);
    bad += compare(name, &dw, sw, 2 * (double)(np + 4) * 2 * u + 2 * e_in, 2, NULL);
    snprintf(name, sizeof name, "%s dbias", what);
    bad += compare(name, &db, sb, 0x1p-45, 1, NULL);
    t_free(&x);
    t_free(&w);
    t_free(&bias);
    t_free(&dy);
    t_free(&y);
    t_free(&dx);
    t_free(&dw);
    t_free(&db);
    free(sy);
    free(sx);
    free(sw);
    free(sb);
    free(gemm_part);
    return bad;
}

START_TEST(every_pairing_within_the_bound)
{
    cpu = kt_open_cpu();
    gpu = kt_open_cuda();
    ck_assert_ptr_nonnull(gpu);
    size_t bad = 0;
    for (size_t s = 0; s < NSHAPES; s++)
        bad += run_case(shapes[s], pairings[_i], s, false, false);
    bad += run_case(shapes[1], pairings[_i], 1, false, true);
    ck_assert_uint_eq(bad, 0);
    ak_close(cpu);
    ak_close(gpu);
}
END_TEST

/* With a one-hot kernel every output is one exact product: the backends
 * agree exactly on y and dx (the fast types excepted: cuBLAS may round
 * their inputs otherwise than the cpu). */
START_TEST(one_hot_kernels_agree_exactly)
{
    cpu = kt_open_cpu();
    gpu = kt_open_cuda();
    ck_assert_ptr_nonnull(gpu);
    size_t bad = 0;
    const size_t exact[] = {0, 4, 5, 6, 7, 8};
    for (size_t e = 0; e < sizeof exact / sizeof exact[0]; e++)
        for (size_t s = 0; s < NSHAPES; s++)
            bad += run_case(shapes[s], pairings[exact[e]], s + e, true, e == 0);
    ck_assert_uint_eq(bad, 0);
    ak_close(cpu);
    ak_close(gpu);
}
END_TEST

START_TEST(unsupported_and_bad_arguments_alike)
{
    ak_backend *both[2] = {kt_open_cpu(), kt_open_cuda()};
    ck_assert_ptr_nonnull(both[1]);
    const ak_conv2d c = geom(2, 3, 6, 6, 4, 3, 3, 1, 0);
    for (int i = 0; i < 2; i++) {
        ak_backend *b = both[i];
        kt_buf x = kt_buf_alloc(b, 216, AK_F32), w = kt_buf_alloc(b, 108, AK_F32),
               y = kt_buf_alloc(b, 128, AK_F16);
        ck_assert_int_eq(ak_conv2d_forward(b, &c, y.t, x.t, w.t, ak_tensor_none()),
                         AK_EUNSUPPORTED);
        ck_assert_str_eq(ak_error(b), "ak_conv2d_forward: compute type 32F with fp32 w and x needs "
                                      "fp32 y, got fp32/fp32/fp16");
        ak_conv2d bad = c;
        bad.compute = AK_COMPUTE_16F;
        ck_assert_int_eq(ak_conv2d_backward(b, &bad, ak_tensor_none(), w.t, ak_tensor_none(),
                                            ak_tensor_of(x.t.data, 128, AK_F32), x.t, w.t),
                         AK_EUNSUPPORTED);
        bad = c;
        bad.stride = 0;
        ck_assert_int_eq(ak_conv2d_forward(b, &bad, y.t, x.t, w.t, ak_tensor_none()), AK_EINVAL);
        ck_assert_str_eq(ak_error(b), "ak_conv2d_forward: stride is 0");
        ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&w) && kt_buf_guards_ok(&y));
        kt_buf_free(&x);
        kt_buf_free(&w);
        kt_buf_free(&y);
        ak_close(b);
    }
}
END_TEST

int main(void)
{
    kt_require_cuda_or_skip();
    Suite *s = suite_create("kernels_gpu_conv");
    TCase *tc = tcase_create("gpu_conv");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, every_pairing_within_the_bound, 0, (int)NPAIRINGS);
    tcase_add_test(tc, one_hot_kernels_agree_exactly);
    tcase_add_test(tc, unsupported_and_bad_arguments_alike);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
