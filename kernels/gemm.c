/* gemm.c: STUB (to be written). */
#include "backend.h"

int ak_gemm(ak_backend *b, const ak_gemm_args *g)
{
    AK_BEGIN(b);
    return b->ops->gemm(b, g);
}

