/* net_size_options.h: the option-table rows (options.h) of the sizes of a
 * net (nets.h's net_size: --width, --depth, --heads, --context), one copy
 * for every command that builds a net (train, grad, bench train).  OFF(f)
 * gives the offset of net_size's field f in the command's arguments, e.g.
 * `#define SIZE_AT(f) offsetof(train_options, size.f)`. */
#ifndef AMPSCOPE_NET_SIZE_OPTIONS_H
#define AMPSCOPE_NET_SIZE_OPTIONS_H

#include "options.h"

/* clang-format off */
#define NET_SIZE_OPTION_ROWS(OFF)                                                                  \
    {.name = "width", .kind = OPT_SIZE, .offset = OFF(width), .imin = 1, .imax = 65536,            \
     .label = "--width N, --depth N",                                                              \
     .help = "width and depth: simplenet 4096, 3 Linear layers; deepmlp 128, 16;\n"                \
             "resnet 16 channels, 1 block a stage; transformer 64 features, 2 blocks"},            \
    {.name = "depth", .kind = OPT_INT, .offset = OFF(depth), .imin = 1, .imax = 48, .label = ""},  \
    {.name = "heads", .kind = OPT_SIZE, .offset = OFF(heads), .imin = 1, .imax = 64,               \
     .label = "--heads N, --context N",                                                            \
     .help = "transformer: attention heads (4) and tokens per sample (64)"},                       \
    {.name = "context", .kind = OPT_SIZE, .offset = OFF(context), .imin = 2, .imax = 1024,         \
     .label = ""}
/* clang-format on */

#endif
