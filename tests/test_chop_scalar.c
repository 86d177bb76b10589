/* test_chop_scalar.c: the array rounding's vector path against the scalar conversion.
 *
 * fpe_chop_f32_to_u16 and fpe_chop_f32 (f32 -> fp16 and bf16) must give, element by element,
 * what fpe_f32_to_f16 / fpe_f32_to_bf16 give at random index sr_index + i: the same bits, the
 * OR of the same flags, the counts by their definitions and the same final index.  Inputs aim
 * at the paths the vector loop takes itself: subnormal and zero fp16 results, ties at every
 * subnormal spacing, the normal/subnormal boundary (tininess before and after rounding),
 * overflow edges (65504, 65520 and the floats around them; next to FLT_MAX for bf16), NaNs
 * (quiet, signaling, payloads), infinities, signed zeros, binary32 subnormals (DAZ), under
 * FTZ, both tininess rules, both NaN specializations, every rounding mode (the stochastic ones
 * with fixed seeds), array lengths that are not multiples of the vector width, and each edge
 * value alone (n = 1: its flags exactly).  The expected values come from the scalar path,
 * itself held to MPFR by test_emulate_convert and over all inputs by the exhaustive tests.
 * Where the library rounds fp16 with the host's vcvtps2ph (chop_hw.h), every check runs on
 * that path and on the portable loops.
 */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "chop_vs_scalar.h"
#include "host.h" /* the scalar host paths */
#include "test_support.h"

#define N_MAX 5003

static uint32_t f32_of(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Edge inputs for fmt, both signs; returns the count. */
static size_t edge_values(int fmt, uint32_t *v, size_t cap)
{
    size_t n = 0;
#define PUT(x)                                                                                     \
    do {                                                                                           \
        if (n + 2 <= cap) {                                                                        \
            v[n++] = (x);                                                                          \
            v[n++] = (x) | 0x80000000u;                                                            \
        }                                                                                          \
    } while (0)
    PUT(0u);          /* zero */
    PUT(1u);          /* the smallest binary32 subnormal */
    PUT(0x007FFFFFu); /* the largest */
    PUT(0x00800000u); /* the smallest binary32 normal */
    PUT(0x7F800000u); /* infinity */
    PUT(0x7FC00000u); /* quiet NaN */
    PUT(0x7FC12345u); /* quiet NaN with a payload */
    PUT(0x7F800001u); /* signaling NaNs */
    PUT(0x7FA5A5A5u);
    PUT(0x7F7FFFFFu); /* FLT_MAX */
    PUT(0x7F7F8000u); /* bf16: the tie between its largest finite and 2^128 */
    PUT(0x7F7F7FFFu); /* just below it */
    PUT(0x7F7F0000u); /* bf16's largest finite */
    PUT(0x7F000000u); /* 2^127 */
    PUT(0x477FE000u); /* 65504, fp16's largest finite */
    PUT(0x477FE001u); /* just above */
    PUT(0x477FEFFFu); /* just below the tie 65520 */
    PUT(0x477FF000u); /* 65520 */
    PUT(0x477FF001u); /* just above */
    PUT(0x47800000u); /* 65536 */
    PUT(0x477FFFFFu);
    PUT(0x47000000u);               /* 2^15 */
    PUT(0x46FFFFFFu);               /* just below */
    PUT(f32_of(0x1p-14));           /* fp16's smallest normal */
    PUT(f32_of(0x1p-14) - 1);       /* just below it */
    PUT(f32_of(0x1p-14 - 0x1p-25)); /* tie between the largest subnormal and 2^-14 */
    PUT(f32_of(0x1p-14 - 0x1p-25) - 1);
    PUT(f32_of(0x1p-14 - 0x1p-25) + 1);
    PUT(f32_of(0x1p-14 - 0x1p-26));
    PUT(f32_of(0x1p-14 - 0x1p-24)); /* the largest subnormal */
    PUT(f32_of(0x1p-15));
    PUT(f32_of(0x1p-24)); /* the smallest subnormal */
    PUT(f32_of(0x1p-25)); /* half of it: a tie with zero */
    PUT(f32_of(0x1p-25) + 1);
    PUT(f32_of(0x1p-25) - 1);
    PUT(f32_of(0x1.8p-24)); /* 1.5 ulps: a tie */
    PUT(f32_of(0x1p-26));
    PUT(f32_of(0x1p-30));
    PUT(f32_of(0x1p-40));
    PUT(f32_of(0x1p-100));
    PUT(f32_of(0x1p-126));
    PUT(f32_of(0x1p-127));      /* binary32 subnormal, bf16 subnormal */
    PUT(0x00400000u | 0x8000u); /* a bf16 subnormal tie */
    PUT(0x007F8000u);           /* rounds up to bf16's smallest normal */
    PUT(0x007FFFFFu);
    PUT(f32_of(1.0));
    PUT(f32_of(1.0 + 0x1p-11)); /* fp16 tie */
    PUT(f32_of(1.0 + 0x1p-8));  /* bf16 tie */
    /* ties and their neighbours at every subnormal spacing of fp16: (m + 1/2) 2^-24 */
    for (int k = 0; k <= 10; k++) {
        const double m = (double)((1 << k) - 1 + (k & 1));
        PUT(f32_of((m + 0.5) * 0x1p-24));
        PUT(f32_of((m + 0.5) * 0x1p-24) + 1);
        PUT(f32_of((m + 0.5) * 0x1p-24) - 1);
    }
    /* 2^-15 <= |x| < 2^-14 with 11 leading ones: the tininess-after boundary */
    for (uint32_t low = 0; low < 0x2000; low += 0x1FF)
        PUT(0x387FE000u + low);
    PUT(0x387FFFFFu);
    PUT(0x387FF000u);
    PUT(0x387FF001u);
    PUT(0x387FEFFFu);
    (void)fmt;
#undef PUT
    return n;
}

/* Gradient-like values with edge values mixed in. */
static void make_array(ts_rng *r, int fmt, float *in, size_t n)
{
    static uint32_t edges[1024];
    const size_t ne = edge_values(fmt, edges, 1024);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        const uint32_t pick = ts_below(r, 10);
        if (pick < 3) {
            u = edges[ts_below(r, (uint32_t)ne)];
        } else if (pick < 8) { /* magnitudes 2^-30 .. 2^10, random significand */
            u = (uint32_t)(ts_below(r, 2)) << 31 | (97u + ts_below(r, 40)) << 23 |
                ((uint32_t)ts_next(r) & 0x7FFFFF);
        } else if (pick < 9) { /* any binary32 */
            u = (uint32_t)ts_next(r);
        } else { /* fp16's subnormal range with short significands: exact results and ties */
            u = (uint32_t)(ts_below(r, 2)) << 31 | (100u + ts_below(r, 14)) << 23 |
                ((uint32_t)ts_next(r) & 0x7FF000);
        }
        memcpy(&in[i], &u, sizeof u);
    }
}

/* _i: fmt */
START_TEST(test_array_against_scalar)
{
    const int fmt = _i ? FPE_FMT_BF16 : FPE_FMT_F16;
    static float in[N_MAX], fout[N_MAX];
    static uint16_t out[N_MAX];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ (0xC5C5u + (uint64_t)fmt));
    uint64_t bad = 0, checked = 0;
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int opt = 0; opt < 16; opt++) {
            fpe_env env = fpe_env_default();
            env.round = (uint8_t)mode;
            env.tininess = (uint8_t)(opt & 1);
            env.daz = (uint8_t)((opt >> 1) & 1);
            env.ftz = (uint8_t)((opt >> 2) & 1);
            env.nan = (opt >> 3) ? FPE_NAN_CANONICAL : FPE_NAN_X86;
            env.sr_seed = 0x5EED0000u + (uint64_t)mode;
            env.sr_stream = (uint32_t)opt;
            for (int rep = 0; rep < 5; rep++) {
                /* lengths: several blocks and a tail, a short tail-only call, one block; and
                 * blocks of normal values with a few others (the general path for each), one
                 * block and several (bf16: the later blocks' easy loop takes overflow,
                 * infinities and NaNs itself) */
                const size_t n = rep == 0 || rep == 4 ? N_MAX
                                 : rep == 1           ? 5 + ts_below(&rng, 20)
                                                      : 1024;
                env.sr_index = ts_next(&rng) >> 20;
                make_array(&rng, fmt, in, n);
                if (rep >= 3) /* a normal value everywhere but about 1 element in 40 */
                    for (size_t i = 0; i < n; i++)
                        if (ts_below(&rng, 40) != 0) {
                            const uint32_t u = (uint32_t)(ts_below(&rng, 2)) << 31 |
                                               (120u + ts_below(&rng, 14)) << 23 |
                                               ((uint32_t)ts_next(&rng) & 0x7FFFFF);
                            memcpy(&in[i], &u, sizeof u);
                        }
                bad += cvs_check(&env, fmt, in, n, rep != 1, true, out, fout);
                checked += n;
            }
        }
    printf("array vs scalar %s: %" PRIu64 " elements, %" PRIu64 " mismatches\n",
           fmt == FPE_FMT_F16 ? "fp16" : "bf16", checked, bad);
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

/* Each edge value alone in every mode and setting: its flags exactly. */
START_TEST(test_edges_alone)
{
    const int fmt = _i ? FPE_FMT_BF16 : FPE_FMT_F16;
    static uint32_t edges[1024];
    static float in[1024];
    const size_t ne = edge_values(fmt, edges, 1024);
    memcpy(in, edges, ne * sizeof *in);
    uint64_t bad = 0;
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int opt = 0; opt < 16; opt++) {
            fpe_env env = fpe_env_default();
            env.round = (uint8_t)mode;
            env.tininess = (uint8_t)(opt & 1);
            env.daz = (uint8_t)((opt >> 1) & 1);
            env.ftz = (uint8_t)((opt >> 2) & 1);
            env.nan = (opt >> 3) ? FPE_NAN_CANONICAL : FPE_NAN_X86;
            env.sr_seed = 77;
            env.sr_index = 1000003;
            bad += cvs_check_each(&env, fmt, in, ne);
        }
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

/* Stochastic rounding: the same element gets the same result at the same index however the
 * array is cut, and the results follow the scalar path draw by draw (many seeds). */
START_TEST(test_stochastic_seeds)
{
    const int fmt = _i ? FPE_FMT_BF16 : FPE_FMT_F16;
    static float in[N_MAX], fout[N_MAX];
    static uint16_t out[N_MAX];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() ^ 0x57AC0u);
    uint64_t bad = 0;
    for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++)
        for (int seed = 0; seed < 8; seed++) {
            fpe_env env = fpe_env_default();
            env.round = (uint8_t)mode;
            env.sr_seed = 1 + (uint64_t)seed * 0x9E3779B97F4A7C15ull;
            env.sr_stream = (uint32_t)seed;
            env.sr_index = (uint64_t)seed * 0x100000001ull + 3;
            make_array(&rng, fmt, in, N_MAX);
            bad += cvs_check(&env, fmt, in, N_MAX, true, seed & 1, out, fout);
        }
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

/* Every 16-bit pattern a chop can give, as the input's exact float (a NaN's payload kept), in
 * every mode and both NaN specializations: the floats of fpe_chop_f32 (out of place and in
 * place) are the widened patterns. */
START_TEST(test_every_result_pattern)
{
    const int fmt = _i ? FPE_FMT_BF16 : FPE_FMT_F16;
    static float in[65536], fout[65536], inplace[65536];
    static uint16_t out[65536];
    fpe_env widen = fpe_env_default();
    for (uint32_t h = 0; h < 65536; h++) {
        const uint32_t x = fmt == FPE_FMT_F16 ? fpe_f16_to_f32(&widen, (uint16_t)h) : h << 16;
        memcpy(&in[h], &x, sizeof x);
    }
    uint64_t bad = 0;
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
        for (int canonical = 0; canonical < 2; canonical++) {
            fpe_env env = fpe_env_default();
            env.round = (uint8_t)mode;
            env.nan = canonical ? FPE_NAN_CANONICAL : FPE_NAN_X86;
            bad += cvs_check(&env, fmt, in, 65536, true, true, out, fout);
            fpe_env e2 = env;
            memcpy(inplace, in, sizeof inplace);
            fpe_chop_f32(&e2, (fpe_format_id)fmt, inplace, inplace, 65536, NULL);
            bad += memcmp(inplace, fout, sizeof fout) != 0;
        }
    ck_assert_msg(bad == 0, "%" PRIu64 " mismatches", bad);
}
END_TEST

/* Whether the kernel lists CPU flag `name` (/proc/cpuinfo: an account of the CPU independent of
 * the library's CPUID code); false where there is no such file. */
static bool cpuinfo_has(const char *name)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5))
            for (char *w = strtok(line, " \t\n:"); w && !found; w = strtok(NULL, " \t\n:"))
                found = !strcmp(w, name);
    fclose(f);
    return found;
}

/* Where the library takes a host path: the host's conversion instruction for fp16 in near_even,
 * minMag, min and max without FTZ or DAZ, on x86-64 with AVX2 and F16C (as /proc/cpuinfo lists
 * them), and AVX2 lanes for bf16 in every setting on x86-64 with AVX2, unless
 * AMPSCOPE_EMU_PORTABLE=1; nowhere else.  So the other tests here hold both paths to the scalar
 * conversion on such a host; fpe_chop_hw_enable(false) turns the host paths off. */
START_TEST(test_hardware_path_where)
{
    bool host = false, avx2 = false;
#if defined(__x86_64__)
    avx2 = cpuinfo_has("avx2");
    host = avx2 && cpuinfo_has("f16c");
#endif
    const char *portable = getenv("AMPSCOPE_EMU_PORTABLE");
    if (portable && portable[0] && strcmp(portable, "0") != 0) host = avx2 = false;
    printf("host paths on this host: fp16 %s, bf16 %s\n", host ? "yes" : "no", avx2 ? "yes" : "no");
    for (int fmt = FPE_FMT_F16; fmt <= FPE_FMT_BF16; fmt++)
        for (int mode = 0; mode < FPE_ROUND_COUNT; mode++)
            for (int opt = 0; opt < 4; opt++) {
                fpe_env env = fpe_env_default();
                env.round = (uint8_t)mode;
                env.daz = (uint8_t)(opt & 1);
                env.ftz = (uint8_t)(opt >> 1);
                const bool ieee =
                    mode == FPE_RNE || mode == FPE_RZ || mode == FPE_RD || mode == FPE_RU;
                const bool want = host && fmt == FPE_FMT_F16 && ieee && opt == 0;
                const bool want_bf16 = avx2 && fmt == FPE_FMT_BF16;
                ck_assert_int_eq(fpe_chop_hw_applies(&env, fmt), want);
                ck_assert_int_eq(fpe_chop_bf16_applies(&env, fmt), want_bf16);
                const bool was = fpe_chop_hw_enable(false);
                ck_assert(!fpe_chop_hw_applies(&env, fmt));
                ck_assert(!fpe_chop_bf16_applies(&env, fmt));
                fpe_chop_hw_enable(was);
                ck_assert_int_eq(fpe_chop_hw_applies(&env, fmt), want);
                ck_assert_int_eq(fpe_chop_bf16_applies(&env, fmt), want_bf16);
            }
    /* the scalar host paths (emulate/scalar_host.h): fp16 where the array path's F16C is, bf16
     * and fp32 on every x86-64 host, neither when the host paths are off */
    bool x86 = false;
#if defined(__x86_64__)
    x86 = !(portable && portable[0] && strcmp(portable, "0") != 0);
#endif
    const int scalar = fpe_host_scalar_read();
    ck_assert_int_eq((scalar & FPE_HOST_SCALAR_F16C) != 0, host);
    ck_assert_int_eq((scalar & FPE_HOST_SCALAR_B64) != 0, x86);
    const bool was = fpe_chop_hw_enable(false);
    ck_assert_int_eq(fpe_host_scalar_read(), 0);
    fpe_chop_hw_enable(was);
    ck_assert_int_eq(fpe_host_scalar_read(), scalar);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chop_scalar");
    TCase *tc = tcase_create("chop_scalar");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_hardware_path_where);
    tcase_add_loop_test(tc, test_array_against_scalar, 0, 2);
    tcase_add_loop_test(tc, test_edges_alone, 0, 2);
    tcase_add_loop_test(tc, test_stochastic_seeds, 0, 2);
    tcase_add_loop_test(tc, test_every_result_pattern, 0, 2);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
