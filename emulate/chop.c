/* chop.c: round arrays of float or double to a format, with counts.
 *
 * Element i is rounded exactly as the scalar conversion would round it with
 * env->sr_index + i as its random index, so the result does not depend on
 * how a caller splits an array. */
#include <string.h>

#include "chop_hw.h"
#include "fpe_ops.h"
#include "vector.h"

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

/* ---- the vector path -------------------------------------------------------
 * Arrays are processed in blocks.  A first, branch-free loop (which the
 * compiler vectorizes) rounds every element exactly as fpe_round_pack would,
 * flags and counts included: zeros, normal inputs with normal, subnormal, zero
 * or overflowing results, infinities and NaNs.  It declines (marks) only
 * binary32 subnormal inputs (DAZ and the tiny results they give live in the
 * general path) and, under FTZ, inputs whose result is tiny; a second loop
 * sends the marked elements through the general conversion with their own
 * random index. */
#define CHOP_BLOCK    1024
#define CHOP_HW_BLOCK 4096

/* Eight lanes of 32 bits (GCC vector extensions: AVX2 registers in the avx2
 * clone, pairs of SSE2 registers in the default one).  Comparisons give
 * masks: all ones or zero per lane. */
#if defined(__GNUC__) /* and clang */
/* the helpers below are always inlined: no vector crosses a call */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));
typedef uint8_t v8b __attribute__((vector_size(8)));
#define CHOP_LANES 8

typedef int32_t v8i __attribute__((vector_size(32)));
/* x < y for lanes below 2^31 (a signed compare: AVX2 has no unsigned one) */
#define LT(x, y) ((v8u)((v8i)(x) < (v8i)((v8u){0} + (y))))

FPE_INLINE v8u sel(v8u mask, v8u a, v8u b) { return (mask & a) | (~mask & b); }
FPE_INLINE v8u vmin31(v8u x) { return sel((v8u)(x < 31), x, (v8u){0} + 31); }
FPE_INLINE uint32_t sum_lanes(v8u v)
{
    uint32_t r = 0;
    for (int k = 0; k < CHOP_LANES; k++)
        r += v[k];
    return r;
}

/* Should the kept part be incremented (a mask)?  The lane form of
 * fpe_round_increment: rem holds the discarded bits below the last kept one,
 * half is half an ulp, odd the kept part's last bit as a mask, frac32 the
 * top 32 discarded bits (stoch_prop), rnd the random word. */
FPE_INLINE v8u lane_increment(int mode, v8u sign, v8u odd, v8u rem, v8u half, v8u frac32, v8u rnd)
{
    const v8u lost = (v8u)(rem != 0);
    switch (mode) {
    case FPE_RNE: return LT(half, rem) | ((v8u)(rem == half) & odd);
    case FPE_RNA: return ~LT(rem, half);
    case FPE_RD: return (0 - sign) & lost;
    case FPE_RU: return (sign - 1) & lost;
    case FPE_SR_PROP: return LT(rnd ^ 0x80000000u, frac32 ^ 0x80000000u);
    case FPE_SR_EQUAL: return (0 - (rnd >> 31)) & lost;
    default: return (v8u){0}; /* RZ, RO */
    }
}

/* The magnitude of an overflow's result (fpe_overflow); sign is 0 or 1. */
FPE_INLINE v8u lane_overflow(int mode, v8u sign, uint32_t inf)
{
    switch (mode) {
    case FPE_RZ:
    case FPE_RO: return (v8u){0} + (inf - 1);
    case FPE_RD: return inf - (sign ^ 1);
    case FPE_RU: return inf - sign;
    default: return (v8u){0} + inf;
    }
}

/* The vector loop for one format and mode (both constant after inlining),
 * eight elements at a time (n a multiple of 8).  A lane's value is
 * M / 2^sh ulps of the result: for a normal result M is the input rebiased
 * to the result's exponent field and fraction (sh = 13 or 16; a carry out of
 * the fraction bumps the exponent); for a subnormal or zero fp16 result M is
 * the 24-bit significand and sh = nt = 126 - exponent field (the shift to
 * units of 2^-24), capped at 31 since M < 2^24.  The tininess after rounding
 * of inexact lanes with 2^-15 <= |x| < 2^-14 whose 11 leading bits are all
 * ones is left to the caller (t->boundary): rare, and it needs the carry of
 * a rounding to 11 bits. */
FPE_INLINE void chop_lanes(fpe_format_id fmt, int mode, bool want_counts, uint32_t ftz,
                           uint32_t nan_x86, const float *restrict in, uint16_t *restrict out,
                           const uint32_t *restrict rnd, size_t n, chop_tally *t)
{
    const int f16 = fmt == FPE_FMT_F16;
    const int32_t lo = f16 ? 113 : 1; /* smallest exponent field with a normal result */
    const uint32_t rebias = f16 ? (uint32_t)(127 - 15) << 23 : 0;
    const uint32_t shift = f16 ? 13 : 16, inf = f16 ? 0x7C00 : 0x7F80;
    const uint32_t fmin = f16 ? 0x400 : 0x80, quiet = f16 ? 0x200 : 0x40;
    const v8u zero = {0}, ftz_mask = zero - ftz;
    /* flag bits OR-ed per lane (bit 7: a boundary lane); the counts added per
     * lane, 8 bits each (at most 128 per lane in a block of 1024) */
    v8u flags = zero, counts = zero, nrare = zero;
    for (size_t i = 0; i < n; i += CHOP_LANES) {
        v8u u, r32 = zero;
        memcpy(&u, in + i, sizeof u);
        if (mode >= FPE_SR_PROP) memcpy(&r32, rnd + i, sizeof r32);
        const v8u sign = u >> 31, a = u & 0x7FFFFFFFu, ef = a >> 23;
        const v8u special = (v8u)(ef == 0xFF), tiny = LT(ef, lo), nonzero = ~(v8u)(a == 0);
        const v8u sig = (a & 0x7FFFFF) | (~(v8u)(ef == 0) & 0x800000); /* 0 for a zero */
        const v8u nt = 126 - ef;
        const v8u sh = sel(tiny, vmin31(nt), zero + shift);
        const v8u M = sel(tiny, sig, a - rebias);
        const v8u one_sh = (zero + 1) << sh;
        v8u kept = M >> sh;
        const v8u rem = M & (one_sh - 1), half = one_sh >> 1;
        const v8u lost = ~(v8u)(rem == 0);
        v8u frac32 = zero;
        if (mode == FPE_SR_PROP)
            frac32 = sel(tiny & ~LT(nt, 32), sig >> vmin31(nt - 32), rem << (32 - sh));
        if (mode == FPE_RO)
            kept |= lost & 1;
        else
            kept -= lane_increment(mode, sign, zero - (kept & 1), rem, half, frac32, r32);
        const v8u over = ~special & ~tiny & ~LT(kept, inf);
        const v8u nan = special & ~(v8u)((a & 0x7FFFFF) == 0);
        const v8u nan_bits =
            nan_x86 ? (sign << 15) | (inf | quiet) | ((a & 0x7FFFFF) >> shift) : zero + 0x7FFF;
        const v8u mag = sel(over, lane_overflow(mode, sign, inf), sel(special, zero + inf, kept));
        const v8u res = sel(nan, nan_bits, (sign << 15) | mag);
        const v8u declined = ((v8u)(ef == 0) | (ftz_mask & tiny)) & nonzero;
        const v8u lane_inexact = ((lost & ~special) | over) & ~declined;
        const v8u under = tiny & lost & ~declined;
        /* fp16, 2^-15 <= |x| < 2^-14 with 11 leading ones: tiny after rounding
         * unless rounding to 11 bits carries (left to the caller) */
        const v8u edge = f16 ? (v8u)((a >> 13) == 0x1C3FF) : zero;
        flags |= (lane_inexact & FPE_FLAG_INEXACT) | (under & ~edge & FPE_FLAG_UNDERFLOW) |
                 (under & edge & 0x80) | (over & FPE_FLAG_OVERFLOW) |
                 (nan & (v8u)((a & 0x400000) == 0) & FPE_FLAG_INVALID);
        nrare -= declined;
        if (want_counts) {
            const v8u finite = ~declined & ~special & ~over;
            counts += (lane_inexact & 1) | (over & 0x100) |
                      (finite & nonzero & (v8u)(kept == 0) & 0x10000) |
                      (finite & ~(v8u)(kept == 0) & LT(kept, fmin) & 0x1000000);
        }
        const v8h res16 = __builtin_convertvector(res, v8h);
        memcpy(out + i, &res16, sizeof res16);
    }
    uint32_t fl = 0, c8[4] = {0, 0, 0, 0};
    for (int k = 0; k < CHOP_LANES; k++) {
        fl |= flags[k];
        for (int j = 0; j < 4; j++)
            c8[j] += (counts[k] >> (8 * j)) & 0xFF;
    }
    t->flags = fl & 0x7F;
    t->boundary = fl >> 7;
    t->rare = sum_lanes(nrare);
    t->inexact = c8[0];
    t->overflowed = c8[1];
    t->flushed = c8[2];
    t->subnormal = c8[3];
}

/* Round the block to fmt (FPE_FMT_F16 or FPE_FMT_BF16) as 16-bit patterns, n
 * a multiple of 8; t->rare elements (chop_declined) are left for the general
 * path. */
FPE_VECTOR static void chop_block_vector(int fmt, const fpe_env *env, bool want_counts,
                                         const float *restrict in, uint16_t *restrict out,
                                         const uint32_t *restrict rnd, size_t n, chop_tally *t)
{
    const uint32_t ftz = env->ftz != 0, x86 = env->nan == FPE_NAN_X86;
#define CHOP_MODE(F, M)                                                                            \
    case M:                                                                                        \
        if (want_counts)                                                                           \
            chop_lanes(F, M, true, ftz, x86, in, out, rnd, n, t);                                  \
        else                                                                                       \
            chop_lanes(F, M, false, ftz, x86, in, out, rnd, n, t);                                 \
        break;
#define CHOP_MODES(F)                                                                              \
    switch (env->round) {                                                                          \
        CHOP_MODE(F, FPE_RNE)                                                                      \
        CHOP_MODE(F, FPE_RNA)                                                                      \
        CHOP_MODE(F, FPE_RD)                                                                       \
        CHOP_MODE(F, FPE_RU)                                                                       \
        CHOP_MODE(F, FPE_RO)                                                                       \
        CHOP_MODE(F, FPE_SR_PROP)                                                                  \
        CHOP_MODE(F, FPE_SR_EQUAL)                                                                 \
    default: /* and FPE_RZ */ CHOP_MODE(F, FPE_RZ)                                                 \
    }
    if (fmt == FPE_FMT_F16) {
        CHOP_MODES(FPE_FMT_F16)
    } else {
        CHOP_MODES(FPE_FMT_BF16)
    }
#undef CHOP_MODES
#undef CHOP_MODE
}

/* The easy-element loop for one rounding mode: BIAS is added below the last
 * kept bit before truncation (see fpe_round_f64_fast). */
#define CHOP_EASY_LOOP(BIAS, ODD, STORE)                                                           \
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
        STORE(i, (sign << 15) | (r & (zero - 1u)));                                                \
        inexact += (rem != 0) & easy & !zero;                                                      \
        nhard += !easy;                                                                            \
        hard[i] = (uint8_t)!easy;                                                                  \
    }

/* bf16's easy-element loop: every input but a binary32 subnormal.  A bf16 result has the
 * input's exponent range, so the biased truncation is the rounding for every finite input,
 * an overflow included (it carries to 0x7F80, infinity, exactly where the mode overflows to
 * infinity; minMag and odd truncate to 0x7F7F, their overflow result), and an infinity stays
 * itself; a NaN takes its quieted or canonical pattern and raises invalid when signaling. */
#define CHOP_EASY_LOOP_BF16(BIAS, ODD, STORE)                                                      \
    for (size_t i = 0; i < n; i++) {                                                               \
        uint32_t u;                                                                                \
        memcpy(&u, &in[i], sizeof u);                                                              \
        const uint32_t sign = u >> 31;                                                             \
        const uint32_t ef = (u >> 23) & 0xFF;                                                      \
        const uint32_t h = u & 0x7FFFFFFFu;                                                        \
        const uint32_t rem = h & 0xFFFF;                                                           \
        (void)sign;                                                                                \
        const uint32_t r = ((h + (BIAS)) >> 16) | ((ODD) & (rem != 0));                            \
        const uint32_t nan = h > 0x7F800000u;                                                      \
        const uint32_t nan_bits =                                                                  \
            nan_x86 ? (sign << 15) | 0x7FC0u | ((h & 0x7FFFFF) >> 16) : 0x7FFFu;                   \
        const uint32_t easy = ef != 0 || h == 0;                                                   \
        STORE(i, nan ? nan_bits : (sign << 15) | r);                                               \
        inexact += (rem != 0) & easy & !nan;                                                       \
        over += (r == 0x7F80) & (ef != 0xFF);                                                      \
        invalid |= nan & !(h & 0x400000);                                                          \
        nhard += !easy;                                                                            \
        hard[i] = (uint8_t)!easy;                                                                  \
    }

/* The first try at a block, cheaper than the full vector loop: rounds the
 * elements whose input is zero or normal with a normal, non-overflowing
 * result (nothing to count but inexact) and, for bf16, also the overflowing
 * ones, infinities and NaNs (CHOP_EASY_LOOP_BF16, when `specials`), and marks (hard[i] = 1)
 * and counts the others.  Returns the number of inexact elements, the
 * overflowed ones in *overflowed and the flags in *flags; when *hard_count is
 * not zero the block goes through chop_block_vector.  With fout (not in) the
 * results go there, widened to floats, instead of out. */
FPE_VECTOR static size_t chop_block_easy(int fmt, int mode, bool specials, uint32_t nan_x86,
                                         const float *restrict in, uint16_t *restrict out,
                                         float *restrict fout, uint8_t *restrict hard,
                                         const uint32_t *restrict rnd, size_t n, size_t *hard_count,
                                         size_t *overflowed, uint8_t *flags)
{
    /* f32 exponent fields whose results are normal and cannot overflow:
     * fp16 2^-14 <= |x| < 2^15, bf16 2^-126 <= |x| < 2^127 */
    const uint32_t lo = fmt == FPE_FMT_F16 ? 113 : 1, hi = fmt == FPE_FMT_F16 ? 141 : 253;
    const uint32_t rebias = fmt == FPE_FMT_F16 ? (uint32_t)(127 - 15) << 23 : 0;
    const int shift = fmt == FPE_FMT_F16 ? 13 : 16;
    const uint32_t ulp_m1 = ((uint32_t)1 << shift) - 1, half = (uint32_t)1 << (shift - 1);
    uint32_t inexact = 0, nhard = 0, over = 0, invalid = 0;
#define STORE_U16(i, res) out[i] = (uint16_t)(res)
/* the result widened (fp16: normal or zero when the block succeeds; bf16: any pattern) */
#define STORE_F32(i, res)                                                                          \
    do {                                                                                           \
        const uint32_t res_ = (res), mag_ = res_ & 0x7FFF;                                         \
        const uint32_t w_ =                                                                        \
            fmt == FPE_FMT_BF16                                                                    \
                ? res_ << 16                                                                       \
                : ((res_ & 0x8000) << 16) | ((mag_ << 13) + ((0u - (mag_ != 0)) & (112u << 23)));  \
        memcpy(&fout[i], &w_, sizeof w_);                                                          \
    } while (0)
#define CHOP_EASY_MODES(LOOP, STORE)                                                               \
    switch (mode) {                                                                                \
    case FPE_RNE: LOOP(half - 1 + ((h >> shift) & 1), 0, STORE) break;                             \
    case FPE_RNA: LOOP(half, 0, STORE) break;                                                      \
    case FPE_RD: LOOP((0u - sign) & ulp_m1, 0, STORE) break;                                       \
    case FPE_RU: LOOP((sign - 1u) & ulp_m1, 0, STORE) break;                                       \
    case FPE_RO: LOOP(0, 1u, STORE) break;                                                         \
    case FPE_SR_PROP: LOOP(ulp_m1 - (rnd[i] >> (32 - shift)), 0, STORE) break;                     \
    case FPE_SR_EQUAL: LOOP((0u - (rnd[i] >> 31)) & ulp_m1, 0, STORE) break;                       \
    default: LOOP(0, 0, STORE) break; /* RZ */                                                     \
    }
    if (fmt == FPE_FMT_BF16 && specials) {
        if (fout) {
            CHOP_EASY_MODES(CHOP_EASY_LOOP_BF16, STORE_F32)
        } else {
            CHOP_EASY_MODES(CHOP_EASY_LOOP_BF16, STORE_U16)
        }
    } else if (fout) {
        CHOP_EASY_MODES(CHOP_EASY_LOOP, STORE_F32)
    } else {
        CHOP_EASY_MODES(CHOP_EASY_LOOP, STORE_U16)
    }
#undef CHOP_EASY_MODES
#undef STORE_F32
#undef STORE_U16
    *hard_count = nhard;
    *overflowed = over;
    *flags = (uint8_t)((inexact || over ? FPE_FLAG_INEXACT : 0) | (over ? FPE_FLAG_OVERFLOW : 0) |
                       (invalid ? FPE_FLAG_INVALID : 0));
    return inexact;
}

/* 16-bit patterns of fmt -> floats, exactly, as the general widening
 * (DAZ off) gives them, branch-free: bf16 is a shift; fp16 normals,
 * infinities and NaNs are rebiased (by 112 in the exponent, by 224 for the
 * maximal exponent: the payload is kept), subnormals scaled in binary32
 * (exact); with canonical NaNs (a chop result is then 0x7FFF) every NaN is
 * 0x7FFFFFFF. */
FPE_INLINE void widen_f16_loop(bool canonical, const uint16_t *restrict r, float *restrict out,
                               size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t sign = (uint32_t)(r[i] & 0x8000) << 16, mag = r[i] & 0x7FFF;
        const float scaled = (float)(int32_t)mag * 0x1p-24f;
        uint32_t sub;
        memcpy(&sub, &scaled, sizeof sub);
        const uint32_t top = 0u - (uint32_t)(mag >= 0x7C00), low = 0u - (uint32_t)(mag < 0x400);
        const uint32_t wide = (mag << 13) + (112u << 23) + (top & (112u << 23));
        uint32_t u = sign | (sub & low) | (wide & ~low);
        if (canonical) {
            const uint32_t nan = 0u - (uint32_t)(mag > 0x7C00);
            u = (u & ~nan) | (0x7FFFFFFFu & nan);
        }
        memcpy(&out[i], &u, sizeof u);
    }
}

FPE_VECTOR static void widen_block(int fmt, uint32_t nan_x86, const uint16_t *restrict r,
                                   float *restrict out, size_t n)
{
    if (fmt == FPE_FMT_BF16) {
        for (size_t i = 0; i < n; i++) {
            const uint32_t u = (uint32_t)r[i] << 16;
            memcpy(&out[i], &u, sizeof u);
        }
    } else if (nan_x86) {
        widen_f16_loop(false, r, out, n);
    } else {
        widen_f16_loop(true, r, out, n);
    }
}

/* Whether the vector loop leaves element x to the general path. */
static bool chop_declined(const fpe_env *env, int fmt, uint32_t x)
{
    const uint32_t a = x & 0x7FFFFFFFu, ef = a >> 23;
    const uint32_t lo = fmt == FPE_FMT_F16 ? 113 : 1;
    return a != 0 && (ef == 0 || (env->ftz && ef < lo));
}

static void chop_block_finish(fpe_env *env, int fmt, const float *in, uint16_t *out, float *fout,
                              size_t n, fpe_chop_counts *c, chop_tally *tp);

/* Which loops round a call's blocks: the portable ones, or a host path of chop_hw.h. */
typedef enum { CHOP_PORTABLE, CHOP_HW_F16C, CHOP_HW_BF16 } chop_path;

/* One block of float -> 16-bit patterns; element i has index base + i.
 * *try_easy: whether to try chop_block_easy first (set when it sufficed: it
 * left no element, or so few that the general path for each is cheaper than
 * the full loop for the block).  *specials (bf16): whether the easy try
 * takes the overflowing, infinite and NaN elements too (set after a block in
 * which the plain loop left elements: the wider loop is slower on normal
 * data).  path: the call's loops (CHOP_HW_F16C inside fpe_chop_hw_begin/end).
 * With fout (which must not be in) the results are widened into fout; out
 * is then scratch. */
static void chop_block_f32_u16(fpe_env *env, int fmt, chop_path path, const float *in,
                               uint16_t *out, float *fout, size_t n, fpe_chop_counts *c,
                               bool want_counts, bool *try_easy, bool *specials)
{
    if (path == CHOP_HW_F16C) { /* the host's instruction rounds as we do (fpe_chop_hw_applies) */
        chop_tally t;
        fpe_chop_hw_block(env, want_counts, try_easy, in, out, fout, n, &t);
        chop_block_finish(env, fmt, in, out, NULL, n, c, &t);
        return;
    }
    uint32_t words[CHOP_HW_BLOCK + 8];
    const uint64_t base = env->sr_index;
    const uint32_t *rnd = words + (base & 3);
    if (env->round >= FPE_SR_PROP) fpe_random_words(env, base, n, words);
    if (path == CHOP_HW_BF16) { /* AVX2 lanes: all but binary32 subnormals (chop_bf16.c) */
        chop_tally t;
        fpe_chop_bf16_block(env, in, out, fout, rnd, n, &t);
        const bool rare = t.rare != 0;
        chop_block_finish(env, fmt, in, out, NULL, n, c, &t);
        for (size_t i = 0; fout && rare && i < n; i++) /* the left ones' results, widened */
            if (chop_declined(env, fmt, f32_bits(in[i])))
                widen_block(fmt, env->nan == FPE_NAN_X86, &out[i], &fout[i], 1);
        return;
    }
    if (*try_easy) {
        size_t hard, over;
        uint8_t marks[CHOP_BLOCK + 8], easy_flags;
        const bool wide = fmt == FPE_FMT_BF16 && *specials;
        const size_t inexact = chop_block_easy(fmt, env->round, wide, env->nan == FPE_NAN_X86, in,
                                               out, fout, marks, rnd, n, &hard, &over, &easy_flags);
        if (hard && fmt == FPE_FMT_BF16) *specials = true;
        if (hard * 16 <= n) { /* none or a few left: the general path for each */
            c->inexact += inexact;
            c->overflowed += over;
            env->flags |= easy_flags;
            memset(marks + n, 0, 8);
            for (size_t i = 0; hard > 0 && i < n; i++) {
                uint64_t eight; /* skip eight unmarked elements at a time */
                memcpy(&eight, marks + i, sizeof eight);
                if (eight == 0) {
                    i += 7;
                    continue;
                }
                if (!marks[i]) continue;
                const uint32_t x = f32_bits(in[i]);
                env->sr_index = base + i;
                uint16_t r = (uint16_t)chop_one_f32((fpe_format_id)fmt, env, x, c);
                if (fout)
                    widen_block(fmt, env->nan == FPE_NAN_X86, &r, &fout[i], 1);
                else
                    out[i] = r;
                hard--;
            }
            env->sr_index = base + n;
            return;
        }
        *try_easy = false;
    }
    chop_tally t;
    const size_t whole = n & ~(size_t)(CHOP_LANES - 1);
    chop_block_vector(fmt, env, want_counts, in, out, rnd, whole, &t);
    if (whole < n) { /* the last few, padded with zeros (no flags, nothing counted) */
        float pad[CHOP_LANES] = {0};
        uint32_t pad_rnd[CHOP_LANES] = {0};
        uint16_t pad_out[CHOP_LANES];
        chop_tally tail;
        memcpy(pad, in + whole, (n - whole) * sizeof *in);
        if (env->round >= FPE_SR_PROP) memcpy(pad_rnd, rnd + whole, (n - whole) * sizeof *rnd);
        chop_block_vector(fmt, env, want_counts, pad, pad_out, pad_rnd, CHOP_LANES, &tail);
        memcpy(out + whole, pad_out, (n - whole) * sizeof *out);
        chop_tally_add(&t, &tail);
    }
    chop_block_finish(env, fmt, in, out, fout, n, c, &t);
}

/* After a block's vector loop (tally t): the boundary elements' tininess, the flags and counts,
 * the declined elements through the general path, the random index past the block and, with
 * fout, the results widened. */
static void chop_block_finish(fpe_env *env, int fmt, const float *in, uint16_t *out, float *fout,
                              size_t n, fpe_chop_counts *c, chop_tally *tp)
{
    chop_tally t = *tp;
    const uint64_t base = env->sr_index;
    /* Tininess after rounding of the boundary elements (fp16, just below
     * 2^-14): the scalar conversion decides whether one of them underflows. */
    if (t.boundary && !(t.flags & FPE_FLAG_UNDERFLOW)) {
        for (size_t i = 0; i < n && !(t.flags & FPE_FLAG_UNDERFLOW); i++) {
            const uint32_t x = f32_bits(in[i]);
            if ((x & 0x7FFFFFFFu) >> 13 != 0x1C3FF || chop_declined(env, fmt, x)) continue;
            fpe_env e = *env;
            e.flags = 0;
            e.sr_index = base + i;
            (void)fpe_convert_k(FPE_FMT_F32, (fpe_format_id)fmt, &e, x);
            t.flags |= e.flags & FPE_FLAG_UNDERFLOW;
        }
    }
    env->flags |= (uint8_t)t.flags;
    c->flushed += t.flushed;
    c->subnormal += t.subnormal;
    c->overflowed += t.overflowed;
    c->inexact += t.inexact;
    /* the general path for the declined elements */
    size_t nrare = t.rare;
    for (size_t i = 0; nrare > 0 && i < n; i++) {
        const uint32_t x = f32_bits(in[i]);
        if (!chop_declined(env, fmt, x)) continue;
        env->sr_index = base + i;
        out[i] = (uint16_t)chop_one_f32((fpe_format_id)fmt, env, x, c);
        nrare--;
    }
    env->sr_index = base + n;
    if (fout) widen_block(fmt, env->nan == FPE_NAN_X86, out, fout, n);
}

/* The blocks of in[0..n): 16-bit patterns into out or, when out is NULL, widened into fout
 * (which may be in: then through a block of scratch). */
static void chop_blocks(fpe_env *env, int fmt, const float *in, uint16_t *out, float *fout,
                        size_t n, fpe_chop_counts *c, bool want_counts)
{
    const chop_path path = fpe_chop_hw_applies(env, fmt)     ? CHOP_HW_F16C
                           : fpe_chop_bf16_applies(env, fmt) ? CHOP_HW_BF16
                                                             : CHOP_PORTABLE;
    const bool hw = path == CHOP_HW_F16C;
    const unsigned csr = hw ? fpe_chop_hw_begin(env) : 0;
    /* the host paths' blocks are longer: their loops' work per element is small */
    const size_t block = path != CHOP_PORTABLE ? CHOP_HW_BLOCK : CHOP_BLOCK;
    bool try_easy = true, specials = false;
    for (size_t i = 0, b = 0; i < n; i += block, b++) {
        const size_t m = n - i < block ? n - i : block;
        uint16_t r[CHOP_HW_BLOCK];
        if (b % 8 == 0) /* every few blocks, in case the data changed */
            try_easy = true, specials = false;
        if (out) {
            chop_block_f32_u16(env, fmt, path, in + i, out + i, NULL, m, c, want_counts, &try_easy,
                               &specials);
        } else if (fout != in) { /* the loops may write the floats themselves */
            chop_block_f32_u16(env, fmt, path, in + i, r, fout + i, m, c, want_counts, &try_easy,
                               &specials);
        } else {
            chop_block_f32_u16(env, fmt, path, in + i, r, NULL, m, c, want_counts, &try_easy,
                               &specials);
            widen_block(fmt, env->nan == FPE_NAN_X86, r, fout + i, m);
        }
    }
    if (hw) fpe_chop_hw_end(csr);
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
        chop_blocks(env, fmt, in, NULL, out, n, &c, counts != NULL);
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
    chop_blocks(env, fmt, in, out, NULL, n, &c, counts != NULL);
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
