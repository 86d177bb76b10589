/* data_internal.h: what the data files share (private to experiments/data*.c):
 *   data.c               the data set: errors, split names, freeing; seeds
 *                        and MT19937 generators;
 *   data_idx.c           IDX files through zlib, every field checked;
 *   data_fashion_mnist.c Fashion-MNIST's files in a directory;
 *   data_synthetic.c     synthetic Gaussian data (SimpleNet);
 *   data_text.c          text files as token windows (a language model);
 *   data_batch.c         shuffling, gathering and batches.
 * data.h is the contract. */
#ifndef AMPSCOPE_DATA_INTERNAL_H
#define AMPSCOPE_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "data.h"
#include "util.h"

/* Errors: ut_fail (util.h) writes the message and returns the status. */
/* An empty message: what a call that succeeds leaves. */
void ds_clear_msg(char *msg, size_t msg_len);

/* An MT19937 generator seeded with seed: DS_OK or DS_ENOMEM.  Release it
 * with ds_rng_release. */
int ds_rng_init(gsl_rng *r, uint32_t seed);
void ds_rng_release(gsl_rng *r);

/* The options' checks every IDX loader makes first. */
int ds_idx_check_options(const ds_options *opt, char *msg, size_t msg_len);
/* Loads an image/label pair (arguments checked by the caller). */
int ds_idx_load(const char *images_path, const char *labels_path, size_t expect_rows,
                size_t expect_cols, const ds_options *opt, ds_dataset **out, char *msg,
                size_t msg_len);

#endif
