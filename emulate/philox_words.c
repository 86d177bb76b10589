/* philox_words.c: the Philox4x32-10 words of a run of random indices (vector.h), the same
 * words as fpe_philox4x32_10 block by block (test_philox holds them to it).
 *
 * With AVX2, eight generator blocks at a time, one block per 32-bit lane of four vectors (the
 * counter words c0..c3), two groups interleaved so that the multiplies' latency overlaps: a
 * round's two 32x32->64-bit products per lane are vpmuludq of the even lanes and of the odd
 * lanes shifted down, their high and low halves blended back into lanes.  The eight blocks'
 * words are then transposed into index order.  Elsewhere, and for the last few blocks, the
 * scalar block. */
#include "host.h"
#include "vector.h"

/* The scalar blocks first .. first+count-1 into words. */
static void words_scalar(const fpe_env *env, uint64_t first, size_t count, uint32_t *words)
{
    const uint32_t key[2] = {(uint32_t)env->sr_seed, (uint32_t)(env->sr_seed >> 32)};
    for (size_t j = 0; j < count; j++) {
        const uint64_t c = first + j;
        const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), env->sr_stream, 0};
        fpe_philox4x32_10(ctr, key, words + 4 * j);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#include <immintrin.h>

#define AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

typedef struct lanes4 {
    __m256i c0, c1, c2, c3;
} lanes4;

/* The high halves of c * m per 32-bit lane; *lo the low halves. */
AVX2_INLINE __m256i mul_hi_lo(__m256i c, __m256i m, __m256i *lo)
{
    const __m256i even = _mm256_mul_epu32(c, m);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

/* Counters of blocks c .. c+7: {c + lane (64-bit), stream, 0}. */
AVX2_INLINE void lanes_start(lanes4 *s, uint64_t c, __m256i stream)
{
    const __m256i lo = _mm256_set1_epi32((int32_t)(uint32_t)c);
    const __m256i top = _mm256_set1_epi32(INT32_MIN);
    s->c0 = _mm256_add_epi32(lo, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    /* the carry into the high word where the low one wrapped (an unsigned c0 < lo) */
    const __m256i wrapped =
        _mm256_cmpgt_epi32(_mm256_xor_si256(lo, top), _mm256_xor_si256(s->c0, top));
    s->c1 = _mm256_sub_epi32(_mm256_set1_epi32((int32_t)(uint32_t)(c >> 32)), wrapped);
    s->c2 = stream;
    s->c3 = _mm256_setzero_si256();
}

AVX2_INLINE void lanes_round(lanes4 *s, __m256i m0, __m256i m1, __m256i k0, __m256i k1)
{
    __m256i lo0, lo1;
    const __m256i hi0 = mul_hi_lo(s->c0, m0, &lo0), hi1 = mul_hi_lo(s->c2, m1, &lo1);
    s->c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, s->c1), k0);
    s->c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, s->c3), k1);
    s->c1 = lo1;
    s->c3 = lo0;
}

/* Lane j's four words to words[4j .. 4j+3]. */
AVX2_INLINE void lanes_store(const lanes4 *s, uint32_t *words)
{
    const __m256i t0 = _mm256_unpacklo_epi32(s->c0, s->c1),
                  t1 = _mm256_unpackhi_epi32(s->c0, s->c1);
    const __m256i t2 = _mm256_unpacklo_epi32(s->c2, s->c3),
                  t3 = _mm256_unpackhi_epi32(s->c2, s->c3);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)words, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(words + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(words + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(words + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}

/* Blocks first .. first+count-1; returns how many it did (a multiple of 8). */
__attribute__((target("avx2"))) static size_t words_avx2(const fpe_env *env, uint64_t first,
                                                         size_t count, uint32_t *words)
{
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53u), m1 = _mm256_set1_epi64x(0xCD9E8D57u);
    const __m256i stream = _mm256_set1_epi32((int32_t)env->sr_stream);
    __m256i k0[10], k1[10]; /* the round keys: bumped by the golden ratio and sqrt(3) - 1 */
    for (uint32_t r = 0; r < 10; r++) {
        k0[r] = _mm256_set1_epi32((int32_t)((uint32_t)env->sr_seed + r * 0x9E3779B9u));
        k1[r] = _mm256_set1_epi32((int32_t)((uint32_t)(env->sr_seed >> 32) + r * 0xBB67AE85u));
    }
    size_t j = 0;
    for (; j + 16 <= count; j += 16) {
        lanes4 a, b;
        lanes_start(&a, first + j, stream);
        lanes_start(&b, first + j + 8, stream);
        for (int r = 0; r < 10; r++) {
            lanes_round(&a, m0, m1, k0[r], k1[r]);
            lanes_round(&b, m0, m1, k0[r], k1[r]);
        }
        lanes_store(&a, words + 4 * j);
        lanes_store(&b, words + 4 * j + 32);
    }
    for (; j + 8 <= count; j += 8) {
        lanes4 a;
        lanes_start(&a, first + j, stream);
        for (int r = 0; r < 10; r++)
            lanes_round(&a, m0, m1, k0[r], k1[r]);
        lanes_store(&a, words + 4 * j);
    }
    return j;
}
#endif

void fpe_random_words(const fpe_env *env, uint64_t base, size_t n, uint32_t *restrict words)
{
    const uint64_t first = base >> 2;
    const size_t blocks = (size_t)((((base + n - 1) >> 2) - first) + 1);
    size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (fpe_host_avx2()) done = words_avx2(env, first, blocks, words);
#endif
    words_scalar(env, first + done, blocks - done, words + 4 * done);
}
