/* test_support.h: what every emulator test shares.
 *
 *   - seeds and counts from the environment (AMPSCOPE_TEST_SEED,
 *     AMPSCOPE_TEST_RANDOM), and a small deterministic generator;
 *   - ts_emu_op / ts_emu_compare: the emulator called through the same operation
 *     codes as the oracle, so one driver compares the two;
 *   - ts_check_op: run both, compare bits and flags, print the first
 *     mismatches in full and count the rest;
 *   - tables of special values and generators of "interesting" operands.
 */
#ifndef AMPSCOPE_TESTS_TEST_SUPPORT_H
#define AMPSCOPE_TESTS_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpe.h"
#include "oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- environment knobs ---------------------------------------------------- */
uint64_t ts_seed(void);         /* AMPSCOPE_TEST_SEED, default 20240601 */
uint64_t ts_random_count(void); /* AMPSCOPE_TEST_RANDOM, default 1000000 */

/* ---- generator: xoshiro256** seeded through splitmix64 -------------------- */
typedef struct ts_rng {
    uint64_t s[4];
} ts_rng;
void ts_rng_init(ts_rng *r, uint64_t seed);
uint64_t ts_next(ts_rng *r);
uint32_t ts_below(ts_rng *r, uint32_t n); /* uniform in [0, n) */
double ts_uniform(ts_rng *r);             /* uniform in [0, 1) */

/* ---- names ------------------------------------------------------------------ */
extern const char *const ts_mode_names[FPE_ROUND_COUNT]; /* TestFloat's names */
const char *ts_format_name(fpe_format_id fmt);
/* Parse "fp16"/"f16"/"bf16"/"fp32"/"f32"; -1 if unknown. */
int ts_parse_format(const char *s);

/* ---- the emulator through the oracle's operation codes ---------------------- */
bool ts_emu_has_op(orc_op op, fpe_format_id fmt);
uint64_t ts_emu_op(orc_op op, fpe_format_id fmt, fpe_env *env, const uint64_t *operands);
bool ts_emu_compare(orc_cmp cmp, fpe_format_id fmt, fpe_env *env, uint32_t a, uint32_t b);
/* Whether a call of op must consume exactly one random index. */
bool ts_op_consumes_index(orc_op op);

/* ---- comparing ------------------------------------------------------------------ */
typedef struct ts_checker {
    const char *what; /* test name for the summary */
    uint64_t checked;
    uint64_t mismatches;
    int max_report; /* mismatches printed in full (default 10) */
} ts_checker;
void ts_checker_init(ts_checker *ck, const char *what);
/* Compare emulator and oracle on one case; env supplies everything but the
 * flags (cleared here).  Returns true when they agree. */
bool ts_check_op(ts_checker *ck, orc_op op, fpe_format_id fmt, const fpe_env *env,
                 const uint64_t *operands);
bool ts_check_compare(ts_checker *ck, orc_cmp cmp, fpe_format_id fmt, const fpe_env *env,
                      uint32_t a, uint32_t b);
/* Print "what: N checked, M mismatches" and return M. */
uint64_t ts_checker_summary(const ts_checker *ck);
/* Print a mismatch in the common layout (used by tests with their own loops). */
void ts_print_mismatch(const char *opname, fpe_format_id fmt, const fpe_env *env,
                       const uint64_t *operands, int n_operands, uint64_t expected,
                       uint8_t expected_flags, uint64_t got, uint8_t got_flags);

/* ---- operands -------------------------------------------------------------------- */
/* Special values of fmt (both signs, NaNs with payloads, boundaries);
 * returns the count, writes at most cap. */
size_t ts_special_values(fpe_format_id fmt, uint32_t *out, size_t cap);
/* A smaller set for triples. */
size_t ts_special_values_small(fpe_format_id fmt, uint32_t *out, size_t cap);
/* A finite value with unbiased exponent e (clamped to the format; e < emin
 * gives a subnormal of about that size), random sign and significand. */
uint32_t ts_value_with_exp(ts_rng *r, fpe_format_id fmt, int e);
/* A random operand biased toward interesting values. */
uint32_t ts_random_operand(ts_rng *r, fpe_format_id fmt);
/* Unbiased exponent of a finite nonzero value (subnormals: their real one). */
int ts_exponent_of(fpe_format_id fmt, uint32_t bits);
/* Operands for op: biased pairs/triples (close exponents for cancellation,
 * products and quotients near the underflow and overflow thresholds, ...). */
void ts_random_operands(ts_rng *r, orc_op op, fpe_format_id fmt, uint64_t *operands);
/* A random environment field: a deterministic mode and tininess setting. */
static inline fpe_env ts_env(int mode, int tininess)
{
    fpe_env e = {(uint8_t)mode, (uint8_t)tininess, 0, 0, FPE_NAN_X86, 0, 0, 0, 0};
    return e;
}

#ifdef __cplusplus
}
#endif
#endif
