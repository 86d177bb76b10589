/* ref_conv.c: the convolution references of test_conv and gpu_cases_conv (see ref_conv.h). */
#include "ref_conv.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

ak_conv2d ref_conv_geom(size_t batch, size_t in_ch, size_t in_h, size_t in_w, size_t out_ch,
                        size_t k_h, size_t k_w, size_t stride, size_t pad)
{
    ak_conv2d c = {batch, in_ch, in_h, in_w, out_ch, k_h, k_w, stride, pad, AK_COMPUTE_32F};
    return c;
}

size_t ref_conv_out_h(const ak_conv2d *c)
{
    return (c->in_h + 2 * c->pad - c->k_h) / c->stride + 1;
}
size_t ref_conv_out_w(const ak_conv2d *c)
{
    return (c->in_w + 2 * c->pad - c->k_w) / c->stride + 1;
}
size_t ref_conv_nx(const ak_conv2d *c) { return c->batch * c->in_ch * c->in_h * c->in_w; }
size_t ref_conv_nw(const ak_conv2d *c) { return c->out_ch * c->in_ch * c->k_h * c->k_w; }
size_t ref_conv_ny(const ak_conv2d *c)
{
    return c->batch * c->out_ch * ref_conv_out_h(c) * ref_conv_out_w(c);
}

/* Runs body for every product of the convolution with xi, wi and yi the
 * indices of its x, w and y elements. */
#define FOR_EACH_TAP(c, xi, wi, yi, body)                                                          \
    for (size_t n_ = 0; n_ < (c)->batch; n_++)                                                     \
        for (size_t o_ = 0; o_ < (c)->out_ch; o_++)                                                \
            for (size_t oy_ = 0; oy_ < oh; oy_++)                                                  \
                for (size_t ox_ = 0; ox_ < ow; ox_++)                                              \
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
                                const size_t yi = ((n_ * (c)->out_ch + o_) * oh + oy_) * ow + ox_; \
                                body                                                               \
                            }

void ref_conv_forward(const ak_conv2d *c, const double *x, const double *w, const double *bias,
                      double *y, double *s)
{
    const size_t oh = ref_conv_out_h(c), ow = ref_conv_out_w(c), p = oh * ow;
    const size_t ny = c->batch * c->out_ch * p;
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

ref_conv_grads ref_conv_backward(const ak_conv2d *c, const double *x, const double *w,
                                 const double *dy)
{
    const size_t nx = ref_conv_nx(c), nw = ref_conv_nw(c), no = c->out_ch;
    const size_t oh = ref_conv_out_h(c), ow = ref_conv_out_w(c), p = oh * ow;
    const size_t ny = c->batch * no * p;
    ref_conv_grads g = {calloc(nx + 1, sizeof(double)), calloc(nx + 1, sizeof(double)),
                        calloc(nw + 1, sizeof(double)), calloc(nw + 1, sizeof(double)),
                        calloc(no + 1, sizeof(double)), calloc(no + 1, sizeof(double))};
    ck_assert(g.dx && g.sx && g.dw && g.sw && g.db && g.sb);
    FOR_EACH_TAP(c, xi, wi, yi, {
        g.dx[xi] += w[wi] * dy[yi];
        g.sx[xi] += fabs(w[wi] * dy[yi]);
        g.dw[wi] += x[xi] * dy[yi];
        g.sw[wi] += fabs(x[xi] * dy[yi]);
    })
    for (size_t i = 0; i < ny; i++) {
        g.db[i / p % no] += dy[i];
        g.sb[i / p % no] += fabs(dy[i]);
    }
    return g;
}

void ref_conv_grads_free(ref_conv_grads *g)
{
    free(g->dx);
    free(g->sx);
    free(g->dw);
    free(g->sw);
    free(g->db);
    free(g->sb);
}

ref_tensor ref_tensor_make(ak_dtype dt, size_t n)
{
    ref_tensor t = {dt, n, calloc(n + 1, sizeof(uint32_t)), calloc(n + 1, sizeof(double))};
    ck_assert(t.bits && t.v);
    return t;
}

void ref_tensor_random(ref_tensor *t, ts_rng *r)
{
    for (size_t i = 0; i < t->n; i++)
        t->bits[i] = kt_from_f64(t->dt, 2 * ts_uniform(r) - 1);
    ref_tensor_update_values(t);
}

void ref_tensor_fill(ref_tensor *t, uint32_t bits)
{
    for (size_t i = 0; i < t->n; i++)
        t->bits[i] = bits;
    ref_tensor_update_values(t);
}

void ref_tensor_update_values(ref_tensor *t)
{
    for (size_t i = 0; i < t->n; i++)
        t->v[i] = kt_value(t->dt, t->bits[i]);
}

void ref_tensor_free(ref_tensor *t)
{
    free(t->bits);
    free(t->v);
    t->bits = NULL;
    t->v = NULL;
}
