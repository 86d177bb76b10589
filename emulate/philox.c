/* fpe_random_bits: the out-of-line face of philox.h. */
#include "philox.h"

uint32_t fpe_random_bits(uint64_t seed, uint32_t stream, uint64_t index)
{
    return fpe_random_bits_inline(seed, stream, index);
}
