/* test_tc_infer: the probes of tc_infer.c recover the parameters of the
 * tensor-core model (kernels/elem/tc_dot.h) for the published presets and
 * other parameter sets, in fp16 and bf16 - the proof, without a GPU, that
 * gpu_tc_probe's logic reads what it claims to read.  A chain of libm fmaf
 * (IEEE fp32 fused multiply-adds, one rounding each) is a second black box
 * whose expected features are worked out by hand. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "elem/tc_dot.h"
#include "tc_infer.h"

typedef struct model_ctx {
    ak_tc_model m;
    fpe_format_id f;
} model_ctx;

static float model_dot(const uint16_t *a, const uint16_t *b, size_t k, float c, void *ctx)
{
    const model_ctx *mc = ctx;
    uint32_t cb, d;
    memcpy(&cb, &c, 4);
    d = ak_tc_dot_k(&mc->m, mc->f, a, 1, b, 1, k, cb);
    float r;
    memcpy(&r, &d, 4);
    return r;
}

/* Decoded here, independently of the model. */
static double value16(fpe_format_id f, uint16_t x)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const int field = (x & 0x7FFF) >> m, frac = x & ((1 << m) - 1);
    const double v = field ? ldexp(1.0 + ldexp(frac, -m), field - bias) : ldexp(frac, 1 - bias - m);
    return x >> 15 ? -v : v;
}

static float fmaf_dot(const uint16_t *a, const uint16_t *b, size_t k, float c, void *ctx)
{
    const fpe_format_id *f = ctx;
    for (size_t l = 0; l < k; l++)
        c = fmaf((float)value16(*f, a[l]), (float)value16(*f, b[l]), c);
    return c;
}

static const ak_tc_model sets[] = {
    {4, 0, FPE_RZ},   {8, 1, FPE_RZ},    {16, 2, FPE_RZ}, /* v100, a100, h100 */
    {32, 5, FPE_RNE}, {4, 0, FPE_RNE},   {64, 3, FPE_RD}, {8, 0, FPE_RU},
    {5, 7, FPE_RZ},   {256, 4, FPE_RNE}, {16, 8, FPE_RZ}};

START_TEST(recovers_models)
{
    const fpe_format_id formats[2] = {FPE_FMT_F16, FPE_FMT_BF16};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        for (int fi = 0; fi < 2; fi++) {
            model_ctx mc = {sets[i], formats[fi]};
            tc_features ft;
            ck_assert_int_eq(tc_infer(formats[fi], model_dot, &mc, &ft), 0);
            ck_assert_msg(ft.products_exact, "set %zu", i);
            ck_assert_int_eq(ft.block, sets[i].block);
            ck_assert_int_eq(ft.round, (int)sets[i].round);
            ck_assert_int_eq(ft.extra_bits, sets[i].extra_bits);
            ck_assert_int_eq(ft.align, TC_ALIGN_TRUNCATE);
            ck_assert_int_eq(ft.normalises_in_block, 0);
            ck_assert_int_eq(ft.c_in_block, 1);
            ak_tc_model got;
            ck_assert(tc_features_model(&ft, &got));
            ck_assert(got.block == sets[i].block && got.extra_bits == sets[i].extra_bits &&
                      got.round == sets[i].round);
        }
}
END_TEST

START_TEST(small_and_large_blocks)
{
    /* blocks of 1 and 2 look alike to the block scan ("1 or 2"); 3 has no
     * normalisation probe; 300 is beyond the scan (0) */
    model_ctx mc = {{1, 2, FPE_RZ}, FPE_FMT_F16};
    tc_features ft;
    tc_infer(FPE_FMT_F16, model_dot, &mc, &ft);
    ck_assert_int_eq(ft.block, 2);
    ck_assert_int_eq(ft.extra_bits, TC_UNKNOWN);
    mc.m.block = 2;
    tc_infer(FPE_FMT_F16, model_dot, &mc, &ft);
    ck_assert_int_eq(ft.block, 2);
    ck_assert_int_eq(ft.round, FPE_RZ);
    mc.m.block = 3;
    tc_infer(FPE_FMT_F16, model_dot, &mc, &ft);
    ck_assert_int_eq(ft.block, 3);
    ck_assert_int_eq(ft.extra_bits, 2);
    ck_assert_int_eq(ft.normalises_in_block, TC_UNKNOWN);
    mc.m.block = 300;
    tc_infer(FPE_FMT_F16, model_dot, &mc, &ft);
    ck_assert_int_eq(ft.block, 0);
    /* more extra bits than the bf16 probe sees (m + 1 = 8) */
    mc.m = (ak_tc_model){16, 20, FPE_RZ};
    mc.f = FPE_FMT_BF16;
    tc_infer(FPE_FMT_BF16, model_dot, &mc, &ft);
    ck_assert_int_eq(ft.extra_bits, TC_EXTRA_ABOVE);
    ck_assert(!tc_features_model(&ft, &mc.m));
}
END_TEST

START_TEST(fmaf_chain)
{
    /* IEEE fp32 FMAs in order: L - L + s = s at once (block "1 or 2"); the
     * rounding probe sees RNE; no extra-bit probe with blocks under 3; c =
     * 2^-40 + 1 rounds to 1, minus 1 is 0, but with the extra bits unknown
     * that cannot be told from truncation: unknown. */
    for (int fi = 0; fi < 2; fi++) {
        fpe_format_id f = fi ? FPE_FMT_BF16 : FPE_FMT_F16;
        tc_features ft;
        ck_assert_int_eq(tc_infer(f, fmaf_dot, &f, &ft), 0);
        ck_assert(ft.products_exact);
        ck_assert_int_eq(ft.block, 2);
        ck_assert_int_eq(ft.round, FPE_RNE);
        ck_assert_int_eq(ft.extra_bits, TC_UNKNOWN);
        ck_assert_int_eq(ft.c_in_block, TC_UNKNOWN);
    }
}
END_TEST

START_TEST(rejects_bad_arguments)
{
    tc_features ft;
    fpe_format_id f = FPE_FMT_F16;
    ck_assert_int_eq(tc_infer(FPE_FMT_F32, fmaf_dot, &f, &ft), -1);
    ck_assert_int_eq(tc_infer(FPE_FMT_F16, NULL, &f, &ft), -1);
    ck_assert_int_eq(tc_infer(FPE_FMT_F16, fmaf_dot, &f, NULL), -1);
    ak_tc_model m;
    ck_assert(!tc_features_model(NULL, &m));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tc_infer");
    TCase *tc = tcase_create("tc_infer");
    tcase_add_test(tc, recovers_models);
    tcase_add_test(tc, small_and_large_blocks);
    tcase_add_test(tc, fmaf_chain);
    tcase_add_test(tc, rejects_bad_arguments);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
