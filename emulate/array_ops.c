/* array_ops.c: element-wise add, sub, mul, div, fma and sqrt on fp16 and bf16 arrays, with
 * counts (issue 19).
 *
 * Every element is the scalar operation's result (fpe_f16_add ...) at random index
 * env->sr_index + i, flags included.  Arrays go in blocks of ARRAY_BLOCK.  A block first
 * tries the cheap binary32 loop (array_easy.h: normal operands, normal results); if that
 * leaves more than 1/16 of it, a loop for every finite class takes the block: in the
 * deterministic modes array_wide.h's (binary32, rounded by the array rounding: fp16, bf16
 * add/sub) or array_wide_bf16.h's (binary64 made binary32, bf16 mul, div, fma, sqrt), in the
 * stochastic ones the binary64 loop (array_lanes.h: 32 bits below the last kept one).  Each
 * computes the elements it can prove (the proofs are in the headers) and marks the others,
 * which then go through the scalar operation one by one, with their own random index.
 * Results are written to a block buffer first, so out may be one of the operands. */
#include <fenv.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "array_easy.h"
#include "array_lanes.h"
#include "array_wide.h"
#include "array_wide_bf16.h"
#include "fpe_ops.h"
#include "vector.h"

#define ARRAY_BLOCK 512

/* The settings a vector loop reads besides the mode, as lane masks. */
typedef struct lane_env {
    v4q ftz, after, daz;
    uint16_t negate_b;    /* 0x8000 for sub: b's sign flipped */
    uint16_t default_nan; /* the invalid operation's result (fpe_default_nan) */
} lane_env;

/* The vector loop for one operation, format and mode (constants after inlining), n a multiple
 * of ARRAY_LANES.  rnd holds the random words of the block's elements (stochastic modes). */
FPE_INLINE void arith_lanes(fpe_format_id f, int op, int mode, const lane_env *le,
                            const uint16_t *a, const uint16_t *b, const uint16_t *c,
                            uint16_t *restrict res, uint8_t *restrict marks,
                            const uint32_t *restrict rnd, size_t n, array_tally *t)
{
    const v4q zero = {0};
    const uint32_t emax_field = fk_expfield_max(f), fb = (uint32_t)fk_fbits(f);
    const uint32_t fmin = (uint32_t)1 << fb;
    /* bits of s below level p + 32 (array_lanes.h) */
    const uint64_t low = ((uint64_t)1 << (53 - fk_p(f) - 32)) - 1;
    v4q flags_ix = zero, flags_uf = zero, flags_ov = zero, flags_inv = zero;
    v4q n_declined = zero, n_inexact = zero, n_flushed = zero, n_sub = zero, n_over = zero;
    v4q n_nan = zero;
    for (size_t i = 0; i < n; i += ARRAY_LANES) {
        v4q x = lane_load16(a + i), y = zero, z = zero;
        if (op != FPE_ARITH_SQRT) y = lane_load16(b + i) ^ le->negate_b;
        if (op == FPE_ARITH_FMA) z = lane_load16(c + i);
        /* denormals are zero: a subnormal operand becomes a zero of its sign */
        x = lane_sel(le->daz & LANE_MASK(((x >> fb) & emax_field) == 0), x & 0x8000, x);
        y = lane_sel(le->daz & LANE_MASK(((y >> fb) & emax_field) == 0), y & 0x8000, y);
        z = lane_sel(le->daz & LANE_MASK(((z >> fb) & emax_field) == 0), z & 0x8000, z);
        v4q decline = LANE_MASK(((x >> fb) & emax_field) == emax_field) |
                      LANE_MASK(((y >> fb) & emax_field) == emax_field) |
                      LANE_MASK(((z >> fb) & emax_field) == emax_field);
        const v4d dx = (v4d)lane_to_f64(f, x), dy = (v4d)lane_to_f64(f, y);
        const v4d dz = (v4d)lane_to_f64(f, z);
        v4d s;
        v4q invalid = zero; /* the square roots of negative numbers: the default NaN */
        switch (op) {
        case FPE_ARITH_MUL: s = dx * dy; break;
        case FPE_ARITH_DIV: {
            const v4q by_zero = LANE_MASK((y & 0x7FFF) == 0);
            decline |= by_zero;
            s = dx / (v4d)lane_sel(by_zero, (v4q)(zero + 0x3FF0000000000000ull), (v4q)dy);
            break;
        }
        case FPE_ARITH_SQRT: {
            invalid = LANE_MASK(x > 0x8000) & ~decline; /* finite, negative, not -0 */
            const v4d pos = (v4d)((v4q)dx & 0x7FFFFFFFFFFFFFFFull);
            for (int k = 0; k < ARRAY_LANES; k++)
                s[k] = __builtin_sqrt(pos[k]);
            s = (v4d)((v4q)s | ((v4q)dx & 0x8000000000000000ull)); /* sqrt(-0) = -0 */
            if (mode == FPE_SR_PROP) decline |= LANE_MASK(((v4q)s & low) == 0) & ~invalid;
            break;
        }
        case FPE_ARITH_FMA: {
            const v4d prod = dx * dy;
            s = lane_sum_odd(prod, dz, prod + dz);
            if (mode == FPE_RD) { /* an exact zero sum is -0 unless both terms are +0 */
                const v4q pos0 = LANE_MASK((v4q)prod == 0) & LANE_MASK((v4q)dz == 0);
                s = (v4d)((v4q)s | (LANE_MASK(s == 0) & ~pos0 & 0x8000000000000000ull));
            }
            break;
        }
        default: /* add, and sub with b negated */
            s = dx + dy;
            if (f == FPE_FMT_BF16) s = lane_sum_odd(dx, dy, s);
            if (mode == FPE_RD) {
                const v4q pos0 = LANE_MASK(x == 0) & LANE_MASK(y == 0);
                s = (v4d)((v4q)s | (LANE_MASK(s == 0) & ~pos0 & 0x8000000000000000ull));
            }
            break;
        }
        const v4q r32 = mode >= FPE_SR_PROP ? lane_load32(rnd + i) : zero;
        lane_flags fl;
        /* (a root is never tiny: lane_round declines no `invalid` lane) */
        v4q r = lane_round(f, mode, le->ftz, le->after, (v4q)s, r32, &fl, &decline);
        r = lane_sel(invalid, zero + le->default_nan, r);
        const v4q keep = ~decline & ~invalid, mag = r & 0x7FFF;
        flags_inv |= invalid;
        n_nan -= invalid;
        flags_ix |= fl.inexact & keep;
        flags_uf |= fl.underflow & keep;
        flags_ov |= fl.overflow & keep;
        n_declined -= decline;
        n_inexact -= fl.inexact & keep;
        n_flushed -= fl.inexact & keep & LANE_MASK(mag == 0);
        n_sub -= keep & LANE_MASK(mag != 0) & LANE_MASK(mag < fmin);
        n_over -= fl.overflow & keep;
        const v4h r16 = __builtin_convertvector(r, v4h);
        memcpy(res + i, &r16, sizeof r16);
        const v4b m8 = __builtin_convertvector(decline & 1, v4b);
        memcpy(marks + i, &m8, sizeof m8);
    }
    bool ix = false, uf = false, ov = false, inv = false;
    t->declined = t->inexact = t->flushed = t->subnormal = t->overflowed = t->nan = 0;
    for (int k = 0; k < ARRAY_LANES; k++) {
        inv |= flags_inv[k] != 0;
        t->nan += n_nan[k];
        ix |= flags_ix[k] != 0;
        uf |= flags_uf[k] != 0;
        ov |= flags_ov[k] != 0;
        t->declined += n_declined[k];
        t->inexact += n_inexact[k];
        t->flushed += n_flushed[k];
        t->subnormal += n_sub[k];
        t->overflowed += n_over[k];
    }
    t->flags = (ix ? FPE_FLAG_INEXACT : 0) | (uf ? FPE_FLAG_UNDERFLOW : 0) |
               (ov ? FPE_FLAG_OVERFLOW : 0) | (inv ? FPE_FLAG_INVALID : 0);
}

/* One block through the vector loop: the operation and format picked here, the mode made a
 * constant for each. */
FPE_VECTOR static void arith_block_vector(int fmt, int op, const fpe_env *env, const uint16_t *a,
                                          const uint16_t *b, const uint16_t *c,
                                          uint16_t *restrict res, uint8_t *restrict marks,
                                          const uint32_t *restrict rnd, size_t n, array_tally *t)
{
    const v4q zero = {0};
    const lane_env le = {zero - (uint64_t)(env->ftz != 0),
                         zero - (uint64_t)(env->tininess == FPE_TININESS_AFTER),
                         zero - (uint64_t)(env->daz != 0), op == FPE_ARITH_SUB ? 0x8000 : 0,
                         (uint16_t)fpe_default_nan((fpe_format_id)fmt, env)};
#define ARITH_MODE(F, OP, M)                                                                       \
    case M:                                                                                        \
        arith_lanes(F, OP, M, &le, a, b, c, res, marks, rnd, n, t);                                \
        break;
#define ARITH_MODES(F, OP)                                                                         \
    switch (env->round) {                                                                          \
        ARITH_MODE(F, OP, FPE_RNE)                                                                 \
        ARITH_MODE(F, OP, FPE_RNA)                                                                 \
        ARITH_MODE(F, OP, FPE_RD)                                                                  \
        ARITH_MODE(F, OP, FPE_RU)                                                                  \
        ARITH_MODE(F, OP, FPE_RO)                                                                  \
        ARITH_MODE(F, OP, FPE_SR_PROP)                                                             \
        ARITH_MODE(F, OP, FPE_SR_EQUAL)                                                            \
    default: /* and FPE_RZ */ ARITH_MODE(F, OP, FPE_RZ)                                            \
    }
#define ARITH_OPS(F)                                                                               \
    switch (op) {                                                                                  \
    case FPE_ARITH_MUL: ARITH_MODES(F, FPE_ARITH_MUL) break;                                       \
    case FPE_ARITH_DIV: ARITH_MODES(F, FPE_ARITH_DIV) break;                                       \
    case FPE_ARITH_FMA: ARITH_MODES(F, FPE_ARITH_FMA) break;                                       \
    case FPE_ARITH_SQRT: ARITH_MODES(F, FPE_ARITH_SQRT) break;                                     \
    default: /* add, sub */ ARITH_MODES(F, FPE_ARITH_ADD) break;                                   \
    }
    if (fmt == FPE_FMT_F16) {
        ARITH_OPS(FPE_FMT_F16)
    } else {
        ARITH_OPS(FPE_FMT_BF16)
    }
#undef ARITH_OPS
#undef ARITH_MODES
#undef ARITH_MODE
}

/* Whether the cheap first try (array_easy.h) knows the operation in this mode. */
static bool easy_applies(int op, int mode)
{
    if (op == FPE_ARITH_SQRT) return mode < FPE_SR_PROP;
    return !(op == FPE_ARITH_DIV && mode == FPE_SR_PROP);
}

/* One block through the cheap first try; returns the number of inexact results. */
FPE_VECTOR static size_t arith_block_easy(int fmt, int op, int mode, const uint16_t *a,
                                          const uint16_t *b, const uint16_t *c,
                                          uint16_t *restrict res, uint8_t *restrict marks,
                                          const uint32_t *restrict rnd, size_t n, size_t *hard)
{
    const uint16_t neg = op == FPE_ARITH_SUB ? 0x8000 : 0;
#define EASY_MODE(F, OP, M)                                                                        \
    case M:                                                                                        \
        return easy_lanes(F, OP, M, neg, a, b, c, res, marks, rnd, n, hard);
#define EASY_MODES(F, OP)                                                                          \
    switch (mode) {                                                                                \
        EASY_MODE(F, OP, FPE_RNE)                                                                  \
        EASY_MODE(F, OP, FPE_RNA)                                                                  \
        EASY_MODE(F, OP, FPE_RD)                                                                   \
        EASY_MODE(F, OP, FPE_RU)                                                                   \
        EASY_MODE(F, OP, FPE_RO)                                                                   \
        EASY_MODE(F, OP, FPE_SR_PROP)                                                              \
        EASY_MODE(F, OP, FPE_SR_EQUAL)                                                             \
    default: /* and FPE_RZ */ EASY_MODE(F, OP, FPE_RZ)                                             \
    }
#define EASY_OPS(F)                                                                                \
    switch (op) {                                                                                  \
    case FPE_ARITH_MUL: EASY_MODES(F, FPE_ARITH_MUL)                                               \
    case FPE_ARITH_DIV: EASY_MODES(F, FPE_ARITH_DIV)                                               \
    case FPE_ARITH_FMA: EASY_MODES(F, FPE_ARITH_FMA)                                               \
    case FPE_ARITH_SQRT: EASY_MODES(F, FPE_ARITH_SQRT) /* easy_applies: not stochastic */          \
    default: /* add, sub */ EASY_MODES(F, FPE_ARITH_ADD)                                           \
    }
    if (fmt == FPE_FMT_F16) {
        EASY_OPS(FPE_FMT_F16)
    } else {
        EASY_OPS(FPE_FMT_BF16)
    }
#undef EASY_OPS
#undef EASY_MODES
#undef EASY_MODE
}

/* One block through the binary32 loop of array_wide.h (wide_applies and wide_by_chop hold); returns
 * the number of elements marked for the scalar operation, *invalid the number of default NaNs. */
FPE_VECTOR static size_t arith_block_wide(int fmt, int op, bool rd, bool daz, const uint16_t *a,
                                          const uint16_t *b, const uint16_t *c, float *restrict s,
                                          uint8_t *restrict marks, size_t n, size_t *invalid)
{
    const uint16_t neg = op == FPE_ARITH_SUB ? 0x8000 : 0;
#define WIDE(F, OP) return wide_lanes(F, OP, rd, daz, neg, a, b, c, s, marks, n, invalid)
    if (fmt == FPE_FMT_BF16) WIDE(FPE_FMT_BF16, FPE_ARITH_ADD); /* and sub: wide_by_chop */
    switch (op) {
    case FPE_ARITH_MUL: WIDE(FPE_FMT_F16, FPE_ARITH_MUL);
    case FPE_ARITH_DIV: WIDE(FPE_FMT_F16, FPE_ARITH_DIV);
    case FPE_ARITH_FMA: WIDE(FPE_FMT_F16, FPE_ARITH_FMA);
    case FPE_ARITH_SQRT: WIDE(FPE_FMT_F16, FPE_ARITH_SQRT);
    default: WIDE(FPE_FMT_F16, FPE_ARITH_ADD); /* add, sub */
    }
#undef WIDE
}

/* One bf16 block through array_wide_bf16.h's loop (mul, div, fma, sqrt; deterministic modes). */
FPE_VECTOR static void arith_block_wide_bf16(int op, const fpe_env *env, const uint16_t *a,
                                             const uint16_t *b, const uint16_t *c,
                                             uint16_t *restrict res, uint8_t *restrict marks,
                                             size_t n, array_tally *t)
{
    const bool ftz = env->ftz != 0, after = env->tininess == FPE_TININESS_AFTER;
    const bool daz = env->daz != 0;
    const uint16_t dnan = (uint16_t)fpe_default_nan(FPE_FMT_BF16, env);
#define WB_MODE(OP, M)                                                                             \
    case M:                                                                                        \
        wb_lanes(OP, M, ftz, after, daz, dnan, a, b, c, res, marks, n, t);                         \
        return;
#define WB_MODES(OP)                                                                               \
    switch (env->round) {                                                                          \
        WB_MODE(OP, FPE_RNE)                                                                       \
        WB_MODE(OP, FPE_RNA)                                                                       \
        WB_MODE(OP, FPE_RD)                                                                        \
        WB_MODE(OP, FPE_RU)                                                                        \
        WB_MODE(OP, FPE_RO)                                                                        \
    default: /* and FPE_RZ (wide_applies: deterministic) */ WB_MODE(OP, FPE_RZ)                    \
    }
    switch (op) {
    case FPE_ARITH_MUL: WB_MODES(FPE_ARITH_MUL)
    case FPE_ARITH_DIV: WB_MODES(FPE_ARITH_DIV)
    case FPE_ARITH_FMA: WB_MODES(FPE_ARITH_FMA)
    default: WB_MODES(FPE_ARITH_SQRT) /* wide_by_chop: not add, sub */
    }
#undef WB_MODES
#undef WB_MODE
}

/* A vector loop's tally added to env's flags and the counts; returns the elements it declined
 * (marked for the scalar operation). */
static size_t tally_add(fpe_env *env, fpe_array_counts *k, const array_tally *t)
{
    env->flags |= (uint8_t)t->flags;
    k->inexact += t->inexact;
    k->flushed += t->flushed;
    k->subnormal += t->subnormal;
    k->overflowed += t->overflowed;
    k->nan += t->nan;
    return t->declined;
}

/* A block through arith_block_wide, its s rounded by the array rounding into res, or through
 * arith_block_wide_bf16; returns the number of elements left marked for the scalar operation. */
static size_t arith_wide(fpe_env *env, int fmt, int op, const uint16_t *a, const uint16_t *b,
                         const uint16_t *c, uint16_t *restrict res, uint8_t *restrict marks,
                         size_t n, fpe_array_counts *k)
{
    if (!wide_by_chop(fmt, op)) {
        array_tally t;
        arith_block_wide_bf16(op, env, a, b, c, res, marks, n, &t);
        return tally_add(env, k, &t);
    }
    float s[ARRAY_BLOCK];
    size_t invalid;
    const size_t hard = arith_block_wide(fmt, op, env->round == FPE_RD, env->daz != 0, a, b, c, s,
                                         marks, n, &invalid);
    fpe_env chop_env = *env; /* DAZ was applied to the operands; s is a result */
    chop_env.daz = 0;
    chop_env.flags = 0;
    fpe_chop_counts cc = {0, 0, 0, 0};
    (void)fpe_chop_f32_to_u16(&chop_env, (fpe_format_id)fmt, s, res, n, &cc);
    env->flags |= chop_env.flags;
    k->flushed += cc.flushed;
    k->subnormal += cc.subnormal;
    k->overflowed += cc.overflowed;
    k->inexact += cc.inexact;
    if (invalid) { /* square roots of negative numbers */
        const uint16_t dnan = (uint16_t)fpe_default_nan((fpe_format_id)fmt, env);
        for (size_t i = 0; i < n; i++)
            if (marks[i] == 2) res[i] = dnan, marks[i] = 0;
        env->flags |= FPE_FLAG_INVALID;
        k->nan += invalid;
    }
    return hard;
}

/* The scalar operation on one element (it advances env->sr_index). */
static uint16_t scalar_op(int fmt, int op, fpe_env *env, uint16_t a, uint16_t b, uint16_t c)
{
    const bool h = fmt == FPE_FMT_F16;
    switch (op) {
    case FPE_ARITH_ADD: return h ? fpe_f16_add(env, a, b) : fpe_bf16_add(env, a, b);
    case FPE_ARITH_SUB: return h ? fpe_f16_sub(env, a, b) : fpe_bf16_sub(env, a, b);
    case FPE_ARITH_MUL: return h ? fpe_f16_mul(env, a, b) : fpe_bf16_mul(env, a, b);
    case FPE_ARITH_DIV: return h ? fpe_f16_div(env, a, b) : fpe_bf16_div(env, a, b);
    case FPE_ARITH_FMA: return h ? fpe_f16_mulAdd(env, a, b, c) : fpe_bf16_mulAdd(env, a, b, c);
    default: return h ? fpe_f16_sqrt(env, a) : fpe_bf16_sqrt(env, a);
    }
}

/* Element i through the scalar operation at index `index`, counted by the definitions in
 * fpe.h. */
static uint16_t scalar_element(int fmt, int op, fpe_env *env, const uint16_t *a, const uint16_t *b,
                               const uint16_t *c, size_t i, uint64_t index, fpe_array_counts *k)
{
    const uint8_t saved = env->flags;
    env->flags = 0;
    env->sr_index = index;
    const uint16_t r = scalar_op(fmt, op, env, a[i], op == FPE_ARITH_SQRT ? 0 : b[i],
                                 op == FPE_ARITH_FMA ? c[i] : 0);
    const uint8_t fl = env->flags;
    env->flags = saved | fl;
    const uint32_t mag = r & 0x7FFFu, fb = (uint32_t)fk_fbits((fpe_format_id)fmt);
    const uint32_t ef = mag >> fb, emax_field = (uint32_t)fk_expfield_max((fpe_format_id)fmt);
    k->inexact += (fl & FPE_FLAG_INEXACT) != 0;
    k->flushed += mag == 0 && (fl & FPE_FLAG_INEXACT);
    k->subnormal += mag != 0 && ef == 0;
    k->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
    k->nan += ef == emax_field && (mag & fk_frac_mask((fpe_format_id)fmt)) != 0;
    return r;
}

/* The marked elements of res[0..whole) (left of them) through the scalar operation. */
static void scalar_marked(fpe_env *env, int fmt, int op, const uint16_t *a, const uint16_t *b,
                          const uint16_t *c, uint16_t *res, uint8_t *marks, size_t whole,
                          size_t left, uint64_t base, fpe_array_counts *k)
{
    memset(marks + whole, 0, 8);
    for (size_t i = 0; left > 0 && i < whole; i++) {
        uint64_t eight; /* skip eight unmarked elements at a time */
        memcpy(&eight, marks + i, sizeof eight);
        if (eight == 0) {
            i += 7;
            continue;
        }
        if (!marks[i]) continue;
        res[i] = scalar_element(fmt, op, env, a, b, c, i, base + i, k);
        left--;
    }
}

/* One block: elements a[0..n) ..., element i at index base + i.  *try_easy: whether to try
 * the cheap loop first (cleared when it left too many elements; the caller sets it again
 * every few blocks, in case the data changed). */
static void arith_block(fpe_env *env, int fmt, int op, bool vector, bool *try_easy,
                        const uint16_t *a, const uint16_t *b, const uint16_t *c, uint16_t *out,
                        size_t n, fpe_array_counts *k)
{
    uint16_t res[ARRAY_BLOCK];
    uint8_t marks[ARRAY_BLOCK + 8];
    uint32_t words[ARRAY_BLOCK + 8];
    const uint64_t base = env->sr_index;
    const size_t whole = vector ? n & ~(size_t)(EASY_LANES - 1) : 0;
    if (whole > 0) {
        const uint32_t *rnd = words + (base & 3);
        if (env->round >= FPE_SR_PROP) fpe_random_words(env, base, whole, words);
        size_t hard = whole + 1;
        if (*try_easy && easy_applies(op, env->round)) {
            const size_t inexact =
                arith_block_easy(fmt, op, env->round, a, b, c, res, marks, rnd, whole, &hard);
            if (hard * 16 <= whole) { /* none or a few left: the scalar operation for each */
                if (inexact) env->flags |= FPE_FLAG_INEXACT;
                k->inexact += inexact;
            } else {
                *try_easy = false;
            }
        }
        if (hard * 16 > whole && wide_applies(env->round)) {
            hard = arith_wide(env, fmt, op, a, b, c, res, marks, whole, k);
        } else if (hard * 16 > whole) {
            array_tally t;
            arith_block_vector(fmt, op, env, a, b, c, res, marks, rnd, whole, &t);
            hard = tally_add(env, k, &t);
        }
        scalar_marked(env, fmt, op, a, b, c, res, marks, whole, hard, base, k);
    }
    for (size_t i = whole; i < n; i++) /* the last few (or all, without the vector path) */
        res[i] = scalar_element(fmt, op, env, a, b, c, i, base + i, k);
    memcpy(out, res, n * sizeof *out);
    env->sr_index = base + n;
}

/* Whether the hardware rounds binary32 and binary64 as the proofs assume: to nearest, no
 * flush to zero, no denormals-are-zero, every exception masked (the default state). */
static bool hardware_default(void)
{
#if defined(__x86_64__) || defined(__i386__)
    const unsigned csr = _mm_getcsr();
    return (csr & 0xFFC0u) == 0x1F80u && fegetround() == FE_TONEAREST;
#else
    return fegetround() == FE_TONEAREST;
#endif
}

int fpe_array_arith(fpe_env *env, fpe_format_id fmt, fpe_arith_op op, const uint16_t *a,
                    const uint16_t *b, const uint16_t *c, uint16_t *out, size_t n,
                    fpe_array_counts *counts)
{
    if (!env || (fmt != FPE_FMT_F16 && fmt != FPE_FMT_BF16) || (unsigned)op >= FPE_ARITH_OP_COUNT)
        return FPE_EINVAL;
    if (n > 0 && (!a || !out || (op != FPE_ARITH_SQRT && !b) || (op == FPE_ARITH_FMA && !c)))
        return FPE_EINVAL;
    fpe_array_counts k = {0, 0, 0, 0, 0};
    const bool vector = hardware_default();
    bool try_easy = true;
    for (size_t i = 0, blk = 0; i < n; i += ARRAY_BLOCK, blk++) {
        const size_t m = n - i < ARRAY_BLOCK ? n - i : ARRAY_BLOCK;
        if (blk % 8 == 0) try_easy = true;
        arith_block(env, fmt, op, vector, &try_easy, a + i, op == FPE_ARITH_SQRT ? NULL : b + i,
                    op == FPE_ARITH_FMA ? c + i : NULL, out + i, m, &k);
    }
    if (counts) {
        counts->flushed += k.flushed;
        counts->subnormal += k.subnormal;
        counts->overflowed += k.overflowed;
        counts->inexact += k.inexact;
        counts->nan += k.nan;
    }
    return FPE_OK;
}

#define DEFINE(F, K)                                                                               \
    int fpe_##F##_add_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts)                                    \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_ADD, a, b, NULL, out, n, counts);                 \
    }                                                                                              \
    int fpe_##F##_sub_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts)                                    \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_SUB, a, b, NULL, out, n, counts);                 \
    }                                                                                              \
    int fpe_##F##_mul_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts)                                    \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_MUL, a, b, NULL, out, n, counts);                 \
    }                                                                                              \
    int fpe_##F##_div_array(fpe_env *env, const uint16_t *a, const uint16_t *b, uint16_t *out,     \
                            size_t n, fpe_array_counts *counts)                                    \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_DIV, a, b, NULL, out, n, counts);                 \
    }                                                                                              \
    int fpe_##F##_fma_array(fpe_env *env, const uint16_t *a, const uint16_t *b, const uint16_t *c, \
                            uint16_t *out, size_t n, fpe_array_counts *counts)                     \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_FMA, a, b, c, out, n, counts);                    \
    }                                                                                              \
    int fpe_##F##_sqrt_array(fpe_env *env, const uint16_t *a, uint16_t *out, size_t n,             \
                             fpe_array_counts *counts)                                             \
    {                                                                                              \
        return fpe_array_arith(env, K, FPE_ARITH_SQRT, a, NULL, NULL, out, n, counts);             \
    }
DEFINE(f16, FPE_FMT_F16)
DEFINE(bf16, FPE_FMT_BF16)
