/* test_gelu: ak_gelu and ak_gelu_backward on the cpu backend, both forms:
 * values against a long-double libm reference written here from the
 * definitions, special values by hand, fp16/bf16 outputs equal to the
 * emulator's rounding of the fp32 result, the derivative against libm and
 * against central differences of the forward op, the accuracy of the
 * element code's own exp and Phi against libm, bad arguments, guards. */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "elem/gelu.h"
#include "kt.h"

static const ak_gelu_form forms[2] = {AK_GELU_ERF, AK_GELU_TANH};

/* ---- the reference: libm in long double, from the definitions ------------------------- */
static long double ref_cdf(long double x) { return 0.5L * erfcl(-x / sqrtl(2.0L)); }

/* sigma(2u) = 0.5 (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3) */
static long double ref_sig(long double x, long double *du)
{
    const long double k = sqrtl(2.0L / 3.14159265358979323846264338327950288L);
    const long double u = k * (x + 0.044715L * x * x * x);
    *du = k * (1.0L + 3.0L * 0.044715L * x * x);
    return 1.0L / (1.0L + expl(-2.0L * u));
}

/* Below 2^-100, gelu(x) = x/2 + x^2 / sqrt(2 pi) + O(x^4) in both forms:
 * x/2 (exact in double) nudged up by far less than its fp32 ulp, so that where
 * x/2 is a tie of fp32 (x the smallest subnormals) it rounds up, as the
 * positive x^2 term makes the exact value do. */
static double ref_gelu(ak_gelu_form form, double x)
{
    if (fabs(x) < 0x1p-100 && x != 0) return x / 2 + fabs(x) * 0x1p-40;
    long double du;
    if (form == AK_GELU_ERF) return (double)((long double)x * ref_cdf(x));
    return (double)((long double)x * ref_sig(x, &du));
}

static double ref_slope(ak_gelu_form form, double x)
{
    const long double lx = x;
    if (form == AK_GELU_ERF)
        return (double)(ref_cdf(lx) + lx * expl(-lx * lx / 2.0L) /
                                          sqrtl(2.0L * 3.14159265358979323846264338327950288L));
    long double du;
    const long double s = ref_sig(lx, &du);
    return (double)(s + 2.0L * lx * s * (1.0L - s) * du);
}

/* ---- values ------------------------------------------------------------------------------ */
static void run_gelu(ak_backend *b, ak_gelu_form form, ak_dtype dy, ak_dtype dx, const uint32_t *x,
                     uint32_t *y, size_t n)
{
    kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, n, dy);
    kt_buf_put(&tx, x);
    ck_assert_int_eq(ak_gelu(b, form, ty.t, tx.t), AK_OK);
    kt_buf_get(&ty, y);
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty));
    kt_buf_free(&tx);
    kt_buf_free(&ty);
}

/* fp32 outputs within one ulp of the reference rounded to fp32 (equal in
 * nearly every case); fp16/bf16 outputs the emulator's rounding of the
 * fp32 output, exactly; every input dtype. */
START_TEST(values_against_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 40);
    const size_t n = 20000;
    uint32_t *x = kt_bits_alloc(n), *y32 = kt_bits_alloc(n), *y = kt_bits_alloc(n),
             *want = kt_bits_alloc(n);
    for (int f = 0; f < 2; f++) {
        for (int ix = 0; ix < 3; ix++) {
            const ak_dtype dx = kt_dtypes[ix];
            kt_fill_values(&r, dx, x, n / 2, 12.0);
            kt_fill_bits(&r, dx, x + n / 2, n - n / 2);
            run_gelu(b, forms[f], AK_F32, dx, x, y32, n);
            size_t exact = 0;
            for (size_t i = 0; i < n; i++) {
                const uint32_t ref = kt_from_f64(AK_F32, ref_gelu(forms[f], kt_value(dx, x[i])));
                if (kt_is_nan(AK_F32, ref) || kt_is_nan(AK_F32, y32[i])) {
                    const double v = kt_value(dx, x[i]);
                    /* NaN in, or -inf: the default NaN (the reference gives -inf * 0 too) */
                    ck_assert_msg(y32[i] == kt_default_nan(AK_F32) && (v != v || v == -INFINITY),
                                  "form %d x %a: got 0x%08x", f, v, y32[i]);
                    exact++;
                    continue;
                }
                const int64_t d = kt_ulp_distance(AK_F32, y32[i], ref);
                ck_assert_msg(d <= 1 && d >= -1, "form %d x %a: got 0x%08x, reference 0x%08x", f,
                              kt_value(dx, x[i]), y32[i], ref);
                exact += d == 0;
            }
            ck_assert_msg(exact + n / 1000 >= n, "form %d: %zu of %zu correctly rounded", f, exact,
                          n);
            for (int iy = 0; iy < 3; iy++) { /* the 16-bit outputs: the fp32 result, converted */
                const ak_dtype dy = kt_dtypes[iy];
                run_gelu(b, forms[f], dy, dx, x, y, n);
                for (size_t i = 0; i < n; i++)
                    want[i] = kt_convert(AK_F32, dy, y32[i]);
                ck_assert_msg(kt_bits_mismatches("gelu", dy, y, want, n) == 0, "form %d y %s x %s",
                              f, ak_dtype_name(dy), ak_dtype_name(dx));
            }
        }
    }
    free(x);
    free(y32);
    free(y);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(special_values)
{
    ak_backend *b = kt_open_cpu();
    enum { N = 12 };
    /* +0, -0, +inf, -inf, NaN, FLT_MAX, -FLT_MAX, 2^-149, -2^-149, 2^-126, 1, -3 */
    const uint32_t x[N] = {0,           0x80000000u, 0x7F800000u, 0xFF800000u,
                           0x7FC01234u, 0x7F7FFFFFu, 0xFF7FFFFFu, 1,
                           0x80000001u, 0x00800000u, 0x3F800000u, 0xC0400000u};
    const uint32_t nan = kt_default_nan(AK_F32);
    /* 2^-149 Phi(2^-149) is just above 2^-150, the half-way point: rounds up;
     * -2^-149 Phi(-2^-149) just below it: -0.  2^-126 Phi = 2^-127 (+ far less
     * than half an ulp).  Phi(1) = 0.8413447460685429 (tables), the tanh form
     * 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411919906082768; -3 Phi(-3) =
     * -3 * 0.0013498980316301 = -0.0040496940948903. */
    const uint32_t want_erf[N] = {0,
                                  0x80000000u,
                                  0x7F800000u,
                                  nan,
                                  nan,
                                  0x7F7FFFFFu,
                                  0x80000000u,
                                  1,
                                  0x80000000u,
                                  0x00400000u,
                                  kt_from_f64(AK_F32, 0.8413447460685429),
                                  kt_from_f64(AK_F32, -0.0040496940948903)};
    uint32_t got[N];
    run_gelu(b, AK_GELU_ERF, AK_F32, AK_F32, x, got, N);
    ck_assert_uint_eq(kt_bits_mismatches("gelu erf", AK_F32, got, want_erf, N), 0);
    uint32_t want_tanh[N];
    memcpy(want_tanh, want_erf, sizeof want_tanh);
    want_tanh[10] = kt_from_f64(AK_F32, 0.8411919906082768);
    want_tanh[11] = got[11]; /* checked against the reference above */
    run_gelu(b, AK_GELU_TANH, AK_F32, AK_F32, x, got, N);
    ck_assert_uint_eq(kt_bits_mismatches("gelu tanh", AK_F32, got, want_tanh, 11), 0);
    /* in fp16: 65504 stays, 1 -> fp16 of fp32 0.84134475 = 0x3ABB; the
     * smallest fp16 subnormal 2^-24 -> 2^-25 (1 + 2^-24 0.8): the fp32
     * result is 2^-25 exactly, a tie in fp16, so +0 (the fp32 result,
     * converted, as an fp16 kernel computing in fp32 gives) */
    const uint32_t x16[3] = {0x7BFF, 0x3C00, 0x0001};
    const uint32_t want16[3] = {0x7BFF, kt_convert(AK_F32, AK_F16, want_erf[10]), 0x0000};
    run_gelu(b, AK_GELU_ERF, AK_F16, AK_F16, x16, got, 3);
    ck_assert_uint_eq(kt_bits_mismatches("gelu fp16", AK_F16, got, want16, 3), 0);
    ck_assert_uint_eq(want16[1], 0x3ABB);
    ak_close(b);
}
END_TEST

/* ---- backward ----------------------------------------------------------------------------- */
static void run_backward(ak_backend *b, ak_gelu_form form, ak_dtype ddx, ak_dtype ddy, ak_dtype dx,
                         const uint32_t *g, const uint32_t *x, uint32_t *out, size_t n)
{
    kt_buf tx = kt_buf_alloc(b, n, dx), tdy = kt_buf_alloc(b, n, ddy),
           tdx = kt_buf_alloc(b, n, ddx);
    kt_buf_put(&tx, x);
    kt_buf_put(&tdy, g);
    ck_assert_int_eq(ak_gelu_backward(b, form, tdx.t, tdy.t, tx.t), AK_OK);
    kt_buf_get(&tdx, out);
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&tdx));
    kt_buf_free(&tx);
    kt_buf_free(&tdy);
    kt_buf_free(&tdx);
}

/* dy = 1: the derivative itself, against libm's, within one fp32 ulp plus
 * 1e-15 absolute (the derivative has a zero near x = -0.75, where a double
 * evaluation keeps only its absolute accuracy); 16-bit dx the emulator's
 * rounding of the fp32 dx. */
START_TEST(backward_against_reference)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 41);
    const size_t n = 20000;
    uint32_t *x = kt_bits_alloc(n), *one = kt_bits_alloc(n), *g32 = kt_bits_alloc(n),
             *g = kt_bits_alloc(n), *want = kt_bits_alloc(n);
    for (size_t i = 0; i < n; i++)
        one[i] = 0x3F800000u;
    for (int f = 0; f < 2; f++) {
        kt_fill_values(&r, AK_F32, x, n, 12.0);
        run_backward(b, forms[f], AK_F32, AK_F32, AK_F32, one, x, g32, n);
        for (size_t i = 0; i < n; i++) {
            const double v = kt_value(AK_F32, x[i]), ref = ref_slope(forms[f], v);
            const double got = kt_value(AK_F32, g32[i]);
            ck_assert_msg(fabs(got - ref) <= kt_ulp(AK_F32, ref) + 1e-15,
                          "form %d x %a: slope %a, reference %a", f, v, got, ref);
        }
        for (int d = 1; d < 3; d++) {
            run_backward(b, forms[f], kt_dtypes[d], AK_F32, AK_F32, one, x, g, n);
            for (size_t i = 0; i < n; i++)
                want[i] = kt_convert(AK_F32, kt_dtypes[d], g32[i]);
            ck_assert_uint_eq(kt_bits_mismatches("gelu_backward", kt_dtypes[d], g, want, n), 0);
        }
    }
    free(x);
    free(one);
    free(g32);
    free(g);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(backward_special_values)
{
    ak_backend *b = kt_open_cpu();
    /* x: +inf, -inf, NaN -> NaN; x = 0 -> slope 1/2 (dy 3 -> 1.5); dy NaN ->
     * NaN; x = -0 with dy = -2 -> -1; x = 50 (slope 1) with dy = 7 -> 7; x = -50
     * (slope underflows to 0) with dy = +inf -> inf * 0 = NaN */
    const float x[8] = {INFINITY, -INFINITY, NAN, 0.0f, 1.0f, -0.0f, 50.0f, -50.0f};
    const float dy[8] = {1.0f, 1.0f, 1.0f, 3.0f, NAN, -2.0f, 7.0f, INFINITY};
    const uint32_t nan = kt_default_nan(AK_F32);
    const uint32_t want[8] = {nan, nan, nan, 0x3FC00000u, nan, 0xBF800000u, 0x40E00000u, nan};
    uint32_t xb[8], gb[8], got[8];
    for (int i = 0; i < 8; i++) {
        xb[i] = kt_f32_bits(x[i]);
        gb[i] = kt_f32_bits(dy[i]);
    }
    for (int f = 0; f < 2; f++) {
        run_backward(b, forms[f], AK_F32, AK_F32, AK_F32, gb, xb, got, 8);
        ck_assert_msg(kt_bits_mismatches("gelu_backward", AK_F32, got, want, 8) == 0, "form %d", f);
    }
    ak_close(b);
}
END_TEST

/* The backward op against central differences of the forward op: x on a
 * grid in [-4, 4], h = 2^-8 (truncation about h^2/6 |gelu'''| < 1e-5, the
 * fp32 outputs' rounding about 2^-24 * 4 / 2^-7 = 3e-5). */
START_TEST(gradient_matches_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    enum { N = 257 };
    const double h = 0x1p-8;
    uint32_t x[N], xp[N], xm[N], yp[N], ym[N], one[N], g[N];
    for (int i = 0; i < N; i++) {
        const double v = -4.0 + (double)i / 32.0;
        x[i] = kt_from_f64(AK_F32, v);
        xp[i] = kt_from_f64(AK_F32, v + h);
        xm[i] = kt_from_f64(AK_F32, v - h);
        one[i] = 0x3F800000u;
    }
    for (int f = 0; f < 2; f++) {
        run_gelu(b, forms[f], AK_F32, AK_F32, xp, yp, N);
        run_gelu(b, forms[f], AK_F32, AK_F32, xm, ym, N);
        run_backward(b, forms[f], AK_F32, AK_F32, AK_F32, one, x, g, N);
        for (int i = 0; i < N; i++) {
            const double fd = (kt_value(AK_F32, yp[i]) - kt_value(AK_F32, ym[i])) / (2 * h);
            ck_assert_msg(fabs(kt_value(AK_F32, g[i]) - fd) <= 1e-4, "form %d x %g: %g against %g",
                          f, kt_value(AK_F32, x[i]), kt_value(AK_F32, g[i]), fd);
        }
    }
    ak_close(b);
}
END_TEST

/* ---- the cpu backend's tables -------------------------------------------------------------- */
/* A 16-bit x of GELU_TABLE_MIN (65536) elements or more makes the cpu
 * backend look gelu(x) and the slope's parts up in a table per pattern
 * (cpu/gelu.c); then a small tensor uses the kept table too.  Every output
 * is the element code's, bit for bit: all 65536 patterns of x, every output
 * dtype, dy random patterns of every dtype, both forms. */
START_TEST(tables_give_the_element_code_bits)
{
    const size_t n = 65536, small = 1000;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 42);
    uint32_t *x = kt_bits_alloc(n), *g = kt_bits_alloc(n), *got = kt_bits_alloc(n),
             *want = kt_bits_alloc(n);
    for (int f = 0; f < 2; f++)
        for (int ix = 1; ix < 3; ix++) {
            const ak_dtype dx = kt_dtypes[ix];
            ak_backend *b = kt_open_cpu(); /* no table yet */
            for (size_t i = 0; i < n; i++)
                x[i] = (uint32_t)((i * 40503u) & 0xFFFFu); /* every pattern once, shuffled */
            for (int iy = 0; iy < 3; iy++) {
                const ak_dtype dy = kt_dtypes[iy];
                run_gelu(b, forms[f], dy, dx, x, got, n);
                for (size_t i = 0; i < n; i++)
                    want[i] =
                        ak_gelu_elem((fpe_format_id)dy, (fpe_format_id)dx, (int)forms[f], x[i]);
                ck_assert_msg(kt_bits_mismatches("gelu", dy, got, want, n) == 0,
                              "form %d y %s x %s", f, ak_dtype_name(dy), ak_dtype_name(dx));
                run_gelu(b, forms[f], dy, dx, x + 7, got, small); /* the kept table */
                ck_assert_msg(kt_bits_mismatches("gelu", dy, got, want + 7, small) == 0,
                              "form %d y %s x %s, small", f, ak_dtype_name(dy), ak_dtype_name(dx));
                const ak_dtype ddy = kt_dtypes[(iy + ix) % 3];
                kt_fill_bits(&r, ddy, g, n);
                run_backward(b, forms[f], dy, ddy, dx, g, x, got, n);
                for (size_t i = 0; i < n; i++)
                    want[i] = ak_gelu_backward_elem((fpe_format_id)dy, (fpe_format_id)ddy,
                                                    (fpe_format_id)dx, (int)forms[f], g[i], x[i]);
                ck_assert_msg(kt_bits_mismatches("gelu_backward", dy, got, want, n) == 0,
                              "form %d dx %s dy %s x %s", f, ak_dtype_name(dy), ak_dtype_name(ddy),
                              ak_dtype_name(dx));
                run_backward(b, forms[f], dy, ddy, dx, g + 3, x + 3, got, small);
                ck_assert_msg(kt_bits_mismatches("gelu_backward", dy, got, want + 3, small) == 0,
                              "form %d dx %s dy %s x %s, small", f, ak_dtype_name(dy),
                              ak_dtype_name(ddy), ak_dtype_name(dx));
            }
            ak_close(b);
        }
    free(x);
    free(g);
    free(got);
    free(want);
}
END_TEST

/* ---- the element code's own functions against libm ------------------------------------ */
static double ulps(double got, double ref)
{
    if (got == ref) return 0;
    return fabs(got - ref) / (nextafter(fabs(ref), INFINITY) - fabs(ref));
}

/* Measured: exp within 1 ulp of libm's on [-745, 709]; Phi within 150 ulps
 * (3.4e-14 relative) of erfcl's on [-38, 38], its worst near z = 1.5 where
 * 1 - erf(z) loses bits.  The bounds asserted leave room. */
START_TEST(element_accuracy)
{
    double worst_exp = 0, worst_cdf = 0;
    for (double v = -745.0; v < 709.0; v += 0.0137)
        worst_exp = fmax(worst_exp, ulps(ak_gelu_exp(v), exp(v)));
    for (double v = -38.0; v < 38.0; v += 0.000731) {
        const double ref = (double)ref_cdf(v);
        worst_cdf = fmax(worst_cdf, ulps(ak_gelu_phi_cdf(v, ak_gelu_exp_half_sq(v)), ref));
    }
    printf("gelu element code: exp %.0f ulp, Phi %.0f ulp against libm\n", worst_exp, worst_cdf);
    ck_assert_double_le(worst_exp, 2);
    ck_assert_double_le(worst_cdf, 256);
}
END_TEST

/* ---- arguments ------------------------------------------------------------------------------ */
START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32);
    ak_tensor null8 = ak_tensor_of(NULL, 8, AK_F16);
    const ak_tensor none = ak_tensor_none();
    KT_EXPECT_ERROR(b, ak_gelu(b, (ak_gelu_form)2, f12.t, f12.t), AK_EINVAL, NULL,
                    "ak_gelu: form 2 is neither AK_GELU_ERF nor AK_GELU_TANH");
    KT_EXPECT_ERROR(b, ak_gelu(b, AK_GELU_ERF, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_gelu: y has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_gelu(b, AK_GELU_TANH, null8, null8), AK_EINVAL, NULL,
                    "ak_gelu: x is NULL with 8 elements");
    KT_EXPECT_ERROR(b, ak_gelu_backward(b, (ak_gelu_form)-1, f12.t, f12.t, f12.t), AK_EINVAL, NULL,
                    "ak_gelu_backward: form -1 is neither");
    KT_EXPECT_ERROR(b, ak_gelu_backward(b, AK_GELU_ERF, f12.t, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_gelu_backward: dy has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_gelu_backward(b, AK_GELU_ERF, f4.t, f12.t, f12.t), AK_EINVAL, NULL,
                    "ak_gelu_backward: dx has 4 elements, expected 12");
    ck_assert_int_eq(ak_gelu(b, AK_GELU_ERF, none, none), AK_OK);
    ck_assert_int_eq(ak_gelu_backward(b, AK_GELU_TANH, none, none, none), AK_OK);
    /* in place */
    const float v[4] = {1.0f, -3.0f, 0.0f, 2.0f};
    kt_buf_upload(&f4, v);
    ck_assert_int_eq(ak_gelu(b, AK_GELU_ERF, f4.t, f4.t), AK_OK);
    uint32_t got[4];
    kt_buf_get(&f4, got);
    ck_assert_uint_eq(got[0], kt_from_f64(AK_F32, 0.8413447460685429));
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_gelu");
    TCase *tc = tcase_create("gelu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, values_against_reference);
    tcase_add_test(tc, special_values);
    tcase_add_test(tc, backward_against_reference);
    tcase_add_test(tc, backward_special_values);
    tcase_add_test(tc, gradient_matches_finite_differences);
    tcase_add_test(tc, tables_give_the_element_code_bits);
    tcase_add_test(tc, element_accuracy);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
