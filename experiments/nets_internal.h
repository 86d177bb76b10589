/* nets_internal.h: the builders of the nets that are graphs (nets.c calls
 * them from net_build).  Each fills net (name set, everything else zero)
 * for the sizes given (0 = the default) and returns 0, or -1 with a
 * one-line reason in msg. */
#ifndef AMPSCOPE_NETS_INTERNAL_H
#define AMPSCOPE_NETS_INTERNAL_H

#include "nets.h"

int net_build_resnet(net_def *net, const net_size *size, char *msg, size_t msg_len);
int net_build_transformer(net_def *net, const net_size *size, char *msg, size_t msg_len);

/* Adds a layer of kind reading layer in (and in2, NET_NO_INPUT for one
 * input) with the hyperparameters of proto (out_c, kernel, stride, pad,
 * heads, vocab, p, flags); name is printf-formatted.  Returns the new
 * layer's index, or -1 with the reason in msg. */
int net_add_layer(net_def *net, const layer_kind *kind, int in, int in2, const net_layer *hyper,
                  char *msg, size_t msg_len, const char *name_fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;

#endif
