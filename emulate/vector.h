/* vector.h: what the array paths (chop.c, array_ops.c) share: the target clones their vector
 * loops are built as, and the Philox words of a block of random indices.
 *
 * Both paths process arrays in blocks, element i of a call using random index sr_index + i
 * (the index the scalar operation would consume), so a result never depends on how the
 * caller splits an array. */
#ifndef AMPSCOPE_EMULATE_VECTOR_H
#define AMPSCOPE_EMULATE_VECTOR_H

#include <stddef.h>

#include "fpe_internal.h"

/* Functions built twice, for the baseline and for AVX2, picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define FPE_VECTOR __attribute__((target_clones("avx2", "default")))
/* Philox's 32x32->64-bit multiplies gain from 16 lanes */
#define FPE_VECTOR_WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FPE_VECTOR
#define FPE_VECTOR_WIDE
#endif

/* Philox words for indices base .. base+n-1: block j of the generator holds the words of
 * indices 4(first+j) .. 4(first+j)+3, so laid out in order they start at words[base & 3].
 * words must hold n + 7 entries. */
FPE_VECTOR_WIDE __attribute__((unused)) static void
fpe_random_words(const fpe_env *env, uint64_t base, size_t n, uint32_t *restrict words)
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

#endif
