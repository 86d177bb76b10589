/* test_philox.c: Philox4x32-10 against Random123's published known answers,
 * and fpe_random_bits' mapping of (seed, stream, index) onto it.
 *
 * The vectors are the three "philox4x32 10" lines of Random123's
 * examples/kat_vectors: counter (4 words), key (2 words), expected output.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fpe.h"
#include "philox.h"
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

int main(void)
{
    Suite *s = suite_create("philox");
    TCase *tc = tcase_create("philox");
    tcase_add_loop_test(tc, test_known_answers, 0, (int)(sizeof kats / sizeof kats[0]));
    tcase_add_test(tc, test_random_bits_zero_vector);
    tcase_add_test(tc, test_random_bits_mapping);
    tcase_add_test(tc, test_random_bits_balance);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return ts_run_suite(s);
}
