/* formats.c: format descriptors and the names used on command lines. */
#include <string.h>

#include "fpe.h"

const fpe_format fpe_formats[3] = {
    {"fp16", 16, 11, 5, 15, -14, 15},
    {"bf16", 16, 8, 8, 127, -126, 127},
    {"fp32", 32, 24, 8, 127, -126, 127},
};

static const char *const round_names[FPE_ROUND_COUNT] = {
    "near_even", "near_maxMag", "minMag", "min", "max", "odd", "stoch_prop", "stoch_equal"};

const char *fpe_round_name(fpe_round r)
{
    return (unsigned)r < FPE_ROUND_COUNT ? round_names[r] : "?";
}

int fpe_round_from_name(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < FPE_ROUND_COUNT; i++)
        if (strcmp(name, round_names[i]) == 0) return i;
    return -1;
}

int fpe_format_from_name(const char *name)
{
    if (!name) return -1;
    if (!strcmp(name, "fp16") || !strcmp(name, "f16")) return FPE_FMT_F16;
    if (!strcmp(name, "bf16")) return FPE_FMT_BF16;
    if (!strcmp(name, "fp32") || !strcmp(name, "f32")) return FPE_FMT_F32;
    return -1;
}
