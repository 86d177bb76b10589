/* cpu/gemm.c: STUB. */
#include "backend.h"

int ak_cpu_gemm(ak_backend *b, const ak_gemm_args *g)
{
    (void)g;
    return ak_fail(b, AK_ENOTIMPL, "ak_gemm", "not implemented yet");
}

