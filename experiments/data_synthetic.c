/* data_synthetic.c: synthetic Gaussian inputs and targets for SimpleNet,
 * drawn from seeded MT19937 streams (data.h: ds_synthetic). */
#include "data_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

static void fill_gaussian(gsl_rng *r, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
}

/* targets already hold the float noise draws e; adds the teacher W x. */
static int apply_linear_map(const ds_synthetic_options *o, const float *inputs, float *targets,
                            char *msg, size_t msg_len)
{
    gsl_rng r;
    double *row = malloc(o->in_dim * sizeof *row);
    if (!row || ds_rng_init(&r, ds_seed32(o->seed, DS_STREAM_MAP, 0)) != DS_OK) {
        free(row);
        return ut_fail(msg, msg_len, DS_ENOMEM, "ds_synthetic: cannot allocate the linear map");
    }
    const double sqrt_in = sqrt((double)o->in_dim);
    for (size_t j = 0; j < o->out_dim; j++) {
        for (size_t k = 0; k < o->in_dim; k++)
            row[k] = gsl_ran_gaussian_ziggurat(&r, 1.0);
        for (size_t i = 0; i < o->count; i++) {
            const float *x = inputs + i * o->in_dim;
            double dot = 0.0;
            for (size_t k = 0; k < o->in_dim; k++)
                dot += row[k] * (double)x[k];
            float *y = targets + i * o->out_dim + j;
            *y = (float)(dot / sqrt_in + o->noise * (double)*y);
        }
    }
    ds_rng_release(&r);
    free(row);
    return DS_OK;
}

int ds_synthetic(const ds_synthetic_options *opt, ds_dataset **out, char *msg, size_t msg_len)
{
    ds_clear_msg(msg, msg_len);
    if (!out) return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: out is NULL");
    *out = NULL;
    if (!opt) return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: options are NULL");
    if (opt->count == 0 || opt->in_dim == 0 || opt->out_dim == 0)
        return ut_fail(msg, msg_len, DS_EINVAL,
                       "ds_synthetic: count %zu, in_dim %zu and out_dim %zu must be nonzero",
                       opt->count, opt->in_dim, opt->out_dim);
    if (opt->rule != DS_TARGETS_INDEPENDENT && opt->rule != DS_TARGETS_LINEAR)
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: invalid target rule %d",
                       (int)opt->rule);
    if (opt->rule == DS_TARGETS_LINEAR && !(opt->noise >= 0.0 && isfinite(opt->noise)))
        return ut_fail(msg, msg_len, DS_EINVAL, "ds_synthetic: noise %g must be finite and >= 0",
                       opt->noise);
    const size_t max_elems = SIZE_MAX / sizeof(float);
    if (opt->in_dim > max_elems / opt->count || opt->out_dim > max_elems / opt->count)
        return ut_fail(msg, msg_len, DS_EINVAL,
                       "ds_synthetic: %zu samples of %zu + %zu floats overflow the address space",
                       opt->count, opt->in_dim, opt->out_dim);

    ds_dataset *ds = calloc(1, sizeof *ds);
    gsl_rng r = {0};
    int status = DS_OK;
    if (!ds) goto nomem;
    ds->inputs = malloc(opt->count * opt->in_dim * sizeof(float));
    ds->targets = malloc(opt->count * opt->out_dim * sizeof(float));
    if (!ds->inputs || !ds->targets) goto nomem;
    if (ds_rng_init(&r, ds_seed32(opt->seed, DS_STREAM_INPUTS, 0)) != DS_OK) goto nomem;
    fill_gaussian(&r, ds->inputs, opt->count * opt->in_dim);
    ds_rng_release(&r);
    if (ds_rng_init(&r, ds_seed32(opt->seed, DS_STREAM_TARGETS, 0)) != DS_OK) goto nomem;
    fill_gaussian(&r, ds->targets, opt->count * opt->out_dim);
    ds_rng_release(&r);
    if (opt->rule == DS_TARGETS_LINEAR) {
        status = apply_linear_map(opt, ds->inputs, ds->targets, msg, msg_len);
        if (status) goto error;
    }
    snprintf(ds->name, sizeof ds->name, "synthetic");
    ds->count = opt->count;
    ds->channels = 1;
    ds->height = 1;
    ds->width = opt->in_dim;
    ds->features = opt->in_dim;
    ds->target_dim = opt->out_dim;
    *out = ds;
    return DS_OK;
nomem:
    status = ut_fail(msg, msg_len, DS_ENOMEM,
                     "ds_synthetic: cannot allocate %zu samples of %zu + %zu floats", opt->count,
                     opt->in_dim, opt->out_dim);
error:
    ds_rng_release(&r);
    ds_free(ds);
    return status;
}
