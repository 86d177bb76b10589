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
#else
#define FPE_VECTOR
#endif

/* Philox words for indices base .. base+n-1: block j of the generator holds the words of
 * indices 4(first+j) .. 4(first+j)+3, so laid out in order they start at words[base & 3].
 * words must hold n + 7 entries.  philox_words.c: eight blocks a vector with AVX2, else one
 * block at a time. */
FPE_HIDDEN void fpe_random_words(const fpe_env *env, uint64_t base, size_t n,
                                 uint32_t *restrict words);

#endif
