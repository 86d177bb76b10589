/* chop_bf16.c: the array rounding to bf16 in the host's AVX2 integer lanes (see chop_hw.h).
 *
 * A bf16 result has binary32's exponent range, so for every input but a binary32 subnormal the
 * rounding is the input's bits plus a bias below bit 16, truncated: the bias is the mode's
 * (fpe_round_f64_fast's) and, in the stochastic modes, comes from the element's random word.
 * An overflow carries into 0x7F80 exactly where the mode's overflow result is infinity (minMag,
 * odd and the directed mode away from the sign truncate to 0x7F7F, their overflow result); an
 * infinity stays itself (no bits below bit 16); a NaN takes its quieted or canonical pattern and
 * raises invalid when signaling.  Nothing is tiny, so underflow, flushing and subnormal results
 * cannot happen, in any FTZ or DAZ setting: the binary32 subnormal inputs (where those happen)
 * are left to the general path, counted in t->rare. */
#include "chop_hw.h"

#include "host.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#include <immintrin.h>

#define BF16_TARGET __attribute__((target("avx2")))

bool fpe_chop_bf16_applies(const fpe_env *env, int fmt)
{
    (void)env;
    return fmt == FPE_FMT_BF16 && fpe_chop_hw_allowed() && fpe_host_avx2();
}

/* Eight lanes: the 32-bit result patterns (in the low 16 bits) and, into the accumulators,
 * lanes of -1 for an element that is exact, a NaN or left (*settled), an overflow (*over) and
 * a left element (*rare); in *inv a lane has bit 22 set where some NaN had it clear
 * (signaling).  The sum is formed on the input with its sign: below a NaN nothing carries
 * into the sign bit. */
BF16_TARGET __attribute__((always_inline)) static inline __m256i
bf16_step(const int mode, const bool canonical, __m256i u, __m256i rnd, __m256i *settled,
          __m256i *over, __m256i *rare, __m256i *inv)
{
    const __m256i inf = _mm256_set1_epi32(0x7F800000), low = _mm256_set1_epi32(0xFFFF);
    const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i exact = _mm256_cmpeq_epi32(_mm256_and_si256(u, low), _mm256_setzero_si256());
    __m256i bias;
    switch (mode) {
    case FPE_RNE:
        bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF),
                                _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
        break;
    case FPE_RNA: bias = _mm256_set1_epi32(0x8000); break;
    case FPE_RD: bias = _mm256_and_si256(_mm256_srai_epi32(u, 31), low); break;
    case FPE_RU: bias = _mm256_andnot_si256(_mm256_srai_epi32(u, 31), low); break;
    case FPE_SR_PROP: bias = _mm256_sub_epi32(low, _mm256_srli_epi32(rnd, 16)); break;
    case FPE_SR_EQUAL: bias = _mm256_and_si256(_mm256_srai_epi32(rnd, 31), low); break;
    default: bias = _mm256_setzero_si256(); break; /* RZ, RO */
    }
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    if (mode == FPE_RO) r = _mm256_or_si256(r, _mm256_andnot_si256(exact, _mm256_set1_epi32(1)));
    const __m256i nan = _mm256_cmpgt_epi32(a, inf);
    /* a binary32 subnormal: a + 2^31 - 1 wraps below 2^31 + 2^23 - 1 (a zero to 2^31 - 1) */
    const __m256i left = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)0x807FFFFFu),
                                            _mm256_add_epi32(a, _mm256_set1_epi32(0x7FFFFFFF)));
    *settled = _mm256_sub_epi32(*settled, _mm256_or_si256(_mm256_or_si256(exact, nan), left));
    *rare = _mm256_sub_epi32(*rare, left);
    *inv = _mm256_or_si256(*inv, _mm256_andnot_si256(u, nan));
    const __m256i nan_bits =
        canonical ? _mm256_set1_epi32(0x7FFF)
                  : _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i res = _mm256_blendv_epi8(r, nan_bits, nan);
    /* an overflow: an infinite result (bits 14-0 are 0x7F80) from an inexact input (an
     * infinity is exact; a NaN's result is a NaN) */
    const __m256i r_inf =
        _mm256_cmpeq_epi32(_mm256_slli_epi32(res, 17), _mm256_set1_epi32((int32_t)0xFF000000u));
    *over = _mm256_sub_epi32(*over, _mm256_andnot_si256(exact, r_inf));
    return res;
}

/* The loop for one mode (constant after inlining), sixteen elements a step (n a multiple of
 * 16); rnd: element i's random word at rnd[i] (stochastic modes only).  With widen the results
 * go to fout as floats (a bf16 pattern widens by a shift), not to out. */
BF16_TARGET __attribute__((always_inline)) static inline void
bf16_lanes(const int mode, const bool canonical, const bool widen, const float *restrict in,
           uint16_t *restrict out, float *restrict fout, const uint32_t *restrict rnd, size_t n,
           chop_tally *t)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i settled = zero, over = zero, rare = zero, inv = zero, w0 = zero, w1 = zero;
    for (size_t i = 0; i < n; i += 16) {
        const __m256i u0 = _mm256_loadu_si256((const __m256i *)(in + i));
        const __m256i u1 = _mm256_loadu_si256((const __m256i *)(in + i + 8));
        if (mode >= FPE_SR_PROP) {
            w0 = _mm256_loadu_si256((const __m256i *)(rnd + i));
            w1 = _mm256_loadu_si256((const __m256i *)(rnd + i + 8));
        }
        const __m256i r0 = bf16_step(mode, canonical, u0, w0, &settled, &over, &rare, &inv);
        const __m256i r1 = bf16_step(mode, canonical, u1, w1, &settled, &over, &rare, &inv);
        if (widen) {
            _mm256_storeu_si256((__m256i *)(fout + i), _mm256_slli_epi32(r0, 16));
            _mm256_storeu_si256((__m256i *)(fout + i + 8), _mm256_slli_epi32(r1, 16));
        } else { /* packus interleaves the vectors' 128-bit halves: put them back in order */
            const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xD8);
            _mm256_storeu_si256((__m256i *)(out + i), packed);
        }
    }
    const uint32_t inexact = (uint32_t)n - chop_lanes_sum(settled);
    const uint32_t overflowed = chop_lanes_sum(over);
    memset(t, 0, sizeof *t);
    t->flags = (inexact ? FPE_FLAG_INEXACT : 0) | (overflowed ? FPE_FLAG_OVERFLOW : 0) |
               (!_mm256_testz_si256(inv, _mm256_set1_epi32(0x400000)) ? FPE_FLAG_INVALID : 0);
    t->rare = chop_lanes_sum(rare);
    t->inexact = inexact;
    t->overflowed = overflowed;
}

BF16_TARGET static void bf16_loop(int mode, bool canonical, const float *restrict in,
                                  uint16_t *restrict out, float *restrict fout,
                                  const uint32_t *restrict rnd, size_t n, chop_tally *t)
{
#define BF16_MODE(M)                                                                               \
    case M:                                                                                        \
        if (canonical && fout)                                                                     \
            bf16_lanes(M, true, true, in, out, fout, rnd, n, t);                                   \
        else if (canonical)                                                                        \
            bf16_lanes(M, true, false, in, out, fout, rnd, n, t);                                  \
        else if (fout)                                                                             \
            bf16_lanes(M, false, true, in, out, fout, rnd, n, t);                                  \
        else                                                                                       \
            bf16_lanes(M, false, false, in, out, fout, rnd, n, t);                                 \
        break;
    switch (mode) {
        BF16_MODE(FPE_RNE)
        BF16_MODE(FPE_RNA)
        BF16_MODE(FPE_RD)
        BF16_MODE(FPE_RU)
        BF16_MODE(FPE_RO)
        BF16_MODE(FPE_SR_PROP)
        BF16_MODE(FPE_SR_EQUAL)
    default: /* and FPE_RZ */ BF16_MODE(FPE_RZ)
    }
#undef BF16_MODE
}

void fpe_chop_bf16_block(const fpe_env *env, const float *restrict in, uint16_t *restrict out,
                         float *restrict fout, const uint32_t *restrict rnd, size_t n,
                         chop_tally *t)
{
    const bool canonical = env->nan != FPE_NAN_X86;
    const size_t whole = n & ~(size_t)15;
    bf16_loop(env->round, canonical, in, out, fout, rnd, whole, t);
    if (whole < n) { /* the last few, padded with 1.0 (exact, normal: no flags, nothing counted) */
        float pad[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        uint32_t pad_rnd[16] = {0};
        uint16_t pad_out[16];
        float pad_f[16];
        chop_tally tail;
        memcpy(pad, in + whole, (n - whole) * sizeof *in);
        if (env->round >= FPE_SR_PROP) memcpy(pad_rnd, rnd + whole, (n - whole) * sizeof *rnd);
        bf16_loop(env->round, canonical, pad, pad_out, fout ? pad_f : NULL, pad_rnd, 16, &tail);
        if (fout)
            memcpy(fout + whole, pad_f, (n - whole) * sizeof *fout);
        else
            memcpy(out + whole, pad_out, (n - whole) * sizeof *out);
        chop_tally_add(t, &tail);
    }
}

#else /* no AVX2: the portable loops always */

bool fpe_chop_bf16_applies(const fpe_env *env, int fmt)
{
    (void)env;
    (void)fmt;
    return false;
}

void fpe_chop_bf16_block(const fpe_env *env, const float *restrict in, uint16_t *restrict out,
                         float *restrict fout, const uint32_t *restrict rnd, size_t n,
                         chop_tally *t)
{
    (void)env, (void)in, (void)out, (void)fout, (void)rnd, (void)n;
    memset(t, 0, sizeof *t);
}

#endif
