/* bench_chop.h: the array-rounding table of `ampscope bench emu` (issue 19). */
#ifndef AMPSCOPE_APP_BENCH_CHOP_H
#define AMPSCOPE_APP_BENCH_CHOP_H

#include <stdbool.h>

#include "fpe.h"

/* Today's fpe_chop_f32_to_u16 and fpe_chop_f32 as they were before issue 19
 * (bench_chop_before.c): the "before" baseline, same arguments. */
int bench_chop_before_f32_to_u16(fpe_env *env, fpe_format_id fmt, const float *in, uint16_t *out,
                                 size_t n, fpe_chop_counts *counts);
int bench_chop_before_f32(fpe_env *env, fpe_format_id fmt, const float *in, float *out, size_t n,
                          fpe_chop_counts *counts);

/* Times array rounding f32 -> fp16/bf16 on the named input sets, the library against the
 * baseline and the hardware, after checking that they agree; prints the table (CSV when csv).
 * Returns a cli.h status (CLI_EFAIL when an implementation disagrees). */
int bench_chop_table(bool csv, double rep_seconds, int reps);

#endif
