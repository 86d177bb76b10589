/* train_record.c: a training run's record (analyze/record.h): the logs,
 * opened fresh or reopened for a resume without the rows past its
 * checkpoint, run.json, and each step's rows, flushed so that a killed run
 * keeps every completed step (train_internal.h). */
#include "amp_lists.h"
#include "atomic_file.h" /* ut_fail */
#include "train_internal.h"
#include "train_options.h" /* topt_record */

#include <stdio.h>
#include <string.h>
#include <time.h>

/* at: where a resumed run goes on (zero for a new run).  The per-step logs
 * keep rows of steps 0..at->step-1.  eval.csv's step column counts steps:
 * the evaluation after step at->step is done when the checkpoint starts a
 * new epoch (batch 0), and still to do when it was written at the epoch's
 * last batch, before the evaluation (a run killed in between). */
int train_open_logs(train_state *r, const ckpt_state *at, char *msg, size_t len)
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
    if (r->trace_hist_log && (!r->test || r->eval_log) && r->world > 1)
        r->allreduce_log = rec_log_open_table(dir, REC_ALLREDUCE, keep, why, sizeof why);
    if (!r->steps_log || !r->tensors_log || !r->updates_log || !r->hist_log || !r->trace_log ||
        !r->trace_hist_log || (r->test && !r->eval_log) || (r->world > 1 && !r->allreduce_log))
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

/* run.json's notes on the precision lists, when a framework's were asked
 * for or the BatchNorm choice was given: the preset's source, the lists as
 * applied and edited (by op class), the framework's names that ampscope has
 * no op class for (what was left out), keep_batchnorm_fp32. */
static void record_amp_lists(const train_options *o, rec_run *into)
{
    const amp_preset *p = amp_preset_find(o->prec.amp_preset);
    if (!p && !topt_given(o, "keep-batchnorm-fp32")) return;
    char text[8192];
    if (p) {
        rec_run_set_string(into, "amp_lists_source", p->source);
        amp_lists_describe(&o->prec, text, sizeof text);
        rec_run_set_string(into, "amp_lists_applied", text);
        amp_lists_unmapped(p, o->prec.mode, text, sizeof text);
        rec_run_set_string(into, "amp_lists_unmapped", text);
    }
    snprintf(text, sizeof text, "%s%s%s", o->prec.keep_batchnorm_fp32 ? "on" : "off",
             topt_given(o, "keep-batchnorm-fp32") ? ": as given"
             : p                                  ? ": "
                                                  : "",
             topt_given(o, "keep-batchnorm-fp32") ? ""
             : p                                  ? p->keep_note
                                                  : "");
    rec_run_set_string(into, "keep_batchnorm_fp32", text);
}

int train_describe(train_state *r, const train_options *o, rec_run *into, char *msg, size_t len)
{
    /* the options as given, then what the defaults resolved to */
    int rc = topt_record(o, into, msg, len);
    rec_run_set_string(into, "net", r->net.name);
    rec_run_set_string(into, "mode", prec_mode_name(o->prec.mode));
    rec_run_set_string(into, "dtype", ak_dtype_name(o->prec.low));
    rec_run_set_int(into, "batch", (int64_t)o->batch);
    rec_run_set_real(into, "lr", o->opt.lr);
    rec_run_set_int(into, "seed", (int64_t)o->seed);
    if (r->plan.loss != AK_F32) rec_run_set_string(into, "loss_dtype", ak_dtype_name(r->plan.loss));
    if (r->world > 1) { /* data parallel: the world and how it all-reduces */
        rec_run_set_int(into, "world", r->world);
        rec_run_set_string(into, "allreduce", r->ar->name);
        rec_run_set_string(into, "allreduce_source", r->ar->source);
        if (r->b && strcmp(ak_backend_name(r->b), "cpu") == 0) /* train_loop.c */
            rec_run_set_int(into, "cpu_blas_threads", 1);
    }
    train_record_scaler_notes(o, into);
    record_amp_lists(o, into);
    return rc;
}

int train_write_run_json(train_state *r, bool ended, char *msg, size_t len)
{
    if (ended) rec_run_set_end(r->record, (int64_t)time(NULL));
    char why[512];
    if (rec_run_write(r->record, train_path(r, REC_RUN_JSON), why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

/* A data-parallel step's all-reduce row. */
static int write_allreduce(train_state *r, int64_t step)
{
    const ar_stats *a = &r->ar_last;
    rec_allreduce_row row;
    row.step = step;
    row.elements = a->elements;
    row.inputs_nonzero = a->inputs_nonzero;
    row.flushed_cast = a->flushed_cast;
    row.flushed_prescale = a->flushed_prescale;
    row.subnormal_messages = a->subnormal_messages;
    row.overflow_cast = a->overflow_cast;
    row.overflow_in_sum = a->overflow_in_sum;
    row.nonfinite_results = a->nonfinite_results;
    row.zero_results = a->zero_results;
    row.subnormal_results = a->subnormal_results;
    row.max_abs_error = a->max_abs_error;
    row.rel_l2_error = a->rel_l2_error;
    row.found_inf = a->found_inf != 0;
    return rec_write_allreduce(r->allreduce_log, &row);
}

int train_record_step(train_state *r, const rec_step_row *row, bool trace, char *msg, size_t len)
{
    const train_options *o = r->o;
    const int64_t step = row->step;
    if (r->rank != 0) return 0; /* rank 0 holds the record */
    bool ok = rec_write_step(r->steps_log, row) == 0;
    if (ok && r->allreduce_log)
        ok = write_allreduce(r, step) == 0 && rec_log_flush(r->allreduce_log) == 0;
    if (ok && trace)
        ok = rec_write_trace_stats(r->trace_log, r->trace_hist_log, step, row->loss_scale,
                                   row->found_inf, &r->trace_host) == 0;
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
        return ut_fail(msg, len, TRAIN_EFAIL, "writing the record: %s%s%s%s%s%s%s",
                       rec_log_error(r->steps_log),
                       r->allreduce_log ? rec_log_error(r->allreduce_log) : "",
                       rec_log_error(r->updates_log), rec_log_error(r->tensors_log),
                       rec_log_error(r->hist_log), rec_log_error(r->trace_log),
                       rec_log_error(r->trace_hist_log));
    return 0;
}

int train_sync_logs(train_state *r, char *msg, size_t len)
{
    /* the rows the checkpoint keeps reach the disk before it does */
    rec_log *logs[] = {r->steps_log, r->tensors_log,    r->updates_log, r->hist_log,
                       r->trace_log, r->trace_hist_log, r->eval_log,    r->allreduce_log};
    for (size_t i = 0; i < sizeof logs / sizeof *logs; i++)
        if (logs[i] && rec_log_sync(logs[i]) != 0)
            return ut_fail(msg, len, TRAIN_EFAIL, "%s", rec_log_error(logs[i]));
    return 0;
}

void train_close_record(train_state *r)
{
    char ignore[64];
    rec_log_close(r->steps_log, ignore, sizeof ignore);
    rec_log_close(r->tensors_log, ignore, sizeof ignore);
    rec_log_close(r->updates_log, ignore, sizeof ignore);
    rec_log_close(r->hist_log, ignore, sizeof ignore);
    rec_log_close(r->trace_log, ignore, sizeof ignore);
    rec_log_close(r->trace_hist_log, ignore, sizeof ignore);
    rec_log_close(r->eval_log, ignore, sizeof ignore);
    rec_log_close(r->allreduce_log, ignore, sizeof ignore);
    rec_run_free(r->record);
}
