/* nets.h: the reference networks as lists of layers, with PyTorch's
 * parameter names and layouts (fc1.weight is (out, in); conv weights are
 * OIHW), and the precision plan that says in which format each layer runs.
 * A layer is a row of the layer table (layers/layer.h) plus its geometry;
 * nothing here knows one kind of layer from another.
 *
 *   simplenet  the PaddlePaddle AMP tutorial's net: depth x Linear(width ->
 *              width), ReLU between them, MSE loss (fc1, fc2, fc3)
 *   lenet5     the MindSpore AMP tutorial's net: conv1 1->6 5x5, ReLU, pool 2,
 *              conv2 6->16 5x5, ReLU, pool 2, fc1 400->120, ReLU, fc2 120->84,
 *              ReLU, fc3 84->10, softmax cross-entropy (32x32 inputs)
 *   mlp        784 -> 256 -> 256 -> 10 with ReLU, softmax cross-entropy
 */
#ifndef AMPSCOPE_NETS_H
#define AMPSCOPE_NETS_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels.h"
#include "layer.h"

typedef enum net_loss { NET_XENT, NET_MSE } net_loss;

#define NET_MAX_LAYERS 128
#define NET_NAME_LEN   32
#define NET_INPUT      (-1) /* net_layer.in: the net's input batch */
#define NET_NO_INPUT   (-2) /* net_layer.in2: a layer with one input */

/* net_layer.flags */
#define NET_NO_BIAS 1u /* a linear or conv2d layer without bias (bias=False) */

/* One layer: its kind (a row of the layer table) and its geometry.  Shapes
 * are per sample: (channels, height, width); a linear layer's features are
 * channels with height = width = 1, and a linear layer after a conv reads
 * the NCHW activations flattened.  In a sequence net (tokens > 0) a sample
 * is tokens x features, token-major: c is the features of one token, h the
 * tokens, w 1, and per-token layers (linear, layernorm) work on the last
 * dimension.  out_c, kernel, stride, pad, heads, p and flags are the
 * hyperparameters a net gives; the kind's shape() sets the rest.
 *
 * A net is a graph in topological order: a layer reads the output of layer
 * in (NET_INPUT: the net's input; by default the layer before it), and a
 * kind with two inputs (the residual add) also the output of layer in2. */
typedef struct net_layer {
    const layer_kind *kind;
    char name[NET_NAME_LEN]; /* "fc1", "layer1.0.conv1"; "relu3", "pool1" for the others */
    int in, in2;             /* producers: a layer index, NET_INPUT, NET_NO_INPUT */
    size_t in_c, in_h, in_w;
    size_t out_c, out_h, out_w;
    size_t kernel;      /* conv: square kernel size */
    size_t stride, pad; /* conv: stride (0 means 1) and zero padding */
    size_t tokens;      /* sequence nets: tokens per sample (0: not a sequence) */
    size_t heads;       /* attention: heads */
    size_t vocab;       /* embedding: rows of the table */
    double p;           /* dropout: the probability of a zero */
    unsigned flags;     /* NET_NO_BIAS */
} net_layer;

typedef struct net_def {
    char name[NET_NAME_LEN];
    net_layer layers[NET_MAX_LAYERS];
    int n_layers;
    size_t in_c, in_h, in_w; /* one input sample */
    size_t outputs;          /* features of the last layer (classes, or MSE targets) */
    size_t tokens;           /* sequence nets: tokens (and labels) per sample; 0 otherwise */
    net_loss loss;
} net_def;

/* Sizes a user may change (0 = the net's default): the width (simplenet's
 * and deepmlp's layers, resnet's first stage's channels, the
 * transformer's features) and depth (Linear layers; resnet's blocks a
 * stage; transformer blocks); the transformer's heads, context and
 * dropout. */
typedef struct net_size {
    size_t width;
    int depth;
    size_t heads, context;
    double dropout;
} net_size;

/* Builds the named net; returns 0, or -1 with a one-line reason in msg
 * (unknown name, impossible size). */
int net_build(const char *name, const net_size *size, net_def *net, char *msg, size_t msg_len);
const char *net_names(void); /* "simplenet, lenet5, mlp, deepmlp, resnet, transformer" */
/* Appends a layer of the given kind reading the last layer's output (or
 * the net's input: set in_c, in_h, in_w first) with the hyperparameters
 * out_c and kernel (0 where the kind has none); its kind gives the output
 * shape, which becomes the net's outputs.  Returns 0, or -1 with the reason
 * in msg (too many layers, a shape the kind cannot take). */
int net_append(net_def *net, const layer_kind *kind, const char *name, size_t out_c, size_t kernel,
               char *msg, size_t msg_len);
/* Adds the layer proto describes (kind, name, in, in2, hyperparameters; in
 * is taken as given, so set it: net_prev(net) for the last layer), checks
 * that its inputs exist and come before it (and that in2's output has the
 * shape of in's, for two-input kinds), sets its shapes by its kind and
 * makes its output the net's outputs.  Returns 0, or -1 with the reason. */
int net_add(net_def *net, const net_layer *proto, char *msg, size_t msg_len);
int net_prev(const net_def *net); /* the last layer's index, or NET_INPUT */
/* The number of outputs of each layer that a later layer reads (consumers
 * of layer i in uses[i]); the last layer's output is read by the loss. */
void net_consumers(const net_def *net, int uses[NET_MAX_LAYERS]);
/* Rows of a batch as the per-token layers and the loss see them: rows, or
 * rows * tokens in a sequence net. */
size_t net_rows(const net_def *net, size_t samples);

bool net_has_params(const net_layer *l);     /* trainable tensors (linear and conv) */
size_t net_param_count(const net_layer *l);  /* elements of its trainable tensors */
size_t net_in_features(const net_layer *l);  /* in_c in_h in_w */
size_t net_out_features(const net_layer *l); /* out_c out_h out_w */
/* The index of the layer named name, or -1. */
int net_find_layer(const net_def *net, const char *name);

/* ---- precision ------------------------------------------------------------------ */
#define PREC_CLASS_LEN 16 /* an op class's name, with its NUL */
#define PREC_MAX_NAMED 16

typedef enum prec_mode { PREC_O0 = 0, PREC_O1 = 1, PREC_O2 = 2, PREC_O3 = 3 } prec_mode;

/* Where each layer's operation runs and how its weights are kept.  The
 * answer to one question per layer: in which format does its op run (its
 * inputs are cast to that format first, its outputs are in it), and which
 * copies of its weights exist. */
typedef struct prec_plan {
    prec_mode mode;
    ak_dtype low;                  /* fp16 or bf16 */
    ak_dtype run[NET_MAX_LAYERS];  /* format of layer i's op, inputs and outputs */
    bool has_w32[NET_MAX_LAYERS];  /* fp32 weights (the master, or the weights in O0/O1) */
    bool has_wlow[NET_MAX_LAYERS]; /* low-precision stored weights (O2 model copy, O3 weights) */
    ak_dtype input;                /* format of the network's input batch */
    /* attention layers: the format of their softmax (the "softmax" op
     * class's place in the lists, given the layer's); others: run[i] */
    ak_dtype softmax[NET_MAX_LAYERS];
    /* the embedding backward's sums into rows: fp32 (PyTorch's CUDA
     * kernel's acc_type) or the low format (--embedding-accumulation low) */
    ak_dtype embed_acc;
    /* the loss: fp32 (the cross-entropy in double from the logits) unless
     * the "loss" op class is white-listed in O1-O3: then the low format
     * (log-softmax rounded to it, PyTorch's CUDA nll_loss on it) */
    ak_dtype loss;
    /* parameters kept in fp32 while the layer's activations are low
     * (keep_batchnorm_fp32: BatchNorm's affine weights) */
    bool params_f32[NET_MAX_LAYERS];
    bool tf32; /* fp32 GEMMs and convolutions take tf32 inputs */
} prec_plan;

/* Op lists, as in autocast: white-listed ops run in the low format from O1
 * on; black-listed ones in fp32.  Names are the layer table's op classes
 * ("linear", "conv", "relu", "maxpool"); each row's prec says where it is
 * by default (linear and conv white, the others in their input's format). */
typedef struct prec_options {
    prec_mode mode;
    ak_dtype low;
    bool white[LAYER_MAX_KINDS], black[LAYER_MAX_KINDS]; /* indexed by layer_index */
    bool pinned[NET_MAX_LAYERS];                         /* --layer-precision NAME=fp32 */
    /* fp32 GEMMs and convolutions round their inputs to tf32 (PyTorch's
     * allow_tf32, cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32); off by default */
    bool tf32;
    bool embed_acc_low; /* the embedding backward sums in the low format */
    /* Op classes the lists name that no row of the layer table has (the
     * loss; a class whose layer is still to come): kept by name, so the plan
     * and run.json see them (amp_lists.h: amp_class_list answers for any
     * class, row or name). */
    struct prec_named {
        char op_class[PREC_CLASS_LEN];
        bool white, black;
    } named[PREC_MAX_NAMED];
    int n_named;
    /* BatchNorm's parameters, statistics and arithmetic in fp32 while its
     * input and output stay in the layer's run format (Apex's and
     * MindSpore's keep_batchnorm_fp32; --amp-lists sets each framework's
     * default for the mode, --keep-batchnorm-fp32 overrides it) */
    bool keep_batchnorm_fp32;
    const char *amp_preset; /* --amp-lists, or NULL (amp_lists.h) */
} prec_options;

void prec_options_default(prec_options *o, prec_mode mode, ak_dtype low);
/* Adds the comma-separated op names of list to the white or black list;
 * returns 0, or -1 naming the unknown op in msg. */
int prec_edit_list(prec_options *o, const char *list, bool white, char *msg, size_t msg_len);
/* "fc1=fp32,conv1=fp32": pins layers to fp32 (the only pin there is, as
 * MindSpore's to_float(mstype.float32)); -1 naming an unknown layer. */
int prec_pin_layers(prec_options *o, const net_def *net, const char *spec, char *msg,
                    size_t msg_len);
void prec_plan_make(const prec_options *o, const net_def *net, prec_plan *plan);
const char *prec_mode_name(prec_mode m); /* "O0".."O3" */
int prec_mode_from_name(const char *s);  /* -1 if unknown */

#endif
