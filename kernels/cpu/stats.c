/* cpu/stats.c: ak_stats_accumulate on the host, one loop over x. */
#include <string.h>

#include "backend.h"
#include "elem/stats.h"

/* What one pass found, before it is added to the result.  Two histograms,
 * for even and odd elements: runs of elements in one bin (zeros, a
 * constant) then update two counters alternately instead of waiting on one. */
typedef struct tally {
    uint64_t flushed, subnormal, overflowed;
    uint32_t amax_bits;
    uint64_t hist[2][AK_HIST_BINS];
} tally;

/* Forced inline with a constant src, so each dtype gets its own loop. */
FPE_INLINE void tally_elements(fpe_format_id src, const void *data, size_t n, ak_stats_cuts c,
                               tally *t)
{
    uint64_t flushed = 0, subnormal = 0, overflowed = 0;
    uint32_t amax_bits = 0;
    const uint32_t *x32 = (const uint32_t *)data;
    const uint16_t *x16 = (const uint16_t *)data;
    for (size_t i = 0; i < n; i++) {
        const uint32_t mag = ak_stats_mag_k(src, src == FPE_FMT_F32 ? x32[i] : x16[i]);
        t->hist[i & 1][ak_stats_bin_k(src, mag)]++;
        uint32_t a = mag;
        if (!ak_stats_plain_k(c, mag)) {
            flushed += ak_stats_flushed_k(c, mag);
            subnormal += ak_stats_subnormal_k(c, mag);
            overflowed += ak_stats_overflowed_k(c, mag);
            a = ak_stats_amax_bits_k(c, mag);
        }
        amax_bits = a > amax_bits ? a : amax_bits;
    }
    t->flushed = flushed;
    t->subnormal = subnormal;
    t->overflowed = overflowed;
    t->amax_bits = amax_bits;
}

int ak_cpu_stats(ak_backend *b, ak_tensor x, fpe_format_id target, const float *scale,
                 ak_stats *result)
{
    (void)b;
    const fpe_format_id src = (fpe_format_id)x.dtype;
    uint32_t scale_bits = 0x3F800000u; /* 1.0f */
    if (scale) memcpy(&scale_bits, scale, sizeof scale_bits);
    const ak_stats_cuts c = ak_stats_cuts_of(src, target, scale_bits);
    tally t;
    memset(&t, 0, sizeof t);
    switch (src) {
    case FPE_FMT_F16: tally_elements(FPE_FMT_F16, x.data, x.n, c, &t); break;
    case FPE_FMT_BF16: tally_elements(FPE_FMT_BF16, x.data, x.n, c, &t); break;
    case FPE_FMT_F32: tally_elements(FPE_FMT_F32, x.data, x.n, c, &t); break;
    }
    uint64_t hist[AK_HIST_BINS];
    for (int i = 0; i < AK_HIST_BINS; i++)
        hist[i] = t.hist[0][i] + t.hist[1][i];
    result->count += x.n;
    result->zero += hist[AK_HIST_ZERO];
    result->nonfinite += hist[AK_HIST_NONFINITE];
    result->nonzero += x.n - hist[AK_HIST_ZERO] - hist[AK_HIST_NONFINITE];
    result->flushed += t.flushed;
    result->subnormal += t.subnormal;
    result->overflowed += t.overflowed;
    for (int i = 0; i < AK_HIST_BINS; i++)
        result->hist[i] += hist[i];
    /* compared as bit patterns, as the cuda backend's atomicMax does: the
     * same order for the non-negative amax values, and the same answer even
     * for a result that was not zeroed */
    const double amax = ak_elem_value(src, t.amax_bits);
    if (fpe_f64_bits(amax) > fpe_f64_bits(result->amax)) result->amax = amax;
    return AK_OK;
}
