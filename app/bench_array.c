/* bench_array.c: element-wise array arithmetic in `ampscope bench emu --array` (issue 19).
 *
 * For each operation (add, sub, mul, div, fma, sqrt), format (fp16, bf16), mode (near_even,
 * minMag, stoch_prop) and named input set of BENCH_ARRAY_N elements per operand, drawn once
 * from a fixed seed:
 *   normal    random sign, exponent in [-6, 6], random significand: normal operands whose
 *             sums, products and quotients are normal too (sqrt: the magnitudes);
 *   gradient  like a gradient: 96% log-uniform magnitudes over the format's subnormal and
 *             lower normal range (fp16 2^-26 .. 2^6, 40% of them below 2^-14; bf16 2^-140 ..
 *             2^6 with 10% subnormal), 2% zeros, 1% near the largest finite (sums and
 *             products overflow), 0.5% NaN (quiet and signaling), 0.5% infinities;
 * it times the library's array call (fpe_array_arith) against today's way, a loop calling the
 * scalar operation (fpe_f16_add ...) per element, both without counts, interleaved repetition
 * by repetition; the ratio is the median over the repetitions of the two rates' ratio.  Before
 * timing, the two must agree on every result, on the flags, on the counts (the loop counting
 * each element's flags by fpe.h's definitions) and on the final random index; a disagreement
 * is an error (exit status 1).  Times are the process's CPU time (ut_cpu_seconds). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_array.h"
#include "cli.h"
#include "commands.h"
#include "fpe.h"
#include "util.h"

#define BENCH_ARRAY_N    (1u << 14)
#define BENCH_ARRAY_REPS 9
#define ARRAY_TARGET     4.0 /* the target: array / loop */

enum { SET_NORMAL, SET_GRADIENT, SET_COUNT };
static const char *const set_names[SET_COUNT] = {"normal", "gradient"};
static const char *const op_names[FPE_ARITH_OP_COUNT] = {"add", "sub", "mul", "div", "fma", "sqrt"};
static const int bench_modes[3] = {FPE_RNE, FPE_RZ, FPE_SR_PROP};

typedef struct array_data {
    uint16_t in[2][SET_COUNT][3][BENCH_ARRAY_N]; /* format, set, operand */
    uint16_t root[2][BENCH_ARRAY_N];             /* sqrt's normal set: the magnitudes */
    uint16_t out[BENCH_ARRAY_N];
} array_data;

static volatile uint64_t array_sink;

static uint64_t array_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A value 2^e * (1 + random fraction) of format fmt (e below emin: a subnormal). */
static uint16_t value_at(int fmt, int e, uint64_t r)
{
    const int fb = fmt == FPE_FMT_F16 ? 10 : 7, bias = fmt == FPE_FMT_F16 ? 15 : 127;
    const uint32_t sign = (uint32_t)(r >> 63) << 15, frac = (uint32_t)(r >> 20) & ((1u << fb) - 1);
    if (e + bias >= 1) return (uint16_t)(sign | (uint32_t)(e + bias) << fb | frac);
    const int sh = 1 - bias - e; /* subnormal: the significand shifted right */
    return (uint16_t)(sign | (sh > fb ? 1u : ((1u << fb) | frac) >> sh));
}

static uint16_t gradient_value(int fmt, uint64_t r)
{
    const bool f16 = fmt == FPE_FMT_F16;
    const uint16_t sign = (uint16_t)((r >> 63) << 15);
    const uint16_t inf = f16 ? 0x7C00 : 0x7F80, quiet = f16 ? 0x200 : 0x40;
    const uint32_t pick = (uint32_t)(r % 1000);
    if (pick < 20) return sign;                                            /* zeros */
    if (pick < 30) return (uint16_t)((inf - 1 - (r >> 40) % 64) | sign);   /* near the maximum */
    if (pick < 35) return (uint16_t)(sign | inf | (pick & 1 ? quiet : 1)); /* NaN */
    if (pick < 40) return (uint16_t)(sign | inf);                          /* infinity */
    const int lo = f16 ? -26 : -140, span = f16 ? 33 : 147;
    return value_at(fmt, lo + (int)((r >> 8) % (uint64_t)span), r);
}

static void array_fill(array_data *d)
{
    uint64_t state = 20261219;
    for (int fmt = 0; fmt < 2; fmt++)
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < BENCH_ARRAY_N; i++) {
                const uint64_t r = array_splitmix(&state);
                d->in[fmt][SET_NORMAL][k][i] = value_at(fmt, (int)(r % 13) - 6, r);
                d->in[fmt][SET_GRADIENT][k][i] = gradient_value(fmt, array_splitmix(&state));
                if (k == 0) d->root[fmt][i] = d->in[fmt][SET_NORMAL][0][i] & 0x7FFFu;
            }
}

typedef struct array_pass {
    int op, fmt, mode, set;
} array_pass;

static fpe_env pass_env(int mode)
{
    fpe_env env = fpe_env_default();
    env.round = (uint8_t)mode;
    env.sr_seed = 1;
    env.sr_index = 3; /* not a multiple of 4: Philox words start mid-block */
    return env;
}

/* Today's way: the scalar operation per element; with counts, each element's flags counted. */
static void scalar_loop(fpe_env *env, const array_pass *p, const uint16_t *const *in, uint16_t *out,
                        fpe_array_counts *k)
{
    const bool h = p->fmt == FPE_FMT_F16;
    const uint16_t *a = in[0], *b = in[1], *c = in[2];
    for (size_t i = 0; i < BENCH_ARRAY_N; i++) {
        const uint8_t saved = env->flags;
        if (k) env->flags = 0;
        uint16_t r;
        switch (p->op) {
        case FPE_ARITH_ADD:
            r = h ? fpe_f16_add(env, a[i], b[i]) : fpe_bf16_add(env, a[i], b[i]);
            break;
        case FPE_ARITH_SUB:
            r = h ? fpe_f16_sub(env, a[i], b[i]) : fpe_bf16_sub(env, a[i], b[i]);
            break;
        case FPE_ARITH_MUL:
            r = h ? fpe_f16_mul(env, a[i], b[i]) : fpe_bf16_mul(env, a[i], b[i]);
            break;
        case FPE_ARITH_DIV:
            r = h ? fpe_f16_div(env, a[i], b[i]) : fpe_bf16_div(env, a[i], b[i]);
            break;
        case FPE_ARITH_FMA:
            r = h ? fpe_f16_fma(env, a[i], b[i], c[i]) : fpe_bf16_fma(env, a[i], b[i], c[i]);
            break;
        default: r = h ? fpe_f16_sqrt(env, a[i]) : fpe_bf16_sqrt(env, a[i]); break;
        }
        out[i] = r;
        if (!k) continue;
        const uint8_t fl = env->flags;
        env->flags = saved | fl;
        const uint32_t mag = r & 0x7FFFu, fb = h ? 10 : 7, top = h ? 0x1F : 0xFF;
        k->inexact += (fl & FPE_FLAG_INEXACT) != 0;
        k->flushed += mag == 0 && (fl & FPE_FLAG_INEXACT) != 0;
        k->subnormal += mag != 0 && (mag >> fb) == 0;
        k->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
        k->nan += (mag >> fb) == top && (mag & ((1u << fb) - 1)) != 0;
    }
}

static void run_pass(array_data *d, const array_pass *p, bool array, fpe_env *env,
                     fpe_array_counts *k)
{
    const bool root = p->op == FPE_ARITH_SQRT && p->set == SET_NORMAL;
    const uint16_t *const in[3] = {root ? d->root[p->fmt] : d->in[p->fmt][p->set][0],
                                   d->in[p->fmt][p->set][1], d->in[p->fmt][p->set][2]};
    if (array)
        fpe_array_arith(env, (fpe_format_id)p->fmt, (fpe_arith_op)p->op, in[0], in[1], in[2],
                        d->out, BENCH_ARRAY_N, k);
    else
        scalar_loop(env, p, in, d->out, k);
    array_sink += d->out[BENCH_ARRAY_N - 1];
}

/* Elements (and settings) on which the array call and the loop disagree. */
static size_t array_check(array_data *d, const array_pass *p)
{
    static uint16_t want[BENCH_ARRAY_N];
    fpe_env e1 = pass_env(p->mode), e2 = e1;
    fpe_array_counts k1 = {0, 0, 0, 0, 0}, k2 = {0, 0, 0, 0, 0};
    run_pass(d, p, false, &e1, &k1);
    memcpy(want, d->out, sizeof want);
    run_pass(d, p, true, &e2, &k2);
    size_t differ = 0;
    for (size_t i = 0; i < BENCH_ARRAY_N; i++)
        differ += want[i] != d->out[i];
    if (memcmp(&k1, &k2, sizeof k1) != 0 || e1.flags != e2.flags || e1.sr_index != e2.sr_index)
        differ++;
    return differ;
}

/* Times the loop (rate[0]) and the array call (rate[1]) interleaved; *ratio is the median of
 * the per-repetition ratios. */
static void array_time(array_data *d, const array_pass *p, double rep_seconds, int reps,
                       double *rate, double *ratio)
{
    unsigned long passes[2];
    for (int impl = 0; impl < 2; impl++) { /* passes per repetition, for each */
        fpe_env env = pass_env(p->mode);
        unsigned long n = 1;
        double elapsed;
        for (;;) {
            double t0 = ut_cpu_seconds();
            for (unsigned long j = 0; j < n; j++)
                run_pass(d, p, impl == 1, &env, NULL);
            elapsed = ut_cpu_seconds() - t0;
            if (elapsed >= rep_seconds / 8 || n >= (1ul << 30)) break;
            n *= 2;
        }
        passes[impl] =
            (unsigned long)((double)n * rep_seconds / (elapsed > 0 ? elapsed : 1e-9)) + 1;
    }
    double r[2][BENCH_ARRAY_REPS], q[BENCH_ARRAY_REPS];
    for (int rep = 0; rep < reps; rep++) {
        for (int impl = 0; impl < 2; impl++) {
            fpe_env env = pass_env(p->mode);
            double t0 = ut_cpu_seconds();
            for (unsigned long j = 0; j < passes[impl]; j++)
                run_pass(d, p, impl == 1, &env, NULL);
            double t = ut_cpu_seconds() - t0;
            r[impl][rep] = (double)passes[impl] * BENCH_ARRAY_N / (t > 0 ? t : 1e-9) / 1e6;
        }
        q[rep] = r[1][rep] / r[0][rep];
    }
    for (int impl = 0; impl < 2; impl++) {
        qsort(r[impl], (size_t)reps, sizeof r[impl][0], bench_compare_double);
        rate[impl] = r[impl][reps / 2];
    }
    qsort(q, (size_t)reps, sizeof q[0], bench_compare_double);
    *ratio = q[reps / 2];
}

int bench_array_table(bool csv, double rep_seconds, int reps)
{
    array_data *d = calloc(1, sizeof *d);
    if (!d) return cli_error(CLI_EFAIL, "out of memory");
    array_fill(d);
    if (reps > BENCH_ARRAY_REPS) reps = BENCH_ARRAY_REPS;
    if (csv)
        printf("operation,format,mode,inputs,loop,array,array/loop,target,status\n");
    else
        printf("element-wise array arithmetic (issue 19): %u elements per operand, Melem/s of "
               "CPU time; loop = the scalar operation per element, array = fpe_array_arith "
               "(both without counts); median of %d interleaved repetitions\n"
               "%-4s %-4s %-11s %-8s %9s %9s %9s  %-6s %s\n",
               BENCH_ARRAY_N, reps, "op", "fmt", "mode", "inputs", "loop", "array", "ratio",
               "target", "status");
    size_t bad = 0;
    const char *bad_op = NULL;
    for (int op = 0; op < FPE_ARITH_OP_COUNT; op++)
        for (int fmt = FPE_FMT_F16; fmt <= FPE_FMT_BF16; fmt++)
            for (int m = 0; m < 3; m++)
                for (int set = 0; set < SET_COUNT; set++) {
                    const array_pass p = {op, fmt, bench_modes[m], set};
                    const size_t differ = array_check(d, &p);
                    if (differ && !bad_op) {
                        bad = differ;
                        bad_op = op_names[op];
                    }
                    double rate[2], ratio;
                    array_time(d, &p, rep_seconds, reps, rate, &ratio);
                    const char *fmt_name = fmt == FPE_FMT_F16 ? "fp16" : "bf16";
                    const char *status = ratio >= ARRAY_TARGET ? "pass" : "miss";
                    const char *mode_name = fpe_round_name((fpe_round)p.mode);
                    if (csv)
                        printf("%s,%s,%s,%s,%.1f,%.1f,%.3g,%.0f,%s\n", op_names[op], fmt_name,
                               mode_name, set_names[set], rate[0], rate[1], ratio, ARRAY_TARGET,
                               status);
                    else
                        printf("%-4s %-4s %-11s %-8s %9.1f %9.1f %8.2fx  >=%.0fx   %s\n",
                               op_names[op], fmt_name, mode_name, set_names[set], rate[0], rate[1],
                               ratio, ARRAY_TARGET, status);
                    fflush(stdout);
                }
    free(d);
    if (bad_op)
        return cli_error(CLI_EFAIL,
                         "the array call and the scalar loop disagree on %zu of %u elements (%s)",
                         bad, BENCH_ARRAY_N, bad_op);
    return CLI_OK;
}
