/* chop_vs_scalar.h: the array rounding (fpe_chop_f32_to_u16, fpe_chop_f32) held to the scalar
 * conversion (fpe_f32_to_f16 / fpe_f32_to_bf16), element by element: results, flags, counts and
 * the random index, on the hardware path (chop_hw.h) where the library takes it and on the
 * portable loops.  Shared by test_chop_scalar (unit) and test_chop_exhaustive. */
#ifndef AMPSCOPE_TESTS_CHOP_VS_SCALAR_H
#define AMPSCOPE_TESTS_CHOP_VS_SCALAR_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chop_hw.h" /* the hardware path, allowed or not */
#include "fpe.h"

static const char *const cvs_mode_names[FPE_ROUND_COUNT] = {
    "near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"};

/* The scalar conversion of bits x at random index `index` in env0's settings; *fl its flags. */
static uint16_t cvs_scalar(const fpe_env *env0, int fmt, uint32_t x, uint64_t index, uint8_t *fl)
{
    fpe_env e = *env0;
    e.flags = 0;
    e.sr_index = index;
    const uint16_t r = fmt == FPE_FMT_F16 ? fpe_f32_to_f16(&e, x) : fpe_f32_to_bf16(&e, x);
    *fl = e.flags;
    return r;
}

/* The counts of one element by their definitions in fpe.h. */
static void cvs_count(const fpe_env *env0, int fmt, uint32_t x, uint16_t r, uint8_t fl,
                      fpe_chop_counts *c)
{
    const uint32_t a = x & 0x7FFFFFFFu;
    const bool finite_nonzero = (a >> 23) != 0xFF && a != 0;
    const uint32_t mag = r & 0x7FFFu, fbits = fmt == FPE_FMT_F16 ? 10 : 7;
    c->flushed += finite_nonzero && mag == 0;
    c->subnormal += mag != 0 && (mag >> fbits) == 0;
    c->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
    c->inexact += (fl & FPE_FLAG_INEXACT) != 0 || (env0->daz && (a >> 23) == 0 && a != 0);
}

static void cvs_describe(const fpe_env *e, int fmt, char *buf, size_t size)
{
    snprintf(buf, size, "%s mode=%s tininess=%s daz=%d ftz=%d nan=%d",
             fmt == FPE_FMT_F16 ? "fp16" : "bf16", cvs_mode_names[e->round],
             e->tininess ? "before" : "after", e->daz, e->ftz, e->nan);
}

#define CVS_MAX 65536

/* The paths to hold to the scalar conversion in env0's settings: a host path where the library
 * uses one (chop_hw.h: fp16 on vcvtps2ph, bf16 in AVX2 lanes), and always the portable loops. */
static int cvs_paths(const fpe_env *env0, int fmt)
{
    return fpe_chop_hw_applies(env0, fmt) || fpe_chop_bf16_applies(env0, fmt) ? 2 : 1;
}

/* Path p of cvs_paths: allow the hardware (0) or forbid it (1); returns the previous setting. */
static bool cvs_path_begin(int npaths, int p) { return fpe_chop_hw_enable(npaths == 2 && p == 0); }

static const char *cvs_path_name(int npaths, int p)
{
    return npaths == 2 && p == 0 ? "hardware" : "portable";
}

/* Chop in[0..n) (n <= CVS_MAX) in env0's settings with fpe_chop_f32_to_u16 (with counts when
 * `counts`) on each path and compare with the scalar conversion; also, when check_f32,
 * fpe_chop_f32's floats against the widened scalar results.  Returns the number of mismatches
 * (the first few printed). */
static uint64_t cvs_check(const fpe_env *env0, int fmt, const float *in, size_t n, bool counts,
                          bool check_f32, uint16_t *out, float *fout)
{
    static uint16_t want[CVS_MAX];
    uint64_t bad = 0;
    char what[160];
    if (n > CVS_MAX) {
        printf("MISMATCH cvs_check: %zu elements, more than %d\n", n, CVS_MAX);
        return 1;
    }
    fpe_chop_counts wc = {0, 0, 0, 0};
    uint8_t want_flags = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &in[i], sizeof x);
        uint8_t fl;
        want[i] = cvs_scalar(env0, fmt, x, env0->sr_index + i, &fl);
        want_flags |= fl;
        cvs_count(env0, fmt, x, want[i], fl, &wc);
    }
    const int npaths = cvs_paths(env0, fmt);
    for (int p = 0; p < npaths; p++) {
        const bool was = cvs_path_begin(npaths, p);
        fpe_env env = *env0;
        env.flags = 0;
        fpe_chop_counts got = {0, 0, 0, 0};
        fpe_chop_f32_to_u16(&env, (fpe_format_id)fmt, in, out, n, counts ? &got : NULL);
        cvs_describe(env0, fmt, what, sizeof what);
        snprintf(what + strlen(what), sizeof what - strlen(what), " %s", cvs_path_name(npaths, p));
        for (size_t i = 0; i < n; i++)
            if (want[i] != out[i] && bad++ < 5) {
                uint32_t x;
                memcpy(&x, &in[i], sizeof x);
                printf("MISMATCH %s element %zu input %08" PRIX32 ": scalar %04X, array %04X\n",
                       what, i, x, want[i], out[i]);
            }
        if (env.flags != want_flags && bad++ < 5)
            printf("MISMATCH %s: flags %02X, the scalar elements' OR %02X\n", what, env.flags,
                   want_flags);
        if (env.sr_index != env0->sr_index + n && bad++ < 5) printf("MISMATCH %s sr_index\n", what);
        if (counts && memcmp(&got, &wc, sizeof got) != 0 && bad++ < 5)
            printf("MISMATCH %s counts (flushed subnormal overflowed inexact): scalar %" PRIu64
                   " %" PRIu64 " %" PRIu64 " %" PRIu64 ", array %" PRIu64 " %" PRIu64 " %" PRIu64
                   " %" PRIu64 "\n",
                   what, wc.flushed, wc.subnormal, wc.overflowed, wc.inexact, got.flushed,
                   got.subnormal, got.overflowed, got.inexact);
        if (check_f32) {
            fpe_env e2 = *env0;
            e2.flags = 0;
            fpe_chop_counts got2 = {0, 0, 0, 0};
            fpe_chop_f32(&e2, (fpe_format_id)fmt, in, fout, n, counts ? &got2 : NULL);
            for (size_t i = 0; i < n; i++) {
                fpe_env q = fpe_env_default();
                q.nan = env0->nan;
                const uint32_t wide =
                    fmt == FPE_FMT_F16 ? fpe_f16_to_f32(&q, want[i]) : (uint32_t)want[i] << 16;
                uint32_t g;
                memcpy(&g, &fout[i], sizeof g);
                if (g != wide && bad++ < 5)
                    printf("MISMATCH %s fpe_chop_f32 element %zu: %08" PRIX32 ", widened %08" PRIX32
                           "\n",
                           what, i, g, wide);
            }
            if (e2.flags != want_flags || (counts && memcmp(&wc, &got2, sizeof wc) != 0))
                if (bad++ < 5) printf("MISMATCH %s fpe_chop_f32 flags or counts\n", what);
        }
        fpe_chop_hw_enable(was);
    }
    return bad;
}

/* Each element alone (n = 1 calls) on each path: its flags exactly.  Returns the mismatches. */
static uint64_t cvs_check_each(const fpe_env *env0, int fmt, const float *in, size_t n)
{
    uint64_t bad = 0;
    const int npaths = cvs_paths(env0, fmt);
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &in[i], sizeof x);
        uint8_t fl;
        const uint16_t want = cvs_scalar(env0, fmt, x, env0->sr_index + i, &fl);
        fpe_chop_counts w = {0, 0, 0, 0};
        cvs_count(env0, fmt, x, want, fl, &w);
        for (int p = 0; p < npaths; p++) {
            const bool was = cvs_path_begin(npaths, p);
            fpe_env env = *env0;
            env.flags = 0;
            env.sr_index = env0->sr_index + i;
            uint16_t r;
            fpe_chop_counts c = {0, 0, 0, 0};
            fpe_chop_f32_to_u16(&env, (fpe_format_id)fmt, &in[i], &r, 1, &c);
            fpe_chop_hw_enable(was);
            if ((r != want || env.flags != fl || memcmp(&c, &w, sizeof c) != 0) && bad++ < 5) {
                char what[128];
                cvs_describe(env0, fmt, what, sizeof what);
                printf("MISMATCH %s %s alone, input %08" PRIX32 ": scalar %04X flags %02X, "
                       "array %04X flags %02X\n",
                       what, cvs_path_name(npaths, p), x, want, fl, r, env.flags);
            }
        }
    }
    return bad;
}

#endif
