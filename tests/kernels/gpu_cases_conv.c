/* gpu_cases_conv: ak_conv2d_forward/backward on cuda against the cpu backend.
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

#include "gpu_ops.h"
#include "ref_conv.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* A host tensor and its copies on both backends. */
typedef struct tens {
    ref_tensor h;
    kt_twin d;
} tens;

static tens t_upload(ref_tensor h)
{
    tens t = {h, kt_twin_alloc(cpu, gpu, h.n, h.dt)};
    kt_twin_put(&t.d, h.bits);
    return t;
}

static tens t_random(ak_dtype dt, size_t n, ts_rng *r)
{
    ref_tensor h = ref_tensor_make(dt, n);
    ref_tensor_random(&h, r);
    return t_upload(h);
}

/* An output: NaNs on both sides (must be overwritten). */
static tens t_output(ak_dtype dt, size_t n)
{
    ref_tensor h = ref_tensor_make(dt, n);
    ref_tensor_fill(&h, kt_marker_nan(dt));
    return t_upload(h);
}

static void t_free(tens *t)
{
    kt_twin_free(&t->d);
    ref_tensor_free(&t->h);
}

/* Compares the two backends' results as cmp says, with rel and ulps in
 * place of its own (the terms of the output's bound), s[i] the sum of
 * |products| and extra[i] more (all zero: equal values). */
static size_t compare(const char *what, const go_cmp *cmp, tens *t, const double *s, double rel,
                      double ulps, const double *extra)
{
    go_cmp here = *cmp;
    here.rel = rel;
    here.ulps = ulps;
    ck_assert(ak_sync(gpu) == AK_OK);
    return go_compare_twin(what, &here, &t->d, s, extra);
}

static ak_tensor side(const tens *t, int on_gpu) { return on_gpu ? t->d.g.t : t->d.c.t; }

static const ak_conv2d shapes[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 0, AK_COMPUTE_32F},     {2, 3, 7, 6, 4, 3, 3, 2, 1, AK_COMPUTE_32F},
    {1, 2, 9, 9, 3, 3, 2, 3, 2, AK_COMPUTE_32F},     {3, 1, 5, 5, 2, 1, 1, 1, 0, AK_COMPUTE_32F},
    {3, 2, 5, 4, 2, 5, 4, 1, 2, AK_COMPUTE_32F},     {16, 1, 32, 32, 6, 5, 5, 1, 0, AK_COMPUTE_32F},
    {16, 6, 14, 14, 16, 5, 5, 1, 0, AK_COMPUTE_32F}, {2, 2, 3, 8, 2, 3, 3, 4, 1, AK_COMPUTE_32F},
    {1, 4, 11, 13, 5, 3, 3, 2, 2, AK_COMPUTE_32F},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Forward and backward of one shape and pairing on both backends. */
static size_t run_case(const go_cmp *cmp, ak_conv2d c, kt_pairing p, size_t variant, bool one_hot,
                       bool nan_x)
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
    const size_t nx = ref_conv_nx(&c), nw = ref_conv_nw(&c), ny = ref_conv_ny(&c);
    const size_t np = c.batch * ref_conv_out_h(&c) * ref_conv_out_w(&c);
    const size_t kk = c.in_ch * c.k_h * c.k_w;
    const ak_dtype bd = others[variant % 3], dxd = others[(variant + 1) % 3];
    ref_tensor xh = ref_tensor_make(p.in, nx);
    ref_tensor_random(&xh, &r);
    if (nan_x && nx > 3) {
        xh.bits[nx / 2] = kt_from_f64(p.in, NAN);
        xh.bits[1] = kt_from_f64(p.in, -INFINITY);
        ref_tensor_update_values(&xh);
    }
    tens x = t_upload(xh), w;
    if (one_hot) { /* w[o][c][ki][kj] = 1 at a tap of its own for the first channels, else 0 */
        ref_tensor wh = ref_tensor_make(p.in, nw);
        for (size_t o = 0; o < c.out_ch && o < kk; o++)
            wh.bits[o * kk + kk - 1 - o] = kt_from_f64(p.in, 1.0);
        ref_tensor_update_values(&wh);
        w = t_upload(wh);
    } else
        w = t_random(p.in, nw, &r);
    tens bias = t_random(bd, c.out_ch, &r);
    tens dy = t_random(p.in, ny, &r);
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
    /* the sums of |products| of every output (the values are not needed) */
    double *yr = calloc(ny + 1, 8), *sy = calloc(ny + 1, 8), *gemm_part = calloc(ny + 1, 8);
    ref_conv_forward(&c, x.h.v, w.h.v, NULL, yr, sy);
    ref_conv_grads g = ref_conv_backward(&c, x.h.v, w.h.v, dy.h.v);
    const double u = kt_compute_unit(p.k), e_in = kt_compute_input_error(p.k);
    size_t bad = 0;
    char name[240];
    if (one_hot) {
        /* one product per output, the rest exact zeros: equal on both */
        snprintf(name, sizeof name, "%s y", what);
        bad += compare(name, cmp, &y, NULL, 0, 0, NULL);
        snprintf(name, sizeof name, "%s dx", what);
        bad += compare(name, cmp, &dx, NULL, 0, 0, NULL);
    } else {
        /* y = RN(GEMM) + bias, rounded again: a unit of the GEMM part too */
        for (size_t i = 0; i < ny; i++)
            gemm_part[i] = 2 * kt_ulp(p.out, sy[i]);
        snprintf(name, sizeof name, "%s y", what);
        bad += compare(name, cmp, &y, sy, 2 * (double)(kk + 4) * 2 * u + 2 * e_in, 2, gemm_part);
        snprintf(name, sizeof name, "%s dx", what);
        bad += compare(name, cmp, &dx, g.sx, 2 * (double)(c.out_ch + 4) * 2 * u + 2 * u + 2 * e_in,
                       2, NULL);
    }
    snprintf(name, sizeof name, "%s dw", what);
    bad += compare(name, cmp, &dw, g.sw, 2 * (double)(np + 4) * 2 * u + 2 * e_in, 2, NULL);
    snprintf(name, sizeof name, "%s dbias", what);
    bad += compare(name, cmp, &db, g.sb, 0x1p-45, 1, NULL);
    t_free(&x);
    t_free(&w);
    t_free(&bias);
    t_free(&dy);
    t_free(&y);
    t_free(&dx);
    t_free(&dw);
    t_free(&db);
    ref_conv_grads_free(&g);
    free(yr);
    free(sy);
    free(gemm_part);
    return bad;
}

GO_CASE(every_pairing_within_the_bound)
{
    const go_cmp *cmp = &c->cmp;
    size_t bad = 0;
    for (size_t s = 0; s < NSHAPES; s++)
        bad += run_case(cmp, shapes[s], kt_pairings[_i], s, false, false);
    bad += run_case(cmp, shapes[1], kt_pairings[_i], 1, false, true);
    ck_assert_uint_eq(bad, 0);
}

/* With a one-hot kernel every output is one exact product: the backends
 * agree exactly on y and dx (the fast types excepted: cuBLAS may round
 * their inputs otherwise than the cpu). */
GO_CASE(one_hot_kernels_agree_exactly)
{
    const go_cmp *cmp = &c->cmp;
    size_t bad = 0;
    const size_t exact[] = {0, 4, 5, 6, 7, 8};
    for (size_t e = 0; e < sizeof exact / sizeof exact[0]; e++)
        for (size_t s = 0; s < NSHAPES; s++)
            bad += run_case(cmp, shapes[s], kt_pairings[exact[e]], s + e, true, e == 0);
    ck_assert_uint_eq(bad, 0);
}

GO_CASE(unsupported_and_bad_arguments_alike)
{
    ak_backend *both[2] = {cpu, gpu};
    const ak_conv2d geom = ref_conv_geom(2, 3, 6, 6, 4, 3, 3, 1, 0);
    for (int i = 0; i < 2; i++) {
        ak_backend *b = both[i];
        kt_buf x = kt_buf_alloc(b, 216, AK_F32), w = kt_buf_alloc(b, 108, AK_F32),
               y = kt_buf_alloc(b, 128, AK_F16);
        ck_assert_int_eq(ak_conv2d_forward(b, &geom, y.t, x.t, w.t, ak_tensor_none()),
                         AK_EUNSUPPORTED);
        ck_assert_str_eq(ak_error(b), "ak_conv2d_forward: compute type 32F with fp32 w and x needs "
                                      "fp32 y, got fp32/fp32/fp16");
        ak_conv2d bad = geom;
        bad.compute = AK_COMPUTE_16F;
        ck_assert_int_eq(ak_conv2d_backward(b, &bad, ak_tensor_none(), w.t, ak_tensor_none(),
                                            ak_tensor_of(x.t.data, 128, AK_F32), x.t, w.t),
                         AK_EUNSUPPORTED);
        bad = geom;
        bad.stride = 0;
        ck_assert_int_eq(ak_conv2d_forward(b, &bad, y.t, x.t, w.t, ak_tensor_none()), AK_EINVAL);
        ck_assert_str_eq(ak_error(b), "ak_conv2d_forward: stride is 0");
        ck_assert(kt_buf_guards_ok(&x) && kt_buf_guards_ok(&w) && kt_buf_guards_ok(&y));
        kt_buf_free(&x);
        kt_buf_free(&w);
        kt_buf_free(&y);
    }
}

#define CONV_CMP                                                                                   \
    {                                                                                              \
        GO_CLOSE, 0, 2, 1, false, false,                                                           \
            "kernels/gemm.c's bound per GEMM: y, dw, dx within rel S + 2 ulp, dbias 2^-45 S + "    \
            "ulp "                                                                                 \
            "(this file's first comment)"                                                          \
    }
static const go_case rows[] = {
    {"conv2d_forward conv2d_backward", "every_pairing_within_the_bound", KT_NPAIRINGS,
     every_pairing_within_the_bound, CONV_CMP},
    {"conv2d_forward conv2d_backward", "one_hot_kernels_agree_exactly", 1,
     one_hot_kernels_agree_exactly, CONV_CMP},
    {"conv2d_forward conv2d_backward", "unsupported_and_bad_arguments_alike", 1,
     unsupported_and_bad_arguments_alike, GO_BITS},
};
GO_FAMILY(conv, rows);
