/* test_philox.c: Philox4x32-10 against Random123's published known answers,
 * fpe_random_bits' mapping of (seed, stream, index) onto it, and the runs of words the array
 * paths draw (fpe_random_words).
 *
 * The vectors are the three "philox4x32 10" lines of Random123's
 * examples/kat_vectors: counter (4 words), key (2 words), expected output.
 */
#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fpe.h"
#include "philox.h"
#include "vector.h" /* fpe_random_words */
#include "check_main.h"

typedef struct kat {
    uint32_t ctr[4], key[2], out[4];
} kat;

static const kat kats[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

START_TEST(test_known_answers)
{
    const kat *k = &kats[_i];
    uint32_t out[4];
    fpe_philox4x32_10(k->ctr, k->key, out);
    for (int w = 0; w < 4; w++)
        ck_assert_msg(out[w] == k->out[w], "vector %d word %d: got %08x, expected %08x", _i, w,
                      out[w], k->out[w]);
}
END_TEST

/* With seed 0, stream 0 and indices 0..3 the counter and key are all zero:
 * the first known answer, word by word. */
START_TEST(test_random_bits_zero_vector)
{
    for (uint64_t i = 0; i < 4; i++)
        ck_assert_uint_eq(fpe_random_bits(0, 0, i), kats[0].out[i]);
}
END_TEST

/* The counter layout: {index >> 2 (low 32 bits), index >> 34, stream, 0},
 * key {seed low, seed high}, word index & 3. */
START_TEST(test_random_bits_mapping)
{
    static const uint64_t seeds[] = {
        0,         1, UINT64_C(0xFFFFFFFF), UINT64_C(0x100000000), UINT64_C(0x299f31d0a4093822),
        UINT64_MAX};
    static const uint32_t streams[] = {0, 1, 0x13198a2e, 0xFFFFFFFF};
    static const uint64_t indices[] = {0,
                                       1,
                                       2,
                                       3,
                                       4,
                                       7,
                                       UINT64_C(0x3FFFFFFFF),
                                       UINT64_C(0x400000000),
                                       UINT64_C(0x400000003),
                                       UINT64_C(0x243f6a88) << 2 | 1,
                                       UINT64_C(0xDEADBEEFCAFEF00D),
                                       UINT64_MAX};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
        for (size_t t = 0; t < sizeof streams / sizeof streams[0]; t++)
            for (size_t i = 0; i < sizeof indices / sizeof indices[0]; i++) {
                uint64_t seed = seeds[s], index = indices[i];
                uint32_t stream = streams[t];
                uint32_t ctr[4] = {(uint32_t)(index >> 2), (uint32_t)(index >> 34), stream, 0};
                uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
                uint32_t out[4];
                fpe_philox4x32_10(ctr, key, out);
                uint32_t got = fpe_random_bits(seed, stream, index);
                ck_assert_msg(got == out[index & 3],
                              "seed %llx stream %x index %llx: got %08x, expected %08x",
                              (unsigned long long)seed, stream, (unsigned long long)index, got,
                              out[index & 3]);
            }
}
END_TEST

/* A sanity check of the output: bit frequencies near 1/2 over a million
 * words of consecutive indices (a wrong counter layout that repeated words
 * would show as duplicates between neighbouring indices). */
START_TEST(test_random_bits_balance)
{
    const int n = 1 << 20;
    uint64_t ones[32] = {0};
    int repeats = 0;
    uint32_t prev = 0;
    for (int i = 0; i < n; i++) {
        uint32_t w = fpe_random_bits(12345, 6, (uint64_t)i);
        if (i && w == prev) repeats++;
        prev = w;
        for (int b = 0; b < 32; b++)
            ones[b] += (w >> b) & 1;
    }
    for (int b = 0; b < 32; b++) {
        double f = (double)ones[b] / n; /* sd = 0.5 / sqrt(n) = 0.00049 */
        ck_assert_msg(f > 0.4975 && f < 0.5025, "bit %d frequency %f", b, f);
    }
    ck_assert_int_le(repeats, 2);
    /* different streams and seeds give different words */
    int same_stream = 0, same_seed = 0;
    for (uint64_t i = 0; i < 4096; i++) {
        same_stream += fpe_random_bits(1, 0, i) == fpe_random_bits(1, 1, i);
        same_seed += fpe_random_bits(1, 0, i) == fpe_random_bits(2, 0, i);
    }
    ck_assert_int_le(same_stream, 2);
    ck_assert_int_le(same_seed, 2);
}
END_TEST

/* The words of a run of indices (fpe_random_words, eight blocks a vector with AVX2 and the
 * last few one at a time) are fpe_random_bits' words index by index: runs starting at every
 * offset within a block, lengths from 1 to several vector groups, counters whose low word wraps
 * inside a run (the carry into the high word), several seeds and streams.  And with seed 0,
 * stream 0 and base 0 the first four words of a long run are the first known answer. */
START_TEST(test_random_words_runs)
{
    static uint32_t words[4096 + 8];
    static const uint64_t seeds[] = {0, 1, UINT64_C(0x299f31d0a4093822), UINT64_MAX};
    static const uint64_t bases[] = {0,
                                     1,
                                     2,
                                     3,
                                     1000,
                                     (UINT64_C(0xFFFFFFFF) << 2) - 37,
                                     (UINT64_C(0x1FFFFFFFF) << 2) - 130,
                                     UINT64_MAX - 5000};
    static const size_t lengths[] = {1, 2, 5, 31, 32, 33, 63, 64, 65, 127, 128, 129, 500, 4096};
    uint64_t bad = 0, checked = 0;
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++)
        for (uint32_t stream = 0; stream < 3; stream++)
            for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++)
                for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                    fpe_env env = fpe_env_default();
                    env.sr_seed = seeds[si];
                    env.sr_stream = stream * 0x9E3779B9u;
                    const uint64_t base = bases[bi];
                    const size_t n = lengths[li];
                    fpe_random_words(&env, base, n, words);
                    const uint32_t *w = words + (base & 3);
                    for (size_t i = 0; i < n; i++, checked++)
                        if (w[i] != fpe_random_bits(env.sr_seed, env.sr_stream, base + i) &&
                            bad++ < 5)
                            printf("MISMATCH seed %016" PRIx64 " stream %08x base %" PRIu64
                                   " n %zu: word %zu\n",
                                   env.sr_seed, env.sr_stream, base, n, i);
                }
    printf("fpe_random_words: %" PRIu64 " words, %" PRIu64 " mismatches\n", checked, bad);
    ck_assert_uint_eq(bad, 0);
    fpe_env zero = fpe_env_default();
    fpe_random_words(&zero, 0, 64, words);
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(words[k], kats[0].out[k]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("philox");
    TCase *tc = tcase_create("philox");
    tcase_add_loop_test(tc, test_known_answers, 0, (int)(sizeof kats / sizeof kats[0]));
    tcase_add_test(tc, test_random_bits_zero_vector);
    tcase_add_test(tc, test_random_bits_mapping);
    tcase_add_test(tc, test_random_bits_balance);
    tcase_add_test(tc, test_random_words_runs);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
