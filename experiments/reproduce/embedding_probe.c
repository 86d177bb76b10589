/* embedding_probe.c: what the embedding backward's fp16 sums lose, measured
 * directly rather than through the loss of two diverging runs: the
 * transformer at the end of a run (its checkpoint), the run's final loss
 * scale, the first windows of the training text as one batch; forward and
 * backward twice on the cpu backend, only --embedding-accumulation
 * differing (fp32, PyTorch's CUDA kernel, against every addition rounded to
 * fp16), and wte's gradients compared element by element. */
#include "reproduce_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "data.h"
#include "kernels.h"
#include "model.h"
#include "nets.h"

/* wte's fp32 gradient (the optimizer's) after one forward and backward of
 * the batch at scale, with the embedding's sums in fp32 or the low format. */
static int wte_grad(repro_study *s, const net_def *net, const char *ckpt, const ds_dataset *ds,
                    size_t batch, float scale, bool low_sums, float *out, size_t n)
{
    prec_options po;
    prec_options_default(&po, PREC_O2, AK_F16);
    po.embed_acc_low = low_sums;
    prec_plan plan;
    prec_plan_make(&po, net, &plan);
    char why[512];
    ak_backend *b = ak_open("cpu", why, sizeof why);
    if (!b) {
        snprintf(s->msg, sizeof s->msg, "%s", why);
        return -1;
    }
    model *m = NULL;
    float *x = malloc(batch * ds->features * sizeof *x);
    int32_t *labels = malloc(batch * ds->label_dim * sizeof *labels);
    size_t *idx = malloc(batch * sizeof *idx);
    float *dscale = NULL;
    int rc = !x || !labels || !idx ? -1 : 0;
    if (rc) snprintf(why, sizeof why, "out of memory");
    if (!rc) rc = model_create(b, net, &plan, batch, &m, why, sizeof why);
    if (!rc) rc = ckpt_load_weights(ckpt, m, why, sizeof why);
    for (size_t i = 0; i < batch && !rc; i++)
        idx[i] = i;
    if (!rc && ds_gather(ds, idx, batch, x, labels, NULL, why, sizeof why) != DS_OK) rc = -1;
    if (!rc && (ak_to_device(b, m->x.data, x, batch * ds->features * sizeof *x) != 0 ||
                ak_to_device(b, m->labels, labels, batch * ds->label_dim * sizeof *labels) != 0 ||
                ak_alloc(b, sizeof *dscale, (void **)&dscale) != 0 ||
                ak_to_device(b, dscale, &scale, sizeof scale) != 0 ||
                model_forward_backward(m, batch, dscale) != 0)) {
        snprintf(why, sizeof why, "%s", ak_error_text(b));
        rc = -1;
    }
    int found = -1;
    for (int i = 0; m && i < m->n_params && !rc; i++)
        if (strcmp(m->params[i].name, "wte.weight") == 0) found = i;
    if (!rc && (found < 0 || m->params[found].n != n)) {
        snprintf(why, sizeof why, "the transformer has no wte.weight of %zu elements", n);
        rc = -1;
    }
    if (!rc && ak_to_host(b, out, m->params[found].grad.data, n * sizeof *out) != 0) {
        snprintf(why, sizeof why, "%s", ak_error_text(b));
        rc = -1;
    }
    if (rc) snprintf(s->msg, sizeof s->msg, "the embedding probe: %.900s", why);
    if (dscale) ak_free(b, dscale);
    model_free(m);
    ak_close(b);
    free(x);
    free(labels);
    free(idx);
    return rc;
}

int repro_embedding_probe(repro_study *s, const char *run, double scale, repro_embed_probe *out)
{
    const repro_net_plan *p = &repro_net_plans[s->o->level];
    memset(out, 0, sizeof *out);
    net_size size = {.width = (size_t)atol(p->tf_width),
                     .depth = atoi(p->tf_depth),
                     .heads = (size_t)atol(p->tf_heads),
                     .context = (size_t)atol(p->tf_context)};
    net_def net;
    char why[512], ckpt[4096];
    if (net_build("transformer", &size, &net, why, sizeof why) != 0) {
        snprintf(s->msg, sizeof s->msg, "the embedding probe: %.900s", why);
        return -1;
    }
    repro_run_file(s, ckpt, sizeof ckpt, run, REC_CHECKPOINT);
    const ds_text_options to = {.context = size.context, .stride = 0, .subset = 0};
    ds_dataset *ds = NULL;
    if (ds_load_text(NULL, DS_TRAIN, &to, &ds, why, sizeof why) != DS_OK) {
        snprintf(s->msg, sizeof s->msg, "the embedding probe: %.900s", why);
        return -1;
    }
    const size_t batch = REPRO_PROBE_WINDOWS < ds->count ? REPRO_PROBE_WINDOWS : ds->count;
    const size_t vocab = net.outputs, n = vocab * size.width;
    float *g32 = malloc(n * sizeof *g32), *g16 = malloc(n * sizeof *g16);
    int rc = g32 && g16 ? 0 : -1;
    if (rc) snprintf(s->msg, sizeof s->msg, "out of memory");
    if (!rc) rc = wte_grad(s, &net, ckpt, ds, batch, (float)scale, false, g32, n);
    if (!rc) rc = wte_grad(s, &net, ckpt, ds, batch, (float)scale, true, g16, n);
    /* the tokens of the batch: how many each row of wte sums */
    size_t *count = calloc(vocab, sizeof *count);
    float *x = malloc(batch * ds->features * sizeof *x);
    size_t *idx = malloc(batch * sizeof *idx);
    if (!rc && (!count || !x || !idx)) {
        snprintf(s->msg, sizeof s->msg, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; i < batch && !rc; i++)
        idx[i] = i;
    if (!rc && ds_gather(ds, idx, batch, x, NULL, NULL, why, sizeof why) != DS_OK) {
        snprintf(s->msg, sizeof s->msg, "the embedding probe: %.900s", why);
        rc = -1;
    }
    if (!rc) {
        out->tokens = batch * ds->features;
        for (size_t i = 0; i < out->tokens; i++) {
            const size_t t = (size_t)x[i];
            if (t < vocab && count[t]++ == 0) out->rows_touched++;
            if (t < vocab && count[t] > out->top_count) {
                out->top_count = count[t];
                out->top_token = (int)t;
            }
        }
        double d2 = 0, r2 = 0, td2 = 0, tr2 = 0;
        for (size_t i = 0; i < n; i++) {
            const double a = g32[i], d = (double)g16[i] - a;
            out->nonzero += a != 0;
            out->differ += g16[i] != g32[i];
            d2 += d * d;
            r2 += a * a;
            if (i / size.width == (size_t)out->top_token) {
                td2 += d * d;
                tr2 += a * a;
            }
        }
        out->rel_l2 = r2 > 0 ? sqrt(d2 / r2) : NAN;
        out->top_rel_l2 = tr2 > 0 ? sqrt(td2 / tr2) : NAN;
        out->batch = batch;
    }
    free(count);
    free(x);
    free(idx);
    free(g32);
    free(g16);
    ds_free(ds);
    return rc;
}
