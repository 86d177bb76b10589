/* fast_oracle.c: the exhaustive runs' reference (see fast_oracle.h). */
#include "fast_oracle.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define FLAG_NX FPE_FLAG_INEXACT
#define FLAG_UF FPE_FLAG_UNDERFLOW
#define FLAG_OF FPE_FLAG_OVERFLOW
#define FLAG_DZ FPE_FLAG_INFINITE
#define FLAG_NV FPE_FLAG_INVALID

typedef struct fo_format {
    int p, frac_bits, emin, emax;
    uint16_t exp_mask, frac_mask, quiet, max_idx, default_nan;
    double max, two_emax1, two_emin, half_two_emin, unbounded_step;
    double mag[0x8000];    /* value of each non-negative pattern (NaN for NaNs) */
    double value[0x10000]; /* value of each pattern, signed */
} fo_format;

static fo_format tables[2];
static int ready;

static void build(fo_format *T, int p, int exp_bits)
{
    int bias = (1 << (exp_bits - 1)) - 1;
    T->p = p;
    T->frac_bits = p - 1;
    T->emin = 1 - bias;
    T->emax = bias;
    T->exp_mask = (uint16_t)(((1u << exp_bits) - 1) << T->frac_bits);
    T->frac_mask = (uint16_t)((1u << T->frac_bits) - 1);
    T->quiet = (uint16_t)(1u << (T->frac_bits - 1));
    T->max_idx = (uint16_t)(T->exp_mask - 1);
    T->default_nan = (uint16_t)(0x8000u | T->exp_mask | T->quiet);
    /* walk the patterns in order: each binade has 2^frac_bits values */
    for (uint32_t i = 0; i < 0x8000; i++) {
        uint32_t e = i >> T->frac_bits, f = i & T->frac_mask;
        double v;
        if (e == (uint32_t)(T->exp_mask >> T->frac_bits))
            v = f ? NAN : INFINITY;
        else if (e == 0)
            v = ldexp((double)f, T->emin - T->frac_bits);
        else
            v = ldexp(1.0 + ldexp((double)f, -T->frac_bits), (int)e - bias);
        T->mag[i] = v;
        T->value[i] = v;
        T->value[i | 0x8000] = -v;
    }
    T->max = T->mag[T->max_idx];
    T->two_emax1 = ldexp(1.0, T->emax + 1);
    T->two_emin = ldexp(1.0, T->emin);
    T->half_two_emin = ldexp(1.0, T->emin - 1);
    T->unbounded_step = ldexp(1.0, T->emin - p); /* p-bit spacing in [2^(emin-1), 2^emin) */
}

void fo_init(void)
{
    if (ready) return;
    build(&tables[FPE_FMT_F16], 11, 5);
    build(&tables[FPE_FMT_BF16], 8, 8);
    ready = 1;
}

/* 2^e as a double, for normal e */
static double pow2(int e)
{
    uint64_t u = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The largest i with mag[i] <= x, for 0 < x <= max: binary search in the
 * table of values.  The search is the definition; a guess from the binade
 * of x comes first because it is faster, and is kept only if the table
 * confirms it. */
static uint32_t lower_index_search(const fo_format *T, double x)
{
    uint32_t lo = 0, hi = T->max_idx;
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) >> 1;
        if (T->mag[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static uint32_t lower_index(const fo_format *T, double x)
{
    uint32_t i;
    if (x < T->two_emin) {
        i = (uint32_t)(x * pow2(T->frac_bits - T->emin)); /* subnormal: multiples of 2^(emin-fb) */
    } else {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        int e = (int)((u >> 52) & 0x7FF) - 1023; /* x is a normal double */
        uint32_t in_binade = (uint32_t)(x * pow2(T->frac_bits - e)) - (1u << T->frac_bits);
        i = ((uint32_t)(e - T->emin + 1) << T->frac_bits) + in_binade;
    }
    if (i <= T->max_idx && T->mag[i] <= x && (i == T->max_idx || x < T->mag[i + 1])) return i;
    return lower_index_search(T, x);
}

/* Where the exact value lies between two neighbours lo < hi. */
enum { POS_EXACT, POS_BELOW, POS_TIE, POS_ABOVE };

static bool rounds_up(int mode, int sign, int pos, int lo_odd)
{
    if (pos == POS_EXACT) return false;
    switch (mode) {
    case FPE_RNE: return pos == POS_ABOVE || (pos == POS_TIE && lo_odd);
    case FPE_RNA: return pos == POS_ABOVE || pos == POS_TIE;
    case FPE_RZ: return false;
    case FPE_RD: return sign;
    case FPE_RU: return !sign;
    default: return !lo_odd; /* FPE_RO: the odd neighbour */
    }
}

/* x between lo and hi, the exact value being x plus a residual of sign rs */
static int position(double lo, double hi, double x, int rs)
{
    double mid = (lo + hi) * 0.5; /* exact: neighbours differ in the last bit */
    if (x < mid) return POS_BELOW;
    if (x > mid) return POS_ABOVE;
    return rs > 0 ? POS_ABOVE : rs < 0 ? POS_BELOW : POS_TIE;
}

static void fill_all(fo_result *r, uint16_t bits, uint8_t flags)
{
    for (int m = 0; m < FO_MODES; m++)
        for (int t = 0; t < 2; t++) {
            r->bits[m][t] = bits;
            r->flags[m][t] = flags;
        }
}

/* Round sign * (x + residual) with x > 0 finite. */
static void round_value(const fo_format *T, int sign, double x, int rs, fo_result *r)
{
    const uint16_t s = sign ? 0x8000 : 0;
    const uint16_t inf = T->exp_mask;
    if (x > T->max || (x == T->max && rs > 0)) {
        if (x > T->two_emax1 || (x == T->two_emax1 && rs >= 0)) {
            /* at or past 2^(emax+1): every mode overflows */
            for (int m = 0; m < FO_MODES; m++) {
                bool to_inf =
                    m == FPE_RNE || m == FPE_RNA || (m == FPE_RD && sign) || (m == FPE_RU && !sign);
                for (int t = 0; t < 2; t++) {
                    r->bits[m][t] = s | (to_inf ? inf : T->max_idx);
                    r->flags[m][t] = FLAG_OF | FLAG_NX;
                }
            }
            return;
        }
        /* between max and 2^(emax+1): the upper neighbour overflows */
        int pos = position(T->max, T->two_emax1, x, rs);
        for (int m = 0; m < FO_MODES; m++) {
            bool up = rounds_up(m, sign, pos, 1);
            for (int t = 0; t < 2; t++) {
                r->bits[m][t] = s | (up ? inf : T->max_idx);
                r->flags[m][t] = up ? (FLAG_OF | FLAG_NX) : FLAG_NX;
            }
        }
        return;
    }
    uint32_t i = lower_index(T, x), ilo, ihi;
    int pos;
    if (T->mag[i] == x) {
        if (rs == 0) {
            fill_all(r, s | (uint16_t)i, 0);
            return;
        }
        if (rs > 0) {
            ilo = i;
            ihi = i + 1;
            pos = POS_BELOW;
        } else {
            ilo = i - 1;
            ihi = i;
            pos = POS_ABOVE;
        }
    } else {
        ilo = i;
        ihi = i + 1;
        pos = position(T->mag[ilo], T->mag[ihi], x, rs);
    }

    /* tininess: before = exact below 2^emin; after = still below 2^emin once
     * rounded to p bits with an unbounded exponent */
    bool tiny_before = x < T->two_emin || (x == T->two_emin && rs < 0);
    bool after_can_reach = false;
    int pos_u = POS_EXACT;
    if (tiny_before && x >= T->half_two_emin) {
        double step = T->unbounded_step;
        double lo_u = floor(x / step) * step;
        if (lo_u == x && rs < 0) lo_u -= step;
        if (lo_u + step == T->two_emin) {
            after_can_reach = true;
            pos_u =
                (lo_u == x) ? (rs > 0 ? POS_BELOW : POS_EXACT) : position(lo_u, lo_u + step, x, rs);
        }
    }
    for (int m = 0; m < FO_MODES; m++) {
        bool up = rounds_up(m, sign, pos, (int)(ilo & 1));
        uint16_t bits = s | (uint16_t)(up ? ihi : ilo);
        bool tiny_after = tiny_before;
        /* the p-bit neighbour below 2^emin has an odd significand */
        if (after_can_reach && rounds_up(m, sign, pos_u, 1)) tiny_after = false;
        r->bits[m][0] = r->bits[m][1] = bits;
        r->flags[m][FPE_TININESS_AFTER] = FLAG_NX | (tiny_after ? FLAG_UF : 0);
        r->flags[m][FPE_TININESS_BEFORE] = FLAG_NX | (tiny_before ? FLAG_UF : 0);
    }
}

static bool is_nan16(const fo_format *T, uint16_t a)
{
    return (a & T->exp_mask) == T->exp_mask && (a & T->frac_mask);
}
static bool is_snan16(const fo_format *T, uint16_t a) { return is_nan16(T, a) && !(a & T->quiet); }

void fo_binary(fo_op op, fpe_format_id fmt, uint16_t a, uint16_t b, fo_result *r)
{
    const fo_format *T = &tables[fmt];
    if (is_nan16(T, a) || is_nan16(T, b)) {
        uint8_t f = (is_snan16(T, a) || is_snan16(T, b)) ? FLAG_NV : 0;
        fill_all(r, (uint16_t)((is_nan16(T, a) ? a : b) | T->quiet), f);
        return;
    }
    double x = T->value[a], y = T->value[b];
    if (op == FO_SUB) {
        y = -y;
        op = FO_ADD;
    }
    double v;
    int rs = 0; /* sign of (exact - v) */
    switch (op) {
    case FO_ADD:
        if (isinf(x) && isinf(y) && (x > 0) != (y > 0)) {
            fill_all(r, T->default_nan, FLAG_NV);
            return;
        }
        if (isinf(x) || isinf(y)) {
            fill_all(r, (uint16_t)((isinf(x) ? x < 0 : y < 0) ? 0x8000 | T->exp_mask : T->exp_mask),
                     0);
            return;
        }
        {
            v = x + y; /* TwoSum */
            double yv = v - x, xv = v - yv;
            double err = (x - xv) + (y - yv);
            rs = err > 0 ? 1 : err < 0 ? -1 : 0;
        }
        if (v == 0) {
            /* exact zero: equal signs keep theirs, else +0 (-0 rounding down) */
            bool sx = signbit(x), sy = signbit(y);
            for (int m = 0; m < FO_MODES; m++) {
                bool neg = sx == sy ? sx : m == FPE_RD;
                for (int t = 0; t < 2; t++) {
                    r->bits[m][t] = neg ? 0x8000 : 0;
                    r->flags[m][t] = 0;
                }
            }
            return;
        }
        break;
    case FO_MUL:
        if ((isinf(x) && y == 0) || (x == 0 && isinf(y))) {
            fill_all(r, T->default_nan, FLAG_NV);
            return;
        }
        v = x * y;
        if (isinf(v) || v == 0) { /* an infinite or zero operand: exact */
            fill_all(r, (uint16_t)((signbit(v) ? 0x8000 : 0) | (isinf(v) ? T->exp_mask : 0)), 0);
            return;
        }
        {
            double err = fma(x, y, -v);
            rs = err > 0 ? 1 : err < 0 ? -1 : 0;
        }
        break;
    default: /* FO_DIV */
        if ((isinf(x) && isinf(y)) || (x == 0 && y == 0)) {
            fill_all(r, T->default_nan, FLAG_NV);
            return;
        }
        if (y == 0 && !isinf(x)) { /* finite / 0: divide by zero */
            bool neg = signbit(x) != signbit(y);
            fill_all(r, (uint16_t)((neg ? 0x8000 : 0) | T->exp_mask), FLAG_DZ);
            return;
        }
        v = x / y;
        if (isinf(v) || v == 0) { /* inf / finite, finite / inf, 0 / finite */
            fill_all(r, (uint16_t)((signbit(v) ? 0x8000 : 0) | (isinf(v) ? T->exp_mask : 0)), 0);
            return;
        }
        {
            double rem = fma(-v, y, x); /* x - v*y, exact */
            int srem = rem > 0 ? 1 : rem < 0 ? -1 : 0;
            rs = y > 0 ? srem : -srem; /* sign of x/y - v */
        }
        break;
    }
    int sign = v < 0;
    if (sign) rs = -rs; /* residual of the magnitude */
    round_value(T, sign, fabs(v), rs, r);
}

void fo_from_f32(fpe_format_id fmt, uint32_t a, fo_result *r)
{
    const fo_format *T = &tables[fmt];
    uint16_t s = (a >> 31) ? 0x8000 : 0;
    uint32_t e = (a >> 23) & 0xFF, f = a & 0x7FFFFF;
    if (e == 0xFF) {
        if (f == 0) {
            fill_all(r, s | T->exp_mask, 0);
        } else {
            uint16_t payload = (uint16_t)(f >> (23 - T->frac_bits));
            fill_all(r, s | T->exp_mask | T->quiet | payload, (f & 0x400000) ? 0 : FLAG_NV);
        }
        return;
    }
    double v = e ? ldexp((double)(f | 0x800000), (int)e - 150) : ldexp((double)f, -149);
    if (v == 0) {
        fill_all(r, s, 0);
        return;
    }
    round_value(T, s != 0, v, 0, r);
}

const fo_checked_op fo_checked_ops[FO_CHECKED_OPS] = {
    {"f16_add", FPE_FMT_F16, FO_ADD, fpe_f16_add, NULL},
    {"f16_sub", FPE_FMT_F16, FO_SUB, fpe_f16_sub, NULL},
    {"f16_mul", FPE_FMT_F16, FO_MUL, fpe_f16_mul, NULL},
    {"f16_div", FPE_FMT_F16, FO_DIV, fpe_f16_div, NULL},
    {"bf16_add", FPE_FMT_BF16, FO_ADD, fpe_bf16_add, NULL},
    {"bf16_sub", FPE_FMT_BF16, FO_SUB, fpe_bf16_sub, NULL},
    {"bf16_mul", FPE_FMT_BF16, FO_MUL, fpe_bf16_mul, NULL},
    {"bf16_div", FPE_FMT_BF16, FO_DIV, fpe_bf16_div, NULL},
    {"f32_to_f16", FPE_FMT_F16, FO_ADD, NULL, fpe_f32_to_f16},
    {"f32_to_bf16", FPE_FMT_BF16, FO_ADD, NULL, fpe_f32_to_bf16},
};

const char *const fo_mode_names[FO_MODES] = {"near_even", "near_maxMag", "minMag",
                                             "min",       "max",         "odd"};
