/* chop_hw.h: the host's conversion instruction for the array rounding, where it rounds exactly as
 * the emulator does, and what a block loop of the array rounding reports (chop.c).
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
 * portable loops: for tests and benchmarks that compare the two, and for anyone who suspects
 * the hardware. */
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

/* Allow (the default, unless AMPSCOPE_EMU_PORTABLE=1) or forbid the hardware path; returns the
 * previous setting.  Process-wide: for tests and benchmarks. */
FPE_HIDDEN bool fpe_chop_hw_enable(bool on);

#endif
