/* train_internal.h: the state of one training run, shared by the files that
 * make up train_run() (private to experiments/train_*.c):
 *   train_setup.c       the options' defaults, the net, data, model and the
 *                       step's backend state; the helpers below; freeing;
 *   train_step.c        one step, top to bottom;
 *   train_dp.c          data parallel: the ranks' gradients, their all-reduce;
 *   train_record.c      the logs (opened or resumed), run.json, a step's rows;
 *   train_limits.c      every rule that ends a diverged run (exit 3) and
 *                       what the loss-scale policy does at its limits: the
 *                       notes in run.json and the checks after each step;
 *   train_checkpoint.c  writing a checkpoint and resuming from one;
 *   train_verify.c      --resume's checks that the record agrees with
 *                       itself and the options, before anything is written;
 *   train_loop.c        train_run(): the loop, evaluation, signals, progress;
 *   train_fault.c       --fault (train.h).
 * Every function returns 0 or a train_status with the message in msg. */
#ifndef AMPSCOPE_TRAIN_INTERNAL_H
#define AMPSCOPE_TRAIN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allreduce.h"
#include "checkpoint.h"
#include "data.h"
#include "kernels.h"
#include "model.h"
#include "nets.h"
#include "record.h"
#include "record_lock.h"
#include "train.h"

typedef struct train_state {
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
    int lock_fd; /* the record folder's lock (-1: none) */
    char path[4096];
    float scale_used;                /* the scale the current step multiplies its loss by */
    ak_tensor acc[MODEL_MAX_PARAMS]; /* --accumulate: the summed gradients */
    float *inv_micro;                /* backend memory: 1 / micro-batches per step */
    double *sumsq;                   /* backend memory: --clip-norm's sum of squares */
    float *fault_scale;              /* backend memory: --fault's stand-in for the scale */
    float *weight_check;             /* backend memory: [0] 1.0f, [1] set when the stored
                                        weights hold a NaN or an infinity after an update */
    bool weights_nonfinite;          /* the last step's [1] */
    int64_t skips;
    double test_loss; /* the last evaluation's mean loss (nats a token in a sequence net) */
    ak_scaler_state before, after; /* host copies: the scaler before and after the last step */
    /* data parallel (train_dp.c; world 1: none) */
    int world, rank;     /* ranks; this process's (0 in one process) */
    const ar_config *ar; /* --allreduce */
    size_t ar_n;         /* gradient values a rank sends: every parameter's, in order */
    float *ar_grads;     /* the ranks' gradients: world (one process) or 1 (MPI) x ar_n */
    float *ar_out;       /* ar_n: the reduction */
    void *ar_stage;      /* one tensor's bytes on their way to or from the backend */
    double *ar_losses;   /* world: each rank's loss */
    ar_stats ar_last;    /* the last step's all-reduce */
    rec_log *allreduce_log;
} train_state;

/* What a step's backward pass multiplies the loss by: the scale held, or
 * with --fault NaN (a NaN loss), inf (an infinite loss, or gradients that
 * overflow) or 0 instead; with --fault nan-weights, the scale held and NaN
 * for the weights (train_step.c). */
typedef struct train_step_scale {
    const float *scale; /* backend memory */
    float fault_value;  /* in r->fault_scale when there is a fault */
    bool fault_loss;    /* the logged loss is fault_value too */
    bool fault_weights; /* a stored weight is multiplied by fault_value after the update */
} train_step_scale;

/* ---- train_setup.c ---- */
/* Everything that can be checked before work starts: the net, the
 * precision options, the scaler; a bad one is TRAIN_EINPUT.  Fills in the
 * defaults that depend on the net. */
int train_prepare(train_state *r, train_options *o, char *msg, size_t len);
/* --out (or --resume) DIR taken for the whole run (record_lock.h): its
 * lock in r->lock_fd; a new run's folder made if need be, empty or
 * cleared by --force; never an input's nor inside a record it does not
 * own. */
int train_take_out_dir(train_state *r, char *msg, size_t len);
/* On the open backend: the data, the model with its initial (or --init)
 * weights, and the step's state with the scaler's initial state. */
int train_build(train_state *r, char *msg, size_t len);
void train_free(train_state *r); /* whatever was built; the backend last */
/* Steps an epoch (batches of --batch x --accumulate samples, >= 1 once
 * built) and the run's steps (--steps, or --epochs of them). */
int64_t train_steps_per_epoch(const train_state *r);
int64_t train_total_steps(const train_state *r);
/* out_dir/file, in r->path (valid until the next call) */
const char *train_path(train_state *r, const char *file);
/* TRAIN_EFAIL, "what: the backend's error" */
int train_backend_fail(train_state *r, char *msg, size_t len, const char *what);

/* ---- train_step.c ---- */
/* Step number `step` of the run (in epoch `epoch`, the epoch's step `batch`), its batches
 * from it; *loss the step's loss as logged. */
int train_step(train_state *r, ds_batcher *it, int64_t step, int64_t epoch, int64_t batch,
               float *loss, char *msg, size_t len);

/* Rank `rank`'s part of step `step` (the epoch's step `batch`): its micro-batches from it,
 * forward and backward, their gradients summed and divided by their number; grads the
 * tensors the optimizer reads, *rows the last micro-batch's samples, *loss the mean of its
 * micro-batches' losses (read back only when more than one micro-batch or rank need it:
 * NaN otherwise, the step's end reads it). */
int train_rank_gradients(train_state *r, ds_batcher *it, int64_t step, int64_t batch, int rank,
                         const train_step_scale *s, ak_tensor *grads, size_t *rows, double *loss,
                         char *msg, size_t len);

/* ---- train_dp.c ---- */
/* The world (--world or MPI's ranks) and --allreduce checked against the run: 0 or
 * TRAIN_EINPUT (before anything is created). */
int train_dp_prepare(train_state *r, char *msg, size_t len);
/* The buffers of the all-reduce, once the model is built. */
int train_dp_build(train_state *r, char *msg, size_t len);
/* World > 1: every rank's gradients (one process: all, the rank 0 last so that the model
 * holds its activations for the statistics; MPI: this process's), all-reduced into grads;
 * *loss the ranks' mean loss.  A failure on any rank fails every rank. */
int train_dp_gradients(train_state *r, ds_batcher *it, int64_t step, int64_t batch,
                       const train_step_scale *s, ak_tensor *grads, size_t *rows, double *loss,
                       char *msg, size_t len);
/* MPI, at the same point on every rank (after the set-up, after each step): *rc this
 * rank's status becomes the world's, *stop (this rank was asked to stop) whether any rank
 * was.  When a rank failed every rank returns the same status class; the message is this
 * rank's own on rank 0, "rank K failed..." on rank 0 when only others did, and on the
 * others their own (prefixed with the rank) only when rank 0 did not fail, else empty (rank
 * 0 speaks for the world).  In one process nothing changes.  Returns *rc. */
int train_dp_settle(train_state *r, int *rc, bool *stop, int64_t step, char *msg, size_t len);
void train_dp_free(train_state *r);

/* ---- train_record.c ---- */
/* Opens the logs; for a resumed run (at: where it goes on) drops the rows
 * past its checkpoint. */
int train_open_logs(train_state *r, const ckpt_state *at, char *msg, size_t len);
/* run.json's options of a run of o (r's net built): the options as given
 * (topt_record), what the defaults resolved to and the scaler's notes; a
 * new run's record, and what a resume compares run.json with. */
int train_describe(train_state *r, const train_options *o, rec_run *into, char *msg, size_t len);
/* run.json, atomically; ended: with the end time. */
int train_write_run_json(train_state *r, bool ended, char *msg, size_t len);
/* 10. the step's rows: steps.csv, the gradient trace when taken, the
 * update losses on statistics steps; then every log is flushed. */
int train_record_step(train_state *r, const rec_step_row *row, bool trace, char *msg, size_t len);
/* Flushes every log to the disk (before a checkpoint that keeps their rows). */
int train_sync_logs(train_state *r, char *msg, size_t len);
void train_close_record(train_state *r); /* the logs and run.json's contents */

/* ---- train_limits.c ---- */
/* run.json's scaler_floor, scaler_nonfinite_growth and divergence_rule. */
void train_record_scaler_notes(const train_options *o, rec_run *into);
/* After step `step`, whose loss was `loss`: whether the run has diverged
 * (msg says why and at which step, for run.json's end_reason). */
bool train_numerical_stop(train_state *r, int64_t step, float loss, char *msg, size_t len);

/* ---- train_checkpoint.c ---- */
/* Writes out_dir/checkpoint.safetensors for a run that has done `step`
 * steps and goes on at (epoch, batch). */
int train_save_checkpoint(train_state *r, int64_t step, int64_t epoch, int64_t batch, char *msg,
                          size_t len);
/* Removes what writers killed mid-write left, and for --resume with a
 * checkpoint loads it: weights, optimizer and scaler state, and *at, where
 * the run goes on (left zero for a new run or one killed before its first
 * checkpoint). */
int train_restore(train_state *r, ckpt_state *at, char *msg, size_t len);

/* ---- train_verify.c ---- */
/* --resume, before anything is written: run.json against the options, the
 * checkpoint's metadata *at (when has_checkpoint) against the run, and each
 * log against the checkpoint.  0, or TRAIN_EINPUT with one line naming the
 * file and what is wrong. */
int train_verify_resume(train_state *r, const ckpt_state *at, bool has_checkpoint, char *msg,
                        size_t len);
/* The run's identity a checkpoint keeps (net, mode, dtype, batch, lr, seed
 * as run.json has them resolved). */
void train_run_identity(const train_state *r, ckpt_run *s);

#endif
