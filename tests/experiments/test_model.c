/* test_model: the reference networks (nets.c), the precision plan, and the
 * model's forward and backward passes (model.c) on the cpu backend.
 *
 * The fp32 gradients of every network are checked against central finite
 * differences of a double-precision forward pass written here, from the
 * PyTorch definitions, independently of kernels/. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "model.h"
#include "nets.h"

static ak_backend *open_cpu(void)
{
    char msg[256];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "%s", msg);
    return b;
}

/* ---- nets -------------------------------------------------------------------------- */
static size_t param_total(const net_def *n)
{
    size_t total = 0;
    for (int i = 0; i < n->n_layers; i++)
        total += net_weight_count(&n->layers[i]) + net_bias_count(&n->layers[i]);
    return total;
}

START_TEST(nets_shapes)
{
    net_def n;
    char msg[256];
    ck_assert_int_eq(net_build("lenet5", NULL, &n, msg, sizeof msg), 0);
    /* LeNet-5 as the MindSpore tutorial builds it: 156 + 2416 + 48120 + 10164 + 850 */
    ck_assert_uint_eq(param_total(&n), 61706);
    ck_assert_int_eq(n.n_layers, 11);
    ck_assert_str_eq(n.layers[6].name, "fc1");
    ck_assert_uint_eq(n.layers[6].in_c, 400); /* 16 x 5 x 5 flattened */
    ck_assert_uint_eq(n.outputs, 10);
    ck_assert_int_eq(n.loss, NET_XENT);
    ck_assert_int_eq(net_build("mlp", NULL, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(param_total(&n), 200960 + 65792 + 2570);
    ck_assert_int_eq(net_build("simplenet", NULL, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(param_total(&n), 3 * (4096u * 4096u + 4096u)); /* about 50M */
    ck_assert_int_eq(n.loss, NET_MSE);
    ck_assert_int_eq(net_find_layer(&n, "fc3"), 4);
    net_size small = {64, 5};
    ck_assert_int_eq(net_build("simplenet", &small, &n, msg, sizeof msg), 0);
    ck_assert_int_eq(n.n_layers, 9);
    ck_assert_int_eq(net_build("resnet", NULL, &n, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "unknown net 'resnet' (expected simplenet, lenet5, mlp)");
    ck_assert_int_eq(net_build("lenet5", &small, &n, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "simplenet only") != NULL, "%s", msg);
    small.depth = 0;
    small.width = 1u << 20;
    ck_assert_int_eq(net_build("simplenet", &small, &n, msg, sizeof msg), -1);
}
END_TEST

START_TEST(precision_plans)
{
    net_def n;
    char msg[256];
    ck_assert_int_eq(net_build("lenet5", NULL, &n, msg, sizeof msg), 0);
    prec_options o;
    prec_plan p;
    /* O0: everything fp32, fp32 weights only */
    prec_options_default(&o, PREC_O0, AK_F16);
    prec_plan_make(&o, &n, &p);
    for (int i = 0; i < n.n_layers; i++)
        ck_assert_int_eq(p.run[i], AK_F32);
    ck_assert(p.has_w32[0] && !p.has_wlow[0]);
    /* O1: conv and linear cast to fp16; relu and pool follow their input */
    prec_options_default(&o, PREC_O1, AK_F16);
    prec_plan_make(&o, &n, &p);
    for (int i = 0; i < n.n_layers; i++)
        ck_assert_int_eq(p.run[i], AK_F16);
    ck_assert(p.has_w32[0] && !p.has_wlow[0]);
    /* O1 with relu black-listed: relu1 fp32, pool1 follows it, conv2 fp16 again */
    ck_assert_int_eq(prec_edit_list(&o, "relu", false, msg, sizeof msg), 0);
    prec_plan_make(&o, &n, &p);
    ck_assert_int_eq(p.run[1], AK_F32);
    ck_assert_int_eq(p.run[2], AK_F32);
    ck_assert_int_eq(p.run[3], AK_F16);
    ck_assert_int_eq(prec_edit_list(&o, "relu,softmax", true, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "unknown op 'softmax'") != NULL, "%s", msg);
    /* O2: low everywhere, master + model copy */
    prec_options_default(&o, PREC_O2, AK_BF16);
    prec_plan_make(&o, &n, &p);
    ck_assert_int_eq(p.run[10], AK_BF16);
    ck_assert(p.has_w32[10] && p.has_wlow[10]);
    /* O3 with fc3 pinned: fc3 fp32 weights only, the others low only */
    prec_options_default(&o, PREC_O3, AK_F16);
    ck_assert_int_eq(prec_pin_layers(&o, &n, "fc3=fp32", msg, sizeof msg), 0);
    prec_plan_make(&o, &n, &p);
    ck_assert_int_eq(p.run[10], AK_F32);
    ck_assert(p.has_w32[10] && !p.has_wlow[10]);
    ck_assert(!p.has_w32[0] && p.has_wlow[0]);
    ck_assert_int_eq(prec_pin_layers(&o, &n, "fc9=fp32", msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "no layer 'fc9'") != NULL, "%s", msg);
    ck_assert_int_eq(prec_pin_layers(&o, &n, "fc1=fp16", msg, sizeof msg), -1);
    ck_assert_int_eq(prec_pin_layers(&o, &n, "fc1", msg, sizeof msg), -1);
    ck_assert_int_eq(prec_mode_from_name("O2"), PREC_O2);
    ck_assert_int_eq(prec_mode_from_name("O4"), -1);
}
END_TEST

/* ---- a double-precision reference forward ----------------------------------------------- */
typedef struct ref_params {
    double *p[MODEL_MAX_PARAMS];
} ref_params;

/* The loss of the batch (mean over rows), everything in double. */
static double ref_loss(const net_def *n, const model *m, const ref_params *rp, const float *x,
                       const int32_t *labels, const float *target, size_t rows)
{
    size_t width = n->in_c * n->in_h * n->in_w;
    double *a = malloc(rows * width * sizeof *a);
    for (size_t i = 0; i < rows * width; i++)
        a[i] = x[i];
    int param = 0;
    for (int li = 0; li < n->n_layers; li++) {
        const net_layer *l = &n->layers[li];
        const size_t in_f = net_in_features(l), out_f = net_out_features(l);
        double *y = calloc(rows * out_f, sizeof *y);
        const double *w = NULL, *bias = NULL;
        if (net_has_params(l)) {
            /* params are in order weight, bias per layer */
            ck_assert_int_eq(m->params[param].layer, li);
            w = rp->p[param];
            bias = rp->p[param + 1];
            param += 2;
        }
        for (size_t r = 0; r < rows; r++) {
            const double *in = a + r * in_f;
            double *out = y + r * out_f;
            switch (l->op) {
            case NET_LINEAR:
                for (size_t o = 0; o < l->out_c; o++) {
                    double s = bias[o];
                    for (size_t k = 0; k < l->in_c; k++)
                        s += w[o * l->in_c + k] * in[k];
                    out[o] = s;
                }
                break;
            case NET_CONV:
                for (size_t o = 0; o < l->out_c; o++)
                    for (size_t oy = 0; oy < l->out_h; oy++)
                        for (size_t ox = 0; ox < l->out_w; ox++) {
                            double s = bias[o];
                            for (size_t c = 0; c < l->in_c; c++)
                                for (size_t ky = 0; ky < l->kernel; ky++)
                                    for (size_t kx = 0; kx < l->kernel; kx++)
                                        s += w[((o * l->in_c + c) * l->kernel + ky) * l->kernel +
                                               kx] *
                                             in[(c * l->in_h + oy + ky) * l->in_w + ox + kx];
                            out[(o * l->out_h + oy) * l->out_w + ox] = s;
                        }
                break;
            case NET_RELU:
                for (size_t k = 0; k < out_f; k++)
                    out[k] = in[k] > 0 ? in[k] : 0;
                break;
            case NET_MAXPOOL:
                for (size_t c = 0; c < l->in_c; c++)
                    for (size_t oy = 0; oy < l->out_h; oy++)
                        for (size_t ox = 0; ox < l->out_w; ox++) {
                            double best = -INFINITY;
                            for (int dy = 0; dy < 2; dy++)
                                for (int dx = 0; dx < 2; dx++) {
                                    double v =
                                        in[(c * l->in_h + 2 * oy + dy) * l->in_w + 2 * ox + dx];
                                    if (v > best) best = v;
                                }
                            out[(c * l->out_h + oy) * l->out_w + ox] = best;
                        }
                break;
            }
        }
        free(a);
        a = y;
        width = out_f;
    }
    double total = 0;
    if (n->loss == NET_XENT) {
        for (size_t r = 0; r < rows; r++) {
            const double *z = a + r * width;
            double mx = z[0];
            for (size_t k = 1; k < width; k++)
                mx = z[k] > mx ? z[k] : mx;
            double s = 0;
            for (size_t k = 0; k < width; k++)
                s += exp(z[k] - mx);
            total += log(s) + mx - z[labels[r]];
        }
        total /= (double)rows;
    } else {
        for (size_t k = 0; k < rows * width; k++)
            total += (a[k] - target[k]) * (a[k] - target[k]);
        total /= (double)(rows * width);
    }
    free(a);
    return total;
}

/* Checks model gradients (O0) against central differences of ref_loss for
 * a sample of every parameter tensor. */
static void check_gradients(const char *name, const net_size *size, size_t rows)
{
    ak_backend *b = open_cpu();
    net_def n;
    char msg[256];
    ck_assert_int_eq(net_build(name, size, &n, msg, sizeof msg), 0);
    prec_options o;
    prec_options_default(&o, PREC_O0, AK_F16);
    prec_plan p;
    prec_plan_make(&o, &n, &p);
    model *m = NULL;
    ck_assert_msg(model_create(b, &n, &p, rows, &m, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(model_init_weights(m, 7), 0);
    /* inputs in [0, 1) like pixels, labels and targets from a fixed sequence */
    const size_t in_n = rows * n.in_c * n.in_h * n.in_w;
    float *x = malloc(in_n * sizeof *x);
    uint64_t s = 12345;
    for (size_t i = 0; i < in_n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xFFFF) / 65536.0f;
    }
    int32_t labels[64];
    float *target = malloc(rows * n.outputs * sizeof *target);
    for (size_t r = 0; r < rows; r++)
        labels[r] = (int32_t)((r * 7 + 3) % n.outputs);
    for (size_t i = 0; i < rows * n.outputs; i++)
        target[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    ck_assert_int_eq(ak_to_device(b, m->x.data, x, in_n * 4), 0);
    if (n.loss == NET_XENT)
        ck_assert_int_eq(ak_to_device(b, m->labels, labels, rows * 4), 0);
    else
        ck_assert_int_eq(ak_to_device(b, m->target.data, target, rows * n.outputs * 4), 0);
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
    const double ref = ref_loss(&n, m, &rp, x, labels, target, rows);
    ck_assert_msg(fabs(loss - ref) <= 1e-5 * fabs(ref) + 1e-6, "%s loss %.9g, reference %.17g",
                  name, loss, ref);
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
            const double up = ref_loss(&n, m, &rp, x, labels, target, rows);
            rp.p[i][j] = saved - h;
            const double down = ref_loss(&n, m, &rp, x, labels, target, rows);
            rp.p[i][j] = saved;
            const double fd = (up - down) / (2 * h);
            /* fp32 backprop against a double derivative: a few fp32 ulps of the
             * tensor's largest gradient, plus the difference quotient's error */
            const double tol = 1e-4 * gmax + 1e-4 * fabs(fd) + 1e-8;
            ck_assert_msg(fabs(g[j] - fd) <= tol,
                          "%s %s[%zu]: backprop %.9g, finite difference %.9g", name, pp->name, j,
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

START_TEST(gradients_mlp) { check_gradients("mlp", NULL, 3); }
END_TEST
START_TEST(gradients_lenet5) { check_gradients("lenet5", NULL, 2); }
END_TEST
START_TEST(gradients_simplenet)
{
    const net_size small = {24, 3};
    check_gradients("simplenet", &small, 4);
}
END_TEST

/* Every mode runs, and its gradients are near O0's (a sanity bound: the
 * low formats' rounding, not a bit-level check). */
START_TEST(modes_run)
{
    ak_backend *b = open_cpu();
    net_def n;
    char msg[256];
    ck_assert_int_eq(net_build("lenet5", NULL, &n, msg, sizeof msg), 0);
    const size_t rows = 4;
    float *x = malloc(rows * 1024 * sizeof *x);
    for (size_t i = 0; i < rows * 1024; i++)
        x[i] = (float)((i * 131) % 256) / 255.0f;
    const int32_t labels[4] = {1, 5, 9, 0};
    float *ref = NULL;
    size_t ref_n = 0;
    for (int mode = 0; mode < 4; mode++)
        for (int low = 0; low < 2; low++) {
            prec_options o;
            prec_options_default(&o, (prec_mode)mode, low ? AK_BF16 : AK_F16);
            prec_plan p;
            prec_plan_make(&o, &n, &p);
            model *m = NULL;
            ck_assert_msg(model_create(b, &n, &p, rows, &m, msg, sizeof msg) == 0, "%s", msg);
            ck_assert_int_eq(model_init_weights(m, 3), 0);
            ck_assert_int_eq(ak_to_device(b, m->x.data, x, rows * 1024 * 4), 0);
            ck_assert_int_eq(ak_to_device(b, m->labels, labels, sizeof labels), 0);
            ck_assert_msg(model_forward_backward(m, rows, NULL) == 0, "O%d: %s", mode, ak_error(b));
            /* fc1.weight's gradient, as fp32 */
            const model_param *pw = &m->params[4];
            ck_assert_str_eq(pw->name, "fc1.weight");
            float *g = malloc(pw->n * sizeof *g);
            ak_tensor g32;
            ck_assert_int_eq(ak_alloc_tensor(b, pw->n, AK_F32, &g32), 0);
            ck_assert_int_eq(ak_cast(b, g32, pw->grad, NULL), 0);
            ck_assert_int_eq(ak_to_host(b, g, g32.data, pw->n * 4), 0);
            ak_free(b, g32.data);
            if (!ref) {
                ref = g;
                ref_n = pw->n;
            } else {
                double num = 0, den = 0;
                for (size_t j = 0; j < ref_n; j++) {
                    num += (g[j] - ref[j]) * (double)(g[j] - ref[j]);
                    den += ref[j] * (double)ref[j];
                }
                const double rel = sqrt(num / den);
                ck_assert_msg(rel < (low ? 0.1 : 0.02), "O%d %s: relative gradient difference %g",
                              mode, low ? "bf16" : "fp16", rel);
                free(g);
            }
            model_free(m);
        }
    free(ref);
    free(x);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, nets_shapes);
    tcase_add_test(tc, precision_plans);
    tcase_add_test(tc, gradients_mlp);
    tcase_add_test(tc, gradients_lenet5);
    tcase_add_test(tc, gradients_simplenet);
    tcase_add_test(tc, modes_run);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
