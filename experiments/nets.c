/* nets.c: the reference networks and the precision plan (nets.h). */
#include "atomic_file.h" /* ut_fail */
#include "nets.h"
#include "amp_lists.h"
#include "nets_internal.h"

#include <stdarg.h>

#include <stdio.h>
#include <string.h>

#define DEEPMLP_CLASSES 10

/* A layer of a net's description: its kind, name and hyperparameters. */
typedef struct net_row {
    const layer_kind *kind;
    const char *name;
    size_t out_c, kernel; /* linear and conv2d: output features or channels; conv2d's kernel */
} net_row;

/* The nets' descriptions, one layer a line: kind, name, out_c, kernel. */
/* clang-format off */
static const net_row lenet5_rows[] = {
    {&layer_conv2d,   "conv1", 6,   5},
    {&layer_relu,     "relu1", 0,   0},
    {&layer_maxpool2, "pool1", 0,   0},
    {&layer_conv2d,   "conv2", 16,  5},
    {&layer_relu,     "relu2", 0,   0},
    {&layer_maxpool2, "pool2", 0,   0},
    {&layer_linear,   "fc1",   120, 0},
    {&layer_relu,     "relu3", 0,   0},
    {&layer_linear,   "fc2",   84,  0},
    {&layer_relu,     "relu4", 0,   0},
    {&layer_linear,   "fc3",   10,  0},
};
static const net_row mlp_rows[] = {
    {&layer_linear, "fc1",   256, 0},
    {&layer_relu,   "relu1", 0,   0},
    {&layer_linear, "fc2",   256, 0},
    {&layer_relu,   "relu2", 0,   0},
    {&layer_linear, "fc3",   10,  0},
};
/* clang-format on */

/* The nets of a fixed size: one input sample, the loss, the layers. */
static const struct {
    const char *name;
    size_t in_c, in_h, in_w;
    net_loss loss;
    const net_row *rows;
    int n_rows;
} fixed_nets[] = {
    /* Fashion-MNIST zero-padded to 32 x 32 */
    {"lenet5", 1, 32, 32, NET_XENT, lenet5_rows, (int)(sizeof lenet5_rows / sizeof lenet5_rows[0])},
    {"mlp", 784, 1, 1, NET_XENT, mlp_rows, (int)(sizeof mlp_rows / sizeof mlp_rows[0])},
};

int net_prev(const net_def *net) { return net->n_layers ? net->n_layers - 1 : NET_INPUT; }

/* The per-sample output shape of layer i, or the net's input for NET_INPUT. */
static void producer_shape(const net_def *net, int i, size_t *c, size_t *h, size_t *w)
{
    const net_layer *p = i >= 0 ? &net->layers[i] : NULL;
    *c = p ? p->out_c : net->in_c;
    *h = p ? p->out_h : net->in_h;
    *w = p ? p->out_w : net->in_w;
}

int net_add(net_def *net, const net_layer *proto, char *msg, size_t msg_len)
{
    if (net->n_layers == NET_MAX_LAYERS)
        return ut_fail(msg, msg_len, -1, "%s has more than %d layers", net->name, NET_MAX_LAYERS);
    const int at = net->n_layers;
    if (proto->in < NET_INPUT || proto->in >= at || proto->in2 < NET_NO_INPUT || proto->in2 >= at)
        return ut_fail(msg, msg_len, -1, "%s: layer %s reads a layer that does not come before it",
                       net->name, proto->name);
    if ((proto->in2 != NET_NO_INPUT) != (proto->kind->inputs == 2))
        return ut_fail(msg, msg_len, -1, "%s: %s %s takes %d input%s", net->name, proto->kind->name,
                       proto->name, proto->kind->inputs == 2 ? 2 : 1,
                       proto->kind->inputs == 2 ? "s" : "");
    net_layer *l = &net->layers[at];
    *l = *proto;
    if (!l->tokens) l->tokens = net->tokens;
    producer_shape(net, l->in, &l->in_c, &l->in_h, &l->in_w);
    if (l->in2 != NET_NO_INPUT) {
        size_t c, h, w;
        producer_shape(net, l->in2, &c, &h, &w);
        if (c != l->in_c || h != l->in_h || w != l->in_w)
            return ut_fail(msg, msg_len, -1,
                           "%s: %s %s adds a %zu x %zu x %zu input to a %zu x %zu x %zu one",
                           net->name, l->kind->name, l->name, c, h, w, l->in_c, l->in_h, l->in_w);
    }
    if (l->kind->shape(l) != 0)
        return ut_fail(msg, msg_len, -1, "%s: %s %s cannot take a %zu x %zu x %zu input", net->name,
                       l->kind->name, l->name, l->in_c, l->in_h, l->in_w);
    net->n_layers++;
    net->outputs = net->tokens ? l->out_c : net_out_features(l);
    return 0;
}

int net_append(net_def *net, const layer_kind *kind, const char *name, size_t out_c, size_t kernel,
               char *msg, size_t msg_len)
{
    net_layer l;
    memset(&l, 0, sizeof l);
    l.kind = kind;
    snprintf(l.name, sizeof l.name, "%s", name);
    l.in = net_prev(net);
    l.in2 = NET_NO_INPUT;
    l.out_c = out_c;
    l.kernel = kernel;
    return net_add(net, &l, msg, msg_len);
}

void net_consumers(const net_def *net, int uses[NET_MAX_LAYERS])
{
    memset(uses, 0, NET_MAX_LAYERS * sizeof uses[0]);
    for (int i = 0; i < net->n_layers; i++) {
        if (net->layers[i].in >= 0) uses[net->layers[i].in]++;
        if (net->layers[i].in2 >= 0) uses[net->layers[i].in2]++;
    }
    if (net->n_layers) uses[net->n_layers - 1]++;
}

size_t net_rows(const net_def *net, size_t samples)
{
    return net->tokens ? samples * net->tokens : samples;
}

const char *net_names(void) { return "simplenet, lenet5, mlp, deepmlp, resnet, transformer"; }

int net_add_layer(net_def *net, const layer_kind *kind, int in, int in2, const net_layer *hyper,
                  char *msg, size_t msg_len, const char *name_fmt, ...)
{
    net_layer l = *hyper;
    l.kind = kind;
    l.in = in;
    l.in2 = in2;
    va_list ap;
    va_start(ap, name_fmt);
    const int n = vsnprintf(l.name, sizeof l.name, name_fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof l.name)
        return ut_fail(msg, msg_len, -1, "%s: a layer name longer than %d characters", net->name,
                       NET_NAME_LEN - 1);
    return net_add(net, &l, msg, msg_len) == 0 ? net->n_layers - 1 : -1;
}

/* deepmlp: Fashion-MNIST's 784 pixels through depth Linear layers of width
 * features with ReLU between them and no normalization, PyTorch's default
 * initialisation: each layer scales the activations' and the gradients'
 * spread by about sqrt(1/6) (uniform weights of variance 1/(3 fan_in), ReLU
 * halving), so the first layers' gradients are orders of magnitude below
 * the last's: where fp16's range runs out.  fc1 .. fc<depth>, the last to
 * the 10 classes. */
static int build_deepmlp(net_def *net, size_t width, int depth, char *msg, size_t msg_len)
{
    if (width > 4096)
        return ut_fail(msg, msg_len, -1, "--width %zu is too large for deepmlp (at most 4096)",
                       width);
    if (depth < 2 || depth > 48)
        return ut_fail(msg, msg_len, -1, "--depth %d is out of range for deepmlp (2 to 48)", depth);
    net->in_c = 784;
    net->in_h = net->in_w = 1;
    net->loss = NET_XENT;
    int rc = 0;
    for (int i = 1; i <= depth && !rc; i++) {
        char fc[NET_NAME_LEN], relu[NET_NAME_LEN];
        snprintf(fc, sizeof fc, "fc%d", i);
        snprintf(relu, sizeof relu, "relu%d", i);
        rc = net_append(net, &layer_linear, fc, i < depth ? width : DEEPMLP_CLASSES, 0, msg,
                        msg_len);
        if (!rc && i < depth) rc = net_append(net, &layer_relu, relu, 0, 0, msg, msg_len);
    }
    return rc;
}

int net_build(const char *name, const net_size *size, net_def *net, char *msg, size_t msg_len)
{
    memset(net, 0, sizeof *net);
    const size_t width = size && size->width ? size->width : 0;
    const int depth = size && size->depth ? size->depth : 0;
    if (!name) return ut_fail(msg, msg_len, -1, "no net given (expected %s)", net_names());
    snprintf(net->name, sizeof net->name, "%s", name);
    if (size && (size->heads || size->context || size->dropout != 0) &&
        strcmp(name, "transformer") != 0)
        return ut_fail(msg, msg_len, -1,
                       "--heads, --context and --dropout apply to the transformer only, not %s",
                       name);
    int rc = 0;
    if (strcmp(name, "simplenet") == 0) {
        const size_t w = width ? width : 4096;
        const int d = depth ? depth : 3;
        if (w > ((size_t)1 << 16))
            return ut_fail(msg, msg_len, -1, "--width %zu is too large (at most 65536)", w);
        if (d < 1 || d > 16)
            return ut_fail(msg, msg_len, -1, "--depth %d is out of range (1 to 16)", d);
        net->in_c = w;
        net->in_h = net->in_w = 1;
        net->loss = NET_MSE;
        for (int i = 1; i <= d && !rc; i++) {
            char fc[NET_NAME_LEN], relu[NET_NAME_LEN];
            snprintf(fc, sizeof fc, "fc%d", i);
            snprintf(relu, sizeof relu, "relu%d", i);
            rc = net_append(net, &layer_linear, fc, w, 0, msg, msg_len);
            if (!rc && i < d) rc = net_append(net, &layer_relu, relu, 0, 0, msg, msg_len);
        }
    } else if (strcmp(name, "resnet") == 0) {
        rc = net_build_resnet(net, size, msg, msg_len);
    } else if (strcmp(name, "transformer") == 0) {
        rc = net_build_transformer(net, size, msg, msg_len);
    } else if (strcmp(name, "deepmlp") == 0) {
        rc = build_deepmlp(net, width ? width : 128, depth ? depth : 16, msg, msg_len);
    } else {
        int f = -1;
        for (int i = 0; i < (int)(sizeof fixed_nets / sizeof fixed_nets[0]); i++)
            if (strcmp(name, fixed_nets[i].name) == 0) f = i;
        if (f < 0)
            return ut_fail(msg, msg_len, -1, "unknown net '%s' (expected %s)", name, net_names());
        if (width || depth)
            return ut_fail(msg, msg_len, -1,
                           "--width and --depth do not apply to %s (only to simplenet, deepmlp, "
                           "resnet, transformer)",
                           name);
        net->loss = fixed_nets[f].loss;
        net->in_c = fixed_nets[f].in_c;
        net->in_h = fixed_nets[f].in_h;
        net->in_w = fixed_nets[f].in_w;
        for (int i = 0; i < fixed_nets[f].n_rows && !rc; i++) {
            const net_row *r = &fixed_nets[f].rows[i];
            rc = net_append(net, r->kind, r->name, r->out_c, r->kernel, msg, msg_len);
        }
    }
    return rc;
}

bool net_has_params(const net_layer *l) { return net_param_count(l) > 0; }

size_t net_param_count(const net_layer *l)
{
    layer_tensor t[LAYER_MAX_TENSORS];
    const int n = l->kind->tensors(l, t);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (t[i].trainable) total += layer_tensor_size(&t[i]);
    return total;
}

size_t net_in_features(const net_layer *l) { return l->in_c * l->in_h * l->in_w; }
size_t net_out_features(const net_layer *l) { return l->out_c * l->out_h * l->out_w; }

int net_find_layer(const net_def *net, const char *name)
{
    for (int i = 0; i < net->n_layers; i++)
        if (strcmp(net->layers[i].name, name) == 0) return i;
    return -1;
}

/* ---- precision ------------------------------------------------------------------ */
/* "linear, conv, relu, maxpool": the op classes of the table, each once. */
static void op_classes(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < layer_count; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen = seen || strcmp(layer_table[j]->op_class, layer_table[i]->op_class) == 0;
        if (!seen && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                                     layer_table[i]->op_class);
    }
}

const char *prec_mode_name(prec_mode m)
{
    static const char *const names[] = {"O0", "O1", "O2", "O3"};
    return (unsigned)m < 4 ? names[m] : "?";
}

int prec_mode_from_name(const char *s)
{
    for (int m = 0; m < 4; m++)
        if (s && strcmp(s, prec_mode_name((prec_mode)m)) == 0) return m;
    return -1;
}

void prec_options_default(prec_options *o, prec_mode mode, ak_dtype low)
{
    memset(o, 0, sizeof *o);
    o->mode = mode;
    o->low = low;
    for (int k = 0; k < layer_count; k++) { /* GEMM-based ops are white, as in autocast */
        o->white[k] = layer_table[k]->prec == LAYER_PREC_LOW;
        o->black[k] = layer_table[k]->prec == LAYER_PREC_FP32;
    }
}

int prec_edit_list(prec_options *o, const char *list, bool white, char *msg, size_t msg_len)
{
    const char *p = list;
    while (p && *p) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        bool known = false;
        for (int k = 0; k < layer_count; k++) {
            const char *op = layer_table[k]->op_class;
            if (strlen(op) != len || strncmp(p, op, len) != 0) continue;
            known = true;
            o->white[k] = white;
            o->black[k] = !white;
        }
        if (!known) {
            char expected[256];
            op_classes(expected, sizeof expected);
            return ut_fail(msg, msg_len, -1, "unknown op '%.*s' in --%s-list (expected %s)",
                           (int)len, p, white ? "white" : "black", expected);
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int prec_pin_layers(prec_options *o, const net_def *net, const char *spec, char *msg,
                    size_t msg_len)
{
    const char *p = spec;
    while (p && *p) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return ut_fail(msg, msg_len, -1, "--layer-precision wants NAME=fp32, got '%.*s'",
                           (int)len, p);
        char name[NET_NAME_LEN + 1];
        const size_t nlen = (size_t)(eq - p);
        if (nlen == 0 || nlen > NET_NAME_LEN)
            return ut_fail(msg, msg_len, -1, "--layer-precision: bad layer name in '%.*s'",
                           (int)len, p);
        memcpy(name, p, nlen);
        name[nlen] = '\0';
        const int layer = net_find_layer(net, name);
        if (layer < 0)
            return ut_fail(msg, msg_len, -1, "--layer-precision: %s has no layer '%s'", net->name,
                           name);
        const size_t vlen = len - nlen - 1;
        if (!((vlen == 4 && strncmp(eq + 1, "fp32", 4) == 0) ||
              (vlen == 3 && strncmp(eq + 1, "f32", 3) == 0)))
            return ut_fail(msg, msg_len, -1,
                           "--layer-precision %s: only fp32 can be pinned, got '%.*s'", name,
                           (int)vlen, eq + 1);
        o->pinned[layer] = true;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

void prec_plan_make(const prec_options *o, const net_def *net, prec_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->mode = o->mode;
    plan->low = o->low;
    plan->input = AK_F32;
    plan->tf32 = o->tf32;
    plan->embed_acc = o->embed_acc_low && o->mode != PREC_O0 ? o->low : AK_F32;
    /* on no list the loss stays fp32, where every framework's list keeps it */
    plan->loss = o->mode != PREC_O0 && amp_class_list(o, "loss") > 0 ? o->low : AK_F32;
    for (int i = 0; i < net->n_layers; i++) {
        const net_layer *l = &net->layers[i];
        const int k = layer_index(l->kind);
        /* the format its input is in; of two inputs the wider (autocast's
         * promote: fp32 over the low format) */
        ak_dtype in = l->in >= 0 ? plan->run[l->in] : plan->input;
        /* a kind outside the table (a test's) is on no list */
        const bool white = k >= 0 && o->white[k], black = k >= 0 && o->black[k];
        if (l->in2 != NET_NO_INPUT && (l->in2 < 0 || plan->run[l->in2] == AK_F32)) in = AK_F32;
        ak_dtype run;
        switch (o->mode) {
        case PREC_O0: run = AK_F32; break;
        case PREC_O1:
            /* autocast: listed ops are cast, the others run in their input's format */
            run = white ? o->low : black ? AK_F32 : in;
            break;
        default: /* O2, O3: the whole model in the low format */
            run = black ? AK_F32 : o->low;
            break;
        }
        if (o->pinned[i]) run = AK_F32;
        plan->run[i] = run;
        /* a softmax inside the layer (attention) goes where the lists put
         * the softmax op class, given the layer's format as its input */
        const int soft_list = amp_class_list(o, "softmax");
        ak_dtype soft = run;
        if (o->mode == PREC_O1)
            soft = soft_list > 0 ? o->low : soft_list < 0 ? AK_F32 : run;
        else if (o->mode >= PREC_O2)
            soft = soft_list < 0 ? AK_F32 : o->low;
        plan->softmax[i] = o->pinned[i] || o->mode == PREC_O0 ? AK_F32 : soft;
        /* keep_batchnorm_fp32: BatchNorm's parameters stay fp32 while its
         * activations are low (Apex O2, MindSpore O2) */
        plan->params_f32[i] =
            o->keep_batchnorm_fp32 && run != AK_F32 && strcmp(l->kind->op_class, "batchnorm") == 0;
        if (net_has_params(l)) {
            plan->has_w32[i] = o->mode != PREC_O3 || run == AK_F32 || plan->params_f32[i];
            plan->has_wlow[i] = o->mode >= PREC_O2 && run != AK_F32 && !plan->params_f32[i];
        }
    }
}
