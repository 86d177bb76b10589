/* host.h: what the host CPU offers the array and scalar paths (read once, cached).  x86-64
 * only; false elsewhere. */
#ifndef AMPSCOPE_EMULATE_HOST_H
#define AMPSCOPE_EMULATE_HOST_H

#include <stdatomic.h>
#include <stdbool.h>

#include "fpe_inline.h"

FPE_HIDDEN bool fpe_host_avx2(void);      /* AVX2 */
FPE_HIDDEN bool fpe_host_avx2_f16c(void); /* AVX2 and F16C */

/* The scalar host paths (scalar_host.h): FPE_HOST_SCALAR_B64 (bf16 and fp32 through binary64:
 * every x86-64) and FPE_HOST_SCALAR_F16C (fp16: AVX2 and F16C) where the host paths are allowed
 * (fpe_chop_hw_allowed: AMPSCOPE_EMU_PORTABLE, fpe_chop_hw_enable) and the CPU has them, 0
 * where none applies, -1 until fpe_host_scalar_read has read it (fpe_chop_hw_enable sets it
 * back to -1).  A caller loads it relaxed, once per call. */
enum { FPE_HOST_SCALAR_B64 = 1, FPE_HOST_SCALAR_F16C = 2 };
FPE_HIDDEN extern atomic_int fpe_host_scalar_state;
FPE_HIDDEN int fpe_host_scalar_read(void);

#endif
