/* train.h: training a reference network under a precision mode and a
 * loss-scale policy, with the numerical record of every step (train.c).
 * `ampscope train` (cmd_train.c) fills train_options from its command line. */
#ifndef AMPSCOPE_TRAIN_H
#define AMPSCOPE_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"
#include "nets.h"

typedef struct train_options {
    const char *net;
    net_size size;          /* simplenet: --width, --depth */
    prec_options prec;      /* mode, dtype, op lists, pins (pins resolved after the net is built) */
    const char *pin_spec;   /* --layer-precision */
    const char *white_list; /* --white-list */
    const char *black_list; /* --black-list */
    ak_dtype stats_dtype;   /* target format of the statistics (default: the mode's low format) */
    const char *backend;    /* cpu, cuda, auto */
    const char *data_dir;   /* Fashion-MNIST (NULL: Debian's) */
    const char *out_dir;
    uint64_t seed;
    int64_t epochs, steps; /* steps > 0 overrides epochs */
    size_t batch;
    size_t subset;     /* first N training samples (0: all) */
    size_t samples;    /* simplenet: synthetic samples per epoch */
    ak_opt_config opt; /* optimizer and lr; round.mode RNE or stochastic */
    ak_scaler_config scaler;
    int64_t stats_every, hist_every; /* 0: never */
    int64_t trace_every;             /* the gradient trace (trace.csv): every N steps, 0 never */
    int64_t diverge_after;           /* steps in a row at --min-scale that count as divergence */
    bool progress;                   /* a progress line on stderr */
    bool resume;                     /* continue the run in out_dir from its checkpoint */
    const char *init_path;           /* --init: start from these weights */
    int64_t checkpoint_every;        /* steps between checkpoints (0: each epoch's end only) */
    int64_t accumulate;              /* micro-batches per update (1: none) */
    float clip_norm; /* clip the unscaled gradients' global 2-norm to this (0: no) */
    const char *version, *git_revision;
    /* the command line, recorded in run.json */
    int argc;
    char **argv;
} train_options;

/* Exit-status classes of a run. */
enum train_status {
    TRAIN_OK = 0,
    TRAIN_EINPUT = -2,     /* bad options or data: nothing was trained */
    TRAIN_EFAIL = -1,      /* anything else (I/O, a kernel error) */
    TRAIN_DIVERGED = -3,   /* non-finite loss in O0, or the scale stuck at its floor */
    TRAIN_INTERRUPTED = -4 /* SIGINT/SIGTERM: stopped after a whole step, logs written */
};

void train_options_default(train_options *o);
/* Runs the training; returns a train_status with the reason in msg. */
int train_run(const train_options *o, char *msg, size_t msg_len);

#endif
