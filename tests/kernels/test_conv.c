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
#include "kt.h"

/* ---- values, through the emulator's public API --------------------------------- */
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

/* An fp32 value as a fast compute type multiplies it (tf32: 10 fraction
 * bits to nearest even, as test_gemm checks by hand). */
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

static double gamma_n(double n, double u) { return n * u / (1 - n * u); }

/* ---- the direct references ---------------------------------------------------------- */
static size_t out_h(const ak_conv2d *c) { return (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1; }
static size_t out_w(const ak_conv2d *c) { return (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1; }

/* Calls f(x index, w index, y index) for every product of the convolution. */
#define FOR_EACH_TAP(c, xi, wi, yi, body)                                                          \
    for (size_t n_ = 0; n_ < (c)->batch; n_++)                                                     \
        for (size_t o_ = 0; o_ < (c)->out_ch; o_++)                                                \
            for (size_t oy_ = 0; oy_ < out_h(c); oy_++)                                            \
                for (size_t ox_ = 0; ox_ < out_w(c); ox_++)                                        \
                    for (size_t ci_ = 0; ci_ < (c)->in_ch; ci_++)                                  \
                        for (size_t ki_ = 0; ki_ < (c)->k_h; ki_++)                                \
                            for (size_t kj_ = 0; kj_ < (c)->k_w; kj_++) {                          \
                                const long iy_ = (long)(oy_ * (c)->stride + ki_) - (long)(c)->pad; \
                                const long ix_ = (long)(ox_ * (c)->stride + kj_) - (long)(c)->pad; \
                                if (iy_ < 0 || ix_ < 0 || iy_ >= (long)(c)->in_h ||                \
                                    ix_ >= (long)(c)->in_w)                                        \
                                    continue;                                                      \
                                const size_t xi =                                                  \
                                    (((n_ * (c)->in_ch + ci_) * (c)->in_h) + (size_t)iy_) *        \
                                        (c)->in_w +                                                \
                                    (size_t)ix_;                                                   \
                                const size_t wi =                                                  \
                                    (((o_ * (c)->in_ch + ci_) * (c)->k_h) + ki_) * (c)->k_w + kj_; \
                                const size_t yi =                                                  \
                                    ((n_ * (c)->out_ch + o_) * out_h(c) + oy_) * out_w(c) + ox_;   \
                                body                                                               \
                            }

/* y = conv(x, w) + bias and S = sum |x w| + |bias| per output. */
static void ref_forward(const ak_conv2d *c, const double *x, const double *w, const double *bias,
                        double *y, double *s)
{
    const size_t ny = c->batch * c->out_ch * out_h(c) * out_w(c), p = out_h(c) * out_w(c);
    for (size_t i = 0; i < ny; i++) {
        y[i] = 0;
        s[i] = 0;
    }
    FOR_EACH_TAP(c, xi, wi, yi, {
        y[yi] += x[xi] * w[wi];
        s[yi] += fabs(x[xi] * w[wi]);
    })
    for (size_t i = 0; bias && i < ny; i++) {
        y[i] += bias[i / p % c->out_ch];
        s[i] += fabs(bias[i / p % c->out_ch]);
    }
}

/* The gradients of sum(dy .* y) and their sums of absolute terms. */
static void ref_backward(const ak_conv2d *c, const double *x, const double *w, const double *dy,
                         double *dx, double *sx, double *dw, double *sw, double *db, double *sb)
{
    const size_t nx = c->batch * c->in_ch * c->in_h * c->in_w,
                 nw = c->out_ch * c->in_ch * c->k_h * c->k_w;
    const size_t p = out_h(c) * out_w(c), ny = c->batch * c->out_ch * p;
    memset(dx, 0, nx * sizeof *dx);
    memset(sx, 0, nx * sizeof *sx);
    memset(dw, 0, nw * sizeof *dw);
    memset(sw, 0, nw * sizeof *sw);
    memset(db, 0, c->out_ch * sizeof *db);
    memset(sb, 0, c->out_ch * sizeof *sb);
    FOR_EACH_TAP(c, xi, wi, yi, {
        dx[xi] += w[wi] * dy[yi];
        sx[xi] += fabs(w[wi] * dy[yi]);
        dw[wi] += x[xi] * dy[yi];
        sw[wi] += fabs(x[xi] * dy[yi]);
    })
    for (size_t i = 0; i < ny; i++) {
        db[i / p % c->out_ch] += dy[i];
        sb[i / p % c->out_ch] += fabs(dy[i]);
    }
}

/* ---- host tensors ----------------------------------------------------------------------- */
typedef struct htensor {
    ak_dtype dt;
    size_t n;
    uint32_t *bits;
    double *v; /* exact values */
} htensor;

static htensor h_make(ak_dtype dt, size_t n)
{
    htensor t = {dt, n, calloc(n + 1, sizeof(uint32_t)), calloc(n + 1, sizeof(double))};
    ck_assert(t.bits && t.v);
    return t;
}

static void h_random(htensor *t, ts_rng *r)
{
    for (size_t i = 0; i < t->n; i++) {
        t->bits[i] = bits_of(t->dt, 2 * ts_uniform(r) - 1);
        t->v[i] = value_of(t->dt, t->bits[i]);
    }
}

static void h_free(htensor *t)
{
    free(t->bits);
    free(t->v);
}

/* Backend memory holding t (guarded). */
static kt_buf upload(ak_backend *b, const htensor *t)
{
    kt_buf buf = kt_buf_alloc(b, t->n, t->dt);
    void *raw = malloc(t->n * 4 + 4);
    for (size_t i = 0; i < t->n; i++) {
        if (t->dt == AK_F32)
            ((uint32_t *)raw)[i] = t->bits[i];
        else
            ((uint16_t *)raw)[i] = (uint16_t)t->bits[i];
    }
    kt_buf_upload(&buf, raw);
    free(raw);
    return buf;
}

/* Backend memory of n elements of dt, filled with NaNs (must be overwritten). */
static kt_buf nan_buf(ak_backend *b, size_t n, ak_dtype dt)
{
    htensor t = h_make(dt, n);
    for (size_t i = 0; i < n; i++)
        t.bits[i] = dt == AK_F32 ? 0x7FC00000u : dt == AK_F16 ? 0x7E00u : 0x7FC0u;
    kt_buf buf = upload(b, &t);
    h_free(&t);
    return buf;
}

static void download(kt_buf *buf, uint32_t *bits)
{
    const size_t n = buf->t.n;
    void *raw = malloc(n * 4 + 4);
    kt_buf_download(buf, raw);
    for (size_t i = 0; i < n; i++)
        bits[i] = buf->t.dtype == AK_F32 ? ((uint32_t *)raw)[i] : ((uint16_t *)raw)[i];
    free(raw);
    ck_assert_msg(kt_buf_guards_ok(buf), "guard overwritten");
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
        const double v = value_of(buf->t.dtype, got[i]);
        const double bound =
            rel * s[i] + ulps * ulp_of(buf->t.dtype, ref[i]) + abs_tol + (extra ? extra[i] : 0);
        bool ok;
        if (ref[i] != ref[i])
            ok = v != v;
        else if (isinf(ref[i]))
            ok = v == ref[i];
        else
            ok = fabs(v - ref[i]) <= bound;
        if (!ok && bad++ < 4)
            printf("%s[%zu] = %.9g (0x%x), reference %.17g, bound %.3g\n", what, i, v, got[i],
                   ref[i], bound);
    }
    free(got);
    return bad;
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

static ak_conv2d geom(size_t batch, size_t in_ch, size_t in_h, size_t in_w, size_t out_ch,
                      size_t k_h, size_t k_w, size_t stride, size_t pad)
{
    ak_conv2d c = {batch, in_ch, in_h, in_w, out_ch, k_h, k_w, stride, pad, AK_COMPUTE_32F};
    return c;
}

static const ak_conv2d *shapes(size_t *count)
{
    static ak_conv2d s[10];
    s[0] = geom(2, 3, 7, 6, 4, 3, 3, 1, 0);
    s[1] = geom(2, 3, 7, 6, 4, 3, 3, 2, 1);
    s[2] = geom(1, 2, 9, 9, 3, 3, 2, 3, 2);
    s[3] = geom(3, 1, 5, 5, 2, 1, 1, 1, 0);
    s[4] = geom(3, 2, 5, 4, 2, 5, 4, 1, 2);
    s[5] = geom(2, 1, 32, 32, 6, 5, 5, 1, 0);  /* LeNet-5 C1 */
    s[6] = geom(2, 6, 14, 14, 16, 5, 5, 1, 0); /* LeNet-5 C3 */
    s[7] = geom(1, 1, 4, 4, 1, 4, 4, 1, 0);
    s[8] = geom(2, 2, 6, 6, 3, 2, 2, 2, 0);
    s[9] = geom(2, 2, 3, 8, 2, 3, 3, 4, 1);
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

static double unit_of(ak_compute k) { return k == AK_COMPUTE_16F ? 0x1p-11 : 0x1p-24; }

static size_t forward_case(ak_backend *b, const ccase *cc, uint64_t seed)
{
    char what[200];
    describe(cc, what, sizeof what);
    const ak_conv2d *c = &cc->c;
    ts_rng r;
    ts_rng_init(&r, seed);
    const size_t nx = c->batch * c->in_ch * c->in_h * c->in_w,
                 nw = c->out_ch * c->in_ch * c->k_h * c->k_w;
    const size_t ny = c->batch * c->out_ch * out_h(c) * out_w(c);
    htensor x = h_make(cc->xd, nx), w = h_make(cc->xd, nw), bias = h_make(cc->bd, c->out_ch);
    h_random(&x, &r);
    h_random(&w, &r);
    h_random(&bias, &r);
    if (cc->nan_x && nx > 3) {
        x.bits[nx / 2] = bits_of(cc->xd, NAN);
        x.v[nx / 2] = NAN;
        x.bits[1] = bits_of(cc->xd, INFINITY);
        x.v[1] = INFINITY;
    }
    kt_buf dx_ = upload(b, &x), dw_ = upload(b, &w), db_ = upload(b, &bias),
           dy_ = nan_buf(b, ny, cc->yd);
    const int rc =
        ak_conv2d_forward(b, c, dy_.t, dx_.t, dw_.t, cc->bias ? db_.t : ak_tensor_none());
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    double *xr = malloc((nx + 1) * sizeof *xr), *wr = malloc((nw + 1) * sizeof *wr);
    double *yr = malloc((ny + 1) * sizeof *yr), *sr = malloc((ny + 1) * sizeof *sr);
    for (size_t i = 0; i < nx; i++)
        xr[i] = input_as(c->compute, x.v[i]);
    for (size_t i = 0; i < nw; i++)
        wr[i] = input_as(c->compute, w.v[i]);
    ref_forward(c, xr, wr, cc->bias ? bias.v : NULL, yr, sr);
    const size_t kk = c->in_ch * c->k_h * c->k_w;
    const double u = unit_of(c->compute);
    /* y is the GEMM's accumulator (fp32, fp16 for 16F) + bias, rounded once
     * to y's dtype: the accumulator's rounding is relative to the product */
    const ak_dtype acc = c->compute == AK_COMPUTE_16F ? AK_F16 : AK_F32;
    double *gemm_ulp = malloc((ny + 1) * sizeof *gemm_ulp);
    for (size_t i = 0; i < ny; i++) {
        const double bv = cc->bias ? bias.v[i / (out_h(c) * out_w(c)) % c->out_ch] : 0;
        gemm_ulp[i] = ulp_of(acc, yr[i] - bv);
    }
    const size_t bad =
        compare(what, &dy_, yr, sr, gamma_n((double)kk + 3, u), 1,
                (double)(kk + 3) * (c->compute == AK_COMPUTE_16F ? 0x1p-24 : 0x1p-149), gemm_ulp);
    free(gemm_ulp);
    ck_assert(kt_buf_guards_ok(&dx_) && kt_buf_guards_ok(&dw_) && kt_buf_guards_ok(&db_));
    kt_buf_free(&dx_);
    kt_buf_free(&dw_);
    kt_buf_free(&db_);
    kt_buf_free(&dy_);
    h_free(&x);
    h_free(&w);
    h_free(&bias);
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
    const size_t nx = c->batch * c->in_ch * c->in_h * c->in_w,
                 nw = c->out_ch * c->in_ch * c->k_h * c->k_w;
    const size_t ny = c->batch * c->out_ch * out_h(c) * out_w(c), no = c->out_ch;
    htensor x = h_make(cc->xd, nx), w = h_make(cc->xd, nw), dy = h_make(cc->xd, ny);
    h_random(&x, &r);
    h_random(&w, &r);
    h_random(&dy, &r);
    kt_buf bx = upload(b, &x), bw = upload(b, &w), bdy = upload(b, &dy);
    kt_buf bdx = nan_buf(b, nx, cc->dxd), bdw = nan_buf(b, nw, cc->yd),
           bdb = nan_buf(b, no, cc->bd);
    const int rc = ak_conv2d_backward(b, c, cc->dx ? bdx.t : ak_tensor_none(), bdw.t,
                                      cc->bias ? bdb.t : ak_tensor_none(), bdy.t, bx.t, bw.t);
    ck_assert_msg(rc == AK_OK, "%s: %s", what, ak_error(b));
    double *xr = calloc(nx + 1, sizeof *xr), *wr = calloc(nw + 1, sizeof *wr);
    double *dxr = calloc(nx + 1, 8), *sx = calloc(nx + 1, 8), *dwr = calloc(nw + 1, 8),
           *sw = calloc(nw + 1, 8);
    double *dbr = calloc(no + 1, 8), *sb = calloc(no + 1, 8), *dyr = calloc(ny + 1, 8);
    for (size_t i = 0; i < nx; i++)
        xr[i] = input_as(c->compute, x.v[i]);
    for (size_t i = 0; i < nw; i++)
        wr[i] = input_as(c->compute, w.v[i]);
    for (size_t i = 0; i < ny; i++)
        dyr[i] = input_as(c->compute, dy.v[i]);
    ref_backward(c, xr, wr, dyr, dxr, sx, dwr, sw, dbr, sb);
    /* dbias sums dy as stored, not as the GEMM's fast type would round it */
    for (size_t i = 0; i < no; i++)
        dbr[i] = 0;
    for (size_t i = 0; i < ny; i++)
        dbr[i / (out_h(c) * out_w(c)) % no] += dy.v[i];
    const double u = unit_of(c->compute);
    const size_t np = c->batch * out_h(c) * out_w(c);
    const double tiny = c->compute == AK_COMPUTE_16F ? 0x1p-24 : 0x1p-149;
    size_t bad =
        compare("dw", &bdw, dwr, sw, gamma_n((double)np + 3, u), 2, (double)(np + 3) * tiny, NULL);
    if (cc->dx) /* dcol = W^T dY rounded to fp32 (fp16 for 16F), taps summed exactly enough */
        bad += compare("dx", &bdx, dxr, sx, gamma_n((double)c->out_ch + 3, u) + u, 1,
                       (double)(c->out_ch + 3) * (double)(c->k_h * c->k_w) * tiny, NULL);
    else
        ck_assert(kt_buf_guards_ok(&bdx));
    if (cc->bias)
        bad += compare("dbias", &bdb, dbr, sb, 0x1p-45, 1, 0, NULL);
    else
        ck_assert(kt_buf_guards_ok(&bdb));
    if (bad) printf("in %s\n", what);
    ck_assert(kt_buf_guards_ok(&bx) && kt_buf_guards_ok(&bw) && kt_buf_guards_ok(&bdy));
    kt_buf_free(&bx);
    kt_buf_free(&bw);
    kt_buf_free(&bdy);
    kt_buf_free(&bdx);
    kt_buf_free(&bdw);
    kt_buf_free(&bdb);
    h_free(&x);
    h_free(&w);
    h_free(&dy);
    free(xr);
    free(wr);
    free(dxr);
    free(sx);
    free(dwr);
    free(sw);
    free(dbr);
    free(sb);
    free(dyr);
    return bad;
}

/* The supported pairs: x/w/dy dtype, y/dw dtype, compute. */
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

static ccase case_of(const ak_conv2d *shape, pairing p, size_t variant)
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

START_TEST(forward_every_pairing_and_shape)
{
    ak_backend *b = kt_open_cpu();
    size_t ns, bad = 0;
    const ak_conv2d *s = shapes(&ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t v = 0; v < 2; v++) {
            const ccase cc = case_of(&s[i], pairings[_i], i + v);
            bad += forward_case(b, &cc, ts_seed() + i * 7 + v);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

START_TEST(backward_every_pairing_and_shape)
{
    ak_backend *b = kt_open_cpu();
    size_t ns, bad = 0;
    const ak_conv2d *s = shapes(&ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t v = 0; v < 2; v++) {
            const ccase cc = case_of(&s[i], pairings[_i], i * 2 + v);
            bad += backward_case(b, &cc, ts_seed() + i * 11 + v);
        }
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* A NaN and an infinity in x reach exactly the outputs whose windows cover them. */
START_TEST(nan_reaches_its_receptive_field)
{
    ak_backend *b = kt_open_cpu();
    size_t ns, bad = 0;
    const ak_conv2d *s = shapes(&ns);
    for (size_t i = 0; i < ns; i++)
        for (size_t p = 0; p < NPAIRINGS; p += 4) {
            ccase cc = case_of(&s[i], pairings[p], 0);
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
    ref_forward(c, x, w, bias, y, s);
    const size_t ny = c->batch * c->out_ch * out_h(c) * out_w(c);
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
    const size_t nx = c->batch * c->in_ch * c->in_h * c->in_w,
                 nw = c->out_ch * c->in_ch * c->k_h * c->k_w;
    const size_t ny = c->batch * c->out_ch * out_h(c) * out_w(c), no = c->out_ch;
    htensor x = h_make(AK_F32, nx), w = h_make(AK_F32, nw), bias = h_make(AK_F32, no),
            rr = h_make(AK_F32, ny);
    h_random(&x, &r);
    h_random(&w, &r);
    h_random(&bias, &r);
    h_random(&rr, &r);
    kt_buf bx = upload(b, &x), bw = upload(b, &w), bdy = upload(b, &rr);
    kt_buf bdx = nan_buf(b, nx, AK_F32), bdw = nan_buf(b, nw, AK_F32), bdb = nan_buf(b, no, AK_F32);
    ck_assert_int_eq(ak_conv2d_backward(b, c, bdx.t, bdw.t, bdb.t, bdy.t, bx.t, bw.t), AK_OK);
    uint32_t *gx = malloc(nx * 4), *gw = malloc(nw * 4), *gb = malloc(no * 4);
    download(&bdx, gx);
    download(&bdw, gw);
    download(&bdb, gb);
    double *y = malloc(ny * 8), *s = malloc(ny * 8);
    double *dx = malloc(nx * 8), *sx = malloc(nx * 8), *dw = malloc(nw * 8), *sw = malloc(nw * 8);
    double *db = malloc(no * 8), *sb = malloc(no * 8);
    ref_backward(c, x.v, w.v, rr.v, dx, sx, dw, sw, db, sb);
    size_t bad = 0;
    struct {
        const char *name;
        double *vals;
        size_t n;
        const uint32_t *got;
        const double *ref, *abs;
        size_t terms;
    } parts[3] = {{"dx", x.v, nx, gx, dx, sx, c->out_ch * c->k_h * c->k_w},
                  {"dw", w.v, nw, gw, dw, sw, c->batch * out_h(c) * out_w(c)},
                  {"dbias", bias.v, no, gb, db, sb, c->batch * out_h(c) * out_w(c)}};
    for (int p = 0; p < 3; p++)
        for (size_t t = 0; t < (sample ? sample : parts[p].n); t++) {
            const size_t i = sample ? ts_below(&r, (uint32_t)parts[p].n) : t;
            const double fd = central(c, x.v, w.v, bias.v, rr.v, &parts[p].vals[i], y, s);
            const double got = value_of(AK_F32, parts[p].got[i]);
            /* the reference is the gradient; fd reproduces it up to double rounding */
            const double fd_tol = 1e-9 * (1 + parts[p].abs[i]);
            const double tol =
                gamma_n((double)parts[p].terms + 4, 0x1p-24) * parts[p].abs[i] + fd_tol;
            if ((fabs(fd - parts[p].ref[i]) > fd_tol || fabs(got - fd) > tol) && bad++ < 4)
                printf("%s[%zu]: kernel %.9g, finite difference %.12g, direct %.12g\n",
                       parts[p].name, i, got, fd, parts[p].ref[i]);
        }
    kt_buf_free(&bx);
    kt_buf_free(&bw);
    kt_buf_free(&bdy);
    kt_buf_free(&bdx);
    kt_buf_free(&bdw);
    kt_buf_free(&bdb);
    h_free(&x);
    h_free(&w);
    h_free(&bias);
    h_free(&rr);
    free(gx);
    free(gw);
    free(gb);
    free(y);
    free(s);
    free(dx);
    free(sx);
    free(dw);
    free(sw);
    free(db);
    free(sb);
    return bad;
}

START_TEST(backward_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    size_t bad = 0;
    const ak_conv2d small[] = {geom(2, 2, 6, 5, 3, 3, 3, 2, 1), geom(2, 1, 7, 7, 2, 3, 2, 1, 0),
                               geom(1, 3, 5, 5, 2, 2, 2, 3, 2), geom(2, 2, 4, 4, 2, 1, 1, 1, 1)};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        bad += fd_case(b, &small[i], 0, ts_seed() + i);
    const ak_conv2d lenet[] = {geom(1, 1, 32, 32, 6, 5, 5, 1, 0),
                               geom(1, 6, 14, 14, 16, 5, 5, 1, 0)};
    for (size_t i = 0; i < 2; i++)
        bad += fd_case(b, &lenet[i], 12, ts_seed() + 100 + i);
    ck_assert_uint_eq(bad, 0);
    ak_close(b);
}
END_TEST

/* ---- sizes, empty work, bad arguments ----------------------------------------------------- */
START_TEST(output_sizes)
{
    ak_conv2d c = geom(1, 1, 32, 32, 6, 5, 5, 1, 0);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 28);
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 28);
    c = geom(1, 1, 7, 6, 1, 3, 3, 2, 1);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 4); /* (7 + 2 - 3) / 2 + 1 */
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 3); /* (6 + 2 - 3) / 2 + 1 */
    c = geom(1, 1, 3, 8, 1, 3, 3, 4, 1);
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 1);
    ck_assert_uint_eq(ak_conv2d_out_w(&c), 2);
    c.stride = 0;
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 0);
    c = geom(1, 1, 3, 3, 1, 6, 2, 1, 1); /* 6 > 3 + 2 */
    ck_assert_uint_eq(ak_conv2d_out_h(&c), 0);
    ck_assert_uint_eq(ak_conv2d_out_h(NULL), 0);
}
END_TEST

START_TEST(empty_batch_and_no_input_channels)
{
    ak_backend *b = kt_open_cpu();
    /* batch 0: forward does nothing; backward overwrites dw and dbias with zeros */
    ak_conv2d c = geom(0, 2, 5, 5, 3, 3, 3, 1, 0);
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
    c = geom(2, 0, 4, 4, 3, 3, 3, 1, 1);
    htensor bias = h_make(AK_F32, 3);
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
    h_free(&bias);
    kt_buf_free(&bw);
    kt_buf_free(&bdw);
    kt_buf_free(&bdb);
    kt_buf_free(&bb);
    kt_buf_free(&by);
    ak_close(b);
}
END_TEST

static void expect(ak_backend *b, int rc, int code, const char *call, const char *text)
{
    ck_assert_msg(rc == code, "expected %d, got %d (%s)", code, rc, ak_error(b));
    ck_assert_msg(strstr(ak_error(b), call) == ak_error(b) && strstr(ak_error(b), text),
                  "message '%s' lacks '%s'", ak_error(b), text);
}

START_TEST(bad_arguments)
{
    ak_backend *b = kt_open_cpu();
    const ak_conv2d ok = geom(2, 3, 6, 6, 4, 3, 3, 1, 0); /* y: 2 x 4 x 4 x 4 */
    static float fx[216], fw[108], fy[128], fb[4], fdx[216], fdw[108];
    static uint16_t hx[216], hw[108], hy[128];
    const ak_tensor x = ak_tensor_of(fx, 216, AK_F32), w = ak_tensor_of(fw, 108, AK_F32),
                    y = ak_tensor_of(fy, 128, AK_F32), bias = ak_tensor_of(fb, 4, AK_F32),
                    dx = ak_tensor_of(fdx, 216, AK_F32), dw = ak_tensor_of(fdw, 108, AK_F32);
    const char *fwd = "ak_conv2d_forward: ", *bwd = "ak_conv2d_backward: ";
    ck_assert_int_eq(ak_conv2d_forward(b, &ok, y, x, w, bias), AK_OK);
    ck_assert_int_eq(ak_conv2d_backward(b, &ok, dx, dw, bias, y, x, w), AK_OK);
    ck_assert_int_eq(ak_conv2d_forward(NULL, &ok, y, x, w, bias), AK_EINVAL);
    expect(b, ak_conv2d_forward(b, NULL, y, x, w, bias), AK_EINVAL, fwd, "c is NULL");
    ak_conv2d c = ok;
    c.stride = 0;
    expect(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd, "stride is 0");
    c = ok;
    c.k_w = 0;
    expect(b, ak_conv2d_backward(b, &c, dx, dw, bias, y, x, w), AK_EINVAL, bwd,
           "the kernel is 3 x 0");
    c = ok;
    c.k_h = 9;
    expect(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd,
           "the 9 x 3 kernel does not fit the 6 x 6 input padded by 0");
    c = ok;
    c.compute = (ak_compute)11;
    expect(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EINVAL, fwd, "invalid compute type (11)");
    expect(b, ak_conv2d_forward(b, &ok, ak_tensor_of(fy, 127, AK_F32), x, w, bias), AK_EINVAL, fwd,
           "y has 127 elements, expected 128");
    expect(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(fx, 215, AK_F32), w, bias), AK_EINVAL, fwd,
           "x has 215 elements, expected 216");
    expect(b, ak_conv2d_forward(b, &ok, y, x, ak_tensor_of(fw, 107, AK_F32), bias), AK_EINVAL, fwd,
           "w has 107 elements, expected 108");
    expect(b, ak_conv2d_forward(b, &ok, y, x, w, ak_tensor_of(fb, 3, AK_F32)), AK_EINVAL, fwd,
           "bias has 3 elements, expected 4");
    expect(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(NULL, 216, AK_F32), w, bias), AK_EINVAL,
           fwd, "x is NULL");
    /* dtypes */
    expect(b, ak_conv2d_forward(b, &ok, y, ak_tensor_of(hx, 216, AK_F16), w, bias), AK_EUNSUPPORTED,
           fwd, "compute type 32F needs w and x of one dtype, got fp32/fp16/fp32");
    expect(b, ak_conv2d_forward(b, &ok, ak_tensor_of(hy, 128, AK_F16), x, w, bias), AK_EUNSUPPORTED,
           fwd, "compute type 32F with fp32 w and x needs fp32 y, got fp32/fp32/fp16");
    c = ok;
    c.compute = AK_COMPUTE_16F;
    expect(b, ak_conv2d_forward(b, &c, y, x, w, bias), AK_EUNSUPPORTED, fwd,
           "compute type 16F needs fp16 w, x and y, got fp32/fp32/fp32");
    c.compute = AK_COMPUTE_32F_FAST_TF32;
    expect(b,
           ak_conv2d_forward(b, &c, ak_tensor_of(hy, 128, AK_BF16), ak_tensor_of(hx, 216, AK_BF16),
                             ak_tensor_of(hw, 108, AK_BF16), bias),
           AK_EUNSUPPORTED, fwd,
           "compute type 32F_FAST_TF32 needs fp32 w, x and y, got bf16/bf16/bf16");
    /* backward */
    expect(b, ak_conv2d_backward(b, &ok, ak_tensor_of(fdx, 215, AK_F32), dw, bias, y, x, w),
           AK_EINVAL, bwd, "dx has 215 elements, expected 216");
    expect(b, ak_conv2d_backward(b, &ok, dx, ak_tensor_none(), bias, y, x, w), AK_EINVAL, bwd,
           "dw has 0 elements, expected 108");
    expect(b, ak_conv2d_backward(b, &ok, dx, dw, ak_tensor_of(fb, 5, AK_F32), y, x, w), AK_EINVAL,
           bwd, "dbias has 5 elements, expected 4");
    expect(b, ak_conv2d_backward(b, &ok, dx, dw, bias, ak_tensor_of(fy, 100, AK_F32), x, w),
           AK_EINVAL, bwd, "dy has 100 elements, expected 128");
    expect(b, ak_conv2d_backward(b, &ok, dx, dw, bias, y, x, ak_tensor_of(hw, 108, AK_F16)),
           AK_EUNSUPPORTED, bwd, "w is fp16 but dy and x are fp32");
    expect(b, ak_conv2d_backward(b, &ok, dx, ak_tensor_of(hw, 108, AK_BF16), bias, y, x, w),
           AK_EUNSUPPORTED, bwd,
           "compute type 32F with fp32 dy and x needs fp32 dw, got fp32/fp32/bf16");
    expect(b, ak_conv2d_backward(b, &ok, dx, dw, bias, ak_tensor_of(hy, 128, AK_F16), x, w),
           AK_EUNSUPPORTED, bwd,
           "compute type 32F needs dy and x of one dtype, got fp16/fp32/fp32");
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
    tcase_add_loop_test(tc, forward_every_pairing_and_shape, 0, (int)NPAIRINGS);
    tcase_add_loop_test(tc, backward_every_pairing_and_shape, 0, (int)NPAIRINGS);
    tcase_add_test(tc, nan_reaches_its_receptive_field);
    tcase_add_test(tc, backward_matches_finite_differences);
    tcase_add_test(tc, output_sizes);
    tcase_add_test(tc, empty_batch_and_no_input_channels);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
