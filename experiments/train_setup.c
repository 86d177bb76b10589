/* train_setup.c: a training run's resources: the options' defaults, the
 * checks before anything is built, the data, the model and the step's state
 * on the backend, and freeing them (train_internal.h). */
#define _POSIX_C_SOURCE 200809L

#include "atomic_file.h" /* ut_fail */
#include "amp_lists.h"   /* amp_lists_edit */
#include "train_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void train_options_default(train_options *o)
{
    memset(o, 0, sizeof *o);
    o->net = "mlp";
    prec_options_default(&o->prec, PREC_O0, AK_F16);
    o->stats_dtype = (ak_dtype)-1;
    o->backend = "auto";
    o->seed = 1;
    o->epochs = 1;
    o->world = 1; /* one process, no data parallelism */
    o->batch = 0; /* the net's default */
    o->samples = 0;
    o->opt.kind = AK_OPT_SGD;
    o->opt.lr = -1; /* the net's default */
    o->opt.beta1 = 0.9f;
    o->opt.beta2 = 0.999f;
    o->opt.eps = 1e-8f;
    o->opt.round = ak_rounding_rne();
    o->stats_every = 10;
    o->hist_every = 100;
    o->trace_every = 1;
    o->diverge_after = -1; /* from the scaler (train_limits.c) */
    o->accumulate = 1;
    ak_scaler_preset("none", &o->scaler, NULL, 0);
}

int64_t train_steps_per_epoch(const train_state *r)
{
    return (int64_t)(r->train->count / r->o->batch / (size_t)r->o->accumulate /
                     (size_t)(r->world > 1 ? r->world : 1));
}

int64_t train_total_steps(const train_state *r)
{
    return r->o->steps > 0 ? r->o->steps : r->o->epochs * train_steps_per_epoch(r);
}

const char *train_path(train_state *r, const char *file)
{
    snprintf(r->path, sizeof r->path, "%s/%s", r->o->out_dir, file);
    return r->path;
}

int train_backend_fail(train_state *r, char *msg, size_t len, const char *what)
{
    return ut_fail(msg, len, TRAIN_EFAIL, "%s: %s", what, ak_error_text(r->b));
}

int train_take_out_dir(train_state *r, char *msg, size_t len)
{
    const train_options *o = r->o;
    const rec_input inputs[] = {{"--init", o->init_path}, {"--data", o->data_dir}};
    const rec_out_dir want = {.option = o->resume ? "--resume" : "--out",
                              .dir = o->out_dir,
                              .command = "train",
                              .owner = o->owner_dir,
                              .inputs = inputs,
                              .n_inputs = sizeof inputs / sizeof *inputs,
                              .resume = o->resume,
                              .force = o->force};
    char said[1024], why[1024];
    const int rc = rec_take_out_dir(&want, &r->lock_fd, said, sizeof said, why, sizeof why);
    if (rc) return ut_fail(msg, len, rc == AN_EINVAL ? TRAIN_EINPUT : TRAIN_EFAIL, "%s", why);
    if (said[0]) fprintf(stderr, "ampscope train: %s\n", said);
    return 0;
}

/* What to do when the net's data is missing. */
static const char *data_hint(const net_def *net)
{
    return net->tokens ? " (install fortunes or give --data DIR)"
                       : " (install dataset-fashion-mnist or give --data DIR)";
}

static int load_data(train_state *r, char *msg, size_t len)
{
    const train_options *o = r->o;
    char why[512];
    int rc;
    if (r->net.tokens) { /* a language model: the fortunes text, windows of its context */
        ds_text_options to;
        memset(&to, 0, sizeof to);
        to.context = r->net.tokens;
        to.subset = o->subset;
        rc = ds_load_text(o->data_dir, DS_TRAIN, &to, &r->train, why, sizeof why);
        if (rc == DS_OK) {
            to.subset = 0;
            rc = ds_load_text(o->data_dir, DS_TEST, &to, &r->test, why, sizeof why);
        }
    } else if (r->net.loss == NET_MSE) {
        ds_synthetic_options so;
        memset(&so, 0, sizeof so);
        so.count = o->samples ? o->samples : 8 * o->batch * (size_t)r->world;
        so.in_dim = r->net.in_c;
        so.out_dim = r->net.outputs;
        so.seed = o->seed;
        so.rule = DS_TARGETS_INDEPENDENT;
        rc = ds_synthetic(&so, &r->train, why, sizeof why);
    } else {
        ds_options d;
        memset(&d, 0, sizeof d);
        d.pad = r->net.in_h == 32 ? 2 : 0; /* LeNet5 reads 32 x 32 */
        d.subset = o->subset;
        rc = ds_load_fashion_mnist(o->data_dir, DS_TRAIN, &d, &r->train, why, sizeof why);
        if (rc == DS_OK) {
            d.subset = 0;
            rc = ds_load_fashion_mnist(o->data_dir, DS_TEST, &d, &r->test, why, sizeof why);
        }
        if (rc == DS_OK && r->train->features != r->net.in_c * r->net.in_h * r->net.in_w)
            return ut_fail(msg, len, TRAIN_EINPUT,
                           "the data has %zu features per sample, %s wants %zu", r->train->features,
                           r->net.name, r->net.in_c * r->net.in_h * r->net.in_w);
    }
    if (rc != DS_OK)
        return ut_fail(msg, len, rc == DS_ENOMEM || rc == DS_EIO ? TRAIN_EFAIL : TRAIN_EINPUT,
                       "%s%s", why, rc != DS_ENOENT ? "" : data_hint(&r->net));
    r->order = malloc(r->train->count * sizeof *r->order);
    r->x_host = malloc(o->batch * r->train->features * sizeof *r->x_host);
    if (r->net.loss == NET_MSE)
        r->t_host = malloc(o->batch * r->net.outputs * sizeof *r->t_host);
    else
        r->labels_host = malloc(o->batch * r->train->label_dim * sizeof *r->labels_host);
    if (!r->order || !r->x_host || (!r->t_host && !r->labels_host))
        return ut_fail(msg, len, TRAIN_EFAIL, "out of memory for the batch buffers");
    return 0;
}

static int alloc_state(train_state *r, char *msg, size_t len)
{
    ak_backend *b = r->b;
    const size_t n_stats = (size_t)r->net.n_layers * REC_KINDS;
    int rc = ak_alloc(b, sizeof *r->scaler, (void **)&r->scaler);
    if (!rc) rc = ak_alloc(b, sizeof *r->opt_state, (void **)&r->opt_state);
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&r->found_inf);
    if (!rc) rc = ak_alloc(b, n_stats * sizeof *r->stats, (void **)&r->stats);
    if (!rc) rc = ak_alloc(b, sizeof *r->trace, (void **)&r->trace);
    if (!rc) rc = ak_alloc(b, (size_t)r->net.n_layers * sizeof *r->loss, (void **)&r->loss);
    if (!rc) rc = ak_alloc(b, sizeof *r->inv_micro, (void **)&r->inv_micro);
    if (!rc) rc = ak_alloc(b, sizeof *r->sumsq, (void **)&r->sumsq);
    if (!rc && r->o->n_faults > 0) rc = ak_alloc(b, sizeof(float), (void **)&r->fault_scale);
    if (!rc) rc = ak_alloc(b, 2 * sizeof(float), (void **)&r->weight_check);
    for (int k = 0; k < r->m->n_params && !rc && r->o->accumulate > 1; k++)
        rc = ak_alloc_tensor(b, r->m->params[k].n, r->m->params[k].grad.dtype, &r->acc[k]);
    if (!rc) {
        const float inv = 1.0f / (float)r->o->accumulate; /* exact for powers of two */
        rc = ak_to_device(b, r->inv_micro, &inv, sizeof inv);
    }
    if (!rc) {
        const float one = 1.0f;
        rc = ak_to_device(b, r->weight_check, &one, sizeof one);
    }
    if (rc) return train_backend_fail(r, msg, len, "allocating the step's state");
    r->stats_host = malloc(n_stats * sizeof *r->stats_host);
    r->loss_host = malloc((size_t)r->net.n_layers * sizeof *r->loss_host);
    if (!r->stats_host || !r->loss_host) return ut_fail(msg, len, TRAIN_EFAIL, "out of memory");
    ak_scaler_state host;
    if (ak_scaler_init(&r->o->scaler, &host) != 0)
        return ut_fail(msg, len, TRAIN_EINPUT, "the loss-scale options are inconsistent");
    r->scale_used = host.scale;
    r->after = host;
    rc = ak_to_device(b, r->scaler, &host, sizeof host);
    if (!rc) rc = ak_zero(b, r->opt_state, sizeof *r->opt_state);
    if (rc) return train_backend_fail(r, msg, len, "initialising the step's state");
    return 0;
}

/* The files a run reads exist and can be read (their content is checked
 * when they are loaded): so that a missing --data or --init is bad input
 * before a run, or a sweep, creates any folder. */
static int check_inputs(const train_options *o, const net_def *net, char *msg, size_t len)
{
    char why[512];
    const int rc = net->tokens            ? ds_check_text(o->data_dir, why, sizeof why)
                   : net->loss == NET_MSE ? DS_OK
                                          : ds_check_fashion_mnist(o->data_dir, why, sizeof why);
    if (rc != DS_OK)
        return ut_fail(msg, len, rc == DS_EIO ? TRAIN_EFAIL : TRAIN_EINPUT, "%s%s%s",
                       o->data_dir ? "--data " : "", why, rc == DS_ENOENT ? data_hint(net) : "");
    if (o->init_path) {
        struct stat st;
        const bool is_dir = stat(o->init_path, &st) == 0 && S_ISDIR(st.st_mode);
        FILE *f = is_dir ? NULL : fopen(o->init_path, "rb");
        if (!f)
            return ut_fail(msg, len, TRAIN_EINPUT, "--init %s: %s", o->init_path,
                           is_dir ? "a directory, not a safetensors file" : strerror(errno));
        fclose(f);
    }
    return 0;
}

/* The checks and the net-dependent defaults first: a bad option is
 * TRAIN_EINPUT before anything is built or written. */
int train_prepare(train_state *r, train_options *o, char *msg, size_t len)
{
    char why[512];
    if (net_build(o->net, &o->size, &r->net, why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EINPUT, "%s", why);
    /* the lists' edits in the order given, after the preset (topt_finish) */
    for (int i = 0; i < o->n_given; i++) {
        const bool white = strcmp(o->given[i].key, "white-list") == 0;
        if ((white || strcmp(o->given[i].key, "black-list") == 0) &&
            amp_lists_edit(&o->prec, o->given[i].text, white, why, sizeof why) != 0)
            return ut_fail(msg, len, TRAIN_EINPUT, "%s", why);
    }
    if (o->pin_spec && prec_pin_layers(&o->prec, &r->net, o->pin_spec, why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EINPUT, "%s", why);
    prec_plan_make(&o->prec, &r->net, &r->plan);
    if (r->plan.loss != AK_F32 && r->net.loss != NET_XENT)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "--white-list loss: %s's mean squared error has no %s variant (the "
                       "cross-entropy nets' loss can run in it)",
                       r->net.name, ak_dtype_name(r->plan.loss));
    if (ak_scaler_validate(&o->scaler, why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EINPUT, "%s", why);
    int rc = check_inputs(o, &r->net, msg, len);
    if (rc) return rc;
    if (o->batch == 0) o->batch = r->net.loss == NET_MSE ? 512 : r->net.in_h == 32 ? 32 : 64;
    if (o->opt.lr < 0) o->opt.lr = r->net.loss == NET_MSE ? 1e-4f : r->net.tokens ? 1e-3f : 0.01f;
    if ((int)o->stats_dtype < 0) o->stats_dtype = o->prec.low;
    return train_dp_prepare(r, msg, len);
}

int train_check(const train_options *given, char *msg, size_t len)
{
    /* train_prepare resolves defaults into its options: a copy */
    train_options o = *given;
    train_state r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    return train_prepare(&r, &o, msg, len);
}

int train_build(train_state *r, char *msg, size_t len)
{
    const train_options *o = r->o;
    r->opt = o->opt;
    char why[512];
    int rc = load_data(r, msg, len);
    /* checked before anything is written to the run directory */
    if (!rc && train_steps_per_epoch(r) == 0) {
        char ranks[32] = "";
        if (r->world > 1) snprintf(ranks, sizeof ranks, " x %d ranks", r->world);
        rc = ut_fail(msg, len, TRAIN_EINPUT,
                     "--batch %zu x --accumulate %lld%s is larger than the %zu training samples",
                     o->batch, (long long)o->accumulate, ranks, r->train->count);
    }
    if (!rc && model_create(r->b, &r->net, &r->plan, o->batch, &r->m, why, sizeof why) != 0)
        rc = ut_fail(msg, len, TRAIN_EFAIL, "building %s: %s", r->net.name, why);
    if (!rc &&
        model_alloc_optimizer(r->m, o->opt.kind != AK_OPT_SGD,
                              o->opt.kind == AK_OPT_ADAM || o->opt.kind == AK_OPT_ADAMW) != 0)
        rc = train_backend_fail(r, msg, len, "optimizer state");
    if (!rc && model_init_weights(r->m, o->seed) != 0)
        rc = train_backend_fail(r, msg, len, "initial weights");
    if (!rc && o->init_path && ckpt_load_weights(o->init_path, r->m, why, sizeof why) != 0)
        rc = ut_fail(msg, len, TRAIN_EINPUT, "--init: %s", why);
    if (!rc) rc = alloc_state(r, msg, len);
    if (!rc) rc = train_dp_build(r, msg, len);
    return rc;
}

void train_free(train_state *r)
{
    train_close_record(r);
    if (r->b) {
        ak_free(r->b, r->scaler);
        ak_free(r->b, r->opt_state);
        ak_free(r->b, r->found_inf);
        ak_free(r->b, r->stats);
        ak_free(r->b, r->trace);
        ak_free(r->b, r->loss);
        ak_free(r->b, r->inv_micro);
        ak_free(r->b, r->sumsq);
        ak_free(r->b, r->fault_scale);
        ak_free(r->b, r->weight_check);
        for (int k = 0; k < MODEL_MAX_PARAMS; k++)
            ak_free(r->b, r->acc[k].data);
    }
    model_free(r->m);
    ak_close(r->b);
    ds_free(r->train);
    ds_free(r->test);
    free(r->order);
    free(r->x_host);
    free(r->t_host);
    free(r->labels_host);
    free(r->stats_host);
    free(r->loss_host);
    train_dp_free(r);
    rec_lock_release(r->lock_fd); /* last: the record is complete */
    r->lock_fd = -1;
}
