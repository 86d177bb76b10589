/* test_support.c: shared pieces of the emulator tests (see test_support.h). */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- environment knobs ------------------------------------------------------ */
static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end) {
        fprintf(stderr, "%s=%s is not a number; using %llu\n", name, s, (unsigned long long)dflt);
        return dflt;
    }
    return v;
}
uint64_t ts_seed(void) { return env_u64("AMPSCOPE_TEST_SEED", 20240601); }
uint64_t ts_random_count(void) { return env_u64("AMPSCOPE_TEST_RANDOM", 1000000); }

/* ---- generator -------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
void ts_rng_init(ts_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
uint64_t ts_next(ts_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}
uint32_t ts_below(ts_rng *r, uint32_t n) { return (uint32_t)(((ts_next(r) >> 32) * n) >> 32); }
double ts_uniform(ts_rng *r) { return (double)(ts_next(r) >> 11) * 0x1p-53; }

/* ---- names ------------------------------------------------------------------ */
const char *const ts_mode_names[FPE_ROUND_COUNT] = {
    "near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"};
const char *ts_format_name(fpe_format_id fmt) { return orc_formats[fmt].name; }
int ts_parse_format(const char *s)
{
    if (!strcmp(s, "fp16") || !strcmp(s, "f16")) return FPE_FMT_F16;
    if (!strcmp(s, "bf16")) return FPE_FMT_BF16;
    if (!strcmp(s, "fp32") || !strcmp(s, "f32")) return FPE_FMT_F32;
    return -1;
}

/* ---- the emulator through the oracle's codes -------------------------------- */
static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double dfrom(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

bool ts_emu_has_op(orc_op op, fpe_format_id fmt)
{
    if (op == ORC_TO_F16) return fmt != FPE_FMT_F16;
    if (op == ORC_TO_BF16) return fmt != FPE_FMT_BF16;
    if (op == ORC_TO_F32) return fmt != FPE_FMT_F32;
    return (unsigned)op < ORC_OP_COUNT;
}

#define EMU_DISPATCH(F, T)                                                                         \
    switch (op) {                                                                                  \
    case ORC_ADD: return fpe_##F##_add(env, (T)a, (T)b);                                           \
    case ORC_SUB: return fpe_##F##_sub(env, (T)a, (T)b);                                           \
    case ORC_MUL: return fpe_##F##_mul(env, (T)a, (T)b);                                           \
    case ORC_DIV: return fpe_##F##_div(env, (T)a, (T)b);                                           \
    case ORC_MULADD: return fpe_##F##_mulAdd(env, (T)a, (T)b, (T)c);                               \
    case ORC_SQRT: return fpe_##F##_sqrt(env, (T)a);                                               \
    case ORC_RTI: return fpe_##F##_roundToInt(env, (T)a, false);                                   \
    case ORC_RTI_EXACT: return fpe_##F##_roundToInt(env, (T)a, true);                              \
    case ORC_TO_F64: return dbits(fpe_##F##_to_f64(env, (T)a));                                    \
    case ORC_TO_I32: return (uint32_t)fpe_##F##_to_i32(env, (T)a, false);                          \
    case ORC_TO_I64: return (uint64_t)fpe_##F##_to_i64(env, (T)a, false);                          \
    case ORC_TO_UI32: return fpe_##F##_to_ui32(env, (T)a, false);                                  \
    case ORC_TO_UI64: return fpe_##F##_to_ui64(env, (T)a, false);                                  \
    case ORC_TO_I32_X: return (uint32_t)fpe_##F##_to_i32(env, (T)a, true);                         \
    case ORC_TO_I64_X: return (uint64_t)fpe_##F##_to_i64(env, (T)a, true);                         \
    case ORC_TO_UI32_X: return fpe_##F##_to_ui32(env, (T)a, true);                                 \
    case ORC_TO_UI64_X: return fpe_##F##_to_ui64(env, (T)a, true);                                 \
    case ORC_FROM_I32: return fpe_i32_to_##F(env, (int32_t)(uint32_t)operands[0]);                 \
    case ORC_FROM_I64: return fpe_i64_to_##F(env, (int64_t)operands[0]);                           \
    case ORC_FROM_UI32: return fpe_ui32_to_##F(env, (uint32_t)operands[0]);                        \
    case ORC_FROM_UI64: return fpe_ui64_to_##F(env, operands[0]);                                  \
    case ORC_FROM_F64: return fpe_f64_to_##F(env, dfrom(operands[0]));                             \
    default: break;                                                                                \
    }

uint64_t ts_emu_op(orc_op op, fpe_format_id fmt, fpe_env *env, const uint64_t *operands)
{
    uint32_t a = (uint32_t)operands[0];
    uint32_t b = oracle_op_arity(op) >= 2 ? (uint32_t)operands[1] : 0;
    uint32_t c = oracle_op_arity(op) >= 3 ? (uint32_t)operands[2] : 0;
    switch (fmt) {
    case FPE_FMT_F16:
        EMU_DISPATCH(f16, uint16_t)
        if (op == ORC_TO_F32) return fpe_f16_to_f32(env, (uint16_t)a);
        if (op == ORC_TO_BF16) return fpe_f16_to_bf16(env, (uint16_t)a);
        break;
    case FPE_FMT_BF16:
        EMU_DISPATCH(bf16, uint16_t)
        if (op == ORC_TO_F32) return fpe_bf16_to_f32(env, (uint16_t)a);
        if (op == ORC_TO_F16) return fpe_bf16_to_f16(env, (uint16_t)a);
        break;
    case FPE_FMT_F32:
        EMU_DISPATCH(f32, uint32_t)
        if (op == ORC_TO_F16) return fpe_f32_to_f16(env, a);
        if (op == ORC_TO_BF16) return fpe_f32_to_bf16(env, a);
        break;
    }
    fprintf(stderr, "ts_emu_op: no emulator function for %s on %s\n", oracle_op_name(op),
            ts_format_name(fmt));
    abort();
}

bool ts_emu_compare(orc_cmp cmp, fpe_format_id fmt, fpe_env *env, uint32_t a, uint32_t b)
{
#define EMU_CMP(F, T)                                                                              \
    switch (cmp) {                                                                                 \
    case ORC_EQ: return fpe_##F##_eq(env, (T)a, (T)b);                                             \
    case ORC_LE: return fpe_##F##_le(env, (T)a, (T)b);                                             \
    case ORC_LT: return fpe_##F##_lt(env, (T)a, (T)b);                                             \
    case ORC_EQ_SIGNALING: return fpe_##F##_eq_signaling(env, (T)a, (T)b);                         \
    case ORC_LE_QUIET: return fpe_##F##_le_quiet(env, (T)a, (T)b);                                 \
    case ORC_LT_QUIET: return fpe_##F##_lt_quiet(env, (T)a, (T)b);                                 \
    default: abort();                                                                              \
    }
    switch (fmt) {
    case FPE_FMT_F16: EMU_CMP(f16, uint16_t)
    case FPE_FMT_BF16: EMU_CMP(bf16, uint16_t)
    case FPE_FMT_F32: EMU_CMP(f32, uint32_t)
    }
#undef EMU_CMP
    abort();
}

bool ts_op_consumes_index(orc_op op)
{
    switch (op) {
    case ORC_ADD:
    case ORC_SUB:
    case ORC_MUL:
    case ORC_DIV:
    case ORC_MULADD:
    case ORC_SQRT:
    case ORC_TO_F16:
    case ORC_TO_BF16:
    case ORC_TO_F32:
    case ORC_FROM_I32:
    case ORC_FROM_I64:
    case ORC_FROM_UI32:
    case ORC_FROM_UI64:
    case ORC_FROM_F64: return true;
    default: return false;
    }
}

/* ---- comparing ------------------------------------------------------------------ */
void ts_checker_init(ts_checker *ck, const char *what)
{
    ck->what = what;
    ck->checked = 0;
    ck->mismatches = 0;
    ck->max_report = 10;
}

static int hex_digits(int bits) { return bits / 4; }

static int operand_bits(orc_op op, fpe_format_id fmt)
{
    switch (op) {
    case ORC_FROM_I32:
    case ORC_FROM_UI32: return 32;
    case ORC_FROM_I64:
    case ORC_FROM_UI64:
    case ORC_FROM_F64: return 64;
    default: return orc_formats[fmt].bits;
    }
}

static void print_mismatch_w(const char *opname, fpe_format_id fmt, const fpe_env *env,
                             const uint64_t *operands, int n_operands, int op_bits, int res_bits,
                             uint64_t expected, uint8_t expected_flags, uint64_t got,
                             uint8_t got_flags)
{
    printf("MISMATCH %s %s mode=%s tininess=%s daz=%d ftz=%d nan=%s", opname, ts_format_name(fmt),
           env->round < FPE_ROUND_COUNT ? ts_mode_names[env->round] : "?",
           env->tininess == FPE_TININESS_BEFORE ? "before" : "after", env->daz, env->ftz,
           env->nan == FPE_NAN_CANONICAL ? "canonical" : "x86");
    if (env->round >= FPE_SR_PROP)
        printf(" seed=%#llx stream=%u index=%llu", (unsigned long long)env->sr_seed, env->sr_stream,
               (unsigned long long)env->sr_index);
    printf(" operands");
    for (int i = 0; i < n_operands; i++)
        printf(" %0*llX", hex_digits(op_bits), (unsigned long long)operands[i]);
    printf(": expected %0*llX flags %02X, got %0*llX flags %02X\n", hex_digits(res_bits),
           (unsigned long long)expected, expected_flags, hex_digits(res_bits),
           (unsigned long long)got, got_flags);
    fflush(stdout);
}

void ts_print_mismatch(const char *opname, fpe_format_id fmt, const fpe_env *env,
                       const uint64_t *operands, int n_operands, uint64_t expected,
                       uint8_t expected_flags, uint64_t got, uint8_t got_flags)
{
    int w = orc_formats[fmt].bits;
    print_mismatch_w(opname, fmt, env, operands, n_operands, w, w, expected, expected_flags, got,
                     got_flags);
}

static bool is_f64_nan(uint64_t u)
{
    return (u & UINT64_C(0x7FF0000000000000)) == UINT64_C(0x7FF0000000000000) &&
           (u & UINT64_C(0x000FFFFFFFFFFFFF)) != 0;
}

bool ts_check_op(ts_checker *ck, orc_op op, fpe_format_id fmt, const fpe_env *env,
                 const uint64_t *operands)
{
    fpe_env e = *env;
    e.flags = 0;
    uint8_t want_flags;
    uint64_t want = oracle_op(op, fmt, &e, operands, &want_flags);
    uint64_t got = ts_emu_op(op, fmt, &e, operands);
    int res_bits = oracle_result_bits(op, fmt);
    if (res_bits < 64) got &= (UINT64_C(1) << res_bits) - 1;
    bool same = got == want && e.flags == want_flags;
    /* the canonical specialization does not fix the binary64 NaN pattern */
    if (op == ORC_TO_F64 && env->nan == FPE_NAN_CANONICAL && is_f64_nan(want))
        same = is_f64_nan(got) && e.flags == want_flags;
    bool index_ok = !ts_op_consumes_index(op) || e.sr_index == env->sr_index + 1;
    ck->checked++;
    if (same && index_ok) return true;
    ck->mismatches++;
    if (ck->mismatches <= (uint64_t)ck->max_report) {
        int n = oracle_op_arity(op);
        print_mismatch_w(oracle_op_name(op), fmt, env, operands, n, operand_bits(op, fmt), res_bits,
                         want, want_flags, got, e.flags);
        if (!index_ok)
            printf("  sr_index went from %llu to %llu (expected +1)\n",
                   (unsigned long long)env->sr_index, (unsigned long long)e.sr_index);
    }
    return false;
}

bool ts_check_compare(ts_checker *ck, orc_cmp cmp, fpe_format_id fmt, const fpe_env *env,
                      uint32_t a, uint32_t b)
{
    fpe_env e = *env;
    e.flags = 0;
    uint8_t want_flags;
    bool want = oracle_compare(cmp, fmt, &e, a, b, &want_flags);
    bool got = ts_emu_compare(cmp, fmt, &e, a, b);
    ck->checked++;
    if (got == want && e.flags == want_flags) return true;
    ck->mismatches++;
    if (ck->mismatches <= (uint64_t)ck->max_report) {
        uint64_t ops[2] = {a, b};
        print_mismatch_w(oracle_cmp_name(cmp), fmt, env, ops, 2, orc_formats[fmt].bits, 4, want,
                         want_flags, got, e.flags);
    }
    return false;
}

uint64_t ts_checker_summary(const ts_checker *ck)
{
    printf("%s: %llu checked, %llu mismatches\n", ck->what, (unsigned long long)ck->checked,
           (unsigned long long)ck->mismatches);
    fflush(stdout);
    return ck->mismatches;
}

/* ---- operands -------------------------------------------------------------------- */
static uint32_t pow2_bits(fpe_format_id fmt, int e) { return orc_from_double(fmt, ldexp(1.0, e)); }

static size_t push(uint32_t *out, size_t n, size_t cap, uint32_t v)
{
    for (size_t i = 0; i < n && i < cap; i++)
        if (out[i] == v) return n;
    if (n < cap) out[n] = v;
    return n + 1;
}

size_t ts_special_values(fpe_format_id fmt, uint32_t *out, size_t cap)
{
    const orc_format *F = &orc_formats[fmt];
    const uint32_t fb = (uint32_t)F->frac_bits, E = F->exp_mask, Q = F->quiet_bit;
    const uint32_t minnorm = 1u << fb;
    const uint32_t one = (uint32_t)F->bias << fb;
    uint32_t mags[64];
    size_t m = 0;
    mags[m++] = 0;
    mags[m++] = 1; /* smallest subnormal */
    mags[m++] = 2;
    mags[m++] = 3;
    mags[m++] = F->frac_mask >> 1; /* mid subnormal */
    mags[m++] = F->frac_mask - 1;
    mags[m++] = F->frac_mask; /* largest subnormal */
    mags[m++] = minnorm;      /* 2^emin */
    mags[m++] = minnorm + 1;
    mags[m++] = minnorm + 2;
    mags[m++] = minnorm | F->frac_mask;           /* just below 2^(emin+1) */
    mags[m++] = 2 * minnorm;                      /* 2^(emin+1) */
    mags[m++] = pow2_bits(fmt, F->emin + F->p);   /* a power of two that scales into range */
    mags[m++] = one - 1;                          /* 1 - ulp/2 */
    mags[m++] = one;                              /* 1 */
    mags[m++] = one + 1;                          /* 1 + ulp */
    mags[m++] = one + (1u << (fb - 1));           /* 1.5 */
    mags[m++] = one - minnorm;                    /* 0.5 */
    mags[m++] = one + minnorm;                    /* 2 */
    mags[m++] = one + minnorm + (1u << (fb - 1)); /* 3 */
    mags[m++] = orc_from_double(fmt, 5.0);
    mags[m++] = orc_from_double(fmt, 10.0);
    mags[m++] = pow2_bits(fmt, F->p); /* 2^p: first with ulp 2 */
    mags[m++] = pow2_bits(fmt, F->p) - 1;
    mags[m++] = pow2_bits(fmt, F->emax); /* 2^emax */
    mags[m++] = F->max_finite - 1;
    mags[m++] = F->max_finite; /* largest finite */
    mags[m++] = E;             /* inf */
    /* random-looking normals */
    mags[m++] = ((uint32_t)(F->bias + 3) << fb) | (0x55555555u & F->frac_mask);
    mags[m++] = ((uint32_t)(F->bias - 5) << fb) | (0x2AAAAAAAu & F->frac_mask);
    mags[m++] = ((uint32_t)(F->bias + F->emax / 2) << fb) | (0x3C96A5E1u & F->frac_mask);
    mags[m++] = ((uint32_t)(F->bias - F->bias / 2) << fb) | (0x1234567u & F->frac_mask);
    /* quiet NaNs with payloads */
    mags[m++] = E | Q;
    mags[m++] = E | Q | 1;
    mags[m++] = E | F->frac_mask;
    /* signaling NaNs */
    mags[m++] = E | 1;
    mags[m++] = E | (Q >> 1) | 1;
    mags[m++] = E | (F->frac_mask & ~Q);
    size_t n = 0;
    for (size_t i = 0; i < m; i++) {
        n = push(out, n, cap, mags[i]);
        n = push(out, n, cap, mags[i] | F->sign_mask);
    }
    return n;
}

size_t ts_special_values_small(fpe_format_id fmt, uint32_t *out, size_t cap)
{
    const orc_format *F = &orc_formats[fmt];
    const uint32_t fb = (uint32_t)F->frac_bits, E = F->exp_mask, Q = F->quiet_bit;
    const uint32_t one = (uint32_t)F->bias << fb;
    uint32_t mags[] = {0,
                       1,
                       F->frac_mask,
                       1u << fb,
                       (1u << fb) + 1,
                       one,
                       one + 1,
                       one - 1,
                       one + (1u << (fb - 1)),
                       pow2_bits(fmt, F->emin + F->p),
                       pow2_bits(fmt, F->emax),
                       F->max_finite,
                       E,
                       ((uint32_t)(F->bias + 3) << fb) | (0x55555555u & F->frac_mask),
                       E | Q | 1,
                       E | 1};
    size_t n = 0;
    for (size_t i = 0; i < sizeof mags / sizeof mags[0]; i++) {
        n = push(out, n, cap, mags[i]);
        n = push(out, n, cap, mags[i] | F->sign_mask);
    }
    return n;
}

/* A significand pattern: uniform, or shapes that make ties and carries. */
static uint32_t random_fraction(ts_rng *r, int nbits)
{
    uint32_t mask = nbits >= 32 ? 0xFFFFFFFFu : (1u << nbits) - 1;
    switch (ts_below(r, 8)) {
    case 0: return 0;
    case 1: return mask;
    case 2: return (1u << ts_below(r, (uint32_t)nbits)) & mask;
    case 3: return mask ^ ((1u << ts_below(r, (uint32_t)nbits)) & mask);
    case 4: return (uint32_t)ts_next(r) & (mask >> ts_below(r, (uint32_t)nbits)); /* low bits */
    case 5: return ((uint32_t)ts_next(r) & mask) & ~(mask >> ts_below(r, (uint32_t)nbits + 1));
    default: return (uint32_t)ts_next(r) & mask;
    }
}

uint32_t ts_value_with_exp(ts_rng *r, fpe_format_id fmt, int e)
{
    const orc_format *F = &orc_formats[fmt];
    uint32_t sign = (ts_next(r) & 1) ? F->sign_mask : 0;
    int lowest = F->emin - F->frac_bits;
    if (e > F->emax) e = F->emax;
    if (e < lowest) e = lowest;
    if (e >= F->emin)
        return sign | ((uint32_t)(e + F->bias) << F->frac_bits) | random_fraction(r, F->frac_bits);
    int k = e - lowest; /* position of the leading bit of the subnormal */
    uint32_t frac = (1u << k) | (k ? random_fraction(r, k) : 0);
    return sign | frac;
}

int ts_exponent_of(fpe_format_id fmt, uint32_t bits)
{
    int e;
    frexp(orc_to_double(fmt, bits), &e);
    return e - 1;
}

uint32_t ts_random_operand(ts_rng *r, fpe_format_id fmt)
{
    const orc_format *F = &orc_formats[fmt];
    uint32_t mask = F->bits == 32 ? 0xFFFFFFFFu : 0xFFFFu;
    uint32_t pick = ts_below(r, 100);
    if (pick < 25) return (uint32_t)ts_next(r) & mask;
    if (pick < 33) {
        uint32_t sp[128];
        size_t n = ts_special_values(fmt, sp, 128);
        return sp[ts_below(r, (uint32_t)n)];
    }
    int lowest = F->emin - F->frac_bits;
    if (pick < 48)
        return ts_value_with_exp(r, fmt, lowest + (int)ts_below(r, (uint32_t)(F->p + 3)));
    if (pick < 58) return ts_value_with_exp(r, fmt, F->emax - (int)ts_below(r, 3));
    return ts_value_with_exp(r, fmt, lowest + (int)ts_below(r, (uint32_t)(F->emax - lowest + 1)));
}

static int finite_nonzero(fpe_format_id fmt, uint32_t bits)
{
    double v = orc_to_double(fmt, bits);
    return isfinite(v) && v != 0;
}

static uint64_t random_int_operand(ts_rng *r, int bits)
{
    uint64_t mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    uint64_t v;
    switch (ts_below(r, 6)) {
    case 0: v = ts_next(r); break;
    case 1: v = ts_next(r) >> ts_below(r, 64); break; /* any length */
    case 2:
        v = (UINT64_C(1) << ts_below(r, (uint32_t)bits)) + (uint64_t)(int)(ts_below(r, 9) - 4);
        break; /* near 2^k */
    case 3: {  /* p+1..p+3 significant bits with a tie pattern */
        int len = 9 + (int)ts_below(r, 20);
        v = ((ts_next(r) | 1) >> (64 - len)) << ts_below(r, 64 - (uint32_t)len);
        break;
    }
    case 4: v = (uint64_t)(int64_t)(int)(ts_below(r, 2001) - 1000); break; /* small */
    default: v = ts_next(r) >> ts_below(r, 40); break;
    }
    v &= mask;
    if (ts_next(r) & 1) v = (uint64_t)0 - v; /* negative, for the signed kinds */
    return v & mask;
}

static uint64_t random_f64_operand(ts_rng *r, fpe_format_id fmt)
{
    const orc_format *F = &orc_formats[fmt];
    uint32_t pick = ts_below(r, 10);
    double x;
    if (pick < 2) {
        uint64_t u = ts_next(r);
        return u; /* any double, NaNs included */
    }
    /* a format value, then nudged: to a midpoint, just off it, or anywhere */
    uint32_t base = ts_random_operand(r, fmt);
    x = orc_to_double(fmt, base);
    if (!isfinite(x)) {
        double d;
        uint64_t u = ts_next(r);
        memcpy(&d, &u, sizeof d);
        return u;
    }
    int e = ts_exponent_of(fmt, base);
    if (x == 0) e = F->emin;
    int q = (e > F->emin ? e : F->emin) - F->frac_bits; /* quantum exponent */
    double delta;
    switch (ts_below(r, 5)) {
    case 0: delta = ldexp(1.0, q - 1); break;                          /* midpoint */
    case 1: delta = ldexp(1.0, q - 1) + ldexp(1.0, q - 1 - 30); break; /* just above */
    case 2: delta = ldexp(1.0, q - 1) - ldexp(1.0, q - 1 - 30); break; /* just below */
    case 3: delta = ldexp(ts_uniform(r), q); break;
    default: delta = ldexp(1.0, q - 40 - (int)ts_below(r, 12)); break; /* sticky only */
    }
    if (ts_next(r) & 1) delta = -delta;
    x += delta;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

void ts_random_operands(ts_rng *r, orc_op op, fpe_format_id fmt, uint64_t *o)
{
    const orc_format *F = &orc_formats[fmt];
    const int p = F->p;
    uint32_t a = ts_random_operand(r, fmt);
    uint32_t b = ts_random_operand(r, fmt);
    uint32_t c = ts_random_operand(r, fmt);
    int ea = finite_nonzero(fmt, a) ? ts_exponent_of(fmt, a) : 0;
    int eb = finite_nonzero(fmt, b) ? ts_exponent_of(fmt, b) : 0;
    uint32_t pick = ts_below(r, 100);
    switch (op) {
    case ORC_ADD:
    case ORC_SUB:
        if (pick < 40) {
            b = ts_value_with_exp(r, fmt, ea + (int)ts_below(r, 7) - 3); /* cancellation */
        } else if (pick < 50 && finite_nonzero(fmt, a)) {
            b = (a + ts_below(r, 9) - 4) ^ ((ts_next(r) & 1) ? F->sign_mask : 0); /* a +- few ulp */
        } else if (pick < 65) {
            b = ts_value_with_exp(r, fmt, ea - p + (int)ts_below(r, 5) - 2); /* sticky */
        }
        break;
    case ORC_MUL:
        if (pick < 30)
            b = ts_value_with_exp(r, fmt, F->emin - ea - (int)ts_below(r, (uint32_t)p + 4) + 1);
        else if (pick < 50)
            b = ts_value_with_exp(r, fmt, F->emax - ea + (int)ts_below(r, 3) - 1);
        else if (pick < 60)
            b = ts_value_with_exp(r, fmt, (int)ts_below(r, 3) - 1);
        break;
    case ORC_DIV:
        if (pick < 30)
            b = ts_value_with_exp(r, fmt, ea - F->emin + (int)ts_below(r, (uint32_t)p + 4) - 1);
        else if (pick < 50)
            b = ts_value_with_exp(r, fmt, ea - F->emax + (int)ts_below(r, 3) - 1);
        else if (pick < 60 && finite_nonzero(fmt, a))
            b = a + ts_below(r, 5) - 2; /* quotients near 1 */
        break;
    case ORC_MULADD: {
        if (pick < 25) /* product near the underflow threshold */
            b = ts_value_with_exp(r, fmt, F->emin - ea - (int)ts_below(r, (uint32_t)p + 4) + 1);
        else if (pick < 35)
            b = ts_value_with_exp(r, fmt, F->emax - ea + (int)ts_below(r, 3) - 1);
        eb = finite_nonzero(fmt, b) ? ts_exponent_of(fmt, b) : 0;
        uint32_t pc = ts_below(r, 100);
        if (pc < 45) /* cancellation against the product */
            c = ts_value_with_exp(r, fmt, ea + eb + (int)ts_below(r, 5) - 2);
        else if (pc < 65) /* c tiny against the product: sticky bits */
            c = ts_value_with_exp(r, fmt, ea + eb - p - (int)ts_below(r, (uint32_t)p + 2));
        else if (pc < 75) /* product tiny against c */
            c = ts_value_with_exp(r, fmt, ea + eb + p + (int)ts_below(r, 4) - 1);
        break;
    }
    case ORC_FROM_I32:
    case ORC_FROM_UI32: o[0] = random_int_operand(r, 32); return;
    case ORC_FROM_I64:
    case ORC_FROM_UI64: o[0] = random_int_operand(r, 64); return;
    case ORC_FROM_F64: o[0] = random_f64_operand(r, fmt); return;
    default: break;
    }
    uint32_t mask = F->bits == 32 ? 0xFFFFFFFFu : 0xFFFFu; /* the +-k ulp cases may wrap */
    o[0] = a & mask;
    o[1] = b & mask;
    o[2] = c & mask;
}
