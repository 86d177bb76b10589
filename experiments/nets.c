/* nets.c: the reference networks and the precision plan (nets.h). */
#include "atomic_file.h" /* ut_fail */
#include "nets.h"

#include <stdio.h>
#include <string.h>

/* Appends a layer reading the previous layer's output (or the input). */
static net_layer *add(net_def *net, net_op op, const char *name)
{
    net_layer *l = &net->layers[net->n_layers++];
    memset(l, 0, sizeof *l);
    l->op = op;
    snprintf(l->name, sizeof l->name, "%s", name);
    if (net->n_layers == 1) {
        l->in_c = net->in_c;
        l->in_h = net->in_h;
        l->in_w = net->in_w;
    } else {
        const net_layer *p = l - 1;
        l->in_c = p->out_c;
        l->in_h = p->out_h;
        l->in_w = p->out_w;
    }
    l->out_c = l->in_c;
    l->out_h = l->in_h;
    l->out_w = l->in_w;
    return l;
}

static void linear(net_def *net, const char *name, size_t out)
{
    net_layer *l = add(net, NET_LINEAR, name);
    l->in_c = l->in_c * l->in_h * l->in_w; /* flattened NCHW */
    l->in_h = l->in_w = 1;
    l->out_c = out;
    l->out_h = l->out_w = 1;
}

static void conv(net_def *net, const char *name, size_t out, size_t kernel)
{
    net_layer *l = add(net, NET_CONV, name);
    l->kernel = kernel;
    l->out_c = out;
    l->out_h = l->in_h - kernel + 1;
    l->out_w = l->in_w - kernel + 1;
}

static void relu(net_def *net, int index)
{
    char name[NET_NAME_LEN];
    snprintf(name, sizeof name, "relu%d", index);
    add(net, NET_RELU, name);
}

static void pool(net_def *net, int index)
{
    char name[NET_NAME_LEN];
    snprintf(name, sizeof name, "pool%d", index);
    net_layer *l = add(net, NET_MAXPOOL, name);
    l->out_h = l->in_h / 2;
    l->out_w = l->in_w / 2;
}

const char *net_names(void) { return "simplenet, lenet5, mlp"; }

int net_build(const char *name, const net_size *size, net_def *net, char *msg, size_t msg_len)
{
    memset(net, 0, sizeof *net);
    const size_t width = size && size->width ? size->width : 0;
    const int depth = size && size->depth ? size->depth : 0;
    if (!name) return ut_fail(msg, msg_len, -1, "no net given (expected %s)", net_names());
    snprintf(net->name, sizeof net->name, "%s", name);
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
        for (int i = 1; i <= d; i++) {
            char layer[NET_NAME_LEN];
            snprintf(layer, sizeof layer, "fc%d", i);
            linear(net, layer, w);
            if (i < d) relu(net, i);
        }
    } else if (strcmp(name, "lenet5") == 0 || strcmp(name, "mlp") == 0) {
        if (width || depth)
            return ut_fail(msg, msg_len, -1, "--width and --depth apply to simplenet only, not %s",
                           name);
        net->loss = NET_XENT;
        if (name[0] == 'l') {
            net->in_c = 1;
            net->in_h = net->in_w = 32; /* Fashion-MNIST zero-padded to 32 x 32 */
            conv(net, "conv1", 6, 5);
            relu(net, 1);
            pool(net, 1);
            conv(net, "conv2", 16, 5);
            relu(net, 2);
            pool(net, 2);
            linear(net, "fc1", 120);
            relu(net, 3);
            linear(net, "fc2", 84);
            relu(net, 4);
            linear(net, "fc3", 10);
        } else {
            net->in_c = 784;
            net->in_h = net->in_w = 1;
            linear(net, "fc1", 256);
            relu(net, 1);
            linear(net, "fc2", 256);
            relu(net, 2);
            linear(net, "fc3", 10);
        }
    } else {
        return ut_fail(msg, msg_len, -1, "unknown net '%s' (expected %s)", name, net_names());
    }
    net->outputs = net_out_features(&net->layers[net->n_layers - 1]);
    return 0;
}

bool net_has_params(const net_layer *l) { return l->op == NET_LINEAR || l->op == NET_CONV; }

size_t net_weight_count(const net_layer *l)
{
    if (l->op == NET_LINEAR) return l->out_c * l->in_c;
    if (l->op == NET_CONV) return l->out_c * l->in_c * l->kernel * l->kernel;
    return 0;
}

size_t net_bias_count(const net_layer *l) { return net_has_params(l) ? l->out_c : 0; }
size_t net_in_features(const net_layer *l) { return l->in_c * l->in_h * l->in_w; }
size_t net_out_features(const net_layer *l) { return l->out_c * l->out_h * l->out_w; }

int net_find_layer(const net_def *net, const char *name)
{
    for (int i = 0; i < net->n_layers; i++)
        if (strcmp(net->layers[i].name, name) == 0) return i;
    return -1;
}

/* ---- precision ------------------------------------------------------------------ */
static const char *const op_names[4] = {"linear", "conv", "relu", "maxpool"};

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
    o->white[NET_LINEAR] = o->white[NET_CONV] = true; /* GEMM-based ops, as autocast */
}

int prec_edit_list(prec_options *o, const char *list, bool white, char *msg, size_t msg_len)
{
    const char *p = list;
    while (p && *p) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        int op = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(op_names[i]) == len && strncmp(p, op_names[i], len) == 0) op = i;
        if (op < 0)
            return ut_fail(msg, msg_len, -1,
                           "unknown op '%.*s' in --%s-list (expected linear, conv, relu, maxpool)",
                           (int)len, p, white ? "white" : "black");
        o->white[op] = white;
        o->black[op] = !white;
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
    ak_dtype prev = AK_F32; /* the format the previous layer's output is in */
    for (int i = 0; i < net->n_layers; i++) {
        const net_layer *l = &net->layers[i];
        ak_dtype run;
        switch (o->mode) {
        case PREC_O0: run = AK_F32; break;
        case PREC_O1:
            /* autocast: listed ops are cast, the others run in their input's format */
            run = o->white[l->op] ? o->low : o->black[l->op] ? AK_F32 : prev;
            break;
        default: /* O2, O3: the whole model in the low format */
            run = o->black[l->op] ? AK_F32 : o->low;
            break;
        }
        if (o->pinned[i]) run = AK_F32;
        plan->run[i] = run;
        if (net_has_params(l)) {
            plan->has_w32[i] = o->mode != PREC_O3 || run == AK_F32;
            plan->has_wlow[i] = o->mode >= PREC_O2 && run != AK_F32;
        }
        prev = run;
    }
}
