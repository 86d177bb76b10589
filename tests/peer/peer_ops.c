/* peer_ops.c: the layer kinds no net of `ampscope grad` holds (gelu_tanh,
 * dropout, softmax and log_softmax as layers) and BatchNorm's eval mode, in
 * one small peer-only net on the cpu backend, fp32 (O0):
 *     fc1 (linear 16) bn1 (batchnorm, 16 channels of 1 x 1) gelu_tanh drop1
 *     (dropout 0.25) fc2 (linear 16) softmax fc3 (linear 16) log_softmax,
 *     MSE against targets
 * over ROWS samples of 16 features.  Writes OUT.safetensors with the
 * weights (model_init_weights with SEED), the inputs "x", the targets
 * "target", the loss "loss" (one element), dropout's output "drop1.out"
 * (its zeros are the mask, for PyTorch to apply), the gradients under
 * "grad.<name>", bn1's running statistics after that training forward
 * (under their names) and the loss of an eval forward with them after it,
 * "eval.loss".  A test helper (tests/peer), not part of the program.
 *
 *   peer_ops SEED ROWS OUT.safetensors
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "nets.h"
#include "nets_internal.h" /* net_add_layer */
#include "safetensors.h"

#define W 16

static int add(net_def *net, const layer_kind *kind, const char *name, size_t out_c, double p,
               char *why, size_t len)
{
    net_layer h;
    memset(&h, 0, sizeof h);
    h.out_c = out_c;
    h.p = p;
    return net_add_layer(net, kind, net_prev(net), NET_NO_INPUT, &h, why, len, "%s", name) < 0 ? -1
                                                                                               : 0;
}

int main(int argc, char **argv)
{
    char why[512] = "";
    if (argc != 4 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: peer_ops SEED ROWS OUT.safetensors\n");
        return 2;
    }
    const uint64_t seed = strtoull(argv[1], NULL, 10);
    const size_t rows = (size_t)atoi(argv[2]);
    net_def net;
    memset(&net, 0, sizeof net);
    snprintf(net.name, sizeof net.name, "ops");
    net.in_c = W;
    net.in_h = net.in_w = 1;
    net.loss = NET_MSE;
    if (add(&net, &layer_linear, "fc1", W, 0, why, sizeof why) ||
        add(&net, &layer_batchnorm2d, "bn1", 0, 0, why, sizeof why) ||
        add(&net, &layer_gelu_tanh, "gelu1", 0, 0, why, sizeof why) ||
        add(&net, &layer_dropout, "drop1", 0, 0.25, why, sizeof why) ||
        add(&net, &layer_linear, "fc2", W, 0, why, sizeof why) ||
        add(&net, &layer_softmax, "softmax1", 0, 0, why, sizeof why) ||
        add(&net, &layer_linear, "fc3", W, 0, why, sizeof why) ||
        add(&net, &layer_log_softmax, "log_softmax1", 0, 0, why, sizeof why)) {
        fprintf(stderr, "peer_ops: %s\n", why);
        return 1;
    }
    prec_options po;
    prec_options_default(&po, PREC_O0, AK_F16);
    prec_plan plan;
    prec_plan_make(&po, &net, &plan);
    ak_backend *b = ak_open("cpu", why, sizeof why);
    model *m = NULL;
    if (!b || model_create(b, &net, &plan, rows, &m, why, sizeof why) != 0 ||
        model_init_weights(m, seed) != 0) {
        fprintf(stderr, "peer_ops: %s\n", why[0] ? why : "cannot build the net");
        return 1;
    }
    m->rng_seed = seed;
    m->rng_step = 0;
    /* inputs and targets: fixed smooth functions of the index, exact in the file */
    float *x = malloc(rows * W * sizeof *x), *t = malloc(rows * W * sizeof *t);
    float *drop = malloc(rows * W * sizeof *drop), loss = 0, eval_loss = 0;
    enum { NT = 2 * MODEL_MAX_PARAMS + 6 };
    st_tensor tensors[NT];
    float *host[NT] = {0};
    uint64_t shapes[NT][4];
    int n = 0, rc = 1;
    if (!x || !t || !drop) goto done;
    for (size_t i = 0; i < rows * W; i++) {
        x[i] = (float)sin(0.37 * (double)i + 0.1);
        t[i] = (float)(-2.0 - cos(0.53 * (double)i));
    }
    const int drop_layer = net_find_layer(&net, "drop1");
    if (ak_to_device(b, m->x.data, x, rows * W * sizeof *x) ||
        ak_to_device(b, m->target.data, t, rows * W * sizeof *t) ||
        model_forward_backward(m, rows, NULL) || ak_to_host(b, &loss, m->loss, sizeof loss) ||
        ak_to_host(b, drop, m->act[drop_layer].data, rows * W * sizeof *drop) ||
        model_forward(m, rows) || ak_to_host(b, &eval_loss, m->loss, sizeof eval_loss)) {
        fprintf(stderr, "peer_ops: %s\n", ak_error_text(b));
        goto done;
    }
    static char names[NT][NET_NAME_LEN + 24];
    for (int i = 0; i < m->n_tensors; i++) {
        model_param *p = &m->params[i];
        /* the buffers (running statistics) have no gradient */
        for (int g = 0; g < (i < m->n_params ? 2 : 1); g++) {
            host[n] = malloc(p->n * sizeof(float));
            if (!host[n]) goto done;
            if (g ? ak_to_host(b, host[n], p->grad.data, p->n * sizeof(float))
                  : model_get_param(m, p, host[n])) {
                fprintf(stderr, "peer_ops: %s\n", ak_error_text(b));
                goto done;
            }
            snprintf(names[n], sizeof names[n], "%s%s", g ? "grad." : "", p->name);
            size_t nd = 0;
            for (size_t d = 0; d < p->spec.ndim; d++)
                shapes[n][nd++] = p->spec.shape[d];
            tensors[n] = (st_tensor){names[n], ST_F32, nd, shapes[n], host[n]};
            n++;
        }
    }
    const uint64_t batch[2] = {rows, W}, one[1] = {1};
    tensors[n++] = (st_tensor){"x", ST_F32, 2, batch, x};
    tensors[n++] = (st_tensor){"target", ST_F32, 2, batch, t};
    tensors[n++] = (st_tensor){"drop1.out", ST_F32, 2, batch, drop};
    tensors[n++] = (st_tensor){"loss", ST_F32, 1, one, &loss};
    tensors[n++] = (st_tensor){"eval.loss", ST_F32, 1, one, &eval_loss};
    if (st_write(argv[3], tensors, (size_t)n, NULL, 0, why, sizeof why) != 0) {
        fprintf(stderr, "peer_ops: %s\n", why);
        goto done;
    }
    rc = 0;
done:
    if (rc && !why[0]) fprintf(stderr, "peer_ops: out of memory\n");
    for (int i = 0; i < NT; i++)
        free(host[i]);
    free(x);
    free(t);
    free(drop);
    model_free(m);
    ak_close(b);
    return rc;
}
