/* ref_softmax.c: references for test_softmax*.c (see ref_softmax.h). */
#include "ref_softmax.h"

#include <math.h>
#include <stdlib.h>

size_t ref_softmax_valid(size_t cols, size_t t, size_t r) { return t ? r % t + 1 : cols; }

void ref_softmax_row(const double *x, size_t n, size_t valid, double scale, bool use_log, double *y)
{
    double m = -INFINITY, s = 0.0;
    for (size_t j = 0; j < valid; j++)
        m = fmax(m, x[j] * scale);
    for (size_t j = 0; j < valid; j++)
        s += exp(x[j] * scale - m);
    for (size_t j = 0; j < n; j++) {
        if (j >= valid)
            y[j] = use_log ? -INFINITY : 0.0;
        else
            y[j] = use_log ? x[j] * scale - m - log(s) : exp(x[j] * scale - m) / s;
    }
}

void ref_softmax_backward_row(const double *dy, const double *y, size_t n, size_t valid,
                              double scale, bool use_log, double *dx)
{
    double t = 0.0;
    for (size_t j = 0; j < valid; j++)
        t += use_log ? dy[j] : dy[j] * y[j];
    for (size_t j = 0; j < n; j++) {
        if (j >= valid)
            dx[j] = 0.0;
        else
            dx[j] = use_log ? scale * (dy[j] - exp(y[j]) * t) : scale * y[j] * (dy[j] - t);
    }
}

/* v rounded to acc, as a double (a NaN stays a NaN). */
static double rnd(ak_dtype acc, double v) { return kt_value(acc, kt_from_f64(acc, v)); }

/* a + b rounded once to acc.  The double sum s may be inexact (an fp32 dy
 * plus a bf16 sum): TwoSum gives the exact error e, the exact sum lies
 * strictly between s and its neighbour d toward e, and rounds as s does
 * unless s is a midpoint of acc, where it rounds as d. */
static double rnd_sum(ak_dtype acc, double a, double b)
{
    const double s = a + b;
    if (!isfinite(s)) return rnd(acc, s);
    const double bv = s - a, e = (a - (s - bv)) + (b - bv);
    if (e == 0.0) return rnd(acc, s);
    const double u = kt_ulp(acc, s);
    const bool midpoint = fmod(fabs(s), u) == 0.5 * u;
    return midpoint ? rnd(acc, nextafter(s, e > 0 ? INFINITY : -INFINITY)) : rnd(acc, s);
}

void ref_softmax_rule(const ak_softmax_args *a, ak_dtype dy, ak_dtype dx, const uint32_t *x,
                      uint32_t *y)
{
    const ak_dtype acc = a->acc;
    double *d = malloc((a->cols + 1) * sizeof *d);
    for (size_t r = 0; r < a->rows; r++) {
        const uint32_t *xr = x + r * a->cols;
        uint32_t *yr = y + r * a->cols;
        const size_t valid = ref_softmax_valid(a->cols, a->causal_t, r);
        bool nan = false;
        double m = -INFINITY, s = 0.0;
        for (size_t j = 0; j < valid; j++) {
            d[j] = rnd(acc, kt_value(dx, xr[j]) * (double)a->scale);
            nan |= isnan(d[j]);
            if (d[j] > m) m = d[j];
        }
        if (nan) m = NAN;
        for (size_t j = 0; j < valid; j++) {
            d[j] = rnd_sum(acc, d[j], -m);
            s = rnd_sum(acc, s, rnd(acc, exp(d[j])));
        }
        const double l = rnd(acc, log(s));
        for (size_t j = 0; j < a->cols; j++) {
            double v;
            if (j >= valid)
                v = a->log ? -INFINITY : 0.0;
            else
                v = a->log ? rnd_sum(acc, d[j], -l) : rnd(acc, rnd(acc, exp(d[j])) / s);
            yr[j] = kt_from_f64(dy, v);
        }
    }
    free(d);
}

void ref_softmax_backward_rule(const ak_softmax_args *a, ak_dtype ddx, ak_dtype ddy, ak_dtype dyt,
                               const uint32_t *dy, const uint32_t *y, uint32_t *dx)
{
    const ak_dtype acc = a->acc;
    const double scale = (double)a->scale;
    for (size_t r = 0; r < a->rows; r++) {
        const size_t valid = ref_softmax_valid(a->cols, a->causal_t, r), at = r * a->cols;
        double t = 0.0;
        for (size_t j = 0; j < valid; j++) {
            const double g = kt_value(ddy, dy[at + j]), yv = kt_value(dyt, y[at + j]);
            t = rnd_sum(acc, t, a->log ? g : rnd(acc, g * yv));
        }
        for (size_t j = 0; j < a->cols; j++) {
            double v = 0.0;
            if (j < valid) {
                const double g = kt_value(ddy, dy[at + j]), yv = kt_value(dyt, y[at + j]);
                v = a->log ? rnd_sum(acc, g, -rnd(acc, rnd(acc, exp(yv)) * t))
                           : rnd(acc, yv * rnd_sum(acc, g, -t));
                v = rnd(acc, v * scale);
            }
            dx[at + j] = kt_from_f64(ddx, v);
        }
    }
}

void ref_softmax_run(ak_backend *b, const ak_softmax_args *a, ak_dtype dy, ak_dtype dx,
                     const uint32_t *x, uint32_t *y)
{
    const size_t n = a->rows * a->cols;
    kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, n, dy);
    kt_buf_put(&tx, x);
    const int rc = ak_softmax_forward(b, a, ty.t, tx.t);
    ck_assert_msg(rc == AK_OK, "ak_softmax_forward: %s", ak_error(b));
    kt_buf_get(&ty, y);
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty));
    kt_buf_free(&tx);
    kt_buf_free(&ty);
}

void ref_softmax_backward_run(ak_backend *b, const ak_softmax_args *a, ak_dtype ddx, ak_dtype ddy,
                              ak_dtype dyt, const uint32_t *dy, const uint32_t *y, uint32_t *dx)
{
    const size_t n = a->rows * a->cols;
    kt_buf tdy = kt_buf_alloc(b, n, ddy), ty = kt_buf_alloc(b, n, dyt),
           tdx = kt_buf_alloc(b, n, ddx);
    kt_buf_put(&tdy, dy);
    kt_buf_put(&ty, y);
    const int rc = ak_softmax_backward(b, a, tdx.t, tdy.t, ty.t);
    ck_assert_msg(rc == AK_OK, "ak_softmax_backward: %s", ak_error(b));
    kt_buf_get(&tdx, dx);
    ck_assert(kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tdx));
    kt_buf_free(&tdy);
    kt_buf_free(&ty);
    kt_buf_free(&tdx);
}
