/* bench_chop_before.c: the array rounding of emulate/chop.c as it was before issue 19, kept
 * callable as the "before" baseline of `ampscope bench emu` (bench_chop.c).
 *
 * A copy of the old code, not a reference for correctness (the tests hold the library to the
 * scalar conversion): a branch-free loop rounds the elements that are normal in and normal out
 * and marks the others, which take the scalar general path one by one with their own random
 * index.  Only fpe_chop_f32_to_u16's path is kept, and the float-returning one built on it. */
#include <string.h>

#include "bench_chop.h"
#include "fpe_ops.h"

#define BEFORE_BLOCK 1024

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define BEFORE_VECTOR      __attribute__((target_clones("avx2", "default")))
#define BEFORE_VECTOR_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define BEFORE_VECTOR
#define BEFORE_VECTOR_WIDE
#endif

static uint32_t before_one(fpe_format_id to, fpe_env *env, uint32_t x, fpe_chop_counts *c)
{
    const uint8_t saved = env->flags;
    env->flags = 0;
    const uint32_t r = fpe_convert_k(FPE_FMT_F32, to, env, x);
    const uint8_t fl = env->flags;
    env->flags = saved | fl;
    const bool x_finite_nonzero = (x & 0x7F800000u) != 0x7F800000u && (x & 0x7FFFFFFFu) != 0;
    const bool x_dazed = env->daz && (x & 0x7F800000u) == 0 && (x & 0x7FFFFFFFu) != 0;
    const uint32_t mag = r & (fk_sign(to) - 1);
    c->flushed += x_finite_nonzero && mag == 0;
    c->subnormal += mag != 0 && (mag >> fk_fbits(to)) == 0;
    c->overflowed += (fl & FPE_FLAG_OVERFLOW) != 0;
    c->inexact += (fl & FPE_FLAG_INEXACT) != 0 || x_dazed;
    return r;
}

BEFORE_VECTOR_WIDE static void before_random_words(const fpe_env *env, uint64_t base, size_t n,
                                                   uint32_t *restrict words)
{
    const uint32_t stream = env->sr_stream;
    const uint64_t first = base >> 2;
    const size_t blocks = (size_t)((((base + n - 1) >> 2) - first) + 1);
    const uint32_t k0 = (uint32_t)env->sr_seed, k1 = (uint32_t)(env->sr_seed >> 32);
    for (size_t j = 0; j < blocks; j++) {
        const uint64_t c = first + j;
        const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), stream, 0};
        const uint32_t key[2] = {k0, k1};
        fpe_philox4x32_10(ctr, key, words + 4 * j);
    }
}

#define BEFORE_EASY_LOOP(BIAS, ODD)                                                                \
    for (size_t i = 0; i < n; i++) {                                                               \
        uint32_t u;                                                                                \
        memcpy(&u, &in[i], sizeof u);                                                              \
        const uint32_t sign = u >> 31;                                                             \
        const uint32_t ef = (u >> 23) & 0xFF;                                                      \
        const uint32_t h = (u & 0x7FFFFFFFu) - rebias;                                             \
        const uint32_t rem = h & ulp_m1;                                                           \
        (void)sign;                                                                                \
        const uint32_t r = ((h + (BIAS)) >> shift) | ((ODD) & (rem != 0));                         \
        const uint32_t zero = (u & 0x7FFFFFFFu) == 0;                                              \
        const uint32_t easy = (ef - lo <= hi - lo) | zero;                                         \
        out[i] = (uint16_t)((sign << 15) | (r & (zero - 1u)));                                     \
        rare[i] = (uint8_t)!easy;                                                                  \
        inexact += (rem != 0) & easy & !zero;                                                      \
        nrare += !easy;                                                                            \
    }

BEFORE_VECTOR static size_t before_block_easy(int fmt, int mode, const float *restrict in,
                                              uint16_t *restrict out, uint8_t *restrict rare,
                                              const uint32_t *restrict rnd, size_t n,
                                              size_t *rare_count)
{
    const uint32_t lo = fmt == FPE_FMT_F16 ? 113 : 1, hi = fmt == FPE_FMT_F16 ? 141 : 253;
    const uint32_t rebias = fmt == FPE_FMT_F16 ? (uint32_t)(127 - 15) << 23 : 0;
    const int shift = fmt == FPE_FMT_F16 ? 13 : 16;
    const uint32_t ulp_m1 = ((uint32_t)1 << shift) - 1, half = (uint32_t)1 << (shift - 1);
    uint32_t inexact = 0, nrare = 0;
    switch (mode) {
    case FPE_RNE: BEFORE_EASY_LOOP(half - 1 + ((h >> shift) & 1), 0) break;
    case FPE_RNA: BEFORE_EASY_LOOP(half, 0) break;
    case FPE_RD: BEFORE_EASY_LOOP((0u - sign) & ulp_m1, 0) break;
    case FPE_RU: BEFORE_EASY_LOOP((sign - 1u) & ulp_m1, 0) break;
    case FPE_RO: BEFORE_EASY_LOOP(0, 1u) break;
    case FPE_SR_PROP: BEFORE_EASY_LOOP(ulp_m1 - (rnd[i] >> (32 - shift)), 0) break;
    case FPE_SR_EQUAL: BEFORE_EASY_LOOP((0u - (rnd[i] >> 31)) & ulp_m1, 0) break;
    default: BEFORE_EASY_LOOP(0, 0) break;
    }
    *rare_count = nrare;
    return inexact;
}

static void before_block(fpe_env *env, int fmt, const float *in, uint16_t *out, size_t n,
                         fpe_chop_counts *c)
{
    uint8_t rare[BEFORE_BLOCK];
    uint32_t words[BEFORE_BLOCK + 8];
    const uint64_t base = env->sr_index;
    if (env->round >= FPE_SR_PROP) before_random_words(env, base, n, words);
    size_t nrare;
    const size_t inexact =
        before_block_easy(fmt, env->round, in, out, rare, words + (base & 3), n, &nrare);
    c->inexact += inexact;
    if (inexact) env->flags |= FPE_FLAG_INEXACT;
    for (size_t i = 0; nrare > 0 && i < n; i++) {
        if (!rare[i]) continue;
        env->sr_index = base + i;
        uint32_t x;
        memcpy(&x, &in[i], sizeof x);
        out[i] = (uint16_t)before_one((fpe_format_id)fmt, env, x, c);
        nrare--;
    }
    env->sr_index = base + n;
}

static void add_counts(fpe_chop_counts *dst, const fpe_chop_counts *src)
{
    if (!dst) return;
    dst->flushed += src->flushed;
    dst->subnormal += src->subnormal;
    dst->overflowed += src->overflowed;
    dst->inexact += src->inexact;
}

int bench_chop_before_f32_to_u16(fpe_env *env, fpe_format_id fmt, const float *in, uint16_t *out,
                                 size_t n, fpe_chop_counts *counts)
{
    fpe_chop_counts c = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += BEFORE_BLOCK) {
        const size_t m = n - i < BEFORE_BLOCK ? n - i : BEFORE_BLOCK;
        before_block(env, fmt, in + i, out + i, m, &c);
    }
    add_counts(counts, &c);
    return FPE_OK;
}

/* The old widening: a shift for bf16 and fp16 normals, the general conversion otherwise. */
static float before_widen16(int fmt, fpe_env *env, uint16_t r)
{
    uint32_t u;
    if (fmt == FPE_FMT_BF16) {
        u = (uint32_t)r << 16;
    } else if (((r >> 10) & 0x1F) - 1u < 30) {
        u = ((uint32_t)(r & 0x8000) << 16) | (((uint32_t)(r & 0x7FFF) << 13) + (112u << 23));
    } else {
        fpe_env quiet = *env;
        quiet.daz = 0;
        u = fpe_convert_k((fpe_format_id)fmt, FPE_FMT_F32, &quiet, r);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int bench_chop_before_f32(fpe_env *env, fpe_format_id fmt, const float *in, float *out, size_t n,
                          fpe_chop_counts *counts)
{
    fpe_chop_counts c = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += BEFORE_BLOCK) {
        const size_t m = n - i < BEFORE_BLOCK ? n - i : BEFORE_BLOCK;
        uint16_t r[BEFORE_BLOCK];
        before_block(env, fmt, in + i, r, m, &c);
        for (size_t k = 0; k < m; k++)
            out[i + k] = before_widen16(fmt, env, r[k]);
    }
    add_counts(counts, &c);
    return FPE_OK;
}
