/* host.c: the host CPU's features for the array paths (host.h). */
#include "host.h"

#include <stdatomic.h>

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
/* bit 0: known; bit 1: AVX2; bit 2: F16C */
static atomic_int features;

static int host_features(void)
{
    int v = atomic_load_explicit(&features, memory_order_relaxed);
    if (!v) {
        __builtin_cpu_init();
        v = 1 | (__builtin_cpu_supports("avx2") ? 2 : 0) | (__builtin_cpu_supports("f16c") ? 4 : 0);
        atomic_store_explicit(&features, v, memory_order_relaxed);
    }
    return v;
}

bool fpe_host_avx2(void) { return (host_features() & 2) != 0; }
bool fpe_host_avx2_f16c(void) { return (host_features() & 6) == 6; }
#else
bool fpe_host_avx2(void) { return false; }
bool fpe_host_avx2_f16c(void) { return false; }
#endif
