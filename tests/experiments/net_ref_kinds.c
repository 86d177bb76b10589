/* net_ref_kinds.c: the double references of the layer kinds that need the
 * whole batch, a sequence or the run's random bits (net_ref_kinds.h),
 * written from PyTorch's definitions: nn.BatchNorm2d in training (biased
 * batch variance, eps 1e-5), nn.LayerNorm (eps 1e-5), softmax and
 * log-softmax over the last dimension, GPT-2's causal self-attention core,
 * embeddings, and dropout with the mask rule kernels.h states. */
#include "net_ref_kinds.h"

#include <math.h>
#include <stdlib.h>

#include "fpe.h"
#include "kernels.h"

#define EPS 1e-5

/* The rows a last-dimension op sees in one sample, and their length. */
static size_t seq_rows(const net_layer *l) { return l->tokens ? l->tokens : 1; }
static size_t seq_cols(const net_layer *l)
{
    return l->tokens ? l->in_c : l->in_c * l->in_h * l->in_w;
}

void ref_batchnorm2d(const net_layer *l, size_t rows, const double *in, const double *in2,
                     double *out, const double *const *w)
{
    (void)in2;
    const size_t c = l->in_c, hw = l->in_h * l->in_w;
    for (size_t ch = 0; ch < c; ch++) {
        double s = 0, q = 0;
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < hw; i++)
                s += in[(r * c + ch) * hw + i];
        const double m = (double)(rows * hw), mean = s / m;
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < hw; i++) {
                const double d = in[(r * c + ch) * hw + i] - mean;
                q += d * d;
            }
        const double inv = 1.0 / sqrt(q / m + EPS);
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < hw; i++) {
                const size_t k = (r * c + ch) * hw + i;
                out[k] = (in[k] - mean) * inv * w[0][ch] + w[1][ch];
            }
    }
}

void ref_layernorm(const net_layer *l, const double *in, double *out, const double *const *w)
{
    const size_t n = seq_cols(l);
    for (size_t r = 0; r < seq_rows(l); r++) {
        const double *x = in + r * n;
        double s = 0, q = 0;
        for (size_t k = 0; k < n; k++)
            s += x[k];
        const double mean = s / (double)n;
        for (size_t k = 0; k < n; k++)
            q += (x[k] - mean) * (x[k] - mean);
        const double inv = 1.0 / sqrt(q / (double)n + EPS);
        for (size_t k = 0; k < n; k++)
            out[r * n + k] = (x[k] - mean) * inv * w[0][k] + w[1][k];
    }
}

static void softmax_rows(const net_layer *l, const double *in, double *out, bool log_form)
{
    const size_t n = seq_cols(l);
    for (size_t r = 0; r < seq_rows(l); r++) {
        const double *x = in + r * n;
        double mx = x[0], s = 0;
        for (size_t k = 1; k < n; k++)
            mx = fmax(mx, x[k]);
        for (size_t k = 0; k < n; k++)
            s += exp(x[k] - mx);
        for (size_t k = 0; k < n; k++)
            out[r * n + k] = log_form ? x[k] - mx - log(s) : exp(x[k] - mx) / s;
    }
}

void ref_softmax(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    softmax_rows(l, in, out, false);
}

void ref_log_softmax(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    softmax_rows(l, in, out, true);
}

void ref_attention(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    const size_t t = l->tokens, c = l->in_c / 3, h = l->heads, d = c / h;
    double *p = malloc(t * sizeof *p);
    for (size_t head = 0; head < h; head++)
        for (size_t i = 0; i < t; i++) {
            const double *q = in + i * 3 * c + head * d;
            double mx = -INFINITY, s = 0;
            for (size_t j = 0; j <= i; j++) { /* causal: keys up to the query */
                const double *k = in + j * 3 * c + c + head * d;
                double dot = 0;
                for (size_t e = 0; e < d; e++)
                    dot += q[e] * k[e];
                p[j] = dot / sqrt((double)d);
                mx = fmax(mx, p[j]);
            }
            for (size_t j = 0; j <= i; j++)
                s += exp(p[j] - mx);
            for (size_t e = 0; e < d; e++) {
                double o = 0;
                for (size_t j = 0; j <= i; j++)
                    o += exp(p[j] - mx) / s * in[j * 3 * c + 2 * c + head * d + e];
                out[i * c + head * d + e] = o;
            }
        }
    free(p);
}

void ref_posembed(const net_layer *l, const double *in, double *out, const double *const *w)
{
    for (size_t k = 0; k < l->tokens * l->in_c; k++)
        out[k] = in[k] + w[0][k];
}

void ref_embedding(const net_layer *l, const double *in, double *out, const double *const *w)
{
    for (size_t i = 0; i < l->tokens; i++)
        for (size_t e = 0; e < l->out_c; e++)
            out[i * l->out_c + e] = w[0][(size_t)in[i] * l->out_c + e];
}

void ref_dropout_at(const net_layer *l, int index, size_t rows, const double *in, double *out)
{
    /* the model's key for layer index at step 0 of seed 0 (model.c), the
     * mask rule of ak_dropout_forward (kernels.h) */
    const uint64_t key = 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1);
    const double keep = 1.0 / (1.0 - l->p);
    for (size_t k = 0; k < rows * net_in_features(l); k++) {
        const double u = (double)fpe_random_bits(key, AK_DROPOUT_STREAM, k) / 4294967296.0;
        out[k] = u >= l->p ? in[k] * keep : 0.0;
    }
}
