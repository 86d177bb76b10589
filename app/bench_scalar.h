/* bench_scalar.h: the scalar div, sqrt, fma, mul and add table of `ampscope bench emu` (issue 19).
 */
#ifndef AMPSCOPE_APP_BENCH_SCALAR_H
#define AMPSCOPE_APP_BENCH_SCALAR_H

#include <stdbool.h>
#include <stdint.h>

#include "fpe.h"

/* fpe_<fmt>_div, _sqrt, _mulAdd, _mul and _add as they were before issue 19
 * (bench_scalar_before.c): the "before" baseline, same arguments. */
#define BENCH_BEFORE_DECLARE(F, T)                                                                 \
    T bench_before_##F##_div(fpe_env *env, T a, T b);                                              \
    T bench_before_##F##_sqrt(fpe_env *env, T a);                                                  \
    T bench_before_##F##_mulAdd(fpe_env *env, T a, T b, T c);                                      \
    T bench_before_##F##_mul(fpe_env *env, T a, T b);                                              \
    T bench_before_##F##_add(fpe_env *env, T a, T b);
BENCH_BEFORE_DECLARE(f16, uint16_t)
BENCH_BEFORE_DECLARE(bf16, uint16_t)
BENCH_BEFORE_DECLARE(f32, uint32_t)
#undef BENCH_BEFORE_DECLARE

/* Times scalar div, sqrt, fma, mul and add in every format and mode on two named input sets, the
 * library against the baseline, after checking that they agree on every result, flag and the final
 * random index; prints the table (CSV when csv).  Returns a cli.h status (CLI_EFAIL when they
 * disagree). */
int bench_scalar_table(bool csv, double rep_seconds, int reps);

#endif
