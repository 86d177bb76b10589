/* test_layers: bias add and gradient, relu, 2x2 max-pooling on the cpu
 * backend, against the emulator's public functions and loops written here,
 * for every pairing of dtypes; every backward pass against central finite
 * differences; bad arguments; guard regions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* ---- the reference: the emulator's public scalar functions ------------------ */
static bool is_nan(ak_dtype dt, uint32_t bits)
{
    switch (dt) {
    case AK_F16: return fpe_f16_isnan((uint16_t)bits);
    case AK_BF16: return fpe_bf16_isnan((uint16_t)bits);
    default: return fpe_f32_isnan(bits);
    }
}

/* To fp32 (exact from fp16/bf16) and from fp32 in env's mode. */
static uint32_t to_f32(ak_dtype from, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    switch (from) {
    case AK_F16: return fpe_f16_to_f32(&env, (uint16_t)bits);
    case AK_BF16: return fpe_bf16_to_f32(&env, (uint16_t)bits);
    default: return bits;
    }
}

static uint32_t from_f32(fpe_env *env, ak_dtype to, uint32_t bits)
{
    switch (to) {
    case AK_F16: return fpe_f32_to_f16(env, bits);
    case AK_BF16: return fpe_f32_to_bf16(env, bits);
    default: return bits;
    }
}

/* An element converted to another dtype, to nearest even (as ak_cast). */
static uint32_t convert(ak_dtype from, ak_dtype to, uint32_t bits)
{
    if (from == to) return bits;
    fpe_env env = fpe_env_default();
    if (from == AK_F16 && to == AK_BF16) return fpe_f16_to_bf16(&env, (uint16_t)bits);
    if (from == AK_BF16 && to == AK_F16) return fpe_bf16_to_f16(&env, (uint16_t)bits);
    return from == AK_F32 ? from_f32(&env, to, bits) : to_f32(from, bits);
}

/* y + b rounded once to y's dtype: fpe_<fmt>_add when the dtypes agree;
 * else the double sum when TwoSum says it is exact; else an fp32 add
 * rounded to odd and then to y's dtype, which rounds as the exact sum
 * would (24 >= p + 2 bits, Boldo & Melquiond), NaNs and infinities
 * included; for an fp32 y, the fp32 add itself. */
static uint32_t ref_bias_add(ak_dtype dy, ak_dtype db, uint32_t y, uint32_t b)
{
    fpe_env env = fpe_env_default();
    if (dy == db) {
        switch (dy) {
        case AK_F16: return fpe_f16_add(&env, (uint16_t)y, (uint16_t)b);
        case AK_BF16: return fpe_bf16_add(&env, (uint16_t)y, (uint16_t)b);
        default: return fpe_f32_add(&env, y, b);
        }
    }
    const double u = kt_value(dy, y), v = kt_value(db, b);
    if (isfinite(u) && isfinite(v)) {
        const double s = u + v, bv = s - u, av = s - bv;
        if ((u - av) + (v - bv) == 0.0) return kt_from_f64(dy, s);
    }
    if (dy == AK_F32) return fpe_f32_add(&env, y, to_f32(db, b));
    env.round = FPE_RO;
    const uint32_t odd = fpe_f32_add(&env, to_f32(dy, y), to_f32(db, b));
    env.round = FPE_RNE;
    return from_f32(&env, dy, odd);
}

/* relu, and its gradient's mask, written directly: x > 0 passes, NaN passes. */
static bool relu_passes(ak_dtype dt, uint32_t x) { return is_nan(dt, x) || kt_value(dt, x) > 0.0; }

/* PyTorch's max_pool2d scan: maxval from -inf, replaced when greater or NaN. */
static int ref_pick(ak_dtype dt, const uint32_t v[4])
{
    double maxval = -INFINITY;
    int pick = 0;
    for (int k = 0; k < 4; k++) {
        const double x = kt_value(dt, v[k]);
        if (x > maxval || isnan(x)) {
            maxval = x;
            pick = k;
        }
    }
    return pick;
}

/* ---- host buffers of bits ------------------------------------------------------ */
static uint32_t *bits_alloc(size_t n) { return calloc(n + 1, sizeof(uint32_t)); }

/* Counts and prints mismatches of got against expected (bits of dt). */
static size_t mismatches(const char *what, ak_dtype dt, const uint32_t *got,
                         const uint32_t *expected, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == expected[i]) continue;
        if (bad++ < 8)
            printf("%s (%s)[%zu]: got 0x%08x expected 0x%08x\n", what, ak_dtype_name(dt), i, got[i],
                   expected[i]);
    }
    return bad;
}

/* ---- bias add ------------------------------------------------------------------ */
START_TEST(bias_add_matches_emulator)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed());
    const size_t rows = 23, cols = 37, n = rows * cols;
    uint32_t *y = bits_alloc(n), *bias = bits_alloc(cols), *got = bits_alloc(n),
             *want = bits_alloc(n);
    for (int iy = 0; iy < 3; iy++) {
        for (int ib = 0; ib < 3; ib++) {
            const ak_dtype dy = kt_dtypes[iy], db = kt_dtypes[ib];
            for (int pass = 0; pass < 2; pass++) {
                /* pass 0: every kind of pattern; pass 1: ordinary values of mixed magnitude */
                if (pass == 0) {
                    kt_fill_bits(&r, dy, y, n);
                    kt_fill_bits(&r, db, bias, cols);
                } else {
                    kt_fill_values(&r, dy, y, n, 4.0);
                    kt_fill_values(&r, db, bias, cols, ldexp(1.0, (int)ts_below(&r, 12) - 6));
                }
                kt_buf ty = kt_buf_alloc(b, n, dy), tb = kt_buf_alloc(b, cols, db);
                kt_buf_put(&ty, y);
                kt_buf_put(&tb, bias);
                ck_assert_int_eq(ak_bias_add(b, ty.t, tb.t, rows, cols), AK_OK);
                kt_buf_get(&ty, got);
                for (size_t i = 0; i < n; i++)
                    want[i] = ref_bias_add(dy, db, y[i], bias[i % cols]);
                ck_assert_msg(mismatches("bias_add y", dy, got, want, n) == 0,
                              "y %s, bias %s, pass %d", ak_dtype_name(dy), ak_dtype_name(db), pass);
                ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tb));
                kt_buf_free(&ty);
                kt_buf_free(&tb);
            }
        }
    }
    free(y);
    free(bias);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* Hand-picked sums: ties, overflow, inf - inf, NaN order. */
START_TEST(bias_add_special_cases)
{
    ak_backend *b = kt_open_cpu();
    /* fp16 y + fp32 bias: y = 1, bias = 2^-11 is a tie (to even: 1), bias =
     * 2^-11 + 2^-24 rounds up; 65504 + 16 = 65520 overflows to inf; inf + -inf
     * is the default NaN; a NaN y wins over a NaN bias and is quieted. */
    const uint32_t y[6] = {0x3C00, 0x3C00, 0x7BFF, 0x7C00, 0x7D01, 0x3C00};
    const float bias_v[6] = {0x1p-11f, 0x1p-11f + 0x1p-24f, 16.0f, -INFINITY, NAN, -0.0f};
    const uint32_t want[6] = {0x3C00, 0x3C01, 0x7C00, 0xFE00, 0x7F01, 0x3C00};
    kt_buf ty = kt_buf_alloc(b, 6, AK_F16), tb = kt_buf_alloc(b, 6, AK_F32);
    kt_buf_put(&ty, y);
    kt_buf_upload(&tb, bias_v);
    ck_assert_int_eq(ak_bias_add(b, ty.t, tb.t, 1, 6), AK_OK);
    uint32_t got[6];
    kt_buf_get(&ty, got);
    ck_assert_uint_eq(mismatches("bias_add", AK_F16, got, want, 6), 0);
    /* -0 + -0 = -0, -0 + +0 = +0 (fp32, nearest even) */
    kt_buf y32 = kt_buf_alloc(b, 2, AK_F32), b32 = kt_buf_alloc(b, 2, AK_F32);
    const float yz[2] = {-0.0f, -0.0f}, bz[2] = {-0.0f, 0.0f};
    kt_buf_upload(&y32, yz);
    kt_buf_upload(&b32, bz);
    ck_assert_int_eq(ak_bias_add(b, y32.t, b32.t, 1, 2), AK_OK);
    kt_buf_get(&y32, got);
    ck_assert_uint_eq(got[0], 0x80000000u);
    ck_assert_uint_eq(got[1], 0);
    ck_assert(kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tb) && kt_buf_guards_ok(&y32));
    kt_buf_free(&ty);
    kt_buf_free(&tb);
    kt_buf_free(&y32);
    kt_buf_free(&b32);
    ak_close(b);
}
END_TEST

/* ---- bias gradient ---------------------------------------------------------------- */
START_TEST(bias_grad_matches_double_sum)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 1);
    /* 1100 columns cross the implementation's 512-column blocks */
    static const size_t shapes[][2] = {{50, 70}, {1, 9}, {3, 1100}, {0, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        uint32_t *dy = bits_alloc(n), *got = bits_alloc(cols), *want = bits_alloc(cols),
                 *junk = bits_alloc(cols);
        for (int id = 0; id < 3; id++) {
            for (int iy = 0; iy < 3; iy++) {
                const ak_dtype dd = kt_dtypes[id], dt = kt_dtypes[iy];
                for (int pass = 0; pass < 2; pass++) {
                    if (pass == 0)
                        kt_fill_bits(&r, dt, dy, n);
                    else
                        kt_fill_values(&r, dt, dy, n, 100.0);
                    kt_buf tdb = kt_buf_alloc(b, cols, dd), tdy = kt_buf_alloc(b, n, dt);
                    kt_buf_put(&tdy, dy);
                    for (size_t c = 0; c < cols; c++)
                        junk[c] = 0x7777;
                    kt_buf_put(&tdb, junk); /* overwritten, never accumulated */
                    ck_assert_int_eq(ak_bias_grad(b, tdb.t, tdy.t, rows, cols), AK_OK);
                    kt_buf_get(&tdb, got);
                    for (size_t c = 0; c < cols; c++) {
                        double sum = 0.0;
                        for (size_t i = 0; i < rows; i++)
                            sum += kt_value(dt, dy[i * cols + c]);
                        want[c] = kt_from_f64(dd, sum); /* a NaN sum: the default NaN */
                    }
                    ck_assert_msg(mismatches("bias_grad", dd, got, want, cols) == 0,
                                  "dbias %s dy %s rows %zu cols %zu", ak_dtype_name(dd),
                                  ak_dtype_name(dt), rows, cols);
                    ck_assert(kt_buf_guards_ok(&tdb) && kt_buf_guards_ok(&tdy));
                    kt_buf_free(&tdb);
                    kt_buf_free(&tdy);
                }
            }
        }
        free(dy);
        free(got);
        free(want);
        free(junk);
    }
    ak_close(b);
}
END_TEST

/* ---- relu --------------------------------------------------------------------------- */
START_TEST(relu_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 2);
    const size_t n = 1001;
    uint32_t *x = bits_alloc(n), *got = bits_alloc(n), *want = bits_alloc(n);
    for (int iy = 0; iy < 3; iy++) {
        for (int ix = 0; ix < 3; ix++) {
            const ak_dtype dy = kt_dtypes[iy], dx = kt_dtypes[ix];
            kt_fill_bits(&r, dx, x, n);
            kt_buf tx = kt_buf_alloc(b, n, dx), ty = kt_buf_alloc(b, n, dy);
            kt_buf_put(&tx, x);
            ck_assert_int_eq(ak_relu(b, ty.t, tx.t), AK_OK);
            kt_buf_get(&ty, got);
            for (size_t i = 0; i < n; i++)
                want[i] = relu_passes(dx, x[i]) ? convert(dx, dy, x[i]) : 0;
            ck_assert_msg(mismatches("relu", dy, got, want, n) == 0, "y %s x %s", ak_dtype_name(dy),
                          ak_dtype_name(dx));
            if (dx == dy) { /* in place */
                ck_assert_int_eq(ak_relu(b, tx.t, tx.t), AK_OK);
                kt_buf_get(&tx, got);
                ck_assert_uint_eq(mismatches("relu in place", dy, got, want, n), 0);
            }
            ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty));
            kt_buf_free(&tx);
            kt_buf_free(&ty);
        }
    }
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(relu_special_values)
{
    ak_backend *b = kt_open_cpu();
    /* -0 -> +0; -inf -> +0; +inf kept; NaNs of both signs kept bit for bit, a
     * signaling one too; the smallest subnormals either side of 0 */
    const uint32_t x[8] = {0x80000000u, 0xFF800000u, 0x7F800000u, 0xFFC01234u,
                           0x7F800001u, 0x00000001u, 0x80000001u, 0x3F800000u};
    const uint32_t want[8] = {0, 0, 0x7F800000u, 0xFFC01234u, 0x7F800001u, 1, 0, 0x3F800000u};
    kt_buf t = kt_buf_alloc(b, 8, AK_F32);
    kt_buf_put(&t, x);
    ck_assert_int_eq(ak_relu(b, t.t, t.t), AK_OK);
    uint32_t got[8];
    kt_buf_get(&t, got);
    ck_assert_uint_eq(mismatches("relu", AK_F32, got, want, 8), 0);
    /* into fp16 the kept values are rounded: 1 + 2^-12 + 2^-15 (below the
     * tie) to 1, 1e5 overflows, a signaling NaN is quieted */
    const uint32_t x2[3] = {0x3F800900u, 0x47C35000u, 0x7F800001u};
    const uint32_t want2[3] = {0x3C00, 0x7C00, 0x7E00};
    kt_buf t32 = kt_buf_alloc(b, 3, AK_F32), t16 = kt_buf_alloc(b, 3, AK_F16);
    kt_buf_put(&t32, x2);
    ck_assert_int_eq(ak_relu(b, t16.t, t32.t), AK_OK);
    kt_buf_get(&t16, got);
    ck_assert_uint_eq(mismatches("relu to fp16", AK_F16, got, want2, 3), 0);
    ck_assert(kt_buf_guards_ok(&t) && kt_buf_guards_ok(&t16));
    kt_buf_free(&t);
    kt_buf_free(&t32);
    kt_buf_free(&t16);
    ak_close(b);
}
END_TEST

START_TEST(relu_backward_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 3);
    const size_t n = 517;
    uint32_t *x = bits_alloc(n), *g = bits_alloc(n), *got = bits_alloc(n), *want = bits_alloc(n);
    for (int c = 0; c < 27; c++) {
        const ak_dtype ddx = kt_dtypes[c / 9], ddy = kt_dtypes[c / 3 % 3], dx = kt_dtypes[c % 3];
        kt_fill_bits(&r, dx, x, n);
        kt_fill_bits(&r, ddy, g, n);
        kt_buf tdx = kt_buf_alloc(b, n, ddx), tdy = kt_buf_alloc(b, n, ddy),
               tx = kt_buf_alloc(b, n, dx);
        kt_buf_put(&tx, x);
        kt_buf_put(&tdy, g);
        ck_assert_int_eq(ak_relu_backward(b, tdx.t, tdy.t, tx.t), AK_OK);
        kt_buf_get(&tdx, got);
        for (size_t i = 0; i < n; i++)
            want[i] = relu_passes(dx, x[i]) ? convert(ddy, ddx, g[i]) : 0;
        ck_assert_msg(mismatches("relu_backward", ddx, got, want, n) == 0, "dx %s dy %s x %s",
                      ak_dtype_name(ddx), ak_dtype_name(ddy), ak_dtype_name(dx));
        if (ddx == ddy) { /* in place: dx is dy */
            ck_assert_int_eq(ak_relu_backward(b, tdy.t, tdy.t, tx.t), AK_OK);
            kt_buf_get(&tdy, got);
            ck_assert_uint_eq(mismatches("relu_backward in place", ddx, got, want, n), 0);
        }
        ck_assert(kt_buf_guards_ok(&tdx) && kt_buf_guards_ok(&tdy) && kt_buf_guards_ok(&tx));
        kt_buf_free(&tdx);
        kt_buf_free(&tdy);
        kt_buf_free(&tx);
    }
    free(x);
    free(g);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

START_TEST(relu_backward_at_zero_and_nan)
{
    ak_backend *b = kt_open_cpu();
    /* x = +0, -0: gradient 0; x NaN: dy passes (PyTorch); x < 0 blocks a NaN dy */
    const float x[5] = {0.0f, -0.0f, NAN, -NAN, -1.0f};
    const float dy[5] = {3.0f, 3.0f, 5.0f, -7.0f, NAN};
    const uint32_t want[5] = {0, 0, 0x40A00000u, 0xC0E00000u, 0};
    kt_buf tx = kt_buf_alloc(b, 5, AK_F32), tdy = kt_buf_alloc(b, 5, AK_F32),
           tdx = kt_buf_alloc(b, 5, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tdy, dy);
    ck_assert_int_eq(ak_relu_backward(b, tdx.t, tdy.t, tx.t), AK_OK);
    uint32_t got[5];
    kt_buf_get(&tdx, got);
    ck_assert_uint_eq(mismatches("relu_backward", AK_F32, got, want, 5), 0);
    kt_buf_free(&tx);
    kt_buf_free(&tdy);
    kt_buf_free(&tdx);
    ak_close(b);
}
END_TEST

/* ---- max-pooling ------------------------------------------------------------------------- */
static void check_maxpool(ak_backend *b, ts_rng *r, size_t planes, size_t h, size_t w, ak_dtype dx,
                          ak_dtype dy, ak_dtype ddx, ak_dtype ddy, const uint32_t *given_x)
{
    const size_t n_in = planes * h * w, n_out = n_in / 4;
    uint32_t *x = bits_alloc(n_in), *g = bits_alloc(n_out), *got = bits_alloc(n_in),
             *want = bits_alloc(n_in);
    if (given_x)
        memcpy(x, given_x, n_in * sizeof *x);
    else
        kt_fill_bits(r, dx, x, n_in);
    kt_fill_bits(r, ddy, g, n_out);
    kt_buf tx = kt_buf_alloc(b, n_in, dx), ty = kt_buf_alloc(b, n_out, dy),
           tdx = kt_buf_alloc(b, n_in, ddx), tdy = kt_buf_alloc(b, n_out, ddy);
    kt_buf_put(&tx, x);
    kt_buf_put(&tdy, g);
    ck_assert_int_eq(ak_maxpool2_forward(b, planes, h, w, ty.t, tx.t), AK_OK);
    uint32_t *dxw = bits_alloc(n_in);
    size_t o = 0;
    for (size_t p = 0; p < planes; p++) {
        for (size_t oh = 0; oh < h / 2; oh++) {
            for (size_t ow = 0; ow < w / 2; ow++, o++) {
                const size_t at[4] = {
                    (p * h + 2 * oh) * w + 2 * ow, (p * h + 2 * oh) * w + 2 * ow + 1,
                    (p * h + 2 * oh + 1) * w + 2 * ow, (p * h + 2 * oh + 1) * w + 2 * ow + 1};
                const uint32_t v[4] = {x[at[0]], x[at[1]], x[at[2]], x[at[3]]};
                const int k = ref_pick(dx, v);
                want[o] = convert(dx, dy, v[k]);
                for (int j = 0; j < 4; j++)
                    dxw[at[j]] = j == k ? convert(ddy, ddx, g[o]) : 0;
            }
        }
    }
    kt_buf_get(&ty, got);
    ck_assert_msg(mismatches("maxpool2 y", dy, got, want, n_out) == 0, "y %s x %s",
                  ak_dtype_name(dy), ak_dtype_name(dx));
    ck_assert_int_eq(ak_maxpool2_backward(b, planes, h, w, tdx.t, tdy.t, tx.t), AK_OK);
    kt_buf_get(&tdx, got);
    ck_assert_msg(mismatches("maxpool2 dx", ddx, got, dxw, n_in) == 0, "dx %s dy %s x %s",
                  ak_dtype_name(ddx), ak_dtype_name(ddy), ak_dtype_name(dx));
    ck_assert(kt_buf_guards_ok(&tx) && kt_buf_guards_ok(&ty) && kt_buf_guards_ok(&tdx) &&
              kt_buf_guards_ok(&tdy));
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    kt_buf_free(&tdx);
    kt_buf_free(&tdy);
    free(x);
    free(g);
    free(got);
    free(want);
    free(dxw);
}

START_TEST(maxpool_selects_exactly)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 4);
    for (int c = 0; c < 9; c++) /* forward y/x pairs, backward with dx = y's dtype, dy = x's */
        check_maxpool(b, &r, 3, 6, 8, kt_dtypes[c % 3], kt_dtypes[c / 3], kt_dtypes[c / 3],
                      kt_dtypes[c % 3], NULL);
    for (int c = 0; c < 27; c++) /* backward: every dx/dy/x triple */
        check_maxpool(b, &r, 2, 4, 2, kt_dtypes[c % 3], kt_dtypes[c % 3], kt_dtypes[c / 9],
                      kt_dtypes[c / 3 % 3], NULL);
    ak_close(b);
}
END_TEST

START_TEST(maxpool_ties_zeros_and_nans)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 5);
    /* fp32 windows, one 2x2 plane each (row-major: v0 v1 / v2 v3) */
    const uint32_t one = 0x3F800000u, two = 0x40000000u, nan1 = 0x7FC00001u, nan2 = 0xFFC00002u;
    const uint32_t windows[][4] = {
        {one, one, one, one},                                 /* tie: the first */
        {two, one, two, two},                                 /* tie at the max: v0 */
        {0x80000000u, 0, 0, 0x80000000u},                     /* -0 before +0: -0 */
        {0, 0x80000000u, 0xBF800000u, 0xBF800000u},           /* +0 before -0: +0 */
        {nan1, two, nan2, one},                               /* NaNs: the last one */
        {one, nan1, two, two},                                /* a NaN after the max */
        {0xFF800000u, 0xFF800000u, 0xFF800000u, 0xFF800000u}, /* all -inf: v0 */
        {0x7F800000u, 0x7F800001u, 0xFF800000u, 0x7F800000u}, /* sNaN beats +inf */
    };
    const int want_pick[] = {0, 0, 0, 0, 2, 1, 0, 1};
    const size_t count = sizeof windows / sizeof windows[0];
    uint32_t x[4 * 8];
    for (size_t k = 0; k < count; k++) {
        memcpy(x + 4 * k, windows[k], sizeof windows[k]);
        ck_assert_int_eq(ref_pick(AK_F32, windows[k]), want_pick[k]); /* the test's own scan */
    }
    check_maxpool(b, &r, count, 2, 2, AK_F32, AK_F32, AK_F32, AK_F32, x);
    /* and the implementation agrees with the hand-worked picks */
    kt_buf tx = kt_buf_alloc(b, 4 * count, AK_F32), ty = kt_buf_alloc(b, count, AK_F32);
    kt_buf_put(&tx, x);
    ck_assert_int_eq(ak_maxpool2_forward(b, count, 2, 2, ty.t, tx.t), AK_OK);
    uint32_t y[8];
    kt_buf_get(&ty, y);
    for (size_t k = 0; k < count; k++)
        ck_assert_uint_eq(y[k], windows[k][want_pick[k]]);
    kt_buf_free(&tx);
    kt_buf_free(&ty);
    ak_close(b);
}
END_TEST

/* ---- gradients against central finite differences (fp32, double sums) ---------------- */
/* L = sum r .* y for the fp32 output y of forward(x); returns L in double. */
typedef void (*forward_fn)(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx);

static double objective(ak_backend *b, forward_fn f, const void *ctx, kt_buf *y, kt_buf *x,
                        const float *xv, const float *rv)
{
    kt_buf_upload(x, xv);
    f(b, y, x, ctx);
    float *yv = malloc(y->t.n * sizeof *yv + 4);
    kt_buf_download(y, yv);
    double l = 0.0;
    for (size_t i = 0; i < y->t.n; i++)
        l += (double)rv[i] * yv[i];
    free(yv);
    return l;
}

/* Compares the analytic gradient grad (n_x values) with central differences
 * of step h; points are chosen on a grid where x +- h and the outputs are
 * exact in fp32 and away from kinks and ties, so the differences are exact. */
static void check_fd(ak_backend *b, forward_fn f, const void *ctx, size_t n_x, size_t n_y,
                     const float *x0, const float *rv, const float *grad, double h)
{
    kt_buf x = kt_buf_alloc(b, n_x, AK_F32), y = kt_buf_alloc(b, n_y, AK_F32);
    float *xv = malloc(n_x * sizeof *xv);
    for (size_t i = 0; i < n_x; i++) {
        memcpy(xv, x0, n_x * sizeof *xv);
        xv[i] = (float)(x0[i] + h);
        const double lp = objective(b, f, ctx, &y, &x, xv, rv);
        xv[i] = (float)(x0[i] - h);
        const double lm = objective(b, f, ctx, &y, &x, xv, rv);
        const double fd = (lp - lm) / (2.0 * h);
        ck_assert_msg(fabs(fd - grad[i]) <= 1e-12 * (1.0 + fabs(fd)),
                      "d/dx[%zu]: analytic %.17g, fd %.17g", i, (double)grad[i], fd);
    }
    free(xv);
    kt_buf_free(&x);
    kt_buf_free(&y);
}

/* A multiple of 2^-12 in [-1, 1] with |x| >= 2^-6 (away from relu's kink). */
static float grid_value(ts_rng *r)
{
    const int k = 64 + (int)ts_below(r, 4096 - 64);
    return (float)ldexp(ts_below(r, 2) ? -k : k, -12);
}

static void relu_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    (void)ctx;
    ck_assert_int_eq(ak_relu(b, y->t, x->t), AK_OK);
}

typedef struct pool_shape {
    size_t planes, h, w;
} pool_shape;

static void pool_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const pool_shape *s = ctx;
    ck_assert_int_eq(ak_maxpool2_forward(b, s->planes, s->h, s->w, y->t, x->t), AK_OK);
}

typedef struct bias_ctx {
    size_t rows, cols;
    const float *y0;
} bias_ctx;

/* Here "x" is the bias and y = y0 + bias. */
static void bias_forward(ak_backend *b, kt_buf *y, kt_buf *x, const void *ctx)
{
    const bias_ctx *c = ctx;
    kt_buf_upload(y, c->y0);
    ck_assert_int_eq(ak_bias_add(b, y->t, x->t, c->rows, c->cols), AK_OK);
}

START_TEST(gradients_match_finite_differences)
{
    ak_backend *b = kt_open_cpu();
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 6);
    const double h = 0x1p-10;
    enum { N = 48, ROWS = 5, COLS = 7 };
    float x[N], rv[N], grad[N], y0[ROWS * COLS];
    for (int i = 0; i < N; i++) {
        x[i] = grid_value(&r);
        rv[i] = (float)ldexp((double)ts_below(&r, 2049) - 1024.0, -10);
    }
    /* relu: dL/dx = relu_backward(dy = r) */
    kt_buf tx = kt_buf_alloc(b, N, AK_F32), tr = kt_buf_alloc(b, N, AK_F32),
           tg = kt_buf_alloc(b, N, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tr, rv);
    ck_assert_int_eq(ak_relu_backward(b, tg.t, tr.t, tx.t), AK_OK);
    kt_buf_download(&tg, grad);
    check_fd(b, relu_forward, NULL, N, N, x, rv, grad, h);

    /* maxpool (2 planes of 4 x 6): distinct values 2^-7 apart, so no window
     * has a tie within 2h */
    const pool_shape ps = {2, 4, 6};
    for (int i = 0; i < N; i++)
        x[i] = (float)ldexp(i - 24, -7);
    for (int i = N - 1; i > 0; i--) { /* shuffle */
        const int j = (int)ts_below(&r, (uint32_t)i + 1);
        const float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    kt_buf tdy = kt_buf_alloc(b, N / 4, AK_F32);
    kt_buf_upload(&tx, x);
    kt_buf_upload(&tdy, rv);
    ck_assert_int_eq(ak_maxpool2_backward(b, ps.planes, ps.h, ps.w, tg.t, tdy.t, tx.t), AK_OK);
    kt_buf_download(&tg, grad);
    check_fd(b, pool_forward, &ps, N, N / 4, x, rv, grad, h);

    /* bias: y = y0 + bias, dL/dbias = bias_grad(dy = r) */
    for (int i = 0; i < ROWS * COLS; i++)
        y0[i] = grid_value(&r);
    for (int c = 0; c < COLS; c++)
        x[c] = grid_value(&r);
    const bias_ctx bc = {ROWS, COLS, y0};
    kt_buf tr2 = kt_buf_alloc(b, ROWS * COLS, AK_F32), tdb = kt_buf_alloc(b, COLS, AK_F32);
    kt_buf_upload(&tr2, rv);
    ck_assert_int_eq(ak_bias_grad(b, tdb.t, tr2.t, ROWS, COLS), AK_OK);
    kt_buf_download(&tdb, grad);
    check_fd(b, bias_forward, &bc, COLS, ROWS * COLS, x, rv, grad, h);

    kt_buf_free(&tx);
    kt_buf_free(&tr);
    kt_buf_free(&tg);
    kt_buf_free(&tdy);
    kt_buf_free(&tr2);
    kt_buf_free(&tdb);
    ak_close(b);
}
END_TEST

/* ---- arguments ----------------------------------------------------------------------------- */
START_TEST(bad_arguments_named)
{
    ak_backend *b = kt_open_cpu();
    kt_buf f12 = kt_buf_alloc(b, 12, AK_F32), f4 = kt_buf_alloc(b, 4, AK_F32),
           h3 = kt_buf_alloc(b, 3, AK_F16);
    const ak_tensor none = ak_tensor_none();
    ak_tensor odd = ak_tensor_of((char *)f12.t.data + 2, 4, AK_F32);
    ak_tensor bad_dtype = ak_tensor_of(f12.t.data, 4, (ak_dtype)9);
    ak_tensor null8 = ak_tensor_of(NULL, 8, AK_F16);

    ck_assert_int_eq(ak_bias_add(NULL, f12.t, f4.t, 3, 4), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, f4.t, 4, 4), AK_EINVAL, NULL,
                    "ak_bias_add: y has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, h3.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_add: bias has 3 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, f4.t, SIZE_MAX / 2, 4), AK_EINVAL, NULL, "overflows");
    KT_EXPECT_ERROR(b, ak_bias_add(b, f12.t, bad_dtype, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_add: bias has an invalid dtype");
    KT_EXPECT_ERROR(b, ak_bias_grad(b, f12.t, f12.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_grad: dbias has 12 elements, expected 4");
    KT_EXPECT_ERROR(b, ak_bias_grad(b, f4.t, h3.t, 3, 4), AK_EINVAL, NULL,
                    "ak_bias_grad: dy has 3 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_relu(b, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu: y has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_relu(b, f4.t, odd), AK_EINVAL, NULL, "ak_relu: x (");
    ck_assert_msg(strstr(ak_error(b), "not aligned") != NULL, "%s", ak_error(b));
    KT_EXPECT_ERROR(b, ak_relu(b, null8, null8), AK_EINVAL, NULL,
                    "ak_relu: x is NULL with 8 elements");
    KT_EXPECT_ERROR(b, ak_relu_backward(b, f4.t, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu_backward: dy has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_relu_backward(b, h3.t, f12.t, f12.t), AK_EINVAL, NULL,
                    "ak_relu_backward: dx has 3 elements");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 3, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: h (3) and w (4) must be even");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 2, 6, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: y has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, 1, 4, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_forward: x has 12 elements, expected 16");
    KT_EXPECT_ERROR(b, ak_maxpool2_forward(b, SIZE_MAX / 4, 4, 4, f4.t, f12.t), AK_EINVAL, NULL,
                    "overflows");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 6, f12.t, f4.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_backward: dy has 4 elements, expected 3");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 6, f4.t, h3.t, f12.t), AK_EINVAL, NULL,
                    "ak_maxpool2_backward: dx has 4 elements, expected 12");
    KT_EXPECT_ERROR(b, ak_maxpool2_backward(b, 1, 2, 5, f12.t, h3.t, f12.t), AK_EINVAL, NULL,
                    "must be even");

    /* empty work succeeds and clears the last error */
    ck_assert_int_eq(ak_bias_add(b, none, f4.t, 0, 4), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ck_assert_int_eq(ak_relu(b, none, none), AK_OK);
    ck_assert_int_eq(ak_relu_backward(b, none, none, none), AK_OK);
    ck_assert_int_eq(ak_maxpool2_forward(b, 0, 4, 4, none, none), AK_OK);
    ck_assert_int_eq(ak_maxpool2_backward(b, 3, 0, 4, none, none, none), AK_OK);
    ck_assert_int_eq(ak_bias_grad(b, none, none, 7, 0), AK_OK);
    /* rows = 0: the sums of nothing are written as +0 */
    float junk[4] = {1, 2, 3, 4}, zeros[4];
    kt_buf_upload(&f4, junk);
    ck_assert_int_eq(ak_bias_grad(b, f4.t, none, 0, 4), AK_OK);
    kt_buf_download(&f4, zeros);
    for (int c = 0; c < 4; c++)
        ck_assert(zeros[c] == 0.0f && !signbit(zeros[c]));
    ck_assert(kt_buf_guards_ok(&f12) && kt_buf_guards_ok(&f4) && kt_buf_guards_ok(&h3));
    kt_buf_free(&f12);
    kt_buf_free(&f4);
    kt_buf_free(&h3);
    ak_close(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_layers");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bias_add_matches_emulator);
    tcase_add_test(tc, bias_add_special_cases);
    tcase_add_test(tc, bias_grad_matches_double_sum);
    tcase_add_test(tc, relu_selects_exactly);
    tcase_add_test(tc, relu_special_values);
    tcase_add_test(tc, relu_backward_selects_exactly);
    tcase_add_test(tc, relu_backward_at_zero_and_nan);
    tcase_add_test(tc, maxpool_selects_exactly);
    tcase_add_test(tc, maxpool_ties_zeros_and_nans);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
