/* bench_scalar_before.c: the scalar div, sqrt, mulAdd, mul and add of emulate/ as they were before
 * issue 19, kept callable as the "before" baseline of `ampscope bench emu --scalar`
 * (bench_scalar.c).
 *
 * A copy of the old code, not a reference for correctness (the tests hold the library to
 * MPFR): every input is unpacked, the special values are sorted out, and the exact or sticky
 * result (a two-step long division, an integer square root, an aligned sum) goes to
 * fpe_round_pack.  mul and add had binary64 fast paths already (the product of normal operands,
 * the sum of normal operands at most 52 - p binades apart; the binary64 rounding of five IEEE
 * modes, odd to the general path), copied here with their rounding as it was.  The public wrappers
 * are as they were: one out-of-line function per operation and format that steps the random index.
 */
#include <math.h>

#include "bench_scalar.h"
#include "fpe_ops.h"

static inline __attribute__((always_inline)) uint32_t before_div_k(fpe_format_id f, fpe_env *env,
                                                                   uint32_t a, uint32_t b)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b);
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, b);
    const bool sign = ua.sign ^ ub.sign;
    const uint32_t sbit = sign ? fk_sign(f) : 0;
    if (ua.cls == FPE_CLS_INF) {
        if (ub.cls == FPE_CLS_INF) return fpe_invalid(f, env);
        return sbit | fk_inf(f);
    }
    if (ub.cls == FPE_CLS_INF) return sbit;
    if (ub.cls == FPE_CLS_ZERO) {
        if (ua.cls == FPE_CLS_ZERO) return fpe_invalid(f, env);
        env->flags |= FPE_FLAG_INFINITE;
        return sbit | fk_inf(f);
    }
    if (ua.cls == FPE_CLS_ZERO) return sbit;
    const int la = FPE_CLZ64(ua.sig) - 40, lb = FPE_CLZ64(ub.sig) - 40;
    const uint64_t x = ua.sig << la, y = ub.sig << lb;
    const uint64_t n1 = x << 31, q1 = n1 / y, r1 = n1 - q1 * y;
    const uint64_t n2 = r1 << 31, q2 = n2 / y, r2 = n2 - q2 * y;
    const uint64_t q = ((q1 << 31) + q2) | (uint64_t)(r2 != 0);
    return fpe_round_pack(f, env, sign, (ua.exp - la) - (ub.exp - lb) - 62, q);
}

static inline __attribute__((always_inline)) uint64_t before_isqrt62(uint64_t r)
{
    uint64_t s = (uint64_t)sqrt((double)r);
    while (s * s > r)
        s--;
    while ((s + 1) * (s + 1) <= r)
        s++;
    return s;
}

static inline __attribute__((always_inline)) uint64_t before_isqrt124(unsigned __int128 r,
                                                                      bool *exact)
{
    unsigned __int128 root = 0, bit = (unsigned __int128)1 << 122;
    while (bit > r)
        bit >>= 2;
    while (bit != 0) {
        if (r >= root + bit) {
            r -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    *exact = r == 0;
    return (uint64_t)root;
}

static inline __attribute__((always_inline)) uint32_t before_sqrt_k(fpe_format_id f, fpe_env *env,
                                                                    uint32_t a)
{
    const fpe_unp ua = fpe_unpack(f, env, a);
    if (ua.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, a, 0);
    if (ua.cls == FPE_CLS_ZERO) return ua.sign ? fk_sign(f) : 0;
    if (ua.sign) return fpe_invalid(f, env);
    if (ua.cls == FPE_CLS_INF) return a;
    int l = FPE_CLZ64(ua.sig) - 2;
    int32_t e = ua.exp - l;
    if (e & 1) {
        l--;
        e++;
    }
    if (env->round >= FPE_SR_PROP) {
        bool exact;
        uint64_t root = before_isqrt124((unsigned __int128)(ua.sig << l) << 62, &exact);
        return fpe_round_pack(f, env, false, (e - 62) / 2, root | (uint64_t)!exact);
    }
    const uint64_t r = ua.sig << l;
    uint64_t s = before_isqrt62(r);
    s |= (uint64_t)(s * s != r);
    return fpe_round_pack(f, env, false, e / 2, s);
}

static inline __attribute__((always_inline)) uint32_t
before_mulAdd_k(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, uint32_t c)
{
    const fpe_unp ua = fpe_unpack(f, env, a), ub = fpe_unpack(f, env, b),
                  uc = fpe_unpack(f, env, c);
    const uint32_t sign_bit = fk_sign(f);
    if (ua.cls == FPE_CLS_NAN || ub.cls == FPE_CLS_NAN) {
        const uint32_t ab = fpe_propagate_nan(f, env, a, b);
        return fpe_propagate_nan(f, env, ab, c);
    }
    const bool sp = ua.sign ^ ub.sign;
    if (ua.cls == FPE_CLS_INF || ub.cls == FPE_CLS_INF) {
        if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) {
            const uint32_t nan = fpe_invalid(f, env);
            if (fpe_issnan_k(f, c)) env->flags |= FPE_FLAG_INVALID;
            return nan;
        }
        if (uc.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, c, 0);
        if (uc.cls == FPE_CLS_INF && uc.sign != sp) return fpe_invalid(f, env);
        return (sp ? sign_bit : 0) | fk_inf(f);
    }
    if (uc.cls == FPE_CLS_NAN) return fpe_propagate_nan(f, env, c, 0);
    if (uc.cls == FPE_CLS_INF) return c;
    if (ua.cls == FPE_CLS_ZERO || ub.cls == FPE_CLS_ZERO) {
        if (uc.cls == FPE_CLS_ZERO)
            return sp == uc.sign ? (sp ? sign_bit : 0) : fpe_exact_zero_sum(f, env);
        return fpe_round_pack(f, env, uc.sign, uc.exp, uc.sig);
    }
    uint64_t prod = ua.sig * ub.sig;
    int32_t ep = ua.exp + ub.exp;
    if (uc.cls == FPE_CLS_ZERO) return fpe_round_pack(f, env, sp, ep, prod);
    int l = FPE_CLZ64(prod) - 2;
    uint64_t x = prod << l;
    int32_t ex = ep - l;
    l = FPE_CLZ64(uc.sig) - 2;
    uint64_t y = uc.sig << l;
    int32_t ey = uc.exp - l;
    return fpe_add_terms(f, env, sp, ex, x, uc.sign, ey, y);
}

/* fpe_round_f64_fast as it was: the five IEEE modes */
static inline __attribute__((always_inline)) bool
before_round_f64_fast(fpe_format_id f, fpe_env *env, uint64_t u, uint32_t *out)
{
    const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    const int32_t E = (int32_t)(mag >> 52) - 1023;
    if (E < fk_emin(f) || E >= fk_emax(f)) return false;
    const int shift = 52 - fk_fbits(f);
    const bool sign = u >> 63;
    const uint64_t h = mag - ((uint64_t)(1023 - fk_bias(f)) << 52);
    const uint64_t ulp_m1 = ((uint64_t)1 << shift) - 1;
    const uint64_t rem = h & ulp_m1;
    const int mode = env->round;
    if (mode > FPE_RU) return false;
    env->flags |= rem != 0 ? FPE_FLAG_INEXACT : 0;
    const uint64_t half = (uint64_t)1 << (shift - 1);
    const uint64_t away = mode == FPE_RD ? sign : mode == FPE_RU ? !sign : 0;
    const uint64_t bias = mode == FPE_RNE   ? half - 1 + ((h >> shift) & 1)
                          : mode == FPE_RNA ? half
                                            : ((uint64_t)0 - away) & ulp_m1;
    *out = (sign ? fk_sign(f) : 0) | (uint32_t)((h + bias) >> shift);
    return true;
}

static __attribute__((noinline)) uint32_t before_mul_general_next(fpe_format_id f, fpe_env *env,
                                                                  uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_mul_general(f, env, a, b));
}

static __attribute__((noinline)) uint32_t before_add_general_next(fpe_format_id f, fpe_env *env,
                                                                  uint32_t a, uint32_t b)
{
    FPE_NEXT_INDEX(env, fpe_add_general(f, env, a, b, false));
}

/* fpe_add_fast as it was: the sum exact in binary64, rounded in five modes */
static inline __attribute__((always_inline)) bool
before_add_fast(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b, uint32_t *r)
{
    if (!fk_is_normal(f, a) || !fk_is_normal(f, b)) return false;
    const uint32_t ea = fk_expfield(f, a), eb = fk_expfield(f, b);
    if ((ea > eb ? ea - eb : eb - ea) > (uint32_t)(52 - fk_p(f))) return false;
    const double x = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, a));
    const double y = fpe_f64_from_bits(fpe_normal_to_f64_bits(f, b));
    return before_round_f64_fast(f, env, fpe_f64_bits(x + y), r);
}

#define DEFINE(F, T, K)                                                                            \
    T bench_before_##F##_add(fpe_env *env, T a, T b)                                               \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (before_add_fast(K, env, a, b, &r)) {                                                   \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)before_add_general_next(K, env, a, b);                                           \
    }                                                                                              \
    T bench_before_##F##_mul(fpe_env *env, T a, T b)                                               \
    {                                                                                              \
        uint32_t r;                                                                                \
        if (fk_is_normal(K, a) && fk_is_normal(K, b) &&                                            \
            before_round_f64_fast(K, env,                                                          \
                                  fpe_f64_bits(fpe_f64_from_bits(fpe_normal_to_f64_bits(K, a)) *   \
                                               fpe_f64_from_bits(fpe_normal_to_f64_bits(K, b))),   \
                                  &r)) {                                                           \
            env->sr_index++;                                                                       \
            return (T)r;                                                                           \
        }                                                                                          \
        return (T)before_mul_general_next(K, env, a, b);                                           \
    }                                                                                              \
    T bench_before_##F##_div(fpe_env *env, T a, T b)                                               \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)before_div_k(K, env, a, b));                                        \
    }                                                                                              \
    T bench_before_##F##_sqrt(fpe_env *env, T a)                                                   \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)before_sqrt_k(K, env, a));                                          \
    }                                                                                              \
    T bench_before_##F##_mulAdd(fpe_env *env, T a, T b, T c)                                       \
    {                                                                                              \
        FPE_NEXT_INDEX(env, (T)before_mulAdd_k(K, env, a, b, c));                                  \
    }
FPE_FOR_FORMATS(DEFINE)
