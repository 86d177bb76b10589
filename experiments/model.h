/* model.h: a reference network instantiated on a kernels/ backend: its
 * parameters (in every copy the precision plan asks for), activations and
 * gradients, and the forward and backward passes: the net's layers in
 * order, each through its kind's row (layers/layer.h), with the casts the
 * plan asks for between them.  The training step (train_step.c) drives it;
 * tests check its fp32 gradients against finite differences.
 *
 * Parameter names follow PyTorch ("fc1.weight", "conv2.bias").
 */
#ifndef AMPSCOPE_MODEL_H
#define AMPSCOPE_MODEL_H

#include <stdint.h>

#include "kernels.h"
#include "nets.h"

#define MODEL_MAX_PARAMS (2 * NET_MAX_LAYERS)

/* A parameter tensor (trainable), or a buffer (running statistics: only
 * w32, no gradient, never seen by the optimizer). */
typedef struct model_param {
    char name[NET_NAME_LEN + 16]; /* "fc1.weight", "layer1.0.bn1.running_mean" */
    int layer;
    int slot;          /* its place among the layer's tensors (layer_io's w[], dw[]) */
    layer_tensor spec; /* shape, initialisation, statistics: as the layer's kind says */
    size_t n;
    ak_dtype run;       /* the layer's format */
    ak_tensor w32;      /* fp32 weights (master in O2), or none */
    ak_tensor wlow;     /* low-precision stored weights (O2 model copy, O3), or none */
    ak_tensor wcast;    /* O1: the per-step cast of w32 to the run format, or none */
    ak_tensor grad_run; /* the gradient as backward computes it, in the run format */
    ak_tensor grad;     /* the gradient the optimizer reads: fp32 when w32 exists, else grad_run */
    ak_tensor m, v;     /* optimizer state (fp32), none until model_alloc_optimizer */
} model_param;

typedef struct model {
    ak_backend *b;
    net_def net;
    prec_plan plan;
    size_t batch; /* rows the buffers hold */
    /* the trainable tensors params[0, n_params), in layer order, then the
     * buffers params[n_params, n_tensors) */
    model_param params[MODEL_MAX_PARAMS];
    int n_params;
    int n_tensors;
    ak_tensor x;                        /* input batch, fp32 (batch x input features) */
    ak_tensor target;                   /* MSE targets, fp32 (batch x outputs) */
    int32_t *labels;                    /* class labels (net_rows(batch)), backend memory */
    ak_tensor in_cast[NET_MAX_LAYERS];  /* layer i's input cast to its format, when needed */
    ak_tensor in2_cast[NET_MAX_LAYERS]; /* its second input's, when needed */
    void *work[NET_MAX_LAYERS];         /* its workspace (layer_kind.workspace), or NULL */
    ak_tensor act[NET_MAX_LAYERS];      /* layer i's output (run[i]) */
    ak_tensor dact[NET_MAX_LAYERS];     /* gradient of the loss w.r.t. act[i] (run[i]) */
    ak_tensor dx_tmp, dx2_tmp;          /* dx, dx2 in the layer's format before a cast or a sum */
    float *loss;                        /* backend memory: the batch's mean loss */
    ak_tensor logp, dlogp; /* the loss in a low format (plan.loss): log-softmax, its gradient */
    /* dropout's random bits: the run's seed and the step (set before each
     * training step; a layer's mask is a function of both) */
    uint64_t rng_seed, rng_step;
    int32_t *correct; /* backend memory: correct predictions (xent) */
} model;

/* Allocates everything for batch rows on backend b.  Returns 0, or an AK_E*
 * status with the reason in msg. */
int model_create(ak_backend *b, const net_def *net, const prec_plan *plan, size_t batch,
                 model **out, char *msg, size_t msg_len);
void model_free(model *m);
/* Allocates the optimizer state (m for momentum and Adam, v for Adam), zeroed. */
int model_alloc_optimizer(model *m, bool first_moment, bool second_moment);

/* Every parameter as its kind initialises it (layer_init: PyTorch's default
 * for Linear and Conv2d is uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in))),
 * uniform draws on the host from GSL's MT19937 seeded with seed, in
 * parameter order; then every stored copy (w32, and wlow rounded to
 * nearest even) is written. */
int model_init_weights(model *m, uint64_t seed);
/* Writes a parameter's value (fp32 host array of p->n) into every stored copy. */
int model_set_param(model *m, model_param *p, const float *host);
/* Reads a parameter's value as fp32 (from w32, else widened from wlow). */
int model_get_param(model *m, const model_param *p, float *host);

/* Forward over the first rows of the batch (rows <= batch) and the loss
 * into *m->loss (and m->correct for cross-entropy).  With backward, also
 * the gradients of (loss * *scale) w.r.t. every parameter into grad_run,
 * and grad (fp32) where a cast is needed.  scale is in backend memory;
 * NULL means 1.  model_forward is an evaluation, model_forward_backward a
 * training step (layer_io.training, for the layers that tell them apart). */
int model_forward(model *m, size_t rows);
int model_forward_backward(model *m, size_t rows, const float *scale);

/* The gradient tensors the optimizer reads, in parameter order (for the
 * fused unscale + finite check); returns the count. */
int model_grads(const model *m, ak_tensor *grads);

/* The statistics of every layer's tensors for the target format, added
 * into out[i * 4 + kind] (out in backend memory, n_layers * 4 of them, in
 * analyze/record.h's rec_kind order: weight, activation, weight_grad,
 * activation_grad; zero it first): the first rows samples' activations
 * and their gradients, the weights as stored in the low format where there
 * is one, the weight gradients as computed.  Gradients are those of the
 * scaled loss, so they are taken at scale 1 (what a cast of them to the
 * target format does at the scale held).  Of the weights, only the tensors
 * whose layer_tensor says stats (not the biases). */
int model_stats(model *m, size_t rows, fpe_format_id target, ak_stats *out);

#endif
