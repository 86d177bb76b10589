/* amp_lists_data.c: the frameworks' precision lists, transcribed from their
 * sources (amp_lists.h).  Each row: the framework's name, its list, the
 * modes it applies in, ampscope's op class (NULL: none).  The order is the
 * source's.  Class choices worth a word:
 *   - every convolution (1d, 2d, 3d, transposed) is "conv"; a linear layer's
 *     GEMM ("linear", "addmm", "nn.Dense", Paddle's "mul") is "linear";
 *     batched and plain matmuls (attention's) are "matmul"; Paddle's Linear
 *     runs matmul_v2, so that name is both;
 *   - softmax is "softmax", log_softmax "log_softmax" (the layers' classes);
 *     the losses ampscope has (cross-entropy, its nll part, mse) are "loss";
 *   - fused attention (scaled_dot_product_attention, flash_attn) has no
 *     class: ampscope's attention places its matmuls and softmax one by one.
 */
#include "amp_lists.h"

#define LOW(n, m, c)                                                                               \
    {                                                                                              \
        n, AMP_LOW, m, c                                                                           \
    }
#define F32(n, m, c)                                                                               \
    {                                                                                              \
        n, AMP_FP32, m, c                                                                          \
    }
#define PROM(n, m, c)                                                                              \
    {                                                                                              \
        n, AMP_PROMOTE, m, c                                                                       \
    }
#define FOL(n, m, c)                                                                               \
    {                                                                                              \
        n, AMP_FOLLOW, m, c                                                                        \
    }
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* clang-format off */

/* PyTorch autocast, CUDA (AutocastCUDA): aten/src/ATen/autocast_mode.h's
 * AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
 * AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE (norm) and AT_FORALL_PROMOTE,
 * registered for CUDA in autocast_mode.cpp with cudnn_convolution and
 * cudnn_convolution_transpose.  Not listed for CUDA: batch_norm (cuDNN takes
 * fp16 inputs with fp32 weights and statistics; MPS lists it fp32),
 * cross_entropy_loss (CPU only: on CUDA it is log_softmax then nll_loss, both
 * fp32), add, cat, dropout, embedding, gelu, relu, max_pool2d (they run in
 * their inputs' type).  Autocast is O1; ampscope's O2/O3 with these lists is
 * autocast over a model in the low format: the fp32 list still runs in fp32. */
static const amp_op pytorch_ops[] = {
    LOW("_convolution.deprecated", AMP_ALL, "conv"), LOW("_convolution", AMP_ALL, "conv"),
    LOW("conv1d", AMP_ALL, "conv"), LOW("conv2d", AMP_ALL, "conv"), LOW("conv3d", AMP_ALL, "conv"),
    LOW("conv_tbc", AMP_ALL, "conv"), LOW("conv_transpose1d", AMP_ALL, "conv"),
    LOW("conv_transpose2d.input", AMP_ALL, "conv"), LOW("conv_transpose3d.input", AMP_ALL, "conv"),
    LOW("convolution", AMP_ALL, "conv"), LOW("prelu", AMP_ALL, NULL),
    LOW("addmm", AMP_ALL, "linear"), LOW("addmv", AMP_ALL, NULL), LOW("addr", AMP_ALL, NULL),
    LOW("matmul", AMP_ALL, "matmul"), LOW("einsum", AMP_ALL, NULL), LOW("mm", AMP_ALL, "matmul"),
    LOW("mv", AMP_ALL, NULL), LOW("linalg_vecdot", AMP_ALL, NULL), LOW("linear", AMP_ALL, "linear"),
    LOW("addbmm", AMP_ALL, "matmul"), LOW("baddbmm", AMP_ALL, "matmul"),
    LOW("bmm", AMP_ALL, "matmul"), LOW("chain_matmul", AMP_ALL, NULL),
    LOW("linalg_multi_dot", AMP_ALL, NULL), LOW("_thnn_fused_lstm_cell", AMP_ALL, NULL),
    LOW("_thnn_fused_gru_cell", AMP_ALL, NULL), LOW("lstm_cell", AMP_ALL, NULL),
    LOW("gru_cell", AMP_ALL, NULL), LOW("rnn_tanh_cell", AMP_ALL, NULL),
    LOW("rnn_relu_cell", AMP_ALL, NULL), LOW("_scaled_dot_product_flash_attention", AMP_ALL, NULL),
    LOW("scaled_dot_product_attention", AMP_ALL, NULL),
    LOW("cudnn_convolution", AMP_ALL, "conv"), LOW("cudnn_convolution_transpose", AMP_ALL, "conv"),
    F32("acos", AMP_ALL, NULL), F32("asin", AMP_ALL, NULL), F32("cosh", AMP_ALL, NULL),
    F32("erfinv", AMP_ALL, NULL), F32("exp", AMP_ALL, NULL), F32("expm1", AMP_ALL, NULL),
    F32("log", AMP_ALL, NULL), F32("log10", AMP_ALL, NULL), F32("log2", AMP_ALL, NULL),
    F32("log1p", AMP_ALL, NULL), F32("reciprocal", AMP_ALL, NULL), F32("rsqrt", AMP_ALL, NULL),
    F32("sinh", AMP_ALL, NULL), F32("tan", AMP_ALL, NULL), F32("pow.Tensor_Scalar", AMP_ALL, NULL),
    F32("pow.Tensor_Tensor", AMP_ALL, NULL), F32("pow.Scalar", AMP_ALL, NULL),
    F32("softplus", AMP_ALL, NULL), F32("layer_norm", AMP_ALL, "layernorm"),
    F32("native_layer_norm", AMP_ALL, "layernorm"), F32("group_norm", AMP_ALL, NULL),
    F32("frobenius_norm.dim", AMP_ALL, NULL), F32("nuclear_norm", AMP_ALL, NULL),
    F32("nuclear_norm.dim", AMP_ALL, NULL), F32("cosine_similarity", AMP_ALL, NULL),
    F32("poisson_nll_loss", AMP_ALL, NULL), F32("cosine_embedding_loss", AMP_ALL, NULL),
    F32("nll_loss", AMP_ALL, "loss"), F32("nll_loss2d", AMP_ALL, NULL),
    F32("hinge_embedding_loss", AMP_ALL, NULL), F32("kl_div", AMP_ALL, NULL),
    F32("l1_loss", AMP_ALL, NULL), F32("smooth_l1_loss", AMP_ALL, NULL),
    F32("huber_loss", AMP_ALL, NULL), F32("mse_loss", AMP_ALL, "loss"),
    F32("margin_ranking_loss", AMP_ALL, NULL), F32("multilabel_margin_loss", AMP_ALL, NULL),
    F32("soft_margin_loss", AMP_ALL, NULL), F32("triplet_margin_loss", AMP_ALL, NULL),
    F32("multi_margin_loss", AMP_ALL, NULL), F32("binary_cross_entropy_with_logits", AMP_ALL, NULL),
    F32("dist", AMP_ALL, NULL), F32("pdist", AMP_ALL, NULL), F32("cdist", AMP_ALL, NULL),
    F32("renorm", AMP_ALL, NULL), F32("logsumexp", AMP_ALL, NULL),
    F32("upsample_nearest1d", AMP_ALL, NULL), F32("_upsample_nearest_exact1d", AMP_ALL, NULL),
    F32("upsample_nearest2d", AMP_ALL, NULL), F32("_upsample_nearest_exact2d", AMP_ALL, NULL),
    F32("upsample_nearest3d", AMP_ALL, NULL), F32("_upsample_nearest_exact3d", AMP_ALL, NULL),
    F32("upsample_linear1d", AMP_ALL, NULL), F32("upsample_bilinear2d", AMP_ALL, NULL),
    F32("_upsample_bilinear2d_aa", AMP_ALL, NULL), F32("upsample_trilinear3d", AMP_ALL, NULL),
    F32("upsample_bicubic2d", AMP_ALL, NULL), F32("_upsample_bicubic2d_aa", AMP_ALL, NULL),
    /* fp32_set_opt_dtype */
    F32("prod", AMP_ALL, NULL), F32("prod.dim_int", AMP_ALL, NULL),
    F32("prod.dim_Dimname", AMP_ALL, NULL), F32("softmax.int", AMP_ALL, "softmax"),
    F32("softmax.Dimname", AMP_ALL, "softmax"), F32("log_softmax.int", AMP_ALL, "log_softmax"),
    F32("log_softmax.Dimname", AMP_ALL, "log_softmax"), F32("cumprod", AMP_ALL, NULL),
    F32("cumprod.dimname", AMP_ALL, NULL), F32("cumsum", AMP_ALL, NULL),
    F32("cumsum.dimname", AMP_ALL, NULL), F32("linalg_vector_norm", AMP_ALL, NULL),
    F32("linalg_matrix_norm", AMP_ALL, NULL), F32("linalg_matrix_norm.str_ord", AMP_ALL, NULL),
    F32("sum", AMP_ALL, NULL), F32("sum.dim_IntList", AMP_ALL, NULL),
    F32("sum.dim_DimnameList", AMP_ALL, NULL),
    /* fp32_append_dtype */
    F32("norm.Scalar", AMP_ALL, NULL), F32("norm.ScalarOpt_dim", AMP_ALL, NULL),
    F32("norm.names_ScalarOpt_dim", AMP_ALL, NULL),
    PROM("addcdiv", AMP_ALL, NULL), PROM("addcmul", AMP_ALL, NULL), PROM("atan2", AMP_ALL, NULL),
    PROM("bilinear", AMP_ALL, NULL), PROM("cross", AMP_ALL, NULL), PROM("dot", AMP_ALL, NULL),
    PROM("vdot", AMP_ALL, NULL), PROM("grid_sampler", AMP_ALL, NULL),
    PROM("index_put", AMP_ALL, NULL), PROM("tensordot", AMP_ALL, NULL),
    PROM("scatter_add", AMP_ALL, NULL),
};

/* Apex amp O1 (patch_torch_functions): apex/amp/lists/functional_overrides.py
 * (torch.nn.functional), torch_overrides.py (torch; the bmm family is FP16
 * from CUDA 9.1), tensor_overrides.py (torch.Tensor, which also takes
 * torch's names it has: not repeated here).  O2 and O3 patch no functions
 * (frontend.py); _initialize.py casts the model's outputs to fp32
 * (output_caster), so the loss computed on them runs in fp32. */
static const amp_op apex_ops[] = {
    LOW("F.conv1d", AMP_O1, "conv"), LOW("F.conv2d", AMP_O1, "conv"),
    LOW("F.conv3d", AMP_O1, "conv"), LOW("F.conv_transpose1d", AMP_O1, "conv"),
    LOW("F.conv_transpose2d", AMP_O1, "conv"), LOW("F.conv_transpose3d", AMP_O1, "conv"),
    LOW("F.conv_tbc", AMP_O1, "conv"), LOW("F.linear", AMP_O1, "linear"),
    F32("F.interpolate", AMP_O1, NULL), F32("F.softplus", AMP_O1, NULL),
    F32("F.softmin", AMP_O1, NULL), F32("F.log_softmax", AMP_O1, "log_softmax"),
    F32("F.softmax", AMP_O1, "softmax"), F32("F.layer_norm", AMP_O1, "layernorm"),
    F32("F.group_norm", AMP_O1, NULL), F32("F.local_response_norm", AMP_O1, NULL),
    F32("F.normalize", AMP_O1, NULL), F32("F.cosine_similarity", AMP_O1, NULL),
    F32("F.poisson_nll_loss", AMP_O1, NULL), F32("F.cosine_embedding_loss", AMP_O1, NULL),
    F32("F.cross_entropy", AMP_O1, "loss"), F32("F.hinge_embedding_loss", AMP_O1, NULL),
    F32("F.kl_div", AMP_O1, NULL), F32("F.l1_loss", AMP_O1, NULL),
    F32("F.mse_loss", AMP_O1, "loss"), F32("F.margin_ranking_loss", AMP_O1, NULL),
    F32("F.multilabel_margin_loss", AMP_O1, NULL),
    F32("F.multilabel_soft_margin_loss", AMP_O1, NULL), F32("F.multi_margin_loss", AMP_O1, NULL),
    F32("F.nll_loss", AMP_O1, "loss"), F32("F.binary_cross_entropy_with_logits", AMP_O1, NULL),
    F32("F.smooth_l1_loss", AMP_O1, NULL), F32("F.soft_margin_loss", AMP_O1, NULL),
    F32("F.triplet_margin_loss", AMP_O1, NULL),
    LOW("torch.conv1d", AMP_O1, "conv"), LOW("torch.conv2d", AMP_O1, "conv"),
    LOW("torch.conv3d", AMP_O1, "conv"), LOW("torch.conv_transpose1d", AMP_O1, "conv"),
    LOW("torch.conv_transpose2d", AMP_O1, "conv"), LOW("torch.conv_transpose3d", AMP_O1, "conv"),
    LOW("torch.conv_tbc", AMP_O1, "conv"), LOW("torch.prelu", AMP_O1, NULL),
    LOW("torch.addmm", AMP_O1, "linear"), LOW("torch.addmv", AMP_O1, NULL),
    LOW("torch.addr", AMP_O1, NULL), LOW("torch.matmul", AMP_O1, "matmul"),
    LOW("torch.mm", AMP_O1, "matmul"), LOW("torch.mv", AMP_O1, NULL),
    LOW("torch.addbmm", AMP_O1, "matmul"), LOW("torch.baddbmm", AMP_O1, "matmul"),
    LOW("torch.bmm", AMP_O1, "matmul"),
    F32("torch.acos", AMP_O1, NULL), F32("torch.asin", AMP_O1, NULL),
    F32("torch.cosh", AMP_O1, NULL), F32("torch.erfinv", AMP_O1, NULL),
    F32("torch.exp", AMP_O1, NULL), F32("torch.expm1", AMP_O1, NULL),
    F32("torch.log", AMP_O1, NULL), F32("torch.log10", AMP_O1, NULL),
    F32("torch.log2", AMP_O1, NULL), F32("torch.reciprocal", AMP_O1, NULL),
    F32("torch.rsqrt", AMP_O1, NULL), F32("torch.sinh", AMP_O1, NULL),
    F32("torch.tan", AMP_O1, NULL), F32("torch.pow", AMP_O1, NULL),
    F32("torch.cumprod", AMP_O1, NULL), F32("torch.cumsum", AMP_O1, NULL),
    F32("torch.dist", AMP_O1, NULL), F32("torch.norm", AMP_O1, NULL),
    F32("torch.prod", AMP_O1, NULL), F32("torch.std", AMP_O1, NULL),
    F32("torch.sum", AMP_O1, NULL), F32("torch.var", AMP_O1, NULL),
    F32("torch.renorm", AMP_O1, NULL),
    PROM("torch.addcdiv", AMP_O1, NULL), PROM("torch.addcmul", AMP_O1, NULL),
    PROM("torch.atan2", AMP_O1, NULL), PROM("torch.cross", AMP_O1, NULL),
    PROM("torch.bilinear", AMP_O1, NULL), PROM("torch.dot", AMP_O1, NULL),
    PROM("torch.add", AMP_O1, "add"), PROM("torch.div", AMP_O1, NULL),
    PROM("torch.mul", AMP_O1, NULL), PROM("torch.eq", AMP_O1, NULL),
    PROM("torch.equal", AMP_O1, NULL), PROM("torch.ge", AMP_O1, NULL),
    PROM("torch.gt", AMP_O1, NULL), PROM("torch.le", AMP_O1, NULL),
    PROM("torch.lt", AMP_O1, NULL), PROM("torch.ne", AMP_O1, NULL),
    PROM("torch.cat", AMP_O1, NULL), PROM("torch.stack", AMP_O1, NULL), /* SEQUENCE_CASTS */
    LOW("Tensor.__matmul__", AMP_O1, "matmul"),
    F32("Tensor.__ipow__", AMP_O1, NULL), F32("Tensor.__pow__", AMP_O1, NULL),
    F32("Tensor.__rpow__", AMP_O1, NULL), F32("Tensor.cpu", AMP_O1, NULL),
    PROM("Tensor.__add__", AMP_O1, "add"), PROM("Tensor.__div__", AMP_O1, NULL),
    PROM("Tensor.__eq__", AMP_O1, NULL), PROM("Tensor.__ge__", AMP_O1, NULL),
    PROM("Tensor.__gt__", AMP_O1, NULL), PROM("Tensor.__iadd__", AMP_O1, "add"),
    PROM("Tensor.__idiv__", AMP_O1, NULL), PROM("Tensor.__imul__", AMP_O1, NULL),
    PROM("Tensor.__isub__", AMP_O1, NULL), PROM("Tensor.__itruediv__", AMP_O1, NULL),
    PROM("Tensor.__le__", AMP_O1, NULL), PROM("Tensor.__lt__", AMP_O1, NULL),
    PROM("Tensor.__mul__", AMP_O1, NULL), PROM("Tensor.__ne__", AMP_O1, NULL),
    PROM("Tensor.__radd__", AMP_O1, "add"), PROM("Tensor.__rdiv__", AMP_O1, NULL),
    PROM("Tensor.__rmul__", AMP_O1, NULL), PROM("Tensor.__rsub__", AMP_O1, NULL),
    PROM("Tensor.__rtruediv__", AMP_O1, NULL), PROM("Tensor.__sub__", AMP_O1, NULL),
    PROM("Tensor.__truediv__", AMP_O1, NULL),
    F32("_initialize output_caster: model outputs to fp32", AMP_O2 | AMP_O3, "loss"),
};

/* Paddle: python/paddle/amp/amp_lists.py (dygraph, fp16): FP16_WHITE_LIST in
 * O1 and O2; FP16_BLACK_LIST in O1 only; EXTRA_BLACK_LIST in O1 and O2.  The
 * gray list is python/paddle/static/amp/fp16_lists.py's gray_list (ops that
 * follow their inputs; layer_norm is there too, but its black entry wins).
 * Paddle has no O3: ampscope's O3 takes O2's lists. */
#define P12 (AMP_O1 | AMP_O2 | AMP_O3)
static const amp_op paddle_ops[] = {
    LOW("conv2d", P12, "conv"), LOW("einsum", P12, NULL), LOW("matmul", P12, "matmul"),
    LOW("matmul_v2", P12, "matmul"), LOW("matmul_v2", P12, "linear"), /* nn.Linear's GEMM */
    LOW("max_pool2d_with_index", P12, NULL), /* return_mask=True only; MaxPool2D runs pool2d */
    LOW("mul", P12, "linear"), LOW("fused_gemm_epilogue", P12, "linear"),
    LOW("fused_rotary_position_embedding", P12, NULL), LOW("flash_attn", P12, NULL),
    LOW("fake_quantize_dequantize_abs_max", P12, NULL),
    LOW("fake_quantize_dequantize_moving_average_abs_max", P12, NULL),
    LOW("fused_attention", P12, NULL), LOW("fused_feedforward", P12, NULL),
    F32("tan", AMP_O1, NULL), F32("acos", AMP_O1, NULL), F32("asin", AMP_O1, NULL),
    F32("sinh", AMP_O1, NULL), F32("cosh", AMP_O1, NULL), F32("atanh", AMP_O1, NULL),
    F32("tanh_shrink", AMP_O1, NULL), F32("erfinv", AMP_O1, NULL), F32("exp", AMP_O1, NULL),
    F32("expm1", AMP_O1, NULL), F32("log", AMP_O1, NULL), F32("log10", AMP_O1, NULL),
    F32("log2", AMP_O1, NULL), F32("reciprocal", AMP_O1, NULL), F32("rsqrt", AMP_O1, NULL),
    F32("pow", AMP_O1, NULL), F32("square", AMP_O1, NULL), F32("reduce_sum", AMP_O1, NULL),
    F32("mean", AMP_O1, NULL), F32("reduce_mean", AMP_O1, NULL),
    F32("reduce_prod", AMP_O1, NULL), F32("cumprod", AMP_O1, NULL), F32("cumsum", AMP_O1, NULL),
    F32("dist", AMP_O1, NULL), F32("pnorm", AMP_O1, NULL), F32("frobenius_norm", AMP_O1, NULL),
    F32("renorm", AMP_O1, NULL), F32("group_norm", AMP_O1, NULL),
    F32("layer_norm", AMP_O1, "layernorm"), F32("softmax", AMP_O1, "softmax"),
    F32("softmin", AMP_O1, NULL), F32("softplus", AMP_O1, NULL),
    F32("log_softmax", AMP_O1, "log_softmax"), F32("softmax_with_cross_entropy", AMP_O1, "loss"),
    F32("sigmoid_cross_entropy_with_logits", AMP_O1, NULL),
    F32("c_softmax_with_cross_entropy", AMP_O1, NULL), F32("cross_entropy", AMP_O1, "loss"),
    F32("cross_entropy2", AMP_O1, "loss"), F32("nll_loss", AMP_O1, "loss"),
    F32("huber_loss", AMP_O1, NULL), F32("triplet_margin_loss", AMP_O1, NULL),
    F32("log_loss", AMP_O1, NULL), F32("hsigmoid_loss", AMP_O1, NULL),
    F32("margin_cross_entropy", AMP_O1, NULL),
    F32("linear_interp_v2", P12, NULL), F32("nearest_interp_v2", P12, NULL),
    F32("bilinear_interp_v2", P12, NULL), F32("bicubic_interp_v2", P12, NULL),
    F32("trilinear_interp_v2", P12, NULL), F32("lookup_table", P12, "embedding"),
    F32("lookup_table_v2", P12, "embedding"), F32("scatter", P12, NULL),
    FOL("elementwise_add", P12, "add"), FOL("elementwise_sub", P12, NULL),
    FOL("elementwise_mul", P12, NULL), FOL("elementwise_div", P12, NULL),
    FOL("elementwise_max", P12, NULL), FOL("elementwise_min", P12, NULL),
    FOL("elementwise_pow", P12, NULL), FOL("elementwise_mod", P12, NULL),
    FOL("elementwise_floordiv", P12, NULL), FOL("batch_norm", P12, "batchnorm"),
    FOL("layer_norm", P12, "layernorm"), FOL("tanh", P12, NULL), FOL("sigmoid", P12, NULL),
    FOL("top_k", P12, NULL), FOL("pool2d", P12, "maxpool"), FOL("pool2d", P12, "avgpool"),
    FOL("pool3d", P12, NULL), FOL("dropout", P12, "dropout"), FOL("relu", P12, "relu"),
    FOL("relu6", P12, NULL), FOL("leaky_relu", P12, NULL), FOL("soft_relu", P12, NULL),
    FOL("flatten2", P12, NULL), FOL("stack", P12, NULL), FOL("unstack", P12, NULL),
    FOL("uniform_random", P12, NULL), FOL("uniform_random_batch_size_like", P12, NULL),
    FOL("gaussian_random", P12, NULL), FOL("slice", P12, NULL), FOL("rank", P12, NULL),
    FOL("scale", P12, NULL), FOL("transpose2", P12, NULL), FOL("reshape2", P12, NULL),
    FOL("gather", P12, NULL), FOL("fill_constant", P12, NULL),
    FOL("get_tensor_from_selected_rows", P12, NULL), FOL("sign", P12, NULL),
    FOL("cast", P12, NULL), FOL("fused_bn_add_activation", P12, NULL),
    FOL("c_identity", P12, NULL), FOL("c_concat", P12, NULL), FOL("c_allreduce_sum", P12, NULL),
    FOL("concat", P12, NULL), FOL("split", P12, NULL), FOL("fused_feedforward", P12, NULL),
    FOL("fused_attention", P12, NULL), FOL("fused_multi_transformer", P12, NULL),
};
#undef P12

/* MindSpore: mindspore/python/mindspore/train/amp.py.  O1 (auto_mixed_
 * precision): AMP_WHITE_LIST's ops run in float16 and cast their outputs back
 * to float32; everything else stays float32.  O2 (build_train_network):
 * to_float(float16), then _do_keep_batchnorm_fp32 puts AMP_BLACK_LIST's cells
 * back in float32, and WithLossCell casts the network's output to float32
 * before loss_fn.  O3: to_float(float16), keep_batchnorm_fp32 False; the
 * same WithLossCell (cast_model_type float16) still feeds the loss float32. */
static const amp_op mindspore_ops[] = {
    LOW("nn.Conv1d", AMP_O1, "conv"), LOW("nn.Conv2d", AMP_O1, "conv"),
    LOW("nn.Conv3d", AMP_O1, "conv"), LOW("nn.Conv1dTranspose", AMP_O1, "conv"),
    LOW("nn.Conv2dTranspose", AMP_O1, "conv"), LOW("nn.Conv3dTranspose", AMP_O1, "conv"),
    LOW("nn.Dense", AMP_O1, "linear"), LOW("nn.LSTMCell", AMP_O1, NULL),
    LOW("nn.RNNCell", AMP_O1, NULL), LOW("nn.GRUCell", AMP_O1, NULL),
    LOW("P.Conv2D", AMP_O1, "conv"), LOW("P.Conv3D", AMP_O1, "conv"),
    LOW("P.Conv2DTranspose", AMP_O1, "conv"), LOW("P.Conv3DTranspose", AMP_O1, "conv"),
    LOW("P.Conv2DBackpropInput", AMP_O1, "conv"), LOW("P.MatMul", AMP_O1, "matmul"),
    LOW("P.BatchMatMul", AMP_O1, "matmul"), LOW("P.PReLU", AMP_O1, NULL),
    LOW("P.ReLU", AMP_O1, "relu"), LOW("P.Ger", AMP_O1, NULL),
    F32("nn.BatchNorm1d", AMP_O2, "batchnorm"), F32("nn.BatchNorm2d", AMP_O2, "batchnorm"),
    F32("nn.BatchNorm3d", AMP_O2, "batchnorm"), F32("nn.LayerNorm", AMP_O2, "layernorm"),
    F32("WithLossCell: loss_fn on float32", AMP_O2 | AMP_O3, "loss"),
};

/* clang-format on */

const amp_preset amp_presets[] = {
    {"pytorch",
     "pytorch/pytorch aten/src/ATen/autocast_mode.h (commit d70fe7f3) and "
     "autocast_mode.cpp (commit 008ec6b1): the CUDA lists",
     pytorch_ops,
     COUNT(pytorch_ops),
     AMP_FOLLOW,
     {false, true, false, false},
     "O1: batch_norm is in no list and its weights stay fp32 (cuDNN takes fp16 inputs with "
     "fp32 weights and statistics); PyTorch has no O2/O3"},
    {"apex",
     "NVIDIA/apex apex/amp/lists/functional_overrides.py (commit 47e9cae5), torch_overrides.py "
     "(03421e87), tensor_overrides.py (76c2252e); apex/amp/frontend.py O1-O3 (04667139) and "
     "_initialize.py (output_caster)",
     apex_ops,
     COUNT(apex_ops),
     AMP_FOLLOW,
     {false, true, true, false},
     "frontend.py: O2 keep_batchnorm_fp32=True, O3 False; O1 None (batch_norm takes fp16 "
     "inputs with the fp32 weights, functional_overrides.py)"},
    {"paddle",
     "PaddlePaddle/Paddle python/paddle/amp/amp_lists.py (commit d40e2b24) and "
     "python/paddle/static/amp/fp16_lists.py gray_list (977c9a29); "
     "python/paddle/amp/auto_cast.py need_keep_fp32",
     paddle_ops,
     COUNT(paddle_ops),
     AMP_FOLLOW,
     {false, true, true, false},
     "auto_cast.py need_keep_fp32: decorate(level='O2') keeps BatchNorm's parameters fp32; "
     "in O1 the model is not cast; Paddle has no O3"},
    {"mindspore",
     "mindspore-ai/mindspore mindspore/python/mindspore/train/amp.py (commit 30edb995): "
     "AMP_WHITE_LIST, AMP_BLACK_LIST, _config_level, WithLossCell",
     mindspore_ops,
     COUNT(mindspore_ops),
     AMP_FP32,
     {false, false, true, false},
     "train/amp.py _config_level: keep_batchnorm_fp32 True in O2 only"},
};
const int amp_preset_count = COUNT(amp_presets);
