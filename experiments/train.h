/* train.h: training a reference network under a precision mode and a
 * loss-scale policy, with the numerical record of every step (train_*.c;
 * train_internal.h says which file does what).  train_options is filled
 * option by option through its table (train_options.h): by `ampscope
 * train`'s command line and by the studies. */
#ifndef AMPSCOPE_TRAIN_H
#define AMPSCOPE_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"
#include "nets.h"

/* --fault (testing): numerical faults injected into chosen steps, to test
 * what each loss-scale policy and the divergence checks do with them.  The
 * first four are applied to the step's backward pass through the scale it
 * multiplies the loss by; nan-weights to the weights after the update. */
typedef enum train_fault_kind {
    TRAIN_FAULT_NONE = 0,
    TRAIN_FAULT_NONFINITE_LOSS, /* the loss is NaN before scaling: loss and gradients NaN */
    TRAIN_FAULT_INF_LOSS,       /* the loss is +inf before scaling: the gradients overflow */
    TRAIN_FAULT_OVERFLOW_GRADS, /* the loss stays finite, its scaled gradients overflow */
    TRAIN_FAULT_ZERO_GRADS,     /* the gradients are zero: a clean step whatever the scale */
    TRAIN_FAULT_NAN_WEIGHTS     /* after the update, the first stored weight (the fp32 master
                                   where the mode keeps one) is NaN */
} train_fault_kind;

#define TRAIN_MAX_FAULTS       4
#define TRAIN_MAX_FAULT_RANGES 16
typedef struct train_fault {
    train_fault_kind kind;
    int n_ranges;                                                   /* 0: every step */
    int64_t lo[TRAIN_MAX_FAULT_RANGES], hi[TRAIN_MAX_FAULT_RANGES]; /* steps, inclusive */
} train_fault;

/* Parses a --fault SPEC: CLAUSE[+CLAUSE...], CLAUSE = KIND@STEPS, KIND one
 * of nonfinite-loss, inf-loss, overflow-grads, zero-grads, nan-weights, STEPS "all" or
 * a comma list of N and N-M (steps as steps.csv numbers them, from 0).
 * 0, or -1 with a one-line reason naming the part that is wrong. */
int train_fault_parse(const char *spec, train_fault *faults, int *n_faults, char *msg,
                      size_t msg_len);
/* The fault of step (the first clause that names it), or TRAIN_FAULT_NONE. */
train_fault_kind train_fault_at(const train_fault *faults, int n_faults, int64_t step);

/* Data-parallel training (train_dp.c).  With world N > 1 each step's global batch is N
 * shards of --accumulate micro-batches of --batch samples: rank r's micro-batch k of the
 * epoch's step b is the micro-batch (b N + r) M + k of the epoch's order (M = --accumulate),
 * so N ranks read what one process with --accumulate N M reads, in the same order, and the
 * dropout masks are those of the same micro-batch numbers.  Each rank's gradients (summed
 * over its micro-batches, divided by M) are all-reduced (allreduce.h, the --allreduce preset)
 * before the unscale and the finite check, so found_inf is decided after the reduction, as
 * the frameworks do.  In one process (--world N) the ranks run one after the other and
 * ar_reduce sums them; under mpirun every process is one rank (train_comm below, given by
 * `ampscope train`) and ar_mpi_allreduce sums them with the same bits.  The logged loss is
 * the mean of the ranks' losses, summed in rank order. */
#define TRAIN_MAX_WORLD 4096
struct ar_config;
struct ar_stats;
/* The ranks of an MPI launch, as the training loop needs them (app/train_mpi.c).  Every
 * function is collective and returns 0 or nonzero with a message. */
typedef struct train_comm {
    int rank, size;
    void *ctx;
    /* this rank's n gradient values into out (may be grad): the all-reduce of every rank's */
    int (*allreduce)(void *ctx, const struct ar_config *c, const float *grad, float *out, size_t n,
                     double loss_scale, struct ar_stats *stats, char *msg, size_t msg_len);
    /* values[0..n) become the largest of every rank's, element by element */
    int (*max_int)(void *ctx, int *values, int n, char *msg, size_t msg_len);
    /* all[k] = rank k's mine, on every rank */
    int (*gather)(void *ctx, double mine, double *all, char *msg, size_t msg_len);
} train_comm;

/* An option as given: its name (without "--") and its text (NULL for a flag). */
typedef struct train_given {
    const char *key, *text;
} train_given;
#define TRAIN_MAX_GIVEN 256

typedef struct train_options {
    const char *net;
    net_size size;          /* simplenet: --width, --depth */
    prec_options prec;      /* mode, dtype, op lists, pins (pins resolved after the net is built) */
    const char *pin_spec;   /* --layer-precision */
    const char *white_list; /* --white-list (the last; train_prepare applies each in order) */
    const char *black_list; /* --black-list (the last; likewise) */
    ak_dtype stats_dtype;   /* target format of the statistics (default: the mode's low format) */
    const char *backend;    /* cpu, cuda, auto */
    const char *data_dir;   /* Fashion-MNIST (NULL: Debian's) */
    const char *out_dir;
    const char
        *owner_dir; /* the study whose folder out_dir lies in (a sweep, reproduce), or NULL */
    bool force;     /* --force: replace what out_dir holds (ampscope's files only) */
    uint64_t seed;
    int64_t epochs, steps; /* steps > 0 overrides epochs */
    size_t batch;
    size_t subset;     /* first N training samples (0: all) */
    size_t samples;    /* simplenet: synthetic samples per epoch */
    ak_opt_config opt; /* optimizer and lr; round.mode RNE or stochastic */
    ak_scaler_config scaler;
    int64_t stats_every, hist_every;   /* 0: never */
    int64_t trace_every;               /* the gradient trace (trace.csv): every N steps, 0 never */
    int64_t diverge_after;             /* ampscope's rule: overflowing steps in a row that end the
                                          run (0: never; -1: from the scaler, train_limits.c) */
    bool progress;                     /* a progress line on stderr */
    bool resume;                       /* continue the run in out_dir from its checkpoint */
    const char *init_path;             /* --init: start from these weights */
    int64_t checkpoint_every;          /* steps between checkpoints (0: each epoch's end only) */
    int64_t accumulate;                /* micro-batches per update (1: none) */
    int64_t world;                     /* data-parallel ranks (1: none); --world or MPI's size */
    const struct ar_config *allreduce; /* --allreduce (NULL: pytorch-fp32) */
    const struct train_comm *comm;     /* MPI's ranks (NULL: one process; not an option) */
    float clip_norm;         /* clip the unscaled gradients' global 2-norm to this (0: no) */
    const char *scaler_name; /* --loss-scale as given (for the record's notes) */
    train_fault faults[TRAIN_MAX_FAULTS]; /* --fault (testing) */
    int n_faults;
    const char *version, *git_revision;
    /* the options as given, in order (topt_set): run.json records them, then what the
     * defaults resolved to */
    train_given given[TRAIN_MAX_GIVEN];
    int n_given;
    int n_recorded; /* --resume: given[0..n_recorded) were replayed from run.json */
} train_options;

/* Exit-status classes of a run. */
enum train_status {
    TRAIN_OK = 0,
    TRAIN_EINPUT = -2,     /* bad options or data: nothing was trained */
    TRAIN_EFAIL = -1,      /* anything else (I/O, a kernel error) */
    TRAIN_DIVERGED = -3,   /* a non-finite loss in O0 or without loss scaling, NaN or inf in
                              the stored weights, a loss scale grown to inf, the framework's
                              stop (DeepSpeed, MindSpore's manager) or --diverge-after
                              overflowing steps in a row (train_limits.c) */
    TRAIN_INTERRUPTED = -4 /* SIGINT/SIGTERM: stopped after a whole step, logs written */
};

void train_options_default(train_options *o);
/* Runs the training; returns a train_status with the reason in msg. */
int train_run(const train_options *o, char *msg, size_t msg_len);
/* The checks train_run makes before it creates anything (the net, the
 * precision lists and pins, the scaler): 0, or TRAIN_EINPUT with the same
 * message train_run would give. */
int train_check(const train_options *o, char *msg, size_t msg_len);

#endif
