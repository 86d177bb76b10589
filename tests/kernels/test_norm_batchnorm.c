/* test_norm_batchnorm: ak_batchnorm_forward and ak_batchnorm_backward on
 * the cpu backend: the statistics in kernels.h's lane order and the fp32
 * element formulas written in ref_norm.c (bit for bit, every dtype pairing,
 * more than 256 elements per channel), PyTorch's formulas in plain double
 * (within a stated bound), the running statistics by hand, eval mode,
 * affine=False, specials, finite differences of dx, dgamma and dbeta, bad
 * arguments, guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"
#include "kt_fd.h"
#include "ref_norm.h"

/* One forward on the cpu from host bits: x (xdt), y (ydt) out, gamma/beta
 * (gdt; NULL: affine=False), running (fp32, in/out; NULL: none), save
 * (out; NULL: none).  Returns the call's code; guards are checked. */
typedef struct bn_io {
    ak_dtype xdt, ydt, gdt;
    const uint32_t *x, *gamma, *beta;
    uint32_t *y;
    float *rm, *rv, *sm, *si;
} bn_io;

static int bn_forward(ak_backend *b, const ak_batchnorm *a, const bn_io *io)
{
    const size_t count = a->n * a->c * a->hw;
    kt_buf x = kt_buf_alloc(b, count, io->xdt), y = kt_buf_alloc(b, count, io->ydt);
    kt_buf g = kt_buf_alloc(b, io->gamma ? a->c : 0, io->gdt),
           be = kt_buf_alloc(b, io->gamma ? a->c : 0, io->gdt);
    kt_buf rm = kt_buf_alloc(b, io->rm ? a->c : 0, AK_F32),
           rv = kt_buf_alloc(b, io->rm ? a->c : 0, AK_F32);
    kt_buf sm = kt_buf_alloc(b, io->sm ? a->c : 0, AK_F32),
           si = kt_buf_alloc(b, io->sm ? a->c : 0, AK_F32);
    kt_buf_put(&x, io->x);
    if (io->gamma) {
        kt_buf_put(&g, io->gamma);
        kt_buf_put(&be, io->beta);
    }
    if (io->rm) {
        kt_buf_upload(&rm, io->rm);
        kt_buf_upload(&rv, io->rv);
    }
    const ak_tensor none = ak_tensor_none();
    const int rc = ak_batchnorm_forward(
        b, a, y.t, x.t, io->gamma ? g.t : none, io->gamma ? be.t : none, io->rm ? rm.t : none,
        io->rm ? rv.t : none, io->sm ? sm.t : none, io->sm ? si.t : none);
    if (rc == AK_OK) {
        kt_buf_get(&y, io->y);
        if (io->rm) {
            kt_buf_download(&rm, io->rm);
            kt_buf_download(&rv, io->rv);
        }
        if (io->sm) {
            kt_buf_download(&sm, io->sm);
            kt_buf_download(&si, io->si);
        }
    }
    kt_buf *all[] = {&x, &y, &g, &be, &rm, &rv, &sm, &si};
    for (int i = 0; i < 8; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
    return rc;
}

/* Channel ch of x (bits of dt) as doubles, in kernels.h's k order. */
static double *channel(const ak_batchnorm *a, ak_dtype dt, const uint32_t *x, size_t ch)
{
    const size_t m = a->n * a->hw;
    double *v = malloc(m * sizeof *v + 8);
    for (size_t k = 0; k < m; k++)
        v[k] = kt_value(dt, x[((k / a->hw) * a->c + ch) * a->hw + k % a->hw]);
    return v;
}

static size_t at(const ak_batchnorm *a, size_t ch, size_t k)
{
    return ((k / a->hw) * a->c + ch) * a->hw + k % a->hw;
}

static void training_case(ak_backend *b, ts_rng *r, size_t n, size_t c, size_t hw, ak_dtype xdt,
                          ak_dtype ydt, ak_dtype gdt, double offset)
{
    const ak_batchnorm a = {n, c, hw, 1e-5, 0.1, true};
    const size_t count = n * c * hw, m = n * hw;
    uint32_t *x = kt_bits_alloc(count), *y = kt_bits_alloc(count), *g = kt_bits_alloc(c),
             *be = kt_bits_alloc(c);
    kt_fill_values(r, xdt, x, count, 4.0);
    for (size_t i = 0; i < count; i++) /* a channel mean far from 0: the two passes */
        x[i] = kt_from_f64(xdt, kt_value(xdt, x[i]) + offset * (double)((i / hw) % c));
    kt_fill_values(r, gdt, g, c, 2.0);
    kt_fill_values(r, gdt, be, c, 2.0);
    float *rm = calloc(c, 4), *rv = calloc(c, 4), *sm = calloc(c, 4), *si = calloc(c, 4);
    float *rm0 = calloc(c, 4), *rv0 = calloc(c, 4);
    for (size_t ch = 0; ch < c; ch++) {
        rm[ch] = rm0[ch] = (float)ch * 0.5f;
        rv[ch] = rv0[ch] = 1.0f + (float)ch;
    }
    const bn_io io = {xdt, ydt, gdt, x, g, be, y, rm, rv, sm, si};
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    for (size_t ch = 0; ch < c; ch++) {
        double *v = channel(&a, xdt, x, ch), s2, pm, pv;
        float mean, invstd;
        ref_norm_stats(v, m, a.eps, &mean, &invstd, &s2);
        ck_assert_uint_eq(kt_f32_bits(sm[ch]), kt_f32_bits(mean));
        ck_assert_uint_eq(kt_f32_bits(si[ch]), kt_f32_bits(invstd));
        const double mean_d = ref_norm_lane_sum(v, m) / (double)m;
        ck_assert_uint_eq(kt_f32_bits(rm[ch]),
                          kt_f32_bits(ref_norm_f32(0.1 * mean_d + (1.0 - 0.1) * rm0[ch])));
        ck_assert_uint_eq(
            kt_f32_bits(rv[ch]),
            kt_f32_bits(ref_norm_f32(0.1 * (s2 / (double)(m - 1)) + (1.0 - 0.1) * rv0[ch])));
        ref_norm_plain(v, m, &pm, &pv); /* PyTorch's formulas in double */
        const double pinv = 1.0 / sqrt(pv + a.eps);
        const float gv = kt_f32_of(kt_to_f32(gdt, g[ch])), bv = kt_f32_of(kt_to_f32(gdt, be[ch]));
        for (size_t k = 0; k < m; k++) {
            const size_t i = at(&a, ch, k);
            const float xv = kt_f32_of(kt_to_f32(xdt, x[i]));
            ck_assert_uint_eq(y[i], ref_norm_y_bits(ydt, xv, mean, invstd, gv, bv));
            const double want = (v[k] - pm) * pinv * gv + bv;
            const double bound =
                8 * 0x1p-24 * (fabs((v[k] - pm) * pinv * gv) + fabs(pm * pinv * gv) + fabs(bv)) +
                kt_ulp(ydt, want);
            ck_assert_msg(fabs(kt_value(ydt, y[i]) - want) <= bound, "y[%zu] %g want %g", i,
                          kt_value(ydt, y[i]), want);
        }
        free(v);
    }
    free(x), free(y), free(g), free(be), free(rm), free(rv), free(sm), free(si), free(rm0),
        free(rv0);
}

START_TEST(forward_training_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 70);
    for (int combo = 0; combo < 9; combo++) {
        const ak_dtype xdt = kt_dtypes[combo / 3], ydt = kt_dtypes[combo % 3];
        training_case(b, &r, 3, 4, 5, xdt, ydt, AK_F32, 0.0);
        training_case(b, &r, 3, 4, 5, xdt, ydt, xdt, 16.0);
    }
    /* more than 256 elements per channel: every lane and the tree */
    training_case(b, &r, 2, 3, 300, AK_F32, AK_F32, AK_F32, 64.0);
    training_case(b, &r, 4, 2, 257, AK_F16, AK_BF16, AK_F32, 8.0);
    ak_close(b);
}
END_TEST

START_TEST(running_statistics_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* one channel [1 2 3 4] (n 2, hw 2): mean 2.5, biased var 1.25, unbiased
     * 5/3; eps 0: invstd 1/sqrt(1.25) = 0x3F64F92E.  From running (0, 1),
     * momentum 0.1: 0.25 and 0.9 + 0.1 * 5/3 = 16/15 = 0x3F888889; again:
     * 0.9 * 0.25 + 0.25 = 0.475 and 0.9 * 16/15 + 1/6 = 1.1266667. */
    const ak_batchnorm a = {2, 1, 2, 0.0, 0.1, true};
    const uint32_t x[4] = {0x3F800000, 0x40000000, 0x40400000, 0x40800000};
    uint32_t y[4];
    float rm = 0.0f, rv = 1.0f, sm, si;
    const bn_io io = {AK_F32, AK_F32, AK_F32, x, NULL, NULL, y, &rm, &rv, &sm, &si};
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    ck_assert_float_eq(sm, 2.5f);
    ck_assert_uint_eq(kt_f32_bits(si), 0x3F64F92Eu);
    ck_assert_float_eq(rm, 0.25f);
    ck_assert_uint_eq(kt_f32_bits(rv), 0x3F888889u);
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    ck_assert_uint_eq(kt_f32_bits(rm), 0x3EF33333u); /* 0.475f */
    ck_assert(fabs(rv - 1.1266667) < 1.2e-7);
    /* momentum 1 replaces: 2.5 and 5/3 (0x3FD55555); momentum 0 keeps */
    ak_batchnorm a1 = a;
    a1.momentum = 1.0;
    ck_assert_int_eq(bn_forward(b, &a1, &io), AK_OK);
    ck_assert_float_eq(rm, 2.5f);
    ck_assert_uint_eq(kt_f32_bits(rv), 0x3FD55555u);
    a1.momentum = 0.0;
    rm = 7.0f;
    rv = 9.0f;
    ck_assert_int_eq(bn_forward(b, &a1, &io), AK_OK);
    ck_assert_float_eq(rm, 7.0f);
    ck_assert_float_eq(rv, 9.0f);
    /* track_running_stats=False: no running tensors, training still works */
    const bn_io none = {AK_F32, AK_F32, AK_F32, x, NULL, NULL, y, NULL, NULL, &sm, &si};
    ck_assert_int_eq(bn_forward(b, &a, &none), AK_OK);
    ck_assert_float_eq(sm, 2.5f);
    ak_close(b);
}
END_TEST

START_TEST(eval_mode_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* running (1, 3), eps 1: invstd 0.5; x [3 -1 5 1]: xhat [1 -1 2 0];
     * gamma 2, beta 0.5: y [2.5 -1.5 4.5 0.5]; running unchanged; save_*
     * receive the running mean and the invstd used.  One element per
     * channel is fine in eval. */
    const ak_batchnorm a = {1, 1, 4, 1.0, 0.1, false};
    const uint32_t x32[4] = {0x40400000, 0xBF800000, 0x40A00000, 0x3F800000};
    const uint32_t x16[4] = {0x4200, 0xBC00, 0x4500, 0x3C00};
    const uint32_t g[1] = {0x40000000}, be[1] = {0x3F000000};
    uint32_t y[4];
    float rm = 1.0f, rv = 3.0f, sm = 0, si = 0;
    const bn_io io = {AK_F32, AK_F32, AK_F32, x32, g, be, y, &rm, &rv, &sm, &si};
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    const uint32_t want32[4] = {0x40200000, 0xBFC00000, 0x40900000, 0x3F000000};
    ck_assert_uint_eq(kt_bits_mismatches("bn eval", AK_F32, y, want32, 4), 0);
    ck_assert_float_eq(rm, 1.0f);
    ck_assert_float_eq(rv, 3.0f);
    ck_assert_float_eq(sm, 1.0f);
    ck_assert_float_eq(si, 0.5f);
    const bn_io io16 = {AK_F16, AK_F16, AK_F32, x16, g, be, y, &rm, &rv, NULL, NULL};
    ck_assert_int_eq(bn_forward(b, &a, &io16), AK_OK);
    const uint32_t want16[4] = {0x4100, 0xBE00, 0x4480, 0x3800};
    ck_assert_uint_eq(kt_bits_mismatches("bn eval fp16", AK_F16, y, want16, 4), 0);
    const ak_batchnorm one = {1, 1, 1, 1.0, 0.1, false};
    ck_assert_int_eq(bn_forward(b, &one, &io), AK_OK);
    ck_assert_uint_eq(y[0], 0x40200000);
    ak_close(b);
}
END_TEST

START_TEST(low_precision_outputs_by_hand)
{
    ak_backend *b = kt_open_cpu();
    /* fp16 x [1 -1], eps 0: xhat [1 -1]; fp32 gamma 70000 (keep_batchnorm_fp32):
     * y = +-70000 overflows fp16 (max 65504, 65520 rounds up): +-inf; in
     * bf16 70000 = 0x4788B800 rounds up to 0x4789 (70144). */
    const ak_batchnorm a = {1, 1, 2, 0.0, 0.1, true};
    const uint32_t x[2] = {0x3C00, 0xBC00}, g[1] = {0x4788B800}, be[1] = {0};
    uint32_t y[2];
    const bn_io h = {AK_F16, AK_F16, AK_F32, x, g, be, y, NULL, NULL, NULL, NULL};
    ck_assert_int_eq(bn_forward(b, &a, &h), AK_OK);
    ck_assert_uint_eq(y[0], 0x7C00);
    ck_assert_uint_eq(y[1], 0xFC00);
    const bn_io bf = {AK_F16, AK_BF16, AK_F32, x, g, be, y, NULL, NULL, NULL, NULL};
    ck_assert_int_eq(bn_forward(b, &a, &bf), AK_OK);
    ck_assert_uint_eq(y[0], 0x4789);
    ck_assert_uint_eq(y[1], 0xC789);
    ak_close(b);
}
END_TEST

START_TEST(specials_stay_in_their_channel)
{
    ak_backend *b = kt_open_cpu();
    /* c 4, n 1, hw 3: a NaN in channel 0, +inf in 1, a constant channel 2
     * (y = beta exactly, invstd = 1/sqrt(eps)), an ordinary channel 3 */
    const ak_batchnorm a = {1, 4, 3, 0.25, 0.1, true};
    const float xf[12] = {1, NAN, 2, 1, INFINITY, 2, 5, 5, 5, 0, 1, 2};
    uint32_t x[12], y[12], g[4], be[4];
    for (int i = 0; i < 12; i++)
        x[i] = kt_f32_bits(xf[i]);
    for (int i = 0; i < 4; i++) {
        g[i] = kt_f32_bits(3.0f);
        be[i] = kt_f32_bits(-0.75f);
    }
    float rm[4] = {0}, rv[4] = {1, 1, 1, 1}, sm[4], si[4];
    const bn_io io = {AK_F32, AK_F32, AK_F32, x, g, be, y, rm, rv, sm, si};
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(y[i], kt_default_nan(AK_F32));
    ck_assert(isnan(rm[0]) && isnan(rv[0]) && isnan(rv[1]) && isnan(si[1]));
    for (int i = 6; i < 9; i++)
        ck_assert_float_eq(kt_f32_of(y[i]), -0.75f);
    ck_assert_float_eq(si[2], 2.0f); /* 1/sqrt(0.25) */
    ck_assert(!isnan(kt_f32_of(y[9])) && !isnan(rm[3]));
    ak_close(b);
}
END_TEST

/* ---- backward ---------------------------------------------------------------------- */
typedef struct bn_fd_ctx {
    ak_backend *b;
    ak_batchnorm a;
    const float *x, *gamma, *beta, *r;
    int which; /* the parameter varied: 0 x, 1 gamma, 2 beta */
} bn_fd_ctx;

static double bn_loss(const float *p, const void *vctx)
{
    const bn_fd_ctx *c = vctx;
    const size_t count = c->a.n * c->a.c * c->a.hw;
    uint32_t *x = kt_bits_alloc(count), *y = kt_bits_alloc(count), g[8], be[8];
    for (size_t i = 0; i < count; i++)
        x[i] = kt_f32_bits(c->which == 0 ? p[i] : c->x[i]);
    for (size_t ch = 0; ch < c->a.c; ch++) {
        g[ch] = kt_f32_bits(c->which == 1 ? p[ch] : c->gamma[ch]);
        be[ch] = kt_f32_bits(c->which == 2 ? p[ch] : c->beta[ch]);
    }
    const bn_io io = {AK_F32, AK_F32, AK_F32, x, g, be, y, NULL, NULL, NULL, NULL};
    ck_assert_int_eq(bn_forward(c->b, &c->a, &io), AK_OK);
    double l = 0;
    for (size_t i = 0; i < count; i++)
        l += (double)c->r[i] * kt_f32_of(y[i]);
    free(x);
    free(y);
    return l;
}

/* The backward on the cpu from fp32 host arrays (dx, dgamma, dbeta out). */
static void bn_backward(ak_backend *b, const ak_batchnorm *a, ak_dtype dxdt, uint32_t *dx,
                        uint32_t *dg, uint32_t *db, ak_dtype dydt, const uint32_t *dy,
                        const uint32_t *x, ak_dtype xdt, const uint32_t *gamma, const float *sm,
                        const float *si)
{
    const size_t count = a->n * a->c * a->hw;
    kt_buf tdx = kt_buf_alloc(b, dx ? count : 0, dxdt),
           tdg = kt_buf_alloc(b, dg ? a->c : 0, AK_F32),
           tdb = kt_buf_alloc(b, db ? a->c : 0, AK_F32), tdy = kt_buf_alloc(b, count, dydt),
           tx = kt_buf_alloc(b, count, xdt), tg = kt_buf_alloc(b, gamma ? a->c : 0, AK_F32),
           tsm = kt_buf_alloc(b, a->c, AK_F32), tsi = kt_buf_alloc(b, a->c, AK_F32);
    kt_buf_put(&tdy, dy);
    kt_buf_put(&tx, x);
    if (gamma) kt_buf_put(&tg, gamma);
    kt_buf_upload(&tsm, sm);
    kt_buf_upload(&tsi, si);
    const ak_tensor none = ak_tensor_none();
    ck_assert_int_eq(ak_batchnorm_backward(b, a, dx ? tdx.t : none, dg ? tdg.t : none,
                                           db ? tdb.t : none, tdy.t, tx.t, gamma ? tg.t : none,
                                           tsm.t, tsi.t),
                     AK_OK);
    if (dx) kt_buf_get(&tdx, dx);
    if (dg) kt_buf_get(&tdg, dg);
    if (db) kt_buf_get(&tdb, db);
    kt_buf *all[] = {&tdx, &tdg, &tdb, &tdy, &tx, &tg, &tsm, &tsi};
    for (int i = 0; i < 8; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
}

/* dx, dgamma, dbeta: bits against ref_norm.c's formulas, values against
 * PyTorch's backward in double, for every dx/dy dtype pairing. */
static void backward_case(ak_backend *b, ts_rng *r, size_t n, size_t c, size_t hw, ak_dtype xdt,
                          ak_dtype dxdt, bool affine)
{
    const ak_batchnorm a = {n, c, hw, 1e-5, 0.1, true};
    const size_t count = n * c * hw, m = n * hw;
    uint32_t *x = kt_bits_alloc(count), *dy = kt_bits_alloc(count), *dx = kt_bits_alloc(count),
             g[8], dg[8], db[8];
    kt_fill_values(r, xdt, x, count, 4.0);
    kt_fill_values(r, xdt, dy, count, 1.0);
    kt_fill_values(r, AK_F32, g, c, 2.0);
    float sm[8], si[8];
    for (size_t ch = 0; ch < c; ch++) {
        double *v = channel(&a, xdt, x, ch), s2;
        ref_norm_stats(v, m, a.eps, &sm[ch], &si[ch], &s2);
        free(v);
    }
    bn_backward(b, &a, dxdt, dx, affine ? dg : NULL, affine ? db : NULL, xdt, dy, x, xdt,
                affine ? g : NULL, sm, si);
    for (size_t ch = 0; ch < c; ch++) {
        double *v = channel(&a, xdt, x, ch), *d = channel(&a, xdt, dy, ch);
        double *dxm = malloc(m * sizeof *dxm);
        for (size_t k = 0; k < m; k++)
            dxm[k] = d[k] * (v[k] - (double)sm[ch]);
        const double sg = ref_norm_lane_sum(d, m), sgx = ref_norm_lane_sum(dxm, m);
        const double gv = affine ? kt_value(AK_F32, g[ch]) : 1.0;
        if (affine) {
            ck_assert_uint_eq(db[ch], kt_f32_bits(ref_norm_f32(sg)));
            ck_assert_uint_eq(dg[ch], kt_f32_bits(ref_norm_f32(sgx * si[ch])));
        }
        const float c1 = ref_norm_f32(sg / (double)m),
                    c2 = ref_norm_f32(sgx / (double)m * si[ch] * si[ch]);
        const float s = affine ? ref_norm_f32((double)si[ch] * gv) : si[ch];
        /* PyTorch's batch_norm_backward in double, from the double statistics */
        double pm, pv;
        ref_norm_plain(v, m, &pm, &pv);
        const double pinv = 1.0 / sqrt(pv + a.eps);
        double psg = 0, psgx = 0;
        for (size_t k = 0; k < m; k++) {
            psg += d[k];
            psgx += d[k] * (v[k] - pm);
        }
        for (size_t k = 0; k < m; k++) {
            const size_t i = at(&a, ch, k);
            ck_assert_uint_eq(dx[i],
                              ref_norm_dx_bits(dxdt, (float)d[k], (float)v[k], sm[ch], c1, c2, s));
            const double want = (d[k] - psg / m - (v[k] - pm) * pinv * pinv * psgx / m) * pinv * gv;
            const double scale =
                pinv * fabs(gv) *
                (fabs(d[k]) + fabs(psg / m) + fabs((v[k] - pm) * pinv * pinv * psgx / m));
            ck_assert_msg(fabs(kt_value(dxdt, dx[i]) - want) <=
                              64 * 0x1p-24 * scale + kt_ulp(dxdt, want),
                          "dx[%zu] %g want %g", i, kt_value(dxdt, dx[i]), want);
        }
        free(v), free(d), free(dxm);
    }
    free(x), free(dy), free(dx);
}

START_TEST(backward_every_dtype)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 71);
    for (int combo = 0; combo < 9; combo++) {
        backward_case(b, &r, 3, 4, 5, kt_dtypes[combo / 3], kt_dtypes[combo % 3], true);
        backward_case(b, &r, 3, 4, 5, kt_dtypes[combo / 3], kt_dtypes[combo % 3], false);
    }
    backward_case(b, &r, 2, 3, 300, AK_F32, AK_F32, true);
    backward_case(b, &r, 3, 2, 200, AK_BF16, AK_F16, true);
    ak_close(b);
}
END_TEST

START_TEST(gradients_match_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    enum { N = 2, C = 3, HW = 4, COUNT = N * C * HW };
    const ak_batchnorm a = {N, C, HW, 1e-5, 0.1, true};
    float x[COUNT], rv[COUNT], gamma[C], beta[C];
    kt_fd_points(&r, ts_seed() + 72, x, rv, COUNT);
    for (int ch = 0; ch < C; ch++) {
        gamma[ch] = (float)(0.5 + 0.25 * ch);
        beta[ch] = (float)(0.125 * ch - 0.25);
    }
    uint32_t xb[COUNT], rb[COUNT], gb[C], dx[COUNT], dg[C], db[C], y[COUNT], beb[C];
    for (int i = 0; i < COUNT; i++) {
        xb[i] = kt_f32_bits(x[i]);
        rb[i] = kt_f32_bits(rv[i]);
    }
    for (int ch = 0; ch < C; ch++) {
        gb[ch] = kt_f32_bits(gamma[ch]);
        beb[ch] = kt_f32_bits(beta[ch]);
    }
    float sm[C], si[C];
    const bn_io io = {AK_F32, AK_F32, AK_F32, xb, gb, beb, y, NULL, NULL, sm, si};
    ck_assert_int_eq(bn_forward(b, &a, &io), AK_OK);
    bn_backward(b, &a, AK_F32, dx, dg, db, AK_F32, rb, xb, AK_F32, gb, sm, si);
    bn_fd_ctx ctx = {b, a, x, gamma, beta, rv, 0};
    double fd[COUNT];
    ref_norm_fd(bn_loss, &ctx, x, COUNT, 0x1p-8, fd);
    for (int i = 0; i < COUNT; i++)
        ck_assert_msg(fabs(fd[i] - kt_f32_of(dx[i])) <= 2e-3 * (1 + fabs(fd[i])), "dx[%d] %g fd %g",
                      i, (double)kt_f32_of(dx[i]), fd[i]);
    ctx.which = 1;
    ref_norm_fd(bn_loss, &ctx, gamma, C, 0x1p-8, fd);
    for (int ch = 0; ch < C; ch++)
        ck_assert_msg(fabs(fd[ch] - kt_f32_of(dg[ch])) <= 2e-3 * (1 + fabs(fd[ch])),
                      "dgamma[%d] %g fd %g", ch, (double)kt_f32_of(dg[ch]), fd[ch]);
    ctx.which = 2;
    ref_norm_fd(bn_loss, &ctx, beta, C, 0x1p-8, fd);
    for (int ch = 0; ch < C; ch++)
        ck_assert_msg(fabs(fd[ch] - kt_f32_of(db[ch])) <= 2e-3 * (1 + fabs(fd[ch])),
                      "dbeta[%d] %g fd %g", ch, (double)kt_f32_of(db[ch]), fd[ch]);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    const ak_batchnorm a = {2, 3, 2, 1e-5, 0.1, true}; /* 12 elements, 3 channels */
    kt_buf x = kt_buf_alloc(b, 12, AK_F32), y = kt_buf_alloc(b, 12, AK_F32),
           c1 = kt_buf_alloc(b, 3, AK_F32), c2 = kt_buf_alloc(b, 3, AK_F32),
           c3 = kt_buf_alloc(b, 3, AK_F32), c4 = kt_buf_alloc(b, 3, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_F16), f4 = kt_buf_alloc(b, 4, AK_F32);
    const ak_tensor none = ak_tensor_none();
    const char *F = "ak_batchnorm_forward: ", *B = "ak_batchnorm_backward: ";
    ck_assert_int_eq(ak_batchnorm_forward(NULL, &a, y.t, x.t, none, none, none, none, none, none),
                     AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, NULL, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "a is NULL");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, f4.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "x has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, f4.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "y has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, c1.t, none, none, none, none, none),
                    AK_EINVAL, F, "gamma and beta must be given together");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, f4.t, f4.t, none, none, none, none),
                    AK_EINVAL, F, "gamma has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, none, none, h3.t, c2.t, none, none),
                    AK_EUNSUPPORTED, F, "running_mean and running_var must be fp32");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, none, none, c1.t, none, none, none),
                    AK_EINVAL, F, "running_mean and running_var must be given together");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, none, none, none, none, c1.t, h3.t),
                    AK_EUNSUPPORTED, F, "save_mean and save_invstd must be fp32");
    ak_batchnorm e = a;
    e.training = false;
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &e, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "eval mode needs running_mean and running_var");
    e = a;
    e.eps = -1e-5;
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &e, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "eps (-1e-05) must be finite and >= 0");
    e.eps = NAN;
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &e, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "eps (nan) must be finite");
    e = a;
    e.momentum = 1.5;
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &e, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "momentum (1.5) must lie in [0, 1]");
    const ak_batchnorm one = {1, 12, 1, 1e-5, 0.1, true};
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &one, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "more than 1 value per channel (n x hw = 1)");
    const ak_batchnorm huge = {SIZE_MAX / 2, 3, 1, 1e-5, 0.1, true};
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &huge, y.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "overflows a size_t");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, x.t, x.t, none, none, none, none, none, none),
                    AK_EINVAL, F, "y overlaps x");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, none, none, c1.t, c2.t, c1.t, c3.t),
                    AK_EINVAL, F, "save_mean overlaps running_mean");
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, c1.t, c2.t, c3.t, c2.t, none, none),
                    AK_EINVAL, F, "running_var overlaps beta");
    const ak_tensor bad = ak_tensor_of(x.t.data, 12, (ak_dtype)7);
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, bad, none, none, none, none, none, none),
                    AK_EINVAL, F, "x has an invalid dtype (7)");
    const ak_tensor odd = ak_tensor_of((char *)x.t.data + 2, 3, AK_F32);
    KT_EXPECT_ERROR(b, ak_batchnorm_forward(b, &a, y.t, x.t, odd, c2.t, none, none, none, none),
                    AK_EINVAL, F, "gamma");
    /* backward */
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, y.t, none, none, x.t, x.t, none, none, c2.t),
                    AK_EINVAL, B, "save_mean has 0 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, y.t, none, none, x.t, x.t, none, h3.t, c2.t),
                    AK_EUNSUPPORTED, B, "save_mean and save_invstd must be fp32");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, y.t, c3.t, none, x.t, x.t, none, c1.t, c2.t),
                    AK_EINVAL, B, "dgamma and dbeta need gamma");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, x.t, none, none, x.t, y.t, none, c1.t, c2.t),
                    AK_EINVAL, B, "dx overlaps dy");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, y.t, c3.t, c3.t, x.t, x.t, c4.t, c1.t, c2.t),
                    AK_EINVAL, B, "dgamma overlaps dbeta");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, &a, f4.t, none, none, x.t, x.t, none, c1.t, c2.t),
                    AK_EINVAL, B, "dx has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_batchnorm_backward(b, NULL, y.t, none, none, x.t, x.t, none, c1.t, c2.t),
                    AK_EINVAL, B, "a is NULL");
    /* nothing to do: c = 0 */
    const ak_batchnorm zero = {2, 0, 2, 1e-5, 0.1, true};
    ck_assert_int_eq(ak_batchnorm_forward(b, &zero, none, none, none, none, none, none, none, none),
                     AK_OK);
    ck_assert_int_eq(
        ak_batchnorm_backward(b, &zero, none, none, none, none, none, none, none, none), AK_OK);
    kt_buf *all[] = {&x, &y, &c1, &c2, &c3, &c4, &h3, &f4};
    for (int i = 0; i < 8; i++) {
        ck_assert(kt_buf_guards_ok(all[i]));
        kt_buf_free(all[i]);
    }
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_norm_batchnorm");
    TCase *tc = tcase_create("batchnorm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, forward_training_every_dtype);
    tcase_add_test(tc, running_statistics_by_hand);
    tcase_add_test(tc, eval_mode_by_hand);
    tcase_add_test(tc, low_precision_outputs_by_hand);
    tcase_add_test(tc, specials_stay_in_their_channel);
    tcase_add_test(tc, backward_every_dtype);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
