/* test_array_exhaustive.c: the array arithmetic over every fp16 or bf16 operand pair, one shard
 * at a time (issue 19).
 *
 * Usage: test_array_exhaustive --format fp16|bf16 --op add|sub|mul|div --shard I/N
 *
 * Shard I of N takes the I-th N-th of the first operands a; for each a, every one of the 2^16
 * second operands b goes through the scalar operation (fpe_f16_add ...) in near_even and in
 * minMag (tininess after rounding, x86 NaNs), and the b are sorted into groups by the flags
 * the scalar operation raised.  Each group then goes through fpe_array_arith as one array
 * (a repeated): every result must match, the array's flags must be exactly the group's (so no
 * element raised a flag its scalar result did not), and the counts (inexact, overflowed,
 * flushed, subnormal, NaN) must match element by element in total.  An element missing a flag
 * that others of its group raise is caught by the counts for inexact and overflow, not for
 * underflow and invalid (test_array_ops compares those element by element, four equal lanes
 * per call, on the special values).  Prints the counts and mismatches; exits 1 on any.
 * The stochastic modes need the random index, which the sorting would change: test_array_ops
 * covers them. */
#include <stdlib.h>
#include <time.h>

#include "array_vs_scalar.h"

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fmt = -1, op = -1;
    unsigned si = 0, sn = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--format"))
            fmt = !strcmp(argv[i + 1], "fp16")   ? FPE_FMT_F16
                  : !strcmp(argv[i + 1], "bf16") ? FPE_FMT_BF16
                                                 : -1;
        else if (!strcmp(argv[i], "--op"))
            for (int k = 0; k <= FPE_ARITH_DIV; k++)
                if (!strcmp(argv[i + 1], avs_op_names[k])) op = k;
        if (!strcmp(argv[i], "--shard") && sscanf(argv[i + 1], "%u/%u", &si, &sn) != 2) sn = 0;
    }
    if (fmt < 0 || op < 0 || sn == 0 || si >= sn || 65536 % sn != 0) {
        fprintf(stderr,
                "usage: %s --format fp16|bf16 --op add|sub|mul|div --shard I/N (N divides "
                "65536)\n",
                argv[0]);
        return 2;
    }
    static const uint8_t modes[2] = {FPE_RNE, FPE_RZ};
    static uint16_t want[65536], va[65536], vb[65536], out[65536], wsorted[65536];
    static uint8_t wfl[65536];
    uint64_t checked = 0, arrays = 0, bad = 0;
    const clock_t t0 = clock();
    const uint32_t span = 65536 / sn;
    for (uint32_t a = si * span; a < (si + 1) * span && bad <= 20; a++)
        for (int m = 0; m < 2; m++) {
            fpe_env env = fpe_env_default();
            env.round = modes[m];
            size_t in_group[32] = {0}, start[33];
            for (uint32_t b = 0; b < 65536; b++) {
                want[b] = avs_scalar(&env, fmt, op, (uint16_t)a, (uint16_t)b, 0, 0, &wfl[b]);
                in_group[wfl[b] & 31]++;
            }
            start[0] = 0;
            for (int g = 0; g < 32; g++)
                start[g + 1] = start[g] + in_group[g];
            size_t fill[32];
            memcpy(fill, start, sizeof fill);
            for (uint32_t b = 0; b < 65536; b++) {
                const size_t j = fill[wfl[b] & 31]++;
                va[j] = (uint16_t)a;
                vb[j] = (uint16_t)b;
                wsorted[j] = want[b];
            }
            for (int g = 0; g < 32; g++) {
                const size_t n = in_group[g];
                if (n == 0) continue;
                fpe_env e = env;
                fpe_array_counts got = {0, 0, 0, 0, 0}, exp = {0, 0, 0, 0, 0};
                fpe_array_arith(&e, (fpe_format_id)fmt, (fpe_arith_op)op, va + start[g],
                                vb + start[g], NULL, out, n, &got);
                uint64_t wrong = 0;
                for (size_t i = 0; i < n; i++) {
                    const size_t j = start[g] + i;
                    avs_count(fmt, wsorted[j], (uint8_t)g, &exp);
                    if (out[i] != wsorted[j] && ++wrong <= 3)
                        printf("MISMATCH %s %s %s a=0x%04x b=0x%04x: array 0x%04x, scalar "
                               "0x%04x\n",
                               fmt == FPE_FMT_F16 ? "fp16" : "bf16", avs_op_names[op],
                               avs_mode_names[env.round], va[j], vb[j], out[i], wsorted[j]);
                }
                if (e.flags != g || memcmp(&got, &exp, sizeof got) != 0) {
                    wrong++;
                    printf("MISMATCH %s %s %s a=0x%04x, %zu b with flags 0x%02x: array flags "
                           "0x%02x, counts inexact %" PRIu64 "/%" PRIu64 " overflowed %" PRIu64
                           "/%" PRIu64 " flushed %" PRIu64 "/%" PRIu64 " subnormal %" PRIu64
                           "/%" PRIu64 " nan %" PRIu64 "/%" PRIu64 "\n",
                           fmt == FPE_FMT_F16 ? "fp16" : "bf16", avs_op_names[op],
                           avs_mode_names[env.round], a, n, g, e.flags, got.inexact, exp.inexact,
                           got.overflowed, exp.overflowed, got.flushed, exp.flushed, got.subnormal,
                           exp.subnormal, got.nan, exp.nan);
                }
                bad += wrong;
                checked += n;
                arrays++;
            }
        }
    const double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("array %s %s shard %u/%u: %" PRIu64 " element comparisons in %" PRIu64
           " arrays (near_even, minMag), %" PRIu64 " mismatches (%.1f CPU s)\n",
           fmt == FPE_FMT_F16 ? "fp16" : "bf16", avs_op_names[op], si, sn, checked, arrays, bad,
           secs);
    return bad ? 1 : 0;
}
