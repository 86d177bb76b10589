/* train.c: the training loop and its record (train.h).
 *
 * train_step() is one step, top to bottom (docs/ARCHITECTURE.md):
 *   1. the batch to the backend;
 *   2-3. the weights in the run formats and the forward pass (model.c);
 *   4-5. the loss in fp32 or wider, its gradient multiplied by the scale held
 *        on the backend, and the backward pass;
 *   6. every --stats-every steps the statistics of weights, activations and
 *      both gradients, every --hist-every steps their histograms;
 *   7. the fused unscale + finite check of the gradients the optimizer reads;
 *   8. the loss-scale rule on the backend (it sets the skip flag);
 *   9. the optimizer updates with their rounding loss, skipped on the
 *      backend when the flag is set;
 *   10. the step's rows of the record.
 * The loss scale, found-inf and skip never leave the backend inside a step;
 * the host reads the step's loss and scaler state once, at its end, to log.
 */
#define _POSIX_C_SOURCE 200809L

#include "atomic_file.h" /* an_fail */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "data.h"
#include "model.h"
#include "record.h"

void train_options_default(train_options *o)
{
    memset(o, 0, sizeof *o);
    o->net = "mlp";
    prec_options_default(&o->prec, PREC_O0, AK_F16);
    o->stats_dtype = (ak_dtype)-1;
    o->backend = "auto";
    o->seed = 1;
    o->epochs = 1;
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
    o->diverge_after = 100;
    o->accumulate = 1;
    ak_scaler_preset("none", &o->scaler, NULL, 0);
}

/* ---- --fault: numerical faults for the tests -------------------------------------------- */
static const char *const fault_names[] = {"", "nonfinite-loss", "inf-loss", "overflow-grads",
                                          "zero-grads"};
#define FAULT_KINDS (sizeof fault_names / sizeof fault_names[0])

/* A step number: digits only, at most 2^40. */
static bool fault_step(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 13) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > (INT64_C(1) << 40)) return false;
    *out = v;
    return true;
}

int train_fault_parse(const char *spec, train_fault *faults, int *n_faults, char *msg,
                      size_t msg_len)
{
    *n_faults = 0;
    if (!spec || !*spec) return an_fail(msg, msg_len, -1, "--fault: empty SPEC");
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, '+');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *at = memchr(p, '@', len);
        if (!at)
            return an_fail(msg, msg_len, -1, "--fault %s: '%.*s' is not KIND@STEPS", spec, (int)len,
                           p);
        if (*n_faults == TRAIN_MAX_FAULTS)
            return an_fail(msg, msg_len, -1, "--fault %s: more than %d clauses", spec,
                           TRAIN_MAX_FAULTS);
        train_fault *f = &faults[(*n_faults)++];
        memset(f, 0, sizeof *f);
        for (size_t k = 1; k < FAULT_KINDS; k++)
            if (strlen(fault_names[k]) == (size_t)(at - p) &&
                memcmp(p, fault_names[k], (size_t)(at - p)) == 0)
                f->kind = (train_fault_kind)k;
        if (f->kind == TRAIN_FAULT_NONE)
            return an_fail(msg, msg_len, -1,
                           "--fault %s: unknown kind '%.*s' (expected nonfinite-loss, inf-loss, "
                           "overflow-grads or zero-grads)",
                           spec, (int)(at - p), p);
        const char *steps = at + 1, *stop = p + len;
        if ((size_t)(stop - steps) != 3 || memcmp(steps, "all", 3) != 0) {
            for (const char *q = steps;;) {
                const char *comma = memchr(q, ',', (size_t)(stop - q));
                const char *item_end = comma ? comma : stop;
                const char *dash = memchr(q, '-', (size_t)(item_end - q));
                int64_t lo = 0, hi = 0;
                bool ok = f->n_ranges < TRAIN_MAX_FAULT_RANGES;
                if (ok && dash)
                    ok = fault_step(q, (size_t)(dash - q), &lo) &&
                         fault_step(dash + 1, (size_t)(item_end - dash - 1), &hi) && lo <= hi;
                else if (ok && (ok = fault_step(q, (size_t)(item_end - q), &lo)))
                    hi = lo;
                if (!ok)
                    return an_fail(msg, msg_len, -1,
                                   "--fault %s: '%.*s' is not a step N, a range N-M (N <= M) or "
                                   "all (at most %d per clause)",
                                   spec, (int)(item_end - q), q, TRAIN_MAX_FAULT_RANGES);
                f->lo[f->n_ranges] = lo;
                f->hi[f->n_ranges++] = hi;
                if (!comma) break;
                q = comma + 1;
            }
        }
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

train_fault_kind train_fault_at(const train_fault *faults, int n_faults, int64_t step)
{
    for (int i = 0; i < n_faults; i++) {
        if (faults[i].n_ranges == 0) return faults[i].kind;
        for (int k = 0; k < faults[i].n_ranges; k++)
            if (step >= faults[i].lo[k] && step <= faults[i].hi[k]) return faults[i].kind;
    }
    return TRAIN_FAULT_NONE;
}

/* ---- signals: stop after the current step ------------------------------------------ */
static volatile sig_atomic_t stop_signal = 0;
static void on_signal(int sig) { stop_signal = sig; }

/* ---- the run ----------------------------------------------------------------------------- */
typedef struct run {
    const train_options *o;
    ak_backend *b;
    net_def net;
    prec_plan plan;
    model *m;
    ds_dataset *train, *test;
    size_t *order;
    float *x_host, *t_host;
    int32_t *labels_host;
    ak_scaler_state *scaler; /* backend memory */
    ak_opt_state *opt_state;
    float *found_inf;
    ak_stats *stats; /* n_layers x REC_KINDS, backend memory */
    ak_stats *stats_host;
    ak_stats *trace; /* every gradient of the step, backend memory */
    ak_stats trace_host;
    ak_update_loss *loss; /* one per layer, backend memory */
    ak_update_loss *loss_host;
    ak_opt_config opt;
    rec_log *steps_log, *tensors_log, *updates_log, *hist_log, *eval_log;
    rec_log *trace_log, *trace_hist_log;
    rec_run *record;
    char path[4096];
    float scale_used;                /* the scale the current step multiplies its loss by */
    ak_tensor acc[MODEL_MAX_PARAMS]; /* --accumulate: the summed gradients */
    float *inv_micro;                /* backend memory: 1 / micro-batches per step */
    double *sumsq;                   /* backend memory: --clip-norm's sum of squares */
    float *fault_scale;              /* backend memory: --fault's stand-in for the scale */
    int64_t skips;
    ak_scaler_state before, after; /* host copies: the scaler before and after the last step */
} run;

static const char *join(run *r, const char *file)
{
    snprintf(r->path, sizeof r->path, "%s/%s", r->o->out_dir, file);
    return r->path;
}

static int backend_fail(run *r, char *msg, size_t len, const char *what)
{
    return an_fail(msg, len, TRAIN_EFAIL, "%s: %s", what, ak_error(r->b));
}

static int make_out_dir(const char *dir, char *msg, size_t len)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return an_fail(msg, len, TRAIN_EINPUT, "--out %s: cannot create it: %s", dir,
                       strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return an_fail(msg, len, TRAIN_EINPUT, "--out %s: not a directory", dir);
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/%s", dir, REC_STEPS_CSV);
    if (access(probe, F_OK) == 0)
        return an_fail(msg, len, TRAIN_EINPUT,
                       "--out %s already holds a run (steps.csv); choose another directory", dir);
    return 0;
}

static int load_data(run *r, char *msg, size_t len)
{
    const train_options *o = r->o;
    char why[512];
    int rc;
    if (r->net.loss == NET_MSE) {
        ds_synthetic_options so;
        memset(&so, 0, sizeof so);
        so.count = o->samples ? o->samples : 8 * o->batch;
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
            return an_fail(msg, len, TRAIN_EINPUT,
                           "the data has %zu features per sample, %s wants %zu", r->train->features,
                           r->net.name, r->net.in_c * r->net.in_h * r->net.in_w);
    }
    if (rc != DS_OK)
        return an_fail(
            msg, len, rc == DS_ENOMEM || rc == DS_EIO ? TRAIN_EFAIL : TRAIN_EINPUT, "%s%s", why,
            rc == DS_ENOENT ? " (install dataset-fashion-mnist or give --data DIR)" : "");
    r->order = malloc(r->train->count * sizeof *r->order);
    r->x_host = malloc(o->batch * r->train->features * sizeof *r->x_host);
    if (r->net.loss == NET_MSE)
        r->t_host = malloc(o->batch * r->net.outputs * sizeof *r->t_host);
    else
        r->labels_host = malloc(o->batch * sizeof *r->labels_host);
    if (!r->order || !r->x_host || (!r->t_host && !r->labels_host))
        return an_fail(msg, len, TRAIN_EFAIL, "out of memory for the batch buffers");
    return 0;
}

/* at: where a resumed run goes on (zero for a new run).  The per-step logs
 * keep rows of steps 0..at->step-1.  eval.csv's step column counts steps:
 * the evaluation after step at->step is done when the checkpoint starts a
 * new epoch (batch 0), and still to do when it was written at the epoch's
 * last batch, before the evaluation (a run killed in between). */
static int open_logs(run *r, const ckpt_state *at, char *msg, size_t len)
{
    char why[512];
    const char *dir = r->o->out_dir;
    const int64_t keep = r->o->resume ? at->step - 1 : -1;
    int64_t keep_eval = -1;
    if (r->o->resume) keep_eval = at->batch == 0 ? at->step : at->step - 1;
    r->steps_log = rec_log_open_table(dir, REC_STEPS, keep, why, sizeof why);
    if (r->steps_log) r->tensors_log = rec_log_open_table(dir, REC_TENSORS, keep, why, sizeof why);
    if (r->tensors_log)
        r->updates_log = rec_log_open_table(dir, REC_UPDATES, keep, why, sizeof why);
    if (r->updates_log) r->hist_log = rec_log_open_table(dir, REC_HIST, keep, why, sizeof why);
    if (r->hist_log) r->trace_log = rec_log_open_table(dir, REC_TRACE, keep, why, sizeof why);
    if (r->trace_log)
        r->trace_hist_log = rec_log_open_table(dir, REC_TRACE_HIST, keep, why, sizeof why);
    if (r->trace_hist_log && r->test)
        r->eval_log = rec_log_open_table(dir, REC_EVAL, keep_eval, why, sizeof why);
    if (!r->steps_log || !r->tensors_log || !r->updates_log || !r->hist_log || !r->trace_log ||
        !r->trace_hist_log || (r->test && !r->eval_log))
        return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

static int write_run_json(run *r, bool ended, char *msg, size_t len)
{
    if (ended) rec_run_set_end(r->record, (int64_t)time(NULL));
    char why[512];
    if (rec_run_write(r->record, join(r, REC_RUN_JSON), why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

static int alloc_state(run *r, char *msg, size_t len)
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
    for (int k = 0; k < r->m->n_params && !rc && r->o->accumulate > 1; k++)
        rc = ak_alloc_tensor(b, r->m->params[k].n, r->m->params[k].grad.dtype, &r->acc[k]);
    if (!rc) {
        const float inv = 1.0f / (float)r->o->accumulate; /* exact for powers of two */
        rc = ak_to_device(b, r->inv_micro, &inv, sizeof inv);
    }
    if (rc) return backend_fail(r, msg, len, "allocating the step's state");
    r->stats_host = malloc(n_stats * sizeof *r->stats_host);
    r->loss_host = malloc((size_t)r->net.n_layers * sizeof *r->loss_host);
    if (!r->stats_host || !r->loss_host) return an_fail(msg, len, TRAIN_EFAIL, "out of memory");
    ak_scaler_state host;
    if (ak_scaler_init(&r->o->scaler, &host) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "the loss-scale options are inconsistent");
    r->scale_used = host.scale;
    r->after = host;
    rc = ak_to_device(b, r->scaler, &host, sizeof host);
    if (!rc) rc = ak_zero(b, r->opt_state, sizeof *r->opt_state);
    if (rc) return backend_fail(r, msg, len, "initialising the step's state");
    return 0;
}

/* 6. the statistics of every layer's tensors, for the target format
 * (model_stats says which), written to tensors.csv and hist.csv. */
static int step_stats(run *r, int64_t step, bool stats, bool hist, size_t rows)
{
    const size_t n_stats = (size_t)r->net.n_layers * REC_KINDS;
    int rc = ak_zero(r->b, r->stats, n_stats * sizeof *r->stats);
    if (!rc) rc = model_stats(r->m, rows, (fpe_format_id)r->o->stats_dtype, r->stats);
    if (!rc) rc = ak_to_host(r->b, r->stats_host, r->stats, n_stats * sizeof *r->stats);
    if (rc) return rc;
    for (int i = 0; i < r->net.n_layers; i++) {
        const net_layer *l = &r->net.layers[i];
        for (int k = 0; k < REC_KINDS; k++) {
            if ((k == REC_WEIGHT || k == REC_WEIGHT_GRAD) && !net_has_params(l)) continue;
            const ak_stats *s = r->stats_host + (size_t)i * REC_KINDS + k;
            if (stats && rec_write_tensor_stats(r->tensors_log, step, l->name, (rec_kind)k,
                                                r->o->stats_dtype, 1.0f, s) != 0)
                return AK_EINVAL;
            if (hist && rec_write_hist_stats(r->hist_log, step, l->name, (rec_kind)k, s) != 0)
                return AK_EINVAL;
        }
    }
    return 0;
}

/* The gradient trace: the statistics of every activation and weight
 * gradient of the step together (of the scaled loss, as stored; with
 * --accumulate, the last micro-batch's), for analyze/replay.h. */
static int step_trace(run *r, size_t rows)
{
    model *m = r->m;
    const fpe_format_id target = (fpe_format_id)r->o->stats_dtype;
    int rc = ak_zero(r->b, r->trace, sizeof *r->trace);
    for (int i = 0; i < r->net.n_layers && !rc; i++) {
        const size_t out_n = rows * net_out_features(&r->net.layers[i]);
        rc = ak_stats_accumulate(r->b, ak_tensor_of(m->dact[i].data, out_n, m->dact[i].dtype),
                                 target, NULL, r->trace);
    }
    for (int k = 0; k < m->n_params && !rc; k++)
        rc = ak_stats_accumulate(r->b, m->params[k].grad_run, target, NULL, r->trace);
    return rc; /* read with the step's other results, at its end */
}

/* One step: --accumulate micro-batches from it, each forward and backward,
 * their gradients summed (then divided by their number), one update.
 * *loss_out the mean of the micro-batches' losses, *steps_at_min the
 * scaler's count of steps in a row at its floor. */
static int train_step(run *r, ds_batcher *it, int64_t step, int64_t epoch, float *loss_out,
                      int64_t *steps_at_min, char *msg, size_t len)
{
    const train_options *o = r->o;
    model *m = r->m;
    ak_backend *b = r->b;
    const int64_t micro = o->accumulate;
    double loss_sum = 0;
    size_t rows = 0;
    char why[512];
    int rc = ak_zero(b, r->found_inf, sizeof(float));
    /* --fault: the backward pass multiplies the loss by NaN (a NaN loss), inf
     * (an infinite loss, or gradients that overflow) or 0 instead of the scale */
    const train_fault_kind fault = train_fault_at(o->faults, o->n_faults, step);
    const float *scale = &r->scaler->scale;
    const float fault_value = fault == TRAIN_FAULT_NONFINITE_LOSS ? NAN
                              : fault == TRAIN_FAULT_ZERO_GRADS   ? 0.0f
                                                                  : INFINITY;
    const bool fault_loss = fault == TRAIN_FAULT_NONFINITE_LOSS || fault == TRAIN_FAULT_INF_LOSS;
    if (!rc && fault != TRAIN_FAULT_NONE) {
        scale = r->fault_scale;
        rc = ak_to_device(b, r->fault_scale, &fault_value, sizeof fault_value);
    }
    for (int64_t k = 0; k < micro && !rc; k++) {
        /* 1. the batch */
        if (ds_batch_next(it, r->x_host, r->labels_host, r->t_host, &rows, why, sizeof why) !=
            DS_OK)
            return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
        rc = ak_to_device(b, m->x.data, r->x_host, rows * r->train->features * sizeof(float));
        if (!rc && r->labels_host)
            rc = ak_to_device(b, m->labels, r->labels_host, rows * sizeof(int32_t));
        if (!rc && r->t_host)
            rc = ak_to_device(b, m->target.data, r->t_host, rows * r->net.outputs * sizeof(float));
        /* 2-5. forward, loss times the scale, backward */
        if (!rc) rc = model_forward_backward(m, rows, scale);
        if (!rc && fault_loss) rc = ak_to_device(b, m->loss, &fault_value, sizeof fault_value);
        if (!rc && micro > 1) {
            float l;
            rc = ak_to_host(b, &l, m->loss, sizeof l);
            loss_sum += l;
            for (int j = 0; j < m->n_params && !rc; j++) {
                const model_param *p = &m->params[j];
                rc = k == 0 ? ak_copy(b, r->acc[j].data, p->grad.data,
                                      p->n * ak_dtype_size(p->grad.dtype))
                            : ak_accumulate(b, r->acc[j], p->grad);
            }
        }
    }
    if (rc) return backend_fail(r, msg, len, "forward/backward");
    /* 6. statistics (of the last micro-batch) */
    const bool stats = o->stats_every > 0 && step % o->stats_every == 0;
    const bool hist = o->hist_every > 0 && step % o->hist_every == 0;
    if ((stats || hist) && step_stats(r, step, stats, hist, rows) != 0)
        return an_fail(msg, len, TRAIN_EFAIL, "statistics at step %lld: %s%s", (long long)step,
                       ak_error(b), rec_log_error(r->tensors_log));
    const bool trace = o->trace_every > 0 && step % o->trace_every == 0;
    if (trace && step_trace(r, rows) != 0) return backend_fail(r, msg, len, "the gradient trace");
    /* 7. unscale + finite check, once per update, then the clipping */
    ak_tensor grads[MODEL_MAX_PARAMS];
    const int n = model_grads(m, grads);
    if (micro > 1)
        for (int j = 0; j < n && !rc; j++) {
            grads[j] = r->acc[j];
            rc = ak_scale(b, grads[j], r->inv_micro);
        }
    if (!rc) rc = ak_unscale_check(b, grads, (size_t)n, &r->scaler->inv_scale, r->found_inf);
    if (!rc && o->clip_norm > 0) {
        rc = ak_zero(b, r->sumsq, sizeof *r->sumsq);
        if (!rc) rc = ak_sum_squares(b, grads, (size_t)n, r->sumsq);
        if (!rc) rc = ak_clip_by_norm(b, grads, (size_t)n, r->sumsq, o->clip_norm, NULL);
    }
    /* 8. the scaler's decision, on the backend */
    if (!rc) rc = ak_loss_scale_update(b, &o->scaler, r->scaler, r->found_inf);
    /* 9. the updates, skipped on the backend when the scaler says so */
    if (!rc) rc = ak_opt_step_begin(b, &r->opt, r->opt_state, &r->scaler->skip);
    if (!rc) rc = ak_zero(b, r->loss, (size_t)r->net.n_layers * sizeof *r->loss);
    for (int k = 0; k < m->n_params && !rc; k++) {
        model_param *p = &m->params[k];
        ak_param ap;
        ap.master = p->w32;
        ap.model = p->wlow;
        ap.grad = grads[k];
        ap.m = p->m;
        ap.v = p->v;
        rc = ak_update(b, &r->opt, &ap, r->opt_state, &r->scaler->skip, r->loss + p->layer);
        r->opt.round.index += p->n; /* fresh stochastic-rounding bits for every element */
    }
    if (rc) return backend_fail(r, msg, len, "unscale/scaler/update");
    /* 10. the record: the host reads the step's outcome once */
    ak_scaler_state st;
    float loss, found;
    rc = ak_to_host(b, &loss, m->loss, sizeof loss);
    if (!rc) rc = ak_to_host(b, &st, r->scaler, sizeof st);
    if (!rc) rc = ak_to_host(b, &found, r->found_inf, sizeof found);
    if (!rc) rc = ak_to_host(b, r->loss_host, r->loss, (size_t)r->net.n_layers * sizeof *r->loss);
    if (!rc && trace) rc = ak_to_host(b, &r->trace_host, r->trace, sizeof r->trace_host);
    if (rc) return backend_fail(r, msg, len, "reading the step's results");
    if (micro > 1) loss = (float)(loss_sum / (double)micro);
    rec_step_row row;
    memset(&row, 0, sizeof row);
    row.step = step;
    row.epoch = epoch;
    row.loss = loss;
    row.loss_scale = r->scale_used;
    row.found_inf = found != 0.0f;
    row.skipped = st.skip != 0.0f;
    row.lr = r->opt.lr;
    *loss_out = loss;
    *steps_at_min = st.steps_at_min;
    r->before = r->after;
    r->after = st;
    r->skips += row.skipped;
    r->scale_used = st.scale;
    bool ok = rec_write_step(r->steps_log, &row) == 0;
    if (ok && trace)
        ok = rec_write_trace_stats(r->trace_log, r->trace_hist_log, step, row.loss_scale,
                                   row.found_inf, &r->trace_host) == 0;
    if (o->stats_every > 0 && step % o->stats_every == 0)
        for (int i = 0; i < r->net.n_layers && ok; i++)
            if (net_has_params(&r->net.layers[i]))
                ok = rec_write_update_loss(r->updates_log, step, r->net.layers[i].name,
                                           &r->loss_host[i]) == 0;
    /* a killed run keeps every completed step's rows */
    if (ok)
        ok = rec_log_flush(r->steps_log) == 0 && rec_log_flush(r->updates_log) == 0 &&
             rec_log_flush(r->tensors_log) == 0 && rec_log_flush(r->hist_log) == 0 &&
             rec_log_flush(r->trace_log) == 0 && rec_log_flush(r->trace_hist_log) == 0;
    if (!ok)
        return an_fail(msg, len, TRAIN_EFAIL, "writing the record: %s%s%s%s%s%s",
                       rec_log_error(r->steps_log), rec_log_error(r->updates_log),
                       rec_log_error(r->tensors_log), rec_log_error(r->hist_log),
                       rec_log_error(r->trace_log), rec_log_error(r->trace_hist_log));
    return 0;
}

static int evaluate(run *r, int64_t epoch, int64_t step, double *acc_out, char *msg, size_t len)
{
    ds_batcher it;
    char why[512];
    if (ds_batcher_init(&it, r->test, NULL, r->o->batch, true, why, sizeof why) != DS_OK)
        return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
    double loss_sum = 0;
    int64_t correct = 0, total = 0;
    for (;;) {
        size_t rows = 0;
        if (ds_batch_next(&it, r->x_host, r->labels_host, NULL, &rows, why, sizeof why) != DS_OK)
            return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
        if (rows == 0) break;
        int rc =
            ak_to_device(r->b, r->m->x.data, r->x_host, rows * r->test->features * sizeof(float));
        if (!rc) rc = ak_to_device(r->b, r->m->labels, r->labels_host, rows * sizeof(int32_t));
        if (!rc) rc = model_forward(r->m, rows);
        float loss;
        int32_t good;
        if (!rc) rc = ak_to_host(r->b, &loss, r->m->loss, sizeof loss);
        if (!rc) rc = ak_to_host(r->b, &good, r->m->correct, sizeof good);
        if (rc) return backend_fail(r, msg, len, "evaluation");
        loss_sum += (double)loss * (double)rows;
        correct += good;
        total += (int64_t)rows;
    }
    rec_eval_row row;
    row.epoch = epoch;
    row.step = step;
    row.test_loss = loss_sum / (double)total;
    row.test_accuracy = (double)correct / (double)total;
    *acc_out = row.test_accuracy;
    if (rec_write_eval(r->eval_log, &row) != 0 || rec_log_flush(r->eval_log) != 0)
        return an_fail(msg, len, TRAIN_EFAIL, "%s", rec_log_error(r->eval_log));
    return 0;
}

/* Writes DIR/checkpoint.safetensors for a run that has done `step` steps
 * and goes on at (epoch, batch). */
static int save_checkpoint(run *r, int64_t step, int64_t epoch, int64_t batch, char *msg,
                           size_t len)
{
    /* the rows the checkpoint keeps reach the disk before it does */
    rec_log *logs[] = {r->steps_log, r->tensors_log,    r->updates_log, r->hist_log,
                       r->trace_log, r->trace_hist_log, r->eval_log};
    for (size_t i = 0; i < sizeof logs / sizeof *logs; i++)
        if (logs[i] && rec_log_sync(logs[i]) != 0)
            return an_fail(msg, len, TRAIN_EFAIL, "%s", rec_log_error(logs[i]));
    ckpt_state s;
    memset(&s, 0, sizeof s);
    s.step = step;
    s.epoch = epoch;
    s.batch = batch;
    s.sr_index = r->opt.round.index;
    s.skips = r->skips;
    s.scale_used = r->scale_used;
    if (ak_to_host(r->b, &s.opt, r->opt_state, sizeof s.opt) != 0 ||
        ak_to_host(r->b, &s.scaler, r->scaler, sizeof s.scaler) != 0)
        return backend_fail(r, msg, len, "reading the state for the checkpoint");
    char why[1024];
    if (ckpt_save(join(r, REC_CHECKPOINT), r->m, &s, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A progress line on a terminal: step, loss, scale, skips, rate, time left. */
static void show_progress(const run *r, int64_t step, int64_t total, int64_t epoch, float loss,
                          double started)
{
    const double elapsed = now_seconds() - started;
    const double rate = elapsed > 0 ? (double)step / elapsed : 0;
    const double left = rate > 0 ? (double)(total - step) / rate : 0;
    fprintf(stderr,
            "\r  step %lld/%lld  epoch %lld  loss %-10.5g scale %-9.4g skips %lld  %.1f steps/s  "
            "%02d:%02d left ",
            (long long)step, (long long)total, (long long)epoch, (double)loss,
            (double)r->scale_used, (long long)r->skips, rate, (int)(left / 60), (int)left % 60);
    fflush(stderr);
}

static void run_free(run *r)
{
    char ignore[64];
    rec_log_close(r->steps_log, ignore, sizeof ignore);
    rec_log_close(r->tensors_log, ignore, sizeof ignore);
    rec_log_close(r->updates_log, ignore, sizeof ignore);
    rec_log_close(r->hist_log, ignore, sizeof ignore);
    rec_log_close(r->trace_log, ignore, sizeof ignore);
    rec_log_close(r->trace_hist_log, ignore, sizeof ignore);
    rec_log_close(r->eval_log, ignore, sizeof ignore);
    rec_run_free(r->record);
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
}

/* ---- what the loss-scale policy does at its limits ------------------------------------------ */
/* Where a preset's framework stands when its scale grows past fp32's
 * maximum without refusing it (see ../shared/REFERENCES.md). */
static const char *unrefused_growth(const char *preset)
{
    static const struct {
        const char *preset, *note;
    } notes[] = {
        {"mindspore-manager", "MindSpore's DynamicLossScaleUpdateCell multiplies its fp32 scale "
                              "unchecked: it is inf, and every later step overflows"},
        {"paddle", "Paddle's dygraph GradScaler multiplies its fp32 scale unchecked: it is inf, "
                   "and every later step overflows"},
        {"megatron", "Megatron's DynamicGradScaler multiplies its fp32 scale tensor unchecked: it "
                     "is inf, and every later step overflows"},
        {"keras", "Keras 3's LossScaleOptimizer doubles its fp32 dynamic_scale unchecked: it is "
                  "inf, and every later step overflows"},
        {"deepspeed", "DeepSpeed's cur_scale is a Python float, where 2^128 exists: its next "
                      "scaled loss overflows and the scale backs off; an fp32 scale cannot follow"},
        {"apex", "Apex's _loss_scale is a Python float, capped at max_loss_scale"},
    };
    for (size_t i = 0; preset && i < sizeof notes / sizeof notes[0]; i++)
        if (strcmp(preset, notes[i].preset) == 0) return notes[i].note;
    return "--refuse-nonfinite-growth is off: the scale is inf, and every later step overflows";
}

/* run.json's scaler_floor and scaler_nonfinite_growth: what this policy
 * does when every step overflows and when its scale would grow past fp32's
 * maximum, as its framework does. */
static void record_scaler_notes(run *r)
{
    const ak_scaler_config *c = &r->o->scaler;
    if (c->kind != AK_SCALER_DYNAMIC) return;
    char text[512];
    if (c->min_scale > 0)
        snprintf(text, sizeof text, "%g: backoffs stop there; %s", (double)c->min_scale,
                 c->rule == AK_SCALER_RULE_DEEPSPEED
                     ? "an overflow at it ends the run, as DeepSpeed's raise_error_at_min_scale "
                       "does (exit 3)"
                     : "the run ends after --diverge-after steps in a row there (exit 3)");
    else
        snprintf(text, sizeof text,
                 "none: backoffs take the scale to 0 (fp32 halvings from 2^16 reach 0 at the "
                 "166th); the run ends after --diverge-after steps in a row at 0 (exit 3)");
    rec_run_set_string(r->record, "scaler_floor", text);
    if (c->refuse_nonfinite_growth)
        snprintf(text, sizeof text,
                 "refused: a growth to a non-finite scale keeps the scale (PyTorch's GradScaler, "
                 "MindSpore's DynamicLossScaler)");
    else if (ak_scale_is_finite(c->max_scale))
        snprintf(text, sizeof text, "capped: min(scale x %g, --max-scale %g)",
                 (double)c->growth_factor, (double)c->max_scale);
    else
        snprintf(text, sizeof text,
                 "taken: the fp32 scale becomes inf (%s); the run ends there (exit 3)",
                 unrefused_growth(r->o->scaler_name));
    rec_run_set_string(r->record, "scaler_nonfinite_growth", text);
}

/* After a step: whether the scaler's state ends the run (msg says why):
 * a scale that grew to inf (every later step would overflow and be
 * skipped), DeepSpeed's error on an overflow at its minimum scale, a
 * dynamic scale at its floor (or at 0) for --diverge-after steps, and for
 * a fixed scale or none, --diverge-after overflowing steps in a row. */
static bool numerical_stop(run *r, int64_t step, char *msg, size_t len)
{
    const train_options *o = r->o;
    const ak_scaler_config *c = &o->scaler;
    const ak_scaler_state *was = &r->before, *now = &r->after;
    const bool overflow = now->overflows > was->overflows;
    if (!ak_scale_is_finite(now->scale)) {
        an_fail(msg, len, TRAIN_DIVERGED,
                "diverged: at step %lld the loss scale %g grew past fp32's maximum (to %g): %s",
                (long long)step, (double)was->scale, (double)now->scale,
                unrefused_growth(o->scaler_name));
        return true;
    }
    if (c->kind == AK_SCALER_DYNAMIC && c->rule == AK_SCALER_RULE_DEEPSPEED && overflow &&
        was->hysteresis_left <= 1 && was->scale == c->min_scale) {
        an_fail(msg, len, TRAIN_DIVERGED,
                "diverged: step %lld overflowed at the minimum loss scale %g; DeepSpeed raises "
                "'Current loss scale already at minimum - cannot decrease scale anymore' here",
                (long long)step, (double)c->min_scale);
        return true;
    }
    if (o->diverge_after <= 0) return false;
    if (c->kind == AK_SCALER_DYNAMIC && now->steps_at_min >= o->diverge_after) {
        if (c->min_scale > 0)
            an_fail(msg, len, TRAIN_DIVERGED,
                    "diverged: the loss scale stayed at --min-scale %g for %lld steps in a row "
                    "(step %lld)",
                    (double)c->min_scale, (long long)now->steps_at_min, (long long)step);
        else
            an_fail(msg, len, TRAIN_DIVERGED,
                    "diverged: the loss scale fell to 0 (the policy has no floor) and stayed "
                    "there for %lld steps in a row (step %lld)",
                    (long long)now->steps_at_min, (long long)step);
        return true;
    }
    if (c->kind != AK_SCALER_DYNAMIC && now->overflows_in_a_row >= o->diverge_after) {
        an_fail(msg, len, TRAIN_DIVERGED,
                "diverged: the gradients overflowed on %lld steps in a row %s %g (step %lld)",
                (long long)now->overflows_in_a_row,
                c->kind == AK_SCALER_FIXED ? "at the fixed loss scale" : "with no loss scaling:",
                (double)now->scale, (long long)step);
        return true;
    }
    return false;
}

/* Everything that can be checked before work starts: the net, the
 * precision options, the scaler; a bad one is TRAIN_EINPUT. */
static int prepare(run *r, train_options *o, char *msg, size_t len)
{
    char why[512];
    if (net_build(o->net, &o->size, &r->net, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "%s", why);
    if (o->white_list && prec_edit_list(&o->prec, o->white_list, true, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "%s", why);
    if (o->black_list && prec_edit_list(&o->prec, o->black_list, false, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "%s", why);
    if (o->pin_spec && prec_pin_layers(&o->prec, &r->net, o->pin_spec, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "%s", why);
    prec_plan_make(&o->prec, &r->net, &r->plan);
    if (ak_scaler_validate(&o->scaler, why, sizeof why) != 0)
        return an_fail(msg, len, TRAIN_EINPUT, "%s", why);
    if (o->batch == 0) o->batch = r->net.loss == NET_MSE ? 512 : r->net.in_h == 32 ? 32 : 64;
    if (o->opt.lr < 0) o->opt.lr = r->net.loss == NET_MSE ? 1e-4f : 0.01f;
    if ((int)o->stats_dtype < 0) o->stats_dtype = o->prec.low;
    return 0;
}

int train_run(const train_options *given, char *msg, size_t msg_len)
{
    train_options o = *given;
    run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    int rc = prepare(&r, &o, msg, msg_len);
    if (!rc && !o.resume) rc = make_out_dir(o.out_dir, msg, msg_len);
    if (rc) return rc;
    char notice[512];
    r.b = ak_open(o.backend, notice, sizeof notice);
    if (!r.b) return an_fail(msg, msg_len, TRAIN_EINPUT, "%s", notice);
    if (notice[0]) fprintf(stderr, "ampscope train: %s\n", notice);
    r.opt = o.opt;
    char why[512];
    rc = load_data(&r, msg, msg_len);
    /* checked before anything is written to the run directory */
    if (!rc && r.train->count / o.batch / (size_t)o.accumulate == 0)
        rc = an_fail(msg, msg_len, TRAIN_EINPUT,
                     "--batch %zu x --accumulate %lld is larger than the %zu training samples",
                     o.batch, (long long)o.accumulate, r.train->count);
    if (!rc && model_create(r.b, &r.net, &r.plan, o.batch, &r.m, why, sizeof why) != 0)
        rc = an_fail(msg, msg_len, TRAIN_EFAIL, "building %s: %s", r.net.name, why);
    if (!rc && model_alloc_optimizer(r.m, o.opt.kind != AK_OPT_SGD,
                                     o.opt.kind == AK_OPT_ADAM || o.opt.kind == AK_OPT_ADAMW) != 0)
        rc = backend_fail(&r, msg, msg_len, "optimizer state");
    if (!rc && model_init_weights(r.m, o.seed) != 0)
        rc = backend_fail(&r, msg, msg_len, "initial weights");
    if (!rc && o.init_path && ckpt_load_weights(o.init_path, r.m, why, sizeof why) != 0)
        rc = an_fail(msg, msg_len, TRAIN_EINPUT, "--init: %s", why);
    if (!rc) rc = alloc_state(&r, msg, msg_len);
    /* a resumed run: the weights, optimizer and scaler state and the data
     * position of its last checkpoint */
    ckpt_state at;
    memset(&at, 0, sizeof at);
    /* what writers killed in the middle of a write left (af_begin's names) */
    if (!rc && (af_remove_stale(join(&r, REC_CHECKPOINT), why, sizeof why) < 0 ||
                af_remove_stale(join(&r, REC_RUN_JSON), why, sizeof why) < 0))
        rc = an_fail(msg, msg_len, TRAIN_EFAIL, "%s", why);
    /* a run killed before its first checkpoint starts again from step 0 */
    const bool from_checkpoint = o.resume && access(join(&r, REC_CHECKPOINT), F_OK) == 0;
    if (!rc && from_checkpoint) {
        if (ckpt_load(join(&r, REC_CHECKPOINT), r.m, &at, why, sizeof why) != 0)
            rc = an_fail(msg, msg_len, TRAIN_EINPUT, "--resume: %s", why);
        else if (ak_to_device(r.b, r.opt_state, &at.opt, sizeof at.opt) != 0 ||
                 ak_to_device(r.b, r.scaler, &at.scaler, sizeof at.scaler) != 0)
            rc = backend_fail(&r, msg, msg_len, "restoring the state");
        r.opt.round.index = at.sr_index;
        r.skips = at.skips;
        r.scale_used = at.scale_used;
        r.after = at.scaler;
    }
    if (!rc && o.resume) {
        r.record = rec_run_read(join(&r, REC_RUN_JSON), why, sizeof why);
        if (!r.record) rc = an_fail(msg, msg_len, TRAIN_EINPUT, "--resume: %s", why);
    }
    if (!rc && !o.resume) {
        r.record =
            rec_run_new(o.version, o.git_revision, ak_backend_name(r.b), ak_device_name(r.b));
        if (!r.record) rc = an_fail(msg, msg_len, TRAIN_EFAIL, "out of memory");
    }
    if (!rc && !o.resume) {
        rec_run_set_start(r.record, (int64_t)time(NULL));
        /* the options as given, then what the defaults resolved to */
        for (int i = 0; i < o.n_given; i++)
            if (o.given[i].text && o.given[i].text[0] != '-') /* as the argv scan took them */
                rec_run_set_string(r.record, o.given[i].key, o.given[i].text);
        rec_run_set_string(r.record, "net", r.net.name);
        rec_run_set_string(r.record, "mode", prec_mode_name(o.prec.mode));
        rec_run_set_string(r.record, "dtype", ak_dtype_name(o.prec.low));
        rec_run_set_int(r.record, "batch", (int64_t)o.batch);
        rec_run_set_real(r.record, "lr", o.opt.lr);
        rec_run_set_int(r.record, "seed", (int64_t)o.seed);
        record_scaler_notes(&r);
        rc = write_run_json(&r, false, msg, msg_len);
    }
    if (!rc) rc = open_logs(&r, &at, msg, msg_len);
    if (rc) {
        run_free(&r);
        return rc;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    ds_batcher it;
    const size_t per_epoch = r.train->count / o.batch / (size_t)o.accumulate; /* steps, >= 1 */
    const int64_t total = o.steps > 0 ? o.steps : o.epochs * (int64_t)per_epoch;
    const bool show = o.progress && isatty(STDERR_FILENO);
    const double started = now_seconds();
    int64_t step = at.step, epoch = at.epoch, batch = at.batch;
    const int64_t first_step = step;
    float loss = 0;
    double accuracy = -1;
    while (step < total && !rc && !stop_signal) {
        if (ds_shuffle(r.train->count, o.seed, (uint64_t)epoch, r.order, why, sizeof why) !=
                DS_OK ||
            ds_batcher_init(&it, r.train, r.order, o.batch, false, why, sizeof why) != DS_OK) {
            rc = an_fail(msg, msg_len, TRAIN_EFAIL, "%s", why);
            break;
        }
        it.next = (size_t)(batch * o.accumulate);
        for (; batch < (int64_t)per_epoch && step < total && !rc && !stop_signal; batch++) {
            int64_t at_min = 0;
            rc = train_step(&r, &it, step, epoch, &loss, &at_min, msg, msg_len);
            if (rc) break;
            step++;
            if (show && (step % 10 == 0 || step == total))
                show_progress(&r, step - first_step, total - first_step, epoch, loss, started);
            (void)at_min; /* numerical_stop reads the scaler state itself */
            if (o.prec.mode == PREC_O0 && !(loss - loss == 0.0f))
                rc = an_fail(msg, msg_len, TRAIN_DIVERGED,
                             "diverged: the loss is %g at step %lld in O0 (try a smaller --lr)",
                             (double)loss, (long long)step - 1);
            else if (numerical_stop(&r, step - 1, msg, msg_len))
                rc = TRAIN_DIVERGED;
            else if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0)
                rc = save_checkpoint(&r, step, epoch, batch + 1, msg, msg_len);
        }
        if (rc || stop_signal) break;
        if (batch >= (int64_t)per_epoch) { /* the epoch is complete */
            if (r.test) rc = evaluate(&r, epoch, step, &accuracy, msg, msg_len);
            epoch++;
            batch = 0;
            if (!rc) rc = save_checkpoint(&r, step, epoch, batch, msg, msg_len);
        }
    }
    /* a stopped or finished run leaves a checkpoint to resume from */
    if (!rc && step > first_step) rc = save_checkpoint(&r, step, epoch, batch, msg, msg_len);
    if (show) fputc('\n', stderr);
    /* the record ends whatever happened; logs are flushed step by step */
    char end_msg[512];
    /* why a run stopped on its own, in the record */
    if (rc == TRAIN_DIVERGED) rec_run_set_string(r.record, "end_reason", msg);
    const int end_rc = write_run_json(&r, true, end_msg, sizeof end_msg);
    if (!rc && end_rc) rc = an_fail(msg, msg_len, end_rc, "%s", end_msg);
    if (!rc && stop_signal)
        rc = an_fail(
            msg, msg_len, TRAIN_INTERRUPTED,
            "interrupted by signal %d after step %lld; the record in %s is complete up to it",
            (int)stop_signal, (long long)step - 1, o.out_dir);
    if (!rc) {
        printf("%s %s %s: %lld steps, final loss %.6g, skipped %lld", r.net.name,
               prec_mode_name(o.prec.mode),
               o.prec.mode == PREC_O0 ? "fp32" : ak_dtype_name(o.prec.low), (long long)step,
               (double)loss, (long long)r.skips);
        if (accuracy >= 0) printf(", test accuracy %.4f", accuracy);
        printf("; record in %s\n", o.out_dir);
    }
    run_free(&r);
    return rc;
}
