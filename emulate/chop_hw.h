/* chop_hw.h: the host's vector instructions for the array rounding, where they round exactly as
 * the emulator does, and what a block loop of the array rounding reports (chop.c).
 *
 * x86-64 with AVX2: bf16 in AVX2 integer lanes, every mode and setting (chop_bf16.c): for every
 * input but a binary32 subnormal the rounding is a biased truncation of the input's bits.
 *
 * x86-64 with F16C and AVX2: vcvtps2ph rounds binary32 to fp16 in the four IEEE modes
 * (near_even, min, max, minMag: the MXCSR rounding control) with subnormal results, overflow
 * and quieted NaNs as IEEE 754 and the x86 specialization define them, which is what the
 * emulator computes.  The flags and counts come from the widened result compared with the input
 * (vcvtph2ps is exact).  Used only where nothing else differs: fp16, one of those four modes, no
 * FTZ, no DAZ.  test_chop_scalar and test_chop_exhaustive hold this path and the portable loops
 * to the scalar conversion, each for every binary32 input.
 *
 * AMPSCOPE_EMU_PORTABLE=1 in the environment (read once) or fpe_chop_hw_enable(false) keeps the
 * portable loops for both, and the portable scalar code of mul, div and sqrt (scalar_host.h):
 * for tests and benchmarks that compare them, and for anyone who suspects the hardware. */
#ifndef AMPSCOPE_EMULATE_CHOP_HW_H
#define AMPSCOPE_EMULATE_CHOP_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpe.h"
#include "fpe_inline.h"

/* What a block's loop found: flags and counts of the elements it kept. */
typedef struct chop_tally {
    uint32_t flags, rare, flushed, subnormal, overflowed, inexact;
    uint32_t boundary; /* fp16: some inexact 2^-15 <= |x| < 2^-14 whose tininess was left open */
} chop_tally;

/* u's flags, marks and counts into t */
static inline void chop_tally_add(chop_tally *t, const chop_tally *u)
{
    t->flags |= u->flags;
    t->boundary |= u->boundary;
    t->rare += u->rare;
    t->flushed += u->flushed;
    t->subnormal += u->subnormal;
    t->overflowed += u->overflowed;
    t->inexact += u->inexact;
}

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#include <immintrin.h>

/* The sum of a vector's eight 32-bit lanes (the host paths' counts). */
__attribute__((target("avx2"))) static inline uint32_t chop_lanes_sum(__m256i v)
{
    uint32_t s[8], r = 0;
    _mm256_storeu_si256((__m256i *)s, v);
    for (int k = 0; k < 8; k++)
        r += s[k];
    return r;
}
#endif

/* Whether fpe_chop_hw_block rounds to fmt in env's settings on this host. */
FPE_HIDDEN bool fpe_chop_hw_applies(const fpe_env *env, int fmt);

/* Round in[0..n) to fp16 patterns in out (or, with fout, their widened values in fout) in env's
 * mode; the flags, the boundary mark and, with want_counts, the counts in *t (t->rare is 0: no
 * element is left).  With *try_easy a cheaper loop tries first (every result a normal number
 * away from the range's ends); *try_easy is cleared when it did not suffice.  Only where
 * fpe_chop_hw_applies(env, FPE_FMT_F16). */
FPE_HIDDEN void fpe_chop_hw_block(const fpe_env *env, bool want_counts, bool *try_easy,
                                  const float *restrict in, uint16_t *restrict out,
                                  float *restrict fout, size_t n, chop_tally *t);

/* Around the blocks of one array: set the host's rounding to env's mode (no FTZ, DAZ or traps)
 * and return what fpe_chop_hw_end restores. */
FPE_HIDDEN unsigned fpe_chop_hw_begin(const fpe_env *env);
FPE_HIDDEN void fpe_chop_hw_end(unsigned saved);

/* Whether fpe_chop_bf16_block rounds to fmt on this host (bf16, AVX2: every env). */
FPE_HIDDEN bool fpe_chop_bf16_applies(const fpe_env *env, int fmt);

/* Round in[0..n) to bf16 patterns in out (or, with fout, their widened values in fout) in env's
 * mode (rnd[i]: element i's random word, read in the stochastic modes only); the flags and
 * counts in *t.  The binary32 subnormal inputs are left (t->rare: their results are to be
 * overwritten), for the general path.  Only where fpe_chop_bf16_applies(env, FPE_FMT_BF16). */
FPE_HIDDEN void fpe_chop_bf16_block(const fpe_env *env, const float *restrict in,
                                    uint16_t *restrict out, float *restrict fout,
                                    const uint32_t *restrict rnd, size_t n, chop_tally *t);

/* Allow (the default, unless AMPSCOPE_EMU_PORTABLE=1) or forbid the host paths (both above,
 * and the scalar ones: scalar_host.h); returns the previous setting.  Process-wide: for tests
 * and benchmarks. */
FPE_HIDDEN bool fpe_chop_hw_enable(bool on);
FPE_HIDDEN bool fpe_chop_hw_allowed(void); /* the current setting */

#endif
