/* allreduce_presets.c: the frameworks' gradient all-reduce as data rows (allreduce.h), each
 * taken from its source; the operation order of each row, as allreduce.h's steps say:
 *
 *   pytorch-fp32       DDP without a hook: torch/csrc/distributed/c10d/reducer.cpp
 *                      Reducer::mark_variable_ready_dense copies each gradient into the bucket
 *                      with at::mul_out(bucket_view, grad, wrapped_scalar_tensor(1. /
 *                      div_factor_)) (fp32 x RN_f32(1/N)), then the fp32 all-reduce (sum);
 *                      with gradient_as_bucket_view the bucket is divided in place instead,
 *                      the same product on CUDA.
 *   pytorch-fp16-hook  torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py
 *   pytorch-bf16-hook  _compress_hook: buffer.to(dtype).div_(world_size): cast first, then
 *                      the division in the low format, which on CUDA is the product with the
 *                      fp32 reciprocal in fp32 opmath (aten/src/ATen/native/cuda/
 *                      BinaryDivTrueKernel.cu div_true_kernel_cuda, "compute a *
 *                      reciprocal(b)"), then the fp16/bf16 all-reduce; decompress copies the
 *                      sum back into the fp32 bucket (exact).  (The 2020 hook divided after
 *                      the sum; the current one divides first.)
 *   apex               apex/parallel/distributed.py DistributedDataParallel.allreduce_bucket:
 *                      the model's fp16 gradients; gradient_predivide_factor 1.0 (no
 *                      pre-scale); all-reduce in fp16; gradient_average: mul_(predivide /
 *                      world_size) on the fp16 sum (unconditional in Apex: when predivide is
 *                      the world size that is a product by 1.0, exact, which the row skips).
 *   apex-fp32          the same with allreduce_always_fp32=True: tensor.float() (exact), the
 *                      fp32 all-reduce and post-scale, tensor.copy_ back into the fp16 grads.
 *   apex-predivide     gradient_predivide_factor = the world size: mul_(1. / f) in fp16 before
 *                      the sum, no post-scale (f == world_size).
 *   megatron-fp32      megatron/core/distributed/param_and_grad_buffer.py start_grad_sync with
 *                      grad_reduce_in_fp32 (accumulate_allreduce_grads_in_fp32): the fp32
 *                      main_grad buffer, grad_data *= gradient_scaling_factor (1 / dp size),
 *                      then the fp32 all-reduce (ReduceOp.SUM), as the source reads:
 *                      "if bucket.gradient_scaling_factor != 1.0: bucket.grad_data *=
 *                      bucket.gradient_scaling_factor" before the collective.
 *   megatron-bf16      the same without it: the buffer in the params' bf16, scaled in bf16.
 *                      (With average_in_collective Megatron asks NCCL for ReduceOp.AVG
 *                      instead: not modelled here.)
 *   deepspeed-fp16     deepspeed/runtime/engine.py DeepSpeedEngine.allreduce_bucket: the
 *   deepspeed-fp32     model's fp16 gradients cast to communication_data_type (fp16, the
 *                      default, or fp32); postscale_gradients (the default: prescale_gradients
 *                      false) with gradient_predivide_factor 1.0: all-reduce, then
 *                      mul_(predivide / dp_world_size); copy_ back into the fp16 gradients.
 *   deepspeed-bf16     the same for a bf16 model: bf16 gradients, communication in bf16.
 *   deepspeed-prescale prescale_gradients true: tensor_to_allreduce.div_(dp_world_size) in
 *                      fp16, then the all-reduce.
 */
#include <stddef.h>
#include <string.h>

#include "allreduce.h"

#define F16  FPE_FMT_F16
#define BF16 FPE_FMT_BF16
#define F32  FPE_FMT_F32
#define CAST AR_ORDER_CAST_FIRST

const ar_config ar_presets[] = {
    {"pytorch-fp32", F32, F32, CAST, 0, 0,
     "torch/csrc/distributed/c10d/reducer.cpp Reducer::mark_variable_ready_dense (mul_out by "
     "1/world_size), fp32 all_reduce"},
    {"pytorch-fp16-hook", F32, F16, CAST, 0, 0,
     "torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py fp16_compress_hook "
     "(_compress_hook: buffer.to(float16).div_(world_size))"},
    {"pytorch-bf16-hook", F32, BF16, CAST, 0, 0,
     "torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py bf16_compress_hook "
     "(_compress_hook: buffer.to(bfloat16).div_(world_size))"},
    {"apex", F16, F16, CAST, 1, 1,
     "apex/parallel/distributed.py DistributedDataParallel.allreduce_bucket "
     "(gradient_predivide_factor 1.0, gradient_average)"},
    {"apex-fp32", F16, F32, CAST, 1, 1,
     "apex/parallel/distributed.py DistributedDataParallel.allreduce_bucket "
     "(allreduce_always_fp32=True)"},
    {"apex-predivide", F16, F16, CAST, 0, 1,
     "apex/parallel/distributed.py DistributedDataParallel.allreduce_bucket "
     "(gradient_predivide_factor=world_size)"},
    {"megatron-fp32", F32, F32, CAST, 0, 0,
     "megatron/core/distributed/param_and_grad_buffer.py start_grad_sync "
     "(grad_reduce_in_fp32: grad_data *= gradient_scaling_factor)"},
    {"megatron-bf16", BF16, BF16, CAST, 0, 0,
     "megatron/core/distributed/param_and_grad_buffer.py start_grad_sync "
     "(bf16 grad buffer: grad_data *= gradient_scaling_factor)"},
    {"deepspeed-fp16", F16, F16, CAST, 1, 1,
     "deepspeed/runtime/engine.py DeepSpeedEngine.allreduce_bucket "
     "(communication_data_type fp16, postscale_gradients)"},
    {"deepspeed-bf16", BF16, BF16, CAST, 1, 1,
     "deepspeed/runtime/engine.py DeepSpeedEngine.allreduce_bucket "
     "(bf16 gradients, communication_data_type bf16, postscale_gradients)"},
    {"deepspeed-fp32", F16, F32, CAST, 1, 1,
     "deepspeed/runtime/engine.py DeepSpeedEngine.allreduce_bucket "
     "(communication_data_type fp32, postscale_gradients)"},
    {"deepspeed-prescale", F16, F16, CAST, 0, 0,
     "deepspeed/runtime/engine.py DeepSpeedEngine.allreduce_bucket "
     "(prescale_gradients: div_(dp_world_size) before all_reduce)"},
    {NULL, F32, F32, CAST, 0, 0, NULL},
};

const ar_config *ar_preset(const char *name)
{
    if (!name) return NULL;
    for (const ar_config *p = ar_presets; p->name; p++)
        if (strcmp(p->name, name) == 0) return p;
    return NULL;
}

const char *ar_preset_names(void)
{
    static char names[512];
    if (!names[0]) {
        size_t used = 0;
        for (const ar_config *p = ar_presets; p->name; p++) {
            const size_t len = strlen(p->name);
            if (used + len + 3 >= sizeof names) break;
            if (used) {
                memcpy(names + used, ", ", 2);
                used += 2;
            }
            memcpy(names + used, p->name, len + 1);
            used += len;
        }
    }
    return names;
}
