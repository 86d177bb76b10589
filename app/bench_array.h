/* bench_array.h: the array-arithmetic table of `ampscope bench emu --array` (issue 19). */
#ifndef AMPSCOPE_APP_BENCH_ARRAY_H
#define AMPSCOPE_APP_BENCH_ARRAY_H

#include <stdbool.h>

/* Times fpe_array_arith against the per-element scalar loop on the named input sets, after
 * checking that they agree; prints the table (CSV when csv).  Returns a cli.h status
 * (CLI_EFAIL when they disagree). */
int bench_array_table(bool csv, double rep_seconds, int reps);

#endif
