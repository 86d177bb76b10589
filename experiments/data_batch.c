/* data_batch.c: seeded shuffles, gathering samples (images, synthetic
 * vectors, text windows) into host buffers and the batcher that walks an
 * epoch (data.h). */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

/* ---- shuffling ---------------------------------------------------------------------- */
int ds_shuffle(size_t n, uint64_t seed, uint64_t epoch, size_t *perm, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (n > 0 && !perm) return ut_fail(msg, msg_len, DS_EINVAL, "ds_shuffle: perm is NULL");
    /* gsl_rng_uniform_int(r, m) needs m <= 2^32 - 1 for MT19937 */
    if ((uint64_t)n > UINT32_MAX)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_shuffle: %zu elements, at most %u", n,
                       UINT32_MAX);
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    if (n < 2) return DS_OK; /* gsl_ran_shuffle's loop starts at n - 1: not for n = 0 */
    gsl_rng r;
    if (ds_rng_init(&r, ds_seed32(seed, DS_STREAM_SHUFFLE, epoch)) != DS_OK)
        return ut_fail(msg, msg_len, DS_ENOMEM, "ds_shuffle: cannot allocate the generator");
    gsl_ran_shuffle(&r, perm, n, sizeof *perm);
    ds_rng_release(&r);
    return DS_OK;
}

/* ---- gathering ------------------------------------------------------------------------- */
static void gather_image(const ds_dataset *ds, size_t index, float *dst)
{
    const uint8_t *src = ds->pixels + index * ds->rows * ds->cols;
    if (ds->pad > 0) memset(dst, 0, ds->features * sizeof *dst);
    for (size_t r = 0; r < ds->rows; r++) {
        float *d = dst + (r + ds->pad) * ds->width + ds->pad;
        const uint8_t *s = src + r * ds->cols;
        for (size_t c = 0; c < ds->cols; c++)
            d[c] = (float)s[c] / 255.0f;
    }
}

/* Text: the window's first context ids as floats, the next id at each
 * position as its labels. */
static void gather_window(const ds_dataset *ds, size_t index, float *x, int32_t *labels)
{
    const uint8_t *w = ds->tokens + index * ds->stride;
    if (x)
        for (size_t k = 0; k < ds->features; k++)
            x[k] = (float)w[k];
    if (labels)
        for (size_t k = 0; k < ds->label_dim; k++)
            labels[k] = w[k + 1];
}

/* Samples order[start + j] (order NULL: start + j) for j < n. */
static int gather(const char *caller, const ds_dataset *ds, const size_t *order, size_t start,
                  size_t n, float *x, int32_t *labels, float *targets, char *msg, size_t msg_len)
{
    if (!ds) return ut_fail(msg, msg_len, DS_EINVAL, "%s: the data set is NULL", caller);
    if (labels && ds->label_dim == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "%s: labels asked of '%s', which has none", caller,
                       ds->name);
    if (targets && !ds->targets)
        return ut_fail(msg, msg_len, DS_EINVAL, "%s: targets asked of '%s', which has none", caller,
                       ds->name);
    for (size_t j = 0; j < n; j++) {
        const size_t i = order ? order[start + j] : start + j;
        if (i >= ds->count)
            return ut_fail(msg, msg_len, DS_EINVAL, "%s: index %zu (position %zu) is not below %zu",
                           caller, i, start + j, ds->count);
    }
    for (size_t j = 0; j < n; j++) {
        const size_t i = order ? order[start + j] : start + j;
        const size_t ld = ds->label_dim;
        if (ds->tokens) {
            gather_window(ds, i, x ? x + j * ds->features : NULL, labels ? labels + j * ld : NULL);
        } else {
            if (x) {
                float *dst = x + j * ds->features;
                if (ds->pixels)
                    gather_image(ds, i, dst);
                else
                    memcpy(dst, ds->inputs + i * ds->features, ds->features * sizeof *dst);
            }
            if (labels) memcpy(labels + j * ld, ds->labels + i * ld, ld * sizeof *labels);
        }
        if (targets)
            memcpy(targets + j * ds->target_dim, ds->targets + i * ds->target_dim,
                   ds->target_dim * sizeof *targets);
    }
    return DS_OK;
}

int ds_gather(const ds_dataset *ds, const size_t *indices, size_t n, float *x, int32_t *labels,
              float *targets, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (n > 0 && !indices) return ut_fail(msg, msg_len, DS_EINVAL, "ds_gather: indices are NULL");
    return gather("ds_gather", ds, indices, 0, n, x, labels, targets, msg, msg_len);
}

int ds_batcher_init(ds_batcher *it, const ds_dataset *ds, const size_t *order, size_t batch_size,
                    bool keep_partial, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!it || !ds)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batcher_init: %s is NULL",
                       it ? "the data set" : "the batcher");
    if (batch_size == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batcher_init: batch size is 0");
    if (order) {
        for (size_t j = 0; j < ds->count; j++)
            if (order[j] >= ds->count)
                return ut_fail(msg, msg_len, DS_EINVAL,
                               "ds_batcher_init: order[%zu] = %zu is not below %zu", j, order[j],
                               ds->count);
    }
    it->ds = ds;
    it->order = order;
    it->batch_size = batch_size;
    it->keep_partial = keep_partial;
    it->next = 0;
    return DS_OK;
}

size_t ds_batcher_count(const ds_batcher *it)
{
    if (!it || !it->ds || it->batch_size == 0) return 0;
    const size_t full = it->ds->count / it->batch_size;
    return full + (it->keep_partial && it->ds->count % it->batch_size != 0 ? 1 : 0);
}

int ds_batch_next(ds_batcher *it, float *x, int32_t *labels, float *targets, size_t *n, char *msg,
                  size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!n) return ut_fail(msg, msg_len, DS_EINVAL, "ds_batch_next: n is NULL");
    *n = 0;
    if (!it || !it->ds || it->batch_size == 0)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_batch_next: the batcher is not initialised");
    if (it->next >= ds_batcher_count(it)) return DS_OK;
    const size_t start = it->next * it->batch_size;
    const size_t rest = it->ds->count - start;
    const size_t size = rest < it->batch_size ? rest : it->batch_size;
    const int status =
        gather("ds_batch_next", it->ds, it->order, start, size, x, labels, targets, msg, msg_len);
    if (status) return status;
    it->next++;
    *n = size;
    return DS_OK;
}
