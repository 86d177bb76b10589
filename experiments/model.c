/* model.c: a network on a backend, forward and backward (model.h). */
#include "atomic_file.h" /* ut_fail */
#include "model.h"
#include "record.h" /* rec_kind */

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int alloc_t(model *m, size_t n, ak_dtype dt, ak_tensor *t, char *msg, size_t len)
{
    int rc = ak_alloc_tensor(m->b, n, dt, t);
    if (rc) return ut_fail(msg, len, rc, "%s", ak_error(m->b));
    return 0;
}

static void free_t(model *m, ak_tensor *t)
{
    ak_free(m->b, t->data);
    *t = ak_tensor_none();
}

/* The format of layer i's input as the previous layer left it. */
static ak_dtype input_dtype(const model *m, int i) { return i == 0 ? AK_F32 : m->plan.run[i - 1]; }

/* The tensor layer i reads: the previous output, or its cast. */
static ak_tensor layer_input(const model *m, int i, size_t rows)
{
    const net_layer *l = &m->net.layers[i];
    const size_t n = rows * net_in_features(l);
    if (m->in_cast[i].data) return ak_tensor_of(m->in_cast[i].data, n, m->in_cast[i].dtype);
    const ak_tensor src = i == 0 ? m->x : m->act[i - 1];
    return ak_tensor_of(src.data, n, src.dtype);
}

static ak_tensor rows_of(ak_tensor t, size_t rows, size_t per_row)
{
    return ak_tensor_of(t.data, rows * per_row, t.dtype);
}

int model_create(ak_backend *b, const net_def *net, const prec_plan *plan, size_t batch,
                 model **out, char *msg, size_t msg_len)
{
    *out = NULL;
    if (batch == 0) return ut_fail(msg, msg_len, AK_EINVAL, "batch size 0");
    model *m = calloc(1, sizeof *m);
    if (!m) return ut_fail(msg, msg_len, AK_ENOMEM, "out of memory");
    m->b = b;
    m->net = *net;
    m->plan = *plan;
    m->batch = batch;
    int rc = alloc_t(m, batch * net->in_c * net->in_h * net->in_w, AK_F32, &m->x, msg, msg_len);
    if (!rc && net->loss == NET_MSE)
        rc = alloc_t(m, batch * net->outputs, AK_F32, &m->target, msg, msg_len);
    if (!rc && net->loss == NET_XENT) {
        rc = ak_alloc(b, batch * sizeof(int32_t), (void **)&m->labels);
        if (!rc) rc = ak_zero(b, m->labels, batch * sizeof(int32_t));
        if (rc) rc = ut_fail(msg, msg_len, rc, "%s", ak_error(b));
    }
    if (!rc) rc = ak_alloc(b, sizeof(float), (void **)&m->loss);
    if (!rc) rc = ak_alloc(b, sizeof(int32_t), (void **)&m->correct);
    if (rc) ut_fail(msg, msg_len, rc, "%s", ak_error(b));
    size_t max_in = 0;
    for (int i = 0; i < net->n_layers && !rc; i++) {
        const net_layer *l = &net->layers[i];
        const ak_dtype run = plan->run[i];
        const size_t in_n = batch * net_in_features(l), out_n = batch * net_out_features(l);
        if (in_n > max_in) max_in = in_n;
        rc = alloc_t(m, out_n, run, &m->act[i], msg, msg_len);
        if (!rc) rc = alloc_t(m, out_n, run, &m->dact[i], msg, msg_len);
        if (!rc && input_dtype(m, i) != run)
            rc = alloc_t(m, in_n, run, &m->in_cast[i], msg, msg_len);
        if (rc || !net_has_params(l)) continue;
        for (int which = 0; which < 2 && !rc; which++) {
            model_param *p = &m->params[m->n_params++];
            snprintf(p->name, sizeof p->name, "%s.%s", l->name, which ? "bias" : "weight");
            p->layer = i;
            p->is_bias = which == 1;
            p->n = which ? net_bias_count(l) : net_weight_count(l);
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
    }
    /* dx of a layer whose input is in another format goes through dx_tmp,
     * in the layer's format (fp32-sized, so any format fits) */
    if (!rc) rc = alloc_t(m, max_in, AK_F32, &m->dx_tmp, msg, msg_len);
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
    for (int i = 0; i < m->n_params; i++) {
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
    }
    free_t(m, &m->x);
    free_t(m, &m->target);
    free_t(m, &m->dx_tmp);
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
    for (int i = 0; i < m->n_params && !rc; i++) {
        model_param *p = &m->params[i];
        const net_layer *l = &m->net.layers[p->layer];
        const size_t fan_in = net_weight_count(l) / l->out_c;
        const double bound = 1.0 / sqrt((double)fan_in);
        float *host = malloc(p->n * sizeof *host);
        if (!host) {
            rc = AK_ENOMEM;
            break;
        }
        for (size_t j = 0; j < p->n; j++)
            host[j] = (float)((2.0 * gsl_rng_uniform(rng) - 1.0) * bound);
        rc = model_set_param(m, p, host);
        free(host);
    }
    gsl_rng_free(rng);
    return rc;
}

/* The weight and bias tensors layer i computes with, in its run format;
 * refresh casts O1's fp32 weights again (forward), backward reuses them. */
static int forward_weights(model *m, int layer, ak_tensor *w, ak_tensor *bias, bool refresh)
{
    for (int i = 0; i < m->n_params; i++) {
        model_param *p = &m->params[i];
        if (p->layer != layer) continue;
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
        *(p->is_bias ? bias : w) = t;
    }
    return 0;
}

static model_param *param_of(model *m, int layer, bool bias)
{
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].layer == layer && m->params[i].is_bias == bias) return &m->params[i];
    return NULL;
}

/* The compute type of layer i's GEMMs: fp32 ones take tf32 inputs when the
 * plan says so; the low formats always accumulate in fp32. */
static ak_compute compute_of(const model *m, int i)
{
    return m->plan.tf32 && m->plan.run[i] == AK_F32 ? AK_COMPUTE_32F_FAST_TF32 : AK_COMPUTE_32F;
}

static ak_conv2d conv_shape(const model *m, int i, size_t rows)
{
    const net_layer *l = &m->net.layers[i];
    ak_conv2d c;
    memset(&c, 0, sizeof c);
    c.batch = rows;
    c.in_ch = l->in_c;
    c.in_h = l->in_h;
    c.in_w = l->in_w;
    c.out_ch = l->out_c;
    c.k_h = c.k_w = l->kernel;
    c.stride = 1;
    c.pad = 0;
    c.compute = compute_of(m, i);
    return c;
}

static int forward_layer(model *m, int i, size_t rows)
{
    const net_layer *l = &m->net.layers[i];
    int rc = 0;
    if (m->in_cast[i].data) {
        const ak_tensor src = i == 0 ? m->x : m->act[i - 1];
        rc = ak_cast(m->b, layer_input(m, i, rows), rows_of(src, rows, net_in_features(l)), NULL);
        if (rc) return rc;
    }
    const ak_tensor in = layer_input(m, i, rows);
    const ak_tensor out = rows_of(m->act[i], rows, net_out_features(l));
    ak_tensor w = ak_tensor_none(), bias = ak_tensor_none();
    if (net_has_params(l) && (rc = forward_weights(m, i, &w, &bias, true)) != 0) return rc;
    switch (l->op) {
    case NET_LINEAR: {
        ak_gemm_args g;
        memset(&g, 0, sizeof g);
        g.trans_b = true; /* y = x W^T: W is (out, in) */
        g.m = rows;
        g.n = l->out_c;
        g.k = l->in_c;
        g.alpha = 1.0f;
        g.a = in;
        g.lda = l->in_c;
        g.b = w;
        g.ldb = l->in_c;
        g.c = out;
        g.ldc = l->out_c;
        g.compute = compute_of(m, i);
        rc = ak_gemm(m->b, &g);
        if (!rc) rc = ak_bias_add(m->b, out, bias, rows, l->out_c);
        return rc;
    }
    case NET_CONV: {
        const ak_conv2d c = conv_shape(m, i, rows);
        return ak_conv2d_forward(m->b, &c, out, in, w, bias);
    }
    case NET_RELU: return ak_relu(m->b, out, in);
    case NET_MAXPOOL: return ak_maxpool2_forward(m->b, rows * l->in_c, l->in_h, l->in_w, out, in);
    }
    return AK_EINVAL;
}

static int loss(model *m, size_t rows, const float *scale, bool backward)
{
    const int last = m->net.n_layers - 1;
    const ak_tensor logits = rows_of(m->act[last], rows, m->net.outputs);
    const ak_tensor dlogits =
        backward ? rows_of(m->dact[last], rows, m->net.outputs) : ak_tensor_none();
    if (m->net.loss == NET_XENT)
        return ak_softmax_xent(m->b, rows, m->net.outputs, logits, m->labels, scale, m->loss,
                               dlogits, m->correct);
    return ak_mse(m->b, logits, rows_of(m->target, rows, m->net.outputs), scale, m->loss, dlogits);
}

static int backward_layer(model *m, int i, size_t rows)
{
    const net_layer *l = &m->net.layers[i];
    const ak_dtype run = m->plan.run[i];
    const ak_tensor in = layer_input(m, i, rows);
    const ak_tensor dy = rows_of(m->dact[i], rows, net_out_features(l));
    /* dx goes straight into the previous layer's gradient when the formats
     * agree, else through dx_tmp and a cast */
    ak_tensor dx = ak_tensor_none();
    if (i > 0) {
        const size_t n = rows * net_in_features(l);
        dx = m->plan.run[i - 1] == run ? ak_tensor_of(m->dact[i - 1].data, n, run)
                                       : ak_tensor_of(m->dx_tmp.data, n, run);
    }
    int rc = 0;
    ak_tensor w = ak_tensor_none(), bias = ak_tensor_none();
    if (net_has_params(l) && (rc = forward_weights(m, i, &w, &bias, false)) != 0) return rc;
    model_param *pw = param_of(m, i, false), *pb = param_of(m, i, true);
    switch (l->op) {
    case NET_LINEAR: {
        ak_gemm_args g;
        memset(&g, 0, sizeof g);
        g.alpha = 1.0f;
        g.compute = compute_of(m, i);
        /* dW (out, in) = dy^T x */
        g.trans_a = true;
        g.m = l->out_c;
        g.n = l->in_c;
        g.k = rows;
        g.a = dy;
        g.lda = l->out_c;
        g.b = in;
        g.ldb = l->in_c;
        g.c = pw->grad_run;
        g.ldc = l->in_c;
        rc = ak_gemm(m->b, &g);
        if (!rc) rc = ak_bias_grad(m->b, pb->grad_run, dy, rows, l->out_c);
        if (!rc && dx.data) { /* dx (rows, in) = dy W */
            memset(&g, 0, sizeof g);
            g.alpha = 1.0f;
            g.compute = compute_of(m, i);
            g.m = rows;
            g.n = l->in_c;
            g.k = l->out_c;
            g.a = dy;
            g.lda = l->out_c;
            g.b = w;
            g.ldb = l->in_c;
            g.c = dx;
            g.ldc = l->in_c;
            rc = ak_gemm(m->b, &g);
        }
        break;
    }
    case NET_CONV: {
        const ak_conv2d c = conv_shape(m, i, rows);
        rc = ak_conv2d_backward(m->b, &c, dx, pw->grad_run, pb->grad_run, dy, in, w);
        break;
    }
    case NET_RELU:
        if (dx.data)
            rc = ak_relu_backward(m->b, dx, dy, rows_of(m->act[i], rows, net_out_features(l)));
        break;
    case NET_MAXPOOL:
        if (dx.data) rc = ak_maxpool2_backward(m->b, rows * l->in_c, l->in_h, l->in_w, dx, dy, in);
        break;
    }
    if (!rc && dx.data && dx.data == m->dx_tmp.data)
        rc = ak_cast(m->b, rows_of(m->dact[i - 1], rows, net_in_features(l)), dx, NULL);
    /* the optimizer's fp32 gradient of a layer that runs in a low format */
    for (int k = 0; k < 2 && !rc && pw; k++) {
        model_param *p = k ? pb : pw;
        if (p->grad.data != p->grad_run.data) rc = ak_cast(m->b, p->grad, p->grad_run, NULL);
    }
    return rc;
}

int model_forward(model *m, size_t rows)
{
    if (rows == 0 || rows > m->batch) return AK_EINVAL;
    for (int i = 0; i < m->net.n_layers; i++) {
        int rc = forward_layer(m, i, rows);
        if (rc) return rc;
    }
    return loss(m, rows, NULL, false);
}

int model_forward_backward(model *m, size_t rows, const float *scale)
{
    if (rows == 0 || rows > m->batch) return AK_EINVAL;
    for (int i = 0; i < m->net.n_layers; i++) {
        int rc = forward_layer(m, i, rows);
        if (rc) return rc;
    }
    int rc = loss(m, rows, scale, true);
    for (int i = m->net.n_layers - 1; i >= 0 && !rc; i--)
        rc = backward_layer(m, i, rows);
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
            if (p->layer != i || p->is_bias) continue;
            rc = ak_stats_accumulate(m->b, p->wlow.data ? p->wlow : p->w32, target, NULL,
                                     s + REC_WEIGHT);
            if (!rc) rc = ak_stats_accumulate(m->b, p->grad_run, target, NULL, s + REC_WEIGHT_GRAD);
        }
    }
    return rc;
}
