/* ref_stats.h: what test_stats.c and gpu_cases_stats.c share. */
#ifndef AMPSCOPE_TESTS_REF_STATS_H
#define AMPSCOPE_TESTS_REF_STATS_H

#include "kt.h"

/* ak_stats_accumulate(b, x, target, scale) onto *inout: the scale (fp32
 * bits; NULL passes no scale) and the result in b's memory, the result
 * guarded; fails the test unless the call succeeds. */
void ref_stats_accumulate(ak_backend *b, ak_tensor x, fpe_format_id target,
                          const uint32_t *scale_bits, ak_stats *inout);

#endif
