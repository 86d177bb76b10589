/* kt.h: what the kernels/ tests share.
 *
 *   - opening the backends (a gpu_* program exits 77 when cuda cannot open),
 *     and a tensor held on both of them;
 *   - guarded buffers: backend memory with sentinel bytes on both sides, so
 *     a kernel that writes out of bounds fails its test;
 *   - elements as uint32_t bits on the host (fp16/bf16 in the low half),
 *     their values and roundings through the emulator's public API, and
 *     the corner-reaching operands to fill them with;
 *   - comparisons: bitwise with the first mismatches printed, within a
 *     bound with NaN and the sign of infinities checked exactly, in ulps;
 *   - the GEMM compute types as ak_gemm and ak_conv2d round their inputs;
 *   - bad-argument checks: the code and the message.
 * Helpers shared by one op's tests (test_<op>*.c, gpu_cases_<op>.c) only
 * live in ref_<op>.c; finite differences in kt_fd.c, lists of tensors in
 * kt_tlist.c.  Everything here is host code and independent of kernels/'s
 * element code: the tests compare against it.
 */
#ifndef AMPSCOPE_TESTS_KT_H
#define AMPSCOPE_TESTS_KT_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "test_support.h"

/* ---- backends -------------------------------------------------------------------- */
/* The cpu backend (fails the test if it cannot open). */
ak_backend *kt_open_cpu(void);
/* The cuda backend, or NULL when it cannot open (prints why). */
ak_backend *kt_open_cuda(void);
/* For a gpu_* program's main(): exits 77 when cuda cannot open. */
void kt_require_cuda_or_skip(void);
/* Both backends for a gpu_* test (fails the test if cuda does not open). */
void kt_open_both(ak_backend **cpu, ak_backend **gpu);
void kt_close_both(ak_backend *cpu, ak_backend *gpu);
/* The same around each test of tc (a checked fixture, so in the test's own
 * process): *cpu and *gpu are open while a test runs. */
void kt_open_both_around(TCase *tc, ak_backend **cpu, ak_backend **gpu);

/* ---- guarded buffers ------------------------------------------------------------- */
/* Backend memory for n elements of dtype with KT_GUARD sentinel bytes on
 * each side; t is the usable tensor. */
#define KT_GUARD    256
#define KT_SENTINEL 0xA5
typedef struct kt_buf {
    ak_backend *b;
    unsigned char *base; /* start of the allocation (guard included) */
    size_t bytes;        /* usable bytes */
    ak_tensor t;
} kt_buf;
kt_buf kt_buf_alloc(ak_backend *b, size_t n, ak_dtype dtype);
void kt_buf_upload(kt_buf *buf, const void *host); /* host: n elements */
void kt_buf_download(kt_buf *buf, void *host);     /* host: n elements */
float kt_buf_get_f32(kt_buf *buf);                 /* a one-element fp32 buffer */
bool kt_buf_guards_ok(kt_buf *buf);                /* the sentinels are intact */
void kt_buf_free(kt_buf *buf);
/* The buffer's elements from / into one uint32_t of bits each (nothing
 * happens for an empty tensor, so a kt_buf of ak_tensor_none() may pass). */
void kt_buf_put(kt_buf *buf, const uint32_t *bits);
void kt_buf_get(kt_buf *buf, uint32_t *bits);

/* One tensor on the cpu (c) and the cuda (g) backend, for gpu_* tests. */
typedef struct kt_twin {
    kt_buf c, g;
} kt_twin;
kt_twin kt_twin_alloc(ak_backend *cpu, ak_backend *gpu, size_t n, ak_dtype dtype);
void kt_twin_upload(kt_twin *t, const void *host); /* the same n elements to both */
void kt_twin_put(kt_twin *t, const uint32_t *bits);
void kt_twin_free(kt_twin *t); /* fails the test if a guard was overwritten */
/* Downloads both copies and counts the elements whose bits differ, the
 * first few printed as kt_count_mismatches does (cuda's as "got"). */
size_t kt_twin_mismatches(const char *what, kt_twin *t);

/* Small structs (results, scalars) in backend memory. */
void *kt_dev_alloc(ak_backend *b, size_t bytes); /* zeroed */
void kt_dev_put(ak_backend *b, void *dst, const void *host, size_t bytes);
void kt_dev_get(ak_backend *b, void *host, const void *src, size_t bytes);
void kt_dev_free(ak_backend *b, void *p);

/* ---- elements on the host ----------------------------------------------------------- */
/* fp16, bf16, fp32: the order the tests sweep dtypes in. */
extern const ak_dtype kt_dtypes[3];

uint32_t kt_f32_bits(float f);
float kt_f32_of(uint32_t bits);

/* The exact value of an element of dt (the emulator's fpe_<dt>_to_f64). */
double kt_value(ak_dtype dt, uint32_t bits);
/* d rounded to dt to nearest even (fpe_f64_to_<dt>); a NaN becomes dt's
 * default NaN, as the ops write the NaNs they make. */
uint32_t kt_from_f64(ak_dtype dt, double d);
/* The default NaN of dt (x86: sign set, quiet), by hand. */
uint32_t kt_default_nan(ak_dtype dt);
/* A quiet NaN of dt with a payload, to fill what an op must overwrite or
 * must not read. */
uint32_t kt_marker_nan(ak_dtype dt);
/* Whether bits is a NaN of dt (fpe_<fmt>_isnan). */
bool kt_is_nan(ak_dtype dt, uint32_t bits);
/* To fp32 (exact from fp16/bf16) and from fp32 in env's mode. */
uint32_t kt_to_f32(ak_dtype from, uint32_t bits);
uint32_t kt_from_f32(fpe_env *env, ak_dtype to, uint32_t bits);
/* An element converted to another dtype, to nearest even (as ak_cast). */
uint32_t kt_convert(ak_dtype from, ak_dtype to, uint32_t bits);
/* a + b (dtypes da, db), the exact sum rounded once to dy, a's NaN first:
 * the emulator's fpe_<fmt>_add(a, b) for equal dtypes; for an fp32 result
 * the fp32 add of the widened operands (exact); otherwise the double sum
 * when TwoSum shows it exact, else the fp32 add rounded to odd and then to
 * dy, which rounds as the exact sum would (24 >= p + 2 bits, Boldo &
 * Melquiond).  The reference of ak_accumulate and ak_add. */
uint32_t kt_ref_add(ak_dtype dy, ak_dtype da, ak_dtype db, uint32_t a, uint32_t b);
/* n zeroed host elements (one more, so that n may be 0); fails the test
 * when out of memory. */
uint32_t *kt_bits_alloc(size_t n);

/* One unit in the last place of dt at |x| (the subnormal spacing below the
 * normal range). */
double kt_ulp(ak_dtype dt, double x);
/* How many representable steps of dt lie between two non-NaN elements
 * (-0 and +0 are one point; an infinity is one step past the largest
 * finite value). */
int64_t kt_ulp_distance(ak_dtype dt, uint32_t a, uint32_t b);

/* Whether a and b agree: both NaN or neither; where either is infinite,
 * the same infinity; else |a - b| <= bound.  Symmetric, so it serves for a
 * result against a reference and for cuda against cpu. */
bool kt_agree_within(double a, double b, double bound);

/* ---- operands ------------------------------------------------------------------------- */
/* n fp32 bit patterns: a mix of uniformly random patterns, every special
 * (zeros, infinities, quiet and signaling NaNs, min/max subnormal and
 * normal), values at and next to the fp16/bf16 rounding boundaries
 * (overflow threshold, min subnormal/2, ties) and values spread over every
 * binade.  Deterministic in the generator's state. */
void kt_fill_f32_bits(ts_rng *r, uint32_t *x, size_t n);
/* n 16-bit patterns of fmt (FPE_FMT_F16 or FPE_FMT_BF16), likewise. */
void kt_fill_u16_bits(ts_rng *r, fpe_format_id fmt, uint16_t *x, size_t n);
/* The same mixes for any dtype: one uint32_t per element, or packed. */
void kt_fill_bits(ts_rng *r, ak_dtype dt, uint32_t *x, size_t n);
void kt_fill_packed(ts_rng *r, ak_dtype dt, void *x, size_t n);
/* n ordinary values: uniform in [-scale, scale], rounded to dt. */
void kt_fill_values(ts_rng *r, ak_dtype dt, uint32_t *x, size_t n, double scale);

/* ---- rounding ------------------------------------------------------------------------- */
ak_rounding kt_rounding(fpe_round mode, uint64_t seed, uint32_t stream, uint64_t index);
/* kernels.h's environment for element i of an op called with r: the
 * defaults with r's mode, seed and stream, and random index r->index + i. */
fpe_env kt_env_of(const ak_rounding *r, uint64_t i);

/* ---- GEMM compute types (ak_gemm, and ak_conv2d through it) ----------------------------- */
/* A supported pairing: A and B (x, w, dy) dtype, C (y, dw) dtype, compute type. */
typedef struct kt_pairing {
    ak_dtype in, out;
    ak_compute k;
} kt_pairing;
#define KT_NPAIRINGS 9
extern const kt_pairing kt_pairings[KT_NPAIRINGS];

/* tf32 as kernels/elem/gemm.h documents it, written independently: 10
 * fraction bits, fp32's exponent range with a 2^-136 quantum below 2^-126,
 * to nearest even (rint), past the largest value to infinity. */
double kt_tf32_round(double v);
/* An fp32 value as compute type k multiplies it. */
double kt_compute_input(ak_compute k, double v);
/* The relative error of a product of two inputs rounded by a fast type,
 * 2 2^-f + 2^-2f (f = 10 fp16/tf32, 7 bf16); 0 for the exact types. */
double kt_compute_input_error(ak_compute k);
/* The unit roundoff of k's accumulation: 2^-11 for 16F, else 2^-24. */
double kt_compute_unit(ak_compute k);
/* gamma_n = n u / (1 - n u), the bound of n roundings of unit u. */
double kt_gamma(double n, double u);

/* ---- checks --------------------------------------------------------------------------- */
/* Counts elements whose bytes differ (elem_size 2, 4 or 8), printing the
 * first few as "what[i]: got 0x.. expected 0x..". */
size_t kt_count_mismatches(const char *what, const void *got, const void *expected, size_t n,
                           size_t elem_size);
/* Counts elements of dt whose bits differ, printing the first few as
 * "what (dtype)[i]: got 0x.. expected 0x..". */
size_t kt_bits_mismatches(const char *what, ak_dtype dt, const uint32_t *got,
                          const uint32_t *expected, size_t n);

/* A call that must fail: its return code must be `code` and the backend's
 * message must start with prefix (unless NULL) and contain text.  Failures
 * name this file and line. */
#define KT_EXPECT_ERROR(b, call, code, prefix, text)                                               \
    kt_expect_error_at(__FILE__, __LINE__, (b), (call), (code), (prefix), (text))
void kt_expect_error_at(const char *file, int line, ak_backend *b, int rc, int code,
                        const char *prefix, const char *text);

#endif
