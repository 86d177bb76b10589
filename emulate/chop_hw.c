/* chop_hw.c: the array rounding to fp16 on the host's vcvtps2ph (see chop_hw.h). */
#include "chop_hw.h"

#include "host.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* -1: not yet read from AMPSCOPE_EMU_PORTABLE */
static atomic_int hw_allowed = -1;

bool fpe_chop_hw_allowed(void)
{
    int v = atomic_load_explicit(&hw_allowed, memory_order_relaxed);
    if (v < 0) {
        const char *p = getenv("AMPSCOPE_EMU_PORTABLE");
        int expected = -1;
        v = !(p && p[0] && strcmp(p, "0") != 0);
        if (!atomic_compare_exchange_strong(&hw_allowed, &expected, v)) v = expected;
    }
    return v != 0;
}

bool fpe_chop_hw_enable(bool on)
{
    const bool was = fpe_chop_hw_allowed();
    atomic_store(&hw_allowed, on ? 1 : 0);
    atomic_store(&fpe_host_scalar_state, -1); /* read again at the next scalar call */
    return was;
}

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#include <immintrin.h>

#define HW_TARGET __attribute__((target("avx2,f16c")))

bool fpe_chop_hw_applies(const fpe_env *env, int fmt)
{
    if (fmt != FPE_FMT_F16 || env->ftz || env->daz) return false;
    if (env->round != FPE_RNE && env->round != FPE_RZ && env->round != FPE_RD &&
        env->round != FPE_RU)
        return false;
    return fpe_chop_hw_allowed() && fpe_host_avx2_f16c();
}

/* MXCSR: rounding control (bits 13-14), flush to zero (15), denormals are zero (6), the
 * exception masks (7-12) and flags (0-5).  Through asm with a memory clobber, so that no load
 * or store of the block moves across. */
static unsigned mxcsr_get(void)
{
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v) : : "memory");
    return v;
}

static void mxcsr_set(unsigned v) { __asm__ volatile("ldmxcsr %0" : : "m"(v) : "memory"); }

static unsigned mxcsr_rc(int round)
{
    switch (round) {
    case FPE_RD: return 1u << 13;
    case FPE_RU: return 2u << 13;
    case FPE_RZ: return 3u << 13;
    default: return 0; /* FPE_RNE */
    }
}

HW_TARGET static uint32_t lanes_or_any(__m256i v) { return !_mm256_testz_si256(v, v); }

/* One loop for the constant choices (always inlined into hw_loop's branches).  Per lane: the
 * hardware result h, widened exactly to w; the input is exact when w equals it (a NaN counts as
 * exact: it raises no inexact); tiny when |x| < 2^-14, and surely tiny after rounding below
 * 0x387FE000 (the lanes between have 11 leading ones and are left to the caller: t->boundary);
 * overflowing when finite and |x| >= 2^16 or the result is an infinity. */
HW_TARGET __attribute__((always_inline)) static inline void
hw_lanes(const bool canonical, const bool want_counts, const bool widen, const float *restrict in,
         uint16_t *restrict out, float *restrict fout, size_t n, chop_tally *t)
{
    const __m256i abs = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
    const __m256i maxf = _mm256_set1_epi32(0x7F7FFFFF), qnan = _mm256_set1_epi32(0x7FC00000);
    const __m256i two_m14 = _mm256_set1_epi32(0x38800000), edge = _mm256_set1_epi32(0x387FE000);
    const __m256i big = _mm256_set1_epi32(0x477FFFFF), zero = _mm256_setzero_si256();
    const __m128i mag16 = _mm_set1_epi16(0x7FFF), inf16 = _mm_set1_epi16(0x7C00);
    __m256i f_exact = _mm256_set1_epi32(-1), f_tiny = zero, f_sure = zero, f_over = zero;
    __m256i f_inv = zero, c_exact = zero, c_over = zero, c_flush = zero, c_sub = zero;
    for (size_t i = 0; i < n; i += 8) {
        const __m256i u = _mm256_loadu_si256((const __m256i *)(in + i));
        __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_CUR_DIRECTION);
        __m256i w = _mm256_castps_si256(_mm256_cvtph_ps(h));
        const __m256i a = _mm256_and_si256(u, abs), wa = _mm256_and_si256(w, abs);
        const __m256i nan = _mm256_cmpgt_epi32(a, inf);
        const __m256i exact = _mm256_or_si256(_mm256_cmpeq_epi32(w, u), nan);
        const __m256i special = _mm256_cmpgt_epi32(a, maxf);
        const __m256i over = _mm256_andnot_si256(
            special, _mm256_or_si256(_mm256_cmpgt_epi32(a, big), _mm256_cmpeq_epi32(wa, inf)));
        f_exact = _mm256_and_si256(f_exact, exact);
        f_tiny =
            _mm256_or_si256(f_tiny, _mm256_andnot_si256(exact, _mm256_cmpgt_epi32(two_m14, a)));
        f_sure = _mm256_or_si256(f_sure, _mm256_andnot_si256(exact, _mm256_cmpgt_epi32(edge, a)));
        f_over = _mm256_or_si256(f_over, over);
        f_inv = _mm256_or_si256(f_inv, _mm256_and_si256(nan, _mm256_cmpgt_epi32(qnan, a)));
        if (want_counts) {
            const __m256i wz = _mm256_cmpeq_epi32(wa, zero);
            c_exact = _mm256_sub_epi32(c_exact, exact);
            c_over = _mm256_sub_epi32(c_over, over);
            c_flush =
                _mm256_sub_epi32(c_flush, _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero), wz));
            c_sub =
                _mm256_sub_epi32(c_sub, _mm256_andnot_si256(wz, _mm256_cmpgt_epi32(two_m14, wa)));
        }
        if (canonical) { /* every NaN result is 0x7FFF, widened 0x7FFFFFFF */
            const __m128i nan16 = _mm_cmpgt_epi16(_mm_and_si128(h, mag16), inf16);
            h = _mm_or_si128(_mm_andnot_si128(nan16, h), _mm_and_si128(nan16, mag16));
            w = _mm256_or_si256(_mm256_andnot_si256(nan, w), _mm256_and_si256(nan, abs));
        }
        if (widen) /* the patterns are not wanted then */
            _mm256_storeu_si256((__m256i *)(fout + i), w);
        else
            _mm_storeu_si128((__m128i *)(out + i), h);
    }
    t->flags =
        (lanes_or_any(_mm256_xor_si256(f_exact, _mm256_set1_epi32(-1))) ? FPE_FLAG_INEXACT : 0) |
        (lanes_or_any(f_sure) ? FPE_FLAG_UNDERFLOW : 0) |
        (lanes_or_any(f_over) ? FPE_FLAG_OVERFLOW : 0) |
        (lanes_or_any(f_inv) ? FPE_FLAG_INVALID : 0);
    t->boundary = lanes_or_any(f_tiny);
    t->rare = 0;
    if (want_counts) {
        t->inexact = (uint32_t)n - chop_lanes_sum(c_exact);
        t->overflowed = chop_lanes_sum(c_over);
        t->flushed = chop_lanes_sum(c_flush);
        t->subnormal = chop_lanes_sum(c_sub);
    } else {
        t->inexact = t->overflowed = t->flushed = t->subnormal = 0;
    }
}

/* The cheap first try: every input's magnitude in [2^-14, 65504].  Then every result is a
 * normal number, nothing is tiny, overflows or is a NaN, and an input is inexact when one of
 * its 13 bits below the result's last is set.  The range test: the smallest and the largest
 * 2|x| of the block (the bits shifted left by one), compared once.  Returns false when some
 * input is outside (the block then goes through hw_lanes). */
HW_TARGET __attribute__((always_inline)) static inline void
hw_easy_step(const bool want_counts, const bool widen, const float *restrict in,
             uint16_t *restrict out, float *restrict fout, size_t i, __m256i *lo, __m256i *hi,
             __m256i *any, __m256i *c_exact)
{
    const __m256i u = _mm256_loadu_si256((const __m256i *)(in + i));
    const __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_CUR_DIRECTION);
    if (widen) /* the patterns are not wanted then */
        _mm256_storeu_ps(fout + i, _mm256_cvtph_ps(h));
    else
        _mm_storeu_si128((__m128i *)(out + i), h);
    const __m256i a2 = _mm256_slli_epi32(u, 1);
    *lo = _mm256_min_epu32(*lo, a2);
    *hi = _mm256_max_epu32(*hi, a2);
    *any = _mm256_or_si256(*any, u);
    if (want_counts)
        *c_exact = _mm256_sub_epi32(
            *c_exact, _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x1FFF)),
                                         _mm256_setzero_si256()));
}

HW_TARGET __attribute__((always_inline)) static inline bool
hw_easy_lanes(const bool want_counts, const bool widen, const float *restrict in,
              uint16_t *restrict out, float *restrict fout, size_t n, chop_tally *t)
{
    const __m256i zero = _mm256_setzero_si256(), ones = _mm256_set1_epi32(-1);
    /* two of each accumulator: two independent chains */
    __m256i lo0 = ones, lo1 = ones, hi0 = zero, hi1 = zero, any0 = zero, any1 = zero;
    __m256i c0 = zero, c1 = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        hw_easy_step(want_counts, widen, in, out, fout, i, &lo0, &hi0, &any0, &c0);
        hw_easy_step(want_counts, widen, in, out, fout, i + 8, &lo1, &hi1, &any1, &c1);
    }
    if (i < n) hw_easy_step(want_counts, widen, in, out, fout, i, &lo0, &hi0, &any0, &c0);
    const __m256i lo = _mm256_min_epu32(lo0, lo1), hi = _mm256_max_epu32(hi0, hi1);
    const __m256i lo_ok =
        _mm256_cmpeq_epi32(_mm256_max_epu32(lo, _mm256_set1_epi32(0x71000000)), lo);
    const __m256i hi_ok =
        _mm256_cmpeq_epi32(_mm256_min_epu32(hi, _mm256_set1_epi32((int32_t)0x8EFFC000u)), hi);
    if (_mm256_movemask_epi8(_mm256_and_si256(lo_ok, hi_ok)) != -1) return false;
    const bool inexact =
        !_mm256_testz_si256(_mm256_or_si256(any0, any1), _mm256_set1_epi32(0x1FFF));
    memset(t, 0, sizeof *t);
    t->flags = inexact ? FPE_FLAG_INEXACT : 0;
    if (want_counts) t->inexact = (uint32_t)n - chop_lanes_sum(_mm256_add_epi32(c0, c1));
    return true;
}

/* One of the loops for the choices at run time (constants in each branch); the easy loop's
 * answer, or true. */
HW_TARGET static bool hw_loop(bool easy, bool canonical, bool want_counts, const float *restrict in,
                              uint16_t *restrict out, float *restrict fout, size_t n, chop_tally *t)
{
#define HW_EASY(K, W)                                                                              \
    if (want_counts == (K) && (fout != NULL) == (W))                                               \
        return hw_easy_lanes(K, W, in, out, fout, n, t);
#define HW_FULL(C, K, W)                                                                           \
    if (canonical == (C) && want_counts == (K) && (fout != NULL) == (W)) {                         \
        hw_lanes(C, K, W, in, out, fout, n, t);                                                    \
        return true;                                                                               \
    }
    if (easy) {
        HW_EASY(false, false)
        HW_EASY(false, true)
        HW_EASY(true, false)
        HW_EASY(true, true)
    }
    HW_FULL(false, false, false)
    HW_FULL(false, false, true)
    HW_FULL(false, true, false)
    HW_FULL(false, true, true)
    HW_FULL(true, false, false)
    HW_FULL(true, false, true)
    HW_FULL(true, true, false)
    HW_FULL(true, true, true)
    return true;
#undef HW_FULL
#undef HW_EASY
}

/* hw_loop over in[0..n), the last n mod 8 padded with 1.0 (exact, normal: no flags, nothing
 * counted, easy). */
static bool hw_run(bool easy, bool canonical, bool want_counts, const float *restrict in,
                   uint16_t *restrict out, float *restrict fout, size_t n, chop_tally *t)
{
    const size_t whole = n & ~(size_t)7;
    if (!hw_loop(easy, canonical, want_counts, in, out, fout, whole, t)) return false;
    if (whole < n) {
        float pad[8] = {1, 1, 1, 1, 1, 1, 1, 1}, pad_f[8];
        uint16_t pad_out[8];
        chop_tally tail;
        memcpy(pad, in + whole, (n - whole) * sizeof *in);
        if (!hw_loop(easy, canonical, want_counts, pad, pad_out, fout ? pad_f : NULL, 8, &tail))
            return false;
        if (fout)
            memcpy(fout + whole, pad_f, (n - whole) * sizeof *fout);
        else
            memcpy(out + whole, pad_out, (n - whole) * sizeof *out);
        chop_tally_add(t, &tail);
    }
    return true;
}

void fpe_chop_hw_block(const fpe_env *env, bool want_counts, bool *try_easy,
                       const float *restrict in, uint16_t *restrict out, float *restrict fout,
                       size_t n, chop_tally *t)
{
    const bool canonical = env->nan != FPE_NAN_X86;
    if (!*try_easy || !hw_run(true, canonical, want_counts, in, out, fout, n, t)) {
        *try_easy = false;
        (void)hw_run(false, canonical, want_counts, in, out, fout, n, t);
    }
}

unsigned fpe_chop_hw_begin(const fpe_env *env)
{
    const unsigned saved = mxcsr_get();
    /* the mode's rounding, no FTZ or DAZ, every exception masked, flags clear */
    mxcsr_set((saved & ~0xE07Fu) | 0x1F80u | mxcsr_rc(env->round));
    return saved;
}

void fpe_chop_hw_end(unsigned saved) { mxcsr_set(saved); }

#else /* no vcvtps2ph: the portable loops always */

bool fpe_chop_hw_applies(const fpe_env *env, int fmt)
{
    (void)env;
    (void)fmt;
    return false;
}

void fpe_chop_hw_block(const fpe_env *env, bool want_counts, bool *try_easy,
                       const float *restrict in, uint16_t *restrict out, float *restrict fout,
                       size_t n, chop_tally *t)
{
    (void)env, (void)want_counts, (void)try_easy, (void)in, (void)out, (void)fout, (void)n;
    memset(t, 0, sizeof *t);
}

unsigned fpe_chop_hw_begin(const fpe_env *env)
{
    (void)env;
    return 0;
}

void fpe_chop_hw_end(unsigned saved) { (void)saved; }

#endif
