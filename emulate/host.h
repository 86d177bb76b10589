/* host.h: what the host CPU offers the array paths (read once, cached).  x86-64 only; false
 * elsewhere. */
#ifndef AMPSCOPE_EMULATE_HOST_H
#define AMPSCOPE_EMULATE_HOST_H

#include <stdbool.h>

#include "fpe_inline.h"

FPE_HIDDEN bool fpe_host_avx2(void);      /* AVX2 */
FPE_HIDDEN bool fpe_host_avx2_f16c(void); /* AVX2 and F16C */

#endif
