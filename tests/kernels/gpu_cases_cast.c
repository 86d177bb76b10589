/* gpu_cases_cast: ak_cast on the cuda backend against the cpu
 * backend, bit for bit (kernels.h: both run the emulator's rounding),
 * stochastic rounding included, on large arrays at odd offsets (ak_scale
 * is gpu_cases_unscale.c's). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

/* Both backends, open during each test (kt_open_both_around). */
static ak_backend *cpu, *gpu;

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
static size_t compare_cast(const go_cmp *cmp, fpe_format_id from, fpe_format_id to, const void *src,
                           size_t n, size_t off, const ak_rounding *r)
{
    const size_t ds = ak_dtype_size((ak_dtype)to);
    void *want = malloc(n * ds + 4), *got = malloc(n * ds + 4);
    ck_assert(want && got);
    cast_on(cpu, from, to, src, n, off, r, want);
    cast_on(gpu, from, to, src, n, off, r, got);
    char what[64];
    snprintf(what, sizeof what, "%s->%s %s", ts_format_name(from), ts_format_name(to),
             r ? ts_mode_names[r->mode] : "NULL");
    const size_t bad = go_compare_packed(what, cmp, (ak_dtype)to, want, got, n);
    free(want);
    free(got);
    return bad;
}

static const fpe_format_id formats[3] = {FPE_FMT_F16, FPE_FMT_BF16, FPE_FMT_F32};

/* _i = from * 3 + to: every pair (equal dtypes copy), every mode. */
GO_CASE(every_pair_every_mode)
{
    const go_cmp *cmp = &c->cmp;
    const fpe_format_id from = formats[_i / 3], to = formats[_i % 3];
    const size_t n = ((size_t)1 << 20) + 3;
    void *src = go_inputs(from, n, ts_seed() + (uint64_t)_i);
    for (int mode = 0; mode < FPE_ROUND_COUNT; mode++) {
        const ak_rounding r = {(fpe_round)mode, 0xC0FFEE0000000000ull + (uint64_t)mode, 11,
                               ((uint64_t)1 << 33) + 1};
        ck_assert_uint_eq(compare_cast(cmp, from, to, src, n, 1, &r), 0);
        /* aligned tensors: the vectorised widening path (n leaves a tail of 3) */
        ck_assert_uint_eq(compare_cast(cmp, from, to, src, n, 0, &r), 0);
    }
    ck_assert_uint_eq(compare_cast(cmp, from, to, src, 4097, 3, NULL), 0);
    free(src);
}

/* 2^24 + 3 elements, the grid-stride loops' many turns. */
GO_CASE(large_arrays)
{
    const go_cmp *cmp = &c->cmp;
    static const fpe_format_id pairs[4][2] = {{FPE_FMT_F32, FPE_FMT_F16},
                                              {FPE_FMT_F32, FPE_FMT_BF16},
                                              {FPE_FMT_F16, FPE_FMT_F32},
                                              {FPE_FMT_BF16, FPE_FMT_F16}};
    static const fpe_round modes[2] = {FPE_RNE, FPE_SR_PROP};
    const size_t n = ((size_t)1 << 24) + 3;
    for (int p = 0; p < 4; p++) {
        void *src = go_inputs(pairs[p][0], n, ts_seed() + 100 + (uint64_t)p);
        for (int m = 0; m < 2; m++) {
            const ak_rounding r = {modes[m], 0x5EED, 2, 999};
            ck_assert_uint_eq(compare_cast(cmp, pairs[p][0], pairs[p][1], src, n, 1, &r), 0);
        }
        free(src);
    }
}

/* Two calls with the index advanced give the bits of one call on cuda too. */
GO_CASE(split_calls_agree)
{
    const go_cmp *cmp = &c->cmp;
    const size_t n = 100003, k = 33331;
    void *src = go_inputs(FPE_FMT_F32, n, ts_seed() + 5);
    uint16_t *one = malloc(n * 2), *two = malloc(n * 2);
    ck_assert(one && two);
    for (int mode = FPE_SR_PROP; mode <= FPE_SR_EQUAL; mode++) {
        const ak_rounding whole = {(fpe_round)mode, 77, 1, 12345};
        ak_rounding tail = whole;
        tail.index += k;
        cast_on(cpu, FPE_FMT_F32, FPE_FMT_BF16, src, n, 0, &whole, one);
        cast_on(gpu, FPE_FMT_F32, FPE_FMT_BF16, src, k, 1, &whole, two);
        cast_on(gpu, FPE_FMT_F32, FPE_FMT_BF16, (uint32_t *)src + k, n - k, 0, &tail, two + k);
        ck_assert_uint_eq(go_compare_packed("split", cmp, AK_BF16, one, two, n), 0);
    }
    free(one);
    free(two);
    free(src);
}

static const go_case rows[] = {
    {"cast", "every_pair_every_mode", 9, every_pair_every_mode, GO_BITS},
    {"cast", "large_arrays", 1, large_arrays, GO_BITS},
    {"cast", "split_calls_agree", 1, split_calls_agree, GO_BITS},
};
GO_FAMILY(cast, rows);
