/* test_f32_sqrt_exhaustive.c: fpe_f32_sqrt over every binary32 input against the hardware.
 *
 * Usage: test_f32_sqrt_exhaustive --shard I/N
 *
 * The oracle is the x86 SSE square root (sqrtss), which IEEE 754 requires to be correctly
 * rounded, run under each MXCSR rounding control with its exception flags read per input;
 * it is not code of the library.  The six deterministic modes:
 *   near_even, min, max, minMag   the hardware in that mode;
 *   near_maxMag                   the hardware's near_even: a square root of a binary32 value
 *                                 is never a midpoint (T^2 for an odd 25-bit T has 49 or 50
 *                                 bits, more than a 24-bit significand times a power of 4);
 *   odd                           the hardware's minMag result with its last bit set when
 *                                 inexact (for a finite result; the definition of the mode).
 * The library's env has x86 NaN rules (as the hardware), no FTZ or DAZ, both tininess rules.
 * Flags compared: invalid, divide by zero, overflow, underflow, inexact (the hardware's
 * denormal-operand flag has no IEEE counterpart).  Prints counts and the first mismatches;
 * exit 1 on any mismatch, 77 where there is no SSE (not x86). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpe.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <xmmintrin.h> /* _mm_getcsr, _mm_setcsr */

enum { HW_RNE, HW_RD, HW_RU, HW_RZ, HW_MODES };

/* The hardware root of bits a under rounding control rc, with the IEEE flags as fpe_flag.  One
 * asm statement, so that the compiler cannot move the root across the control-word writes. */
static uint32_t hw_sqrt(uint32_t a, unsigned rc, uint8_t *flags)
{
    unsigned csr = 0x1F80u | (rc << 13), got; /* all exceptions masked, flags clear */
    float x, r;
    memcpy(&x, &a, sizeof x);
    __asm__ volatile("ldmxcsr %2\n\tsqrtss %3, %0\n\tstmxcsr %1"
                     : "=x"(r), "=m"(got)
                     : "m"(csr), "x"(x));
    uint32_t bits;
    memcpy(&bits, &r, sizeof bits);
    *flags =
        (uint8_t)(((got & 0x01) ? FPE_FLAG_INVALID : 0) | ((got & 0x04) ? FPE_FLAG_INFINITE : 0) |
                  ((got & 0x08) ? FPE_FLAG_OVERFLOW : 0) | ((got & 0x10) ? FPE_FLAG_UNDERFLOW : 0) |
                  ((got & 0x20) ? FPE_FLAG_INEXACT : 0));
    return bits;
}

static const char *const mode_names[6] = {"near_even", "near_maxMag", "minMag",
                                          "min",       "max",         "odd"};

int main(int argc, char **argv)
{
    unsigned si = 0, sn = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
            if (sscanf(argv[++i], "%u/%u", &si, &sn) != 2 || sn == 0 || si >= sn) {
                fprintf(stderr, "%s: --shard wants I/N with I < N, e.g. 0/8\n", argv[0]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s --shard I/N\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const unsigned saved = _mm_getcsr();
    const unsigned rc[HW_MODES] = {0, 1, 2, 3}; /* MXCSR RC: nearest, down, up, toward zero */
    uint64_t checked = 0, bad[6] = {0};
    int shown = 0;
    const uint64_t a0 = (UINT64_C(0x100000000) * si) / sn;
    const uint64_t a1 = (UINT64_C(0x100000000) * (si + 1)) / sn;
    for (uint64_t ai = a0; ai < a1; ai++) {
        const uint32_t a = (uint32_t)ai;
        uint32_t hw[HW_MODES];
        uint8_t hf[HW_MODES];
        for (int k = 0; k < HW_MODES; k++)
            hw[k] = hw_sqrt(a, rc[k], &hf[k]);
        _mm_setcsr(saved);
        const bool nan_rz = (hw[HW_RZ] & 0x7FFFFFFFu) > 0x7F800000u;
        const uint32_t odd = hw[HW_RZ] | (uint32_t)((hf[HW_RZ] & FPE_FLAG_INEXACT) && !nan_rz);
        const uint32_t want[6] = {hw[HW_RNE], hw[HW_RNE], hw[HW_RZ], hw[HW_RD], hw[HW_RU], odd};
        const uint8_t want_fl[6] = {hf[HW_RNE], hf[HW_RNE], hf[HW_RZ],
                                    hf[HW_RD],  hf[HW_RU],  hf[HW_RZ]};
        for (int m = 0; m < 6; m++)
            for (int t = 0; t < 2; t++) {
                fpe_env env = fpe_env_default();
                env.round = (uint8_t)m;
                env.tininess = (uint8_t)(t ? FPE_TININESS_BEFORE : FPE_TININESS_AFTER);
                const uint32_t z = fpe_f32_sqrt(&env, a);
                checked++;
                if (z != want[m] || env.flags != want_fl[m]) {
                    bad[m]++;
                    if (shown++ < 10)
                        printf("MISMATCH sqrt %08" PRIX32 " %s tininess=%s: hardware %08" PRIX32
                               " flags %02X, library %08" PRIX32 " flags %02X\n",
                               a, mode_names[m], t ? "before" : "after", want[m], want_fl[m], z,
                               env.flags);
                }
            }
    }
    uint64_t total_bad = 0;
    printf("f32 sqrt shard %u/%u: %" PRIu64 " checked (inputs %08" PRIX64 "..%08" PRIX64
           ", 6 modes, 2 tininess rules)\n",
           si, sn, checked, a0, a1 - 1);
    for (int m = 0; m < 6; m++) {
        printf("  %-12s %10" PRIu64 " mismatches\n", mode_names[m], bad[m]);
        total_bad += bad[m];
    }
    return total_bad ? 1 : 0;
}
#else
int main(void)
{
    puts("no SSE square root to compare with (not x86): skipped");
    return 77;
}
#endif
