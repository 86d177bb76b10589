/* elem/gemm.h: the GEMM contracts that ak_gemm, ak_conv2d_* and both
 * backends share: which storage/compute pairs exist, how the fast compute
 * types round fp32 inputs, and the epilogue alpha * acc + beta * c.
 *
 * The element functions run on the host (the cpu backend's emulation) and
 * on the GPU (the k == 0 / alpha == 0 path, which cuBLAS is not asked to
 * do), so both backends give the same bits wherever no cuBLAS sum is
 * involved.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_GEMM_H
#define AMPSCOPE_KERNELS_ELEM_GEMM_H

#include <stdio.h>

#include "cast.h"
#include "kernels.h"
#include "round.h"

/* ---- supported pairs ------------------------------------------------------ */
/* Whether a, b -> c with compute type k is a GEMM that kernels.h lists; if
 * not, why (e.g. "compute type 16F needs fp16 A, B and C, got bf16/bf16/bf16")
 * is written to why.  names are the three operands as the caller knows them
 * ("A", "B", "C"; conv2d says "w", "x", "y"). */
static inline bool ak_gemm_pairing_ok(ak_dtype a, ak_dtype b, ak_dtype c, ak_compute k,
                                      const char *const names[3], char *why, size_t why_len)
{
    const char *kn = ak_compute_name(k);
    const char *an = ak_dtype_name(a), *bn = ak_dtype_name(b), *cn = ak_dtype_name(c);
    if (k == AK_COMPUTE_16F || k == AK_COMPUTE_32F_FAST_16F || k == AK_COMPUTE_32F_FAST_16BF ||
        k == AK_COMPUTE_32F_FAST_TF32) {
        const ak_dtype need = k == AK_COMPUTE_16F ? AK_F16 : AK_F32;
        if (a == need && b == need && c == need) return true;
        snprintf(why, why_len, "compute type %s needs %s %s, %s and %s, got %s/%s/%s", kn,
                 ak_dtype_name(need), names[0], names[1], names[2], an, bn, cn);
        return false;
    }
    if (k != AK_COMPUTE_32F) {
        snprintf(why, why_len, "invalid compute type (%d)", (int)k);
        return false;
    }
    if (a != b) {
        snprintf(why, why_len, "compute type 32F needs %s and %s of one dtype, got %s/%s/%s",
                 names[0], names[1], an, bn, cn);
        return false;
    }
    if (c == a || c == AK_F32) return true;
    if (a == AK_F32)
        snprintf(why, why_len, "compute type 32F with fp32 %s and %s needs fp32 %s, got %s/%s/%s",
                 names[0], names[1], names[2], an, bn, cn);
    else
        snprintf(why, why_len,
                 "compute type 32F with %s %s and %s needs %s or fp32 %s, got %s/%s/%s", an,
                 names[0], names[1], an, names[2], an, bn, cn);
    return false;
}

/* ---- input rounding of the fast compute types ----------------------------- */
/* tf32 as ampscope defines it (NVIDIA documents the format, not a rounding
 * rule): fp32's exponent range, subnormals included, with 10 fraction bits,
 * so below 2^-126 its quantum is 2^-136.  An fp32 value is rounded to it to
 * nearest, ties to even, at bit 13 of its pattern: a carry out of the
 * fraction moves to the next binade and, past the largest tf32 value
 * (2 - 2^-10) 2^127, to infinity.  Infinities and NaNs are kept as they are
 * (a NaN whose payload lies in the low 13 bits must not become an infinity). */
FPE_INLINE uint32_t ak_round_tf32_k(uint32_t x)
{
    if ((x & 0x7F800000u) == 0x7F800000u) return x;
    const uint32_t lsb = (x >> 13) & 1u;
    /* the magnitude is at most 0x7F7FFFFF, so the carry never reaches the sign */
    return (x + 0x0FFFu + lsb) & ~(uint32_t)0x1FFFu;
}

/* An fp32 input (bits) as the compute type multiplies it: rounded to fp16,
 * bf16 (to nearest even, as fpe_f32_to_f16/bf16) or tf32 for the fast
 * types, and as it is otherwise.  The result is an fp32 pattern whose
 * products with another such value are exact in fp32. */
FPE_INLINE uint32_t ak_gemm_input_k(ak_compute k, uint32_t x)
{
    fpe_env env = fpe_env_default();
    switch (k) {
    case AK_COMPUTE_32F_FAST_16F:
        return ak_widen16_k(FPE_FMT_F16, fpe_convert_k(FPE_FMT_F32, FPE_FMT_F16, &env, x));
    case AK_COMPUTE_32F_FAST_16BF:
        return ak_widen16_k(FPE_FMT_BF16, fpe_convert_k(FPE_FMT_F32, FPE_FMT_BF16, &env, x));
    case AK_COMPUTE_32F_FAST_TF32: return ak_round_tf32_k(x);
    default: return x;
    }
}

/* ---- the epilogue ------------------------------------------------------------ */
/* alpha and beta as the compute type applies them: fp16 values (alpha and
 * beta rounded to nearest even, as cuBLAS receives them as __half) for 16F,
 * the fp32 values otherwise.  fmt is the epilogue's arithmetic. */
typedef struct ak_gemm_scalars {
    fpe_format_id fmt;
    uint32_t alpha_bits, beta_bits; /* in fmt */
    double alpha, beta;             /* their values */
} ak_gemm_scalars;

FPE_INLINE ak_gemm_scalars ak_gemm_scalars_of(ak_compute k, float alpha, float beta)
{
    ak_gemm_scalars s;
    fpe_env env = fpe_env_default();
    s.fmt = k == AK_COMPUTE_16F ? FPE_FMT_F16 : FPE_FMT_F32;
    s.alpha_bits = fpe_from_f64_k(s.fmt, &env, (double)alpha);
    s.beta_bits = fpe_from_f64_k(s.fmt, &env, (double)beta);
    s.alpha = fpe_to_f64_k(s.fmt, &env, s.alpha_bits);
    s.beta = fpe_to_f64_k(s.fmt, &env, s.beta_bits);
    return s;
}

/* The new element of C (format cf) from the accumulated op(A) op(B) element
 * acc (has_acc) and the old element c_bits: in the epilogue's format fmt,
 *     t = alpha * acc,  u = beta * c,  r = t + u
 * each rounded to nearest even (IEEE arithmetic of fmt: fp32 for the 32F
 * types, fp16 for 16F), then r rounded once more, to nearest even, to cf
 * when cf is narrower than fmt.  BLAS semantics: beta == 0 means C is not
 * read (a NaN there is overwritten), and without acc (k == 0 or alpha == 0:
 * A and B are not read, alpha is not applied) C = beta * C, +0 when beta is
 * zero.  NaNs are decided by the emulator's rules (round.h), not the FPU's. */
FPE_INLINE uint32_t ak_gemm_epilogue_k(const ak_gemm_scalars *s, fpe_format_id cf, bool has_acc,
                                       double acc, uint32_t c_bits)
{
    fpe_env env = fpe_env_default();
    const bool has_c = s->beta != 0.0;
    uint32_t r = 0; /* +0 */
    if (has_acc) r = ak_round_product(s->fmt, &env, s->alpha, acc);
    if (has_c) {
        const uint32_t u = ak_round_product(s->fmt, &env, s->beta, ak_elem_value(cf, c_bits));
        r = has_acc ? ak_round_sum(s->fmt, &env, ak_elem_value(s->fmt, r), ak_elem_value(s->fmt, u))
                    : u;
    }
    return s->fmt == cf ? r : fpe_convert_k(s->fmt, cf, &env, r);
}

/* ---- batches ------------------------------------------------------------------ */
/* The i-th GEMM of ak_gemm_batched: g with A, B and C starting stride_a i,
 * stride_b i and stride_c i elements further (and that many fewer). */
static inline ak_gemm_args ak_gemm_batch_item(const ak_gemm_args *g, size_t i, size_t stride_a,
                                              size_t stride_b, size_t stride_c)
{
    ak_gemm_args one = *g;
    const size_t at[3] = {i * stride_a, i * stride_b, i * stride_c};
    ak_tensor *const t[3] = {&one.a, &one.b, &one.c};
    for (int k = 0; k < 3; k++) {
        t[k]->data = (char *)t[k]->data + at[k] * ak_dtype_size(t[k]->dtype);
        t[k]->n -= at[k];
    }
    return one;
}

/* Element i of an m x n matrix stored with leading dimension ld. */
FPE_INLINE size_t ak_gemm_c_index(size_t i, size_t n, size_t ld) { return i / n * ld + i % n; }

#endif
