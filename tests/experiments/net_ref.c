/* net_ref.c: the tests' double-precision nets (net_ref.h). */
#include "net_ref.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- each kind's forward, one sample ----------------------------------------------------- */
static void ref_linear(const net_layer *l, const double *in, double *out, const double *const *w)
{
    for (size_t o = 0; o < l->out_c; o++) {
        double s = w[1][o];
        for (size_t k = 0; k < l->in_c; k++)
            s += w[0][o * l->in_c + k] * in[k];
        out[o] = s;
    }
}

static void ref_conv2d(const net_layer *l, const double *in, double *out, const double *const *w)
{
    const size_t k = l->kernel;
    for (size_t o = 0; o < l->out_c; o++)
        for (size_t oy = 0; oy < l->out_h; oy++)
            for (size_t ox = 0; ox < l->out_w; ox++) {
                double s = w[1][o];
                for (size_t c = 0; c < l->in_c; c++)
                    for (size_t ky = 0; ky < k; ky++)
                        for (size_t kx = 0; kx < k; kx++)
                            s += w[0][((o * l->in_c + c) * k + ky) * k + kx] *
                                 in[(c * l->in_h + oy + ky) * l->in_w + ox + kx];
                out[(o * l->out_h + oy) * l->out_w + ox] = s;
            }
}

static void ref_relu(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    for (size_t k = 0; k < net_out_features(l); k++)
        out[k] = in[k] > 0 ? in[k] : 0;
}

static void ref_maxpool2(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    for (size_t c = 0; c < l->in_c; c++)
        for (size_t oy = 0; oy < l->out_h; oy++)
            for (size_t ox = 0; ox < l->out_w; ox++) {
                double best = -INFINITY;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) {
                        double v = in[(c * l->in_h + 2 * oy + dy) * l->in_w + 2 * ox + dx];
                        if (v > best) best = v;
                    }
                out[(c * l->out_h + oy) * l->out_w + ox] = best;
            }
}

/* GELU from the definitions, with libm: x Phi(x), and 0.5 x (1 + tanh(u)). */
static void ref_gelu(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    for (size_t k = 0; k < net_out_features(l); k++)
        out[k] = 0.5 * in[k] * (1.0 + erf(in[k] / sqrt(2.0)));
}

static void ref_gelu_tanh(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    const double c = sqrt(2.0 / 3.14159265358979323846);
    for (size_t k = 0; k < net_out_features(l); k++)
        out[k] = 0.5 * in[k] * (1.0 + tanh(c * (in[k] + 0.044715 * in[k] * in[k] * in[k])));
}

static void ref_avgpool(const net_layer *l, const double *in, double *out, const double *const *w)
{
    (void)w;
    const size_t hw = l->in_h * l->in_w;
    for (size_t c = 0; c < l->in_c; c++) {
        double s = 0;
        for (size_t i = 0; i < hw; i++)
            s += in[c * hw + i];
        out[c] = s / (double)hw;
    }
}

/* ---- kinds that see the whole batch or two inputs ----------------------------------------- */
static void ref_add(const net_layer *l, size_t rows, const double *in, const double *in2,
                    double *out, const double *const *w)
{
    (void)w;
    for (size_t k = 0; k < rows * net_out_features(l); k++)
        out[k] = in[k] + in2[k];
}

static const struct {
    const char *kind;
    ref_layer_fn fn;    /* one sample */
    ref_batch_fn batch; /* or the whole batch at once */
} refs[] = {
    {"linear", ref_linear, NULL},   {"conv2d", ref_conv2d, NULL},
    {"relu", ref_relu, NULL},       {"maxpool2", ref_maxpool2, NULL},
    {"gelu", ref_gelu, NULL},       {"gelu_tanh", ref_gelu_tanh, NULL},
    {"avgpool", ref_avgpool, NULL}, {"add", NULL, ref_add},
};

static int ref_row(const layer_kind *k)
{
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (strcmp(refs[i].kind, k->name) == 0) return (int)i;
    return -1;
}

bool ref_has_layer(const layer_kind *k) { return ref_row(k) >= 0; }

/* ---- a net's loss ---------------------------------------------------------------------- */
typedef struct ref_params {
    double *p[MODEL_MAX_PARAMS];
} ref_params;

/* The loss of the batch (mean over rows), everything in double. */
static double ref_loss(const net_def *n, const model *m, const ref_params *rp, const float *x,
                       const int32_t *labels, const float *target, size_t rows)
{
    const size_t in_width = n->in_c * n->in_h * n->in_w;
    double *x64 = malloc(rows * in_width * sizeof *x64);
    for (size_t i = 0; i < rows * in_width; i++)
        x64[i] = x[i];
    double *acts[NET_MAX_LAYERS];
    for (int li = 0; li < n->n_layers; li++) {
        const net_layer *l = &n->layers[li];
        const size_t in_f = net_in_features(l), out_f = net_out_features(l);
        const double *in = l->in >= 0 ? acts[l->in] : x64;
        const double *in2 = l->in2 >= 0 ? acts[l->in2] : l->in2 == NET_INPUT ? x64 : NULL;
        double *y = calloc(rows * out_f, sizeof *y);
        const double *w[LAYER_MAX_TENSORS] = {0};
        for (int k = 0; k < m->n_params; k++)
            if (m->params[k].layer == li) w[m->params[k].slot] = rp->p[k];
        const int row = ref_row(l->kind);
        ck_assert_msg(row >= 0, "no reference for %s", l->kind->name);
        if (refs[row].batch)
            refs[row].batch(l, rows, in, in2, y, w);
        else
            for (size_t r = 0; r < rows; r++)
                refs[row].fn(l, in + r * in_f, y + r * out_f, w);
        acts[li] = y;
    }
    const double *a = acts[n->n_layers - 1];
    const size_t width = n->outputs;
    const size_t loss_rows = net_rows(n, rows);
    double total = 0;
    if (n->loss == NET_XENT) {
        for (size_t r = 0; r < loss_rows; r++) {
            const double *z = a + r * width;
            double mx = z[0];
            for (size_t k = 1; k < width; k++)
                mx = z[k] > mx ? z[k] : mx;
            double s = 0;
            for (size_t k = 0; k < width; k++)
                s += exp(z[k] - mx);
            total += log(s) + mx - z[labels[r]];
        }
        total /= (double)loss_rows;
    } else {
        for (size_t k = 0; k < rows * width; k++)
            total += (a[k] - target[k]) * (a[k] - target[k]);
        total /= (double)(rows * width);
    }
    for (int li = 0; li < n->n_layers; li++)
        free(acts[li]);
    free(x64);
    return total;
}

/* ---- the gradient check ------------------------------------------------------------------ */
void ref_check_gradients(const char *what, const net_def *n, size_t rows)
{
    char msg[256];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "%s", msg);
    ck_assert_uint_le(rows, 64);
    prec_options o;
    prec_options_default(&o, PREC_O0, AK_F16);
    prec_plan p;
    prec_plan_make(&o, n, &p);
    model *m = NULL;
    ck_assert_msg(model_create(b, n, &p, rows, &m, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(model_init_weights(m, 7), 0);
    /* inputs in [0, 1) like pixels, labels and targets from a fixed sequence */
    const size_t in_n = rows * n->in_c * n->in_h * n->in_w;
    float *x = malloc(in_n * sizeof *x);
    uint64_t s = 12345;
    for (size_t i = 0; i < in_n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xFFFF) / 65536.0f;
    }
    int32_t labels[64];
    float *target = malloc(rows * n->outputs * sizeof *target);
    for (size_t r = 0; r < rows; r++)
        labels[r] = (int32_t)((r * 7 + 3) % n->outputs);
    for (size_t i = 0; i < rows * n->outputs; i++)
        target[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    ck_assert_int_eq(ak_to_device(b, m->x.data, x, in_n * 4), 0);
    if (n->loss == NET_XENT)
        ck_assert_int_eq(ak_to_device(b, m->labels, labels, rows * 4), 0);
    else
        ck_assert_int_eq(ak_to_device(b, m->target.data, target, rows * n->outputs * 4), 0);
    ck_assert_msg(model_forward_backward(m, rows, NULL) == 0, "%s", ak_error(b));
    float loss;
    ck_assert_int_eq(ak_to_host(b, &loss, m->loss, 4), 0);

    ref_params rp;
    for (int i = 0; i < m->n_params; i++) {
        float *h = malloc(m->params[i].n * sizeof *h);
        ck_assert_int_eq(model_get_param(m, &m->params[i], h), 0);
        rp.p[i] = malloc(m->params[i].n * sizeof(double));
        for (size_t j = 0; j < m->params[i].n; j++)
            rp.p[i][j] = h[j];
        free(h);
    }
    const double ref = ref_loss(n, m, &rp, x, labels, target, rows);
    ck_assert_msg(fabs(loss - ref) <= 1e-5 * fabs(ref) + 1e-6, "%s loss %.9g, reference %.17g",
                  what, loss, ref);
    size_t checked = 0;
    for (int i = 0; i < m->n_params; i++) {
        const model_param *pp = &m->params[i];
        float *g = malloc(pp->n * sizeof *g);
        ck_assert_int_eq(ak_to_host(b, g, pp->grad.data, pp->n * 4), 0);
        double gmax = 0;
        for (size_t j = 0; j < pp->n; j++)
            gmax = fmax(gmax, fabs(g[j]));
        const size_t samples = pp->n < 12 ? pp->n : 12;
        for (size_t t = 0; t < samples; t++) {
            const size_t j = (t * 7919u + 13u) % pp->n;
            const double saved = rp.p[i][j], h = 1e-6 * fmax(1.0, fabs(saved));
            rp.p[i][j] = saved + h;
            const double up = ref_loss(n, m, &rp, x, labels, target, rows);
            rp.p[i][j] = saved - h;
            const double down = ref_loss(n, m, &rp, x, labels, target, rows);
            rp.p[i][j] = saved;
            const double fd = (up - down) / (2 * h);
            /* fp32 backprop against a double derivative: a few fp32 ulps of the
             * tensor's largest gradient, plus the difference quotient's error */
            const double tol = 1e-4 * gmax + 1e-4 * fabs(fd) + 1e-8;
            ck_assert_msg(fabs(g[j] - fd) <= tol,
                          "%s %s[%zu]: backprop %.9g, finite difference %.9g", what, pp->name, j,
                          g[j], fd);
            checked++;
        }
        free(g);
    }
    ck_assert_uint_gt(checked, 0);
    for (int i = 0; i < m->n_params; i++)
        free(rp.p[i]);
    free(x);
    free(target);
    model_free(m);
    ak_close(b);
}
