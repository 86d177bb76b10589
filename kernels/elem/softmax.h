/* elem/softmax.h: one row of softmax / log-softmax, forward and backward,
 * host and device.
 *
 * cpu/softmax.c and cuda/softmax.cu run these same functions on a whole
 * row, in index order (one row per GPU thread), so the two backends agree
 * bit for bit.  Every intermediate is a double holding a value of the acc
 * format: an operation is computed in double and rounded once to acc.  For
 * fp32 acc that is the hardware's conversion of the double (nearest even):
 * a product of two values of at most 24 bits is exact in double, and a sum
 * or quotient of two fp32 values rounded to double and then to fp32 is the
 * fp32 operation (double rounding is innocuous at 53 >= 2 x 24 + 2 bits).
 * For fp16/bf16 acc the emulator rounds (ak_round_sum for sums, whose
 * operands may be wider than acc: an fp32 dy).  exp and log are this
 * header's own double code (ak_gelu_exp, ak_softmax_log: + - * / only, no
 * contraction: CMakeLists.txt), rounded once to acc.  NaNs are written as
 * the default NaN of the output's format.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_SOFTMAX_H
#define AMPSCOPE_KERNELS_ELEM_SOFTMAX_H

#include "gelu.h" /* ak_gelu_exp, the shared double exp */

#define AK_SOFTMAX_LN2_HI 0.6931471805598903    /* ln 2, 11 trailing zero bits */
#define AK_SOFTMAX_LN2_LO 5.497923018708371e-14 /* ln 2 - AK_SOFTMAX_LN2_HI */
#define AK_SOFTMAX_SQRT2  1.4142135623730951

FPE_INLINE double ak_softmax_inf(void) { return fpe_f64_from_bits(0x7FF0000000000000ull); }

/* log(s) for s >= 2^-1022 (and +inf, NaN): s = m 2^k with m in [sqrt(1/2),
 * sqrt 2), log m = 2 atanh(t), t = (m - 1) / (m + 1), |t| <= 0.1716, by its
 * series to t^25 (remainder below 2^-60 relative), plus k ln 2 in two parts
 * (k ln2_hi exact).  0 gives -inf; negative s a NaN. */
FPE_INLINE double ak_softmax_log(double s)
{
    if (s != s || s == ak_softmax_inf()) return s;
    if (s == 0.0) return -ak_softmax_inf();
    if (s < 0.0) return ak_layer_nan();
    const uint64_t u = fpe_f64_bits(s);
    int k = (int)(u >> 52) - 1023;
    double m = fpe_f64_from_bits((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
    if (m > AK_SOFTMAX_SQRT2) {
        m *= 0.5;
        k += 1;
    }
    const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
    double p = 0.0;
    for (int n = 12; n >= 0; n--)
        p = 1.0 / (double)(2 * n + 1) + t2 * p;
    const double kd = (double)k;
    return kd * AK_SOFTMAX_LN2_HI + (kd * AK_SOFTMAX_LN2_LO + 2.0 * t * p);
}

/* v (a double) rounded once to acc, to nearest even, as a double. */
FPE_INLINE double ak_softmax_round(fpe_format_id acc, double v)
{
    if (acc == FPE_FMT_F32) return (double)(float)v;
    fpe_env env = fpe_env_default();
    return ak_elem_value(acc, fpe_from_f64_k(acc, &env, v));
}

/* a + b rounded once to acc (a and b: values of at most 24 bits). */
FPE_INLINE double ak_softmax_add(fpe_format_id acc, double a, double b)
{
    if (acc == FPE_FMT_F32) return (double)(float)(a + b);
    fpe_env env = fpe_env_default();
    return ak_elem_value(acc, ak_round_sum(acc, &env, a, b));
}

/* The row's unmasked columns: all, or those j <= r % t of a causal block. */
FPE_INLINE size_t ak_softmax_valid(size_t cols, size_t causal_t, size_t r)
{
    return causal_t ? r % causal_t + 1 : cols;
}

/* What a row's loops need, by value (host and device). */
typedef struct ak_softmax_row_args {
    fpe_format_id acc;
    bool log;
    double scale;
    size_t cols, causal_t;
} ak_softmax_row_args;

/* x * scale rounded to acc. */
FPE_INLINE double ak_softmax_z(const ak_softmax_row_args *a, fpe_format_id fx, const void *x,
                               size_t i)
{
    return ak_softmax_round(a->acc, ak_load_value(fx, x, i) * a->scale);
}

/* Row r of the forward: y[r][j] from x[r][j].  buf (cols doubles, or NULL:
 * recompute) keeps exp(x - max) (log: x - max) between the passes. */
FPE_INLINE void ak_softmax_row(const ak_softmax_row_args *a, fpe_format_id fy, fpe_format_id fx,
                               void *y, const void *x, size_t r, double *buf)
{
    const fpe_format_id acc = a->acc;
    const size_t base = r * a->cols, valid = ak_softmax_valid(a->cols, a->causal_t, r);
    /* the max: a NaN is kept once seen */
    double m = -ak_softmax_inf();
    for (size_t j = 0; j < valid; j++) {
        const double z = ak_softmax_z(a, fx, x, base + j);
        if (m == m && !(z <= m)) m = z;
    }
    double s = 0.0;
    for (size_t j = 0; j < valid; j++) {
        const double d = ak_softmax_add(acc, ak_softmax_z(a, fx, x, base + j), -m);
        const double e = ak_softmax_round(acc, ak_gelu_exp(d));
        if (buf) buf[j] = a->log ? d : e;
        s = ak_softmax_add(acc, s, e);
    }
    const double l = a->log ? ak_softmax_round(acc, ak_softmax_log(s)) : 0.0;
    for (size_t j = 0; j < valid; j++) {
        double v = buf ? buf[j] : 0.0;
        if (!buf) {
            const double d = ak_softmax_add(acc, ak_softmax_z(a, fx, x, base + j), -m);
            v = a->log ? d : ak_softmax_round(acc, ak_gelu_exp(d));
        }
        v = a->log ? ak_softmax_add(acc, v, -l) : ak_softmax_round(acc, v / s);
        ak_store_bits(fy, y, base + j, ak_layer_from_f64(fy, v));
    }
    const uint32_t masked = ak_layer_from_f64(fy, a->log ? -ak_softmax_inf() : 0.0);
    for (size_t j = valid; j < a->cols; j++)
        ak_store_bits(fy, y, base + j, masked);
}

/* Row r of the backward: dx[r][j] from dy[r][j] and y[r][j] (dx may be dy:
 * element j is read before it is written, and the sum is complete before
 * the first write). */
FPE_INLINE void ak_softmax_backward_row(const ak_softmax_row_args *a, fpe_format_id fdx,
                                        fpe_format_id fdy, fpe_format_id fy, void *dx,
                                        const void *dy, const void *y, size_t r)
{
    const fpe_format_id acc = a->acc;
    const size_t base = r * a->cols, valid = ak_softmax_valid(a->cols, a->causal_t, r);
    /* softmax: sum(dy * y); log-softmax: sum(dy), in index order */
    double sum = 0.0;
    for (size_t j = 0; j < valid; j++) {
        const double g = ak_load_value(fdy, dy, base + j);
        const double t = a->log ? g : ak_softmax_round(acc, g * ak_load_value(fy, y, base + j));
        sum = ak_softmax_add(acc, sum, t);
    }
    for (size_t j = 0; j < valid; j++) {
        const double g = ak_load_value(fdy, dy, base + j), yv = ak_load_value(fy, y, base + j);
        double v;
        if (a->log) {
            const double p = ak_softmax_round(acc, ak_gelu_exp(yv));
            v = ak_softmax_add(acc, g, -ak_softmax_round(acc, p * sum));
        } else {
            v = ak_softmax_round(acc, yv * ak_softmax_add(acc, g, -sum));
        }
        v = ak_softmax_round(acc, v * a->scale);
        ak_store_bits(fdx, dx, base + j, ak_layer_from_f64(fdx, v));
    }
    const uint32_t zero = ak_layer_from_f64(fdx, 0.0);
    for (size_t j = valid; j < a->cols; j++)
        ak_store_bits(fdx, dx, base + j, zero);
}

#endif
