/* test_chop_exhaustive.c: the array rounding over every binary32 input, one shard at a time.
 *
 * Usage: test_chop_exhaustive --format fp16|bf16 --shard I/N
 *
 * Shard I of N takes the I-th N-th of the 2^32 binary32 patterns, in arrays of 4096
 * consecutive inputs, and chops each with fpe_chop_f32_to_u16 (with counts) in near_even,
 * minMag, min and max (x86 NaNs, tininess after rounding) and in near_even with the canonical
 * NaNs, against the scalar conversion fpe_f32_to_f16 / fpe_f32_to_bf16: every result, the OR
 * of the flags, the counts and the random index (chop_vs_scalar.h).  The inputs whose flags
 * differ from their neighbours' and depend on the tininess rule are also chopped one at a time
 * in those settings and the four modes with tininess before rounding, so that their flags are
 * compared exactly.  In near_even fpe_chop_f32's floats are
 * compared with the widened results too.  Where the library rounds fp16 with the host's
 * vcvtps2ph (chop_hw.h: near_even, minMag, min, max), each check runs on that path and on the
 * portable loops; for bf16 each array is also chopped behind a primer block, so that it goes
 * through the easy loop's wider form.  Prints the count and the mismatches; exits 1 on any.
 */
#include <stdlib.h>
#include <time.h>

#include "chop_vs_scalar.h"

#define CHUNK 4096

/* Exponent fields whose inputs are also checked one at a time: where the results become
 * subnormal and where tininess before and after rounding differ (2^-15 <= |x| < 2^-14 for fp16,
 * binary32 subnormals for bf16).  Elsewhere an array of 4096 consecutive patterns shares its
 * flags but for inexact (exact inputs are compared through the inexact count) and, at the
 * overflow threshold, overflow (compared through the overflowed count). */
static bool alone_band(int fmt, uint32_t ef)
{
    if (fmt == FPE_FMT_BF16) return ef <= 1;
    return ef >= 111 && ef <= 113;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fmt = -1;
    unsigned si = 0, sn = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--format"))
            fmt = !strcmp(argv[i + 1], "fp16")   ? FPE_FMT_F16
                  : !strcmp(argv[i + 1], "bf16") ? FPE_FMT_BF16
                                                 : -1;
        else if (!strcmp(argv[i], "--shard") && sscanf(argv[i + 1], "%u/%u", &si, &sn) != 2)
            sn = 0;
    }
    if (fmt < 0 || sn == 0 || si >= sn || (sn & (sn - 1)) != 0) {
        fprintf(stderr, "usage: %s --format fp16|bf16 --shard I/N (N a power of two)\n", argv[0]);
        return 2;
    }
    /* near_even and the directed modes with tininess after rounding, near_even with canonical
     * NaNs (whole arrays and alone), then the four modes with tininess before rounding (alone
     * only: the rule changes nothing outside the alone bands).  near_maxMag, odd and the
     * stochastic modes: test_chop_scalar. */
    enum { SETTINGS = 9, ARRAY_SETTINGS = 5 };
    static const uint8_t modes[4] = {FPE_RNE, FPE_RZ, FPE_RD, FPE_RU};
    fpe_env envs[SETTINGS];
    for (int k = 0; k < SETTINGS; k++) {
        envs[k] = fpe_env_default();
        envs[k].round = k == 4 ? FPE_RNE : modes[k % 5];
        envs[k].tininess = k > 4 ? FPE_TININESS_BEFORE : FPE_TININESS_AFTER;
        envs[k].nan = k == 4 ? FPE_NAN_CANONICAL : FPE_NAN_X86;
        envs[k].sr_index = 12345;
    }
    /* bf16: each chunk also behind a primer block (1.0 but one NaN), so that the call's later
     * blocks take the easy loop's wider form (overflow, infinities, NaNs: chop.c) */
    enum { PRIME = 1024 };
    static float in[CHUNK], fout[PRIME + CHUNK], alone[CHUNK], primed[PRIME + CHUNK];
    static uint16_t out[PRIME + CHUNK];
    for (int j = 0; j < PRIME; j++)
        primed[j] = 1.0f;
    const uint32_t qnan = 0x7FC00000u;
    memcpy(&primed[0], &qnan, sizeof qnan);
    const uint64_t span = ((uint64_t)1 << 32) / sn, first = span * si;
    uint64_t checked = 0, alone_checked = 0, bad = 0;
    const clock_t t0 = clock();
    for (uint64_t x0 = first; x0 < first + span; x0 += CHUNK) {
        size_t na = 0;
        for (uint32_t j = 0; j < CHUNK; j++) {
            const uint32_t x = (uint32_t)(x0 + j);
            memcpy(&in[j], &x, sizeof x);
            if (alone_band(fmt, (x >> 23) & 0xFF)) alone[na++] = in[j];
        }
        for (int k = 0; k < SETTINGS; k++) {
            if (k < ARRAY_SETTINGS) {
                bad += cvs_check(&envs[k], fmt, in, CHUNK, true, k == 0, out, fout);
                checked += CHUNK * (uint64_t)cvs_paths(&envs[k], fmt); /* per path */
                if (fmt == FPE_FMT_BF16) {
                    memcpy(primed + PRIME, in, sizeof in);
                    bad += cvs_check(&envs[k], fmt, primed, PRIME + CHUNK, true, k == 0, out, fout);
                    checked += CHUNK;
                }
            }
            if (na) {
                bad += cvs_check_each(&envs[k], fmt, alone, na);
                alone_checked += na * (uint64_t)cvs_paths(&envs[k], fmt);
            }
        }
        if (bad > 20) break;
    }
    const double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("chop f32->%s shard %u/%u: %" PRIu64 " element roundings in arrays, %" PRIu64
           " alone, %" PRIu64 " mismatches (%.1f CPU s)\n",
           fmt == FPE_FMT_F16 ? "fp16" : "bf16", si, sn, checked, alone_checked, bad, secs);
    return bad ? 1 : 0;
}
