/* cuda/gemm.cu: STUB. */
#include "cuda_backend.h"

extern "C" int ak_cuda_gemm(ak_backend *b, const ak_gemm_args *g)
{
    (void)g;
    return ak_fail(b, AK_ENOTIMPL, "ak_gemm", "not implemented yet");
}

