/* fpe_internal.h: the machinery every operation shares.
 *
 * A format is named by its fpe_format_id; the constants below fold away when
 * an operation is instantiated for one format (all helpers are forced
 * inline).  Values move through three stages:
 *   unpack  bits -> class + sign + integer significand + exponent
 *           (a finite nonzero value is sig * 2^exp, exactly);
 *   compute the exact result, or a significand whose lowest bit is "sticky"
 *           (jammed: it is set when nonzero bits were shifted out below it);
 *   round   fpe_round_pack(), the single rounding point of every format.
 * Everything is plain integer arithmetic and compiles for the GPU too.
 *
 * Names: fpe_ is the module's prefix (public in fpe.h, internal here);
 * fk_<name>(fmt) are the format constants and bit-field helpers ("format
 * kit": fk_p, fk_bias, fk_expfield ...), folded to constants per format; a
 * _k suffix marks the format-generic body of an operation (fpe_add_k(K, ...),
 * K a compile-time fpe_format_id) that add.c, mul.c ... instantiate three
 * times, and that kernels/elem/ calls with its own K. */
#ifndef AMPSCOPE_FPE_INTERNAL_H
#define AMPSCOPE_FPE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "fpe.h"
#include "philox.h"

#if defined(__CUDA_ARCH__)
#define FPE_CLZ64(x) __clzll((long long)(x))
#else
#define FPE_CLZ64(x) __builtin_clzll(x)
#endif

/* ---- format constants -------------------------------------------------- */
FPE_INLINE int fk_p(fpe_format_id f) { return f == FPE_FMT_F16 ? 11 : f == FPE_FMT_BF16 ? 8 : 24; }
FPE_INLINE int fk_ebits(fpe_format_id f) { return f == FPE_FMT_F16 ? 5 : 8; }
FPE_INLINE int fk_bits(fpe_format_id f) { return f == FPE_FMT_F32 ? 32 : 16; }
FPE_INLINE int fk_fbits(fpe_format_id f) { return fk_p(f) - 1; }
FPE_INLINE int fk_bias(fpe_format_id f) { return (1 << (fk_ebits(f) - 1)) - 1; }
FPE_INLINE int fk_emin(fpe_format_id f) { return 1 - fk_bias(f); }
FPE_INLINE int fk_emax(fpe_format_id f) { return fk_bias(f); }
FPE_INLINE uint32_t fk_sign(fpe_format_id f) { return (uint32_t)1 << (fk_bits(f) - 1); }
FPE_INLINE uint32_t fk_expfield_max(fpe_format_id f) { return ((uint32_t)1 << fk_ebits(f)) - 1; }
FPE_INLINE uint32_t fk_frac_mask(fpe_format_id f) { return ((uint32_t)1 << fk_fbits(f)) - 1; }
FPE_INLINE uint32_t fk_quiet(fpe_format_id f) { return (uint32_t)1 << (fk_fbits(f) - 1); }
FPE_INLINE uint32_t fk_inf(fpe_format_id f) { return fk_expfield_max(f) << fk_fbits(f); }
FPE_INLINE uint32_t fk_max(fpe_format_id f) { return fk_inf(f) - 1; }

/* ---- primitives --------------------------------------------------------- */
/* a >> dist, with the lowest bit set if any 1 bit was shifted out.
 * Any dist is allowed (0 returns a; >= 64 returns a != 0). */
FPE_INLINE uint64_t fpe_shr_jam64(uint64_t a, uint32_t dist)
{
    if (dist == 0) return a;
    if (dist < 64) return (a >> dist) | (uint64_t)((a << (64 - dist)) != 0);
    return a != 0;
}

/* Out of line: the scalar rounding paths stay small. */
FPE_NOINLINE uint32_t fpe_sr_word(const fpe_env *env)
{
    return fpe_random_bits_inline(env->sr_seed, env->sr_stream, env->sr_index);
}

/* Should |kept| be incremented by one unit?  rem holds the discarded low
 * `shift` bits (1 <= shift <= 63); rnd is the random word (SR modes only). */
FPE_INLINE bool fpe_round_increment(int mode, bool sign, uint64_t kept, uint64_t rem, int shift,
                                    uint32_t rnd)
{
    const uint64_t half = (uint64_t)1 << (shift - 1);
    /* bitwise, not short-circuit: these depend on the data and must not
     * become branches */
    switch (mode) {
    case FPE_RNE: return (rem > half) | ((rem == half) & (bool)(kept & 1));
    case FPE_RNA: return rem >= half;
    case FPE_RD: return sign & (rem != 0);
    case FPE_RU: return !sign & (rem != 0);
    case FPE_SR_PROP: {
        /* the top 32 discarded bits: the distance in units of 2^-32 ulp */
        uint32_t frac32 =
            shift >= 32 ? (uint32_t)(rem >> (shift - 32)) : (uint32_t)(rem << (32 - shift));
        return rnd < frac32;
    }
    case FPE_SR_EQUAL: return (rem != 0) & (bool)(rnd >> 31);
    default: return false; /* RZ, RO */
    }
}

/* ---- unpacking ---------------------------------------------------------- */
enum { FPE_CLS_ZERO = 0, FPE_CLS_FINITE = 1, FPE_CLS_INF = 2, FPE_CLS_NAN = 3 };

typedef struct fpe_unp {
    int cls;
    bool sign;
    int32_t exp;  /* finite: value = sig * 2^exp */
    uint64_t sig; /* finite: 0 < sig < 2^p */
} fpe_unp;

FPE_INLINE fpe_unp fpe_unpack(fpe_format_id f, const fpe_env *env, uint32_t a)
{
    fpe_unp u;
    const int fb = fk_fbits(f);
    const uint32_t ef = (a >> fb) & fk_expfield_max(f), frac = a & fk_frac_mask(f);
    u.sign = (a >> (fk_bits(f) - 1)) & 1;
    u.exp = 0;
    u.sig = 0;
    if (ef == fk_expfield_max(f)) {
        u.cls = frac ? FPE_CLS_NAN : FPE_CLS_INF;
    } else if (ef == 0) {
        if (frac == 0 || env->daz) {
            u.cls = FPE_CLS_ZERO; /* denormals-are-zero keeps the sign */
        } else {
            u.cls = FPE_CLS_FINITE;
            u.sig = frac;
            u.exp = fk_emin(f) - fb;
        }
    } else {
        u.cls = FPE_CLS_FINITE;
        u.sig = frac | ((uint32_t)1 << fb);
        u.exp = (int32_t)ef - fk_bias(f) - fb;
    }
    return u;
}

FPE_INLINE bool fpe_isnan_k(fpe_format_id f, uint32_t a)
{
    return ((a >> fk_fbits(f)) & fk_expfield_max(f)) == fk_expfield_max(f) && (a & fk_frac_mask(f));
}
FPE_INLINE bool fpe_issnan_k(fpe_format_id f, uint32_t a)
{
    return fpe_isnan_k(f, a) && !(a & fk_quiet(f));
}

/* ---- NaN specialization -------------------------------------------------- */
/* The NaN an invalid operation produces. */
FPE_INLINE uint32_t fpe_default_nan(fpe_format_id f, const fpe_env *env)
{
    if (env->nan != FPE_NAN_X86) return fk_sign(f) - 1; /* 0x7FFF, 0x7FFFFFFF */
    return fk_sign(f) | fk_inf(f) | fk_quiet(f);        /* 0xFE00, 0xFFC0, 0xFFC00000 */
}

/* Result of an operation with NaN operand(s) a and/or b (b = 0 for unary
 * operations): invalid if either is signaling; x86 returns the first NaN,
 * quieted. */
FPE_INLINE uint32_t fpe_propagate_nan(fpe_format_id f, fpe_env *env, uint32_t a, uint32_t b)
{
    if (fpe_issnan_k(f, a) || fpe_issnan_k(f, b)) env->flags |= FPE_FLAG_INVALID;
    if (env->nan != FPE_NAN_X86) return fk_sign(f) - 1;
    return (fpe_isnan_k(f, a) ? a : b) | fk_quiet(f);
}

FPE_INLINE uint32_t fpe_invalid(fpe_format_id f, fpe_env *env)
{
    env->flags |= FPE_FLAG_INVALID;
    return fpe_default_nan(f, env);
}

/* A NaN converted between formats keeps its sign and the top bits of its
 * payload ("common NaN": the fraction left-justified in 64 bits). */
FPE_INLINE uint64_t fpe_nan_payload(fpe_format_id f, uint32_t a)
{
    return (uint64_t)(a & fk_frac_mask(f)) << (64 - fk_fbits(f));
}
FPE_INLINE uint32_t fpe_nan_from_payload(fpe_format_id to, const fpe_env *env, bool sign,
                                         uint64_t payload)
{
    if (env->nan != FPE_NAN_X86) return fk_sign(to) - 1;
    return (sign ? fk_sign(to) : 0) | fk_inf(to) | fk_quiet(to) |
           (uint32_t)(payload >> (64 - fk_fbits(to)));
}

/* ---- the rounding point -------------------------------------------------- */
/* The result of an overflow in each mode: to nearest and stochastic go to
 * infinity; directed modes toward zero, and round-to-odd, stop at the largest
 * finite value. */
FPE_INLINE uint32_t fpe_overflow(fpe_format_id f, fpe_env *env, bool sign)
{
    const uint32_t sbit = sign ? fk_sign(f) : 0;
    env->flags |= FPE_FLAG_OVERFLOW | FPE_FLAG_INEXACT;
    switch (env->round) {
    case FPE_RZ:
    case FPE_RO: return sbit | fk_max(f);
    case FPE_RD: return sbit | (sign ? fk_inf(f) : fk_max(f));
    case FPE_RU: return sbit | (sign ? fk_max(f) : fk_inf(f));
    default: return sbit | fk_inf(f);
    }
}

/* Round (-1)^sign * sig * 2^exp to format f in env->round and pack it.
 * sig may be any 64-bit value; its lowest bit may be a sticky bit, provided
 * that it lies at least two places below the format's last kept bit (every
 * caller keeps >= 26 significant bits, so this holds).  Raises inexact,
 * underflow and overflow; flushes tiny results when env->ftz. */
FPE_INLINE uint32_t fpe_round_pack(fpe_format_id f, fpe_env *env, bool sign, int32_t exp,
                                   uint64_t sig)
{
    const int p = fk_p(f), emin = fk_emin(f), emax = fk_emax(f);
    const uint32_t sbit = sign ? fk_sign(f) : 0;
    const int mode = env->round;
    if (sig == 0) return sbit;

    /* normalise: leading one at bit 62, so value in [2^E, 2^(E+1)) */
    const int lz = FPE_CLZ64(sig);
    if (lz == 0) {
        sig = (sig >> 1) | (sig & 1);
        exp += 1;
    } else {
        sig <<= lz - 1;
        exp -= lz - 1;
    }
    const int32_t E = exp + 62;

    if (E > emax) return fpe_overflow(f, env, sign);

    int shift = 63 - p; /* bits below the last kept one, for a normal result */
    const bool tiny_before = E < emin;
    uint64_t s = sig;
    if (tiny_before) {
        int32_t extra = emin - E;
        if (shift + extra > 63) {
            s = fpe_shr_jam64(s, (uint32_t)(shift + extra - 63));
            shift = 63;
        } else {
            shift += extra;
        }
    }
    uint64_t kept = s >> shift;
    const uint64_t rem = s & (((uint64_t)1 << shift) - 1);
    uint32_t rnd = 0;
    if (rem != 0 && mode >= FPE_SR_PROP) rnd = fpe_sr_word(env);

    bool tiny = tiny_before;
    if (tiny_before && env->tininess == FPE_TININESS_AFTER && E == emin - 1) {
        /* tiny after rounding unless rounding with an unbounded exponent
         * carries up to 2^emin */
        const int s0 = 63 - p;
        const uint64_t kept0 = sig >> s0, rem0 = sig & (((uint64_t)1 << s0) - 1);
        if (kept0 == ((uint64_t)1 << p) - 1 &&
            fpe_round_increment(mode, sign, kept0, rem0, s0, rnd))
            tiny = false;
    }
    if (tiny && env->ftz) {
        env->flags |= FPE_FLAG_UNDERFLOW | FPE_FLAG_INEXACT;
        return sbit;
    }
    if (rem != 0) {
        env->flags |= tiny ? (FPE_FLAG_INEXACT | FPE_FLAG_UNDERFLOW) : FPE_FLAG_INEXACT;
        if (mode == FPE_RO)
            kept |= 1;
        else
            kept += fpe_round_increment(mode, sign, kept, rem, shift, rnd);
    }
    if (tiny_before) return sbit | (uint32_t)kept; /* a carry into bit p-1 makes it normal */
    if (E == emax && kept == ((uint64_t)1 << p)) return fpe_overflow(f, env, sign);
    /* exponent field E+bias, minus one because kept carries the hidden bit
     * (a carry to 2^p bumps the exponent correctly) */
    return sbit | ((((uint32_t)(E + fk_bias(f) - 1)) << (p - 1)) + (uint32_t)kept);
}

/* Round the nonnegative value sig * 2^-fracbits to an integer in env->round
 * (fracbits >= 1).  Sets *inexact; raises no flag. */
FPE_INLINE uint64_t fpe_round_to_integer(const fpe_env *env, bool sign, uint64_t sig,
                                         int32_t fracbits, bool *inexact)
{
    int shift = fracbits;
    if (shift > 62) {
        sig = fpe_shr_jam64(sig, (uint32_t)(shift - 62));
        shift = 62;
    }
    uint64_t kept = sig >> shift;
    const uint64_t rem = sig & (((uint64_t)1 << shift) - 1);
    *inexact = rem != 0;
    if (rem == 0) return kept;
    if (env->round == FPE_RO) return kept | 1;
    const uint32_t rnd = env->round >= FPE_SR_PROP ? fpe_sr_word(env) : 0;
    return kept + fpe_round_increment(env->round, sign, kept, rem, shift, rnd);
}

/* ---- binary32 and binary64 as bits ---------------------------------------- */
FPE_INLINE uint32_t fpe_f32_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.f = f;
    return v.u;
}
FPE_INLINE float fpe_f32_from_bits(uint32_t u)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.u = u;
    return v.f;
}
FPE_INLINE uint64_t fpe_f64_bits(double d)
{
    union {
        double d;
        uint64_t u;
    } v;
    v.d = d;
    return v.u;
}
FPE_INLINE double fpe_f64_from_bits(uint64_t u)
{
    union {
        double d;
        uint64_t u;
    } v;
    v.u = u;
    return v.d;
}

/* Exact widening of a finite nonzero sig * 2^exp (sig < 2^53) to binary64. */
FPE_INLINE uint64_t fpe_pack_f64_exact(bool sign, int32_t exp, uint64_t sig)
{
    const int lz = FPE_CLZ64(sig);
    sig <<= lz - 11; /* leading one at bit 52 */
    exp -= lz - 11;
    return ((uint64_t)sign << 63) | ((uint64_t)(exp + 52 + 1023) << 52) |
           (sig & (((uint64_t)1 << 52) - 1));
}

/* ---- the fast path --------------------------------------------------------
 * Most operands and results are normal numbers.  For them an add, subtract
 * or multiply is exact in binary64 (when the operands' exponents are close
 * enough for add), and rounding a normal binary64 to a normal result is a
 * few integer operations.  Callers try this first and fall back to the
 * general path (unpack, compute, fpe_round_pack) when it declines; the two
 * agree bit for bit, which the tests check on every input class. */
FPE_INLINE uint32_t fk_expfield(fpe_format_id f, uint32_t a)
{
    return (a >> fk_fbits(f)) & fk_expfield_max(f);
}
FPE_INLINE bool fk_is_normal(fpe_format_id f, uint32_t a)
{
    return fk_expfield(f, a) - 1 < fk_expfield_max(f) - 1; /* 1 <= field <= max-1 */
}

/* A normal value of format f, exactly, as binary64 bits. */
FPE_INLINE uint64_t fpe_normal_to_f64_bits(fpe_format_id f, uint32_t a)
{
    const uint64_t sign = (uint64_t)(a >> (fk_bits(f) - 1)) << 63;
    const uint64_t mag = a & (fk_sign(f) - 1); /* exponent field and fraction */
    return sign | ((mag << (52 - fk_fbits(f))) + ((uint64_t)(1023 - fk_bias(f)) << 52));
}

/* Round the exact binary64 value with bits u to format f when the result is
 * normal and cannot overflow (2^emin <= |u| < 2^emax) and the mode is one of
 * the five IEEE modes or round-to-odd; false otherwise. */
FPE_INLINE bool fpe_round_f64_fast(fpe_format_id f, fpe_env *env, uint64_t u, uint32_t *out)
{
    const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    const int32_t E = (int32_t)(mag >> 52) - 1023;
    if (E < fk_emin(f) || E >= fk_emax(f)) return false; /* also zero */
    const int shift = 52 - fk_fbits(f);
    const bool sign = u >> 63;
    /* rebias: kept is the result's exponent field and fraction */
    const uint64_t h = mag - ((uint64_t)(1023 - fk_bias(f)) << 52);
    const uint64_t ulp_m1 = ((uint64_t)1 << shift) - 1;
    const uint64_t rem = h & ulp_m1;
    const int mode = env->round;
    if (mode > FPE_RO) return false; /* stochastic: the general path */
    env->flags |= rem != 0 ? FPE_FLAG_INEXACT : 0;
    /* add a bias below the last kept bit and truncate: a carry out of the
     * discarded bits is the increment (branch-free on the data); odd truncates
     * and sets the last bit when inexact (it never carries) */
    const uint64_t half = (uint64_t)1 << (shift - 1);
    const uint64_t away = mode == FPE_RD ? sign : mode == FPE_RU ? !sign : 0;
    const uint64_t bias = mode == FPE_RNE   ? half - 1 + ((h >> shift) & 1)
                          : mode == FPE_RNA ? half
                                            : ((uint64_t)0 - away) & ulp_m1;
    const uint64_t kept = ((h + bias) >> shift) | (uint64_t)((mode == FPE_RO) & (rem != 0));
    *out = (sign ? fk_sign(f) : 0) | (uint32_t)kept;
    return true;
}

/* Round the nonzero normal binary64 with bits u to format f in env->round, any mode.  u is the
 * exact value, or its round-to-odd to 53 bits (the last bit set when inexact): rounding that to
 * p <= 51 bits in any IEEE mode or to odd gives the correctly rounded result (Boldo and
 * Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
 * odd", IEEE TC 57(4), 2008), and the stochastic modes read the right 32 bits when the last one
 * lies below them (p + 32 < 53: fp16 and bf16).  The fast rounding where it applies, else the
 * rounding point. */
FPE_NOINLINE uint32_t fpe_round_f64_pack(fpe_format_id f, fpe_env *env, uint64_t u)
{
    const uint64_t m52 = ((uint64_t)1 << 52) - 1;
    return fpe_round_pack(f, env, u >> 63, (int32_t)((u >> 52) & 0x7FF) - 1075,
                          (u & m52) | (m52 + 1));
}
FPE_INLINE uint32_t fpe_round_f64_odd(fpe_format_id f, fpe_env *env, uint64_t u)
{
    uint32_t r;
    if (fpe_round_f64_fast(f, env, u, &r)) return r;
    return fpe_round_f64_pack(f, env, u); /* out of line: the fast path needs no frame */
}

/* The round-to-odd fix of a binary64 result with bits u (normal, either sign) from the
 * hardware, rounded in whatever mode the host is in: diff is the exact remainder of the
 * magnitudes as a signed integer (> 0: the exact result is larger in magnitude than u's value,
 * 0: u is exact).  A correctly rounded u has the exact value strictly between it and its
 * neighbour on diff's side, and the odd one of the two is the round-to-odd result: below, u - 1
 * or u itself, whichever is odd; above, u or u + 1 (u | 1).  Stepping by one in the bits
 * crosses a binade correctly; no branch on the data. */
FPE_INLINE uint64_t fpe_f64_odd_fix(uint64_t u, int64_t diff)
{
    return (u - ((uint64_t)diff >> 63)) | (uint64_t)(diff != 0);
}

#endif
