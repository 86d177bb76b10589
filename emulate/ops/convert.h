/* convert.h: conversions between fp16, bf16, fp32 and binary64, and to and
 * from the integer types. */
#ifndef AMPSCOPE_OPS_CONVERT_H
#define AMPSCOPE_OPS_CONVERT_H
#include "../fpe_internal.h"

/* Format `from` to format `to`, rounding in env->round. */
FPE_INLINE uint32_t fpe_convert_k(fpe_format_id from, fpe_format_id to, fpe_env *env, uint32_t a)
{
    /* the fast path: a normal operand is exact in binary64 (fpe_round_f64_fast) */
    uint32_t r;
    if (fk_is_normal(from, a) && fpe_round_f64_fast(to, env, fpe_normal_to_f64_bits(from, a), &r))
        return r;
    const fpe_unp u = fpe_unpack(from, env, a);
    const uint32_t sbit = u.sign ? fk_sign(to) : 0;
    switch (u.cls) {
    case FPE_CLS_NAN:
        if (fpe_issnan_k(from, a)) env->flags |= FPE_FLAG_INVALID;
        if (env->nan == FPE_NAN_CUDA && from == FPE_FMT_BF16 && to == FPE_FMT_F32) return a << 16;
        return fpe_nan_from_payload(to, env, u.sign, fpe_nan_payload(from, a));
    case FPE_CLS_INF: return sbit | fk_inf(to);
    case FPE_CLS_ZERO: return sbit;
    default: return fpe_round_pack(to, env, u.sign, u.exp, u.sig);
    }
}

/* binary64 -> format */
FPE_INLINE uint32_t fpe_from_f64_k(fpe_format_id to, fpe_env *env, double d)
{
    const uint64_t u = fpe_f64_bits(d);
    uint32_t r;
    if (fpe_round_f64_fast(to, env, u, &r)) return r; /* normal in, normal out, an IEEE mode */
    const bool sign = u >> 63;
    const uint32_t sbit = sign ? fk_sign(to) : 0;
    const uint32_t ef = (uint32_t)(u >> 52) & 0x7FF;
    const uint64_t frac = u & (((uint64_t)1 << 52) - 1);
    if (ef == 0x7FF) {
        if (frac == 0) return sbit | fk_inf(to);
        if (!(frac >> 51)) env->flags |= FPE_FLAG_INVALID; /* signaling */
        return fpe_nan_from_payload(to, env, sign, frac << 12);
    }
    if (ef == 0) {
        if (frac == 0 || env->daz) return sbit;
        return fpe_round_pack(to, env, sign, -1074, frac);
    }
    return fpe_round_pack(to, env, sign, (int32_t)ef - 1075, frac | ((uint64_t)1 << 52));
}

/* format -> binary64, always exact */
FPE_INLINE double fpe_to_f64_k(fpe_format_id from, fpe_env *env, uint32_t a)
{
    const fpe_unp u = fpe_unpack(from, env, a);
    const uint64_t sbit = (uint64_t)u.sign << 63;
    switch (u.cls) {
    case FPE_CLS_NAN:
        if (fpe_issnan_k(from, a)) env->flags |= FPE_FLAG_INVALID;
        if (env->nan != FPE_NAN_X86) return fpe_f64_from_bits(0x7FFFFFFFFFFFFFFFull);
        return fpe_f64_from_bits(sbit | 0x7FF8000000000000ull | (fpe_nan_payload(from, a) >> 12));
    case FPE_CLS_INF: return fpe_f64_from_bits(sbit | 0x7FF0000000000000ull);
    case FPE_CLS_ZERO: return fpe_f64_from_bits(sbit);
    default: return fpe_f64_from_bits(fpe_pack_f64_exact(u.sign, u.exp, u.sig));
    }
}

/* ---- integers ------------------------------------------------------------ */
typedef enum { FPE_I32, FPE_I64, FPE_UI32, FPE_UI64 } fpe_int_kind;

/* The result of an invalid conversion: x86 gives the "integer indefinite"
 * (most negative signed, all ones unsigned); the canonical (GPU) NaN spec
 * saturates and maps NaN to 0. */
FPE_INLINE uint64_t fpe_int_invalid(fpe_int_kind k, fpe_env *env, bool is_nan, bool negative)
{
    env->flags |= FPE_FLAG_INVALID;
    const bool is_signed = k == FPE_I32 || k == FPE_I64, wide = k == FPE_I64 || k == FPE_UI64;
    if (env->nan == FPE_NAN_X86) {
        if (is_signed) return wide ? (uint64_t)1 << 63 : (uint64_t)1 << 31;
        return wide ? ~(uint64_t)0 : 0xFFFFFFFFu;
    }
    if (is_nan) return 0;
    if (is_signed) {
        if (negative) return wide ? (uint64_t)1 << 63 : (uint64_t)1 << 31;
        return wide ? ((uint64_t)1 << 63) - 1 : 0x7FFFFFFFu;
    }
    return negative ? 0 : (wide ? ~(uint64_t)0 : 0xFFFFFFFFu);
}

/* Format -> integer in env->round; the result as the integer's bit pattern
 * (two's complement for signed kinds, in the low 32 bits for 32-bit ones). */
FPE_INLINE uint64_t fpe_to_int_k(fpe_format_id f, fpe_int_kind k, fpe_env *env, uint32_t a,
                                 bool exact)
{
    const fpe_unp u = fpe_unpack(f, env, a);
    if (u.cls == FPE_CLS_NAN) return fpe_int_invalid(k, env, true, u.sign);
    if (u.cls == FPE_CLS_INF) return fpe_int_invalid(k, env, false, u.sign);
    if (u.cls == FPE_CLS_ZERO) return 0;
    uint64_t mag;
    bool inexact = false;
    if (u.exp >= 0) {
        /* an integer already; above 2^64 it is out of every range */
        if (u.exp + (64 - FPE_CLZ64(u.sig)) > 64) return fpe_int_invalid(k, env, false, u.sign);
        mag = u.sig << u.exp;
    } else {
        mag = fpe_round_to_integer(env, u.sign, u.sig, -u.exp, &inexact);
    }
    const bool wide = k == FPE_I64 || k == FPE_UI64;
    uint64_t limit; /* the largest magnitude allowed with this sign */
    if (k == FPE_I32 || k == FPE_I64) {
        limit = (wide ? (uint64_t)1 << 63 : (uint64_t)1 << 31) - (u.sign ? 0 : 1);
    } else {
        limit = u.sign ? 0 : (wide ? ~(uint64_t)0 : 0xFFFFFFFFu);
    }
    if (mag > limit) return fpe_int_invalid(k, env, false, u.sign);
    if (inexact && exact) env->flags |= FPE_FLAG_INEXACT;
    uint64_t r = u.sign ? (uint64_t)0 - mag : mag;
    return wide ? r : (r & 0xFFFFFFFFu);
}

/* Integer (sign and magnitude) -> format, rounding in env->round. */
FPE_INLINE uint32_t fpe_from_int_k(fpe_format_id to, fpe_env *env, bool negative, uint64_t mag)
{
    return fpe_round_pack(to, env, negative, 0, mag);
}
#endif
