/* gpu_cast: ak_cast and ak_scale on the cuda backend against the cpu
 * backend, bit for bit (kernels.h: both run the emulator's rounding),
 * stochastic rounding included, on large arrays at odd offsets. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "kt.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

/* n host elements of format f (packed): every 16-bit pattern in a shuffled
 * order, repeated, or kt_fill_f32_bits's mix. */
static void *make_inputs(fpe_format_id f, size_t n, uint64_t seed)
{
    const size_t size = ak_dtype_size((ak_dtype)f);
    void *p = malloc(n * size + 4);
    ck_assert_ptr_nonnull(p);
    if (f == FPE_FMT_F32) {
        ts_rng rng;
        ts_rng_init(&rng, seed);
        kt_fill_f32_bits(&rng, p, n);
    } else {
        uint16_t *h = p;
        /* 40503 is odd: i -> 40503 i is a permutation of each run of 2^16 */
        for (size_t i = 0; i < n; i++)
            h[i] = (uint16_t)((i + seed) * 40503u);
    }
    return p;
}

/* Casts the n packed host elements src (format from) to `to` on backend b,
 * the tensors starting off elements into guarded buffers; the result goes
 * to out (packed).  The off elements before the result stay zero. */
static void cast_on(ak_backend *b, fpe_format_id from, fpe_format_id to, const void *src, size_t n,
                    size_t off, const ak_rounding *r, void *out)
{
    const size_t ss = ak_dtype_size((ak_dtype)from), ds = ak_dtype_size((ak_dtype)to);
    kt_buf s = kt_buf_alloc(b, n + off, (ak_dtype)from), d = kt_buf_alloc(b, n + off, (ak_dtype)to);
    const ak_tensor st = ak_tensor_of((char *)s.t.data + off * ss, n, (ak_dtype)from);
    const ak_tensor dt = ak_tensor_of((char *)d.t.data + off * ds, n, (ak_dtype)to);
    kt_dev_put(b, st.data, src, n * ss);
    const int rc = ak_cast(b, dt, st, r);
    ck_assert_msg(rc == AK_OK, "%s ak_cast: %s", ak_backend_name(b), ak_error(b));
    kt_dev_get(b, out, dt.data, n * ds);
    if (off > 0) {
        unsigned char head[64];
        ck_assert_uint_le(off * ds, sizeof head);
        kt_dev_get(b, head, d.t.data, off * ds);
        for (size_t i = 0; i < off * ds; i++)
            ck_assert_uint_eq(head[i], 0);
    }
    ck_assert(kt_buf_guards_ok(&s) && kt_buf_guards_ok(&d));
    kt_buf_free(&s);
    kt_buf_free(&d);
}

/* cuda vs cpu for one cast; returns the mismatches. */
static size_t compare_cast(fpe_format_id from, fpe_format_id to, const void *src, size_t n,
                           size_t off, const ak_rounding *r)
{
    const size_t ds = ak_dtype_size((ak_dtype)to);
    void *want = malloc(n * ds + 4), *got = malloc(n * ds + 4);
    ck_assert(want && got);
    cast_on(cpu, from, to, src, n, off, r, want);
    cast_on(gpu, from, to, src, n, off, r, got);
    char what[64];
    snprintf(what, sizeof what, "%s->%s %s", ts_format_name(from), ts_format_name(to),
             r ? ts_mode_names[r->mode] : "NULL");
    const size_t bad = kt_count_mismatches(what, got, want, n, ds);
    free(want);
    free(got);
    return bad;
}

static const fpe_format_id formats[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};

/* _i = from * 3 + to: every pair (equal dtypes copy), every mode. */
START_TEST(every_pair_every_mode)
{
    const fpe_format_id from = formats[_i / 3], to = formats[_i % 3];
    const size_t n = ((size_t)1 << 20) + 3;
    void *src = make_inputs(from, n, ts_seed() + (uint64_t)_i);
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        const ak_rounding r = {(fpe_round)mode, 0xC0FFEE0000000000ull + (uint64_t)mode, 11,
                               ((uint64_t)1 << 33) + 1};
        ck_assert_uint_eq(compare_cast(from, to, src, n, 1, &r), 0);
        /* aligned tensors: the vectorised widening path (n leaves a tail of 3) */
        ck_assert_uint_eq(compare_cast(from, to, src, n, 0, &r), 0);
    }
    ck_assert_uint_eq(compare_cast(from, to, src, 4097, 3, NULL), 0);
    free(src);
}
END_TEST

/* 2^24 + 3 elements, the grid-stride loops' many turns. */
START_TEST(large_arrays)
{
    static const fpe_format_id pairs[4][2] = {{FPE_FMT_F32, FPE_FMT_F16},
                                              {FPE_FMT_F32, FPE_FMT_BF16},
                                              {FPE_FMT_F16, FPE_FMT_F32},
                                              {FPE_FMT_BF16, FPE_FMT_F16}};
    static const fpe_round modes[2] = {FPE_RNE, FPE_SR_PROP};
    const size_t n = ((size_t)1 << 24) + 3;
    for (int p = 0; p < 4; p++) {
        void *src = make_inputs(pairs[p][0], n, ts_seed() + 100 + (uint64_t)p);
        for (int m = 0; m < 2; m++) {
            const ak_rounding r = {modes[m], 0x5EED, 2, 999};
            ck_assert_uint_eq(compare_cast(pairs[p][0], pairs[p][1], src, n, 1, &r), 0);
        }
        free(src);
    }
}
END_TEST

/* Two calls with the index advanced give the bits of one call on cuda too. */
START_TEST(split_calls_agree)
{
    const size_t n = 100003, k = 33331;
    void *src = make_inputs(FPE_FMT_F32, n, ts_seed() + 5);
    uint16_t *one = malloc(n * 2), *two = malloc(n * 2);
    ck_assert(one && two);
    for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
        const ak_rounding whole = {(fpe_round)mode, 77, 1, 12345};
        ak_rounding tail = whole;
        tail.index += k;
        cast_on(cpu, FPE_FMT_F32, FPE_FMT_BF16, src, n, 0, &whole, one);
        cast_on(gpu, FPE_FMT_F32, FPE_FMT_BF16, src, k, 1, &whole, two);
        cast_on(gpu, FPE_FMT_F32, FPE_FMT_BF16, (uint32_t *)src + k, n - k, 0, &tail, two + k);
        ck_assert_uint_eq(kt_count_mismatches("split", two, one, n, 2), 0);
    }
    free(one);
    free(two);
    free(src);
}
END_TEST

static const uint32_t factors[] = {0x3F800000u, 0x37800000u, 0x47800000u, 0x3DCCCCCDu, 0xBFC00000u,
                                   0x0DA24260u, 0x7149F2CAu, 0x00000001u, 0x00456789u, 0x00000000u,
                                   0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00123u, 0xFF812345u};

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
START_TEST(scale_every_factor)
{
    const fpe_format_id f = formats[_i];
    const size_t size = ak_dtype_size((ak_dtype)f);
    for (int big = 0; big < 2; big++) {
        const size_t n = big ? ((size_t)1 << 24) + 3 : ((size_t)1 << 18) + 5;
        void *x = make_inputs(f, n, ts_seed() + 50 + (uint64_t)_i);
        void *want = malloc(n * size), *got = malloc(n * size);
        ck_assert(want && got);
        const size_t nf = big ? 2 : sizeof factors / sizeof factors[0];
        for (size_t k = 0; k < nf; k++) {
            const uint32_t fac = big ? factors[k + 3] : factors[k];
            scale_on(cpu, f, x, n, 1, fac, want);
            scale_on(gpu, f, x, n, 1, fac, got);
            char what[48];
            snprintf(what, sizeof what, "%s * 0x%08x", ts_format_name(f), fac);
            ck_assert_uint_eq(kt_count_mismatches(what, got, want, n, size), 0);
        }
        free(x);
        free(want);
        free(got);
    }
}
END_TEST

int main(void)
{
    kt_require_cuda_or_skip();
    Suite *s = suite_create("kernels_gpu_cast");
    TCase *tc = tcase_create("gpu_cast");
    kt_open_both_around(tc, &cpu, &gpu);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, every_pair_every_mode, 0, 9);
    tcase_add_test(tc, large_arrays);
    tcase_add_test(tc, split_calls_agree);
    tcase_add_loop_test(tc, scale_every_factor, 0, 3);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
