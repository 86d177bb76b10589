/* fpe_ops.h: every operation as a forced-inline generic over the formats,
 * host and device.  kernels/ includes this to round with the very same code
 * on the GPU; the public fpe_<fmt>_<op> functions (one .c file per operation)
 * are thin instantiations. */
#ifndef AMPSCOPE_FPE_OPS_H
#define AMPSCOPE_FPE_OPS_H
#include "fpe_internal.h"
#include "ops/add.h"
#include "ops/compare.h"
#include "ops/convert.h"
#include "ops/div.h"
#include "ops/mulAdd.h"
#include "ops/mul.h"
#include "ops/roundToInt.h"
#include "ops/sqrt.h"

/* Every public rounding operation consumes one stochastic-rounding index,
 * whether or not it rounded. */
#define FPE_NEXT_INDEX(env, expr)                                                                  \
    do {                                                                                           \
        __typeof__(expr) fpe_result_ = (expr);                                                     \
        (env)->sr_index++;                                                                         \
        return fpe_result_;                                                                        \
    } while (0)

/* Instantiate a public wrapper for each of the three formats. */
#define FPE_FOR_FORMATS(M)                                                                         \
    M(f16, uint16_t, FPE_FMT_F16) M(bf16, uint16_t, FPE_FMT_BF16) M(f32, uint32_t, FPE_FMT_F32)
#endif
