/* train_dp.c: data-parallel training (train.h): every rank's gradients and their all-reduce
 * in the step (train_internal.h).
 *
 * A rank's gradient is the tensors the optimizer reads (fp32 where the mode keeps masters,
 * else the model's fp16/bf16 gradients), every parameter's in order, as fp32 values; the
 * all-reduce (allreduce.h) works on those n values and its result is written back into the
 * same tensors (rounded to nearest even into an fp16/bf16 tensor, as the framework's copy_
 * back into its gradients is; exact when the preset's bucket has the run's format).  In one
 * process the ranks run one after the other, each from the same weights, and ar_reduce sums
 * the N buffers; under mpirun each process computes its own and ar_mpi_allreduce (through
 * train_comm) gives every rank the same bits, so the ranks' weights, optimizer and scaler
 * stay equal without ever being sent.  Everything a rank could fail at inside a step is
 * agreed on before the reduction (train_dp_agree), so no rank waits for one that stopped. */
#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"
#include "train_options.h" /* topt_given */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the world's ranks: MPI's, or --world in one process */
static int world_of(const train_options *o)
{
    return o->comm && o->comm->size > 1 ? o->comm->size : o->world > 1 ? (int)o->world : 1;
}

int train_dp_prepare(train_state *r, char *msg, size_t len)
{
    const train_options *o = r->o;
    const bool world_given = topt_given(o, "world") != NULL;
    r->rank = o->comm ? o->comm->rank : 0; /* first: rank 0 alone speaks for bad input */
    if (o->comm && o->comm->size > 1 && world_given && o->world != o->comm->size)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "--world %lld, but mpirun started %d ranks (give the same number, or "
                       "leave --world out under mpirun)",
                       (long long)o->world, o->comm->size);
    r->world = world_of(o);
    r->ar = o->allreduce ? o->allreduce : ar_preset("pytorch-fp32");
    if (r->world == 1 && o->allreduce)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "--allreduce needs more than one rank (--world N, or mpirun -np N)");
    if (r->world == 1) return 0;
    /* a preset that reduces the model's fp16/bf16 gradients needs a model that has them */
    const fpe_format_id grads = o->prec.mode == PREC_O2 || o->prec.mode == PREC_O3
                                    ? (fpe_format_id)o->prec.low
                                    : FPE_FMT_F32;
    if (r->ar->grad != FPE_FMT_F32 && r->ar->grad != grads)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "--allreduce %s all-reduces the model's %s gradients, but in %s %s the "
                       "model's gradients are %s (use --mode O2 or O3 with --dtype %s, or an "
                       "fp32 preset)",
                       r->ar->name, ak_dtype_name((ak_dtype)r->ar->grad),
                       prec_mode_name(o->prec.mode), ak_dtype_name(o->prec.low),
                       ak_dtype_name((ak_dtype)grads), ak_dtype_name((ak_dtype)r->ar->grad));
    char why[512];
    if (ar_check_config(r->ar, r->world, why, sizeof why) != AR_OK)
        return ut_fail(msg, len, TRAIN_EINPUT, "--allreduce %s: %s", r->ar->name, why);
    return 0;
}

int train_dp_build(train_state *r, char *msg, size_t len)
{
    if (r->world == 1) return 0;
    size_t n = 0, widest = 0;
    for (int j = 0; j < r->m->n_params; j++) {
        const model_param *p = &r->m->params[j];
        n += p->n;
        const size_t bytes = p->n * ak_dtype_size(p->grad.dtype);
        if (bytes > widest) widest = bytes;
    }
    r->ar_n = n;
    const size_t slots = r->o->comm ? 1 : (size_t)r->world;
    if (n > 0 && slots > SIZE_MAX / sizeof(float) / n)
        return ut_fail(msg, len, TRAIN_EINPUT,
                       "--world %d: %zu gradient buffers of %zu values "
                       "do not fit in memory",
                       r->world, slots, n);
    r->ar_grads = malloc(slots * n * sizeof *r->ar_grads + 1);
    r->ar_out = malloc(n * sizeof *r->ar_out + 1);
    r->ar_stage = malloc(widest + 1);
    r->ar_losses = calloc((size_t)r->world, sizeof *r->ar_losses);
    if (!r->ar_grads || !r->ar_out || !r->ar_stage || !r->ar_losses)
        return ut_fail(msg, len, TRAIN_EFAIL,
                       "out of memory for %zu gradient buffers of %zu values (--world %d)", slots,
                       n, r->world);
    return 0;
}

void train_dp_free(train_state *r)
{
    free(r->ar_grads);
    free(r->ar_out);
    free(r->ar_stage);
    free(r->ar_losses);
}

int train_dp_settle(train_state *r, int *rc, bool *stop, int64_t step, char *msg, size_t len)
{
    const train_comm *c = r->o->comm;
    if (!c || c->size == 1) return *rc;
    /* the worst status class, the highest failing rank, a stop, whether rank 0 failed */
    int v[4] = {*rc ? -*rc : 0, *rc ? r->rank + 1 : 0, *stop ? 1 : 0, *rc && r->rank == 0};
    char why[512];
    if (c->max_int(c->ctx, v, 4, why, sizeof why) != 0) {
        *rc = ut_fail(msg, len, TRAIN_EFAIL, "rank %d: agreeing with the other ranks: %s", r->rank,
                      why);
        return *rc;
    }
    *stop = v[2] != 0;
    if (!v[0]) return 0;
    const bool mine = *rc != 0;
    if (r->rank == 0 && !mine) {
        char at[48] = "";
        if (step >= 0) snprintf(at, sizeof at, " at step %lld", (long long)step);
        ut_fail(msg, len, 0, "rank %d failed%s (its message is above)", v[1] - 1, at);
    } else if (r->rank != 0 && (!mine || v[3]))
        msg[0] = '\0';
    else if (r->rank != 0) {
        char own[1024];
        snprintf(own, sizeof own, "%s", msg);
        ut_fail(msg, len, 0, "rank %d: %s", r->rank, own);
    }
    *rc = -v[0];
    return *rc;
}

/* The gradient tensors' values, in order, into out as fp32. */
static int pack(train_state *r, const ak_tensor *grads, float *out)
{
    fpe_env env = fpe_env_default();
    for (int j = 0; j < r->m->n_params; j++) {
        const ak_tensor g = grads[j];
        if (g.dtype == AK_F32) {
            if (ak_to_host(r->b, out, g.data, g.n * sizeof(float)) != 0) return -1;
        } else {
            if (ak_to_host(r->b, r->ar_stage, g.data, g.n * 2) != 0) return -1;
            const uint16_t *h = r->ar_stage;
            for (size_t i = 0; i < g.n; i++) {
                const uint32_t w =
                    g.dtype == AK_F16 ? fpe_f16_to_f32(&env, h[i]) : fpe_bf16_to_f32(&env, h[i]);
                memcpy(out + i, &w, sizeof w);
            }
        }
        out += g.n;
    }
    return 0;
}

/* The reduced values back into the gradient tensors (rounded to nearest even into fp16/bf16). */
static int unpack(train_state *r, const float *in, ak_tensor *grads)
{
    fpe_env env = fpe_env_default();
    for (int j = 0; j < r->m->n_params; j++) {
        const ak_tensor g = grads[j];
        if (g.dtype == AK_F32) {
            if (ak_to_device(r->b, g.data, in, g.n * sizeof(float)) != 0) return -1;
        } else {
            if (fpe_chop_f32_to_u16(&env, (fpe_format_id)g.dtype, in, r->ar_stage, g.n, NULL) !=
                    FPE_OK ||
                ak_to_device(r->b, g.data, r->ar_stage, g.n * 2) != 0)
                return -1;
        }
        in += g.n;
    }
    return 0;
}

/* This process's ranks' gradients into r->ar_grads (one process: every rank's, rank 0 last;
 * MPI: its own into slot 0) and their losses into r->ar_losses. */
static int local_ranks(train_state *r, ds_batcher *it, int64_t step, int64_t batch,
                       const train_step_scale *s, ak_tensor *grads, size_t *rows, char *msg,
                       size_t len)
{
    const bool mpi = r->o->comm != NULL;
    const int first = mpi ? r->rank : 1;
    const int count = mpi ? 1 : r->world;
    int rc = 0;
    for (int i = 0; i < count && !rc; i++) {
        const int rank = mpi ? first : (first + i) % r->world;
        double loss;
        rc = train_rank_gradients(r, it, step, batch, rank, s, grads, rows, &loss, msg, len);
        float *slot = r->ar_grads + (mpi ? 0 : (size_t)rank * r->ar_n);
        if (!rc && pack(r, grads, slot) != 0)
            rc = train_backend_fail(r, msg, len, "reading the gradients for the all-reduce");
        r->ar_losses[rank] = loss;
    }
    return rc;
}

int train_dp_gradients(train_state *r, ds_batcher *it, int64_t step, int64_t batch,
                       const train_step_scale *s, ak_tensor *grads, size_t *rows, double *loss,
                       char *msg, size_t len)
{
    const train_comm *c = r->o->comm;
    int rc = local_ranks(r, it, step, batch, s, grads, rows, msg, len);
    /* every rank has its gradients, or every rank stops */
    bool stop = false;
    if (train_dp_settle(r, &rc, &stop, step, msg, len) != 0) return rc;
    char why[512];
    memset(&r->ar_last, 0, sizeof r->ar_last);
    const double loss_scale = (double)r->scale_used;
    if (c) {
        if (c->allreduce(c->ctx, r->ar, r->ar_grads, r->ar_out, r->ar_n, loss_scale, &r->ar_last,
                         why, sizeof why) != 0)
            return ut_fail(msg, len, TRAIN_EFAIL, "rank %d: the all-reduce: %s", r->rank, why);
        if (c->gather(c->ctx, r->ar_losses[r->rank], r->ar_losses, why, sizeof why) != 0)
            return ut_fail(msg, len, TRAIN_EFAIL, "rank %d: gathering the losses: %s", r->rank,
                           why);
    } else {
        const float *ranks[TRAIN_MAX_WORLD];
        for (int k = 0; k < r->world; k++)
            ranks[k] = r->ar_grads + (size_t)k * r->ar_n;
        ar_call call;
        memset(&call, 0, sizeof call);
        call.config = r->ar;
        call.world = r->world;
        call.n = r->ar_n;
        call.grads = ranks;
        call.loss_scale = loss_scale;
        if (ar_reduce(&call, r->ar_out, &r->ar_last, why, sizeof why) != AR_OK)
            return ut_fail(msg, len, TRAIN_EFAIL, "the all-reduce: %s", why);
    }
    if (unpack(r, r->ar_out, grads) != 0)
        return train_backend_fail(r, msg, len, "writing the all-reduced gradients");
    /* the ranks' mean loss, summed in rank order on every rank */
    double sum = 0;
    for (int k = 0; k < r->world; k++)
        sum += r->ar_losses[k];
    *loss = sum / (double)r->world;
    return 0;
}
