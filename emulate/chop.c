/* chop.c: round arrays of float or double to a format, with counts.
 *
 * Element i is rounded exactly as the scalar conversion would round it with
 * env->sr_index + i as its random index, so the result does not depend on
 * how a caller splits an array. */
#include <string.h>

#include "fpe_ops.h"

/* Count one rounded element: r is the result in format `to`, fl the flags
 * its rounding raised. */
FPE_INLINE void count_one(fpe_format_id to, uint32_t r, uint8_t fl, bool x_finite_nonzero,
                          bool x_dazed, fpe_chop_counts *c)
{
    const uint32_t mag = r & (fk_sign(to) - 1);
    c->flushed += x_finite_nonzero && mag == 0;
    c->subnormal += mag != 0 && (mag >> fk_fbits(to)) == 0;
    c->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
    c->inexact += (fl & FPE_FLAG_INEXACT) != 0 || x_dazed;
}

/* Round one binary32 pattern to format `to`; count what happened. */
FPE_INLINE uint32_t chop_one_f32(fpe_format_id to, fpe_env *env, uint32_t x, fpe_chop_counts *c)
{
    const uint8_t saved = env->flags;
    env->flags = 0;
    const uint32_t r = fpe_convert_k(FPE_FMT_F32, to, env, x);
    const uint8_t fl = env->flags;
    env->flags = saved | fl;
    const bool x_finite_nonzero = (x & 0x7F800000u) != 0x7F800000u && (x & 0x7FFFFFFFu) != 0;
    /* DAZ changes a subnormal input without raising inexact */
    const bool x_dazed = env->daz && (x & 0x7F800000u) == 0 && (x & 0x7FFFFFFFu) != 0;
    count_one(to, r, fl, x_finite_nonzero, x_dazed, c);
    return r;
}

FPE_INLINE uint32_t chop_one_f64(fpe_format_id to, fpe_env *env, double x, fpe_chop_counts *c)
{
    const uint8_t saved = env->flags;
    env->flags = 0;
    const uint32_t r = fpe_from_f64_k(to, env, x);
    const uint8_t fl = env->flags;
    env->flags = saved | fl;
    const uint64_t xb = fpe_f64_bits(x);
    const bool x_finite_nonzero =
        (xb & 0x7FF0000000000000ull) != 0x7FF0000000000000ull && (xb & 0x7FFFFFFFFFFFFFFFull) != 0;
    const bool x_dazed = env->daz && (xb & 0x7FF0000000000000ull) == 0 && x_finite_nonzero;
    count_one(to, r, fl, x_finite_nonzero, x_dazed, c);
    return r;
}

static bool bad_args(fpe_env *env, int fmt, const void *in, const void *out, size_t n)
{
    return !env || fmt < 0 || fmt > FPE_FMT_F32 || (n > 0 && (!in || !out));
}

static void add_counts(fpe_chop_counts *dst, const fpe_chop_counts *src)
{
    if (!dst) return;
    dst->flushed += src->flushed;
    dst->subnormal += src->subnormal;
    dst->overflowed += src->overflowed;
    dst->inexact += src->inexact;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The kept value as float: widen the format's pattern exactly. */
static float widen_to_f32(fpe_format_id fmt, fpe_env *env, uint32_t r)
{
    if (fmt == FPE_FMT_F32) return f32_from_bits(r);
    fpe_env quiet = *env; /* widening is exact: no flags, no DAZ of the result */
    quiet.daz = 0;
    return f32_from_bits(fpe_convert_k(fmt, FPE_FMT_F32, &quiet, r));
}

/* ---- the vector path -------------------------------------------------------
 * Arrays are processed in blocks.  A first, branch-free loop (which the
 * compiler vectorizes) rounds every element whose input is zero (exact,
 * no flags) or normal with a normal, non-overflowing result in the target
 * format (the same bias-and-truncate rounding as the scalar fast path), and
 * marks the others.  A second loop sends the marked elements through the general
 * conversion with their own random index.  Only marked elements can flush,
 * become subnormal, overflow, be NaN or raise anything but inexact. */
#define CHOP_BLOCK 1024

/* Functions built twice, for the baseline and for AVX2, picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define CHOP_VECTOR __attribute__((target_clones("avx2", "default")))
/* Philox's 32x32->64-bit multiplies gain from 16 lanes */
#define CHOP_VECTOR_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CHOP_VECTOR
#define CHOP_VECTOR_WIDE
#endif

/* Philox words for indices base .. base+n-1 (n <= CHOP_BLOCK): block j of
 * the generator holds the words of indices 4(first+j) .. 4(first+j)+3, so
 * laid out in order they start at word (base & 3). */
CHOP_VECTOR_WIDE static void random_words(const fpe_env *env, uint64_t base, size_t n,
                                          uint32_t *restrict words)
{
    const uint32_t stream = env->sr_stream;
    const uint64_t first = base >> 2;
    const size_t blocks = (size_t)((((base + n - 1) >> 2) - first) + 1);
    const uint32_t k0 = (uint32_t)env->sr_seed, k1 = (uint32_t)(env->sr_seed >> 32);
    for (size_t j = 0; j < blocks; j++) {
        const uint64_t c = first + j;
        const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), stream, 0};
        const uint32_t key[2] = {k0, k1};
        fpe_philox4x32_10(ctr, key, words + 4 * j);
    }
}

/* The easy-element loop for one rounding mode: BIAS is added below the last
 * kept bit before truncation (see fpe_round_f64_fast). */
#define CHOP_EASY_LOOP(BIAS, ODD)                                                                  \
    for (size_t i = 0; i < n; i++) {                                                               \
        uint32_t u;                                                                                \
        memcpy(&u, &in[i], sizeof u);                                                              \
        const uint32_t sign = u >> 31;                                                             \
        const uint32_t ef = (u >> 23) & 0xFF;                                                      \
        const uint32_t h = (u & 0x7FFFFFFFu) - rebias;                                             \
        const uint32_t rem = h & ulp_m1;                                                           \
        (void)sign;                                                                                \
        const uint32_t r = ((h + (BIAS)) >> shift) | ((ODD) & (rem != 0));                         \
        const uint32_t zero = (u & 0x7FFFFFFFu) == 0; /* exact, no flags: +-0 */                   \
        const uint32_t easy = (ef - lo <= hi - lo) | zero;                                         \
        out[i] = (uint16_t)((sign << 15) | (r & (zero - 1u)));                                     \
        rare[i] = (uint8_t)!easy;                                                                  \
        inexact += (rem != 0) & easy & !zero;                                                      \
        nrare += !easy;                                                                            \
    }

/* Round the block to fmt (FPE_FMT_F16 or FPE_FMT_BF16) as 16-bit patterns.
 * rare[i] = 1 marks elements left for the general path.  Returns the number
 * of inexact easy elements. */
CHOP_VECTOR static size_t chop_block_easy(int fmt, int mode, const float *restrict in,
                                          uint16_t *restrict out, uint8_t *restrict rare,
                                          const uint32_t *restrict rnd, size_t n,
                                          size_t *rare_count)
{
    /* f32 exponent fields whose results are normal and cannot overflow:
     * fp16 2^-14 <= |x| < 2^15, bf16 2^-126 <= |x| < 2^127 */
    const uint32_t lo = fmt == FPE_FMT_F16 ? 113 : 1, hi = fmt == FPE_FMT_F16 ? 141 : 253;
    const uint32_t rebias = fmt == FPE_FMT_F16 ? (uint32_t)(127 - 15) << 23 : 0;
    const int shift = fmt == FPE_FMT_F16 ? 13 : 16;
    const uint32_t ulp_m1 = ((uint32_t)1 << shift) - 1, half = (uint32_t)1 << (shift - 1);
    uint32_t inexact = 0, nrare = 0;
    switch (mode) {
    case FPE_RNE: CHOP_EASY_LOOP(half - 1 + ((h >> shift) & 1), 0) break;
    case FPE_RNA: CHOP_EASY_LOOP(half, 0) break;
    case FPE_RD: CHOP_EASY_LOOP((0u - sign) & ulp_m1, 0) break;
    case FPE_RU: CHOP_EASY_LOOP((sign - 1u) & ulp_m1, 0) break;
    case FPE_RO: CHOP_EASY_LOOP(0, 1u) break;
    case FPE_SR_PROP: CHOP_EASY_LOOP(ulp_m1 - (rnd[i] >> (32 - shift)), 0) break;
    case FPE_SR_EQUAL: CHOP_EASY_LOOP((0u - (rnd[i] >> 31)) & ulp_m1, 0) break;
    default: CHOP_EASY_LOOP(0, 0) break; /* RZ */
    }
    *rare_count = nrare;
    return inexact;
}

/* One block of float -> 16-bit patterns; element i has index base + i. */
static void chop_block_f32_u16(fpe_env *env, int fmt, const float *in, uint16_t *out, size_t n,
                               fpe_chop_counts *c)
{
    uint8_t rare[CHOP_BLOCK];
    uint32_t words[CHOP_BLOCK + 8];
    const uint64_t base = env->sr_index;
    if (env->round >= FPE_SR_PROP) random_words(env, base, n, words);
    size_t nrare;
    const size_t inexact =
        chop_block_easy(fmt, env->round, in, out, rare, words + (base & 3), n, &nrare);
    c->inexact += inexact;
    if (inexact) env->flags |= FPE_FLAG_INEXACT;
    /* the general path for the marked elements; DAZ and FTZ concern only
     * subnormal inputs and tiny results, which are all marked */
    for (size_t i = 0; nrare > 0 && i < n; i++) {
        if (!rare[i]) continue;
        env->sr_index = base + i;
        out[i] = (uint16_t)chop_one_f32((fpe_format_id)fmt, env, f32_bits(in[i]), c);
        nrare--;
    }
    env->sr_index = base + n;
}

/* 16-bit pattern of fmt -> float, exactly (for results that are normal or
 * special the shift suffices; subnormals take the general path). */
static float widen16(int fmt, fpe_env *env, uint16_t r)
{
    if (fmt == FPE_FMT_BF16) return f32_from_bits((uint32_t)r << 16);
    const uint32_t ef = (r >> 10) & 0x1F;
    if (ef - 1 < 30) /* normal: rebias the exponent */
        return f32_from_bits(((uint32_t)(r & 0x8000) << 16) |
                             (((uint32_t)(r & 0x7FFF) << 13) + (112u << 23)));
    return widen_to_f32((fpe_format_id)fmt, env, r);
}

static void chop_f32_u16_blocks(fpe_env *env, int fmt, const float *in, uint16_t *out, size_t n,
                                fpe_chop_counts *c)
{
    for (size_t i = 0; i < n; i += CHOP_BLOCK) {
        const size_t m = n - i < CHOP_BLOCK ? n - i : CHOP_BLOCK;
        chop_block_f32_u16(env, fmt, in + i, out + i, m, c);
    }
}

int fpe_chop_f32(fpe_env *env, fpe_format_id fmt, const float *in, float *out, size_t n,
                 fpe_chop_counts *counts)
{
    if (bad_args(env, fmt, in, out, n)) return FPE_EINVAL;
    fpe_chop_counts c = {0, 0, 0, 0};
    if (fmt == FPE_FMT_F32) {
        for (size_t i = 0; i < n; i++) {
            const uint32_t r = chop_one_f32(fmt, env, f32_bits(in[i]), &c);
            out[i] = f32_from_bits(r);
            env->sr_index++;
        }
    } else {
        for (size_t i = 0; i < n; i += CHOP_BLOCK) {
            const size_t m = n - i < CHOP_BLOCK ? n - i : CHOP_BLOCK;
            uint16_t r[CHOP_BLOCK];
            chop_f32_u16_blocks(env, fmt, in + i, r, m, &c);
            for (size_t k = 0; k < m; k++)
                out[i + k] = widen16(fmt, env, r[k]);
        }
    }
    add_counts(counts, &c);
    return FPE_OK;
}

int fpe_chop_f64(fpe_env *env, fpe_format_id fmt, const double *in, double *out, size_t n,
                 fpe_chop_counts *counts)
{
    if (bad_args(env, fmt, in, out, n)) return FPE_EINVAL;
    fpe_chop_counts c = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = chop_one_f64(fmt, env, in[i], &c);
        fpe_env quiet = *env; /* widening is exact: no flags, no DAZ of the result */
        quiet.daz = 0;
        out[i] = fpe_to_f64_k(fmt, &quiet, r);
        env->sr_index++;
    }
    add_counts(counts, &c);
    return FPE_OK;
}

int fpe_chop_f32_to_u16(fpe_env *env, fpe_format_id fmt, const float *in, uint16_t *out, size_t n,
                        fpe_chop_counts *counts)
{
    if (bad_args(env, fmt, in, out, n) || fmt == FPE_FMT_F32) return FPE_EINVAL;
    fpe_chop_counts c = {0, 0, 0, 0};
    chop_f32_u16_blocks(env, fmt, in, out, n, &c);
    add_counts(counts, &c);
    return FPE_OK;
}

int fpe_chop_f64_to_u16(fpe_env *env, fpe_format_id fmt, const double *in, uint16_t *out, size_t n,
                        fpe_chop_counts *counts)
{
    if (bad_args(env, fmt, in, out, n) || fmt == FPE_FMT_F32) return FPE_EINVAL;
    fpe_chop_counts c = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        out[i] = (uint16_t)chop_one_f64(fmt, env, in[i], &c);
        env->sr_index++;
    }
    add_counts(counts, &c);
    return FPE_OK;
}
