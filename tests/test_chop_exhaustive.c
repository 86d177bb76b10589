/* test_chop_exhaustive.c: the array rounding over every binary32 input, one shard at a time.
 *
 * Usage: test_chop_exhaustive --format fp16|bf16 --shard I/N
 *
 * Shard I of N takes the I-th N-th of the 2^32 binary32 patterns, in arrays of 4096
 * consecutive inputs, and chops each with fpe_chop_f32_to_u16 (with counts) in near_even,
 * minMag, min and max with both tininess rules (x86 NaNs), and once more in near_even with
 * the canonical NaNs, against the scalar conversion fpe_f32_to_f16 / fpe_f32_to_bf16: every
 * result, the OR of the flags, the counts and the random index (chop_vs_scalar.h).  The inputs
 * whose flags differ most from their neighbours' (binary32 subnormals, the exponents where the
 * results become subnormal, tiny or overflow, NaNs and infinities) are also chopped one at a
 * time, so that their flags are compared exactly.  In near_even fpe_chop_f32's floats are
 * compared with the widened results too.  Prints the count and the mismatches; exits 1 on any.
 */
#include <stdlib.h>
#include <time.h>

#include "chop_vs_scalar.h"

#define CHUNK 4096

/* Exponent fields whose inputs are also checked one at a time. */
static bool alone_band(int fmt, uint32_t ef)
{
    if (ef == 0 || ef == 255) return true;
    if (fmt == FPE_FMT_BF16) return ef == 1 || ef == 253 || ef == 254;
    return ef == 101 || ef == 102 || ef == 111 || ef == 112 || ef == 113 || ef == 142 || ef == 143;
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
    /* near_even and the directed modes, each with both tininess rules, and near_even with
     * canonical NaNs (near_maxMag, odd and the stochastic modes: test_chop_scalar) */
    enum { SETTINGS = 9 };
    static const uint8_t modes[4] = {FPE_RNE, FPE_RZ, FPE_RD, FPE_RU};
    fpe_env envs[SETTINGS];
    for (int k = 0; k < SETTINGS; k++) {
        envs[k] = fpe_env_default();
        envs[k].round = k < 8 ? modes[k / 2] : FPE_RNE;
        envs[k].tininess = (uint8_t)(k < 8 ? k % 2 : FPE_TININESS_AFTER);
        envs[k].nan = k < 8 ? FPE_NAN_X86 : FPE_NAN_CANONICAL;
        envs[k].sr_index = 12345;
    }
    static float in[CHUNK], fout[CHUNK], alone[CHUNK];
    static uint16_t out[CHUNK];
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
            bad += cvs_check(&envs[k], fmt, in, CHUNK, true, k == 0, out, fout);
            checked += CHUNK;
            if (na) {
                bad += cvs_check_each(&envs[k], fmt, alone, na);
                alone_checked += na;
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
