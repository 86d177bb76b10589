/* test_emulate_exhaustive.c: every operand pair (or every fp32 input), one shard at a time.
 *
 * Usage: test_emulate_exhaustive --op OP --shard I/N [--tininess both|after|before]
 *   OP: f16_add f16_sub f16_mul f16_div bf16_add bf16_sub bf16_mul bf16_div
 *       f32_to_f16 f32_to_bf16
 *   (or the environment: AMPSCOPE_EXHAUSTIVE_OP, AMPSCOPE_EXHAUSTIVE_SHARD)
 *
 * Shard I of N takes the I-th N-th of the first operands (all 65536 second
 * operands each), or of the 2^32 fp32 inputs.  Each case runs in the six
 * deterministic modes and both tininess rules against the fast oracle
 * (fast_oracle.h, itself proven against MPFR in test_oracle.c).  Prints the
 * count checked and the mismatches per mode and tininess, the first few
 * mismatches in full, and exits 1 on any mismatch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fast_oracle.h"
#include "fpe.h"

static uint64_t checked[FO_MODES][2], mismatched[FO_MODES][2];
static int reported;

static void report(const char *op, int mode, int tin, uint32_t a, uint32_t b, int has_b,
                   uint16_t want, uint8_t want_fl, uint16_t got, uint8_t got_fl)
{
    if (reported++ >= 10) return;
    printf("MISMATCH %s mode=%s tininess=%s operands %0*" PRIX32, op, fo_mode_names[mode],
           tin ? "before" : "after", has_b ? 4 : 8, a);
    if (has_b) printf(" %04" PRIX32, b);
    printf(": expected %04X flags %02X, got %04X flags %02X\n", want, want_fl, got, got_fl);
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s --op OP --shard I/N [--tininess both|after|before]\nOP:", argv0);
    for (int i = 0; i < FO_CHECKED_OPS; i++)
        fprintf(stderr, " %s", fo_checked_ops[i].name);
    fprintf(stderr, "\n");
    exit(2);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* Check's forked children exit without flushing */
    const char *op_name = getenv("AMPSCOPE_EXHAUSTIVE_OP");
    const char *shard = getenv("AMPSCOPE_EXHAUSTIVE_SHARD");
    const char *tin_opt = "both";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--op") && i + 1 < argc)
            op_name = argv[++i];
        else if (!strcmp(argv[i], "--shard") && i + 1 < argc)
            shard = argv[++i];
        else if (!strcmp(argv[i], "--tininess") && i + 1 < argc)
            tin_opt = argv[++i];
        else
            usage(argv[0]);
    }
    int k = -1;
    for (int i = 0; op_name && i < FO_CHECKED_OPS; i++)
        if (!strcmp(op_name, fo_checked_ops[i].name)) k = i;
    unsigned si = 0, sn = 1;
    if (k < 0 || (shard && (sscanf(shard, "%u/%u", &si, &sn) != 2 || sn == 0 || si >= sn)))
        usage(argv[0]);
    int tin_lo = 0, tin_hi = 1;
    if (!strcmp(tin_opt, "after"))
        tin_hi = 0;
    else if (!strcmp(tin_opt, "before"))
        tin_lo = 1;
    else if (strcmp(tin_opt, "both"))
        usage(argv[0]);

    fo_init();
    const fpe_format_id fmt = fo_checked_ops[k].fmt;
    fpe_env env = fpe_env_default();
    fo_result r;
    clock_t t0 = clock();
    if (fo_checked_ops[k].bin) {
        const fo_binary_fn fn = fo_checked_ops[k].bin;
        const uint32_t a0 = (uint32_t)((UINT64_C(0x10000) * si) / sn);
        const uint32_t a1 = (uint32_t)((UINT64_C(0x10000) * (si + 1)) / sn);
        for (uint32_t a = a0; a < a1; a++)
            for (uint32_t b = 0; b < 0x10000; b++) {
                fo_binary(fo_checked_ops[k].op, fmt, (uint16_t)a, (uint16_t)b, &r);
                for (int m = 0; m < FO_MODES; m++)
                    for (int t = tin_lo; t <= tin_hi; t++) {
                        env.round = (uint8_t)m;
                        env.tininess = (uint8_t)t;
                        env.flags = 0;
                        uint16_t z = fn(&env, (uint16_t)a, (uint16_t)b);
                        checked[m][t]++;
                        if (z != r.bits[m][t] || env.flags != r.flags[m][t]) {
                            mismatched[m][t]++;
                            report(fo_checked_ops[k].name, m, t, a, b, 1, r.bits[m][t],
                                   r.flags[m][t], z, env.flags);
                        }
                    }
            }
    } else {
        const fo_convert_fn fn = fo_checked_ops[k].cvt;
        const uint64_t a0 = (UINT64_C(0x100000000) * si) / sn;
        const uint64_t a1 = (UINT64_C(0x100000000) * (si + 1)) / sn;
        for (uint64_t a = a0; a < a1; a++) {
            fo_from_f32(fmt, (uint32_t)a, &r);
            for (int m = 0; m < FO_MODES; m++)
                for (int t = tin_lo; t <= tin_hi; t++) {
                    env.round = (uint8_t)m;
                    env.tininess = (uint8_t)t;
                    env.flags = 0;
                    uint16_t z = fn(&env, (uint32_t)a);
                    checked[m][t]++;
                    if (z != r.bits[m][t] || env.flags != r.flags[m][t]) {
                        mismatched[m][t]++;
                        report(fo_checked_ops[k].name, m, t, (uint32_t)a, 0, 0, r.bits[m][t],
                               r.flags[m][t], z, env.flags);
                    }
                }
        }
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    uint64_t total = 0, bad = 0;
    printf("%s shard %u/%u (%.1f s):\n", fo_checked_ops[k].name, si, sn, secs);
    for (int m = 0; m < FO_MODES; m++)
        for (int t = tin_lo; t <= tin_hi; t++) {
            printf("  %-12s tininess=%-6s %12" PRIu64 " checked %10" PRIu64 " mismatches\n",
                   fo_mode_names[m], t ? "before" : "after", checked[m][t], mismatched[m][t]);
            total += checked[m][t];
            bad += mismatched[m][t];
        }
    printf("  total %" PRIu64 " checked, %" PRIu64 " mismatches\n", total, bad);
    return bad ? 1 : 0;
}
