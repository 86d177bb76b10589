/* test_conv: ak_conv2d_forward/backward on the cpu backend against
 * references written here.
 *
 *   - forward against a direct seven-loop convolution in double, within the
 *     GEMM's bound gamma_(K+3) S (S the sum of |x w| of the output, u the
 *     accumulation's unit: 2^-24, or 2^-11 for 16F) plus the roundings to
 *     y's dtype (the GEMM result, then + bias);
 *   - backward against central finite differences of the scalar loss
 *     sum(r .* y) computed in double (fp32 storage), and against a direct
 *     reference for every storage/compute pair;
 *   - strides, paddings, non-square kernels and inputs, the LeNet-5 shapes
 *     (1 -> 6 5x5 on 32x32, 6 -> 16 5x5 on 14x14), NaNs reaching exactly
 *     their receptive fields, outputs pre-filled with NaN (overwritten),
 *     guard regions, empty batches, bad arguments.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ref_conv.h"

/* ---- backend tensors ---------------------------------------------------------------------- */
/* Backend memory holding t (guarded). */
static kt_buf upload(ak_backend *b, const ref_tensor *t)
{
    kt_buf buf = kt_buf_alloc(b, t->n, t->dt);
    kt_buf_put(&buf, t->bits);
    return buf;
}

/* Backend memory of n elements of dt, filled with NaNs (must be overwritten). */
static kt_buf nan_buf(ak_backend *b, size_t n, ak_dtype dt)
{
    kt_buf buf = kt_buf_alloc(b, n, dt);
    uint32_t *bits = malloc((n + 1) * sizeof *bits);
    for (size_t i = 0; i < n; i++)
        bits[i] = kt_marker_nan(dt);
    kt_buf_put(&buf, bits);
    free(bits);
    return buf;
}

static void download(kt_buf *buf, uint32_t *bits)
{
    kt_buf_get(buf, bits);
    ck_assert_msg(kt_buf_guards_ok(buf), "guard overwritten");
}

/* ak_conv2d_backward's tensors on a backend: x, w and dy uploaded; dx, dw
 * and dbias (of no elements) filled with NaNs that must be overwritten. */
typedef struct bwd_bufs {
    kt_buf x, w, dy, dx, dw, db;
} bwd_bufs;

static bwd_bufs bwd_open(ak_backend *b, const ref_tensor *x, const ref_tensor *w,
                         const ref_tensor *dy, ak_dtype dxd, ak_dtype dwd, ak_dtype dbd, size_t no)
{
    bwd_bufs d;
    d.x = upload(b, x);
    d.w = upload(b, w);
    d.dy = upload(b, dy);
    d.dx = nan_buf(b, x->n, dxd);
    d.dw = nan_buf(b, w->n, dwd);
    d.db = nan_buf(b, no, dbd);
    return d;
}

/* Frees the tensors; every guard must hold. */
static void bwd_close(bwd_bufs *d)
{
    kt_buf *all[6] = {&d->x, &d->w, &d->dy, &d->dx, &d->dw, &d->db};
    for (int k = 0; k < 6; k++) {
        ck_assert(kt_buf_guards_ok(all[k]));
        kt_buf_free(all[k]);
    }
}

/* Compares a result tensor with a reference: NaN where the reference is
 * NaN, the same infinities, else within bound(i). */
static size_t compare(const char *what, kt_buf *buf, const double *ref, const double *s, double rel,
                      double ulps, double abs_tol, const double *extra)
{
    const size_t n = buf->t.n;
    uint32_t *got = malloc((n + 1) * sizeof *got);
    download(buf, got);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double v = kt_value(buf->t.dtype, got[i]);
        const double bound =
            rel * s[i] + ulps * kt_ulp(buf->t.dtype, ref[i]) + abs_tol + (extra ? extra[i] : 0);
        if (!kt_agree_within(v, ref[i], bound) && bad++ < 4)
            printf("%s[%zu] = %.9g (0x%x), reference %.17g, bound %.3g\n", what, i, v, got[i],
                   ref[i], bound);
    }
    free(got);
    return bad;
}

/* Each value as compute type k multiplies it. */
static double *as_input(ak_compute k, const double *v, size_t n)
{
    double *r = malloc((n + 1) * sizeof *r);
    ck_assert_ptr_nonnull(r);
    for (size_t i = 0; i < n; i++)
        r[i] = kt_compute_input(k, v[i]);
    return r;
}

/* ---- cases ------------------------------------------------------------------------------- */
typedef struct ccase {
    ak_conv2d c;
    ak_dtype xd;  /* x, w, dy */
    ak_dtype yd;  /* y, dw */
    ak_dtype bd;  /* bias, dbias */
    ak_dtype dxd; /* dx */
    bool bias, dx, nan_x;
} ccase;

static const ak_conv2d *shapes(size_t *count)
{
    static ak_conv2d s[10];
    s[0] = ref_conv_geom(2, 3, 7, 6, 4, 3, 3, 1, 0);
    s[1] = ref_conv_geom(2, 3, 7, 6, 4, 3, 3, 2, 1);
    s[2] = ref_conv_geom(1, 2, 9, 9, 3, 3, 2, 3, 2);
    s[3] = ref_conv_geom(3, 1, 5, 5, 2, 1, 1, 1, 0);
    s[4] = ref_conv_geom(3, 2, 5, 4, 2, 5, 4, 1, 2);
    s[5] = ref_conv_geom(2, 1, 32, 32, 6, 5, 5, 1, 0);  /* LeNet-5 C1 */
    s[6] = ref_conv_geom(2, 6, 14, 14, 16, 5, 5, 1, 0); /* LeNet-5 C3 */
    s[7] = ref_conv_geom(1, 1, 4, 4, 1, 4, 4, 1, 0);
    s[8] = ref_conv_geom(2, 2, 6, 6, 3, 2, 2, 2, 0);
    s[9] = ref_conv_geom(2, 2, 3, 8, 2, 3, 3, 4, 1);
    *count = 10;
    return s;
}

static void describe(const ccase *cc, char *out, size_t len)
{
    const ak_conv2d *c = &cc->c;
    snprintf(out, len, "N%zu C%zu %zux%zu -> O%zu k%zux%zu s%zu p%zu %s %s->%s bias %s dx %s",
             c->batch, c->in_ch, c->in_h, c->in_w, c->out_ch, c->k_h, c->k_w, c->stride, c->pad,
             ak_compute_name(c->compute), ak_dtype_name(cc->xd), ak_dtype_name(cc->yd),
             cc->bias ? ak_dtype_name(cc->bd) : "none", cc->dx ? ak_dtype_name(cc->dxd) : "none");
}

static size_t forward_case(ak_backend *b, const ccase *cc, uint64_t seed)
{
    char what[200];
    describe(cc, what, sizeof what);
    const ak_conv2d *c = &cc->c;
    ts_rng r;
    ts_rng_init(&r, seed);
    const size_t nx = ref_conv_nx(c), nw = ref_conv_nw(c), ny = ref_conv_ny(c);
    const size_t p = ref_conv_out_h(c) * ref_conv_out_w(c);
    ref_tensor x = ref_tensor_make(cc->xd, nx), w = ref_tensor_make(cc->xd, nw),
               bias = ref_tensor_make(cc->bd, c->out_ch);
    ref_tensor_random(&x, &r);
    ref_tensor_random(&w, &r);
    ref_tensor_random(&bias, &r);
    if (cc->nan_x && nx > 3) {
        x.bits[nx / 2] = kt_from_f64(cc->xd, NAN);
        x.bits[1] = kt_from_f64(cc->xd, INFINITY);
        ref_tensor_update_values(&x);
    }
    kt_buf dx_ = upload(b, &x), dw_ = upload(b, &w), db_ = upload(b, &bias),
           dy_ = nan_buf(b, ny, cc->yd);
    const int rc =
        ak_conv2d_forward(b, c, dy_.t, dx_.t, dw_.t, cc->bias ? db_.t : ak_tensor_none());
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    double *xr = as_input(c->compute, x.v, nx), *wr = as_input(c->compute, w.v, nw);
    double *yr = malloc((ny + 1) * sizeof *yr), *sr = malloc((ny + 1) * sizeof *sr);
    ref_conv_forward(c, xr, wr, cc->bias ? bias.v : NULL, yr, sr);
    const size_t kk = c->in_ch * c->k_h * c->k_w;
    const double u = kt_compute_unit(c->compute);
    /* y is the GEMM's accumulator (fp32, fp16 for 16F) + bias, rounded once
     * to y's dtype: the accumulator's rounding is relative to the product */
    const ak_dtype acc = c->compute == AK_COMPUTE_16F ? AK_F16 : AK_F32;
    double *gemm_ulp = malloc((ny + 1) * sizeof *gemm_ulp);
    for (size_t i = 0; i < ny; i++) {
        const double bv = cc->bias ? bias.v[i / p % c->out_ch] : 0;
        gemm_ulp[i] = kt_ulp(acc, yr[i] - bv);
    }
    const size_t bad =
        compare(what, &dy_, yr, sr, kt_gamma((double)kk + 3, u), 1,
                (double)(kk + 3) * (c->compute == AK_COMPUTE_16F ? 0x1p-24 : 0x1p-149), gemm_ulp);
    free(gemm_ulp);
    ck_assert(kt_buf_guards_ok(&dx_) && kt_buf_guards_ok(&dw_) && kt_buf_guards_ok(&db_));
    kt_buf_free(&dx_);
    kt_buf_free(&dw_);
    kt_buf_free(&db_);
    kt_buf_free(&dy_);
    ref_tensor_free(&x);
    ref_tensor_free(&w);
    ref_tensor_free(&bias);
    free(xr);
    free(wr);
    free(yr);
    free(sr);
    return bad;
}

static size_t backward_case(ak_backend *b, const ccase *cc, uint64_t seed)
{
    char what[200];
    describe(cc, what, sizeof what);
    const ak_conv2d *c = &cc->c;
    ts_rng r;
    ts_rng_init(&r, seed);
    const size_t nx = ref_conv_nx(c), nw = ref_conv_nw(c), ny = ref_conv_ny(c), no = c->out_ch;
    const size_t p = ref_conv_out_h(c) * ref_conv_out_w(c), np = c->batch * p;
    ref_tensor x = ref_tensor_make(cc->xd, nx), w = ref_tensor_make(cc->xd, nw),
               dy = ref_tensor_make(cc->xd, ny);
    ref_tensor_random(&x, &r);
    ref_tensor_random(&w, &r);
    ref_tensor_random(&dy, &r);
    bwd_bufs d = bwd_open(b, &x, &w, &dy, cc->dxd, cc->yd, cc->bd, no);
    const int rc = ak_conv2d_backward(b, c, cc->dx ? d.dx.t : ak_tensor_none(), d.dw.t,
                                      cc->bias ? d.db.t : ak_tensor_none(), d.dy.t, d.x.t, d.w.t);
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    double *xr = as_input(c->compute, x.v, nx), *wr = as_input(c->compute, w.v, nw),
           *dyr = as_input(c->compute, dy.v, ny);
    ref_conv_grads g = ref_conv_backward(c, xr, wr, dyr);
    /* dbias sums dy as stored, not as the GEMM's fast type would round it */
    for (size_t i = 0; i < no; i++)
        g.db[i] = 0;
    for (size_t i = 0; i < ny; i++)
        g.db[i / p % no] += dy.v[i];
    const double u = kt_compute_unit(c->compute);
    const double tiny = c->compute == AK_COMPUTE_16F ? 0x1p-24 : 0x1p-149;
    size_t bad = compare("dw", &d.dw, g.dw, g.sw, kt_gamma((double)np + 3, u), 2,
                         (double)(np + 3) * tiny, NULL);
    if (cc->dx) /* dcol = W^T dY rounded to fp32 (fp16 for 16F), taps summed exactly enough */
        bad += compare("dx", &d.dx, g.dx, g.sx, kt_gamma((double)c->out_ch + 3, u) + u, 1,
                       (double)(c->out_ch + 3) * (double)(c->k_h * c->k_w) * tiny, NULL);
    if (cc->bias) bad += compare("dbias", &d.db, g.db, g.sb, 0x1p-45, 1, 0, NULL);
    if (bad) printf("in %s\n", what);
    bwd_close(&d);
    ref_tensor_free(&x);
    ref_tensor_free(&w);
    ref_tensor_free(&dy);
    ref_conv_grads_free(&g);
    free(xr);
    free(wr);
    free(dyr);
    return bad;
}

static ccase case_of(const ak_conv2d *shape, kt_pairing p, size_t variant)
{
    static const ak_dtype others[] = {AK_F32, AK_F16, AK_BF16};
    ccase cc;
    memset(&cc, 0, sizeof cc);
    cc.c = *shape;
    cc.c.compute = p.k;
    cc.xd = p.in;
    cc.yd = p.out;
    cc.bias = variant % 2 == 0;
    cc.bd = others[variant % 3];
    cc.dx = variant % 4 != 3;
    cc.dxd = others[(variant + 1) % 3];
    return cc;
}

/* Every shape with two variants of the optional tensors' presence and
 * dtypes, forward or backward. */
static void sweep(kt_pairing p, bool backward)
{
    ak_backend *b = kt_open_cpu();
    size_t ns, bad = 0;
    const ak_conv2d *s = shapes(&ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t v = 0; v < 2; v++) {
            const ccase cc = case_of(&s[i], p, backward ? i * 2 + v : i + v);
            bad += backward ? backward_case(b, &cc, ts_seed() + i * 11 + v)
                            : forward_case(b, &cc, ts_seed() + i * 7 + v);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}

START_TEST(forward_every_pairing_and_shape) { sweep(kt_pairings[_i], false); }
END_TEST

START_TEST(backward_every_pairing_and_shape) { sweep(kt_pairings[_i], true); }
END_TEST

/* A NaN and an infinity in x reach exactly the outputs whose windows cover them. */
START_TEST(nan_reaches_its_receptive_field)
{
    ak_backend *b = kt_open_cpu();
    size_t ns, bad = 0;
    const ak_conv2d *s = shapes(&ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t p = 0; p < KT_NPAIRINGS; p += 4) {
            ccase cc = case_of(&s[i], kt_pairings[p], 0);
            cc.nan_x = true;
            bad += forward_case(b, &cc, ts_seed() + i);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* ---- finite differences ------------------------------------------------------------------ */
/* L = sum r .* conv(x, w, bias) in double. */
static double loss(const ak_conv2d *c, const double *x, const double *w, const double *bias,
                   const double *r, double *y, double *s)
{
    ref_conv_forward(c, x, w, bias, y, s);
    const size_t ny = ref_conv_ny(c);
    double l = 0;
    for (size_t i = 0; i < ny; i++)
        l += r[i] * y[i];
    return l;
}

/* Central differences of L in one coordinate, h = 2^-10 (exact steps). */
static double central(const ak_conv2d *c, double *x, double *w, double *bias, const double *r,
                      double *v, double *y, double *s)
{
    const double h = 0x1p-10, keep = *v;
    *v = keep + h;
    const double up = loss(c, x, w, bias, r, y, s);
    *v = keep - h;
    const double down = loss(c, x, w, bias, r, y, s);
    *v = keep;
    return (up - down) / (2 * h);
}

/* fp32 backward against finite differences of sum(r .* y): every
 * coordinate of small problems, a sample of the LeNet ones. */
static size_t fd_case(ak_backend *b, const ak_conv2d *c, size_t sample, uint64_t seed)
{
    ts_rng r;
    ts_rng_init(&r, seed);
    const size_t nx = ref_conv_nx(c), nw = ref_conv_nw(c), ny = ref_conv_ny(c), no = c->out_ch;
    const size_t np = c->batch * ref_conv_out_h(c) * ref_conv_out_w(c);
    ref_tensor x = ref_tensor_make(AK_F32, nx), w = ref_tensor_make(AK_F32, nw),
               bias = ref_tensor_make(AK_F32, no), rr = ref_tensor_make(AK_F32, ny);
    ref_tensor_random(&x, &r);
    ref_tensor_random(&w, &r);
    ref_tensor_random(&bias, &r);
    ref_tensor_random(&rr, &r);
    bwd_bufs d = bwd_open(b, &x, &w, &rr, AK_F32, AK_F32, AK_F32, no);
    ck_assert_int_eq(ak_conv2d_backward(b, c, d.dx.t, d.dw.t, d.db.t, d.dy.t, d.x.t, d.w.t), AK_OK);
    uint32_t *gx = malloc(nx * 4), *gw = malloc(nw * 4), *gb = malloc(no * 4);
    download(&d.dx, gx);
    download(&d.dw, gw);
    download(&d.db, gb);
    double *y = malloc(ny * 8), *s = malloc(ny * 8);
    ref_conv_grads g = ref_conv_backward(c, x.v, w.v, rr.v);
    size_t bad = 0;
    struct {
        const char *name;
        double *vals;
        size_t n;
        const uint32_t *got;
        const double *ref, *abs;
        size_t terms;
    } parts[3] = {{"dx", x.v, nx, gx, g.dx, g.sx, c->out_ch * c->k_h * c->k_w},
                  {"dw", w.v, nw, gw, g.dw, g.sw, np},
                  {"dbias", bias.v, no, gb, g.db, g.sb, np}};
    for (int p = 0; p < 3; p++)
        for (size_t t = 0; t < (sample ? sample : parts[p].n); t++) {
            const size_t i = sample ? ts_below(&r, (uint32_t)parts[p].n) : t;
            const double fd = central(c, x.v, w.v, bias.v, rr.v, &parts[p].vals[i], y, s);
            const double got = kt_value(AK_F32, parts[p].got[i]);
            /* the reference is the gradient; fd reproduces it up to double rounding */
            const double fd_tol = 1e-9 * (1 + parts[p].abs[i]);
            const double tol =
                kt_gamma((double)parts[p].terms + 4, 0x1p-24) * parts[p].abs[i] + fd_tol;
            if ((fabs(fd - parts[p].ref[i]) > fd_tol || fabs(got - fd) > tol) && bad++ < 4)
                printf("%s[%zu]: kernel %.9g, finite difference %.12g, direct %.12g\n",
                       parts[p].name, i, got, fd, parts[p].ref[i]);
        }
    bwd_close(&d);
    ref_tensor_free(&x);
    ref_tensor_free(&w);
    ref_tensor_free(&bias);
    ref_tensor_free(&rr);
    ref_conv_grads_free(&g);
    free(gx);
    free(gw);
    free(gb);
    free(y);
    free(s);
    return bad;
}

START_TEST(backward_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    const ak_conv2d small[] = {
        ref_conv_geom(2, 2, 6, 5, 3, 3, 3, 2, 1), ref_conv_geom(2, 1, 7, 7, 2, 3, 2, 1, 0),
        ref_conv_geom(1, 3, 5, 5, 2, 2, 2, 3, 2), ref_conv_geom(2, 2, 4, 4, 2, 1, 1, 1, 1)};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        bad += fd_case(b, &small[i], 0, ts_seed() + i);
    const ak_conv2d lenet[] = {ref_conv_geom(1, 1, 32, 32, 6, 5, 5, 1, 0),
                               ref_conv_geom(1, 6, 14, 14, 16, 5, 5, 1, 0)};
    for (size_t i = 0; i < 2; i++)
        bad += fd_case(b, &lenet[i], 12, ts_seed() + 100 + i);
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* ---- sizes, empty work, bad arguments ----------------------------------------------------- */
START_TEST(output_sizes)
{
    ak_conv2d c = ref_conv_geom(1, 1, 32, 32, 6, 5, 5, 1, 0);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 28);
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 28);
    c = ref_conv_geom(1, 1, 7, 6, 1, 3, 3, 2, 1);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 4); /* (7 + 2 - 3) / 2 + 1 */
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 3); /* (6 + 2 - 3) / 2 + 1 */
    c = ref_conv_geom(1, 1, 3, 8, 1, 3, 3, 4, 1);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 1);
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 2);
    c.stride = 0;
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 0);
    c = ref_conv_geom(1, 1, 3, 3, 1, 6, 2, 1, 1); /* 6 > 3 + 2 */
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 0);
    ck_assert_uint_eq(ak_conv2d_out_h(NULL), 0);
}
END_TEST

START_TEST(empty_batch_and_no_input_channels)
{
    ak_backend *b = kt_open_cpu();
    /* batch 0: forward does nothing; backward overwrites dw and dbias with zeros */
    ak_conv2d c = ref_conv_geom(0, 2, 5, 5, 3, 3, 3, 1, 0);
    kt_buf bw = nan_buf(b, 3 * 2 * 9, AK_F32), bdw = nan_buf(b, 3 * 2 * 9, AK_F32),
           bdb = nan_buf(b, 3, AK_F16);
    ck_assert_int_eq(
        ak_conv2d_forward(b, &c, ak_tensor_none(), ak_tensor_none(), bw.t, ak_tensor_none()),
        AK_OK);
    ck_assert_int_eq(ak_conv2d_backward(b, &c, ak_tensor_none(), bdw.t, bdb.t, ak_tensor_none(),
                                        ak_tensor_none(), bw.t),
                     AK_OK);
    uint32_t got[54];
    download(&bdw, got);
    for (int i = 0; i < 54; i++)
        ck_assert_uint_eq(got[i], 0);
    download(&bdb, got);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(got[i], 0);
    /* no input channels: y = bias, exactly (rounded to y) */
    c = ref_conv_geom(2, 0, 4, 4, 3, 3, 3, 1, 1);
    ref_tensor bias = ref_tensor_make(AK_F32, 3);
    bias.bits[0] = 0x3F800001u; /* 1 + 2^-23: rounds to 1 in fp16 */
    bias.bits[1] = 0xC0400000u; /* -3 */
    bias.bits[2] = 0x80000000u; /* -0: +0 + -0 = +0 */
    kt_buf bb = upload(b, &bias), by = nan_buf(b, 2 * 3 * 16, AK_F16);
    const ak_tensor none16 = ak_tensor_of(NULL, 0, AK_F16);
    ck_assert_int_eq(ak_conv2d_forward(b, &c, by.t, none16, none16, bb.t), AK_OK);
    uint32_t y[96];
    download(&by, y);
    for (int i = 0; i < 96; i++) {
        const uint32_t want[3] = {0x3C00, 0xC200, 0x0000};
        ck_assert_msg(y[i] == want[i / 16 % 3], "y[%d] = 0x%04x", i, y[i]);
    }
    ref_tensor_free(&bias);
    kt_buf_free(&bw);
    kt_buf_free(&bdw);
    kt_buf_free(&bdb);
    kt_buf_free(&bb);
    kt_buf_free(&by);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments)
{
    ak_backend *b = kt_open_cpu();
    const ak_conv2d ok = ref_conv_geom(2, 3, 6, 6, 4, 3, 3, 1, 0); /* y: 2 x 4 x 4 x 4 */
    static float fx[216], fw[108], fy[128], fb[4], fdx[216], fdw[108];
    static uint16_t hx[216], hw[108], hy[128];
    const ak_tensor x = ak_tensor_of(fx, 216, AK_F32), w = ak_tensor_of(fw, 108, AK_F32),
                    y = ak_tensor_of(fy, 128, AK_F32), bias = ak_tensor_of(fb, 4, AK_F32),
                    dx = ak_tensor_of(fdx, 216, AK_F32), dw = ak_tensor_of(fdw, 108, AK_F32);
    const char *fwd = "ak_conv2d_forward: ", *bwd = "ak_conv2d_backward: ";
    ck_assert_int_eq(ak_conv2d_forward(b, &ok, y, x, w, bias), AK_OK);
    ck_assert_int_eq(ak_conv2d_backward(b, &ok, dx, dw, bias, y, x, w), AK_OK);
    ck_assert_int_eq(ak_conv2d_forward(NULL, &ok, y, x, w, bias), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, NULL, y, x, w, bias), AK_EINVAL, fwd, "c is NULL");
    ak_conv2d c = ok;
    c.stride = 0;
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd, "stride is 0");
    c = ok;
    c.k_w = 0;
    KT_EXPECT_ERROR(b, ak_conv2d_backward(b, &c, dx, dw, bias, y, x, w), AK_EINVAL, bwd,
                    "the kernel is 3 x 0");
    c = ok;
    c.k_h = 9;
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd,
                    "the 9 x 3 kernel does not fit the 6 x 6 input padded by 0");
    c = ok;
    c.compute = (ak_compute)11;
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd,
                    "invalid compute type (11)");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, ak_tensor_of(fy, 127, AK_F32), x, w, bias),
                    AK_EINVAL, fwd, "y has 127 elements, expected 128");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(fx, 215, AK_F32), w, bias),
                    AK_EINVAL, fwd, "x has 215 elements, expected 216");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, y, x, ak_tensor_of(fw, 107, AK_F32), bias),
                    AK_EINVAL, fwd, "w has 107 elements, expected 108");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, y, x, w, ak_tensor_of(fb, 3, AK_F32)), AK_EINVAL,
                    fwd, "bias has 3 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(NULL, 216, AK_F32), w, bias),
                    AK_EINVAL, fwd, "x is NULL");
    /* dtypes */
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(hx, 216, AK_F16), w, bias),
                    AK_EUNSUPPORTED, fwd,
                    "compute type 32F needs w and x of one dtype, got fp32/fp16/fp32");
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &ok, ak_tensor_of(hy, 128, AK_F16), x, w, bias),
                    AK_EUNSUPPORTED, fwd,
                    "compute type 32F with fp32 w and x needs fp32 y, got fp32/fp32/fp16");
    c = ok;
    c.compute = AK_COMPUTE_16F;
    KT_EXPECT_ERROR(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EUNSUPPORTED, fwd,
                    "compute type 16F needs fp16 w, x and y, got fp32/fp32/fp32");
    c.compute = AK_COMPUTE_32F_FAST_TF32;
    KT_EXPECT_ERROR(b,
                    ak_conv2d_forward(b, &c, ak_tensor_of(hy, 128, AK_BF16),
                                      ak_tensor_of(hx, 216, AK_BF16),
                                      ak_tensor_of(hw, 108, AK_BF16), bias),
                    AK_EUNSUPPORTED, fwd,
                    "compute type 32F_FAST_TF32 needs fp32 w, x and y, got bf16/bf16/bf16");
    /* backward */
    KT_EXPECT_ERROR(b,
                    ak_conv2d_backward(b, &ok, ak_tensor_of(fdx, 215, AK_F32), dw, bias, y, x, w),
                    AK_EINVAL, bwd, "dx has 215 elements, expected 216");
    KT_EXPECT_ERROR(b, ak_conv2d_backward(b, &ok, dx, ak_tensor_none(), bias, y, x, w), AK_EINVAL,
                    bwd, "dw has 0 elements, expected 108");
    KT_EXPECT_ERROR(b, ak_conv2d_backward(b, &ok, dx, dw, ak_tensor_of(fb, 5, AK_F32), y, x, w),
                    AK_EINVAL, bwd, "dbias has 5 elements, expected 4");
    KT_EXPECT_ERROR(b,
                    ak_conv2d_backward(b, &ok, dx, dw, bias, ak_tensor_of(fy, 100, AK_F32), x, w),
                    AK_EINVAL, bwd, "dy has 100 elements, expected 128");
    KT_EXPECT_ERROR(b,
                    ak_conv2d_backward(b, &ok, dx, dw, bias, y, x, ak_tensor_of(hw, 108, AK_F16)),
                    AK_EUNSUPPORTED, bwd, "w is fp16 but dy and x are fp32");
    KT_EXPECT_ERROR(b,
                    ak_conv2d_backward(b, &ok, dx, ak_tensor_of(hw, 108, AK_BF16), bias, y, x, w),
                    AK_EUNSUPPORTED, bwd,
                    "compute type 32F with fp32 dy and x needs fp32 dw, got fp32/fp32/bf16");
    KT_EXPECT_ERROR(
        b, ak_conv2d_backward(b, &ok, dx, dw, bias, ak_tensor_of(hy, 128, AK_F16), x, w),
        AK_EUNSUPPORTED, bwd, "compute type 32F needs dy and x of one dtype, got fp16/fp32/fp32");
    /* dx and dbias may be any dtype */
    ck_assert_int_eq(ak_conv2d_backward(b, &ok, ak_tensor_of(hx, 216, AK_BF16), dw,
                                        ak_tensor_of(hy, 4, AK_F16), y, x, w),
                     AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_conv");
    TCase *tc = tcase_create("conv");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, forward_every_pairing_and_shape, 0, KT_NPAIRINGS);
    tcase_add_loop_test(tc, backward_every_pairing_and_shape, 0, KT_NPAIRINGS);
    tcase_add_test(tc, nan_reaches_its_receptive_field);
    tcase_add_test(tc, backward_matches_finite_differences);
    tcase_add_test(tc, output_sizes);
    tcase_add_test(tc, empty_batch_and_no_input_channels);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
