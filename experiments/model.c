/* model.c: a network on a backend, forward and backward (model.h).  What a
 * layer computes is its kind's business (layers/); here are the buffers,
 * the weight copies and casts of the precision plan, and the walk. */
#include "atomic_file.h" /* ut_fail */
#include "model.h"
#include "record.h" /* rec_kind */

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int alloc_t(model *m, size_t n, ak_dtype dt, ak_tensor *t, char *msg, size_t len)
{
    int rc = ak_alloc_tensor(m->b, n, dt, t);
    if (rc) return ut_fail(msg, len, rc, "%s", ak_error_text(m->b));
    return 0;
}

static void free_t(model *m, ak_tensor *t)
{
    ak_free(m->b, t->data);
    *t = ak_tensor_none();
}

/* The format of the output of producer i (a layer, or NET_INPUT). */
static ak_dtype producer_dtype(const model *m, int i) { return i < 0 ? AK_F32 : m->plan.run[i]; }

/* The producer's output, the first rows samples of it. */
static ak_tensor producer_out(const model *m, int i, size_t rows)
{
    const size_t n = rows * (i < 0 ? m->net.in_c * m->net.in_h * m->net.in_w
                                   : net_out_features(&m->net.layers[i]));
    const ak_tensor src = i < 0 ? m->x : m->act[i];
    return ak_tensor_of(src.data, n, src.dtype);
}

/* The tensor layer i reads as its input (second: in2): the producer's
 * output, or its cast to the layer's format. */
static ak_tensor layer_input(const model *m, int i, size_t rows, bool second)
{
    const net_layer *l = &m->net.layers[i];
    const ak_tensor cast = second ? m->in2_cast[i] : m->in_cast[i];
    if (cast.data) return ak_tensor_of(cast.data, rows * net_in_features(l), cast.dtype);
    return producer_out(m, second ? l->in2 : l->in, rows);
}

static ak_tensor rows_of(ak_tensor t, size_t rows, size_t per_row)
{
    return ak_tensor_of(t.data, rows * per_row, t.dtype);
}

/* Adds the tensors of layer i of the kind's list: the trainable ones when
 * trainable, else the buffers, in the list's order. */
static int add_tensors(model *m, int i, bool trainable, char *msg, size_t msg_len)
{
    const net_layer *l = &m->net.layers[i];
    const prec_plan *plan = &m->plan;
    /* the parameters' format: the layer's, or fp32 where the plan keeps
     * them so (keep_batchnorm_fp32) */
    const ak_dtype run = plan->params_f32[i] ? AK_F32 : plan->run[i];
    layer_tensor specs[LAYER_MAX_TENSORS];
    const int n_specs = l->kind->tensors(l, specs);
    int rc = 0;
    for (int slot = 0; slot < n_specs && !rc; slot++) {
        if (specs[slot].trainable != trainable) continue;
        if (m->n_tensors == MODEL_MAX_PARAMS)
            return ut_fail(msg, msg_len, AK_EINVAL, "%s: more than %d tensors", m->net.name,
                           MODEL_MAX_PARAMS);
        model_param *p = &m->params[m->n_tensors++];
        char layer_name[NET_NAME_LEN];
        memcpy(layer_name, l->name, sizeof layer_name);
        snprintf(p->name, sizeof p->name, "%s.%s", layer_name, specs[slot].name);
        p->layer = i;
        p->slot = slot;
        p->spec = specs[slot];
        p->n = layer_tensor_size(&specs[slot]);
        if (!trainable) { /* a buffer: fp32 only */
            p->run = AK_F32;
            rc = alloc_t(m, p->n, AK_F32, &p->w32, msg, msg_len);
            continue;
        }
        p->run = run;
        if (plan->has_w32[i]) rc = alloc_t(m, p->n, AK_F32, &p->w32, msg, msg_len);
        if (!rc && plan->has_wlow[i]) rc = alloc_t(m, p->n, run, &p->wlow, msg, msg_len);
        if (!rc && run != AK_F32 && !plan->has_wlow[i])
            rc = alloc_t(m, p->n, run, &p->wcast, msg, msg_len);
        if (!rc) rc = alloc_t(m, p->n, run, &p->grad_run, msg, msg_len);
        if (!rc && p->w32.data && run != AK_F32)
            rc = alloc_t(m, p->n, AK_F32, &p->grad, msg, msg_len);
        else if (!rc)
            p->grad = p->grad_run;
    }
    if (trainable) m->n_params = m->n_tensors;
    return rc;
}

/* Layer i's buffers: output and its gradient, input casts, workspace. */
static int add_activations(model *m, int i, size_t *max_in, char *msg, size_t msg_len)
{
    const net_layer *l = &m->net.layers[i];
    const ak_dtype run = m->plan.run[i];
    const size_t batch = m->batch;
    const size_t in_n = batch * net_in_features(l), out_n = batch * net_out_features(l);
    if (in_n > *max_in) *max_in = in_n;
    int rc = alloc_t(m, out_n, run, &m->act[i], msg, msg_len);
    if (!rc) rc = alloc_t(m, out_n, run, &m->dact[i], msg, msg_len);
    if (!rc && !l->kind->index_input && producer_dtype(m, l->in) != run)
        rc = alloc_t(m, in_n, run, &m->in_cast[i], msg, msg_len);
    if (!rc && l->in2 != NET_NO_INPUT && producer_dtype(m, l->in2) != run)
        rc = alloc_t(m, in_n, run, &m->in2_cast[i], msg, msg_len);
    const size_t work = !rc && l->kind->workspace ? l->kind->workspace(l, batch) : 0;
    if (work && ak_alloc(m->b, work, &m->work[i]) != 0)
        rc = ut_fail(msg, msg_len, AK_ENOMEM, "%s", ak_error_text(m->b));
    return rc;
}

int model_create(ak_backend *b, const net_def *net, const prec_plan *plan, size_t batch,
                 model **out, char *msg, size_t msg_len)
{
    *out = NULL;
    if (batch == 0) return ut_fail(msg, msg_len, AK_EINVAL, "batch size 0");
    int uses[NET_MAX_LAYERS];
    net_consumers(net, uses);
    for (int i = 0; i < net->n_layers; i++)
        if (!uses[i])
            return ut_fail(msg, msg_len, AK_EINVAL, "%s: no layer reads the output of %s",
                           net->name, net->layers[i].name);
    model *m = calloc(1, sizeof *m);
    if (!m) return ut_fail(msg, msg_len, AK_ENOMEM, "out of memory");
    m->b = b;
    m->net = *net;
    m->plan = *plan;
    m->batch = batch;
    const size_t label_rows = net_rows(net, batch);
    int rc = alloc_t(m, batch * net->in_c * net->in_h * net->in_w, AK_F32, &m->x, msg, msg_len);
    if (!rc && net->loss == NET_MSE)
        rc = alloc_t(m, label_rows * net->outputs, AK_F32, &m->target, msg, msg_len);
    if (!rc && net->loss == NET_XENT) {
        rc = ak_alloc(b, label_rows * sizeof(int32_t), (void **)&m->labels);
        if (!rc) rc = ak_zero(b, m->labels, label_rows * sizeof(int32_t));
        if (rc) rc = ut_fail(msg, msg_len, rc, "%s", ak_error_text(b));
    }
    if (!rc && net->loss == NET_XENT && plan->loss != AK_F32)
        rc = alloc_t(m, label_rows * net->outputs, plan->loss, &m->logp, msg, msg_len);
    if (!rc && net->loss == NET_XENT && plan->loss != AK_F32)
        rc = alloc_t(m, label_rows * net->outputs, plan->loss, &m->dlogp, msg, msg_len);
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&m->loss);
    if (!rc) rc = ak_alloc(b, sizeof(int32_t), (void **)&m->correct);
    if (rc) ut_fail(msg, msg_len, rc, "%s", ak_error_text(b));
    size_t max_in = 0;
    for (int i = 0; i < net->n_layers && !rc; i++) {
        rc = add_activations(m, i, &max_in, msg, msg_len);
        if (!rc) rc = add_tensors(m, i, true, msg, msg_len);
    }
    for (int i = 0; i < net->n_layers && !rc; i++)
        rc = add_tensors(m, i, false, msg, msg_len);
    /* dx of a layer whose input is in another format, or that another
     * layer also reads, goes through dx_tmp (dx2_tmp), in the layer's
     * format (fp32-sized, so any format fits) */
    if (!rc) rc = alloc_t(m, max_in, AK_F32, &m->dx_tmp, msg, msg_len);
    if (!rc) rc = alloc_t(m, max_in, AK_F32, &m->dx2_tmp, msg, msg_len);
    if (rc) {
        model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void model_free(model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_tensors; i++) {
        model_param *p = &m->params[i];
        if (p->grad.data != p->grad_run.data) free_t(m, &p->grad);
        free_t(m, &p->grad_run);
        free_t(m, &p->w32);
        free_t(m, &p->wlow);
        free_t(m, &p->wcast);
        free_t(m, &p->m);
        free_t(m, &p->v);
    }
    for (int i = 0; i < m->net.n_layers; i++) {
        free_t(m, &m->act[i]);
        free_t(m, &m->dact[i]);
        free_t(m, &m->in_cast[i]);
        free_t(m, &m->in2_cast[i]);
        ak_free(m->b, m->work[i]);
    }
    free_t(m, &m->x);
    free_t(m, &m->target);
    free_t(m, &m->dx_tmp);
    free_t(m, &m->logp);
    free_t(m, &m->dlogp);
    free_t(m, &m->dx2_tmp);
    ak_free(m->b, m->labels);
    ak_free(m->b, m->loss);
    ak_free(m->b, m->correct);
    free(m);
}

int model_alloc_optimizer(model *m, bool first_moment, bool second_moment)
{
    for (int i = 0; i < m->n_params; i++) {
        model_param *p = &m->params[i];
        int rc = 0;
        if (first_moment && !p->m.data) rc = ak_alloc_tensor(m->b, p->n, AK_F32, &p->m);
        if (!rc && p->m.data) rc = ak_zero(m->b, p->m.data, p->n * 4);
        if (!rc && second_moment && !p->v.data) rc = ak_alloc_tensor(m->b, p->n, AK_F32, &p->v);
        if (!rc && p->v.data) rc = ak_zero(m->b, p->v.data, p->n * 4);
        if (rc) return rc;
    }
    return 0;
}

int model_set_param(model *m, model_param *p, const float *host)
{
    int rc = 0;
    if (p->w32.data) rc = ak_to_device(m->b, p->w32.data, host, p->n * sizeof(float));
    if (!rc && p->wlow.data) {
        /* round on the backend from an fp32 staging copy */
        ak_tensor stage;
        rc = ak_alloc_tensor(m->b, p->n, AK_F32, &stage);
        if (!rc) rc = ak_to_device(m->b, stage.data, host, p->n * sizeof(float));
        if (!rc) rc = ak_cast(m->b, p->wlow, stage, NULL);
        ak_free(m->b, stage.data);
    }
    return rc;
}

int model_get_param(model *m, const model_param *p, float *host)
{
    if (p->w32.data) return ak_to_host(m->b, host, p->w32.data, p->n * sizeof(float));
    ak_tensor stage;
    int rc = ak_alloc_tensor(m->b, p->n, AK_F32, &stage);
    if (!rc) rc = ak_cast(m->b, stage, p->wlow, NULL);
    if (!rc) rc = ak_to_host(m->b, host, stage.data, p->n * sizeof(float));
    ak_free(m->b, stage.data);
    return rc;
}

int model_init_weights(model *m, uint64_t seed)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return AK_ENOMEM;
    gsl_rng_set(rng, (unsigned long)(seed ^ (seed >> 32)));
    int rc = 0;
    for (int i = 0; i < m->n_tensors && !rc; i++) {
        model_param *p = &m->params[i];
        const double bound = 1.0 / sqrt((double)p->spec.fan_in);
        float *host = malloc(p->n * sizeof *host);
        if (!host) {
            rc = AK_ENOMEM;
            break;
        }
        for (size_t j = 0; j < p->n; j++) {
            if (p->spec.init == LAYER_INIT_NORMAL)
                host[j] = (float)gsl_ran_gaussian_ziggurat(rng, bound);
            else if (p->spec.init == LAYER_INIT_UNIFORM)
                host[j] = (float)((2.0 * gsl_rng_uniform(rng) - 1.0) * bound);
            else /* constants draw nothing: the other tensors' values stay the same */
                host[j] = p->spec.init == LAYER_INIT_ONE ? 1.0f : 0.0f;
        }
        rc = model_set_param(m, p, host);
        free(host);
    }
    gsl_rng_free(rng);
    return rc;
}

/* What layer i's kind computes on: its inputs (the producers' outputs, or
 * their casts), output, gradients and tensors, the trainable ones in its
 * run format; refresh casts O1's fp32 weights again (forward), backward
 * reuses them. */
static int layer_io_of(model *m, int i, size_t rows, bool refresh, layer_io *io)
{
    const net_layer *l = &m->net.layers[i];
    memset(io, 0, sizeof *io);
    io->b = m->b;
    io->l = l;
    io->rows = rows;
    /* fp32 GEMMs take tf32 inputs when the plan says so; the low formats
     * always accumulate in fp32 */
    io->compute =
        m->plan.tf32 && m->plan.run[i] == AK_F32 ? AK_COMPUTE_32F_FAST_TF32 : AK_COMPUTE_32F;
    io->in = layer_input(m, i, rows, false);
    io->in2 = l->in2 != NET_NO_INPUT ? layer_input(m, i, rows, true) : ak_tensor_none();
    io->out = rows_of(m->act[i], rows, net_out_features(l));
    io->dy = rows_of(m->dact[i], rows, net_out_features(l));
    io->dx = io->dx2 = ak_tensor_none();
    io->work = m->work[i];
    io->softmax = m->plan.softmax[i];
    io->accumulate = m->plan.embed_acc;
    /* dropout's bits: a key per run and layer, a counter range per step */
    io->rng_key = m->rng_seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
    io->rng_offset = m->rng_step << 32;
    for (int k = 0; k < LAYER_MAX_TENSORS; k++)
        io->w[k] = io->dw[k] = ak_tensor_none();
    for (int k = 0; k < m->n_tensors; k++) {
        model_param *p = &m->params[k];
        if (p->layer != i) continue;
        ak_tensor t;
        if (p->run == AK_F32) {
            t = p->w32;
        } else if (p->wlow.data) {
            t = p->wlow;
        } else { /* O1: the fp32 weights cast for this step */
            int rc = refresh ? ak_cast(m->b, p->wcast, p->w32, NULL) : 0;
            if (rc) return rc;
            t = p->wcast;
        }
        io->w[p->slot] = t;
        if (p->spec.trainable) io->dw[p->slot] = p->grad_run;
    }
    return 0;
}

static int forward_layer(model *m, int i, size_t rows, bool training)
{
    const net_layer *l = &m->net.layers[i];
    int rc = 0;
    if (m->in_cast[i].data)
        rc = ak_cast(m->b, layer_input(m, i, rows, false), producer_out(m, l->in, rows), NULL);
    if (!rc && m->in2_cast[i].data)
        rc = ak_cast(m->b, layer_input(m, i, rows, true), producer_out(m, l->in2, rows), NULL);
    if (rc) return rc;
    layer_io io;
    rc = layer_io_of(m, i, rows, true, &io);
    io.training = training;
    return rc ? rc : l->kind->forward(&io);
}

/* The cross-entropy in the low format (plan.loss), as F.cross_entropy on a
 * half tensor on CUDA: log-softmax with fp32 accumulation rounded to the
 * format, nll_loss on it (the scale's gradient rounded to the format), the
 * log-softmax's backward into the logits' gradient. */
static int low_loss(model *m, size_t n, ak_tensor logits, const float *scale, ak_tensor dlogits)
{
    const size_t c = m->net.outputs;
    const ak_softmax_args a = {
        .rows = n, .cols = c, .log = true, .causal_t = 0, .scale = 1.0f, .acc = AK_F32};
    const ak_tensor logp = rows_of(m->logp, n, c);
    const ak_tensor dlogp = dlogits.data ? rows_of(m->dlogp, n, c) : ak_tensor_none();
    int rc = ak_softmax_forward(m->b, &a, logp, logits);
    if (!rc) rc = ak_nll_loss(m->b, n, c, logp, m->labels, scale, m->loss, dlogp, m->correct);
    if (!rc && dlogits.data) rc = ak_softmax_backward(m->b, &a, dlogits, dlogp, logp);
    return rc;
}

static int loss(model *m, size_t rows, const float *scale, bool backward)
{
    const int last = m->net.n_layers - 1;
    const size_t n = net_rows(&m->net, rows);
    const ak_tensor logits = rows_of(m->act[last], n, m->net.outputs);
    const ak_tensor dlogits =
        backward ? rows_of(m->dact[last], n, m->net.outputs) : ak_tensor_none();
    if (m->net.loss == NET_XENT && m->plan.loss != AK_F32)
        return low_loss(m, n, logits, scale, dlogits);
    if (m->net.loss == NET_XENT)
        return ak_softmax_xent(m->b, n, m->net.outputs, logits, m->labels, scale, m->loss, dlogits,
                               m->correct);
    return ak_mse(m->b, logits, rows_of(m->target, n, m->net.outputs), scale, m->loss, dlogits);
}

/* Where a layer writes the gradient of its input from producer src: the
 * producer's gradient itself when the formats agree and nothing was
 * written there yet in this pass (and it is not claimed by the other
 * input), else the scratch tmp, in the layer's format. */
static ak_tensor dx_target(const model *m, int src, ak_dtype run, size_t n, const bool *written,
                           const void *claimed, ak_tensor tmp)
{
    if (src < 0) return ak_tensor_none();
    if (m->plan.run[src] == run && !written[src] && m->dact[src].data != claimed)
        return ak_tensor_of(m->dact[src].data, n, run);
    return ak_tensor_of(tmp.data, n, run);
}

/* Moves a gradient computed into scratch to its producer: a cast when the
 * producer's gradient is still unwritten in this pass, else a sum (the
 * exact sum rounded once to the producer's format, as autograd adds the
 * gradients of a tensor two layers read). */
static int dx_deliver(model *m, int src, ak_tensor dx, size_t rows, bool *written)
{
    if (src < 0 || !dx.data) return 0;
    const ak_tensor dst = rows_of(m->dact[src], rows, net_out_features(&m->net.layers[src]));
    int rc = 0;
    if (dx.data != dst.data)
        rc = written[src] ? ak_accumulate(m->b, dst, dx) : ak_cast(m->b, dst, dx, NULL);
    written[src] = true;
    return rc;
}

static int backward_layer(model *m, int i, size_t rows, bool *written)
{
    const net_layer *l = &m->net.layers[i];
    const ak_dtype run = m->plan.run[i];
    layer_io io;
    int rc = layer_io_of(m, i, rows, false, &io);
    if (rc) return rc;
    io.training = true;
    const size_t n = rows * net_in_features(l);
    if (!l->kind->index_input) {
        io.dx = dx_target(m, l->in, run, n, written, NULL, m->dx_tmp);
        if (l->in2 != NET_NO_INPUT)
            io.dx2 = dx_target(m, l->in2, run, n, written, io.dx.data, m->dx2_tmp);
    }
    rc = l->kind->backward(&io);
    if (!rc) rc = dx_deliver(m, l->in, io.dx, rows, written);
    if (!rc) rc = dx_deliver(m, l->in2, io.dx2, rows, written);
    /* the optimizer's fp32 gradients of a layer that runs in a low format */
    for (int k = 0; k < m->n_params && !rc; k++) {
        model_param *p = &m->params[k];
        if (p->layer == i && p->grad.data != p->grad_run.data)
            rc = ak_cast(m->b, p->grad, p->grad_run, NULL);
    }
    return rc;
}

int model_forward(model *m, size_t rows)
{
    if (rows == 0 || rows > m->batch) return AK_EINVAL;
    for (int i = 0; i < m->net.n_layers; i++) {
        int rc = forward_layer(m, i, rows, false);
        if (rc) return rc;
    }
    return loss(m, rows, NULL, false);
}

int model_forward_backward(model *m, size_t rows, const float *scale)
{
    if (rows == 0 || rows > m->batch) return AK_EINVAL;
    for (int i = 0; i < m->net.n_layers; i++) {
        int rc = forward_layer(m, i, rows, true);
        if (rc) return rc;
    }
    int rc = loss(m, rows, scale, true);
    bool written[NET_MAX_LAYERS] = {false};
    written[m->net.n_layers - 1] = true; /* the loss wrote the last layer's */
    for (int i = m->net.n_layers - 1; i >= 0 && !rc; i--)
        rc = backward_layer(m, i, rows, written);
    return rc;
}

int model_grads(const model *m, ak_tensor *grads)
{
    for (int i = 0; i < m->n_params; i++)
        grads[i] = m->params[i].grad;
    return m->n_params;
}

int model_stats(model *m, size_t rows, fpe_format_id target, ak_stats *out)
{
    int rc = 0;
    for (int i = 0; i < m->net.n_layers && !rc; i++) {
        const net_layer *l = &m->net.layers[i];
        ak_stats *s = out + (size_t)i * REC_KINDS;
        const size_t out_n = rows * net_out_features(l);
        rc = ak_stats_accumulate(m->b, ak_tensor_of(m->act[i].data, out_n, m->act[i].dtype), target,
                                 NULL, s + REC_ACTIVATION);
        if (!rc)
            rc = ak_stats_accumulate(m->b, ak_tensor_of(m->dact[i].data, out_n, m->dact[i].dtype),
                                     target, NULL, s + REC_ACTIVATION_GRAD);
        for (int k = 0; k < m->n_params && !rc; k++) {
            const model_param *p = &m->params[k];
            if (p->layer != i || !p->spec.stats) continue;
            rc = ak_stats_accumulate(m->b, p->wlow.data ? p->wlow : p->w32, target, NULL,
                                     s + REC_WEIGHT);
            if (!rc) rc = ak_stats_accumulate(m->b, p->grad_run, target, NULL, s + REC_WEIGHT_GRAD);
        }
    }
    return rc;
}
