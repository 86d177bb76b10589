/* kt.h: what the kernels/ tests share.
 *
 *   - opening the backends (a gpu_* program exits 77 when cuda cannot open);
 *   - guarded buffers: backend memory with sentinel bytes on both sides, so
 *     a kernel that writes out of bounds fails its test;
 *   - operands that reach the corners of the formats;
 *   - bitwise comparison that prints the first mismatches in full.
 */
#ifndef AMPSCOPE_TESTS_KT_H
#define AMPSCOPE_TESTS_KT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "test_support.h"

/* The cpu backend (fails the test if it cannot open). */
ak_backend *kt_open_cpu(void);
/* The cuda backend, or NULL when it cannot open (prints why). */
ak_backend *kt_open_cuda(void);
/* For a gpu_* program's main(): exits 77 when cuda cannot open. */
void kt_require_cuda_or_skip(void);

/* Backend memory for n elements of dtype with KT_GUARD sentinel bytes on
 * each side; t is the usable tensor. */
#define KT_GUARD 256
#define KT_SENTINEL 0xA5
typedef struct kt_buf {
    ak_backend *b;
    unsigned char *base; /* start of the allocation (guard included) */
    size_t bytes;        /* usable bytes */
    ak_tensor t;
} kt_buf;
kt_buf kt_buf_alloc(ak_backend *b, size_t n, ak_dtype dtype);
void kt_buf_upload(kt_buf *buf, const void *host);   /* host: n elements */
void kt_buf_download(kt_buf *buf, void *host);        /* host: n elements */
bool kt_buf_guards_ok(kt_buf *buf);                   /* the sentinels are intact */
void kt_buf_free(kt_buf *buf);

/* Small structs (results, scalars) in backend memory. */
void *kt_dev_alloc(ak_backend *b, size_t bytes);   /* zeroed */
void kt_dev_put(ak_backend *b, void *dst, const void *host, size_t bytes);
void kt_dev_get(ak_backend *b, void *host, const void *src, size_t bytes);
void kt_dev_free(ak_backend *b, void *p);

/* n fp32 bit patterns: a mix of uniformly random patterns, every special
 * (zeros, infinities, quiet and signaling NaNs, min/max subnormal and
 * normal), values at and next to the fp16/bf16 rounding boundaries
 * (overflow threshold, min subnormal/2, ties) and values spread over every
 * binade.  Deterministic in the generator's state. */
void kt_fill_f32_bits(ts_rng *r, uint32_t *x, size_t n);
/* n 16-bit patterns of fmt (FPE_FMT_F16 or FPE_FMT_BF16), likewise. */
void kt_fill_u16_bits(ts_rng *r, fpe_format_id fmt, uint16_t *x, size_t n);

/* Counts elements whose bytes differ (elem_size 2, 4 or 8), printing the
 * first few as "what[i]: got 0x.. expected 0x..". */
size_t kt_count_mismatches(const char *what, const void *got, const void *expected, size_t n,
                           size_t elem_size);

#endif
