/* tc_infer.c: the probes of tc_infer.h.
 *
 * Notation: m fraction bits of the input format (10 fp16, 7 bf16); a
 * product's exponent is the sum of its inputs' exponents, as in
 * kernels/elem/tc_dot.h.  Every probe picks values exact in the format, so
 * the only unknown is what the black box does with them.  Positions count
 * from 0; "block 0" holds positions 0 .. block-1.
 */
#include "tc_infer.h"

#include <math.h>
#include <string.h>

/* The pattern of v in format f, which must be exact there (normal or
 * subnormal); 0xFFFF (a NaN) otherwise, which makes a probe's answer
 * unknown rather than wrong. */
static uint16_t enc(fpe_format_id f, double v)
{
    const int m = f == FPE_FMT_F16 ? 10 : 7, bias = f == FPE_FMT_F16 ? 15 : 127;
    const int emin = 1 - bias, emax = bias;
    const uint16_t sign = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    if (v == 0) return sign;
    int e;
    (void)frexp(v, &e);
    e -= 1; /* v = 1.f 2^e */
    if (e > emax) return 0xFFFF;
    if (e < emin) { /* subnormal: field 0, unit 2^(emin - m) */
        const double n = ldexp(v, m - emin);
        if (n != floor(n) || n >= ldexp(1.0, m)) return 0xFFFF;
        return (uint16_t)(sign | (uint16_t)n);
    }
    const double n = ldexp(v, m - e); /* in [2^m, 2^(m+1)) */
    if (n != floor(n)) return 0xFFFF;
    return (uint16_t)(sign | (uint16_t)((e + bias) << m) | ((uint16_t)n & ((1u << m) - 1)));
}

typedef struct probe {
    fpe_format_id f;
    int m;
    tc_dot_fn dot;
    void *ctx;
    int calls;
    uint16_t a[TC_BLOCK_SCAN_MAX + 1], b[TC_BLOCK_SCAN_MAX + 1];
    size_t k;
} probe;

static void clear(probe *p, size_t k)
{
    memset(p->a, 0, sizeof p->a);
    memset(p->b, 0, sizeof p->b);
    p->k = k;
}

/* Position i holds the product x * y. */
static void put(probe *p, size_t i, double x, double y)
{
    p->a[i] = enc(p->f, x);
    p->b[i] = enc(p->f, y);
}

static float run(probe *p, float c)
{
    p->calls++;
    return p->dot(p->a, p->b, p->k, c, p->ctx);
}

/* (1 + 2^-m)^2 = 1 + 2^(1-m) + 2^-2m has 2m + 1 <= 21 bits: exact in fp32,
 * and aligned alone it loses nothing.  Any rounding of the product to the
 * input format (m + 1 bits) drops the 2^-2m. */
static bool probe_products_exact(probe *p)
{
    const double x = 1 + ldexp(1, -p->m);
    clear(p, 1);
    put(p, 0, x, x);
    return run(p, 0) == (float)(x * x);
}

/* L = 2^h 2^h at position 0, -L at 1, s = 2^-l 2^-l at j >= 2, zeros
 * elsewhere, c = 0.  While j is in block 0 the alignment to L's exponent
 * truncates s (the spread, 4h... bits, is beyond any plausible accumulator)
 * and the block sums to 0; from the first j outside it the next block adds
 * s to an exact 0 and gives s.  The first such j is the block size.  Blocks
 * of 1 and 2 both give s at j = 2: reported as 2. */
static int probe_block(probe *p)
{
    const int h = p->f == FPE_FMT_F16 ? 15 : 60, l = p->f == FPE_FMT_F16 ? 14 : 60;
    const float s = (float)ldexp(1, -2 * l);
    for (size_t j = 2; j <= TC_BLOCK_SCAN_MAX; j++) {
        clear(p, j + 1);
        put(p, 0, ldexp(1, h), ldexp(1, h));
        put(p, 1, -ldexp(1, h), ldexp(1, h));
        put(p, j, ldexp(1, -l), ldexp(1, -l));
        const float d = run(p, 0);
        if (d == s) return (int)j;
        if (d != 0) return TC_UNKNOWN;
    }
    return 0;
}

/* Blocks of 2 or more: 1.5 * 1.5 = 2.25 (exponent 0, significand in [2, 4))
 * and t 2^-23 at position 1, both aligned to exponent 0 where the grid is
 * 2^-23 or finer, so nothing is lost before the final rounding, and the
 * sum carries into [2, 4) where the fp32 ulp is 2^-22:
 *   T1 = 2.25 + 3 2^-23: halfway between lo = 2.25 + 2^-22 (odd) and
 *        hi = 2.25 + 2^-21 (even);
 *   T2 = 2.25 + 2^-23:   halfway between 2.25 (even) and 2.25 + 2^-22.
 * RZ: T1 lo, -T1 -lo.  RD: T1 lo, -T1 -hi.  RU: T1 hi, -T1 -lo.
 * RNE: T1 hi, -T1 -hi, T2 2.25 (ties away would give 2.25 + 2^-22). */
static int probe_round(probe *p)
{
    const float lo = 2.25f + 0x1p-22f, hi = 2.25f + 0x1p-21f;
    float d[3];
    for (int i = 0; i < 3; i++) {
        const double sg = i == 1 ? -1 : 1;
        clear(p, 2);
        put(p, 0, sg * 1.5, 1.5);
        put(p, 1, sg * (i == 2 ? 0x1p-12 : 1.5 * 0x1p-11), 0x1p-11);
        d[i] = run(p, 0);
    }
    if (d[0] == lo && d[1] == -lo) return FPE_RZ;
    if (d[0] == lo && d[1] == -hi) return FPE_RD;
    if (d[0] == hi && d[1] == -lo) return FPE_RU;
    if (d[0] == hi && d[1] == -hi && d[2] == 2.25f) return FPE_RNE;
    return TC_UNKNOWN;
}

/* Blocks of 3 or more: 1 * 1, -(1 - 2^-(m+1)) * 1 and -2^-t at positions
 * 0, 1, 2.  The largest exponent is 0, so the grid is 2^-(23 + e) for e
 * extra bits; the first two cancel to b = 2^-(m+1) exactly, and b - 2^-t
 * is an fp32 number for t <= m + 25.  So the result is b - 2^-t while
 * t <= 23 + e and something else (b if truncated) beyond: e = t_max - 23,
 * visible for -(22 - m) <= e <= m + 1. */
static int probe_extra_bits(probe *p)
{
    const double base = ldexp(1, -(p->m + 1));
    int t_max = TC_UNKNOWN;
    for (int t = p->m + 2; t <= p->m + 25; t++) {
        clear(p, 3);
        put(p, 0, 1, 1);
        put(p, 1, -(1 - base), 1);
        put(p, 2, -ldexp(1, -(t / 2)), ldexp(1, -(t - t / 2)));
        if (run(p, 0) != (float)(base - ldexp(1, -t))) break;
        t_max = t;
    }
    if (t_max == TC_UNKNOWN) return TC_UNKNOWN;
    if (t_max == p->m + 25) return TC_EXTRA_ABOVE;
    return t_max - 23;
}

/* Blocks of 3 or more, e extra bits known: as above with the third product
 * +-1.5 2^-(24 + e), whose two bits both fall below the grid q = 2^-(23+e).
 * With b = 2^-(m+1) (negative term, positive term):
 *   truncation (b, b), floor (b - q, b), nearest (b - q, b + q),
 *   ceiling (b, b + q). */
static tc_align probe_align(probe *p, int e)
{
    const double base = ldexp(1, -(p->m + 1)), q = ldexp(1, -(23 + e));
    float d[2];
    for (int i = 0; i < 2; i++) {
        clear(p, 3);
        put(p, 0, 1, 1);
        put(p, 1, -(1 - base), 1);
        const int t = 24 + e;
        put(p, 2, (i ? 1.5 : -1.5) * ldexp(1, -(t / 2)), ldexp(1, -(t - t / 2)));
        d[i] = run(p, 0);
    }
    const float b = (float)base, bm = (float)(base - q), bp = (float)(base + q);
    if (d[0] == b && d[1] == b) return TC_ALIGN_TRUNCATE;
    if (d[0] == bm && d[1] == b) return TC_ALIGN_FLOOR;
    if (d[0] == bm && d[1] == bp) return TC_ALIGN_NEAREST;
    if (d[0] == b && d[1] == bp) return TC_ALIGN_CEIL;
    return TC_ALIGN_UNKNOWN;
}

/* Blocks of 4 or more, e >= 0: 1, 1, 2^-23, 2^-23.  Aligned together to
 * exponent 0 they sum exactly to 2 + 2^-22, an fp32 number.  Normalising
 * after 1 + 1 moves the grid to 2^-22 (or 2^-(22+e)) for what follows, and
 * with e = 0 each 2^-23 is lost or rounded separately: 2 (or, rounding up,
 * 2 + 2^-21).  So 2 + 2^-22 means no normalisation inside the block. */
static int probe_normalise(probe *p)
{
    clear(p, 4);
    put(p, 0, 1, 1);
    put(p, 1, 1, 1);
    put(p, 2, 0x1p-12, 0x1p-11);
    put(p, 3, 0x1p-12, 0x1p-11);
    return run(p, 0) != 2.0f + 0x1p-22f;
}

/* c = 2^-40, then 1 and -1.  Aligned with the block (exponent 0, grid at
 * most 2^-(23 + e)), c is truncated for e < 17 and the result is 0; added
 * after the products, it is the result. */
static int probe_c(probe *p, int e)
{
    clear(p, 2);
    put(p, 0, 1, 1);
    put(p, 1, -1, 1);
    const float d = run(p, 0x1p-40f);
    if (d == 0x1p-40f) return 0;
    if (d == 0 && e != TC_UNKNOWN && e < 17) return 1;
    return TC_UNKNOWN;
}

int tc_infer(fpe_format_id f, tc_dot_fn dot, void *ctx, tc_features *out)
{
    if (!dot || !out || (f != FPE_FMT_F16 && f != FPE_FMT_BF16)) return -1;
    static probe p; /* the scan vectors are large; not reentrant */
    memset(&p, 0, sizeof p);
    p.f = f;
    p.m = f == FPE_FMT_F16 ? 10 : 7;
    p.dot = dot;
    p.ctx = ctx;
    tc_features ft;
    ft.products_exact = probe_products_exact(&p);
    ft.block = probe_block(&p);
    ft.round = ft.block >= 2 ? probe_round(&p) : TC_UNKNOWN;
    ft.extra_bits = ft.block >= 3 ? probe_extra_bits(&p) : TC_UNKNOWN;
    const bool e_known = ft.extra_bits != TC_UNKNOWN && ft.extra_bits != TC_EXTRA_ABOVE;
    ft.align = ft.block >= 3 && e_known ? probe_align(&p, ft.extra_bits) : TC_ALIGN_UNKNOWN;
    ft.normalises_in_block =
        ft.block >= 4 && e_known && ft.extra_bits >= 0 ? probe_normalise(&p) : TC_UNKNOWN;
    ft.c_in_block = probe_c(&p, e_known ? ft.extra_bits : TC_UNKNOWN);
    ft.calls = p.calls;
    *out = ft;
    return 0;
}

bool tc_features_model(const tc_features *ft, ak_tc_model *out)
{
    if (!ft || !out || !ft->products_exact || ft->block < 1 || ft->round == TC_UNKNOWN ||
        ft->extra_bits == TC_UNKNOWN || ft->extra_bits == TC_EXTRA_ABOVE ||
        ft->align != TC_ALIGN_TRUNCATE || ft->normalises_in_block == 1)
        return false;
    out->block = ft->block;
    out->extra_bits = ft->extra_bits;
    out->round = (fpe_round)ft->round;
    return true;
}

static const char *round_name(int r)
{
    switch (r) {
    case FPE_RNE: return "RNE (to nearest, ties to even)";
    case FPE_RZ: return "RZ (truncation toward zero)";
    case FPE_RD: return "RD (toward -inf)";
    case FPE_RU: return "RU (toward +inf)";
    default: return "unknown";
    }
}

static const char *align_name(tc_align a)
{
    switch (a) {
    case TC_ALIGN_TRUNCATE: return "truncated toward zero, per term";
    case TC_ALIGN_FLOOR: return "rounded toward -inf";
    case TC_ALIGN_NEAREST: return "rounded to nearest";
    case TC_ALIGN_CEIL: return "rounded toward +inf";
    default: return "unknown";
    }
}

static const char *tri(int v, const char *yes, const char *no)
{
    return v == 1 ? yes : v == 0 ? no : "unknown";
}

void tc_features_print(FILE *fp, const char *title, const tc_features *ft)
{
    fprintf(fp, "%s\n", title);
    fprintf(fp, "  products exact: %s\n", ft->products_exact ? "yes" : "no");
    if (ft->block == 0)
        fprintf(fp, "  block size: more than %d products\n", TC_BLOCK_SCAN_MAX);
    else if (ft->block == TC_UNKNOWN)
        fprintf(fp, "  block size: unknown (the scan's results fit no block)\n");
    else if (ft->block == 2)
        fprintf(fp, "  block size: 1 or 2 products\n");
    else
        fprintf(fp, "  block size: %d products\n", ft->block);
    fprintf(fp, "  final rounding to fp32: %s\n", round_name(ft->round));
    if (ft->extra_bits == TC_UNKNOWN)
        fprintf(fp, "  extra alignment bits: unknown\n");
    else if (ft->extra_bits == TC_EXTRA_ABOVE)
        fprintf(fp, "  extra alignment bits: more than the probe sees\n");
    else
        fprintf(fp, "  extra alignment bits: %d (%d fraction bits below the largest exponent)\n",
                ft->extra_bits, 23 + ft->extra_bits);
    fprintf(fp, "  shifted-out bits: %s\n", align_name(ft->align));
    fprintf(fp, "  normalisation inside a block: %s\n", tri(ft->normalises_in_block, "yes", "no"));
    fprintf(fp, "  c: %s\n",
            tri(ft->c_in_block, "aligned with the first block",
                "added after the products (an fp32 epilogue)"));
    fprintf(fp, "  dot products asked: %d\n", ft->calls);
}
