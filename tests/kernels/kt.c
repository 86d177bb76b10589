/* kt.c: shared helpers of the kernels/ tests (see kt.h). */
#include "kt.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ak_backend *kt_open_cpu(void)
{
    char msg[512];
    ak_backend *b = ak_open("cpu", msg, sizeof msg);
    ck_assert_msg(b != NULL, "ak_open(cpu): %s", msg);
    return b;
}

ak_backend *kt_open_cuda(void)
{
    char msg[512];
    ak_backend *b = ak_open("cuda", msg, sizeof msg);
    if (!b) printf("%s\n", msg);
    return b;
}

void kt_require_cuda_or_skip(void)
{
    ak_backend *b = kt_open_cuda();
    if (!b) {
        printf("no usable CUDA device: skipped\n");
        exit(77);
    }
    ak_close(b);
}

kt_buf kt_buf_alloc(ak_backend *b, size_t n, ak_dtype dtype)
{
    kt_buf buf;
    memset(&buf, 0, sizeof buf);
    buf.b = b;
    buf.bytes = n * ak_dtype_size(dtype);
    void *p = NULL;
    int rc = ak_alloc(b, buf.bytes + 2 * KT_GUARD, &p);
    ck_assert_msg(rc == AK_OK, "ak_alloc: %s", ak_error(b));
    buf.base = (unsigned char *)p;
    unsigned char *guard = malloc(KT_GUARD);
    ck_assert_ptr_nonnull(guard);
    memset(guard, KT_SENTINEL, KT_GUARD);
    ck_assert_int_eq(ak_to_device(b, buf.base, guard, KT_GUARD), AK_OK);
    ck_assert_int_eq(ak_to_device(b, buf.base + KT_GUARD + buf.bytes, guard, KT_GUARD), AK_OK);
    free(guard);
    ck_assert_int_eq(ak_zero(b, buf.base + KT_GUARD, buf.bytes), AK_OK);
    buf.t = ak_tensor_of(buf.base + KT_GUARD, n, dtype);
    return buf;
}

void kt_buf_upload(kt_buf *buf, const void *host)
{
    int rc = ak_to_device(buf->b, buf->t.data, host, buf->bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_device: %s", ak_error(buf->b));
}

void kt_buf_download(kt_buf *buf, void *host)
{
    int rc = ak_to_host(buf->b, host, buf->t.data, buf->bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_host: %s", ak_error(buf->b));
}

bool kt_buf_guards_ok(kt_buf *buf)
{
    unsigned char g[2 * KT_GUARD];
    ck_assert_int_eq(ak_to_host(buf->b, g, buf->base, KT_GUARD), AK_OK);
    ck_assert_int_eq(ak_to_host(buf->b, g + KT_GUARD, buf->base + KT_GUARD + buf->bytes, KT_GUARD), AK_OK);
    for (size_t i = 0; i < sizeof g; i++) {
        if (g[i] != KT_SENTINEL) {
            printf("guard byte %s %zu overwritten (0x%02x)\n", i < KT_GUARD ? "before" : "after",
                   i < KT_GUARD ? KT_GUARD - i : i - KT_GUARD, g[i]);
            return false;
        }
    }
    return true;
}

void kt_buf_free(kt_buf *buf)
{
    ak_free(buf->b, buf->base);
    buf->base = NULL;
}

void *kt_dev_alloc(ak_backend *b, size_t bytes)
{
    void *p = NULL;
    int rc = ak_alloc(b, bytes, &p);
    ck_assert_msg(rc == AK_OK, "ak_alloc: %s", ak_error(b));
    ck_assert_int_eq(ak_zero(b, p, bytes), AK_OK);
    return p;
}

void kt_dev_put(ak_backend *b, void *dst, const void *host, size_t bytes)
{
    int rc = ak_to_device(b, dst, host, bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_device: %s", ak_error(b));
}

void kt_dev_get(ak_backend *b, void *host, const void *src, size_t bytes)
{
    int rc = ak_to_host(b, host, src, bytes);
    ck_assert_msg(rc == AK_OK, "ak_to_host: %s", ak_error(b));
}

void kt_dev_free(ak_backend *b, void *p) { ak_free(b, p); }

/* A value near a boundary of fmt (fp16 or bf16), as fp32 bits: the boundary
 * itself, or one fp32 ulp either side. */
static uint32_t near_boundary(ts_rng *r)
{
    static const uint32_t boundaries[] = {
        0x477FF000u, /* 65520: fp16 overflow threshold */
        0x477FE000u, /* 65504: fp16 max */
        0x33000000u, /* 2^-25: half the fp16 min subnormal */
        0x33800000u, /* 2^-24: fp16 min subnormal */
        0x38800000u, /* 2^-14: fp16 min normal */
        0x387FC000u, /* fp16 max subnormal */
        0x7F7F8000u, /* bf16 max */
        0x7F7FC000u, /* bf16 overflow threshold */
        0x00800000u, /* fp32 min normal = bf16 min normal */
        0x00010000u, /* bf16 min subnormal */
        0x00008000u, /* half of it */
        0x3F801000u, /* 1 + 2^-11: fp16 tie */
        0x3F808000u, /* 1 + 2^-8: bf16 tie */
        0x3F800000u, /* 1 */
    };
    uint32_t v = boundaries[ts_below(r, sizeof boundaries / sizeof boundaries[0])];
    switch (ts_below(r, 3)) {
    case 0: v -= 1; break;
    case 1: v += 1; break;
    default: break;
    }
    return v | (ts_below(r, 2) ? 0x80000000u : 0);
}

void kt_fill_f32_bits(ts_rng *r, uint32_t *x, size_t n)
{
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                        0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA00000u,
                                        0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu};
    const size_t ns = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < n; i++) {
        if (i < ns) {
            x[i] = specials[i];
            continue;
        }
        switch (ts_below(r, 4)) {
        case 0: x[i] = (uint32_t)ts_next(r); break; /* any pattern */
        case 1: x[i] = near_boundary(r); break;
        case 2: x[i] = specials[ts_below(r, (uint32_t)ns)]; break;
        default: { /* a random binade between 2^-150 and 2^128, random fraction */
            uint32_t e = ts_below(r, 256);
            x[i] = (e << 23) | ((uint32_t)ts_next(r) & 0x807FFFFFu);
            if (e == 255) x[i] &= 0xFF800000u; /* an infinity, not mostly NaNs */
        }
        }
    }
}

void kt_fill_u16_bits(ts_rng *r, fpe_format_id fmt, uint16_t *x, size_t n)
{
    const uint16_t f16s[] = {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x3C00};
    const uint16_t bf16s[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7FA0, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x3F80};
    const uint16_t *s = fmt == FPE_FMT_F16 ? f16s : bf16s;
    const size_t ns = 11;
    for (size_t i = 0; i < n; i++) {
        if (i < ns) x[i] = s[i];
        else if (ts_below(r, 8) == 0) x[i] = (uint16_t)(s[ts_below(r, (uint32_t)ns)] ^ (ts_below(r, 2) ? 0x8000 : 0));
        else x[i] = (uint16_t)ts_next(r);
    }
}

size_t kt_count_mismatches(const char *what, const void *got, const void *expected, size_t n,
                           size_t elem_size)
{
    size_t bad = 0;
    const unsigned char *g = got, *e = expected;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(g + i * elem_size, e + i * elem_size, elem_size) == 0) continue;
        if (bad < 8) {
            uint64_t gv = 0, ev = 0;
            memcpy(&gv, g + i * elem_size, elem_size);
            memcpy(&ev, e + i * elem_size, elem_size);
            printf("%s[%zu]: got 0x%0*llx expected 0x%0*llx\n", what, i, (int)(2 * elem_size),
                   (unsigned long long)gv, (int)(2 * elem_size), (unsigned long long)ev);
        }
        bad++;
    }
    if (bad > 8) printf("%s: %zu mismatches in all\n", what, bad);
    return bad;
}
