/* test_model: the reference networks (nets.c), the precision plan, and the
 * model's forward and backward passes (model.c) on the cpu backend.
 *
 * The fp32 gradients of every network are checked against central finite
 * differences of a double-precision forward pass (net_ref.c), written from
 * the PyTorch definitions, independently of kernels/. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "model.h"
#include "net_ref.h"
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
        total += net_param_count(&n->layers[i]);
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
    net_size small = {.width = 64, .depth = 5};
    ck_assert_int_eq(net_build("simplenet", &small, &n, msg, sizeof msg), 0);
    ck_assert_int_eq(n.n_layers, 9);
    /* deepmlp: 784 -> 15 x (Linear 128, ReLU) -> Linear 10: 100480 + 14 x 16512 + 1290 */
    ck_assert_int_eq(net_build("deepmlp", NULL, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(param_total(&n), 100480 + 14 * 16512 + 1290);
    ck_assert_int_eq(n.n_layers, 31);
    ck_assert_str_eq(n.layers[30].name, "fc16");
    ck_assert_int_eq(n.loss, NET_XENT);
    /* resnet (width 16, a block a stage): conv1 144 + bn1 32; layer1 2 x 2304 + 2 x 32;
     * layer2 4608 + 9216 + 3 x 64 + 512 (downsample); layer3 18432 + 36864 + 3 x 128 +
     * 2048; fc 650 */
    ck_assert_int_eq(net_build("resnet", NULL, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(param_total(&n), 144 + 32 + 4672 + 14528 + 57728 + 650);
    ck_assert_str_eq(n.layers[n.n_layers - 1].name, "fc");
    ck_assert_int_eq(net_find_layer(&n, "layer2.0.downsample.0") > 0, 1);
    ck_assert_int_eq(net_find_layer(&n, "layer1.0.downsample.0"), -1); /* same shape */
    /* transformer (64 features, 2 blocks, 4 heads, context 64, 98 tokens): wte 6272, wpe
     * 4096, a block 128 + 12480 + 4160 + 128 + 16640 + 16448, ln_f 128, lm_head 6272 */
    ck_assert_int_eq(net_build("transformer", NULL, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(param_total(&n), 6272 + 4096 + 2 * 49984 + 128 + 6272);
    ck_assert_uint_eq(n.tokens, 64);
    ck_assert_uint_eq(n.outputs, 98);
    ck_assert_uint_eq(net_rows(&n, 3), 192);
    net_size bad_heads = {.width = 30, .heads = 4};
    ck_assert_int_eq(net_build("transformer", &bad_heads, &n, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "--width 30: the transformer wants at most 1024 features, a multiple of "
                          "--heads 4");
    net_size ctx = {.context = 8};
    ck_assert_int_eq(net_build("mlp", &ctx, &n, msg, sizeof msg), -1);
    ck_assert_str_eq(msg,
                     "--heads, --context and --dropout apply to the transformer only, not mlp");
    net_size deep = {.width = 32, .depth = 49};
    ck_assert_int_eq(net_build("deepmlp", &deep, &n, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "--depth 49 is out of range for deepmlp (2 to 48)");
    ck_assert_int_eq(net_build("vgg", NULL, &n, msg, sizeof msg), -1);
    ck_assert_str_eq(
        msg, "unknown net 'vgg' (expected simplenet, lenet5, mlp, deepmlp, resnet, transformer)");
    ck_assert_int_eq(net_build("lenet5", &small, &n, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "do not apply to lenet5") != NULL, "%s", msg);
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
    ck_assert_int_eq(prec_edit_list(&o, "relu,sigmoid", true, msg, sizeof msg), -1);
    ck_assert_msg(strstr(msg, "unknown op 'sigmoid'") != NULL, "%s", msg);
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

/* ---- gradients ---------------------------------------------------------------------- */
static void check_gradients(const char *name, const net_size *size, size_t rows)
{
    net_def n;
    char msg[256];
    ck_assert_msg(net_build(name, size, &n, msg, sizeof msg) == 0, "%s", msg);
    ref_check_gradients(name, &n, rows);
}

START_TEST(gradients_mlp) { check_gradients("mlp", NULL, 3); }
END_TEST
START_TEST(gradients_lenet5) { check_gradients("lenet5", NULL, 2); }
END_TEST
START_TEST(gradients_deepmlp)
{
    const net_size small = {.width = 12, .depth = 6};
    check_gradients("deepmlp", &small, 3);
}
END_TEST
START_TEST(gradients_resnet)
{
    const net_size small = {.width = 4, .depth = 1};
    check_gradients("resnet", &small, 2);
}
END_TEST
START_TEST(gradients_transformer)
{
    const net_size small = {.width = 8, .depth = 2, .heads = 2, .context = 5};
    check_gradients("transformer", &small, 2);
}
END_TEST
START_TEST(gradients_simplenet)
{
    const net_size small = {.width = 24, .depth = 3};
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
    tcase_add_test(tc, gradients_deepmlp);
    tcase_add_test(tc, gradients_resnet);
    tcase_add_test(tc, gradients_transformer);
    tcase_add_test(tc, modes_run);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
