/* layer.h: a kind of layer as a row of data.  Everything the rest of the
 * training library needs to know about linear, conv2d, relu, maxpool2 (and
 * the layers to come) is in its row: the output shape it makes of an input
 * shape, its tensors (parameters and buffers, with PyTorch's names and
 * shapes and their initialisation), its op class for the precision lists,
 * its forward and backward as kernel calls, and its cost for benchmarks.
 * model.c walks a net through the rows; nets.c names rows by kind.
 *
 * A new layer is one file in layers/ defining its row, one line in
 * table.c (and experiments/CMakeLists.txt), its kernels (kernels/) and its
 * double-precision reference in tests/experiments/net_ref.c; test_layers
 * then checks the row and its gradients with the others.
 */
#ifndef AMPSCOPE_LAYER_H
#define AMPSCOPE_LAYER_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels.h"

struct net_layer; /* nets.h: one layer of a net, its kind and its geometry */

#define LAYER_MAX_TENSORS 4 /* tensors per layer: weight, bias; BatchNorm's 4 */
#define LAYER_MAX_DIMS    4
#define LAYER_MAX_KINDS   32 /* rows the table may grow to (per-kind arrays) */

/* How an op's format is chosen in O1 when no list names it (autocast's
 * lists): LOW runs in the low format (GEMM-based ops: the white list),
 * FP32 in fp32 (the black list: softmax, norms), FOLLOW in its input's. */
typedef enum layer_prec { LAYER_PREC_FOLLOW, LAYER_PREC_LOW, LAYER_PREC_FP32 } layer_prec;

/* How a tensor starts (model_init_weights): UNIFORM is PyTorch's default
 * for Linear and Conv2d, uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) from
 * the run's generator; NORMAL draws N(0, 1/fan_in) (embeddings: GPT-2's
 * N(0, 0.02^2) is fan_in 2500); ZERO and ONE draw nothing (norms, running
 * stats). */
typedef enum layer_init {
    LAYER_INIT_UNIFORM,
    LAYER_INIT_ZERO,
    LAYER_INIT_ONE,
    LAYER_INIT_NORMAL
} layer_init;

/* One tensor of a layer, as a checkpoint names and shapes it. */
typedef struct layer_tensor {
    const char *name; /* "weight", "bias", "running_mean": "fc1.weight" in files */
    size_t ndim;
    size_t shape[LAYER_MAX_DIMS]; /* PyTorch's layout: (out, in), OIHW, (out) */
    layer_init init;
    size_t fan_in; /* LAYER_INIT_UNIFORM's bound is 1/sqrt(fan_in) */
    /* false: a buffer the optimizer never sees (running mean/var): kept in
     * fp32, saved in checkpoints, loaded by --init, no gradient */
    bool trainable;
    bool stats; /* its statistics are the layer's "weight" rows of tensors.csv */
} layer_tensor;

/* What forward and backward compute on: the batch's first rows, the
 * layer's input and output in its run format, and its trainable tensors as
 * the op computes with them (in the row's order). */
typedef struct layer_io {
    ak_backend *b;
    const struct net_layer *l;
    size_t rows;
    bool training;      /* a training step's forward and backward, not an evaluation */
    ak_compute compute; /* of GEMMs and convolutions: fp32, or tf32 inputs */
    ak_tensor in;       /* rows x in features */
    ak_tensor out;      /* rows x out features (forward writes it; backward may read it) */
    ak_tensor dy;       /* backward: the loss's gradient w.r.t. out */
    ak_tensor dx;       /* backward: w.r.t. in, or none for a net's first layer */
    ak_tensor in2;      /* two-input kinds: the second input (the residual) */
    ak_tensor dx2;      /* backward: w.r.t. in2, or none when in2 is the net's input */
    void *work;         /* the kind's workspace (backend memory, kept from forward to backward) */
    /* where the plan makes an inner step a choice: the format of the softmax
       inside attention, of the embedding backward's sums */
    ak_dtype softmax, accumulate;
    uint64_t rng_key, rng_offset; /* dropout: this step's Philox key and first counter */
    /* the trainable tensors, then the buffers (running statistics: fp32, updated by forward in
       training), at their place in the kind's tensor list */
    ak_tensor w[LAYER_MAX_TENSORS];
    ak_tensor dw[LAYER_MAX_TENSORS]; /* backward: the trainable tensors' gradients */
} layer_io;

/* Floating-point operations and bytes of memory traffic for a batch. */
typedef struct layer_cost {
    double fwd_flops, bwd_flops;
    double fwd_bytes, bwd_bytes;
} layer_cost;

typedef struct layer_kind {
    const char *name;     /* the kind, as nets.c names it: "linear", "conv2d" */
    const char *op_class; /* the precision lists' name: "linear", "conv", "relu" */
    layer_prec prec;      /* O1's choice when no list names the op class */
    /* The output shape from the input shape (in_c, in_h, in_w) and the
     * hyperparameters nets.c set (out_c, kernel); a linear layer flattens
     * its input here.  Returns 0, or -1 when the shapes cannot work. */
    int (*shape)(struct net_layer *l);
    /* The layer's tensors in a fixed order (which is the order of
     * checkpoints and of `ampscope grad`); returns their count. */
    int (*tensors)(const struct net_layer *l, layer_tensor out[LAYER_MAX_TENSORS]);
    int (*forward)(const layer_io *io);
    int (*backward)(const layer_io *io);
    layer_cost (*cost)(const struct net_layer *l, size_t rows, size_t elem_bytes);
    /* Optional (NULL: none).  Bytes of backend memory the layer keeps from
     * its forward to its backward for a batch of rows samples (saved
     * statistics, attention probabilities), given to it as io->work. */
    size_t (*workspace)(const struct net_layer *l, size_t rows);
    int inputs;       /* 2 for the residual add (io->in2); 0 or 1: one input */
    bool index_input; /* its input holds integers (token ids): never cast to a low format */
} layer_kind;

/* The table (table.c), in the order the precision lists name op classes. */
extern const layer_kind *const layer_table[];
extern const int layer_count;

/* The row named name, or NULL. */
const layer_kind *layer_find(const char *name);
/* The index of a row in layer_table (for per-kind arrays), or -1. */
int layer_index(const layer_kind *k);
/* Elements of a tensor: the product of its shape. */
size_t layer_tensor_size(const layer_tensor *t);
/* For rows that need them (table.c): the output shape is the input's
 * (elementwise kinds); the kind has no tensors of its own. */
int layer_same_shape(struct net_layer *l);
int layer_no_tensors(const struct net_layer *l, layer_tensor t[LAYER_MAX_TENSORS]);

/* Rows of the table (table.c lists them). */
extern const layer_kind layer_linear, layer_conv2d, layer_relu, layer_maxpool2, layer_gelu,
    layer_gelu_tanh, layer_avgpool, layer_add, layer_batchnorm2d, layer_layernorm, layer_softmax,
    layer_log_softmax, layer_attention, layer_posembed, layer_embedding, layer_dropout;

#endif
