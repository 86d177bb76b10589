/* kt_fd.c: finite-difference checks of backward passes (see kt_fd.h). */
#include "kt_fd.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* L = sum r .* y for the fp32 output y of forward(x); returns L in double. */
static double objective(ak_backend *b, kt_fd_forward f, const void *ctx, kt_buf *y, kt_buf *x,
                        const float *xv, const float *rv)
{
    kt_buf_upload(x, xv);
    f(b, y, x, ctx);
    float *yv = malloc(y->t.n * sizeof *yv + 4);
    kt_buf_download(y, yv);
    double l = 0.0;
    for (size_t i = 0; i < y->t.n; i++)
        l += (double)rv[i] * yv[i];
    free(yv);
    return l;
}

void kt_fd_check(ak_backend *b, kt_fd_forward f, const void *ctx, size_t n_x, size_t n_y,
                 const float *x0, const float *rv, const float *grad, double h)
{
    kt_buf x = kt_buf_alloc(b, n_x, AK_F32), y = kt_buf_alloc(b, n_y, AK_F32);
    float *xv = malloc(n_x * sizeof *xv);
    for (size_t i = 0; i < n_x; i++) {
        memcpy(xv, x0, n_x * sizeof *xv);
        xv[i] = (float)(x0[i] + h);
        const double lp = objective(b, f, ctx, &y, &x, xv, rv);
        xv[i] = (float)(x0[i] - h);
        const double lm = objective(b, f, ctx, &y, &x, xv, rv);
        const double fd = (lp - lm) / (2.0 * h);
        ck_assert_msg(fabs(fd - grad[i]) <= 1e-12 * (1.0 + fabs(fd)),
                      "d/dx[%zu]: analytic %.17g, fd %.17g", i, (double)grad[i], fd);
    }
    free(xv);
    kt_buf_free(&x);
    kt_buf_free(&y);
}

float kt_fd_grid_value(ts_rng *r)
{
    const int k = 64 + (int)ts_below(r, 4096 - 64);
    return (float)ldexp(ts_below(r, 2) ? -k : k, -12);
}

void kt_fd_points(ts_rng *r, uint64_t seed, float *x, float *rv, size_t n)
{
    ts_rng_init(r, seed);
    for (size_t i = 0; i < n; i++) {
        x[i] = kt_fd_grid_value(r);
        rv[i] = (float)ldexp((double)ts_below(r, 2049) - 1024.0, -10);
    }
}
