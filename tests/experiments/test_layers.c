/* test_layers: every row of the layer table (experiments/layers/).
 *
 * A row is complete (names, functions, tensors with shapes and an
 * initialisation, a cost, a double reference in net_ref.c, its op class
 * accepted by the precision lists); a tiny net with it runs forward and
 * backward on the cpu backend, where its loss is the double reference's
 * and every parameter gradient the reference's finite difference, with the
 * layer first (no dx) and behind a probe conv (whose gradients depend on
 * the layer's dx); and it runs in every precision mode.  A new row fails
 * here until it has all of that. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "layer.h"
#include "model.h"
#include "net_ref.h"
#include "nets.h"

/* The hyperparameters the tiny nets give every kind (ignored by kinds
 * without them). */
#define TINY_OUT    3
#define TINY_KERNEL 3

/* A net on 2 x 6 x 6 inputs: [a 1 x 1 conv "probe" when probe,] the
 * layer of kind k, a linear "head" to 4 outputs, MSE loss. */
static void tiny_net(const layer_kind *k, bool probe, net_def *n)
{
    char msg[256];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "tiny-%s", k->name);
    n->in_c = 2;
    n->in_h = n->in_w = 6;
    n->loss = NET_MSE;
    if (probe)
        ck_assert_msg(net_append(n, &layer_conv2d, "probe", 2, 1, msg, sizeof msg) == 0, "%s", msg);
    net_layer l;
    memset(&l, 0, sizeof l);
    l.kind = k;
    snprintf(l.name, sizeof l.name, "layer");
    l.in = net_prev(n);
    /* a two-input kind reads the probe twice (its gradient is the sum of
     * two), or first in the net the input twice */
    l.in2 = k->inputs == 2 ? l.in : NET_NO_INPUT;
    l.out_c = TINY_OUT;
    l.kernel = TINY_KERNEL;
    ck_assert_msg(net_add(n, &l, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_msg(net_append(n, &layer_linear, "head", 4, 0, msg, sizeof msg) == 0, "%s", msg);
}

START_TEST(table_complete)
{
    ck_assert_int_gt(layer_count, 0);
    ck_assert_int_le(layer_count, LAYER_MAX_KINDS);
    prec_options o;
    prec_options_default(&o, PREC_O1, AK_F16);
    for (int i = 0; i < layer_count; i++) {
        const layer_kind *k = layer_table[i];
        ck_assert_ptr_nonnull(k);
        ck_assert_msg(k->name && k->name[0], "row %d has no name", i);
        ck_assert_msg(k->op_class && k->op_class[0], "%s has no op class", k->name);
        ck_assert_msg(k->shape && k->tensors && k->forward && k->backward && k->cost,
                      "%s lacks a function", k->name);
        ck_assert_ptr_eq(layer_find(k->name), k);
        ck_assert_int_eq(layer_index(k), i);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(layer_table[j]->name, k->name);
        ck_assert_msg(ref_has_layer(k), "%s has no double reference in net_ref.c", k->name);
        /* the precision lists know its op class, and its default is the row's */
        ck_assert_int_eq(o.white[i], k->prec == LAYER_PREC_LOW);
        ck_assert_int_eq(o.black[i], k->prec == LAYER_PREC_FP32);
        char msg[256];
        prec_options edited = o;
        ck_assert_msg(prec_edit_list(&edited, k->op_class, false, msg, sizeof msg) == 0, "%s", msg);
        ck_assert(edited.black[i] && !edited.white[i]);

        /* a tiny instance: its tensors and its cost */
        net_def n;
        tiny_net(k, true, &n);
        const net_layer *l = &n.layers[1];
        ck_assert_uint_gt(net_in_features(l), 0);
        ck_assert_uint_gt(net_out_features(l), 0);
        layer_tensor t[LAYER_MAX_TENSORS];
        const int nt = k->tensors(l, t);
        ck_assert_int_ge(nt, 0);
        ck_assert_int_le(nt, LAYER_MAX_TENSORS);
        for (int j = 0; j < nt; j++) {
            ck_assert_msg(t[j].name && t[j].name[0], "%s: tensor %d has no name", k->name, j);
            for (int q = 0; q < j; q++)
                ck_assert_str_ne(t[q].name, t[j].name);
            ck_assert_uint_ge(t[j].ndim, 1);
            ck_assert_uint_le(t[j].ndim, LAYER_MAX_DIMS);
            for (size_t d = 0; d < t[j].ndim; d++)
                ck_assert_msg(t[j].shape[d] > 0, "%s.%s: dimension %zu is 0", k->name, t[j].name,
                              d);
            if (t[j].init == LAYER_INIT_UNIFORM) ck_assert_uint_gt(t[j].fan_in, 0);
        }
        ck_assert_int_eq(net_has_params(l), nt > 0);
        const layer_cost c = k->cost(l, 4, 4);
        ck_assert_msg(c.fwd_flops > 0 && c.bwd_flops > 0 && c.fwd_bytes > 0 && c.bwd_bytes > 0,
                      "%s: cost %g %g %g %g", k->name, c.fwd_flops, c.bwd_flops, c.fwd_bytes,
                      c.bwd_bytes);
        const layer_cost c2 = k->cost(l, 8, 4); /* linear in the batch, give or take weights */
        ck_assert(c2.fwd_flops > c.fwd_flops && c2.fwd_bytes > c.fwd_bytes);
    }
    ck_assert_ptr_null(layer_find("resnet"));
    ck_assert_ptr_null(layer_find(NULL));
}
END_TEST

/* The linear and conv rows give PyTorch's shapes and names. */
START_TEST(tensor_shapes)
{
    net_def n;
    char msg[256];
    ck_assert_int_eq(net_build("lenet5", NULL, &n, msg, sizeof msg), 0);
    layer_tensor t[LAYER_MAX_TENSORS];
    ck_assert_int_eq(n.layers[0].kind->tensors(&n.layers[0], t), 2);
    ck_assert_str_eq(t[0].name, "weight");
    ck_assert_uint_eq(t[0].ndim, 4); /* OIHW */
    ck_assert_uint_eq(t[0].shape[0], 6);
    ck_assert_uint_eq(t[0].shape[1], 1);
    ck_assert_uint_eq(t[0].shape[2], 5);
    ck_assert_uint_eq(t[0].fan_in, 25);
    ck_assert(t[0].stats && !t[1].stats);
    ck_assert_str_eq(t[1].name, "bias");
    ck_assert_uint_eq(t[1].ndim, 1);
    const net_layer *fc1 = &n.layers[net_find_layer(&n, "fc1")];
    ck_assert_int_eq(fc1->kind->tensors(fc1, t), 2);
    ck_assert_uint_eq(t[0].ndim, 2); /* (out, in) */
    ck_assert_uint_eq(t[0].shape[0], 120);
    ck_assert_uint_eq(t[0].shape[1], 400);
    ck_assert_int_eq(n.layers[1].kind->tensors(&n.layers[1], t), 0);
    /* a shape a kind cannot take is an error naming the layer */
    net_def bad;
    memset(&bad, 0, sizeof bad);
    snprintf(bad.name, sizeof bad.name, "bad");
    bad.in_c = 1;
    bad.in_h = bad.in_w = 3;
    ck_assert_int_eq(net_append(&bad, &layer_conv2d, "conv1", 2, 5, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "bad: conv2d conv1 cannot take a 1 x 3 x 3 input");
    ck_assert_int_eq(net_append(&bad, &layer_maxpool2, "pool1", 0, 0, msg, sizeof msg), -1);
    ck_assert_int_eq(bad.n_layers, 0);
}
END_TEST

/* Every row in a tiny net: the loss against the double reference, the
 * gradients against finite differences, first and behind the probe. */
START_TEST(gradients)
{
    const layer_kind *k = layer_table[_i];
    net_def n;
    tiny_net(k, false, &n);
    ref_check_gradients(n.name, &n, 3);
    tiny_net(k, true, &n);
    ref_check_gradients(n.name, &n, 3);
}
END_TEST

/* Every row runs in every mode and format, with a finite loss. */
START_TEST(modes)
{
    const layer_kind *k = layer_table[_i];
    char msg[256];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "%s", msg);
    net_def n;
    tiny_net(k, true, &n);
    const size_t rows = 2, in_n = rows * 72;
    float x[2 * 72], target[2 * 4];
    for (size_t i = 0; i < in_n; i++)
        x[i] = (float)((i * 29) % 17) / 17.0f;
    for (size_t i = 0; i < rows * 4; i++)
        target[i] = 0.25f * (float)(i % 3);
    for (int mode = 0; mode < 4; mode++)
        for (int low = 0; low < 2; low++) {
            prec_options o;
            prec_options_default(&o, (prec_mode)mode, low ? AK_BF16 : AK_F16);
            prec_plan p;
            prec_plan_make(&o, &n, &p);
            model *m = NULL;
            ck_assert_msg(model_create(b, &n, &p, rows, &m, msg, sizeof msg) == 0, "%s", msg);
            ck_assert_int_eq(model_init_weights(m, 5), 0);
            ck_assert_int_eq(ak_to_device(b, m->x.data, x, sizeof x), 0);
            ck_assert_int_eq(ak_to_device(b, m->target.data, target, sizeof target), 0);
            ck_assert_msg(model_forward_backward(m, rows, NULL) == 0, "%s O%d: %s", k->name, mode,
                          ak_error(b));
            float loss;
            ck_assert_int_eq(ak_to_host(b, &loss, m->loss, sizeof loss), 0);
            ck_assert_msg(isfinite(loss) && loss > 0, "%s O%d: loss %g", k->name, mode, loss);
            model_free(m);
        }
    ak_close(b);
}
END_TEST

/* A kind with a buffer (running statistics) gets it after every trainable
 * tensor of the net, in fp32 in every mode, with no gradient: the
 * optimizer's loops (params[0, n_params)) never see it. */
static int buffer_tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    t[0] = (layer_tensor){"running_mean", 1, {l->out_c}, LAYER_INIT_ZERO, 0, false, false};
    return 1;
}

START_TEST(buffers_kept)
{
    layer_kind with_buffer = layer_relu;
    with_buffer.name = "norm";
    with_buffer.tensors = buffer_tensors;
    net_def n;
    tiny_net(&with_buffer, true, &n);
    char msg[256];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "%s", msg);
    for (int mode = 0; mode < 4; mode++) {
        prec_options o;
        prec_options_default(&o, (prec_mode)mode, AK_F16);
        prec_plan p;
        prec_plan_make(&o, &n, &p);
        model *m = NULL;
        ck_assert_msg(model_create(b, &n, &p, 2, &m, msg, sizeof msg) == 0, "%s", msg);
        ck_assert_int_eq(m->n_params, 4); /* probe and head: weight, bias */
        ck_assert_int_eq(m->n_tensors, 5);
        const model_param *buf = &m->params[4];
        ck_assert_str_eq(buf->name, "layer.running_mean");
        ck_assert(!buf->spec.trainable);
        ck_assert_int_eq(buf->w32.dtype, AK_F32);
        ck_assert_ptr_null(buf->wlow.data);
        ck_assert_ptr_null(buf->grad.data);
        ck_assert_int_eq(model_init_weights(m, 3), 0);
        float host[2] = {1, 1}; /* out_c is the input's 2 channels */
        ck_assert_int_eq(model_get_param(m, buf, host), 0);
        ck_assert(host[0] == 0.0f && host[1] == 0.0f);
        model_free(m);
    }
    ak_close(b);
}
END_TEST

/* A layer whose output nothing reads is refused, naming it. */
START_TEST(unread_output_refused)
{
    net_def n;
    char msg[256];
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "fork");
    n.in_c = 4;
    n.in_h = n.in_w = 1;
    n.loss = NET_MSE;
    ck_assert_int_eq(net_append(&n, &layer_linear, "a", 3, 0, msg, sizeof msg), 0);
    net_layer l = n.layers[0];
    snprintf(l.name, sizeof l.name, "b");
    l.in = NET_INPUT; /* reads the input, not a */
    ck_assert_int_eq(net_add(&n, &l, msg, sizeof msg), 0);
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "%s", msg);
    prec_options o;
    prec_options_default(&o, PREC_O0, AK_F16);
    prec_plan p;
    prec_plan_make(&o, &n, &p);
    model *m = NULL;
    ck_assert_int_eq(model_create(b, &n, &p, 2, &m, msg, sizeof msg), AK_EINVAL);
    ck_assert_str_eq(msg, "fork: no layer reads the output of a");
    /* a layer cannot read a later one */
    l.in = 5;
    ck_assert_int_eq(net_add(&n, &l, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "fork: layer b reads a layer that does not come before it");
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, table_complete);
    tcase_add_test(tc, tensor_shapes);
    tcase_add_loop_test(tc, gradients, 0, layer_count);
    tcase_add_loop_test(tc, modes, 0, layer_count);
    tcase_add_test(tc, buffers_kept);
    tcase_add_test(tc, unread_output_refused);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
