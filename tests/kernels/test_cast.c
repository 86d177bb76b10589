/* test_cast: ak_cast on the cpu backend against the emulator's scalar
 * conversions (fpe_f32_to_f16 and the rest), every pair of dtypes and every
 * rounding mode, element i with sr_index = r->index + i. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

static const fpe_format_id formats[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};

/* The reference: the emulator's public scalar conversion from -> to. */
static uint32_t scalar_cast(fpe_format_id from, fpe_format_id to, fpe_env *env, uint32_t x)
{
    if (from == to) return x;
    switch (from * 3 + to) {
    case FPE_FMT_F16 * 3 + FPE_FMT_BF16: return fpe_f16_to_bf16(env, (uint16_t)x);
    case FPE_FMT_F16 * 3 + FPE_FMT_F32: return fpe_f16_to_f32(env, (uint16_t)x);
    case FPE_FMT_BF16 * 3 + FPE_FMT_F16: return fpe_bf16_to_f16(env, (uint16_t)x);
    case FPE_FMT_BF16 * 3 + FPE_FMT_F32: return fpe_bf16_to_f32(env, (uint16_t)x);
    case FPE_FMT_F32 * 3 + FPE_FMT_F16: return fpe_f32_to_f16(env, x);
    default: return fpe_f32_to_bf16(env, x);
    }
}

/* Casts x (n elements of from) to `to` on the cpu backend with r (NULL:
 * RNE) and returns the result as uint32_t in out; the guards must hold. */
static void run_cast(ak_backend *b, fpe_format_id from, fpe_format_id to, const uint32_t *x,
                     size_t n, const ak_rounding *r, uint32_t *out)
{
    kt_buf s = kt_buf_alloc(b, n, (ak_dtype)from), d = kt_buf_alloc(b, n, (ak_dtype)to);
    kt_buf_put(&s, x);
    const int rc = ak_cast(b, d.t, s.t, r);
    ck_assert_msg(rc == AK_OK, "ak_cast: %s", ak_error(b));
    kt_buf_get(&d, out);
    ck_assert(kt_buf_guards_ok(&s) && kt_buf_guards_ok(&d));
    kt_buf_free(&s);
    kt_buf_free(&d);
}

/* ak_cast against the scalar conversions; returns the mismatches. */
static size_t check_cast(ak_backend *b, fpe_format_id from, fpe_format_id to, const uint32_t *x,
                         size_t n, ak_rounding r)
{
    uint32_t *got = malloc(n * 4 + 4), *want = malloc(n * 4 + 4);
    ck_assert(got && want);
    run_cast(b, from, to, x, n, &r, got);
    for (size_t i = 0; i < n; i++) {
        fpe_env env = kt_env_of(&r, i);
        want[i] = scalar_cast(from, to, &env, x[i]);
    }
    char what[64];
    snprintf(what, sizeof what, "%s->%s %s", ts_format_name(from), ts_format_name(to),
             ts_mode_names[r.mode]);
    const size_t bad = kt_count_mismatches(what, got, want, n, 4);
    free(got);
    free(want);
    return bad;
}

/* fp32 sources: the emulator's specials, then kt_fill_f32_bits's mix. */
static uint32_t *f32_inputs(size_t *n_out)
{
    const size_t n = (ts_random_count() < 40000 ? 40000 : ts_random_count()) / 4 + 7;
    uint32_t *x = malloc(n * 4);
    ck_assert_ptr_nonnull(x);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed());
    kt_fill_f32_bits(&rng, x, n);
    uint32_t specials[512];
    const size_t ns = ts_special_values(FPE_FMT_F32, specials, 512);
    memcpy(x, specials, (ns < n ? ns : n) * 4);
    *n_out = n;
    return x;
}

/* Every 16-bit pattern. */
static uint32_t *all_u16(void)
{
    uint32_t *x = malloc(65536 * 4);
    ck_assert_ptr_nonnull(x);
    for (uint32_t i = 0; i < 65536; i++)
        x[i] = i;
    return x;
}

/* _i = target: fp32 -> fp16/bf16 in every mode, random and special inputs. */
START_TEST(from_f32_every_mode)
{
    const fpe_format_id to = _i ? FPE_FMT_BF16 : FPE_FMT_F16;
    ak_backend *b = kt_open_cpu();
    size_t n;
    uint32_t *x = f32_inputs(&n);
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        /* an index that is not a multiple of 4 starts inside a Philox block */
        const ak_rounding r =
            kt_rounding((fpe_round)mode, 0x9E3779B97F4A7C15ull + (uint64_t)mode, 5, 1000003);
        ck_assert_uint_eq(check_cast(b, FPE_FMT_F32, to, x, n, r), 0);
        const ak_rounding r2 = kt_rounding((fpe_round)mode, 42, 0, 0);
        ck_assert_uint_eq(check_cast(b, FPE_FMT_F32, to, x, 1021, r2), 0);
    }
    free(x);
    ak_close(b);
}
END_TEST

/* _i = pair: every 16-bit pattern through a 16-bit-source pair, in every mode. */
START_TEST(from_16_exhaustive)
{
    static const fpe_format_id pairs[4][2] = {{FPE_FMT_F16, FPE_FMT_F32},
                                              {FPE_FMT_BF16, FPE_FMT_F32},
                                              {FPE_FMT_F16, FPE_FMT_BF16},
                                              {FPE_FMT_BF16, FPE_FMT_F16}};
    const fpe_format_id from = pairs[_i][0], to = pairs[_i][1];
    ak_backend *b = kt_open_cpu();
    uint32_t *x = all_u16();
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        const ak_rounding r = kt_rounding(
            (fpe_round)mode, 0xFEEDFACECAFEBEEFull ^ (uint64_t)(_i * 8 + mode), 3, 77777777777ull);
        ck_assert_uint_eq(check_cast(b, from, to, x, 65536, r), 0);
    }
    free(x);
    ak_close(b);
}
END_TEST

/* Casting [0, k) with index I and [k, n) with index I + k gives the bits of one call. */
START_TEST(split_calls_agree)
{
    static const int modes[] = {FPE_RNE, FPE_RO, FPE_SR_PROP, FPE_SR_EQUAL};
    ak_backend *b = kt_open_cpu();
    size_t nx;
    uint32_t *x = f32_inputs(&nx);
    const size_t n = 5003, k = 1237;
    ck_assert_uint_ge(nx, n);
    for (int fi = 0; fi < 3; fi++) {
        for (int ti = 0; ti < 3; ti++) {
            const fpe_format_id from = formats[fi], to = formats[ti];
            if (from == to) continue;
            uint32_t *src = malloc(n * 4);
            ck_assert_ptr_nonnull(src);
            for (size_t i = 0; i < n; i++)
                src[i] = from == FPE_FMT_F32 ? x[i] : (x[i] & 0xFFFF);
            for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
                const ak_rounding whole =
                    kt_rounding((fpe_round)modes[m], 1234567, 9, 1ull << 40 | 5);
                const ak_rounding head = whole;
                const ak_rounding tail =
                    kt_rounding((fpe_round)modes[m], 1234567, 9, whole.index + k);
                uint32_t *one = malloc(n * 4), *two = malloc(n * 4);
                ck_assert(one && two);
                run_cast(b, from, to, src, n, &whole, one);
                run_cast(b, from, to, src, k, &head, two);
                run_cast(b, from, to, src + k, n - k, &tail, two + k);
                ck_assert_uint_eq(kt_count_mismatches("split", two, one, n, 4), 0);
                free(one);
                free(two);
            }
            free(src);
        }
    }
    free(x);
    ak_close(b);
}
END_TEST

/* Equal dtypes copy the bits, signaling NaNs included; r NULL is RNE with index 0. */
START_TEST(copies_and_default_rounding)
{
    ak_backend *b = kt_open_cpu();
    size_t n;
    uint32_t *x = f32_inputs(&n);
    n = 4099;
    uint32_t *got = malloc(n * 4), *h = malloc(n * 4);
    ck_assert(got && h);
    for (int fi = 0; fi < 3; fi++) {
        const fpe_format_id f = formats[fi];
        for (size_t i = 0; i < n; i++)
            h[i] = f == FPE_FMT_F32 ? x[i] : (x[i] ^ (x[i] >> 16)) & 0xFFFF;
        run_cast(b, f, f, h, n, NULL, got);
        ck_assert_uint_eq(kt_count_mismatches("copy", got, h, n, 4), 0);
    }
    /* NULL rounding */
    ck_assert_uint_eq(check_cast(b, FPE_FMT_F32, FPE_FMT_F16, x, n, ak_rounding_rne()), 0);
    run_cast(b, FPE_FMT_F32, FPE_FMT_F16, x, n, NULL, got);
    fpe_env env = fpe_env_default();
    for (size_t i = 0; i < n; i++)
        h[i] = fpe_f32_to_f16(&env, x[i]);
    ck_assert_uint_eq(kt_count_mismatches("NULL rounding", got, h, n, 4), 0);
    /* a cast onto itself with equal dtypes does nothing */
    kt_buf s = kt_buf_alloc(b, 3, AK_F32);
    const uint32_t v[3] = {0x7F800001u, 1, 0x80000000u};
    kt_buf_upload(&s, v);
    ck_assert_int_eq(ak_cast(b, s.t, s.t, NULL), AK_OK);
    uint32_t w[3];
    kt_buf_download(&s, w);
    ck_assert_int_eq(memcmp(v, w, sizeof v), 0);
    ck_assert(kt_buf_guards_ok(&s));
    kt_buf_free(&s);
    free(got);
    free(h);
    free(x);
    ak_close(b);
}
END_TEST

/* A few values worked by hand, so the test does not only trust the emulator. */
START_TEST(hand_checked)
{
    ak_backend *b = kt_open_cpu();
    /* 1 + 2^-11 is an fp16 tie: RNE to 1, RU to 1 + 2^-10; 65520 overflows fp16
     * under RNE; 2^-25 is half the least fp16 subnormal (ties to even: 0) */
    const uint32_t x[4] = {0x3F801000u, 0x477FF000u, 0x33000000u, 0xC0490FDBu /* -pi */};
    uint32_t got[4];
    ak_rounding r = kt_rounding((fpe_round)FPE_RNE, 0, 0, 0);
    run_cast(b, FPE_FMT_F32, FPE_FMT_F16, x, 4, &r, got);
    ck_assert_uint_eq(got[0], 0x3C00);
    ck_assert_uint_eq(got[1], 0x7C00);
    ck_assert_uint_eq(got[2], 0x0000);
    ck_assert_uint_eq(got[3], 0xC248); /* -3.140625 */
    r.mode = FPE_RU;
    run_cast(b, FPE_FMT_F32, FPE_FMT_F16, x, 4, &r, got);
    ck_assert_uint_eq(got[0], 0x3C01);
    ck_assert_uint_eq(got[2], 0x0001);
    ck_assert_uint_eq(got[3], 0xC248); /* toward +inf: the smaller magnitude */
    r.mode = FPE_RZ;
    run_cast(b, FPE_FMT_F32, FPE_FMT_BF16, x, 4, &r, got);
    ck_assert_uint_eq(got[1], 0x477F); /* 65280 */
    ck_assert_uint_eq(got[3], 0xC049);
    const uint32_t h[2] = {0x7D01u /* fp16 sNaN */, 0x0001u /* fp16 2^-24 */};
    run_cast(b, FPE_FMT_F16, FPE_FMT_F32, h, 2, NULL, got);
    ck_assert_uint_eq(got[0], 0x7FE02000u); /* quieted, payload kept */
    ck_assert_uint_eq(got[1], 0x33800000u);
    ak_close(b);
}
END_TEST

START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf s = kt_buf_alloc(b, 12, AK_F32), d = kt_buf_alloc(b, 12, AK_F16);
    ck_assert_int_eq(ak_cast(NULL, d.t, s.t, NULL), AK_EINVAL);
    ck_assert_int_eq(ak_cast(b, ak_tensor_of(NULL, 12, AK_F16), s.t, NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: dst is NULL with 12 elements"), "%s", ak_error(b));
    ck_assert_int_eq(ak_cast(b, ak_tensor_of(d.t.data, 10, AK_F16), s.t, NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: dst has 10 elements, expected 12"), "%s",
                  ak_error(b));
    ck_assert_int_eq(ak_cast(b, d.t, ak_tensor_of(s.t.data, 12, (ak_dtype)9), NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: src has an invalid dtype (9)"), "%s", ak_error(b));
    ck_assert_int_eq(ak_cast(b, ak_tensor_of((char *)d.t.data + 1, 12, AK_F16), s.t, NULL),
                     AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: dst") && strstr(ak_error(b), "not aligned"), "%s",
                  ak_error(b));
    ak_rounding r = kt_rounding((fpe_round)FPE_ROUND_COUNT, 0, 0, 0);
    ck_assert_int_eq(ak_cast(b, d.t, s.t, &r), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: r->mode (8) is not a rounding mode"), "%s",
                  ak_error(b));
    r.mode = (fpe_round)-1;
    ck_assert_int_eq(ak_cast(b, d.t, s.t, &r), AK_EINVAL);
    /* an fp32 -> fp16 cast into its own storage */
    ck_assert_int_eq(ak_cast(b, ak_tensor_of(s.t.data, 12, AK_F16), s.t, NULL), AK_EINVAL);
    ck_assert_msg(strstr(ak_error(b), "ak_cast: dst") && strstr(ak_error(b), "overlap"), "%s",
                  ak_error(b));
    ck_assert_int_eq(ak_cast(b, ak_tensor_of((char *)s.t.data + 4, 11, AK_F32),
                             ak_tensor_of(s.t.data, 11, AK_F32), NULL),
                     AK_EINVAL);
    /* nothing to do is fine, and clears the last error */
    ck_assert_int_eq(ak_cast(b, ak_tensor_none(), ak_tensor_of(NULL, 0, AK_F16), NULL), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ck_assert(kt_buf_guards_ok(&s) && kt_buf_guards_ok(&d));
    kt_buf_free(&s);
    kt_buf_free(&d);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_cast");
    TCase *tc = tcase_create("cast");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, from_f32_every_mode, 0, 2);
    tcase_add_loop_test(tc, from_16_exhaustive, 0, 4);
    tcase_add_test(tc, split_calls_agree);
    tcase_add_test(tc, copies_and_default_rounding);
    tcase_add_test(tc, hand_checked);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
