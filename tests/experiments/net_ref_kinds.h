/* net_ref_kinds.h: double references of the kinds net_ref.c's table lists
 * that see the whole batch, a sequence (tokens x features, token-major) or
 * the run's random bits.  Signatures as net_ref.h's ref_layer_fn (one
 * sample) and ref_batch_fn (the batch). */
#ifndef AMPSCOPE_TESTS_NET_REF_KINDS_H
#define AMPSCOPE_TESTS_NET_REF_KINDS_H

#include "net_ref.h"

void ref_batchnorm2d(const net_layer *l, size_t rows, const double *in, const double *in2,
                     double *out, const double *const *w);
void ref_layernorm(const net_layer *l, const double *in, double *out, const double *const *w);
void ref_softmax(const net_layer *l, const double *in, double *out, const double *const *w);
void ref_log_softmax(const net_layer *l, const double *in, double *out, const double *const *w);
void ref_attention(const net_layer *l, const double *in, double *out, const double *const *w);
void ref_posembed(const net_layer *l, const double *in, double *out, const double *const *w);
void ref_embedding(const net_layer *l, const double *in, double *out, const double *const *w);
/* Dropout as layer number index of its net applies it in the first training
 * step of a model whose rng_seed and rng_step are 0. */
void ref_dropout_at(const net_layer *l, int index, size_t rows, const double *in, double *out);

#endif
