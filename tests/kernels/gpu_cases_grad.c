/* gpu_cases_grad: ak_accumulate, ak_sum_squares and ak_clip_by_norm on the cuda
 * backend against the cpu backend.  accumulate and clip_by_norm (given the
 * same *sumsq) must agree bit for bit, coefficient included; the sums of
 * squares to the relative 1e-12 of kernels/grad.c, with NaN and infinity
 * agreeing exactly.  Lists cross one launch's table (128 tensors), tensors
 * reach 2^24 + 3 elements, and every tensor sits at an odd element offset
 * inside a guarded buffer whose other elements must not change. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* The sums of squares: relative 1e-12, NaN and infinity exactly. */
#define SUM_CMP                                                                                    \
    {                                                                                              \
        GO_REL, 0, 0, 1e-12, false, false, "kernels/grad.c: relative 1e-12"                        \
    }
static const go_cmp sum_cmp = SUM_CMP;

/* ---- host contents ------------------------------------------------------------- */
/* n elements of dt, packed: the kt_fill mix (every class of pattern), made
 * finite when finite is set, or ordinary values in [-scale, scale]. */
static void *host_fill(ts_rng *r, ak_dtype dt, size_t n, bool finite, double scale)
{
    const size_t size = ak_dtype_size(dt);
    void *p = malloc(n * size + 4);
    ck_assert_ptr_nonnull(p);
    if (scale > 0) {
        uint32_t *bits = malloc(n * 4 + 4);
        ck_assert_ptr_nonnull(bits);
        kt_fill_values(r, dt, bits, n, scale);
        for (size_t i = 0; i < n; i++) {
            if (dt == AK_F32)
                ((uint32_t *)p)[i] = bits[i];
            else
                ((uint16_t *)p)[i] = (uint16_t)bits[i];
        }
        free(bits);
        return p;
    }
    kt_fill_packed(r, dt, p, n);
    if (!finite) return p;
    for (size_t i = 0; i < n; i++) {
        if (dt == AK_F32) {
            uint32_t *e = (uint32_t *)p + i;
            if ((*e & 0x7F800000u) == 0x7F800000u) *e &= 0xBFFFFFFFu;
        } else {
            uint16_t *e = (uint16_t *)p + i;
            const uint16_t inf = dt == AK_F16 ? 0x7C00 : 0x7F80;
            if ((*e & inf) == inf) *e &= 0xBFFF;
        }
    }
    return p;
}

/* ---- a list of tensors on both backends ------------------------------------------ */
/* Tensor i is a view of n[i] elements, off[i] = i % 3 elements into its own
 * guarded buffer on each backend; the elements before it hold a marker. */
typedef struct twins {
    size_t count;
    kt_twin *tw;
    ak_tensor *c, *g;
} twins;

static twins twins_make(size_t count, const size_t *sizes, const ak_dtype *dts)
{
    twins l = {count, calloc(count, sizeof(kt_twin)), calloc(count, sizeof(ak_tensor)),
               calloc(count, sizeof(ak_tensor))};
    ck_assert(l.tw && l.c && l.g);
    for (size_t i = 0; i < count; i++) {
        if (sizes[i] == 0) {
            l.c[i] = l.g[i] = ak_tensor_of(NULL, 0, dts[i]);
            continue;
        }
        const size_t off = i % 3, size = ak_dtype_size(dts[i]);
        l.tw[i] = kt_twin_alloc(cpu, gpu, sizes[i] + off, dts[i]);
        l.c[i] = ak_tensor_of((char *)l.tw[i].c.t.data + off * size, sizes[i], dts[i]);
        l.g[i] = ak_tensor_of((char *)l.tw[i].g.t.data + off * size, sizes[i], dts[i]);
    }
    return l;
}

/* Tensor i's elements from host[i] (packed), on both backends. */
static void twins_upload(twins *l, void **host)
{
    for (size_t i = 0; i < l->count; i++) {
        const size_t n = l->c[i].n;
        if (n == 0) continue;
        const size_t size = ak_dtype_size(l->c[i].dtype), off = i % 3;
        unsigned char *all = malloc((n + off) * size);
        ck_assert_ptr_nonnull(all);
        memset(all, 0x5A, off * size);
        memcpy(all + off * size, host[i], n * size);
        kt_twin_upload(&l->tw[i], all);
        free(all);
    }
}

/* Elements (markers included) whose bits differ between the backends. */
static size_t twins_mismatches(twins *l, const char *label)
{
    size_t bad = 0;
    for (size_t i = 0; i < l->count; i++) {
        if (l->c[i].n == 0) continue;
        char what[96];
        snprintf(what, sizeof what, "%s: xs[%zu] (%s)", label, i, ak_dtype_name(l->c[i].dtype));
        bad += kt_twin_mismatches(what, &l->tw[i]);
    }
    return bad;
}

static void twins_free(twins *l)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->c[i].n > 0) kt_twin_free(&l->tw[i]);
    free(l->tw);
    free(l->c);
    free(l->g);
}

static void **host_list(ts_rng *r, size_t count, const size_t *sizes, const ak_dtype *dts,
                        bool finite, double scale)
{
    void **x = calloc(count, sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < count; i++)
        x[i] = host_fill(r, dts[i], sizes[i], finite, scale);
    return x;
}

static void host_free(void **x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(x[i]);
    free(x);
}

/* Random sizes (some empty, every fourth up to max) and dtypes. */
static void random_list(ts_rng *r, size_t count, size_t *sizes, ak_dtype *dts, uint32_t max)
{
    for (size_t i = 0; i < count; i++) {
        sizes[i] = i % 11 == 5 ? 0 : 1 + ts_below(r, i % 4 == 0 ? max : 300);
        dts[i] = kt_dtypes[ts_below(r, 3)];
    }
}

/* ---- scalars ------------------------------------------------------------------------- */
static double *dev_double(ak_backend *b, double v)
{
    double *p = kt_dev_alloc(b, sizeof(double));
    kt_dev_put(b, p, &v, sizeof v);
    return p;
}

static double get_double(ak_backend *b, const double *p)
{
    double v;
    kt_dev_get(b, &v, p, sizeof v);
    return v;
}

/* ak_sum_squares of the list on both backends from start, called once or
 * twice (the second call adds the list again); *c and *g get the sums. */
static void sum_both(twins *l, double start, int calls, double *c, double *g)
{
    double *sc = dev_double(cpu, start), *sg = dev_double(gpu, start);
    for (int k = 0; k < calls; k++) {
        ck_assert_msg(ak_sum_squares(cpu, l->c, l->count, sc) == AK_OK, "cpu: %s", ak_error(cpu));
        ck_assert_msg(ak_sum_squares(gpu, l->g, l->count, sg) == AK_OK, "cuda: %s", ak_error(gpu));
    }
    *c = get_double(cpu, sc);
    *g = get_double(gpu, sg);
    kt_dev_free(cpu, sc);
    kt_dev_free(gpu, sg);
}

static void expect_sums_agree(double c, double g, const char *label)
{
    ck_assert_msg(go_agree_f64(&sum_cmp, c, g), "%s: cuda %.17g cpu %.17g (relative %.3g)", label,
                  g, c, fabs(g - c) / fabs(c));
}

/* ak_clip_by_norm of the list on both backends with *sumsq = s; the
 * elements and the coefficients must agree bit for bit; returns the
 * coefficient's bits. */
static uint32_t clip_both(twins *l, double s, float max_norm, bool with_coef, const char *label)
{
    double *sc = dev_double(cpu, s), *sg = dev_double(gpu, s);
    float *cc = kt_dev_alloc(cpu, sizeof(float)), *cg = kt_dev_alloc(gpu, sizeof(float));
    const uint32_t marker = kt_marker_nan(AK_F32);
    kt_dev_put(cpu, cc, &marker, 4);
    kt_dev_put(gpu, cg, &marker, 4);
    ck_assert_msg(ak_clip_by_norm(cpu, l->c, l->count, sc, max_norm, with_coef ? cc : NULL) ==
                      AK_OK,
                  "cpu: %s", ak_error(cpu));
    ck_assert_msg(ak_clip_by_norm(gpu, l->g, l->count, sg, max_norm, with_coef ? cg : NULL) ==
                      AK_OK,
                  "cuda: %s", ak_error(gpu));
    uint32_t bc, bg;
    kt_dev_get(cpu, &bc, cc, 4);
    kt_dev_get(gpu, &bg, cg, 4);
    ck_assert_msg(bc == bg, "%s: coef_out cuda 0x%08x cpu 0x%08x", label, bg, bc);
    if (!with_coef) ck_assert_uint_eq(bg, marker);
    ck_assert_uint_eq(twins_mismatches(l, label), 0);
    /* *sumsq is only read */
    ck_assert(get_double(gpu, sg) == s || (isnan(s) && isnan(get_double(gpu, sg))));
    kt_dev_free(cpu, sc);
    kt_dev_free(gpu, sg);
    kt_dev_free(cpu, cc);
    kt_dev_free(gpu, cg);
    return bc;
}

/* ---- accumulate ------------------------------------------------------------------------- */
/* _i = 3 * (y's dtype) + x's dtype: the mix of patterns, then ordinary
 * values, then y += y; 2^24 + 3 elements for three pairings. */
GO_CASE(accumulate_matches_cpu)
{
    const ak_dtype dy = kt_dtypes[_i / 3], dx = kt_dtypes[_i % 3];
    const size_t n = (_i % 4 == 0) ? ((size_t)1 << 24) + 3 : 1000001;
    ts_rng r;
    ts_rng_init(&r, ts_seed() + (uint64_t)_i);
    const size_t sizes[2] = {n, n};
    const ak_dtype dts[2] = {dx, dy}; /* x at offset 0, y at offset 1 */
    for (int pass = 0; pass < 3; pass++) {
        const bool self = pass == 2; /* y += y, for equal dtypes */
        if (self && dx != dy) continue;
        twins l = twins_make(2, sizes, dts);
        void **host = host_list(&r, 2, sizes, dts, false, pass == 1 ? 8.0 : 0.0);
        twins_upload(&l, host);
        ck_assert_msg(ak_accumulate(cpu, l.c[1], self ? l.c[1] : l.c[0]) == AK_OK, "cpu: %s",
                      ak_error(cpu));
        ck_assert_msg(ak_accumulate(gpu, l.g[1], self ? l.g[1] : l.g[0]) == AK_OK, "cuda: %s",
                      ak_error(gpu));
        char label[64];
        snprintf(label, sizeof label, "y %s += x %s, pass %d", ak_dtype_name(dy), ak_dtype_name(dx),
                 pass);
        ck_assert_uint_eq(twins_mismatches(&l, label), 0);
        twins_free(&l);
        host_free(host, 2);
    }
}

/* ---- sums of squares ----------------------------------------------------------------------- */
/* Lists around and past one launch's table, from 0 and from 2.5, one call
 * and two; then with an infinity, then a NaN, planted in the last tensor. */
GO_CASE(sum_squares_many_tensors)
{
    static const size_t counts[] = {1, 127, 128, 129, 300, 1000};
    const size_t count = counts[_i];
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 100 + (uint64_t)_i);
    size_t *sizes = malloc(count * sizeof *sizes);
    ak_dtype *dts = malloc(count * sizeof *dts);
    ck_assert(sizes && dts);
    random_list(&r, count, sizes, dts, count > 300 ? 5000 : 70000);
    sizes[count - 1] = sizes[count - 1] ? sizes[count - 1] : 1;
    for (int values = 0; values < 2; values++) {
        void **host = host_list(&r, count, sizes, dts, true, values ? 2.0 : 0.0);
        twins l = twins_make(count, sizes, dts);
        twins_upload(&l, host);
        double sc, sg;
        sum_both(&l, 0.0, 1, &sc, &sg);
        expect_sums_agree(sc, sg, "from 0");
        sum_both(&l, 2.5, 2, &sc, &sg);
        expect_sums_agree(sc, sg, "from 2.5, twice");
        const ak_dtype dt = dts[count - 1];
        const size_t j = sizes[count - 1] - 1;
        for (int kind = 0; kind < 2; kind++) { /* -inf, then a NaN */
            if (dt == AK_F32)
                ((uint32_t *)host[count - 1])[j] = kind ? 0x7FC00000u : 0xFF800000u;
            else
                ((uint16_t *)host[count - 1])[j] =
                    (uint16_t)(dt == AK_F16 ? (kind ? 0x7E00 : 0xFC00) : (kind ? 0x7FC0 : 0xFF80));
            twins_upload(&l, host);
            sum_both(&l, 0.0, 1, &sc, &sg);
            ck_assert_msg(kind ? isnan(sc) && isnan(sg) : sc == INFINITY && sg == INFINITY,
                          "kind %d: cuda %g cpu %g", kind, sg, sc);
        }
        twins_free(&l);
        host_free(host, count);
    }
    free(sizes);
    free(dts);
}

/* Tensors of 2^24 + 3 elements of every dtype (and odd lengths): the mix of
 * patterns made finite, and ordinary values, where every square counts. */
GO_CASE(sum_squares_large)
{
    const size_t big = ((size_t)1 << 24) + 3;
    const size_t sizes[4] = {big, big, big, ((size_t)1 << 22) + 1};
    const ak_dtype dts[4] = {AK_F16, AK_BF16, AK_F32, AK_F32};
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 200);
    for (int values = 0; values < 2; values++) {
        void **host = host_list(&r, 4, sizes, dts, true, values ? 1.0 : 0.0);
        twins l = twins_make(4, sizes, dts);
        twins_upload(&l, host);
        double sc, sg;
        for (size_t i = 0; i < 4; i++) { /* each alone, then all */
            twins one = {1, &l.tw[i], &l.c[i], &l.g[i]};
            sum_both(&one, 0.0, 1, &sc, &sg);
            expect_sums_agree(sc, sg, ak_dtype_name(dts[i]));
        }
        sum_both(&l, 0.0, 2, &sc, &sg);
        expect_sums_agree(sc, sg, "all, twice");
        twins_free(&l);
        host_free(host, 4);
    }
}

/* ---- clipping ----------------------------------------------------------------------------- */
/* Sums of squares for clip_both: no clipping, clipping, the coefficient
 * 1 - 1e-9 rounding to 1, an infinite and a NaN norm. */
static const double clip_sums[] = {0.0, 0.25, 1.0, 4.0, 1e10, 1e6, INFINITY, NAN, -1.0};
static const float clip_max[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1000.0f, 1.0f, 1.0f, 1.0f};
#define N_CLIP (sizeof clip_sums / sizeof clip_sums[0])

/* Lists around and past one launch's table: every pattern class. */
GO_CASE(clip_many_tensors)
{
    static const size_t counts[] = {1, 128, 129, 300, 1000};
    const size_t count = counts[_i];
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 300 + (uint64_t)_i);
    size_t *sizes = malloc(count * sizeof *sizes);
    ak_dtype *dts = malloc(count * sizeof *dts);
    ck_assert(sizes && dts);
    random_list(&r, count, sizes, dts, count > 300 ? 5000 : 70000);
    void **host = host_list(&r, count, sizes, dts, false, 0.0);
    twins l = twins_make(count, sizes, dts);
    for (size_t k = 0; k < N_CLIP; k++) {
        twins_upload(&l, host);
        char label[64];
        snprintf(label, sizeof label, "%zu tensors, sumsq %g", count, clip_sums[k]);
        clip_both(&l, clip_sums[k], clip_max[k], k % 2 == 0, label);
    }
    twins_free(&l);
    host_free(host, count);
    free(sizes);
    free(dts);
}

/* Large tensors of every dtype, every pattern class. */
GO_CASE(clip_large)
{
    const size_t big = ((size_t)1 << 24) + 3;
    const size_t sizes[4] = {big, 1000001, big, 65537};
    const ak_dtype dts[4] = {AK_F16, AK_BF16, AK_F32, AK_F32};
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 400);
    void **host = host_list(&r, 4, sizes, dts, false, 0.0);
    twins l = twins_make(4, sizes, dts);
    for (size_t k = 0; k < N_CLIP; k++) {
        twins_upload(&l, host);
        char label[64];
        snprintf(label, sizeof label, "large, sumsq %g", clip_sums[k]);
        clip_both(&l, clip_sums[k], clip_max[k], true, label);
    }
    twins_free(&l);
    host_free(host, 4);
}

/* No elements: only the coefficient, on both. */
GO_CASE(clip_empty_list)
{
    twins none = {0, NULL, NULL, NULL};
    ck_assert_uint_eq(clip_both(&none, 100.0, 2.0f, true, "empty"),
                      kt_f32_bits((float)(2.0 / (10.0 + 1e-6))));
    const size_t sizes[2] = {0, 0};
    const ak_dtype dts[2] = {AK_F16, AK_F32};
    twins l = twins_make(2, sizes, dts);
    ck_assert_uint_eq(clip_both(&l, NAN, 2.0f, true, "empty tensors"), 0xFFC00000u);
    twins_free(&l);
}

/* The training-step sequence on the GPU: its own sum of squares, carried
 * to the cpu, then both clip with it and agree bit for bit. */
GO_CASE(sum_then_clip)
{
    static const size_t sizes[5] = {300000, 4097, 1, 1000000, 77};
    static const ak_dtype dts[5] = {AK_F32, AK_F16, AK_BF16, AK_BF16, AK_F16};
    ts_rng r;
    ts_rng_init(&r, ts_seed() + 500);
    void **host = host_list(&r, 5, sizes, dts, true, 0.01);
    twins l = twins_make(5, sizes, dts);
    twins_upload(&l, host);
    double sc, sg;
    sum_both(&l, 0.0, 1, &sc, &sg);
    expect_sums_agree(sc, sg, "before clipping");
    const uint32_t coef = clip_both(&l, sg, (float)(sqrt(sg) / 3), true, "clip to a third");
    ck_assert_msg(fabs(kt_f32_of(coef) - 1.0 / 3) < 1e-6, "coefficient %.9g", kt_f32_of(coef));
    twins_free(&l);
    host_free(host, 5);
}

/* accumulate and clip_by_norm bit for bit (the coefficient too), the sums
 * of squares as sum_cmp. */
static const go_case rows[] = {
    {"accumulate", "accumulate_matches_cpu", 9, accumulate_matches_cpu, GO_BITS},
    {"sum_squares", "sum_squares_many_tensors", 6, sum_squares_many_tensors, SUM_CMP},
    {"sum_squares", "sum_squares_large", 1, sum_squares_large, SUM_CMP},
    {"clip_by_norm", "clip_many_tensors", 5, clip_many_tensors, GO_BITS},
    {"clip_by_norm", "clip_large", 1, clip_large, GO_BITS},
    {"clip_by_norm", "clip_empty_list", 1, clip_empty_list, GO_BITS},
    {"sum_squares clip_by_norm", "sum_then_clip", 1, sum_then_clip, GO_BITS},
};
GO_FAMILY(grad, rows);
