/* array_vs_scalar.h: the array arithmetic (fpe_array_arith) held to the scalar operations
 * (fpe_f16_add ...), element by element: results, the OR of the flags, the counts by their
 * definitions in fpe.h and the random index.  Shared by test_array_ops (unit) and
 * test_array_exhaustive. */
#ifndef AMPSCOPE_TESTS_ARRAY_VS_SCALAR_H
#define AMPSCOPE_TESTS_ARRAY_VS_SCALAR_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fpe.h"

static const char *const avs_op_names[FPE_ARITH_OP_COUNT] = {"add", "sub", "mul",
                                                             "div", "fma", "sqrt"};
static const char *const avs_mode_names[FPE_ROUND_COUNT] = {
    "near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"};

/* The scalar operation on one element at random index `index`; *fl its flags. */
static uint16_t avs_scalar(const fpe_env *env0, int fmt, int op, uint16_t a, uint16_t b, uint16_t c,
                           uint64_t index, uint8_t *fl)
{
    fpe_env e = *env0;
    e.flags = 0;
    e.sr_index = index;
    const bool h = fmt == FPE_FMT_F16;
    uint16_t r;
    switch (op) {
    case FPE_ARITH_ADD: r = h ? fpe_f16_add(&e, a, b) : fpe_bf16_add(&e, a, b); break;
    case FPE_ARITH_SUB: r = h ? fpe_f16_sub(&e, a, b) : fpe_bf16_sub(&e, a, b); break;
    case FPE_ARITH_MUL: r = h ? fpe_f16_mul(&e, a, b) : fpe_bf16_mul(&e, a, b); break;
    case FPE_ARITH_DIV: r = h ? fpe_f16_div(&e, a, b) : fpe_bf16_div(&e, a, b); break;
    case FPE_ARITH_FMA: r = h ? fpe_f16_mulAdd(&e, a, b, c) : fpe_bf16_mulAdd(&e, a, b, c); break;
    default: r = h ? fpe_f16_sqrt(&e, a) : fpe_bf16_sqrt(&e, a); break;
    }
    *fl = e.flags;
    return r;
}

/* The counts of one element by their definitions in fpe.h. */
static void avs_count(int fmt, uint16_t r, uint8_t fl, fpe_array_counts *k)
{
    const uint32_t mag = r & 0x7FFFu, fb = fmt == FPE_FMT_F16 ? 10 : 7;
    const uint32_t emax_field = fmt == FPE_FMT_F16 ? 0x1F : 0xFF;
    k->inexact += (fl & FPE_FLAG_INEXACT) != 0;
    k->flushed += mag == 0 && (fl & FPE_FLAG_INEXACT) != 0;
    k->subnormal += mag != 0 && (mag >> fb) == 0;
    k->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
    k->nan += (mag >> fb) == emax_field && (mag & ((1u << fb) - 1)) != 0;
}

static void avs_describe(const fpe_env *e, int fmt, int op, char *buf, size_t size)
{
    snprintf(buf, size, "%s %s mode=%s tininess=%s daz=%d ftz=%d nan=%d",
             fmt == FPE_FMT_F16 ? "fp16" : "bf16", avs_op_names[op], avs_mode_names[e->round],
             e->tininess ? "before" : "after", e->daz, e->ftz, e->nan);
}

/* Run op on a, b, c (b, c may be NULL where op does not read them) in env0's settings with
 * fpe_array_arith and compare with the scalar loop.  in_place: 0 out is its own array, 1 out
 * is a copy of a passed as a, 2 as b, 3 as c (work: scratch of n elements for that copy).
 * Returns the number of mismatches (the first few printed). */
__attribute__((unused)) static uint64_t avs_check(const fpe_env *env0, int fmt, int op,
                                                  const uint16_t *a, const uint16_t *b,
                                                  const uint16_t *c, size_t n, int in_place,
                                                  uint16_t *out)
{
    static unsigned printed;
    uint64_t bad = 0;
    char what[160];
    fpe_env env = *env0;
    env.flags = 0;
    const uint16_t *aa = a, *bb = b, *cc = c;
    if (in_place) {
        const uint16_t *src = in_place == 1 ? a : in_place == 2 ? b : c;
        memcpy(out, src, n * sizeof *out);
        if (in_place == 1) aa = out;
        if (in_place == 2) bb = out;
        if (in_place == 3) cc = out;
    }
    fpe_array_counts got = {0, 0, 0, 0, 0}, want = {0, 0, 0, 0, 0};
    const int rc =
        fpe_array_arith(&env, (fpe_format_id)fmt, (fpe_arith_op)op, aa, bb, cc, out, n, &got);
    uint8_t want_flags = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t fl;
        const uint16_t w =
            avs_scalar(env0, fmt, op, a[i], b ? b[i] : 0, c ? c[i] : 0, env0->sr_index + i, &fl);
        want_flags |= fl;
        avs_count(fmt, w, fl, &want);
        if (w != out[i]) {
            if (++bad <= 5 && printed++ < 40) {
                avs_describe(env0, fmt, op, what, sizeof what);
                printf("MISMATCH %s: element %zu of %zu a=0x%04x b=0x%04x c=0x%04x: array "
                       "0x%04x, scalar 0x%04x\n",
                       what, i, n, a[i], b ? b[i] : 0, c ? c[i] : 0, out[i], w);
            }
        }
    }
    if (rc != FPE_OK || env.flags != want_flags || env.sr_index != env0->sr_index + n ||
        memcmp(&got, &want, sizeof got) != 0) {
        bad++;
        if (printed++ < 40) {
            avs_describe(env0, fmt, op, what, sizeof what);
            printf("MISMATCH %s, %zu elements: rc %d, flags 0x%02x (scalar 0x%02x), index "
                   "+%" PRIu64 ", counts flushed %" PRIu64 "/%" PRIu64 " subnormal %" PRIu64
                   "/%" PRIu64 " overflowed %" PRIu64 "/%" PRIu64 " inexact %" PRIu64 "/%" PRIu64
                   " nan %" PRIu64 "/%" PRIu64 "\n",
                   what, n, rc, env.flags, want_flags, env.sr_index - env0->sr_index, got.flushed,
                   want.flushed, got.subnormal, want.subnormal, got.overflowed, want.overflowed,
                   got.inexact, want.inexact, got.nan, want.nan);
        }
    }
    return bad;
}

#endif
