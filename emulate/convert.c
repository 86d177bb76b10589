/* convert.c: conversions between fp16, bf16 and fp32 (ops/convert.h). */
#include "fpe_ops.h"

#define DEFINE(NAME, TO_T, FROM_T, FROM, TO)                                                       \
    TO_T fpe_##NAME(fpe_env *env, FROM_T a)                                                        \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (TO_T)fpe_convert_k(FROM, TO, env, a));                                \
    }
DEFINE(f16_to_f32, uint32_t, uint16_t, FPE_FMT_F16, FPE_FMT_F32)
DEFINE(f32_to_f16, uint16_t, uint32_t, FPE_FMT_F32, FPE_FMT_F16)
DEFINE(bf16_to_f32, uint32_t, uint16_t, FPE_FMT_BF16, FPE_FMT_F32)
DEFINE(f32_to_bf16, uint16_t, uint32_t, FPE_FMT_F32, FPE_FMT_BF16)
DEFINE(f16_to_bf16, uint16_t, uint16_t, FPE_FMT_F16, FPE_FMT_BF16)
DEFINE(bf16_to_f16, uint16_t, uint16_t, FPE_FMT_BF16, FPE_FMT_F16)
