/* elem/tc_dot.h: a block-FMA model of a tensor-core dot product,
 * d = c + sum_i a_i b_i with fp16 or bf16 a, b and fp32 c, d; host and device.
 *
 * The model is the one of Fasi, Higham, Mikaitis and Pranesh, "Numerical
 * behavior of NVIDIA tensor cores" (PeerJ CS 7:e330, 2021), refined by
 * Khattak and Mikaitis, "Accurate models of NVIDIA tensor cores"
 * (arXiv:2512.07004, 2025), parameterised by ak_tc_model (kernels.h):
 *   - products are exact.  A product's exponent is ea + eb, the sum of its
 *     inputs' exponents (a subnormal input counting as the format's emin),
 *     and its significand lies in [0, 4): a product of 2 or more keeps one
 *     bit more above the alignment point than its value's leading bit says;
 *   - the products of a block (`block` of them, in order) and the running
 *     fp32 accumulator (c for the first block) are aligned to the largest of
 *     their exponents E (zero terms take no part), on the grid 2^(E - 23 -
 *     extra_bits); what falls below it is truncated toward zero, term by
 *     term (no sticky bit);
 *   - the aligned terms are summed exactly (any number of carry bits), the
 *     sum normalised and rounded once to fp32 in mode `round`, subnormals
 *     kept; it is the next block's accumulator.
 * Specials as IEEE 754 would give them for the exact sum: a NaN input or
 * accumulator, inf * 0 or inf - inf give NaN (0x7FFFFFFF, the GPU's
 * canonical NaN), otherwise an infinite term gives an infinity of its sign.
 * Overflow of a block's sum rounds as IEEE says for `round` (RZ: the largest
 * finite value).  A zero sum is +0 (-0 in RD), or -0 when every term is a
 * zero of sign minus.
 *
 * The sum is exact in a 128-bit integer: terms are below 2^(25 + extra_bits)
 * grid units and a block has at most AK_TC_MAX_BLOCK + 1 of them, so with
 * the limits below it stays under 2^119.
 */
#ifndef AMPSCOPE_KERNELS_ELEM_TC_DOT_H
#define AMPSCOPE_KERNELS_ELEM_TC_DOT_H

#include "fpe_ops.h"
#include "kernels.h"

#define AK_TC_MAX_BLOCK 4096
#define AK_TC_MAX_EXTRA 80
#define AK_TC_NAN       0x7FFFFFFFu

__extension__ typedef __int128 ak_tc_i128;
__extension__ typedef unsigned __int128 ak_tc_u128;

/* Whether m is a model this file computes: block and extra_bits within the
 * limits above, round one of the four directed/nearest modes. */
FPE_INLINE bool ak_tc_model_ok(const ak_tc_model *m)
{
    return m && m->block >= 1 && m->block <= AK_TC_MAX_BLOCK && m->extra_bits >= -23 &&
           m->extra_bits <= AK_TC_MAX_EXTRA &&
           (m->round == FPE_RNE || m->round == FPE_RZ || m->round == FPE_RD || m->round == FPE_RU);
}

/* A finite nonzero term: sign, integer significand n and the exponent of
 * its unit in the last place (value n 2^ulp_exp), and its alignment
 * exponent (the E above). */
typedef struct ak_tc_term {
    bool neg;
    uint32_t n;
    int ulp_exp, align_exp;
} ak_tc_term;

/* Index of the most significant set bit of x != 0. */
FPE_INLINE int ak_tc_msb(ak_tc_u128 x)
{
    int r = 0;
    for (int s = 64; s > 0; s >>= 1)
        if (x >> s) {
            x >>= s;
            r += s;
        }
    return r;
}

/* A 16-bit input as significand and exponent: (n, e) with value n 2^(e - m)
 * for m fraction bits; a subnormal has e = emin. */
FPE_INLINE void ak_tc_unpack16(fpe_format_id f, uint16_t x, uint32_t *n, int *e)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const uint32_t field = (uint32_t)(x & 0x7FFF) >> m, frac = x & ((1u << m) - 1);
    *n = field ? frac | (1u << m) : frac;
    *e = field ? (int)field - bias : 1 - bias;
}

FPE_INLINE bool ak_tc_is_nan16(fpe_format_id f, uint16_t x)
{
    const uint16_t inf = f == FPE_FMT_F16 ? 0x7C00 : 0x7F80;
    return (x & 0x7FFF) > inf;
}
FPE_INLINE bool ak_tc_is_inf16(fpe_format_id f, uint16_t x)
{
    return (x & 0x7FFF) == (f == FPE_FMT_F16 ? 0x7C00 : 0x7F80);
}

/* The exact value s 2^q (s != 0) rounded to fp32 in mode r. */
FPE_INLINE uint32_t ak_tc_round_f32(ak_tc_i128 s, int q, fpe_round r)
{
    const bool neg = s < 0;
    const ak_tc_u128 mag = neg ? (ak_tc_u128)(-s) : (ak_tc_u128)s;
    const int p = ak_tc_msb(mag);
    /* bits to drop: down to 24 significant bits, or to the subnormal grid 2^-149 */
    int drop = p - 23;
    if (drop < -149 - q) drop = -149 - q;
    uint64_t kept;
    if (drop <= 0) {
        kept = (uint64_t)(mag << -drop);
    } else {
        kept = drop > 127 ? 0 : (uint64_t)(mag >> drop);
        const ak_tc_u128 rem = drop > 127 ? mag : mag & (((ak_tc_u128)1 << drop) - 1);
        const ak_tc_u128 half = drop > 127 ? 0 : (ak_tc_u128)1 << (drop - 1);
        bool up;
        switch (r) {
        case FPE_RZ: up = false; break;
        case FPE_RD: up = neg && rem; break;
        case FPE_RU: up = !neg && rem; break;
        default: up = drop <= 127 && (rem > half || (rem == half && (kept & 1))); break;
        }
        kept += up;
    }
    int e = q + drop; /* the exponent of kept's last bit */
    if (kept >> 24) {
        kept >>= 1; /* the rounding carried into a new binade; the dropped bit is 0 */
        e++;
    }
    const uint32_t sign = neg ? 0x80000000u : 0;
    if (kept < (1u << 23)) return sign | (uint32_t)kept; /* subnormal (e == -149) or zero */
    const int lead = e + 23;
    if (lead > 127) {
        const bool to_inf = r == FPE_RNE || (r == FPE_RU && !neg) || (r == FPE_RD && neg);
        return sign | (to_inf ? 0x7F800000u : 0x7F7FFFFFu);
    }
    return sign | (uint32_t)(lead + 127) << 23 | ((uint32_t)kept & 0x7FFFFFu);
}

/* One block: acc (fp32 bits) + sum_{l < len} a[l inc_a] b[l inc_b]. */
FPE_INLINE uint32_t ak_tc_block(const ak_tc_model *m, fpe_format_id f, const uint16_t *a,
                                size_t inc_a, const uint16_t *b, size_t inc_b, size_t len,
                                uint32_t acc)
{
    const int fm = f == FPE_FMT_F16 ? 10 : 7;
    /* specials first: NaN wins, then infinities of one or both signs */
    const uint32_t acc_mag = acc & 0x7FFFFFFFu;
    const bool acc_neg = acc >> 31;
    bool nan = acc_mag > 0x7F800000u, pinf = false, ninf = false;
    bool pzero = acc_mag == 0 && !acc_neg, nzero = acc_mag == 0 && acc_neg;
    if (acc_mag == 0x7F800000u) {
        pinf = !acc_neg;
        ninf = acc_neg;
    }
    int emax = -100000;
    if (acc_mag != 0 && acc_mag < 0x7F800000u) {
        const uint32_t field = (acc >> 23) & 0xFF;
        emax = field ? (int)field - 127 : -126;
    }
    for (size_t l = 0; l < len; l++) {
        const uint16_t x = a[l * inc_a], y = b[l * inc_b];
        const bool neg = (x ^ y) >> 15;
        if (ak_tc_is_nan16(f, x) || ak_tc_is_nan16(f, y)) {
            nan = true;
            continue;
        }
        const bool xz = (x & 0x7FFF) == 0, yz = (y & 0x7FFF) == 0;
        if (ak_tc_is_inf16(f, x) || ak_tc_is_inf16(f, y)) {
            if (xz || yz)
                nan = true;
            else if (neg)
                ninf = true;
            else
                pinf = true;
            continue;
        }
        if (xz || yz) {
            nzero = nzero || neg;
            pzero = pzero || !neg;
            continue;
        }
        uint32_t nx, ny;
        int ex, ey;
        ak_tc_unpack16(f, x, &nx, &ex);
        ak_tc_unpack16(f, y, &ny, &ey);
        if (ex + ey > emax) emax = ex + ey;
    }
    if (nan || (pinf && ninf)) return AK_TC_NAN;
    if (pinf || ninf) return (ninf ? 0x80000000u : 0) | 0x7F800000u;
    if (emax == -100000) /* every term a zero: IEEE's sign of a sum of zeros */
        return nzero && (!pzero || m->round == FPE_RD) ? 0x80000000u : 0;
    /* the grid 2^q; a term n 2^u becomes floor(n 2^(u - q)) units */
    const int q = emax - 23 - m->extra_bits;
    ak_tc_i128 sum = 0;
    if (acc_mag != 0) {
        const uint32_t field = (acc >> 23) & 0xFF;
        const uint32_t n = field ? (acc & 0x7FFFFFu) | 0x800000u : acc & 0x7FFFFFu;
        const int u = (field ? (int)field - 127 : -126) - 23;
        const ak_tc_u128 t =
            u >= q ? (ak_tc_u128)n << (u - q) : (q - u > 63 ? 0 : (uint64_t)n >> (q - u));
        sum += acc_neg ? -(ak_tc_i128)t : (ak_tc_i128)t;
    }
    for (size_t l = 0; l < len; l++) {
        const uint16_t x = a[l * inc_a], y = b[l * inc_b];
        if ((x & 0x7FFF) == 0 || (y & 0x7FFF) == 0) continue;
        uint32_t nx, ny;
        int ex, ey;
        ak_tc_unpack16(f, x, &nx, &ex);
        ak_tc_unpack16(f, y, &ny, &ey);
        const uint64_t n = (uint64_t)nx * ny; /* exact: at most 22 bits */
        const int u = ex + ey - 2 * fm;
        const ak_tc_u128 t = u >= q ? (ak_tc_u128)n << (u - q) : (q - u > 63 ? 0 : n >> (q - u));
        sum += (x ^ y) >> 15 ? -(ak_tc_i128)t : (ak_tc_i128)t;
    }
    if (sum == 0) return m->round == FPE_RD ? 0x80000000u : 0;
    return ak_tc_round_f32(sum, q, m->round);
}

/* d = c + sum_{l < k} a[l inc_a] b[l inc_b] under model m (ak_tc_model_ok),
 * inputs of format f (FPE_FMT_F16 or FPE_FMT_BF16), c and d fp32 bits. */
FPE_INLINE uint32_t ak_tc_dot_k(const ak_tc_model *m, fpe_format_id f, const uint16_t *a,
                                size_t inc_a, const uint16_t *b, size_t inc_b, size_t k, uint32_t c)
{
    uint32_t acc = c;
    const size_t bl = (size_t)m->block;
    for (size_t l = 0; l < k; l += bl) {
        const size_t len = k - l < bl ? k - l : bl;
        acc = ak_tc_block(m, f, a + l * inc_a, inc_a, b + l * inc_b, inc_b, len, acc);
    }
    return acc;
}

#endif
