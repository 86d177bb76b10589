/* add.c: fpe_<fmt>_add and fpe_<fmt>_sub (the arithmetic is in ops/add.h), and fp32's on the
 * host's instructions (scalar_host.h). */
#include "fpe_ops.h"
#include "scalar_host.h"

/* The general path and the index step, out of line: the public functions'
 * fast path then needs no stack frame. */
static __attribute__((noinline)) uint32_t add_general_next(fpe_format_id f, fpe_env *env,
                                                           uint32_t a, uint32_t b, bool subtract)
{
    FPE_NEXT_INDEX(env, fpe_add_general(f, env, a, b, subtract));
}

#define DEFINE_ONE(NAME, T, K, SUB)                                                                \
    static inline __attribute__((always_inline)) T NAME(fpe_env *env, T a, T b)                    \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fpe_add_fast(K, env, a, b, SUB, &r)) {                                                 \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)add_general_next(K, env, a, b, SUB);                                             \
    }
#define DEFINE(F, T, K)                                                                            \
    DEFINE_ONE(F##_add_portable, T, K, false) DEFINE_ONE(F##_sub_portable, T, K, true)
FPE_FOR_FORMATS(DEFINE)

uint16_t fpe_f16_add(fpe_env *env, uint16_t a, uint16_t b) { return f16_add_portable(env, a, b); }
uint16_t fpe_f16_sub(fpe_env *env, uint16_t a, uint16_t b) { return f16_sub_portable(env, a, b); }
uint16_t fpe_bf16_add(fpe_env *env, uint16_t a, uint16_t b) { return bf16_add_portable(env, a, b); }
uint16_t fpe_bf16_sub(fpe_env *env, uint16_t a, uint16_t b) { return bf16_sub_portable(env, a, b); }

#if FPE_SCALAR_HOST
/* fp32 (scalar_host.h): the widened operands' sum (b's sign flipped for sub) is exact in
 * binary64 when both are normal and their exponent fields differ by at most 29 (X 2^29 + Y <
 * 2^53 for significands X, Y < 2^24), rounded once by its bits; the checks are combined without
 * branches (which operand is larger is random).  A subnormal operand (which the
 * MXCSR's DAZ would flush in cvtss2sd), a wider gap and a sum outside [2^-126, 2^127), which
 * includes every zero (the sign of an exact zero sum depends on the mode), infinite or NaN
 * case, take the portable code. */
#define HOST_ADD(NAME, MODE, OP, NEG)                                                              \
    static uint32_t NAME(fpe_env *env, uint32_t a, uint32_t b)                                     \
    {                                                                                              \
        const uint32_t ea = a >> 23 & 0xFF, eb = b >> 23 & 0xFF;                                   \
        const uint64_t u =                                                                         \
            HOST_BITS_B64(_mm_add_sd(HOST_WIDEN_F32(a), HOST_WIDEN_F32(b ^ (NEG))));               \
        const bool easy = ea - 1 <= 253u && eb - 1 <= 253u && ea - eb + 29 <= 58u;                 \
        if (!(easy & host_in_range_b64(u))) return f32_##OP##_slow(env, a, b);                     \
        return host_round_b64(env, u, 24, MODE);                                                   \
    }
#define HOST_ADD_OPERATION(OP, NEG)                                                                \
    static __attribute__((noinline))                                                               \
    uint32_t f32_##OP##_slow(fpe_env *env, uint32_t a, uint32_t b)                                 \
    {                                                                                              \
        return f32_##OP##_portable(env, a, b);                                                     \
    }                                                                                              \
    HOST_KERNELS_B64(HOST_ADD, f32_host_##OP, OP, NEG)                                             \
    HOST_PUBLIC(FPE_HOST_SCALAR_B64, uint32_t, fpe_f32_##OP,                                       \
                (fpe_env * env, uint32_t a, uint32_t b), (env, a, b), f32_host_##OP,               \
                f32_##OP##_portable)
HOST_ADD_OPERATION(add, 0)
HOST_ADD_OPERATION(sub, 0x80000000u)
#else
uint32_t fpe_f32_add(fpe_env *env, uint32_t a, uint32_t b) { return f32_add_portable(env, a, b); }
uint32_t fpe_f32_sub(fpe_env *env, uint32_t a, uint32_t b) { return f32_sub_portable(env, a, b); }
#endif
