/* add.c: fpe_<fmt>_add and fpe_<fmt>_sub (the arithmetic is in ops/add.h), and on the host's
 * instructions (scalar_host.h). */
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

#if FPE_SCALAR_HOST
/* fp16 on F16C (scalar_host.h): the sum of the widened operands (b's sign flipped for sub) is
 * exact in binary64 (fp16 numbers are multiples of 2^-24 below 2^16: 40 bits), rounded to odd
 * at 24 bits and then to fp16 (24 >= 11 + 2: Boldo and Melquiond); a sum outside
 * [2^-14, 2^15), which includes every zero (the sign of an exact zero sum depends on the mode),
 * infinite or NaN case, takes the portable code. */
#define HW_ADDSUB(NAME, IMM, HALF, ODD, OP, NEG)                                                   \
    F16C_TARGET static uint16_t NAME(fpe_env *env, uint16_t a, uint16_t b)                         \
    {                                                                                              \
        const uint64_t u =                                                                         \
            HOST_BITS_B64(_mm_add_sd(F16C_WIDEN_B64(a), F16C_WIDEN_B64(b ^ (NEG))));               \
        if (!f16c_in_range_f64(u)) return f16_##OP##_slow(env, a, b);                              \
        return F16C_ROUND(env, f16c_odd_f32(u), IMM, HALF, ODD);                                   \
    }
#define HW_ADD(NAME, IMM, HALF, ODD) HW_ADDSUB(NAME, IMM, HALF, ODD, add, 0)
#define HW_SUB(NAME, IMM, HALF, ODD) HW_ADDSUB(NAME, IMM, HALF, ODD, sub, 0x8000)

/* bf16 and fp32 (scalar_host.h): the widened operands' sum (b's sign flipped for sub) is exact
 * in binary64 when both are normal and their exponent fields differ by at most GAP (bf16: 45,
 * X 2^45 + Y < 2^53 for significands X, Y < 2^8; fp32: 29, for X, Y < 2^24), rounded once by
 * its bits; the checks are combined without branches (which operand is larger is random).  A
 * subnormal operand (which the MXCSR's DAZ would flush in cvtss2sd), a wider gap and a sum
 * outside [2^-126, 2^127), which includes every zero, infinite or NaN case, take the portable
 * code. */
#define HOST_ADD(NAME, MODE, OP, F, T, P, GAP, WIDEN, NEG)                                         \
    static T NAME(fpe_env *env, T a, T b)                                                          \
    {                                                                                              \
        const uint32_t ea = (uint32_t)a >> (P - 1) & 0xFF, eb = (uint32_t)b >> (P - 1) & 0xFF;     \
        const uint64_t u = HOST_BITS_B64(_mm_add_sd(WIDEN(a), WIDEN(b ^ (NEG))));                  \
        const bool easy = ea - 1 <= 253u && eb - 1 <= 253u && ea - eb + GAP <= 2u * GAP;           \
        if (!(easy & host_in_range_b64(u))) return F##_##OP##_slow(env, a, b);                     \
        return (T)host_round_b64(env, u, P, MODE);                                                 \
    }

/* The out-of-line portable code (the kernels then need no stack frame) */
#define ADD_SLOW(F, T, OP)                                                                         \
    static __attribute__((noinline)) T F##_##OP##_slow(fpe_env *env, T a, T b)                     \
    {                                                                                              \
        return F##_##OP##_portable(env, a, b);                                                     \
    }
#define ADD_PUBLIC(NEED, F, T, OP)                                                                 \
    HOST_PUBLIC(NEED, T, fpe_##F##_##OP, (fpe_env * env, T a, T b), (env, a, b), F##_host_##OP,    \
                F##_##OP##_portable)

ADD_SLOW(f16, uint16_t, add)
ADD_SLOW(f16, uint16_t, sub)
F16C_KERNELS(HW_ADD, f16_host_add)
F16C_KERNELS(HW_SUB, f16_host_sub)
ADD_PUBLIC(FPE_HOST_SCALAR_F16C, f16, uint16_t, add)
ADD_PUBLIC(FPE_HOST_SCALAR_F16C, f16, uint16_t, sub)

#define HOST_ADD_OPERATION(F, T, P, GAP, WIDEN, OP, NEG)                                           \
    ADD_SLOW(F, T, OP)                                                                             \
    HOST_KERNELS_B64(HOST_ADD, F##_host_##OP, OP, F, T, P, GAP, WIDEN, NEG)                        \
    ADD_PUBLIC(FPE_HOST_SCALAR_B64, F, T, OP)
HOST_ADD_OPERATION(bf16, uint16_t, 8, 45, HOST_WIDEN_BF16, add, 0)
HOST_ADD_OPERATION(bf16, uint16_t, 8, 45, HOST_WIDEN_BF16, sub, 0x8000)
HOST_ADD_OPERATION(f32, uint32_t, 24, 29, HOST_WIDEN_F32, add, 0)
HOST_ADD_OPERATION(f32, uint32_t, 24, 29, HOST_WIDEN_F32, sub, 0x80000000u)
#else
uint16_t fpe_f16_add(fpe_env *env, uint16_t a, uint16_t b) { return f16_add_portable(env, a, b); }
uint16_t fpe_f16_sub(fpe_env *env, uint16_t a, uint16_t b) { return f16_sub_portable(env, a, b); }
uint16_t fpe_bf16_add(fpe_env *env, uint16_t a, uint16_t b) { return bf16_add_portable(env, a, b); }
uint16_t fpe_bf16_sub(fpe_env *env, uint16_t a, uint16_t b) { return bf16_sub_portable(env, a, b); }
uint32_t fpe_f32_add(fpe_env *env, uint32_t a, uint32_t b) { return f32_add_portable(env, a, b); }
uint32_t fpe_f32_sub(fpe_env *env, uint32_t a, uint32_t b) { return f32_sub_portable(env, a, b); }
#endif
