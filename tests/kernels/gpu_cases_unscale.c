/* gpu_cases_unscale: ak_scale and ak_unscale_check on the cuda backend
 * against the cpu backend: the same elements bit for bit and the same
 * found-inf; ak_scale by every kind of factor, ak_unscale_check on lists
 * longer than one launch's table, large tensors, odd offsets and lengths. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

/* A list of tensors in one backend's memory, each at an odd element offset
 * inside its own guarded buffer. */
typedef struct tlist {
    ak_backend *b;
    size_t count;
    kt_buf *bufs;
    ak_tensor *t;
} tlist;

static tlist tlist_make(ak_backend *b, size_t count, const size_t *sizes, const fpe_format_id *fmts)
{
    tlist l = {b, count, calloc(count, sizeof(kt_buf)), calloc(count, sizeof(ak_tensor))};
    ck_assert(l.bufs && l.t);
    for (size_t i = 0; i < count; i++) {
        const ak_dtype dt = (ak_dtype)fmts[i];
        if (sizes[i] == 0) {
            l.t[i] = ak_tensor_of(NULL, 0, dt);
            continue;
        }
        const size_t off = i % 3; /* 0, 1 or 2 elements in */
        l.bufs[i] = kt_buf_alloc(b, sizes[i] + off, dt);
        l.t[i] = ak_tensor_of((char *)l.bufs[i].t.data + off * ak_dtype_size(dt), sizes[i], dt);
    }
    return l;
}

static void tlist_free(tlist *l)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->t[i].n == 0) continue;
        ck_assert(kt_buf_guards_ok(&l->bufs[i]));
        kt_buf_free(&l->bufs[i]);
    }
    free(l->bufs);
    free(l->t);
}

/* Host contents of a list: x[i] holds tensor i packed. */
static void **host_make(size_t count, const size_t *sizes, const fpe_format_id *fmts, uint64_t seed)
{
    void **x = calloc(count, sizeof *x);
    ck_assert_ptr_nonnull(x);
    ts_rng rng;
    ts_rng_init(&rng, seed);
    for (size_t i = 0; i < count; i++) {
        x[i] = malloc(sizes[i] * 4 + 4);
        ck_assert_ptr_nonnull(x[i]);
        kt_fill_packed(&rng, (ak_dtype)fmts[i], x[i], sizes[i]);
    }
    return x;
}

/* Room for a list's results. */
static void **host_alloc(size_t count, const size_t *sizes)
{
    void **x = calloc(count, sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < count; i++) {
        x[i] = malloc(sizes[i] * 4 + 4);
        ck_assert_ptr_nonnull(x[i]);
    }
    return x;
}

static void host_free(void **x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(x[i]);
    free(x);
}

/* Finite values only (so found-inf depends on what a test plants). */
static void make_finite(void **x, size_t count, const size_t *sizes, const fpe_format_id *fmts)
{
    for (size_t i = 0; i < count; i++) {
        for (size_t j = 0; j < sizes[i]; j++) {
            if (fmts[i] == FPE_FMT_F32) {
                uint32_t *p = (uint32_t *)x[i] + j;
                if ((*p & 0x7F800000u) == 0x7F800000u) *p &= 0xBFFFFFFFu;
            } else {
                uint16_t *p = (uint16_t *)x[i] + j;
                const uint16_t e = fmts[i] == FPE_FMT_F16 ? 0x7C00 : 0x7F80;
                if ((*p & e) == e) *p &= 0xBFFF;
            }
        }
    }
}

/* Runs ak_unscale_check over the host list x on backend b; results back in
 * out (same layout), found-inf (starting at found0) returned. */
static float unscale_on(ak_backend *b, size_t count, const size_t *sizes, const fpe_format_id *fmts,
                        void **x, float inv_scale, float found0, void **out)
{
    tlist l = tlist_make(b, count, sizes, fmts);
    for (size_t i = 0; i < count; i++)
        if (sizes[i] > 0) kt_dev_put(b, l.t[i].data, x[i], sizes[i] * ak_dtype_size(l.t[i].dtype));
    float *inv = kt_dev_alloc(b, sizeof(float)), *found = kt_dev_alloc(b, sizeof(float));
    kt_dev_put(b, inv, &inv_scale, sizeof inv_scale);
    kt_dev_put(b, found, &found0, sizeof found0);
    const int rc = ak_unscale_check(b, l.t, count, inv, found);
    ck_assert_msg(rc == AK_OK, "%s ak_unscale_check: %s", ak_backend_name(b), ak_error(b));
    float flag;
    kt_dev_get(b, &flag, found, sizeof flag);
    for (size_t i = 0; i < count; i++)
        if (sizes[i] > 0)
            kt_dev_get(b, out[i], l.t[i].data, sizes[i] * ak_dtype_size(l.t[i].dtype));
    kt_dev_free(b, inv);
    kt_dev_free(b, found);
    tlist_free(&l);
    return flag;
}

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* cuda vs cpu on one list; returns the mismatching elements (the flags must agree). */
static size_t compare(const go_cmp *cmp, size_t count, const size_t *sizes,
                      const fpe_format_id *fmts, void **x, float inv_scale, float found0,
                      float expect_flag)
{
    void **want = host_alloc(count, sizes), **got = host_alloc(count, sizes);
    const float fc = unscale_on(cpu, count, sizes, fmts, x, inv_scale, found0, want);
    const float fg = unscale_on(gpu, count, sizes, fmts, x, inv_scale, found0, got);
    ck_assert_msg(fc == expect_flag && fg == expect_flag, "found_inf: cpu %g cuda %g expected %g",
                  (double)fc, (double)fg, (double)expect_flag);
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        char what[48];
        snprintf(what, sizeof what, "grads[%zu] (%s)", i, ts_format_name(fmts[i]));
        bad += go_compare_packed(what, cmp, (ak_dtype)fmts[i], want[i], got[i], sizes[i]);
    }
    host_free(want, count);
    host_free(got, count);
    return bad;
}

static void random_list(ts_rng *rng, size_t count, size_t *sizes, fpe_format_id *fmts, size_t max)
{
    for (size_t i = 0; i < count; i++) {
        sizes[i] = i % 11 == 5 ? 0 : 1 + ts_below(rng, (uint32_t)(i % 4 == 0 ? max : 300));
        fmts[i] = (fpe_format_id)ts_below(rng, 3);
    }
}

/* Lists around and past one launch's table (128 tensors), a non-finite
 * element in the first, a middle or the last tensor, or none. */
GO_CASE(many_tensors)
{
    const go_cmp *cmp = &c->cmp;
    static const size_t counts[] = {1, 127, 128, 129, 300, 1000};
    ts_rng rng;
    ts_rng_init(&rng, ts_seed() + (uint64_t)_i);
    const size_t count = counts[_i];
    size_t *sizes = malloc(count * sizeof *sizes);
    fpe_format_id *fmts = malloc(count * sizeof *fmts);
    ck_assert(sizes && fmts);
    random_list(&rng, count, sizes, fmts, count > 300 ? 5000 : 70000);
    sizes[count - 1] = sizes[count - 1] ? sizes[count - 1] : 1;
    sizes[0] = sizes[0] ? sizes[0] : 1;
    void **x = host_make(count, sizes, fmts, ts_seed() + 10);
    make_finite(x, count, sizes, fmts);
    const float inv_scale = 0x1.8p-9f;
    ck_assert_uint_eq(compare(cmp, count, sizes, fmts, x, inv_scale, 0.0f, 0.0f), 0);
    ck_assert_uint_eq(compare(cmp, count, sizes, fmts, x, inv_scale, 1.0f, 1.0f),
                      0); /* never cleared */
    ck_assert_uint_eq(compare(cmp, count, sizes, fmts, x, 1.0f, 0.0f, 0.0f), 0);
    const size_t where[3] = {0, count / 2, count - 1};
    for (int w = 0; w < 3; w++) {
        size_t t = where[w];
        while (sizes[t] == 0)
            t++;
        const size_t j = sizes[t] - 1;
        if (fmts[t] == FPE_FMT_F32)
            ((uint32_t *)x[t])[j] = w == 1 ? 0x7F800001u : 0xFF800000u;
        else
            ((uint16_t *)x[t])[j] = fmts[t] == FPE_FMT_F16 ? 0x7C00 : 0xFFC1;
        ck_assert_uint_eq(compare(cmp, count, sizes, fmts, x, inv_scale, 0.0f, 1.0f), 0);
        ck_assert_uint_eq(compare(cmp, count, sizes, fmts, x, 1.0f, 0.0f, 1.0f), 0);
        make_finite(x, count, sizes, fmts);
    }
    host_free(x, count);
    free(sizes);
    free(fmts);
}

/* Large tensors of every dtype (2^24 + 3 elements and odd lengths), every
 * pattern class, several factors. */
GO_CASE(large_tensors)
{
    const go_cmp *cmp = &c->cmp;
    static const uint32_t factors[] = {
        0x3F800000u, 0x39800000u /* 2^-12 */, 0x3EAAAAABu, 0x00000001u, 0x7F800000u, 0x7FC00123u,
        0x00000000u};
    const size_t sizes[4] = {((size_t)1 << 24) + 3, 1000001, 65537, ((size_t)1 << 22) + 1};
    const fpe_format_id fmts[4] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32, FPE_FMT_F32};
    void **x = host_make(4, sizes, fmts, ts_seed() + 20);
    for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
        float f;
        memcpy(&f, &factors[k], 4);
        ck_assert_msg(compare(cmp, 4, sizes, fmts, x, f, 0.0f, 1.0f) == 0, "factor 0x%08x",
                      factors[k]);
    }
    host_free(x, 4);
}

static const uint32_t scale_factors[] = {0x3F800000u, 0x37800000u, 0x47800000u, 0x3DCCCCCDu,
                                         0xBFC00000u, 0x0DA24260u, 0x7149F2CAu, 0x00000001u,
                                         0x00456789u, 0x00000000u, 0x80000000u, 0x7F800000u,
                                         0xFF800000u, 0x7FC00123u, 0xFF812345u};

/* x *= factor on backend b, x at offset off in a guarded buffer. */
static void scale_on(ak_backend *b, fpe_format_id f, const void *x, size_t n, size_t off,
                     uint32_t factor, void *out)
{
    const size_t size = ak_dtype_size((ak_dtype)f);
    kt_buf buf = kt_buf_alloc(b, n + off, (ak_dtype)f);
    const ak_tensor t = ak_tensor_of((char *)buf.t.data + off * size, n, (ak_dtype)f);
    kt_dev_put(b, t.data, x, n * size);
    float *fac = kt_dev_alloc(b, sizeof(float));
    kt_dev_put(b, fac, &factor, sizeof factor);
    ck_assert_msg(ak_scale(b, t, fac) == AK_OK, "%s ak_scale: %s", ak_backend_name(b), ak_error(b));
    kt_dev_get(b, out, t.data, n * size);
    ck_assert(kt_buf_guards_ok(&buf));
    kt_buf_free(&buf);
    kt_dev_free(b, fac);
}

/* _i = format: ak_scale by every factor, cuda vs cpu. */
GO_CASE(scale_every_factor)
{
    const go_cmp *cmp = &c->cmp;
    const fpe_format_id f = (fpe_format_id)kt_dtypes[_i];
    const size_t size = ak_dtype_size((ak_dtype)f);
    for (int big = 0; big < 2; big++) {
        const size_t n = big ? ((size_t)1 << 24) + 3 : ((size_t)1 << 18) + 5;
        void *x = go_inputs(f, n, ts_seed() + 50 + (uint64_t)_i);
        void *want = malloc(n * size), *got = malloc(n * size);
        ck_assert(want && got);
        const size_t nf = big ? 2 : sizeof scale_factors / sizeof scale_factors[0];
        for (size_t k = 0; k < nf; k++) {
            const uint32_t fac = big ? scale_factors[k + 3] : scale_factors[k];
            scale_on(cpu, f, x, n, 1, fac, want);
            scale_on(gpu, f, x, n, 1, fac, got);
            char what[48];
            snprintf(what, sizeof what, "%s * 0x%08x", ts_format_name(f), fac);
            ck_assert_uint_eq(go_compare_packed(what, cmp, (ak_dtype)f, want, got, n), 0);
        }
        free(x);
        free(want);
        free(got);
    }
}

static const go_case rows[] = {
    {"scale", "scale_every_factor", 3, scale_every_factor, GO_BITS},
    {"unscale_check", "many_tensors", 6, many_tensors, GO_BITS},
    {"unscale_check", "large_tensors", 1, large_tensors, GO_BITS},
};
GO_FAMILY(unscale, rows);
