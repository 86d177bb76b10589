/* train_loop.c: train_run() (train.h): a run built, restored or started,
 * its record opened, then the loop over epochs and steps with the checks
 * after each step (a non-finite loss in O0, the loss-scale policy's limits),
 * checkpoints, the evaluation at each epoch's end, signals (finish the
 * step, write a checkpoint, close the record) and the progress line. */
#define _POSIX_C_SOURCE 200809L

#include "atomic_file.h"
#include "train_internal.h"
#include "train_options.h" /* topt_record_resume */
#include "util.h" /* ut_fail, ut_seconds, ut_stop_on_signals: stop after the current step */

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A progress line on a terminal: step, loss, scale, skips, rate, time left. */
static void show_progress(const train_state *r, int64_t step, int64_t total, int64_t epoch,
                          float loss, double started)
{
    const double elapsed = ut_seconds() - started;
    const double rate = elapsed > 0 ? (double)step / elapsed : 0;
    const double left = rate > 0 ? (double)(total - step) / rate : 0;
    fprintf(stderr,
            "\r  step %lld/%lld  epoch %lld  loss %-10.5g scale %-9.4g skips %lld  %.1f steps/s  "
            "%02d:%02d left ",
            (long long)step, (long long)total, (long long)epoch, (double)loss,
            (double)r->scale_used, (long long)r->skips, rate, (int)(left / 60), (int)left % 60);
    fflush(stderr);
}

static int evaluate(train_state *r, int64_t epoch, int64_t step, double *acc_out, char *msg,
                    size_t len)
{
    ds_batcher it;
    char why[512];
    if (ds_batcher_init(&it, r->test, NULL, r->o->batch, true, why, sizeof why) != DS_OK)
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    double loss_sum = 0;
    int64_t correct = 0, total = 0, tokens = 0;
    for (;;) {
        size_t rows = 0;
        if (ds_batch_next(&it, r->x_host, r->labels_host, NULL, &rows, why, sizeof why) != DS_OK)
            return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
        if (rows == 0) break;
        int rc =
            ak_to_device(r->b, r->m->x.data, r->x_host, rows * r->test->features * sizeof(float));
        if (!rc)
            rc = ak_to_device(r->b, r->m->labels, r->labels_host,
                              rows * r->test->label_dim * sizeof(int32_t));
        if (!rc) rc = model_forward(r->m, rows);
        float loss;
        int32_t good;
        if (!rc) rc = ak_to_host(r->b, &loss, r->m->loss, sizeof loss);
        if (!rc) rc = ak_to_host(r->b, &good, r->m->correct, sizeof good);
        if (rc) return train_backend_fail(r, msg, len, "evaluation");
        loss_sum += (double)loss * (double)rows;
        correct += good;
        total += (int64_t)rows;
        tokens += (int64_t)(rows * r->test->label_dim); /* a language model's: every position */
    }
    rec_eval_row row;
    row.epoch = epoch;
    row.step = step;
    row.test_loss = loss_sum / (double)total;
    row.test_accuracy = (double)correct / (double)tokens;
    *acc_out = row.test_accuracy;
    r->test_loss = row.test_loss;
    if (rec_write_eval(r->eval_log, &row) != 0 || rec_log_flush(r->eval_log) != 0)
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", rec_log_error(r->eval_log));
    return 0;
}

/* Where the loop stands: the next step, its epoch and its batch in the
 * epoch; the last step's loss and the last evaluation's accuracy (-1 before
 * one). */
typedef struct loop_pos {
    int64_t step, epoch, batch;
    float loss;
    double accuracy;
    bool stopped; /* by a signal (to any rank) */
} loop_pos;

/* Steps from *pos to the run's total, a signal or an error, with the checks
 * after each step, and at each epoch's end the evaluation and a
 * checkpoint. */
static int run_loop(train_state *r, loop_pos *pos, bool show, char *msg, size_t msg_len)
{
    const train_options *o = r->o;
    ds_batcher it;
    char why[512];
    const size_t per_epoch = (size_t)train_steps_per_epoch(r); /* >= 1 */
    const int64_t total = train_total_steps(r);
    const double started = ut_seconds();
    int64_t step = pos->step, epoch = pos->epoch, batch = pos->batch;
    const int64_t first_step = step;
    float loss = 0;
    double accuracy = -1;
    int rc = 0;
    bool stop = ut_stop_requested() != 0;
    while (step < total && !rc && !stop) {
        if (ds_shuffle(r->train->count, o->seed, (uint64_t)epoch, r->order, why, sizeof why) !=
                DS_OK ||
            ds_batcher_init(&it, r->train, r->order, o->batch, false, why, sizeof why) != DS_OK) {
            rc = ut_fail(msg, msg_len, TRAIN_EFAIL, "%s", why);
            break;
        }
        for (; batch < (int64_t)per_epoch && step < total && !rc && !stop; batch++) {
            const int64_t attempted = step;
            rc = train_step(r, &it, step, epoch, batch, &loss, msg, msg_len);
            if (!rc) {
                step++;
                if (show && (step % 10 == 0 || step == total))
                    show_progress(r, step - first_step, total - first_step, epoch, loss, started);
                if (train_numerical_stop(r, step - 1, loss, msg, msg_len))
                    rc = TRAIN_DIVERGED;
                else if (o->checkpoint_every > 0 && step % o->checkpoint_every == 0)
                    rc = train_save_checkpoint(r, step, epoch, batch + 1, msg, msg_len);
            }
            /* the ranks go on, stop or fail together */
            stop = ut_stop_requested() != 0;
            train_dp_settle(r, &rc, &stop, attempted, msg, msg_len);
            if (rc) break;
        }
        if (rc || stop) break;
        if (batch >= (int64_t)per_epoch) { /* the epoch is complete */
            if (r->test && r->rank == 0) rc = evaluate(r, epoch, step, &accuracy, msg, msg_len);
            epoch++;
            batch = 0;
            if (!rc) rc = train_save_checkpoint(r, step, epoch, batch, msg, msg_len);
            train_dp_settle(r, &rc, &stop, step, msg, msg_len);
        }
    }
    pos->step = step;
    pos->epoch = epoch;
    pos->batch = batch;
    pos->loss = loss;
    pos->accuracy = accuracy;
    pos->stopped = stop;
    return rc;
}

/* Rank 0 (or the one process) holds the record: the folder, run.json, the logs, the
 * checkpoints.  The other ranks of an MPI run read the checkpoint to resume and write
 * nothing. */
static int open_record(train_state *r, train_options *o, ckpt_state *at, char *msg, size_t msg_len)
{
    char why[512];
    int rc = 0;
    if (o->resume) {
        r->record = rec_run_read(train_path(r, REC_RUN_JSON), why, sizeof why);
        if (!r->record) rc = ut_fail(msg, msg_len, TRAIN_EINPUT, "--resume: %s", why);
        /* what this resume changed, from the step it applies; no end while it runs */
        if (!rc) rc = topt_record_resume(o, r->record, at->step, msg, msg_len);
        if (!rc) rec_run_set_end(r->record, REC_NO_TIME);
        if (!rc) rc = train_write_run_json(r, false, msg, msg_len);
    } else {
        r->record =
            rec_run_new(o->version, o->git_revision, ak_backend_name(r->b), ak_device_name(r->b));
        if (!r->record) rc = ut_fail(msg, msg_len, TRAIN_EFAIL, "out of memory");
        if (!rc) {
            rec_run_set_start(r->record, (int64_t)time(NULL));
            rc = train_describe(r, o, r->record, msg, msg_len);
        }
        if (!rc) rc = train_write_run_json(r, false, msg, msg_len);
    }
    if (!rc) rc = train_open_logs(r, at, msg, msg_len);
    return rc;
}

/* The summary line of a finished run. */
static void summary(const train_state *r, const loop_pos *pos)
{
    const train_options *o = r->o;
    printf("%s %s %s: %lld steps, final loss %.6g, skipped %lld", r->net.name,
           prec_mode_name(o->prec.mode),
           o->prec.mode == PREC_O0 ? "fp32" : ak_dtype_name(o->prec.low), (long long)pos->step,
           (double)pos->loss, (long long)r->skips);
    if (r->world > 1) printf(", %d ranks (%s)", r->world, r->ar->name);
    if (pos->accuracy >= 0) printf(", test accuracy %.4f", pos->accuracy);
    if (pos->accuracy >= 0 && r->net.tokens) /* a language model's held-out loss */
        printf(", held-out loss %.4f (%.4f bits per character)", r->test_loss,
               ds_bits_per_char(r->test_loss));
    printf("; record in %s\n", o->out_dir);
}

int train_run(const train_options *given, char *msg, size_t msg_len)
{
    train_options o = *given;
    train_state r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.lock_fd = -1;
    r.world = 1;
    bool stop = false;
    int rc = train_prepare(&r, &o, msg, msg_len);
    const bool writer = r.rank == 0;
    if (!rc && writer) rc = train_take_out_dir(&r, msg, msg_len);
    /* bad input is known on every rank before any builds */
    if (train_dp_settle(&r, &rc, &stop, -1, msg, msg_len)) {
        train_free(&r);
        return rc;
    }
    char notice[512];
    r.b = ak_open(o.backend, notice, sizeof notice);
    if (!r.b) rc = ut_fail(msg, msg_len, TRAIN_EINPUT, "%s", notice);
    if (!rc && notice[0] && writer) fprintf(stderr, "ampscope train: %s\n", notice);
    /* the ranks' products in one order, whether they run in one process or many */
    int blas_threads = 0; /* to restore (a study trains on after this run) */
    if (!rc && r.world > 1 && strcmp(ak_backend_name(r.b), "cpu") == 0)
        blas_threads = ak_cpu_set_threads(1);
    if (!rc) rc = train_build(&r, msg, msg_len);
    /* a resumed run: the weights, optimizer and scaler state and the data
     * position of its last checkpoint */
    ckpt_state at;
    memset(&at, 0, sizeof at);
    if (!rc) rc = train_restore(&r, &at, msg, msg_len);
    if (!rc && writer) rc = open_record(&r, &o, &at, msg, msg_len);
    if (train_dp_settle(&r, &rc, &stop, -1, msg, msg_len)) {
        train_free(&r);
        if (blas_threads > 0) ak_cpu_set_threads(blas_threads);
        return rc;
    }

    ut_stop_on_signals(false);

    const bool show = o.progress && writer && isatty(STDERR_FILENO);
    loop_pos pos = {at.step, at.epoch, at.batch, 0, -1, false};
    rc = run_loop(&r, &pos, show, msg, msg_len);
    /* a stopped or finished run leaves a checkpoint to resume from */
    if (!rc && pos.step > at.step)
        rc = train_save_checkpoint(&r, pos.step, pos.epoch, pos.batch, msg, msg_len);
    if (show) fputc('\n', stderr);
    /* the record ends whatever happened; logs are flushed step by step */
    char end_msg[512];
    /* why a run stopped on its own, in the record */
    if (rc == TRAIN_DIVERGED && writer) rec_run_set_string(r.record, "end_reason", msg);
    const int end_rc = writer ? train_write_run_json(&r, true, end_msg, sizeof end_msg) : 0;
    if (!rc && end_rc) rc = ut_fail(msg, msg_len, end_rc, "%s", end_msg);
    if (!rc && pos.stopped) {
        char by[64] = "another rank's signal";
        if (ut_stop_requested()) snprintf(by, sizeof by, "signal %d", ut_stop_requested());
        rc = ut_fail(msg, msg_len, TRAIN_INTERRUPTED,
                     "interrupted by %s after step %lld; the record in %s is complete up to it", by,
                     (long long)pos.step - 1, o.out_dir);
        if (!writer) msg[0] = '\0';
    }
    if (!rc && writer) summary(&r, &pos);
    train_free(&r);
    if (blas_threads > 0) ak_cpu_set_threads(blas_threads);
    return rc;
}
