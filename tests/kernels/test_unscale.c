/* test_unscale: ak_scale and ak_unscale_check on the cpu backend.  The
 * reference products are the emulator's fpe_f32_mul for fp32 and, for
 * fp16/bf16, the exact product in double (fp16/bf16 times fp32 is exact in
 * binary64) rounded by fpe_f64_to_f16/bf16, with the x86 NaN rules written
 * out here. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* x * factor as kernels.h defines it, for an element x of format f. */
static uint32_t ref_scale(fpe_format_id f, uint32_t x, float factor)
{
    fpe_env env = fpe_env_default();
    if (f == FPE_FMT_F32) return fpe_f32_mul(&env, x, kt_f32_bits(factor));
    const bool f16 = f == FPE_FMT_F16;
    /* a NaN x stays itself, quieted */
    if (f16 ? fpe_f16_isnan((uint16_t)x) : fpe_bf16_isnan((uint16_t)x))
        return x | (f16 ? 0x0200u : 0x0040u);
    /* a NaN factor gives its payload in f */
    if (isnan(factor))
        return f16 ? fpe_f32_to_f16(&env, kt_f32_bits(factor))
                   : fpe_f32_to_bf16(&env, kt_f32_bits(factor));
    const double v = f16 ? fpe_f16_to_f64(&env, (uint16_t)x) : fpe_bf16_to_f64(&env, (uint16_t)x);
    const double p = v * (double)factor; /* exact: 11 (or 8) + 24 bits */
    /* inf * 0: x86's default NaN */
    if (isnan(p)) return kt_default_nan((ak_dtype)f);
    return f16 ? fpe_f64_to_f16(&env, p) : fpe_f64_to_bf16(&env, p);
}

static bool is_nonfinite(fpe_format_id f, uint32_t x)
{
    switch (f) {
    case FPE_FMT_F16: return (x & 0x7C00u) == 0x7C00u;
    case FPE_FMT_BF16: return (x & 0x7F80u) == 0x7F80u;
    default: return (x & 0x7F800000u) == 0x7F800000u;
    }
}

/* Factors that reach every case: powers of two both ways, inexact ones,
 * underflow to zero and subnormals, overflow, zeros, infinities, NaNs. */
static const uint32_t factors[] = {
    0x3F800000u, /* 1 */
    0x37800000u, /* 2^-16 */
    0x47800000u, /* 65536 */
    0x40400000u, /* 3 */
    0x3DCCCCCDu, /* 0.1 */
    0xBFC00000u, /* -1.5 */
    0x3EAAAAABu, /* 1/3 */
    0x0DA24260u, /* 1e-30 */
    0x7149F2CAu, /* 1e30 */
    0x00000001u, /* the least fp32 subnormal */
    0x00456789u, /* a subnormal */
    0x33800000u, /* 2^-24 */
    0x00800000u, /* 2^-126, 2^127, 2^-100, 2^100, -128: powers of two, which the cpu */
    0x7F000000u, /* scales 16-bit elements by in vector loops: products that underflow */
    0x0D800000u, /* below binary32's subnormals or overflow it */
    0x71800000u, 0xC3000000u, 0x00000000u, /* +0 */
    0x80000000u,                           /* -0 */
    0x7F800000u,                           /* +inf */
    0xFF800000u,                           /* -inf */
    0x7FC00123u,                           /* a quiet NaN with a payload */
    0xFF812345u,                           /* a negative signaling NaN */
};
#define N_FACTORS (sizeof factors / sizeof factors[0])

/* Elements to scale: every 16-bit pattern, or fp32 specials and kt_fill's mix. */
static uint32_t *inputs(fpe_format_id f, size_t *n_out)
{
    size_t n = 65536;
    if (f == FPE_FMT_F32) n = (ts_random_count() < 40000 ? 40000 : ts_random_count()) / 4 + 3;
    uint32_t *x = malloc(n * 4);
    ck_assert_ptr_nonnull(x);
    if (f != FPE_FMT_F32) {
        for (uint32_t i = 0; i < n; i++)
            x[i] = i;
    } else {
        ts_rng rng;
        ts_rng_init(&rng, ts_seed());
        kt_fill_f32_bits(&rng, x, n);
        uint32_t specials[512];
        const size_t ns = ts_special_values(FPE_FMT_F32, specials, 512);
        memcpy(x, specials, ns * 4);
    }
    *n_out = n;
    return x;
}

/* _i = format: ak_scale of every input by every factor. */
START_TEST(scale_every_factor)
{
    static const fpe_format_id fmts[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};
    const fpe_format_id f = fmts[_i];
    ak_backend *b = kt_open_cpu();
    size_t n;
    uint32_t *x = inputs(f, &n), *got = malloc(n * 4), *want = malloc(n * 4);
    ck_assert(got && want);
    kt_buf buf = kt_buf_alloc(b, n, (ak_dtype)f);
    float *factor = kt_dev_alloc(b, sizeof(float));
    for (size_t k = 0; k < N_FACTORS; k++) {
        const float fv = kt_f32_of(factors[k]);
        kt_dev_put(b, factor, &fv, sizeof fv);
        kt_buf_put(&buf, x);
        ck_assert_msg(ak_scale(b, buf.t, factor) == AK_OK, "%s", ak_error(b));
        kt_buf_get(&buf, got);
        for (size_t i = 0; i < n; i++)
            want[i] = ref_scale(f, x[i], fv);
        char what[64];
        snprintf(what, sizeof what, "%s * 0x%08x", ts_format_name(f), factors[k]);
        ck_assert_uint_eq(kt_count_mismatches(what, got, want, n, 4), 0);
    }
    ck_assert(kt_buf_guards_ok(&buf));
    kt_buf_free(&buf);
    kt_dev_free(b, factor);
    free(x);
    free(got);
    free(want);
    ak_close(b);
}
END_TEST

/* Hand-checked products, independent of the emulator. */
START_TEST(scale_hand_checked)
{
    ak_backend *b = kt_open_cpu();
    float *factor = kt_dev_alloc(b, sizeof(float));
    const float fv = 65536.0f;
    kt_dev_put(b, factor, &fv, sizeof fv);
    /* fp16: 1 * 2^16 overflows (max 65504); 2^-24 * 2^16 = 2^-8 exactly */
    kt_buf h = kt_buf_alloc(b, 3, AK_F16);
    const uint16_t hv[3] = {0x3C00, 0x0001, 0xFC00};
    kt_buf_upload(&h, hv);
    ck_assert_int_eq(ak_scale(b, h.t, factor), AK_OK);
    uint16_t hg[3];
    kt_buf_download(&h, hg);
    ck_assert_uint_eq(hg[0], 0x7C00);
    ck_assert_uint_eq(hg[1], 0x1C00);
    ck_assert_uint_eq(hg[2], 0xFC00);
    /* bf16 1.0078125 (0x3F81) * 3 = 3.0234375: halfway between 3.015625
     * (0x4041) and 3.03125 (0x4042); ties to even */
    const float three = 3.0f;
    kt_dev_put(b, factor, &three, sizeof three);
    kt_buf bf = kt_buf_alloc(b, 1, AK_BF16);
    const uint16_t bv = 0x3F81;
    kt_buf_upload(&bf, &bv);
    ck_assert_int_eq(ak_scale(b, bf.t, factor), AK_OK);
    uint16_t bg;
    kt_buf_download(&bf, &bg);
    ck_assert_uint_eq(bg, 0x4042);
    ck_assert(kt_buf_guards_ok(&h) && kt_buf_guards_ok(&bf));
    kt_buf_free(&h);
    kt_buf_free(&bf);
    kt_dev_free(b, factor);
    ak_close(b);
}
END_TEST

/* A list of tensors of mixed dtypes on the cpu backend, with the host copy
 * of their elements. */
typedef struct tlist {
    size_t count;
    kt_buf *bufs;
    ak_tensor *t;
    uint32_t **x; /* the elements before the call */
} tlist;

static tlist tlist_make(ak_backend *b, size_t count, const size_t *sizes, const fpe_format_id *fmts,
                        ts_rng *rng)
{
    tlist l;
    l.count = count;
    l.bufs = calloc(count, sizeof *l.bufs);
    l.t = calloc(count, sizeof *l.t);
    l.x = calloc(count, sizeof *l.x);
    ck_assert(l.bufs && l.t && l.x);
    for (size_t i = 0; i < count; i++) {
        const fpe_format_id f = fmts[i];
        l.x[i] = malloc(sizes[i] * 4 + 4);
        ck_assert_ptr_nonnull(l.x[i]);
        /* finite values of every size (a non-finite one is placed by the test) */
        for (size_t j = 0; j < sizes[i]; j++) {
            uint32_t v;
            do {
                v = f == FPE_FMT_F32 ? (uint32_t)ts_next(rng) : (uint32_t)(ts_next(rng) & 0xFFFF);
            } while (is_nonfinite(f, v));
            l.x[i][j] = v;
        }
        if (sizes[i] == 0) {
            l.t[i] = ak_tensor_of(NULL, 0, (ak_dtype)f);
            continue;
        }
        l.bufs[i] = kt_buf_alloc(b, sizes[i], (ak_dtype)f);
        l.t[i] = l.bufs[i].t;
    }
    return l;
}

static void tlist_upload(tlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->t[i].n > 0) kt_buf_put(&l->bufs[i], l->x[i]);
}

/* The elements after the call must be ref_scale(x, factor) (or x itself
 * when untouched); returns the mismatches.  The guards must hold. */
static size_t tlist_check(tlist *l, float factor, bool untouched)
{
    size_t bad = 0;
    for (size_t i = 0; i < l->count; i++) {
        const size_t n = l->t[i].n;
        if (n == 0) continue;
        const fpe_format_id f = (fpe_format_id)l->t[i].dtype;
        uint32_t *got = malloc(n * 4), *want = malloc(n * 4);
        ck_assert(got && want);
        kt_buf_get(&l->bufs[i], got);
        for (size_t j = 0; j < n; j++)
            want[j] = untouched ? l->x[i][j] : ref_scale(f, l->x[i][j], factor);
        char what[48];
        snprintf(what, sizeof what, "grads[%zu] (%s)", i, ts_format_name(f));
        bad += kt_count_mismatches(what, got, want, n, 4);
        ck_assert(kt_buf_guards_ok(&l->bufs[i]));
        free(got);
        free(want);
    }
    return bad;
}

static void tlist_free(tlist *l)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->t[i].n > 0) kt_buf_free(&l->bufs[i]);
        free(l->x[i]);
    }
    free(l->bufs);
    free(l->t);
    free(l->x);
}

/* The cpu backend with ak_unscale_check's two scalars in its memory. */
typedef struct rig {
    ak_backend *b;
    float *inv, *found;
} rig;

static void set(rig *g, float *scalar, float v) { kt_dev_put(g->b, scalar, &v, sizeof v); }

static rig rig_open(float inv_scale)
{
    rig g;
    g.b = kt_open_cpu();
    g.inv = kt_dev_alloc(g.b, sizeof(float));
    g.found = kt_dev_alloc(g.b, sizeof(float));
    set(&g, g.inv, inv_scale);
    return g;
}

static void rig_close(rig *g)
{
    kt_dev_free(g->b, g->inv);
    kt_dev_free(g->b, g->found);
    ak_close(g->b);
}

static float get_flag(rig *g)
{
    float v;
    kt_dev_get(g->b, &v, g->found, sizeof v);
    return v;
}

/* Uploads l's elements, sets found_inf to found0 and runs ak_unscale_check. */
static void unscale(rig *g, tlist *l, float found0)
{
    tlist_upload(l);
    set(g, g->found, found0);
    ck_assert_msg(ak_unscale_check(g->b, l->t, l->count, g->inv, g->found) == AK_OK, "%s",
                  ak_error(g->b));
}

/* An infinity or NaN in the first, a middle or the last tensor, or none:
 * found_inf becomes 1 exactly when there is one, and every element is
 * scaled either way. */
START_TEST(found_inf_anywhere)
{
    static const size_t sizes[5] = {1000, 777, 0, 1, 4097};
    static const fpe_format_id fmts[5] = {FPE_FMT_F32, FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_BF16,
                                          FPE_FMT_F16};
    /* where the non-finite element goes: tensor and index; -1: nowhere */
    static const int where[][2] = {{-1, 0}, {0, 0}, {0, 999}, {1, 300}, {3, 0}, {4, 4096}, {4, 17}};
    static const uint32_t bad32[2] = {0xFF800000u, 0x7FA00001u},
                          bad16[2][2] = {{0x7C00, 0xFE01}, {0xFF80, 0x7F81}};
    const float inv_scale = 1.0f / 1024.0f / 3.0f;
    rig g = rig_open(inv_scale);
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 1);
    for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
        for (int kind = 0; kind < 2; kind++) { /* an infinity, a NaN */
            tlist l = tlist_make(g.b, 5, sizes, fmts, &rng);
            const int t = where[w][0];
            if (t >= 0) {
                const fpe_format_id f = fmts[t];
                l.x[t][where[w][1]] =
                    f == FPE_FMT_F32 ? bad32[kind] : bad16[f == FPE_FMT_BF16][kind];
            }
            unscale(&g, &l, 0.0f);
            ck_assert_msg(get_flag(&g) == (t >= 0 ? 1.0f : 0.0f), "case %zu kind %d", w, kind);
            ck_assert_uint_eq(tlist_check(&l, inv_scale, false), 0);
            /* never cleared: a set flag stays set on a finite list */
            if (t < 0) {
                unscale(&g, &l, 1.0f);
                ck_assert(get_flag(&g) == 1.0f);
            }
            tlist_free(&l);
        }
    }
    rig_close(&g);
}
END_TEST

/* A list of one tensor of each format holding inputs()'s elements. */
static tlist tlist_of_inputs(ak_backend *b, uint64_t seed)
{
    static const fpe_format_id fmts[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};
    size_t sizes[3];
    uint32_t *x[3];
    for (int i = 0; i < 3; i++)
        x[i] = inputs(fmts[i], &sizes[i]);
    ts_rng rng;
    ts_rng_init(&rng, seed);
    tlist l = tlist_make(b, 3, sizes, fmts, &rng);
    for (int i = 0; i < 3; i++) {
        memcpy(l.x[i], x[i], sizes[i] * 4);
        free(x[i]);
    }
    return l;
}

/* *inv_scale == 1 leaves every element alone, signaling NaNs and payloads
 * included (ak_scale by 1 does quiet them, as fpe_f32_mul does). */
START_TEST(inv_scale_one_untouched)
{
    rig g = rig_open(1.0f);
    tlist l = tlist_of_inputs(g.b, 3);
    unscale(&g, &l, 0.0f);
    ck_assert(get_flag(&g) == 1.0f); /* the inputs hold infinities and NaNs */
    ck_assert_uint_eq(tlist_check(&l, 1.0f, true), 0);
    /* ak_scale by 1 is fpe_f32_mul by 1: signaling NaNs come out quiet */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ak_scale(g.b, l.t[i], g.inv), AK_OK);
    ck_assert_uint_eq(tlist_check(&l, 1.0f, false), 0);
    tlist_free(&l);
    rig_close(&g);
}
END_TEST

/* Every 16-bit pattern and the fp32 mix through ak_unscale_check, every factor. */
START_TEST(unscale_every_factor)
{
    rig g = rig_open(1.0f);
    tlist l = tlist_of_inputs(g.b, 7);
    for (size_t k = 0; k < N_FACTORS; k++) {
        const float fv = kt_f32_of(factors[k]);
        set(&g, g.inv, fv);
        unscale(&g, &l, 0.0f);
        ck_assert(get_flag(&g) == 1.0f);
        ck_assert_msg(tlist_check(&l, fv, fv == 1.0f) == 0, "factor 0x%08x", factors[k]);
    }
    tlist_free(&l);
    rig_close(&g);
}
END_TEST

/* Hundreds of tensors of every dtype and many sizes, empty ones among them. */
START_TEST(many_tensors)
{
    enum { COUNT = 300 };
    size_t sizes[COUNT];
    fpe_format_id fmts[COUNT];
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + 2);
    for (size_t i = 0; i < COUNT; i++) {
        sizes[i] = i % 7 == 3 ? 0 : ts_below(&rng, i % 5 == 0 ? 20000 : 300);
        fmts[i] = (fpe_format_id)ts_below(&rng, 3);
    }
    const float inv_scale = 0x1.8p-7f;
    rig g = rig_open(inv_scale);
    tlist l = tlist_make(g.b, COUNT, sizes, fmts, &rng);
    unscale(&g, &l, 0.0f);
    ck_assert(get_flag(&g) == 0.0f);
    ck_assert_uint_eq(tlist_check(&l, inv_scale, false), 0);
    /* one NaN, late in the list */
    size_t t = 257;
    while (sizes[t] == 0)
        t++;
    l.x[t][sizes[t] - 1] = fmts[t] == FPE_FMT_F32 ? 0x7FC00000u : 0x7FFFu;
    unscale(&g, &l, 0.0f);
    ck_assert(get_flag(&g) == 1.0f);
    ck_assert_uint_eq(tlist_check(&l, inv_scale, false), 0);
    tlist_free(&l);
    rig_close(&g);
}
END_TEST

START_TEST(bad_arguments_named)
{
    rig r = rig_open(0.0f);
    ak_backend *b = r.b;
    float *inv = r.inv, *found = r.found;
    kt_buf x = kt_buf_alloc(b, 10, AK_F32);
    ak_tensor g[5] = {x.t, x.t, ak_tensor_none(), ak_tensor_of(NULL, 10, AK_F16), x.t};
    ck_assert_int_eq(ak_unscale_check(NULL, g, 1, inv, found), AK_EINVAL);
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 5, inv, found), AK_EINVAL, NULL,
                    "ak_unscale_check: grads[3] is NULL with 10 elements");
    KT_EXPECT_ERROR(b, ak_unscale_check(b, NULL, 3, inv, found), AK_EINVAL, NULL,
                    "ak_unscale_check: grads is NULL with 3 tensors");
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 2, NULL, found), AK_EINVAL, NULL,
                    "ak_unscale_check: inv_scale is NULL");
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 2, inv, NULL), AK_EINVAL, NULL,
                    "ak_unscale_check: found_inf is NULL");
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 2, (const float *)((char *)inv + 1), found),
                    AK_EINVAL, NULL, "ak_unscale_check: inv_scale");
    g[1] = ak_tensor_of((char *)x.t.data + 2, 4, AK_F32);
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 2, inv, found), AK_EINVAL, NULL,
                    "ak_unscale_check: grads[1]");
    ck_assert_msg(strstr(ak_error(b), "not aligned"), "%s", ak_error(b));
    g[1] = ak_tensor_of(x.t.data, 4, (ak_dtype)5);
    KT_EXPECT_ERROR(b, ak_unscale_check(b, g, 2, inv, found), AK_EINVAL, NULL,
                    "ak_unscale_check: grads[1] has an invalid dtype (5)");
    /* nothing to do is fine: no list, or only empty tensors; found_inf untouched */
    set(&r, found, 0.25f);
    ck_assert_int_eq(ak_unscale_check(b, NULL, 0, inv, found), AK_OK);
    ck_assert_int_eq(ak_unscale_check(b, g + 2, 1, inv, found), AK_OK);
    ck_assert_str_eq(ak_error(b), "");
    ck_assert(get_flag(&r) == 0.25f);
    /* ak_scale */
    KT_EXPECT_ERROR(b, ak_scale(b, ak_tensor_of(NULL, 3, AK_BF16), inv), AK_EINVAL, NULL,
                    "ak_scale: x is NULL with 3 elements");
    KT_EXPECT_ERROR(b, ak_scale(b, x.t, NULL), AK_EINVAL, NULL, "ak_scale: factor is NULL");
    KT_EXPECT_ERROR(b, ak_scale(b, x.t, (const float *)((char *)inv + 2)), AK_EINVAL, NULL,
                    "ak_scale: factor");
    KT_EXPECT_ERROR(b, ak_scale(b, ak_tensor_of(x.t.data, 3, (ak_dtype)-1), inv), AK_EINVAL, NULL,
                    "ak_scale: x has an invalid dtype");
    ck_assert_int_eq(ak_scale(NULL, x.t, inv), AK_EINVAL);
    ck_assert_int_eq(ak_scale(b, ak_tensor_none(), inv), AK_OK);
    ck_assert(kt_buf_guards_ok(&x));
    kt_buf_free(&x);
    rig_close(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_unscale");
    TCase *tc = tcase_create("unscale");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, scale_every_factor, 0, 3);
    tcase_add_test(tc, scale_hand_checked);
    tcase_add_test(tc, found_inf_anywhere);
    tcase_add_test(tc, inv_scale_one_untouched);
    tcase_add_test(tc, unscale_every_factor);
    tcase_add_test(tc, many_tensors);
    tcase_add_test(tc, bad_arguments_named);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
