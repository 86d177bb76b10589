/* train_verify.c: --resume checks, before anything is written, that the run
 * directory's parts agree with each other and with the options: run.json
 * holds what the options resolved to; the checkpoint's metadata are those
 * of a step of this run (its step within the run's steps and at its data
 * position, its counters in range and consistent, the loss scaler's state
 * one the policy can reach, the optimizer's step state); each log holds
 * every row the checkpoint keeps, in order, with no gap and no step twice
 * (rec_log_check).  The checkpoint's checksum and its tensors' dtypes and
 * shapes are checked as it loads (ckpt_load).  Any disagreement is
 * TRAIN_EINPUT with one line naming the file and what is wrong
 * (train_internal.h). */
#define _POSIX_C_SOURCE 200809L

#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* TRAIN_EINPUT with "--resume: FILE: what". */
static int bad(char *msg, size_t len, const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int bad(char *msg, size_t len, const char *file, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ut_fail(msg, len, TRAIN_EINPUT, "--resume: %s: %s", file, what);
}

/* ---- run.json ------------------------------------------------------------------------- */
void train_run_identity(const train_state *r, ckpt_run *s)
{
    const train_options *o = r->o;
    snprintf(s->net, sizeof s->net, "%s", r->net.name);
    snprintf(s->mode, sizeof s->mode, "%s", prec_mode_name(o->prec.mode));
    snprintf(s->dtype, sizeof s->dtype, "%s", ak_dtype_name(o->prec.low));
    s->batch = (int64_t)o->batch;
    s->lr = o->opt.lr;
    s->seed = o->seed;
}

/* Whether run.json's value a is the value b the rebuilt options give (lr
 * is an fp32 value recorded as a double; numbers may be read as either). */
static bool same_option(const rec_option *a, const rec_option *b)
{
    if (a->type == REC_OPT_STRING || b->type == REC_OPT_STRING)
        return a->type == b->type && strcmp(a->string, b->string) == 0;
    const double x = a->type == REC_OPT_INT ? (double)a->integer : a->real;
    const double y = b->type == REC_OPT_INT ? (double)b->integer : b->real;
    return strcmp(a->key, "lr") == 0 ? (float)x == (float)y : x == y;
}

static const char *option_text(const rec_option *v, char *buf, size_t len)
{
    if (v->type == REC_OPT_STRING) return v->string;
    if (v->type == REC_OPT_INT)
        snprintf(buf, len, "%lld", (long long)v->integer);
    else
        snprintf(buf, len, "%.9g", v->real);
    return buf;
}

/* run.json's "options" must be exactly what its "given" list (and resumes)
 * describe: the record of a run of the rebuilt options (train_describe),
 * made again here and compared key by key, so an edited value is found
 * whichever option it is.  Not made again: end_reason, written when a run
 * ends, and out, the folder the run was started in (not replayed). */
static int verify_run_json(train_state *r, char *msg, size_t len)
{
    char why[512], path[4096], a[64], b[64];
    snprintf(path, sizeof path, "%s", train_path(r, REC_RUN_JSON));
    rec_run *run = rec_run_read(path, why, sizeof why);
    if (!run) return ut_fail(msg, len, TRAIN_EINPUT, "--resume: %s", why);
    int rc = 0;
    if (rec_run_start(run) == REC_NO_TIME)
        rc = bad(msg, len, path, "no start_time (the record is incomplete)");
    /* a data-parallel run goes on with as many ranks as it had */
    rec_option world;
    const int64_t was =
        rec_run_option(run, "world", &world) && world.type == REC_OPT_INT ? world.integer : 1;
    if (!rc && was != r->world)
        rc = bad(msg, len, path,
                 "the run was trained on %lld rank%s, this resume has %d: resume it with %lld "
                 "(mpirun -np %lld, or in one process --world %lld)",
                 (long long)was, was == 1 ? "" : "s", r->world, (long long)was, (long long)was,
                 (long long)was);
    /* the options as they were recorded: without what this resume gives */
    train_options o = *r->o;
    o.n_given = o.n_recorded;
    rec_run *fresh = rc ? NULL : rec_run_new("", "", "", "");
    if (!rc && !fresh) rc = ut_fail(msg, len, TRAIN_EFAIL, "out of memory");
    if (!rc) rc = train_describe(r, &o, fresh, msg, len);
    for (size_t i = 0; !rc && i < rec_run_option_count(fresh); i++) {
        rec_option want, v;
        rec_run_option_at(fresh, i, &want);
        if (!rec_run_option(run, want.key, &v))
            rc = bad(msg, len, path, "option '%s' is missing (the record is incomplete)", want.key);
        else if (!same_option(&v, &want))
            rc = bad(msg, len, path, "option '%s' is %s, but its options as given make it %s",
                     want.key, option_text(&v, a, sizeof a), option_text(&want, b, sizeof b));
    }
    for (size_t i = 0; !rc && i < rec_run_option_count(run); i++) {
        rec_option v, want;
        rec_run_option_at(run, i, &v);
        const bool not_made = strcmp(v.key, "end_reason") == 0 || strcmp(v.key, "out") == 0;
        if (!not_made && !rec_run_option(fresh, v.key, &want))
            rc = bad(msg, len, path, "option '%s' is not one its options as given make", v.key);
    }
    rec_run_free(fresh);
    rec_run_free(run);
    return rc;
}

/* ---- the checkpoint --------------------------------------------------------------------- */
/* The loss scaler's state: finite, and one the policy's rule can reach.
 * The framework's own number is master_scale: in the fp32 arithmetics it is
 * the fp32 scale; in the double one (a Python float) it may pass fp32's
 * maximum, where the fp32 scale applied, (float)master_scale, is inf. */
static int verify_scaler(const ak_scaler_config *c, const ckpt_state *at, const char *path,
                         char *msg, size_t len)
{
    const ak_scaler_state *s = &at->scaler;
    const bool dbl = c->kind == AK_SCALER_DYNAMIC && c->arith == AK_SCALE_ARITH_DOUBLE;
    const double scale = s->scale, master = s->master_scale;
    if (isnan(scale) || scale < 0 || (!dbl && isinf(scale)))
        return bad(msg, len, path, "the loss scale is %g: not a %sscale >= 0", scale,
                   dbl ? "" : "finite ");
    if (!isfinite(master) || master < 0)
        return bad(msg, len, path, "scaler.master_scale is %g: not a finite scale >= 0", master);
    if (c->kind == AK_SCALER_NONE && scale != 1)
        return bad(msg, len, path, "the loss scale is %g, but the run has no loss scaling (1)",
                   scale);
    if (c->kind == AK_SCALER_FIXED && s->scale != c->init_scale)
        return bad(msg, len, path, "the loss scale is %g, but the run's fixed scale is %g", scale,
                   (double)c->init_scale);
    if (c->kind == AK_SCALER_DYNAMIC) {
        /* without a floor, backoffs may take the scale to 0 (train_limits.c) */
        if (scale == 0 && c->min_scale > 0)
            return bad(msg, len, path, "the loss scale is 0, below --min-scale %g",
                       (double)c->min_scale);
        if (s->scale < c->min_scale)
            return bad(msg, len, path, "the loss scale %g is below --min-scale %g", scale,
                       (double)c->min_scale);
        if (s->scale > c->max_scale)
            return bad(msg, len, path, "the loss scale %g is above --max-scale %g", scale,
                       (double)c->max_scale);
    }
    /* the fp32 arithmetics keep one fp32 number; the double one applies it in fp32 */
    if (!dbl && master != scale)
        return bad(msg, len, path,
                   "scaler.master_scale %.17g differs from the loss scale %.9g (the %s arithmetic "
                   "keeps one fp32 scale)",
                   master, scale, ak_scale_arith_name(c->arith));
    if ((float)master != s->scale)
        return bad(msg, len, path, "the loss scale %g is not scaler.master_scale %.17g in fp32",
                   scale, master);
    if (dbl && master < (double)c->min_scale)
        return bad(msg, len, path, "scaler.master_scale %.17g is below --min-scale %g", master,
                   (double)c->min_scale);
    if (dbl && master > (double)c->max_scale)
        return bad(msg, len, path, "scaler.master_scale %.17g is above --max-scale %g", master,
                   (double)c->max_scale);
    /* 1 / scale as the rule derives it: the fp32 quotient, or 1 / master_scale in double
     * rounded to fp32 (the same for an fp32 scale: double rounding of a quotient of fp32
     * numbers is innocuous); 1 / 0 is inf */
    const float inv = dbl ? (master > 0 ? (float)(1.0 / master) : INFINITY)
                          : (s->scale > 0 ? 1.0f / s->scale : INFINITY);
    if (!(s->inv_scale == inv) && dbl)
        return bad(msg, len, path,
                   "scaler.inv_scale %g is not 1 / scaler.master_scale %.17g in fp32",
                   (double)s->inv_scale, master);
    if (!(s->inv_scale == inv))
        return bad(msg, len, path, "scaler.inv_scale %g is not 1 / the scale %g",
                   (double)s->inv_scale, scale);
    if ((float)at->scale_used != s->scale)
        return bad(msg, len, path, "scale_used %g differs from the scaler's scale %g",
                   (double)at->scale_used, scale);
    if (s->skip != 0.0f && s->skip != 1.0f)
        return bad(msg, len, path, "scaler.skip is %g, expected 0 or 1", (double)s->skip);
    const int32_t h_max = c->kind == AK_SCALER_DYNAMIC ? c->hysteresis : 1;
    if (s->hysteresis_left < 1 || s->hysteresis_left > h_max)
        return bad(msg, len, path, "scaler.hysteresis_left is %d, outside [1, %d]",
                   (int)s->hysteresis_left, (int)h_max);
    /* the growth counter: below the window, or (deepspeed, its FP16_Optimizer) clean steps since
     * the last overflow */
    const bool since_overflow =
        c->rule == AK_SCALER_RULE_DEEPSPEED || c->rule == AK_SCALER_RULE_DEEPSPEED_FP16_OPT;
    const int64_t good_max = c->kind != AK_SCALER_DYNAMIC ? 0
                             : since_overflow             ? s->steps
                                                          : (int64_t)c->window - 1;
    if (s->good < 0 || s->good > good_max)
        return bad(msg, len, path, "scaler.good is %lld, outside [0, %lld]", (long long)s->good,
                   (long long)good_max);
    return 0;
}

/* The run that wrote the checkpoint is the one run.json describes. */
static int verify_identity(const ckpt_run *at, const ckpt_run *id, const char *path, char *msg,
                           size_t len)
{
    const struct {
        const char *key, *had, *has;
    } names[] = {
        {"net", at->net, id->net}, {"mode", at->mode, id->mode}, {"dtype", at->dtype, id->dtype}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].had, names[i].has) != 0)
            return bad(msg, len, path, "written by a run with %s '%s', but run.json says '%s'",
                       names[i].key, names[i].had, names[i].has);
    const struct {
        const char *key;
        double had, has;
    } numbers[] = {{"batch", (double)at->batch, (double)id->batch},
                   {"lr", at->lr, id->lr},
                   {"seed", (double)at->seed, (double)id->seed}};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        if (!(numbers[i].had == numbers[i].has))
            return bad(msg, len, path, "written by a run with %s %.9g, but run.json says %.9g",
                       numbers[i].key, numbers[i].had, numbers[i].has);
    return 0;
}

/* The counters: every step is one scaler update; overflows, skips,
 * growths and backoffs are among them. */
static int verify_counts(const ckpt_state *at, const char *path, char *msg, size_t len)
{
    const ak_scaler_state *s = &at->scaler;
    const long long n = at->step;
    const struct {
        const char *name;
        int64_t value, max;
    } counts[] = {
        {"skips", at->skips, at->step},
        {"scaler.overflows", s->overflows, at->step},
        {"scaler.skipped", s->skipped, s->overflows},
        {"scaler.growths", s->growths, at->step - s->backoffs},
        {"scaler.backoffs", s->backoffs, at->step},
        {"scaler.overflows_in_a_row", s->overflows_in_a_row, s->overflows},
        {"optimizer.step", at->opt.step, at->step},
    };
    if (s->steps != at->step)
        return bad(msg, len, path, "scaler.steps is %lld, but the checkpoint is at step %lld",
                   (long long)s->steps, n);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (counts[i].value < 0 || counts[i].value > counts[i].max)
            return bad(msg, len, path, "%s is %lld, outside [0, %lld] at step %lld", counts[i].name,
                       (long long)counts[i].value, (long long)counts[i].max, n);
    if (at->skips != s->skipped)
        return bad(msg, len, path, "skips is %lld, but scaler.skipped is %lld",
                   (long long)at->skips, (long long)s->skipped);
    /* ak_opt_step_begin counts the updates that were not skipped */
    if (at->opt.step != at->step - s->skipped)
        return bad(msg, len, path, "optimizer.step is %lld, but %lld of %lld steps updated",
                   (long long)at->opt.step, n - (long long)s->skipped, n);
    const double pows[2] = {at->opt.beta1_pow, at->opt.beta2_pow};
    for (int k = 0; k < 2; k++)
        if (!(pows[k] >= 0 && pows[k] <= 1))
            return bad(msg, len, path, "optimizer.beta%d_pow is %g, outside [0, 1]", k + 1,
                       pows[k]);
    return 0;
}

/* The checkpoint's position in the run: a step of it, at its data position. */
static int verify_position(train_state *r, const ckpt_state *at, const char *path, char *msg,
                           size_t len)
{
    const int64_t per_epoch = train_steps_per_epoch(r), total = train_total_steps(r);
    if (at->step < 0 || at->step > total)
        return bad(msg, len, path, "step is %lld, more than the run's steps (%lld)",
                   (long long)at->step, (long long)total);
    /* an epoch's steps are its batches; a checkpoint at the epoch's last batch has batch
     * per_epoch (its evaluation still to do) */
    if (at->epoch < 0 || at->batch < 0 || at->batch > per_epoch ||
        at->step != at->epoch * per_epoch + at->batch)
        return bad(msg, len, path,
                   "epoch %lld, batch %lld do not make step %lld (the run has %lld steps an "
                   "epoch)",
                   (long long)at->epoch, (long long)at->batch, (long long)at->step,
                   (long long)per_epoch);
    /* every step draws fresh stochastic-rounding bits for every element */
    uint64_t elements = 0;
    for (int i = 0; i < r->m->n_params; i++)
        elements += r->m->params[i].n;
    const uint64_t sr = r->opt.round.index + (uint64_t)at->step * elements;
    if (at->sr_index != sr)
        return bad(msg, len, path, "sr_index is %llu, expected %llu at step %lld",
                   (unsigned long long)at->sr_index, (unsigned long long)sr, (long long)at->step);
    return 0;
}

/* ---- the logs ------------------------------------------------------------------------------ */
/* Each log holds the rows of every step it logs up to the checkpoint's
 * (train_open_logs cuts the rest): eval.csv after each epoch's last step. */
static int verify_logs(train_state *r, const ckpt_state *at, bool has_checkpoint, char *msg,
                       size_t len)
{
    const train_options *o = r->o;
    const int64_t keep = has_checkpoint ? at->step - 1 : -1;
    const int64_t per_epoch = train_steps_per_epoch(r);
    const struct {
        rec_table table;
        rec_log_expect e;
    } logs[] = {
        {REC_STEPS, {0, 1, keep, true}},
        {REC_TENSORS, {0, o->stats_every, keep, false}},
        {REC_UPDATES, {0, o->stats_every, keep, false}},
        {REC_HIST, {0, o->hist_every, keep, false}},
        {REC_TRACE, {0, o->trace_every, keep, true}},
        {REC_TRACE_HIST, {0, o->trace_every, keep, false}},
        {REC_ALLREDUCE, {0, 1, keep, true}},
        /* the evaluation after the checkpoint's step is done when it starts an epoch */
        {REC_EVAL,
         {per_epoch, per_epoch,
          !has_checkpoint  ? -1
          : at->batch == 0 ? at->step
                           : at->step - 1,
          true}},
    };
    char why[768], path[4096];
    for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
        if (logs[i].table == REC_EVAL && !r->test) continue;
        if (logs[i].table == REC_ALLREDUCE && r->world == 1) continue;
        snprintf(path, sizeof path, "%s", train_path(r, rec_table_file(logs[i].table)));
        if (rec_log_check(path, rec_table_header(logs[i].table), &logs[i].e, why, sizeof why) !=
            AN_OK)
            return ut_fail(msg, len, TRAIN_EINPUT, "--resume: %s", why);
    }
    return 0;
}

int train_verify_resume(train_state *r, const ckpt_state *at, bool has_checkpoint, char *msg,
                        size_t len)
{
    ckpt_run id;
    memset(&id, 0, sizeof id);
    train_run_identity(r, &id);
    int rc = verify_run_json(r, msg, len);
    if (!rc && has_checkpoint) {
        char path[4096];
        snprintf(path, sizeof path, "%s", train_path(r, REC_CHECKPOINT));
        rc = verify_identity(&at->run, &id, path, msg, len);
        if (!rc) rc = verify_position(r, at, path, msg, len);
        if (!rc) rc = verify_counts(at, path, msg, len);
        if (!rc) rc = verify_scaler(&r->o->scaler, at, path, msg, len);
    }
    if (!rc) rc = verify_logs(r, at, has_checkpoint, msg, len);
    return rc;
}
