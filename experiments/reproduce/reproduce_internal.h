/* reproduce_internal.h: what the files of reproduce/ share: the run plan per
 * level, the study's state, training a run, reading records, CSV files in
 * OUT, and one function per study section. */
#ifndef AMPSCOPE_REPRODUCE_INTERNAL_H
#define AMPSCOPE_REPRODUCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic_file.h"
#include "record.h"
#include "report.h"
#include "reproduce.h"

/* ---- runs.c: sizes per level ---- */
typedef struct repro_plan {
    const char *name;
    const char *mlp_steps;                      /* mode table, trace, validation: mlp steps */
    const char *mlp_subset;                     /* training samples (60000: all) */
    const char *lenet_steps;                    /* the O0 LeNet-5 run (underflow study) */
    const char *sn_width, *sn_batch, *sn_steps; /* simplenet: rounding-error study */
    const char *stats_every, *hist_every;
    double est_minutes; /* on a 2-core CPU */
} repro_plan;

/* indexed by repro_level */
extern const repro_plan repro_plans[];

/* ---- the study's state ---- */
typedef struct repro_study {
    const repro_options *o;
    const repro_plan *plan;
    rp_report *rep;
    char msg[1024];
    int failures;     /* sections that could not be made */
    bool interrupted; /* a run stopped for SIGINT/SIGTERM: train nothing more */
    double t0;
} repro_study;

/* ---- reproduce.c ---- */
/* A progress line on stderr (o->progress), with the seconds since the start. */
void repro_progress(repro_study *s, const char *fmt, ...);
/* OUT/a/b, or OUT/a when b is NULL. */
void repro_path(const repro_study *s, char *buf, size_t len, const char *a, const char *b);
/* A note in the report for what, with the reason in s->msg; counts a failure. */
void repro_section_failed(repro_study *s, const char *what);

/* ---- runs.c ---- */
/* Trains runs/name with train's options given as name, text pairs after
 * seconds, ended by NULL; *seconds the wall time of the training (NULL: not
 * wanted).  A finished run is reused.  0, or a REPRO_E* status with the
 * reason in s->msg. */
int repro_train(repro_study *s, const char *name, double *seconds, ...);
/* The MLP's fp32 run: its histograms serve the underflow study, its
 * gradient trace (recorded every step by default) the scaler studies. */
int repro_train_mlp_o0(repro_study *s);
/* OUT/runs/run/file */
void repro_run_file(const repro_study *s, char *buf, size_t len, const char *run, const char *file);
/* The summary of runs/run; 0, or -1 with the reason in s->msg. */
int repro_summarize(repro_study *s, const char *run, rec_run_summary *out);

/* ---- csv.c: CSV files in OUT ---- */
typedef struct repro_csv {
    af_file f;
    bool ok;
} repro_csv;

/* Begins OUT/name with its header line; false with the reason in s->msg. */
bool repro_csv_open(repro_study *s, repro_csv *c, const char *name, const char *header);
/* One line (printf's format, no newline); nothing after a failure. */
void repro_csv_row(repro_csv *c, const char *fmt, ...);
/* Gives the file up (the reason is already in s->msg). */
void repro_csv_abort(repro_csv *c);
/* Commits the file; false with the reason in s->msg. */
bool repro_csv_close(repro_study *s, repro_csv *c);

/* ---- one function per section, in the report's order ---- */
void repro_study_formats(repro_study *s);   /* formats.c */
void repro_study_underflow(repro_study *s); /* underflow.c */
void repro_study_rounding(repro_study *s);  /* rounding.c */
void repro_study_modes(repro_study *s);     /* modes.c */
void repro_study_scalers(repro_study *s);   /* scalers.c: 5, 6 and the validation */

#endif
