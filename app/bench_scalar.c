/* bench_scalar.c: scalar div, sqrt, fma, mul and add in `ampscope bench emu --scalar` (issue 19).
 *
 * Two named input sets of BENCH_SCALAR_N operand triples per format, drawn once from a fixed
 * seed:
 *   normal  random signs, exponents in [-6, 6], random significands (the operands of the main
 *           table of `bench emu`): normal operands, results mostly normal;
 *   edge    25% subnormal operands, 10% zeros, infinities and NaNs (quiet and signaling),
 *           15% exponents at the ends of the range (results that overflow or underflow),
 *           10% exact cases (a = b, c = -(a*b) rounded), the rest any finite exponent.
 * sqrt takes |a|.  Every row times the library (fpe_<fmt>_div, _sqrt, _mulAdd, _mul, _add) and the
 * code as it was before issue 19 (bench_scalar_before.c) on the same inputs, interleaved repetition
 * by repetition, and gives the median ratio.  Before timing, the two must agree on every result, on
 * every element's flags and on the final random index.  Times are the process's CPU time
 * (ut_cpu_seconds), so that other work on the machine stretches no row. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_scalar.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

#define BENCH_SCALAR_N    (1u << 14)
#define BENCH_SCALAR_REPS 9

enum { SET_NORMAL, SET_EDGE, SET_COUNT };
static const char *const set_names[SET_COUNT] = {"normal", "edge"};
enum { OP_DIV, OP_SQRT, OP_FMA, OP_MUL, OP_ADD, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"div", "sqrt", "fma", "mul", "add"};
static const char *const fmt_names[3] = {"fp16", "bf16", "fp32"};
enum { IMPL_BEFORE, IMPL_AFTER };

typedef struct scalar_data {
    uint32_t in[3][SET_COUNT][3][BENCH_SCALAR_N]; /* format, set, operand a/b/c */
} scalar_data;

static volatile uint64_t scalar_sink;

/* ---- one call, and one timed pass --------------------------------------------- */
#define CALL_FORMAT(F, T, PFX)                                                                     \
    switch (op) {                                                                                  \
    case OP_DIV: return PFX##F##_div(env, (T)a, (T)b);                                             \
    case OP_SQRT: return PFX##F##_sqrt(env, (T)a);                                                 \
    case OP_MUL: return PFX##F##_mul(env, (T)a, (T)b);                                             \
    case OP_ADD: return PFX##F##_add(env, (T)a, (T)b);                                             \
    default: return PFX##F##_mulAdd(env, (T)a, (T)b, (T)c);                                        \
    }

static uint32_t call_after(int op, int fmt, fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    if (fmt == FPE_FMT_F16) CALL_FORMAT(f16, uint16_t, fpe_)
    if (fmt == FPE_FMT_BF16) CALL_FORMAT(bf16, uint16_t, fpe_)
    CALL_FORMAT(f32, uint32_t, fpe_)
}

static uint32_t call_before(int op, int fmt, fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    if (fmt == FPE_FMT_F16) CALL_FORMAT(f16, uint16_t, bench_before_)
    if (fmt == FPE_FMT_BF16) CALL_FORMAT(bf16, uint16_t, bench_before_)
    CALL_FORMAT(f32, uint32_t, bench_before_)
}

typedef void (*scalar_pass)(const uint32_t *const *in, fpe_env *env);

/* The timed loops call the functions directly, as a user's loop would. */
#define PASS_OPS(F, T, PFX, NAME)                                                                  \
    static void pass_##NAME##_div(const uint32_t *const *in, fpe_env *env)                         \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_SCALAR_N; i++)                                                \
            acc += PFX##F##_div(env, (T)in[0][i], (T)in[1][i]);                                    \
        scalar_sink += acc;                                                                        \
    }                                                                                              \
    static void pass_##NAME##_sqrt(const uint32_t *const *in, fpe_env *env)                        \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_SCALAR_N; i++)                                                \
            acc += PFX##F##_sqrt(env, (T)in[0][i]);                                                \
        scalar_sink += acc;                                                                        \
    }                                                                                              \
    static void pass_##NAME##_fma(const uint32_t *const *in, fpe_env *env)                         \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_SCALAR_N; i++)                                                \
            acc += PFX##F##_mulAdd(env, (T)in[0][i], (T)in[1][i], (T)in[2][i]);                    \
        scalar_sink += acc;                                                                        \
    }                                                                                              \
    static void pass_##NAME##_mul(const uint32_t *const *in, fpe_env *env)                         \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_SCALAR_N; i++)                                                \
            acc += PFX##F##_mul(env, (T)in[0][i], (T)in[1][i]);                                    \
        scalar_sink += acc;                                                                        \
    }                                                                                              \
    static void pass_##NAME##_add(const uint32_t *const *in, fpe_env *env)                         \
    {                                                                                              \
        uint64_t acc = 0;                                                                          \
        for (size_t i = 0; i < BENCH_SCALAR_N; i++)                                                \
            acc += PFX##F##_add(env, (T)in[0][i], (T)in[1][i]);                                    \
        scalar_sink += acc;                                                                        \
    }
PASS_OPS(f16, uint16_t, fpe_, after_f16)
PASS_OPS(bf16, uint16_t, fpe_, after_bf16)
PASS_OPS(f32, uint32_t, fpe_, after_f32)
PASS_OPS(f16, uint16_t, bench_before_, before_f16)
PASS_OPS(bf16, uint16_t, bench_before_, before_bf16)
PASS_OPS(f32, uint32_t, bench_before_, before_f32)

#define PASS_ROW(NAME)                                                                             \
    {                                                                                              \
        pass_##NAME##_div, pass_##NAME##_sqrt, pass_##NAME##_fma, pass_##NAME##_mul,               \
            pass_##NAME##_add                                                                      \
    }
static const scalar_pass passes[2][3][OP_COUNT] = {
    {PASS_ROW(before_f16), PASS_ROW(before_bf16), PASS_ROW(before_f32)},
    {PASS_ROW(after_f16), PASS_ROW(after_bf16), PASS_ROW(after_f32)}};

/* ---- inputs ------------------------------------------------------------------- */
static uint64_t scalar_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t make(int fmt, uint32_t sign, uint32_t field, uint64_t frac_bits)
{
    const int fb = fmt == FPE_FMT_F16 ? 10 : fmt == FPE_FMT_BF16 ? 7 : 23;
    const int bits = fmt == FPE_FMT_F32 ? 32 : 16;
    return sign << (bits - 1) | field << fb | (uint32_t)(frac_bits & ((1u << fb) - 1));
}

static uint32_t edge_value(int fmt, uint64_t r)
{
    const uint32_t emax_field = fmt == FPE_FMT_F16 ? 31 : 255, sign = (uint32_t)(r >> 63);
    const uint64_t frac = r >> 20;
    const uint32_t pick = (uint32_t)(r % 100);
    if (pick < 25) return make(fmt, sign, 0, frac | 1);                      /* subnormal */
    if (pick < 30) return make(fmt, sign, 0, 0);                             /* zero */
    if (pick < 33) return make(fmt, sign, emax_field, 0);                    /* infinity */
    if (pick < 35) return make(fmt, sign, emax_field, frac | 1);             /* NaN */
    if (pick < 40) return make(fmt, sign, 1 + (uint32_t)(r >> 8) % 3, frac); /* near emin */
    if (pick < 50) return make(fmt, sign, emax_field - 1 - (uint32_t)(r >> 8) % 3, frac);
    return make(fmt, sign, 1 + (uint32_t)((r >> 8) % (emax_field - 1)), frac);
}

static void scalar_fill(scalar_data *d)
{
    uint64_t state = 20261202;
    for (int fmt = 0; fmt < 3; fmt++)
        for (size_t i = 0; i < BENCH_SCALAR_N; i++) {
            for (int k = 0; k < 3; k++) {
                const uint64_t r = scalar_splitmix(&state);
                const int bias = fmt == FPE_FMT_F16 ? 15 : 127;
                d->in[fmt][SET_NORMAL][k][i] =
                    make(fmt, (uint32_t)(r >> 63), (uint32_t)(bias + (int)(r % 13) - 6), r >> 16);
                d->in[fmt][SET_EDGE][k][i] = edge_value(fmt, scalar_splitmix(&state));
            }
            const uint64_t r = scalar_splitmix(&state);
            if (r % 10 == 0) { /* exact cases: a / a, a * a - (a * a rounded) */
                uint32_t *e[3] = {&d->in[fmt][SET_EDGE][0][i], &d->in[fmt][SET_EDGE][1][i],
                                  &d->in[fmt][SET_EDGE][2][i]};
                fpe_env env = fpe_env_default();
                *e[1] = *e[0];
                const uint32_t sq = call_after(OP_FMA, fmt, &env, *e[0], *e[0], 0);
                *e[2] = sq ^ (fmt == FPE_FMT_F32 ? 0x80000000u : 0x8000u);
            }
        }
}

/* ---- checks --------------------------------------------------------------------- */
static fpe_env pass_env(int mode)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = 1;
    env.sr_index = 3;
    return env;
}

static uint32_t operand_a(int op, int fmt, uint32_t a)
{
    return op == OP_SQRT ? a & ~(fmt == FPE_FMT_F32 ? 0x80000000u : 0x8000u) : a;
}

/* Elements on which the library and the baseline disagree (result or flags; one more when the
 * final random index differs), in both tininess rules. */
static size_t scalar_check(const uint32_t *const *in, int op, int fmt, int mode)
{
    size_t differ = 0;
    for (int tin = 0; tin < 2; tin++) {
        fpe_env e1 = pass_env(mode), e2 = e1;
        e1.tininess = e2.tininess = (uint8_t)tin;
        for (size_t i = 0; i < BENCH_SCALAR_N; i++) {
            const uint32_t a = operand_a(op, fmt, in[0][i]);
            e1.flags = e2.flags = 0;
            const uint32_t r1 = call_after(op, fmt, &e1, a, in[1][i], in[2][i]);
            const uint32_t r2 = call_before(op, fmt, &e2, a, in[1][i], in[2][i]);
            differ += r1 != r2 || e1.flags != e2.flags;
        }
        differ += e1.sr_index != e2.sr_index;
    }
    return differ;
}

/* ---- timing --------------------------------------------------------------------- */
/* Times before and after interleaved: rate[k] is impl k's median in Mops/s, *ratio the median
 * over the repetitions of after's rate over before's in the same repetition. */
static void scalar_time(const uint32_t *const *in, int op, int fmt, int mode, double rep_seconds,
                        int reps, double *rate, double *ratio)
{
    fpe_env env = pass_env(mode);
    const scalar_pass p[2] = {passes[IMPL_BEFORE][fmt][op], passes[IMPL_AFTER][fmt][op]};
    unsigned long n = 1;
    double elapsed;
    for (;;) {
        double t0 = ut_cpu_seconds();
        for (unsigned long k = 0; k < n; k++)
            p[0](in, &env);
        elapsed = ut_cpu_seconds() - t0;
        if (elapsed >= rep_seconds / 8 || n >= (1ul << 30)) break;
        n *= 2;
    }
    n = (unsigned long)((double)n * rep_seconds / (elapsed > 0 ? elapsed : 1e-9)) + 1;
    double r[2][BENCH_SCALAR_REPS], q[BENCH_SCALAR_REPS];
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < 2; k++) {
            env = pass_env(mode);
            double t0 = ut_cpu_seconds();
            for (unsigned long j = 0; j < n; j++)
                p[k](in, &env);
            double t = ut_cpu_seconds() - t0;
            r[k][rep] = (double)n * BENCH_SCALAR_N / (t > 0 ? t : 1e-9) / 1e6;
        }
        q[rep] = r[1][rep] / r[0][rep];
    }
    for (int k = 0; k < 2; k++) {
        qsort(r[k], (size_t)reps, sizeof r[k][0], bench_compare_double);
        rate[k] = r[k][reps / 2];
    }
    qsort(q, (size_t)reps, sizeof q[0], bench_compare_double);
    *ratio = q[reps / 2];
}

/* ---- the table ------------------------------------------------------------------ */
int bench_scalar_table(bool csv, double rep_seconds, int reps)
{
    scalar_data *d = malloc(sizeof *d);
    if (!d) return cli_error(CLI_EFAIL, "out of memory");
    scalar_fill(d);
    if (reps > BENCH_SCALAR_REPS) reps = BENCH_SCALAR_REPS;
    if (csv)
        printf("operation,format,inputs,mode,before,after,after/before,target,status\n");
    else
        printf("\nscalar div, sqrt, fma, mul and add (issue 19): %u operand sets per input set, "
               "Mops/s of "
               "CPU time; before = the code before issue 19\n%-4s %-4s %-6s %-11s %9s %9s %8s  "
               "%-7s %s\n",
               BENCH_SCALAR_N, "op", "fmt", "inputs", "mode", "before", "after", "ratio", "target",
               "status");
    size_t bad = 0;
    const char *bad_op = NULL, *bad_fmt = NULL;
    static uint32_t sqrt_in[BENCH_SCALAR_N];
    for (int op = 0; op < OP_COUNT; op++)
        for (int fmt = 0; fmt < 3; fmt++)
            for (int set = 0; set < SET_COUNT; set++)
                for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
                    const uint32_t *in[3] = {d->in[fmt][set][0], d->in[fmt][set][1],
                                             d->in[fmt][set][2]};
                    if (op == OP_SQRT) {
                        for (size_t i = 0; i < BENCH_SCALAR_N; i++)
                            sqrt_in[i] = operand_a(op, fmt, in[0][i]);
                        in[0] = sqrt_in;
                    }
                    const size_t differ = scalar_check(in, op, fmt, mode);
                    if (differ && !bad_op) {
                        bad = differ;
                        bad_op = op_names[op];
                        bad_fmt = fmt_names[fmt];
                    }
                    double rate[2], ratio;
                    scalar_time(in, op, fmt, mode, rep_seconds, reps, rate, &ratio);
                    /* the targets, on normal operands in the deterministic modes: div, sqrt
                     * and fma 2.1x; fp16 mul 1.5x, fp32 mul and add 1.4x (3x SoftFloat, from
                     * 2.1x and 2.2x; fp16 add was 3.4x SoftFloat; bf16: none, SoftFloat has
                     * no bf16) */
                    const double target = op == OP_DIV || op == OP_SQRT || op == OP_FMA ? 2.1
                                          : fmt == FPE_FMT_F32                          ? 1.4
                                          : op == OP_MUL && fmt == FPE_FMT_F16          ? 1.5
                                                                                        : 0;
                    const bool targeted = target > 0 && set == SET_NORMAL && mode <= FPE_RO;
                    char tgt[16] = "";
                    if (targeted) snprintf(tgt, sizeof tgt, csv ? "%.2g" : ">=%.2gx", target);
                    const char *status = differ            ? "DIFFER"
                                         : !targeted       ? ""
                                         : ratio >= target ? "pass"
                                                           : "miss";
                    if (csv)
                        printf("%s,%s,%s,%s,%.1f,%.1f,%.3g,%s,%s\n", op_names[op], fmt_names[fmt],
                               set_names[set], fpe_round_name((fpe_round)mode), rate[0], rate[1],
                               ratio, tgt, status);
                    else
                        printf("%-4s %-4s %-6s %-11s %9.1f %9.1f %7.2fx  %-7s %s\n", op_names[op],
                               fmt_names[fmt], set_names[set], fpe_round_name((fpe_round)mode),
                               rate[0], rate[1], ratio, tgt, status);
                    fflush(stdout);
                }
    free(d);
    if (bad_op)
        return cli_error(CLI_EFAIL,
                         "the library and the code before issue 19 disagree on %zu of %u "
                         "elements (%s %s)",
                         bad, 2 * BENCH_SCALAR_N, bad_op, bad_fmt);
    return CLI_OK;
}
