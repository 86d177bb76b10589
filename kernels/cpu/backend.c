/* cpu/backend.c: the cpu backend's op table. */
#include "backend.h"

#define AK_OP_ENTRY(name, params) .name = ak_cpu_##name,
const ak_ops ak_cpu_ops = {AK_OPS(AK_OP_ENTRY)};
#undef AK_OP_ENTRY
