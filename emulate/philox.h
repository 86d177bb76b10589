/* philox.h: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11), the counter-based generator behind stochastic
 * rounding.  The same inline code runs on the host and, under nvcc, on the
 * GPU, so (seed, stream, index) gives the same bits everywhere. */
#ifndef AMPSCOPE_PHILOX_H
#define AMPSCOPE_PHILOX_H

#include <stdint.h>

#include "fpe.h"
#include "fpe_inline.h"

/* One Philox4x32 block: ten rounds, the key bumped between rounds. */
FPE_INLINE void fpe_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u; /* golden ratio */
        k1 += 0xBB67AE85u; /* sqrt(3) - 1 */
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The random word for (seed, stream, index): word (index & 3) of the block
 * at counter {index >> 2, index >> 34, stream, 0}, key {seed lo, seed hi}. */
FPE_INLINE uint32_t fpe_random_bits_inline(uint64_t seed, uint32_t stream, uint64_t index)
{
    const uint32_t ctr[4] = {(uint32_t)(index >> 2), (uint32_t)(index >> 34), stream, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    fpe_philox4x32_10(ctr, key, out);
    return out[index & 3];
}

#endif
