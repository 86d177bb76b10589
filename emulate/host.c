/* host.c: the host CPU's features for the array paths (host.h), from CPUID (GCC's and clang's
 * <cpuid.h>) and, for the AVX state, XGETBV: the OS must save the YMM registers. */
#include "host.h"

#include "chop_hw.h"

#include <stdatomic.h>

#if defined(__x86_64__) && defined(__GNUC__) /* and clang */
#include <cpuid.h>

/* bit 0: known; bit 1: AVX2; bit 2: F16C */
static atomic_int features;

static int read_features(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 1;
    const bool f16c = (c & bit_F16C) != 0;
    if (!(c & bit_AVX) || !(c & bit_OSXSAVE)) return 1;
    unsigned xcr0, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    if ((xcr0 & 6) != 6) return 1; /* the XMM and YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2)) return 1;
    return 1 | 2 | (f16c ? 4 : 0);
}

static int host_features(void)
{
    int v = atomic_load_explicit(&features, memory_order_relaxed);
    if (!v) {
        v = read_features();
        atomic_store_explicit(&features, v, memory_order_relaxed);
    }
    return v;
}

bool fpe_host_avx2(void) { return (host_features() & 2) != 0; }
bool fpe_host_avx2_f16c(void) { return (host_features() & 6) == 6; }
/* scalar_host.h's binary64 paths need only x86-64's SSE2 */
static const int host_scalar_b64 = FPE_HOST_SCALAR_B64;
#else
bool fpe_host_avx2(void) { return false; }
bool fpe_host_avx2_f16c(void) { return false; }
static const int host_scalar_b64 = 0;
#endif

atomic_int fpe_host_scalar_state = -1;

int fpe_host_scalar_read(void)
{
    const int host = host_scalar_b64 | (fpe_host_avx2_f16c() ? FPE_HOST_SCALAR_F16C : 0);
    const int v = fpe_chop_hw_allowed() ? host : 0;
    atomic_store_explicit(&fpe_host_scalar_state, v, memory_order_relaxed);
    return v;
}
