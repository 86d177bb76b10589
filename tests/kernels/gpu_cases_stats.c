/* gpu_cases_stats: ak_stats_accumulate on cuda against the cpu backend: every
 * field equal, amax bit for bit, on large arrays of each dtype (with NaNs,
 * infinities, subnormals), at misaligned starts, at every small size, over
 * accumulated calls; guard regions; then the kernel's bandwidth next to a
 * device-to-device copy (printed, not asserted). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_ops.h"
#include "ref_stats.h"

#define BIG (((size_t)1 << 24) + 5)

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* Scales as fp32 bits, with UINT32_MAX meaning "NULL". */
static const uint32_t scale_bits[] = {UINT32_MAX,
                                      0x3F800000u /* 1 */,
                                      0x44800000u /* 1024 */,
                                      0x3A800000u /* 2^-10 */,
                                      0x3F8CCCCDu /* 1.1f */,
                                      0x7FC00000u /* NaN */,
                                      0x00000000u /* 0 */};
#define NSCALES (sizeof scale_bits / sizeof scale_bits[0])

/* The statistics of x on b, accumulated onto *out. */
static void stats_on(ak_backend *b, ak_tensor x, fpe_format_id target, uint32_t sbits,
                     ak_stats *out)
{
    ref_stats_accumulate(b, x, target, sbits == UINT32_MAX ? NULL : &sbits, out);
}

/* Compares the two results as their 8-byte words: 0-6 the counts, 7 amax,
 * 8 + i bin i.  Returns the number of differing words. */
static size_t compare(const char *what, const ak_stats *on_gpu, const ak_stats *on_cpu)
{
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s: ak_stats word", what);
    return kt_count_mismatches(ctx, on_gpu, on_cpu, sizeof *on_gpu / 8, 8);
}

/* Both backends on the same host data (n elements of dt), starting at
 * element offset, for every target and scale. */
static size_t compare_backends(const char *what, ak_dtype dt, const void *host, size_t n,
                               size_t offset, size_t nscales)
{
    kt_buf xc = kt_buf_alloc(cpu, n, dt), xg = kt_buf_alloc(gpu, n, dt);
    kt_buf_upload(&xc, host);
    kt_buf_upload(&xg, host);
    const size_t size = ak_dtype_size(dt);
    const ak_tensor tc = ak_tensor_of((char *)xc.t.data + offset * size, n - offset, dt);
    const ak_tensor tg = ak_tensor_of((char *)xg.t.data + offset * size, n - offset, dt);
    size_t bad = 0;
    for (int target = 0; target < 3; target++) {
        for (size_t k = 0; k < nscales; k++) {
            ak_stats c, g;
            memset(&c, 0, sizeof c);
            memset(&g, 0, sizeof g);
            stats_on(cpu, tc, (fpe_format_id)target, scale_bits[k], &c);
            stats_on(gpu, tg, (fpe_format_id)target, scale_bits[k], &g);
            char ctx[128];
            snprintf(ctx, sizeof ctx, "%s n=%zu +%zu target %d scale 0x%08x", what, n - offset,
                     offset, target, scale_bits[k]);
            bad += compare(ctx, &g, &c);
        }
    }
    ck_assert(kt_buf_guards_ok(&xc) && kt_buf_guards_ok(&xg));
    kt_buf_free(&xc);
    kt_buf_free(&xg);
    return bad;
}

/* n elements of dt: interesting patterns (NaN, inf, subnormals, rounding
 * boundaries, random bits) when gaussian is false, else N(0, 0.02^2)
 * weights rounded to dt (most elements in a few binades). */
static void *make_data(ak_dtype dt, size_t n, bool gaussian, uint64_t seed)
{
    ts_rng r;
    ts_rng_init(&r, seed);
    void *x = malloc(n * ak_dtype_size(dt));
    ck_assert_ptr_nonnull(x);
    if (!gaussian) {
        kt_fill_packed(&r, dt, x, n);
        return x;
    }
    fpe_env env = fpe_env_default();
    for (size_t i = 0; i < n; i++) {
        const double u1 = 1.0 - ts_uniform(&r), u2 = ts_uniform(&r);
        const double v = 0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        if (dt == AK_F32)
            ((float *)x)[i] = (float)v;
        else if (dt == AK_F16)
            ((uint16_t *)x)[i] = fpe_f64_to_f16(&env, v);
        else
            ((uint16_t *)x)[i] = fpe_f64_to_bf16(&env, v);
    }
    return x;
}

static void big(ak_dtype dt, bool gaussian)
{
    void *x = make_data(dt, BIG, gaussian, ts_seed() + (uint64_t)dt);
    size_t bad = compare_backends(ak_dtype_name(dt), dt, x, BIG, 0, NSCALES);
    /* starts off the 16-byte grid: the scalar head before the vectors */
    bad += compare_backends(ak_dtype_name(dt), dt, x, BIG, 3, 2);
    free(x);
    ck_assert_msg(bad == 0, "%zu differences", bad);
}

GO_CASE(big_fp32) { big(AK_F32, false); }
GO_CASE(big_fp16) { big(AK_F16, false); }
GO_CASE(big_bf16) { big(AK_BF16, false); }
GO_CASE(big_gaussian)
{
    big(AK_F32, true);
    big(AK_F16, true);
    big(AK_BF16, true);
}

/* Every size up to 70 at every start within 16 bytes: heads and tails
 * without vectors, vectors without tails. */
GO_CASE(small_sizes)
{
    size_t bad = 0;
    for (int d = 0; d < 3; d++) {
        const ak_dtype dt = (ak_dtype)d;
        void *x = make_data(dt, 80, false, ts_seed() + 7);
        for (size_t offset = 0; offset < 8; offset++)
            for (size_t n = offset; n <= offset + 70; n += (n < offset + 20 ? 1 : 7))
                bad += compare_backends("small", dt, x, n, offset, 2);
        free(x);
    }
    ck_assert_msg(bad == 0, "%zu differences", bad);
}

/* One value everywhere (zeros, a constant) and long runs: the per-thread
 * merging of equal bins. */
GO_CASE(constant_tensors)
{
    const size_t n = ((size_t)1 << 22) + 3;
    uint32_t *x = calloc(n, sizeof *x);
    ck_assert_ptr_nonnull(x);
    size_t bad = compare_backends("zeros", AK_F32, x, n, 0, 2);
    for (size_t i = 0; i < n; i++)
        x[i] = 0x3F800000u;
    bad += compare_backends("ones", AK_F32, x, n, 1, 2);
    for (size_t i = 0; i < n; i++)
        x[i] = (i / 1000) % 3 ? 0x33000000u : 0x7FC00000u;
    bad += compare_backends("runs", AK_F32, x, n, 0, 2);
    free(x);
    ck_assert_msg(bad == 0, "%zu differences", bad);
}

/* Several calls into one result equal one call over the concatenation,
 * and the cpu's calls. */
GO_CASE(accumulates)
{
    const size_t n = BIG, cuts[] = {0, 1000001, 1000002, 9999999, n};
    size_t bad = 0;
    for (int d = 0; d < 3; d++) {
        const ak_dtype dt = (ak_dtype)d;
        void *x = make_data(dt, n, d == 1, ts_seed() + 11);
        kt_buf xc = kt_buf_alloc(cpu, n, dt), xg = kt_buf_alloc(gpu, n, dt);
        kt_buf_upload(&xc, x);
        kt_buf_upload(&xg, x);
        const size_t size = ak_dtype_size(dt);
        ak_stats one, parts_g, parts_c;
        memset(&one, 0, sizeof one);
        memset(&parts_g, 0, sizeof parts_g);
        memset(&parts_c, 0, sizeof parts_c);
        stats_on(gpu, xg.t, FPE_FMT_F16, 0x47000000u, &one);
        /* the parts accumulate in one result on the device, no copies between */
        ak_stats *rg = kt_dev_alloc(gpu, sizeof *rg);
        float *scale = kt_dev_alloc(gpu, sizeof *scale);
        const uint32_t s15 = 0x47000000u;
        kt_dev_put(gpu, scale, &s15, sizeof s15);
        for (size_t k = 0; k + 1 < sizeof cuts / sizeof cuts[0]; k++) {
            const ak_tensor part =
                ak_tensor_of((char *)xg.t.data + cuts[k] * size, cuts[k + 1] - cuts[k], dt);
            ck_assert_int_eq(ak_stats_accumulate(gpu, part, FPE_FMT_F16, scale, rg), AK_OK);
            const ak_tensor part_c =
                ak_tensor_of((char *)xc.t.data + cuts[k] * size, cuts[k + 1] - cuts[k], dt);
            stats_on(cpu, part_c, FPE_FMT_F16, s15, &parts_c);
        }
        kt_dev_get(gpu, &parts_g, rg, sizeof parts_g);
        bad += compare("cuda parts vs cuda whole", &parts_g, &one);
        bad += compare("cuda parts vs cpu parts", &parts_g, &parts_c);
        kt_dev_free(gpu, rg);
        kt_dev_free(gpu, scale);
        kt_buf_free(&xc);
        kt_buf_free(&xg);
        free(x);
    }
    ck_assert_msg(bad == 0, "%zu differences", bad);
}

/* ---- bandwidth ---------------------------------------------------------------- */
static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints the stats kernel's read bandwidth and that of a device-to-device
 * copy of the same bytes (counted once, as the copy reads them; it also
 * writes as many). */
GO_CASE(bandwidth)
{
    const size_t bytes = (size_t)256 << 20;
    const int reps = 20;
    void *dst = kt_dev_alloc(gpu, bytes);
    ak_stats *r = kt_dev_alloc(gpu, sizeof *r);
    float *scale = kt_dev_alloc(gpu, sizeof *scale);
    const float s = 1024.0f;
    kt_dev_put(gpu, scale, &s, sizeof s);
    for (int d = 0; d < 3; d++) {
        for (int gaussian = 0; gaussian < 2; gaussian++) {
            const ak_dtype dt = (ak_dtype)d;
            const size_t n = bytes / ak_dtype_size(dt);
            void *x = make_data(dt, n, gaussian, 5);
            kt_buf xb = kt_buf_alloc(gpu, n, dt);
            kt_buf_upload(&xb, x);
            free(x);
            ck_assert_int_eq(ak_stats_accumulate(gpu, xb.t, FPE_FMT_F16, scale, r), AK_OK);
            ck_assert_int_eq(ak_copy(gpu, dst, xb.t.data, bytes), AK_OK);
            ck_assert_int_eq(ak_sync(gpu), AK_OK);
            double t0 = seconds();
            for (int i = 0; i < reps; i++)
                ak_stats_accumulate(gpu, xb.t, FPE_FMT_F16, scale, r);
            ck_assert_int_eq(ak_sync(gpu), AK_OK);
            const double t_stats = (seconds() - t0) / reps;
            t0 = seconds();
            for (int i = 0; i < reps; i++)
                ak_copy(gpu, dst, xb.t.data, bytes);
            ck_assert_int_eq(ak_sync(gpu), AK_OK);
            const double t_copy = (seconds() - t0) / reps;
            printf("bandwidth %s %-8s: stats %7.1f GB/s (%.1f us), copy %7.1f GB/s read "
                   "(%7.1f GB/s read+write): stats at %.0f%% of the copy\n",
                   ak_dtype_name(dt), gaussian ? "gaussian" : "patterns", bytes / t_stats / 1e9,
                   t_stats * 1e6, bytes / t_copy / 1e9, 2 * bytes / t_copy / 1e9,
                   100 * t_copy / t_stats);
            kt_buf_free(&xb);
        }
    }
    kt_dev_free(gpu, dst);
    kt_dev_free(gpu, r);
    kt_dev_free(gpu, scale);
}

/* The statistics are counts and a bit pattern: every word of the result
 * struct must be equal (compare above). */
static const go_case rows[] = {
    {"stats", "small_sizes", 1, small_sizes, GO_BITS},
    {"stats", "constant_tensors", 1, constant_tensors, GO_BITS},
    {"stats", "big_fp32", 1, big_fp32, GO_BITS},
    {"stats", "big_fp16", 1, big_fp16, GO_BITS},
    {"stats", "big_bf16", 1, big_bf16, GO_BITS},
    {"stats", "big_gaussian", 1, big_gaussian, GO_BITS},
    {"stats", "accumulates", 1, accumulates, GO_BITS},
    {"stats", "bandwidth", 1, bandwidth, GO_BITS},
};
GO_FAMILY(stats, rows);
