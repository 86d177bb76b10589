/* test_tc_model: the tensor-core dot-product model (kernels/elem/tc_dot.h)
 * and ak_gemm with a model, against independent references only:
 *   - block 1, 60 extra bits, RNE is a chain of libm fmaf (one rounding per
 *     product, nothing lost to the alignment);
 *   - one block of all k products, 80 extra bits, is the exact sum rounded
 *     once: MPFR's mpfr_sum in RNE, RZ, RD and RU;
 *   - crafted cases whose fp32 bits are worked out by hand in the comments,
 *     where truncation or rounding, 0 or 3 extra bits, blocks of 4, 8 or 16
 *     and normalising inside a block give different answers;
 *   - specials, presets (a hand table) and ak_gemm's per-element plumbing.
 */
#include <check.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "elem/tc_dot.h"
#include "kt.h"
#include "test_support.h"

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A random fp16/bf16 pattern: random sign and significand, exponent uniform
 * in [lo, hi] (all normal in both formats for the ranges used here). */
static uint16_t random_in(ts_rng *r, fpe_format_id f, int lo, int hi)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const int e = lo + (int)ts_below(r, (uint32_t)(hi - lo + 1));
    const uint32_t frac = ts_below(r, 1u << m), sign = ts_below(r, 2);
    return (uint16_t)(sign << 15 | (uint32_t)(e + bias) << m | frac);
}

static uint32_t random_c(ts_rng *r, int lo, int hi)
{
    const int e = lo + (int)ts_below(r, (uint32_t)(hi - lo + 1));
    return ts_below(r, 2) << 31 | (uint32_t)(e + 127) << 23 | ts_below(r, 1u << 23);
}

/* The value of a 16-bit pattern, decoded here (no emulator). */
static double value16(fpe_format_id f, uint16_t x)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const int field = (x & 0x7FFF) >> m, frac = x & ((1 << m) - 1);
    const double v = field ? ldexp(1.0 + ldexp(frac, -m), field - bias) : ldexp(frac, 1 - bias - m);
    return x >> 15 ? -v : v;
}

static const fpe_format_id formats[2] = {FPE_FMT_F16, FPE_FMT_BF16};

START_TEST(block1_is_fmaf_chain)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 1);
    const ak_tc_model m = {1, 60, FPE_RNE};
    size_t bad = 0;
    for (int fi = 0; fi < 2; fi++)
        for (int t = 0; t < 3000; t++) {
            const fpe_format_id f = formats[fi];
            uint16_t a[40], b[40];
            const size_t k = 1 + ts_below(&r, 40);
            for (size_t l = 0; l < k; l++) {
                a[l] = random_in(&r, f, -12, 12);
                b[l] = random_in(&r, f, -12, 12);
            }
            const uint32_t c = random_c(&r, -30, 20);
            float acc = f32_of(c);
            for (size_t l = 0; l < k; l++)
                acc = fmaf((float)value16(f, a[l]), (float)value16(f, b[l]), acc);
            const uint32_t got = ak_tc_dot_k(&m, f, a, 1, b, 1, k, c);
            if (got != f32_bits(acc) && bad++ < 5)
                printf("fmaf chain %s k %zu: model %08x, fmaf %08x\n", fi ? "bf16" : "fp16", k, got,
                       f32_bits(acc));
        }
    ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(one_block_is_correctly_rounded_sum)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 2);
    const fpe_round modes[4] = {FPE_RNE, FPE_RZ, FPE_RD, FPE_RU};
    const mpfr_rnd_t rnd[4] = {MPFR_RNDN, MPFR_RNDZ, MPFR_RNDD, MPFR_RNDU};
    mpfr_t terms[65], sum;
    mpfr_ptr ptrs[65];
    for (int i = 0; i < 65; i++) {
        mpfr_init2(terms[i], 64);
        ptrs[i] = terms[i];
    }
    mpfr_init2(sum, 24);
    size_t bad = 0;
    for (int fi = 0; fi < 2; fi++)
        for (int t = 0; t < 2000; t++) {
            const fpe_format_id f = formats[fi];
            uint16_t a[64], b[64];
            const size_t k = 1 + ts_below(&r, 64);
            /* every term's bits lie within 103 bits of the largest: nothing is truncated */
            for (size_t l = 0; l < k; l++) {
                a[l] = random_in(&r, f, -14, 15);
                b[l] = random_in(&r, f, -14, 15);
                mpfr_set_d(terms[l], value16(f, a[l]) * value16(f, b[l]), MPFR_RNDN); /* exact */
            }
            const uint32_t c = random_c(&r, -20, 20);
            mpfr_set_flt(terms[k], f32_of(c), MPFR_RNDN);
            const int mi = (int)ts_below(&r, 4);
            const ak_tc_model m = {(int)k, 80, modes[mi]};
            mpfr_sum(sum, ptrs, (unsigned long)k + 1, rnd[mi]);
            const float want = mpfr_get_flt(sum, MPFR_RNDN); /* exact: 24 bits, normal range */
            const uint32_t got = ak_tc_dot_k(&m, f, a, 1, b, 1, k, c);
            /* an exact zero sum is +0 (-0 in RD), as the model documents */
            const uint32_t want_bits =
                want == 0.0f ? (modes[mi] == FPE_RD ? 0x80000000u : 0u) : f32_bits(want);
            if (got != want_bits && bad++ < 5)
                printf("exact sum %s k %zu mode %d: model %08x, mpfr %08x\n", fi ? "bf16" : "fp16",
                       k, mi, got, want_bits);
        }
    for (int i = 0; i < 65; i++)
        mpfr_clear(terms[i]);
    mpfr_clear(sum);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* fp16 patterns used below (sign, 5 exponent bits, 10 fraction bits):
 *   0x3C00 = 1, 0x3E00 = 1.5, 0x3BFF = 1 - 2^-11, 0x7800 = 2^15,
 *   0x0400 = 2^-14, 0x0C00 = 2^-12, 0x1000 = 2^-11, 0x1200 = 1.5 * 2^-11,
 *   0x8800 = -2^-13. */
static uint32_t dot16(int block, int extra, fpe_round r, const uint16_t *a, const uint16_t *b,
                      size_t k, uint32_t c)
{
    const ak_tc_model m = {block, extra, r};
    return ak_tc_dot_k(&m, FPE_FMT_F16, a, 1, b, 1, k, c);
}

START_TEST(final_rounding_rz_vs_rne)
{
    /* 1.5 * 1.5 = 2.25 (exponent 0 + 0, significand 2.25 in [2, 4)) plus
     * 1.5 2^-11 * 2^-11 = 3 2^-23 (exponent -22): aligned to 0, the grid
     * 2^-23 keeps both of its bits even with 0 extra bits.  The exact sum
     * 2.25 + 2^-22 + 2^-23 lies halfway between 2.25 + 2^-22 (0x40100001,
     * fp32 ulp in [2, 4) being 2^-22) and 2.25 + 2^-21 (0x40100002):
     * RZ gives 0x40100001, RNE the even 0x40100002. */
    const uint16_t a[2] = {0x3E00, 0x1200}, b[2] = {0x3E00, 0x1000};
    ck_assert_uint_eq(dot16(16, 0, FPE_RZ, a, b, 2, 0), 0x40100001u);
    ck_assert_uint_eq(dot16(16, 0, FPE_RNE, a, b, 2, 0), 0x40100002u);
    ck_assert_uint_eq(dot16(16, 0, FPE_RU, a, b, 2, 0), 0x40100002u);
    ck_assert_uint_eq(dot16(16, 0, FPE_RD, a, b, 2, 0), 0x40100001u);
}
END_TEST

START_TEST(extra_bits_0_vs_3)
{
    /* c = 1, products -(1 - 2^-11) * 1 and -2^-13 * 2^-12 = -2^-25.  The
     * largest exponent is c's, 0, so the grid is 2^-(23 + extra).
     * 0 extra bits: -2^-25 is truncated away, 1 - (1 - 2^-11) = 2^-11 =
     * 0x3A000000.  3 extra bits (grid 2^-26): it stays and the exact
     * 2^-11 - 2^-25 = 2^-12 (1 + (1 - 2^-13)) has exponent -12 (field 115)
     * and fraction 2^23 - 2^10 = 0x7FFC00: 0x39FFFC00.  Truncation per term
     * toward zero: with the product positive (+2^-25) the 0-bit result is
     * 2^-11 again, not 2^-11 + 2^-23. */
    const uint16_t a[2] = {0xBBFF, 0x8800}, b[2] = {0x3C00, 0x0C00};
    ck_assert_uint_eq(dot16(16, 0, FPE_RZ, a, b, 2, 0x3F800000u), 0x3A000000u);
    ck_assert_uint_eq(dot16(16, 3, FPE_RZ, a, b, 2, 0x3F800000u), 0x39FFFC00u);
    ck_assert_uint_eq(dot16(16, 3, FPE_RNE, a, b, 2, 0x3F800000u), 0x39FFFC00u);
    const uint16_t ap[2] = {0xBBFF, 0x0800};
    ck_assert_uint_eq(dot16(16, 0, FPE_RU, ap, b, 2, 0x3F800000u), 0x3A000000u);
    /* c far below the grid is truncated away whole: c = 2^-40 (0x2B800000)
     * with 1 * 1 and -1 * 1 (exponent 0, grid 2^-26) sums to +0; c = 2^-20
     * (0x35800000) stays: 0x35800000 */
    const uint16_t one_m1[2] = {0x3C00, 0xBC00}, ones[2] = {0x3C00, 0x3C00};
    ck_assert_uint_eq(dot16(16, 3, FPE_RZ, one_m1, ones, 2, 0x2B800000u), 0u);
    ck_assert_uint_eq(dot16(16, 3, FPE_RZ, one_m1, ones, 2, 0x35800000u), 0x35800000u);
    /* with 2 extra bits (grid 2^-25) it stays too: 0x39FFFC00 */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 2, 0x3F800000u), 0x39FFFC00u);
    /* 1 extra bit (grid 2^-24): gone */
    ck_assert_uint_eq(dot16(16, 1, FPE_RZ, a, b, 2, 0x3F800000u), 0x3A000000u);
}
END_TEST

START_TEST(block_4_8_16)
{
    /* 2^15 * 2^15 = 2^30, then -2^30, then 2^-14 * 2^-14 = 2^-28 at
     * position j, zeros elsewhere, c = 0.  In the block of the two 2^30s the
     * grid is 2^(30 - 23) or finer by at most 3 bits: 2^-28 is truncated and
     * the block sums to +0.  In a later block it is added to +0 alone:
     * 2^-28 = exponent field 99 = 0x31800000.
     *   j = 5:  block 4 -> 0x31800000; blocks 8, 16 -> 0.
     *   j = 10: blocks 4, 8 -> 0x31800000; block 16 -> 0. */
    uint16_t a[12] = {0}, b[12] = {0};
    a[0] = 0x7800;
    b[0] = 0x7800;
    a[1] = 0xF800;
    b[1] = 0x7800;
    a[5] = 0x0400;
    b[5] = 0x0400;
    ck_assert_uint_eq(dot16(4, 3, FPE_RZ, a, b, 12, 0), 0x31800000u);
    ck_assert_uint_eq(dot16(8, 3, FPE_RZ, a, b, 12, 0), 0u);
    ck_assert_uint_eq(dot16(16, 3, FPE_RZ, a, b, 12, 0), 0u);
    a[5] = b[5] = 0;
    a[10] = 0x0400;
    b[10] = 0x0400;
    ck_assert_uint_eq(dot16(4, 3, FPE_RZ, a, b, 12, 0), 0x31800000u);
    ck_assert_uint_eq(dot16(8, 3, FPE_RZ, a, b, 12, 0), 0x31800000u);
    ck_assert_uint_eq(dot16(16, 3, FPE_RZ, a, b, 12, 0), 0u);
}
END_TEST

START_TEST(normalisation_inside_block)
{
    /* 1 + 1 + 2^-23 + 2^-23 (2^-12 * 2^-11 = 2^-23).  One block of 4
     * aligned to exponent 0 keeps every bit and carries: 2 + 2^-22, exactly
     * representable (fp32 ulp 2^-22 in [2, 4)): 0x40000001.  Blocks of 1
     * normalise after every product: 2, then 2 + 2^-23 is aligned to
     * exponent 1 (grid 2^-22 with 0 extra bits) and truncated to 2, twice:
     * 0x40000000.  Blocks of 2: 1 + 1 = 2, then the accumulator 2 (exponent
     * 1) with both 2^-23: both truncated, 0x40000000. */
    const uint16_t a[4] = {0x3C00, 0x3C00, 0x0C00, 0x0C00}, b[4] = {0x3C00, 0x3C00, 0x1000, 0x1000};
    ck_assert_uint_eq(dot16(4, 0, FPE_RZ, a, b, 4, 0), 0x40000001u);
    ck_assert_uint_eq(dot16(1, 0, FPE_RZ, a, b, 4, 0), 0x40000000u);
    ck_assert_uint_eq(dot16(2, 0, FPE_RZ, a, b, 4, 0), 0x40000000u);
    /* with 1 extra bit, blocks of 2 keep the two 2^-23 (grid 2^-23): 0x40000001 */
    ck_assert_uint_eq(dot16(2, 1, FPE_RZ, a, b, 4, 0), 0x40000001u);
}
END_TEST

START_TEST(specials)
{
    uint16_t a[20], b[20];
    for (int i = 0; i < 20; i++)
        a[i] = b[i] = 0x3C00; /* 1 * 1 */
    /* 20 ones + 0.5 = 20.5 exactly: 0x41A40000 */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0x3F000000u), 0x41A40000u);
    a[3] = 0x7E00; /* NaN */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0), AK_TC_NAN);
    a[3] = 0x7C00; /* inf * 1: +inf */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0), 0x7F800000u);
    b[3] = 0; /* inf * 0 */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0), AK_TC_NAN);
    b[3] = 0x3C00;
    a[18] = 0xFC00; /* +inf in block 0, -inf in block 1 */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0), AK_TC_NAN);
    a[3] = 0x3C00; /* -inf alone, c finite */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0x3F800000u), 0xFF800000u);
    a[18] = 0x3C00;
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0xFF800000u), 0xFF800000u); /* c = -inf */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 20, 0x7FC00001u), AK_TC_NAN);   /* c NaN */
    /* zeros: -0 * 1 + (-0) is -0; +0 * 1 + (-0) is +0, -0 in RD */
    const uint16_t nz = 0x8000, one = 0x3C00, pz = 0;
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, &nz, &one, 1, 0x80000000u), 0x80000000u);
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, &pz, &one, 1, 0x80000000u), 0u);
    ck_assert_uint_eq(dot16(16, 2, FPE_RD, &pz, &one, 1, 0x80000000u), 0x80000000u);
    /* k = 0: c itself */
    ck_assert_uint_eq(dot16(16, 2, FPE_RZ, a, b, 0, 0x12345678u), 0x12345678u);
    /* bf16 overflow: 2^100 * 2^100 = 2^200: +inf in RNE, FLT_MAX in RZ;
     * bf16 2^100 = field 227 = 0x7180 */
    const uint16_t big = 0x7180;
    const ak_tc_model rne = {16, 2, FPE_RNE}, rz = {16, 2, FPE_RZ};
    ck_assert_uint_eq(ak_tc_dot_k(&rne, FPE_FMT_BF16, &big, 1, &big, 1, 1, 0), 0x7F800000u);
    ck_assert_uint_eq(ak_tc_dot_k(&rz, FPE_FMT_BF16, &big, 1, &big, 1, 1, 0), 0x7F7FFFFFu);
    /* a subnormal result: 2^-100 * 2^-40 = 2^-140 = fp32 subnormal 2^9 units of 2^-149;
     * bf16 2^-100 = field 27 = 0x0D80, 2^-40 = field 87 = 0x2B80 */
    const uint16_t s1 = 0x0D80, s2 = 0x2B80;
    ck_assert_uint_eq(ak_tc_dot_k(&rz, FPE_FMT_BF16, &s1, 1, &s2, 1, 1, 0), 0x00000200u);
}
END_TEST

START_TEST(presets)
{
    ak_tc_model m;
    /* the literature's parameters (kernels/gemm.c cites them) */
    ck_assert_int_eq(ak_tc_preset("v100", &m), AK_OK);
    ck_assert(m.block == 4 && m.extra_bits == 0 && m.round == FPE_RZ);
    ck_assert_int_eq(ak_tc_preset("a100", &m), AK_OK);
    ck_assert(m.block == 8 && m.extra_bits == 1 && m.round == FPE_RZ);
    ck_assert_int_eq(ak_tc_preset("h100", &m), AK_OK);
    ck_assert(m.block == 16 && m.extra_bits == 2 && m.round == FPE_RZ);
    ck_assert_int_eq(ak_tc_preset("b200", &m), AK_EINVAL);
    ck_assert_int_eq(ak_tc_preset("H100", &m), AK_EINVAL);
    ck_assert_int_eq(ak_tc_preset("", &m), AK_EINVAL);
    ck_assert_int_eq(ak_tc_preset(NULL, &m), AK_EINVAL);
    ck_assert_int_eq(ak_tc_preset("h100", NULL), AK_EINVAL);
    const ak_tc_model bad[4] = {{0, 2, FPE_RZ}, {4097, 2, FPE_RZ}, {16, 81, FPE_RZ}, {16, 2, 7}};
    for (int i = 0; i < 4; i++)
        ck_assert(!ak_tc_model_ok(&bad[i]));
    ck_assert(ak_tc_model_ok(&m) && m.block == 16); /* the failed calls left m alone */
}
END_TEST

START_TEST(gemm_uses_model)
{
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 3);
    ak_backend *be = kt_open_cpu();
    ak_tc_model h100;
    ck_assert_int_eq(ak_tc_preset("h100", &h100), AK_OK);
    enum { M = 3, N = 4, K = 37 };
    for (int fi = 0; fi < 2; fi++)
        for (int trans = 0; trans < 4; trans++) {
            const fpe_format_id f = formats[fi];
            const bool ta = trans & 1, tb = trans & 2;
            uint16_t a[M * K], b[K * N];
            uint32_t c[M * N], c0[M * N];
            for (int i = 0; i < M * K; i++)
                a[i] = random_in(&r, f, -8, 8);
            for (int i = 0; i < K * N; i++)
                b[i] = random_in(&r, f, -8, 8);
            for (int i = 0; i < M * N; i++)
                c0[i] = c[i] = random_c(&r, -4, 8);
            const ak_gemm_args g = {ta,         tb,
                                    M,          N,
                                    K,          1.0f,
                                    1.0f,       ak_tensor_of(a, M * K, (ak_dtype)f),
                                    ta ? M : K, ak_tensor_of(b, K * N, (ak_dtype)f),
                                    tb ? K : N, ak_tensor_of(c, M * N, AK_F32),
                                    N,          AK_COMPUTE_32F,
                                    &h100};
            ck_assert_int_eq(ak_gemm(be, &g), AK_OK);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    const uint16_t *ar = ta ? a + i : a + i * K;
                    const uint16_t *bc = tb ? b + j * K : b + j;
                    const uint32_t dot =
                        ak_tc_dot_k(&h100, f, ar, ta ? M : 1, bc, tb ? 1 : N, K, 0);
                    /* the epilogue 1 * dot + 1 * c: one fp32 addition, here by the FPU */
                    const float want = f32_of(dot) + f32_of(c0[i * N + j]);
                    ck_assert_uint_eq(c[i * N + j], f32_bits(want));
                }
        }
    /* a bad model is rejected, naming the field */
    uint16_t a1 = 0x3C00, b1 = 0x3C00;
    float c1 = 0;
    const ak_tc_model bad = {0, 2, FPE_RZ};
    const ak_gemm_args g = {false, false,
                            1,     1,
                            1,     1.0f,
                            0.0f,  ak_tensor_of(&a1, 1, AK_F16),
                            1,     ak_tensor_of(&b1, 1, AK_F16),
                            1,     ak_tensor_of(&c1, 1, AK_F32),
                            1,     AK_COMPUTE_32F,
                            &bad};
    ck_assert_int_eq(ak_gemm(be, &g), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(be), "tc: block 0"), "%s", ak_error(be));
    ak_close(be);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tc_model");
    TCase *tc = tcase_create("tc_model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, block1_is_fmaf_chain);
    tcase_add_test(tc, one_block_is_correctly_rounded_sum);
    tcase_add_test(tc, final_rounding_rz_vs_rne);
    tcase_add_test(tc, extra_bits_0_vs_3);
    tcase_add_test(tc, block_4_8_16);
    tcase_add_test(tc, normalisation_inside_block);
    tcase_add_test(tc, specials);
    tcase_add_test(tc, presets);
    tcase_add_test(tc, gemm_uses_model);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
