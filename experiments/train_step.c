/* train_step.c: one training step, top to bottom (train_internal.h):
 *   1. the batch to the backend;
 *   2-5. the weights in the run formats, the forward pass, the loss in fp32
 *        or wider, its gradient multiplied by the scale held on the
 *        backend, and the backward pass (model_forward_backward);
 *   6. every --stats-every steps the statistics of weights, activations and
 *      both gradients, every --hist-every steps their histograms, every
 *      --trace-every steps the gradient trace;
 *   7. the fused unscale + finite check of the gradients the optimizer reads;
 *   8. the loss-scale rule on the backend (it sets the skip flag);
 *   9. the optimizer updates with their rounding loss, skipped on the
 *      backend when the flag is set, then the finite check of the stored
 *      weights (the fp32 masters where the mode keeps them);
 *   10. the step's rows of the record.
 * With --accumulate, 1-5 run once per micro-batch and their gradients are
 * summed, then divided by their number; data parallel (--world or mpirun),
 * 1-5 run on every rank and the ranks' gradients are all-reduced before 6
 * (train_dp.c), so that 7 decides found-inf after the reduction.  The loss scale, found-inf and
 * skip never leave the backend inside a step; the host reads the step's loss and scaler state once,
 * at its end, to log. */
#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"

#include <math.h>
#include <string.h>

/* Whether a step numbered `step` is one of every n (n 0: never). */
static bool every(int64_t n, int64_t step) { return n > 0 && step % n == 0; }

/* found-inf and the weights' flag cleared, and the scale this step's
 * backward pass uses. */
static int begin_step(train_state *r, int64_t step, train_step_scale *s, char *msg, size_t len)
{
    const train_fault_kind fault = train_fault_at(r->o->faults, r->o->n_faults, step);
    s->scale = &r->scaler->scale;
    s->fault_value = fault == TRAIN_FAULT_NONFINITE_LOSS || fault == TRAIN_FAULT_NAN_WEIGHTS ? NAN
                     : fault == TRAIN_FAULT_ZERO_GRADS                                       ? 0.0f
                                                       : INFINITY;
    s->fault_loss = fault == TRAIN_FAULT_NONFINITE_LOSS || fault == TRAIN_FAULT_INF_LOSS;
    s->fault_weights = fault == TRAIN_FAULT_NAN_WEIGHTS;
    int rc = ak_zero(r->b, r->found_inf, sizeof(float));
    if (!rc) rc = ak_zero(r->b, r->weight_check + 1, sizeof(float));
    if (!rc && fault != TRAIN_FAULT_NONE) {
        if (!s->fault_weights) s->scale = r->fault_scale;
        rc = ak_to_device(r->b, r->fault_scale, &s->fault_value, sizeof s->fault_value);
    }
    return rc ? train_backend_fail(r, msg, len, "forward/backward") : 0;
}

/* 1. the next batch to the backend: *rows samples. */
static int load_batch(train_state *r, ds_batcher *it, size_t *rows, char *msg, size_t len)
{
    ak_backend *b = r->b;
    model *m = r->m;
    char why[512];
    if (ds_batch_next(it, r->x_host, r->labels_host, r->t_host, rows, why, sizeof why) != DS_OK)
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    int rc = ak_to_device(b, m->x.data, r->x_host, *rows * r->train->features * sizeof(float));
    if (!rc && r->labels_host) /* a sequence net's: one a token */
        rc = ak_to_device(b, m->labels, r->labels_host,
                          *rows * r->train->label_dim * sizeof(int32_t));
    if (!rc && r->t_host)
        rc = ak_to_device(b, m->target.data, r->t_host, *rows * r->net.outputs * sizeof(float));
    return rc ? train_backend_fail(r, msg, len, "forward/backward") : 0;
}

/* 2-5. the weights cast to their run formats (O1), forward, the loss times
 * the scale, backward. */
static int forward_backward(train_state *r, size_t rows, const train_step_scale *s, char *msg,
                            size_t len)
{
    int rc = model_forward_backward(r->m, rows, s->scale);
    if (!rc && s->fault_loss)
        rc = ak_to_device(r->b, r->m->loss, &s->fault_value, sizeof s->fault_value);
    return rc ? train_backend_fail(r, msg, len, "forward/backward") : 0;
}

/* --accumulate: micro-batch k's loss into *loss_sum, its gradients into
 * r->acc (copied for the first, added for the others). */
static int accumulate(train_state *r, int64_t k, double *loss_sum, char *msg, size_t len)
{
    ak_backend *b = r->b;
    model *m = r->m;
    float l;
    int rc = ak_to_host(b, &l, m->loss, sizeof l);
    *loss_sum += l;
    for (int j = 0; j < m->n_params && !rc; j++) {
        const model_param *p = &m->params[j];
        rc = k == 0 ? ak_copy(b, r->acc[j].data, p->grad.data, p->n * ak_dtype_size(p->grad.dtype))
                    : ak_accumulate(b, r->acc[j], p->grad);
    }
    return rc ? train_backend_fail(r, msg, len, "forward/backward") : 0;
}

/* 6. the statistics of every layer's tensors, for the target format
 * (model_stats says which), written to tensors.csv and hist.csv. */
static int step_stats(train_state *r, int64_t step, bool stats, bool hist, size_t rows)
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

/* 6. the gradient trace: the statistics of every activation and weight
 * gradient of the step together (of the scaled loss, as stored; with
 * --accumulate, the last micro-batch's), for analyze/replay.h. */
static int step_trace(train_state *r, size_t rows)
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

/* 6. the statistics the options ask for at this step (of the last
 * micro-batch). */
static int take_statistics(train_state *r, int64_t step, size_t rows, char *msg, size_t len)
{
    const train_options *o = r->o;
    if (r->rank != 0) return 0; /* rank 0 holds the record */
    const bool stats = every(o->stats_every, step), hist = every(o->hist_every, step);
    if ((stats || hist) && step_stats(r, step, stats, hist, rows) != 0)
        return ut_fail(msg, len, TRAIN_EFAIL, "statistics at step %lld: %s%s", (long long)step,
                       ak_error_text(r->b), rec_log_error(r->tensors_log));
    if (every(o->trace_every, step) && step_trace(r, rows) != 0)
        return train_backend_fail(r, msg, len, "the gradient trace");
    return 0;
}

/* 7. unscale + finite check, once per update, of the gradients the
 * optimizer reads, then the clipping. */
static int unscale_and_check(train_state *r, ak_tensor *grads, char *msg, size_t len)
{
    ak_backend *b = r->b;
    const size_t n = (size_t)r->m->n_params;
    int rc = ak_unscale_check(b, grads, n, &r->scaler->inv_scale, r->found_inf);
    if (!rc && r->o->clip_norm > 0) {
        rc = ak_zero(b, r->sumsq, sizeof *r->sumsq);
        if (!rc) rc = ak_sum_squares(b, grads, n, r->sumsq);
        if (!rc) rc = ak_clip_by_norm(b, grads, n, r->sumsq, r->o->clip_norm, NULL);
    }
    return rc ? train_backend_fail(r, msg, len, "unscale/scaler/update") : 0;
}

/* 8. the scaler's decision, on the backend: the next scale and the skip. */
static int update_scale(train_state *r, char *msg, size_t len)
{
    if (ak_loss_scale_update(r->b, &r->o->scaler, r->scaler, r->found_inf) != 0)
        return train_backend_fail(r, msg, len, "unscale/scaler/update");
    return 0;
}

/* 9. the updates with their rounding loss per layer, skipped on the backend
 * when the scaler says so. */
static int update_weights(train_state *r, const ak_tensor *grads, char *msg, size_t len)
{
    ak_backend *b = r->b;
    model *m = r->m;
    int rc = ak_opt_step_begin(b, &r->opt, r->opt_state, &r->scaler->skip);
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
    return rc ? train_backend_fail(r, msg, len, "unscale/scaler/update") : 0;
}

/* 9. after the update, NaN or infinity in the stored weights (the fp32
 * masters where the mode keeps them, else the weights themselves) sets
 * r->weight_check[1]: ak_unscale_check with the factor 1, which leaves
 * them alone, so the cuda backend checks on the device the same way.
 * --fault nan-weights first multiplies the first weight by NaN. */
static int check_weights(train_state *r, const train_step_scale *s, char *msg, size_t len)
{
    model *m = r->m;
    ak_tensor stored[MODEL_MAX_PARAMS];
    for (int k = 0; k < m->n_params; k++)
        stored[k] = m->params[k].w32.data ? m->params[k].w32 : m->params[k].wlow;
    int rc = 0;
    if (s->fault_weights && m->n_params > 0)
        rc = ak_scale(r->b, ak_tensor_of(stored[0].data, 1, stored[0].dtype), r->fault_scale);
    if (!rc)
        rc = ak_unscale_check(r->b, stored, (size_t)m->n_params, r->weight_check,
                              r->weight_check + 1);
    return rc ? train_backend_fail(r, msg, len, "checking the weights") : 0;
}

/* 10. the host reads the step's outcome once: its loss, the scaler's state,
 * found-inf, the weights' flag, the update losses and the trace when taken;
 * *row the step's row but for its number and epoch. */
static int read_outcome(train_state *r, bool trace, rec_step_row *row, ak_scaler_state *st,
                        char *msg, size_t len)
{
    ak_backend *b = r->b;
    float loss, found, weights_bad;
    int rc = ak_to_host(b, &loss, r->m->loss, sizeof loss);
    if (!rc) rc = ak_to_host(b, st, r->scaler, sizeof *st);
    if (!rc) rc = ak_to_host(b, &found, r->found_inf, sizeof found);
    if (!rc) rc = ak_to_host(b, &weights_bad, r->weight_check + 1, sizeof weights_bad);
    if (!rc) rc = ak_to_host(b, r->loss_host, r->loss, (size_t)r->net.n_layers * sizeof *r->loss);
    if (!rc && trace) rc = ak_to_host(b, &r->trace_host, r->trace, sizeof r->trace_host);
    if (rc) return train_backend_fail(r, msg, len, "reading the step's results");
    r->weights_nonfinite = weights_bad != 0.0f;
    memset(row, 0, sizeof *row);
    row->loss = loss;
    row->loss_scale = r->scale_used;
    row->found_inf = found != 0.0f;
    row->skipped = st->skip != 0.0f;
    row->lr = r->opt.lr;
    return 0;
}

int train_rank_gradients(train_state *r, ds_batcher *it, int64_t step, int64_t batch, int rank,
                         const train_step_scale *s, ak_tensor *grads, size_t *rows, double *loss,
                         char *msg, size_t len)
{
    const int64_t micro = r->o->accumulate;
    /* the micro-batches (batch N + rank) M ...: train.h */
    const int64_t first = (batch * r->world + rank) * micro;
    double loss_sum = 0;
    int rc = 0;
    it->next = (size_t)first;
    for (int64_t k = 0; k < micro && !rc; k++) {
        rc = load_batch(r, it, rows, msg, len); /* 1. */
        r->m->rng_seed = r->o->seed;            /* dropout: a mask per micro-batch */
        r->m->rng_step = (uint64_t)((step * r->world + rank) * micro + k);
        if (!rc) rc = forward_backward(r, *rows, s, msg, len); /* 2-5. */
        if (!rc && micro > 1) rc = accumulate(r, k, &loss_sum, msg, len);
    }
    if (rc) return rc;
    model_grads(r->m, grads);
    /* the accumulated gradients divided by their number */
    for (int j = 0; j < r->m->n_params && micro > 1 && !rc; j++) {
        grads[j] = r->acc[j];
        rc = ak_scale(r->b, grads[j], r->inv_micro);
    }
    if (rc) return train_backend_fail(r, msg, len, "forward/backward");
    *loss = NAN;
    if (micro > 1) {
        *loss = loss_sum / (double)micro;
    } else if (r->world > 1) {
        float l;
        if (ak_to_host(r->b, &l, r->m->loss, sizeof l) != 0)
            return train_backend_fail(r, msg, len, "forward/backward");
        *loss = l;
    }
    return 0;
}

int train_step(train_state *r, ds_batcher *it, int64_t step, int64_t epoch, int64_t batch,
               float *loss, char *msg, size_t len)
{
    train_step_scale scale;
    double step_loss = NAN;
    size_t rows = 0;
    ak_tensor grads[MODEL_MAX_PARAMS];
    int rc = begin_step(r, step, &scale, msg, len);
    if (!rc && r->world > 1) /* 1-5 on every rank, and the all-reduce */
        rc = train_dp_gradients(r, it, step, batch, &scale, grads, &rows, &step_loss, msg, len);
    else if (!rc) /* 1-5. */
        rc =
            train_rank_gradients(r, it, step, batch, 0, &scale, grads, &rows, &step_loss, msg, len);
    if (!rc) rc = take_statistics(r, step, rows, msg, len); /* 6. */
    if (!rc) rc = unscale_and_check(r, grads, msg, len);    /* 7. */
    if (!rc) rc = update_scale(r, msg, len);                /* 8. */
    if (!rc) rc = update_weights(r, grads, msg, len);       /* 9. */
    if (!rc) rc = check_weights(r, &scale, msg, len);
    /* 10. the record */
    const bool trace = every(r->o->trace_every, step) && r->rank == 0;
    rec_step_row row;
    ak_scaler_state st;
    if (!rc) rc = read_outcome(r, trace, &row, &st, msg, len);
    if (rc) return rc;
    row.step = step;
    row.epoch = epoch;
    if (!isnan(step_loss)) row.loss = (float)step_loss;
    *loss = row.loss;
    r->before = r->after;
    r->after = st;
    r->skips += row.skipped;
    r->scale_used = st.scale;
    return train_record_step(r, &row, trace, msg, len);
}
