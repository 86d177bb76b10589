/* data.c: the data set (data.h): errors, split names and freeing, and the
 * seeds and generators the synthetic data and the shuffles draw from.  The
 * loaders are data_idx.c, data_fashion_mnist.c, data_synthetic.c and
 * data_text.c;
 * batches data_batch.c (data_internal.h). */
#include "data_internal.h"

#include <stdio.h>
#include <stdlib.h>

void ds_clear_msg(char *msg, size_t msg_len)
{
    if (msg && msg_len > 0) msg[0] = '\0';
}

const char *ds_split_name(ds_split split)
{
    switch (split) {
    case DS_TRAIN: return "train";
    case DS_TEST: return "test";
    }
    return "?";
}

void ds_free(ds_dataset *ds)
{
    if (!ds) return;
    free(ds->labels);
    free(ds->targets);
    free(ds->pixels);
    free(ds->inputs);
    free(ds->tokens);
    free(ds->images_path);
    free(ds->labels_path);
    free(ds);
}

/* ---- random numbers ------------------------------------------------------------ */
static uint64_t splitmix64_mix(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint32_t ds_seed32(uint64_t seed, uint64_t stream, uint64_t index)
{
    const uint64_t h = splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ stream) ^ index);
    return (uint32_t)(h >> 32);
}

/* An MT19937 generator built without gsl_rng_alloc: on a failed allocation
 * that calls GSL's error handler, which aborts by default, and a library
 * must not abort.  gsl_rng is a public struct {type, state}. */
int ds_rng_init(gsl_rng *r, uint32_t seed)
{
    r->type = gsl_rng_mt19937;
    r->state = malloc(r->type->size);
    if (!r->state) return DS_ENOMEM;
    gsl_rng_set(r, seed);
    return DS_OK;
}

void ds_rng_release(gsl_rng *r)
{
    free(r->state);
    r->state = NULL;
}
