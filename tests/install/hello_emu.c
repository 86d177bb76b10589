/* hello_emu.c: a program of someone else's, built against the installed emulator only
 * (`pkg-config --cflags --libs ampscope-emu`), by tests/install/install_check.sh.
 *
 * Adds fp16 values in two rounding modes and checks each result and its flags against values
 * worked out by hand (fp16: bias 15, 10 fraction bits, so ulp(1) = 2^-10):
 *   1 + 2^-11 (0x3C00 + 0x1000) is half an ulp above 1: a tie.  near_even keeps 1 (0x3C00, its
 *     last bit is even); max rounds up to 1 + 2^-10 (0x3C01).  Both inexact (0x01).
 *   65504 + 65504 (0x7BFF twice) is 2^17 - 64, past the largest finite 65504 by more than half
 *     an ulp (ulp 32 there): near_even gives +inf (0x7C00), minMag the largest finite (0x7BFF);
 *     both overflow and inexact (0x04 | 0x01 = 0x05).
 *   1 + 1 = 2 (0x4000) is exact in both modes: no flag.
 * Prints one line per case and "hello_emu: N of N as expected"; exit status 0 only then.
 */
#include <ampscope/fpe.h>
#include <stdio.h>

struct add_case {
    uint16_t a, b;
    fpe_round round;
    uint16_t want;
    unsigned want_flags;
};

static const struct add_case cases[] = {
    {0x3C00, 0x1000, FPE_RNE, 0x3C00, FPE_FLAG_INEXACT},
    {0x3C00, 0x1000, FPE_RU, 0x3C01, FPE_FLAG_INEXACT},
    {0x7BFF, 0x7BFF, FPE_RNE, 0x7C00, FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT},
    {0x7BFF, 0x7BFF, FPE_RZ, 0x7BFF, FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT},
    {0x3C00, 0x3C00, FPE_RNE, 0x4000, 0},
    {0x3C00, 0x3C00, FPE_RU, 0x4000, 0},
};
#define CASE_COUNT (sizeof cases / sizeof cases[0])

int main(void)
{
    unsigned good = 0;
    for (size_t i = 0; i < CASE_COUNT; i++) {
        const struct add_case *c = &cases[i];
        fpe_env env = fpe_env_default();
        env.round = (uint8_t)c->round;
        uint16_t sum = fpe_f16_add(&env, c->a, c->b);
        unsigned flags = env.flags;
        double value = fpe_f16_to_f64(&env, sum); /* exact: raises nothing here */
        int ok = sum == c->want && flags == c->want_flags;
        good += ok;
        printf("f16_add %-9s %04X + %04X = %04X (%g) flags %02X %s\n", fpe_round_name(c->round),
               c->a, c->b, sum, value, flags, ok ? "ok" : "WRONG");
    }
    printf("hello_emu: %u of %u as expected\n", good, (unsigned)CASE_COUNT);
    return good == CASE_COUNT ? 0 : 1;
}
