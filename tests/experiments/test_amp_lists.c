/* test_amp_lists: the frameworks' precision lists (experiments/amp_lists.h).
 *
 * Every expected value is written here by hand from the framework's source
 * (the files amp_lists_data.c cites): the size of each list, as counted in
 * the source; where given ops are and which ampscope op class they map to;
 * which op classes each preset puts white or black in each mode, and
 * keep_batchnorm_fp32; the plan a preset gives LeNet-5; the user's edits
 * (adding, -OP removing) and every malformed edit refused with o unchanged. */
#include <check.h>
#include <string.h>

#include "amp_lists.h"
#include "check_main.h"
#include "nets.h"

/* Distinct names of preset in list l that apply in mode. */
static int count_names(const amp_preset *p, amp_list l, prec_mode mode)
{
    int n = 0;
    for (int i = 0; i < p->n_ops; i++) {
        const amp_op *op = &p->ops[i];
        if (op->list != l || !(op->modes & (1u << mode))) continue;
        bool again = false;
        for (int j = 0; j < i && !again; j++)
            again = p->ops[j].list == l && (p->ops[j].modes & (1u << mode)) &&
                    strcmp(p->ops[j].name, op->name) == 0;
        n += !again;
    }
    return n;
}

/* Whether preset has name in list l for mode, mapped to op_class (NULL: none). */
static bool has_op(const amp_preset *p, const char *name, amp_list l, prec_mode mode,
                   const char *op_class)
{
    for (int i = 0; i < p->n_ops; i++) {
        const amp_op *op = &p->ops[i];
        if (strcmp(op->name, name) != 0 || op->list != l || !(op->modes & (1u << mode))) continue;
        if (!op_class ? op->op_class == NULL : op->op_class && !strcmp(op->op_class, op_class))
            return true;
    }
    return false;
}

static bool named_anywhere(const amp_preset *p, const char *name)
{
    for (int i = 0; i < p->n_ops; i++)
        if (strcmp(p->ops[i].name, name) == 0) return true;
    return false;
}

START_TEST(presets_exist)
{
    const char *names[] = {"pytorch", "apex", "paddle", "mindspore"};
    ck_assert_int_eq(amp_preset_count, 4);
    for (int i = 0; i < 4; i++) {
        const amp_preset *p = amp_preset_find(names[i]);
        ck_assert_msg(p != NULL, "%s", names[i]);
        ck_assert(p->source && strstr(p->source, "commit") && p->keep_note);
        /* every class the data names is one a list may name */
        for (int k = 0; k < p->n_ops; k++)
            ck_assert_msg(!p->ops[k].op_class || amp_class_known(p->ops[k].op_class), "%s: %s",
                          names[i], p->ops[k].op_class);
    }
    ck_assert_ptr_null(amp_preset_find("torch"));
    ck_assert_ptr_null(amp_preset_find("PyTorch"));
    ck_assert_ptr_null(amp_preset_find(NULL));
    ck_assert_str_eq(amp_preset_names(), "pytorch, apex, paddle, mindspore");
    const char *classes[] = {"linear",  "conv",      "relu",      "maxpool", "gelu",
                             "avgpool", "batchnorm", "layernorm", "softmax", "log_softmax",
                             "matmul",  "embedding", "add",       "dropout", "loss"};
    for (int i = 0; i < 15; i++)
        ck_assert_msg(amp_class_known(classes[i]), "%s", classes[i]);
    ck_assert(!amp_class_known("Softmax") && !amp_class_known("") && !amp_class_known(NULL));
}
END_TEST

/* autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP has 33 entries, the .cpp adds
 * cudnn_convolution and cudnn_convolution_transpose; AT_FORALL_FP32 58,
 * AT_FORALL_FP32_SET_OPT_DTYPE 17, the norm overloads 3; AT_FORALL_PROMOTE 11. */
START_TEST(pytorch_lists)
{
    const amp_preset *p = amp_preset_find("pytorch");
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O1), 35);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O1), 58 + 17 + 3);
    ck_assert_int_eq(count_names(p, AMP_PROMOTE, PREC_O1), 11);
    ck_assert_int_eq(count_names(p, AMP_FOLLOW, PREC_O1), 0);
    ck_assert(has_op(p, "linear", AMP_LOW, PREC_O1, "linear"));
    ck_assert(has_op(p, "conv2d", AMP_LOW, PREC_O1, "conv"));
    ck_assert(has_op(p, "bmm", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(has_op(p, "baddbmm", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(has_op(p, "softmax.int", AMP_FP32, PREC_O1, "softmax"));
    ck_assert(has_op(p, "log_softmax.int", AMP_FP32, PREC_O1, "log_softmax"));
    ck_assert(has_op(p, "layer_norm", AMP_FP32, PREC_O1, "layernorm"));
    ck_assert(has_op(p, "nll_loss", AMP_FP32, PREC_O1, "loss"));
    ck_assert(has_op(p, "mse_loss", AMP_FP32, PREC_O1, "loss"));
    ck_assert(has_op(p, "exp", AMP_FP32, PREC_O1, NULL));
    ck_assert(has_op(p, "scaled_dot_product_attention", AMP_LOW, PREC_O1, NULL));
    ck_assert(has_op(p, "addcmul", AMP_PROMOTE, PREC_O1, NULL));
    /* in no CUDA list: batch_norm (MPS only), cross_entropy_loss (CPU only), cat (gone) */
    ck_assert(!named_anywhere(p, "batch_norm"));
    ck_assert(!named_anywhere(p, "cross_entropy_loss"));
    ck_assert(!named_anywhere(p, "cat"));
    ck_assert(p->unlisted_o1 == AMP_FOLLOW);
}
END_TEST

/* functional_overrides.py: FP16_FUNCS 8, FP32_FUNCS 26; torch_overrides.py:
 * FP16_FUNCS 14 + the 3 bmms (CUDA >= 9.1), FP32_FUNCS 23, CASTS 16,
 * SEQUENCE_CASTS 2; tensor_overrides.py: FP16 1, FP32 4, CASTS 21. */
START_TEST(apex_lists)
{
    const amp_preset *p = amp_preset_find("apex");
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O1), 8 + 17 + 1);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O1), 26 + 23 + 4);
    ck_assert_int_eq(count_names(p, AMP_PROMOTE, PREC_O1), 16 + 2 + 21);
    /* O2 and O3 patch nothing; the model's outputs are cast to fp32 for the loss */
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O2), 0);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O2), 1);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O3), 1);
    ck_assert(has_op(p, "F.linear", AMP_LOW, PREC_O1, "linear"));
    ck_assert(has_op(p, "F.softmax", AMP_FP32, PREC_O1, "softmax"));
    ck_assert(has_op(p, "F.log_softmax", AMP_FP32, PREC_O1, "log_softmax"));
    ck_assert(has_op(p, "F.layer_norm", AMP_FP32, PREC_O1, "layernorm"));
    ck_assert(has_op(p, "F.cross_entropy", AMP_FP32, PREC_O1, "loss"));
    ck_assert(has_op(p, "torch.bmm", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(has_op(p, "torch.add", AMP_PROMOTE, PREC_O1, "add"));
    ck_assert(has_op(p, "torch.cat", AMP_PROMOTE, PREC_O1, NULL));
    ck_assert(has_op(p, "Tensor.__matmul__", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(!has_op(p, "F.softmax", AMP_FP32, PREC_O2, "softmax"));
    /* frontend.py: O1 None (batch_norm takes fp16 with fp32 weights), O2 True, O3 False */
    ck_assert(!p->keep_batchnorm_fp32[0] && p->keep_batchnorm_fp32[1]);
    ck_assert(p->keep_batchnorm_fp32[2] && !p->keep_batchnorm_fp32[3]);
}
END_TEST

/* amp_lists.py: WHITE_LIST 9 | ONLY_FP16_WHITE_LIST 4; FP16_BLACK_LIST 44 (O1);
 * EXTRA_BLACK_LIST 8 (O1 and O2); fp16_lists.py gray_list 46. */
START_TEST(paddle_lists)
{
    const amp_preset *p = amp_preset_find("paddle");
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O1), 13);
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O2), 13);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O1), 44 + 8);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O2), 8);
    ck_assert_int_eq(count_names(p, AMP_FOLLOW, PREC_O1), 46);
    ck_assert(has_op(p, "matmul_v2", AMP_LOW, PREC_O1, "linear"));
    ck_assert(has_op(p, "matmul_v2", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(has_op(p, "conv2d", AMP_LOW, PREC_O1, "conv"));
    ck_assert(has_op(p, "softmax", AMP_FP32, PREC_O1, "softmax"));
    ck_assert(has_op(p, "log_softmax", AMP_FP32, PREC_O1, "log_softmax"));
    ck_assert(has_op(p, "softmax_with_cross_entropy", AMP_FP32, PREC_O1, "loss"));
    ck_assert(!has_op(p, "softmax", AMP_FP32, PREC_O2, "softmax"));
    ck_assert(has_op(p, "lookup_table_v2", AMP_FP32, PREC_O2, "embedding"));
    ck_assert(has_op(p, "batch_norm", AMP_FOLLOW, PREC_O1, "batchnorm"));
    ck_assert(has_op(p, "layer_norm", AMP_FOLLOW, PREC_O1, "layernorm"));
    ck_assert(has_op(p, "elementwise_add", AMP_FOLLOW, PREC_O1, "add"));
    ck_assert(has_op(p, "pool2d", AMP_FOLLOW, PREC_O1, "maxpool"));
    ck_assert(has_op(p, "relu", AMP_FOLLOW, PREC_O1, "relu"));
    ck_assert(!named_anywhere(p, "cos_sim")); /* in the older amp_lists.py, not this one */
}
END_TEST

/* train/amp.py: AMP_WHITE_LIST 20 (O1), AMP_BLACK_LIST 4 (O2) and the loss. */
START_TEST(mindspore_lists)
{
    const amp_preset *p = amp_preset_find("mindspore");
    ck_assert_int_eq(count_names(p, AMP_LOW, PREC_O1), 20);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O1), 0);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O2), 4 + 1);
    ck_assert_int_eq(count_names(p, AMP_FP32, PREC_O3), 1);
    ck_assert(has_op(p, "nn.Dense", AMP_LOW, PREC_O1, "linear"));
    ck_assert(has_op(p, "nn.Conv2d", AMP_LOW, PREC_O1, "conv"));
    ck_assert(has_op(p, "P.ReLU", AMP_LOW, PREC_O1, "relu"));
    ck_assert(has_op(p, "P.BatchMatMul", AMP_LOW, PREC_O1, "matmul"));
    ck_assert(has_op(p, "nn.BatchNorm2d", AMP_FP32, PREC_O2, "batchnorm"));
    ck_assert(has_op(p, "nn.LayerNorm", AMP_FP32, PREC_O2, "layernorm"));
    ck_assert(p->unlisted_o1 == AMP_FP32);
    ck_assert(!p->keep_batchnorm_fp32[1] && p->keep_batchnorm_fp32[2]);
    ck_assert(!p->keep_batchnorm_fp32[3]);
}
END_TEST

/* ---- applied: where each class stands, by preset and mode ---- */
typedef struct want {
    const char *cls;
    int list; /* 1 white, -1 black, 0 neither */
} want;

static void check_applied(const char *preset, prec_mode mode, const want *w, int n, bool keep_bn)
{
    prec_options o;
    char msg[256];
    prec_options_default(&o, mode, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, preset, msg, sizeof msg), 0);
    ck_assert_str_eq(o.amp_preset, preset);
    for (int i = 0; i < n; i++)
        ck_assert_msg(amp_class_list(&o, w[i].cls) == w[i].list, "%s %s: %s is %d, expected %d",
                      preset, prec_mode_name(mode), w[i].cls, amp_class_list(&o, w[i].cls),
                      w[i].list);
    ck_assert_msg(o.keep_batchnorm_fp32 == keep_bn, "%s %s: keep_batchnorm_fp32", preset,
                  prec_mode_name(mode));
}
#define CHECK(preset, mode, keep, ...)                                                             \
    do {                                                                                           \
        const want w_[] = {__VA_ARGS__};                                                           \
        check_applied(preset, mode, w_, (int)(sizeof w_ / sizeof w_[0]), keep);                    \
    } while (0)

START_TEST(applied)
{
    /* autocast: GEMMs and convs low; softmax, layer_norm, the losses fp32; the rest follow */
    CHECK("pytorch", PREC_O1, true, {"linear", 1}, {"conv", 1}, {"matmul", 1}, {"relu", 0},
          {"maxpool", 0}, {"gelu", 0}, {"avgpool", 0}, {"batchnorm", 0}, {"add", 0},
          {"embedding", 0}, {"dropout", 0}, {"softmax", -1}, {"log_softmax", -1}, {"layernorm", -1},
          {"loss", -1});
    CHECK("pytorch", PREC_O2, false, {"linear", 1}, {"softmax", -1}, {"loss", -1}, {"relu", 0});
    CHECK("pytorch", PREC_O0, false, {"linear", 0}, {"softmax", 0}, {"loss", 0});
    CHECK("apex", PREC_O1, true, {"linear", 1}, {"conv", 1}, {"matmul", 1}, {"add", 0},
          {"softmax", -1}, {"layernorm", -1}, {"loss", -1}, {"batchnorm", 0});
    CHECK("apex", PREC_O2, true, {"linear", 0}, {"conv", 0}, {"softmax", 0}, {"loss", -1});
    CHECK("apex", PREC_O3, false, {"linear", 0}, {"batchnorm", 0}, {"loss", -1});
    /* Paddle: black before gray (layer_norm); O2 keeps only EXTRA_BLACK_LIST fp32 */
    CHECK("paddle", PREC_O1, true, {"linear", 1}, {"conv", 1}, {"matmul", 1}, {"relu", 0},
          {"maxpool", 0}, {"batchnorm", 0}, {"add", 0}, {"dropout", 0}, {"layernorm", -1},
          {"softmax", -1}, {"loss", -1}, {"embedding", -1});
    CHECK("paddle", PREC_O2, true, {"linear", 1}, {"softmax", 0}, {"layernorm", 0}, {"loss", 0},
          {"embedding", -1});
    /* MindSpore O1: the white list, everything else fp32 */
    CHECK("mindspore", PREC_O1, false, {"linear", 1}, {"conv", 1}, {"relu", 1}, {"matmul", 1},
          {"maxpool", -1}, {"gelu", -1}, {"avgpool", -1}, {"batchnorm", -1}, {"softmax", -1},
          {"add", -1}, {"log_softmax", -1}, {"loss", -1});
    CHECK("mindspore", PREC_O2, true, {"batchnorm", -1}, {"layernorm", -1}, {"loss", -1},
          {"linear", 0}, {"conv", 0}, {"relu", 0}, {"softmax", 0});
    CHECK("mindspore", PREC_O3, false, {"batchnorm", 0}, {"layernorm", 0}, {"loss", -1},
          {"linear", 0});
}
END_TEST

/* The plan LeNet-5 gets (nets.c's prec_plan_make on the applied lists). */
START_TEST(plans)
{
    net_def net;
    prec_options o;
    prec_plan plan;
    char msg[256];
    ck_assert_int_eq(net_build("lenet5", NULL, &net, msg, sizeof msg), 0);
    /* conv1 relu1 pool1 conv2 relu2 pool2 fc1 relu3 fc2 relu4 fc3 */
    const ak_dtype H = AK_F16, S = AK_F32;
    const ak_dtype mindspore_o1[] = {H, H, S, H, H, S, H, H, H, H, H};
    const ak_dtype pytorch_o1[] = {H, H, H, H, H, H, H, H, H, H, H};
    const ak_dtype edited[] = {H, S, S, H, S, S, H, S, H, S, H}; /* --black-list relu */
    prec_options_default(&o, PREC_O1, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, "mindspore", msg, sizeof msg), 0);
    prec_plan_make(&o, &net, &plan);
    for (int i = 0; i < net.n_layers; i++)
        ck_assert_msg(plan.run[i] == mindspore_o1[i], "mindspore O1 %s", net.layers[i].name);
    prec_options_default(&o, PREC_O1, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, "pytorch", msg, sizeof msg), 0);
    prec_plan_make(&o, &net, &plan);
    for (int i = 0; i < net.n_layers; i++)
        ck_assert_msg(plan.run[i] == pytorch_o1[i], "pytorch O1 %s", net.layers[i].name);
    ck_assert_int_eq(amp_lists_edit(&o, "relu", false, msg, sizeof msg), 0);
    prec_plan_make(&o, &net, &plan);
    for (int i = 0; i < net.n_layers; i++)
        ck_assert_msg(plan.run[i] == edited[i], "pytorch O1 relu black %s", net.layers[i].name);
}
END_TEST

START_TEST(edits)
{
    prec_options o;
    char msg[512];
    prec_options_default(&o, PREC_O1, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, "pytorch", msg, sizeof msg), 0);
    ck_assert_int_eq(amp_lists_edit(&o, "relu", true, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "relu"), 1);
    ck_assert_int_eq(amp_lists_edit(&o, "-relu", true, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "relu"), 0);
    /* off the black list: softmax then follows its input */
    ck_assert_int_eq(amp_lists_edit(&o, "-softmax", false, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "softmax"), 0);
    /* taking a class off the white list leaves its black entry */
    ck_assert_int_eq(amp_lists_edit(&o, "-loss", true, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "loss"), -1);
    /* adding to one list takes it off the other */
    ck_assert_int_eq(amp_lists_edit(&o, "loss,-linear", true, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "loss"), 1);
    ck_assert_int_eq(amp_class_list(&o, "linear"), 0);
    ck_assert_int_eq(amp_lists_edit(&o, "conv", false, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "conv"), -1);
    /* a class no row has yet is kept by name */
    ck_assert_int_eq(amp_lists_edit(&o, "dropout", false, msg, sizeof msg), 0);
    ck_assert_int_eq(amp_class_list(&o, "dropout"), -1);

    /* refusals: o unchanged, one line naming the option and the item */
    const struct {
        const char *text;
        bool white;
        const char *says;
    } bad[] = {
        {"softmaxx", true, "unknown op 'softmaxx' in --white-list (expected linear, conv"},
        {"relu,,gelu", true, "--white-list 'relu,,gelu': an empty op name"},
        {"gelu,", false, "--black-list 'gelu,': an empty op name"},
        {"-", true, "--white-list '-': an empty op name"},
        {"", false, "--black-list '': an empty op name"},
        {"--relu", true, "unknown op '--relu' in --white-list"},
        {"gelu,Relu", false, "unknown op 'Relu' in --black-list"},
        {"a-very-long-op-class-name", true, "unknown op 'a-very-long-op-class-name'"},
        {NULL, true, "--white-list '': an empty op name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        prec_options before = o;
        ck_assert_int_eq(amp_lists_edit(&o, bad[i].text, bad[i].white, msg, sizeof msg), -1);
        ck_assert_msg(strstr(msg, bad[i].says) != NULL, "%s: %s", bad[i].says, msg);
        ck_assert_msg(strchr(msg, '\n') == NULL, "one line: %s", msg);
        ck_assert_msg(memcmp(&before, &o, sizeof o) == 0, "%s changed o", bad[i].says);
    }
    prec_options before = o;
    ck_assert_int_eq(amp_lists_apply(&o, "torch", msg, sizeof msg), -1);
    ck_assert_str_eq(msg, "--amp-lists: unknown preset 'torch' (expected pytorch, apex, paddle, "
                          "mindspore)");
    ck_assert(memcmp(&before, &o, sizeof o) == 0);
}
END_TEST

START_TEST(described)
{
    prec_options o;
    char msg[256], text[4096];
    prec_options_default(&o, PREC_O3, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, "apex", msg, sizeof msg), 0);
    amp_lists_describe(&o, text, sizeof text);
    ck_assert_str_eq(text, "white none; black loss");
    prec_options_default(&o, PREC_O1, AK_F16);
    ck_assert_int_eq(amp_lists_apply(&o, "pytorch", msg, sizeof msg), 0);
    amp_lists_describe(&o, text, sizeof text);
    ck_assert_msg(strncmp(text, "white linear, conv", 18) == 0, "%s", text);
    ck_assert_msg(strstr(text, "; black ") && strstr(strstr(text, "; black "), "softmax") &&
                      strstr(strstr(text, "; black "), "layernorm"),
                  "%s", text);
    const amp_preset *m = amp_preset_find("mindspore");
    amp_lists_unmapped(m, PREC_O1, text, sizeof text);
    ck_assert_str_eq(text, "low: nn.LSTMCell, nn.RNNCell, nn.GRUCell, P.PReLU, P.Ger");
    amp_lists_unmapped(m, PREC_O3, text, sizeof text);
    ck_assert_str_eq(text, "none");
    amp_lists_unmapped(amp_preset_find("pytorch"), PREC_O1, text, sizeof text);
    ck_assert_msg(strstr(text, "fp32: acos, asin,") && strstr(text, "promote: addcdiv,"), "%s",
                  text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amp_lists");
    TCase *tc = tcase_create("amp_lists");
    tcase_add_test(tc, presets_exist);
    tcase_add_test(tc, pytorch_lists);
    tcase_add_test(tc, apex_lists);
    tcase_add_test(tc, paddle_lists);
    tcase_add_test(tc, mindspore_lists);
    tcase_add_test(tc, applied);
    tcase_add_test(tc, plans);
    tcase_add_test(tc, edits);
    tcase_add_test(tc, described);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
