/* reproduce_internal.h: what the files of reproduce/ share: the run plan per
 * level, the study's state, training a run, reading records, CSV files in
 * OUT, and one function per study section. */
#ifndef AMPSCOPE_REPRODUCE_INTERNAL_H
#define AMPSCOPE_REPRODUCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h"
#include "fpe.h"
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
    double est_minutes;                    /* on a 2-core CPU */
    const char *deep_steps, *deep_subset;  /* deepmlp: loss scaling, its scale choice */
    const char *probe_steps, *probe_batch; /* resnet, transformer: underflow per layer */
} repro_plan;

/* deepmlp's optimizer (its default init trains slowly, with plain SGD not
 * at all at these sizes) and batch, in every study that trains it */
#define REPRO_DEEP_OPTIMIZER "adam"
#define REPRO_DEEP_LR        "1e-4"
#define REPRO_DEEP_BATCH     "64"

/* indexed by repro_level */
extern const repro_plan repro_plans[];

/* The new nets' sizes per level (fp32list.c, embedding.c, bf16.c, batchnorm.c) */
typedef struct repro_net_plan {
    const char *tf_width, *tf_depth, *tf_heads, *tf_context, *tf_steps, *tf_lr; /* transformer */
    const char *rn_width, *rn_subset, *rn_steps;                                /* resnet */
    const char *stats_every;
} repro_net_plan;

/* indexed by repro_level */
extern const repro_net_plan repro_net_plans[];

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
/* The same with the pairs in an array ended by a NULL name (at most
 * REPRO_MAX_PAIRS pairs). */
#define REPRO_MAX_PAIRS 32
int repro_train_pairs(repro_study *s, const char *name, double *seconds, const char *const *pairs);
/* The MLP's fp32 run: its histograms serve the underflow study, its
 * gradient trace (recorded every step by default) the scaler studies. */
int repro_train_mlp_o0(repro_study *s);
/* LeNet-5's fp32 run (the underflow studies: histograms, statistics). */
int repro_train_lenet5_o0(repro_study *s);
/* OUT/runs/run/file */
void repro_run_file(const repro_study *s, char *buf, size_t len, const char *run, const char *file);
/* The summary of runs/run; 0, or -1 with the reason in s->msg. */
int repro_summarize(repro_study *s, const char *run, rec_run_summary *out);

/* ---- underflow.c ---- */
/* The log2 histogram of kind k in run's hist.csv, merged over layers and
 * over every recorded step (all_steps) or only the last one.  0, or -1 with
 * the reason in s->msg. */
int repro_merged_hist(repro_study *s, const char *run, rec_kind k, bool all_steps,
                      uint64_t hist[AK_HIST_BINS]);

/* ---- loss_scaling.c: the deep MLP's runs ---- */
/* runs/deepmlp-<setting>-s<seed>: setting 0 fp32 (O0; seed 1 records the
 * gradient trace), 1 fp16 O2 without loss scaling, 2 with dynamic scaling;
 * seed 1 to 3. */
void repro_deep_run_name(char *buf, size_t len, int setting, int seed);
int repro_train_deep(repro_study *s, int setting, int seed);

/* ---- scale_choice.c: the grid, its recommendation, its validation ---- */
typedef struct repro_scale_points {
    const char *factor, *window;
} repro_scale_points;
typedef struct repro_scale_net {
    const char *id, *title;           /* the section */
    const char *label;                /* the net in the text: "the MLP" */
    const char *net;                  /* train's --net; names the runs: runs/mlp-O2-f2-w10 */
    const char *prefix;               /* of the CSV files and figures: "" or "deepmlp_" */
    const char *const *train;         /* the runs' other options: name, text pairs ended by NULL */
    const repro_scale_points *points; /* the validation runs */
    size_t n_points;
} repro_scale_net;
/* The section: the default grid over t (the net's fp32 trace) from
 * PyTorch's scaler, its recommendation, and the validation runs. */
struct an_trace;
void repro_scale_choice(repro_study *s, const struct an_trace *t, const repro_scale_net *n);

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

/* ---- fp_note.c: what the report says about one emulated result ---- */
typedef enum repro_fp_class {
    REPRO_FP_ZERO,
    REPRO_FP_SUBNORMAL,
    REPRO_FP_NORMAL,
    REPRO_FP_INF,
    REPRO_FP_NAN
} repro_fp_class;

typedef struct repro_fp_result {
    fpe_format_id format;
    uint32_t bits;
    double value, exact; /* the result's value, and the exact value it rounds */
    uint8_t flags;       /* the fpe_flag bits the emulator raised making it */
    repro_fp_class cls;
    int sig_bits;   /* significant bits: p when normal, fewer when subnormal, 0 otherwise */
    double rel_err; /* |value - exact| / |exact|; 0 when equal */
} repro_fp_result;

/* The class of a bit pattern from its exponent and fraction fields (the
 * format's descriptor, fpe_formats); *sig_bits (may be NULL) as above. */
repro_fp_class repro_fp_classify(fpe_format_id f, uint32_t bits, int *sig_bits);
/* "zero", "subnormal", "normal", "infinity", "NaN" */
const char *repro_fp_class_name(repro_fp_class c);
/* The format's largest finite value and 1.0, as bit patterns. */
uint32_t repro_fp_max_bits(fpe_format_id f);
uint32_t repro_fp_one_bits(fpe_format_id f);
/* The value of a bit pattern (exact, through the emulator). */
double repro_fp_value(fpe_format_id f, uint32_t bits);
/* The result bits of rounding exact, the emulator's flags while doing so. */
void repro_fp_describe(fpe_format_id f, uint32_t bits, double exact, uint8_t flags,
                       repro_fp_result *out);
/* x as 2^e when a power of two beyond 2^+-16, else %.10g. */
void repro_fp_number(char *buf, size_t len, double x);
/* The note, from the class, the flags and the numbers only, without commas:
 * "normal: 11 significant bits; rounded: relative error 0.00043",
 * "subnormal: 3 significant bits of 11; exact", "zero; underflow: rounded to
 * 0 (the smallest subnormal is 2^-24)", "infinity; overflow: rounded past
 * the largest finite fp16 (65504)". */
void repro_fp_note(const repro_fp_result *r, char *buf, size_t len);

/* ---- counts.c: what the new nets' sections read from a record ---- */
typedef struct repro_counts {
    rec_run_summary sum;
    int64_t found_inf;      /* steps that found an overflow (steps.csv) */
    int64_t nonfinite_loss; /* steps whose loss is not finite */
    uint64_t nonfinite;     /* non-finite values over the recorded steps (tensors.csv) */
    uint64_t grad_nonzero;  /* nonzero weight and activation gradients, recorded steps */
    uint64_t grad_flushed;  /* of those, flushed to zero by the run's format */
    double flushed_frac;    /* grad_flushed / grad_nonzero (NaN: none) */
    double grad_amax;       /* the largest finite |gradient| recorded (as stored: scaled) */
} repro_counts;

/* The counts of runs/run, over every layer (layer NULL) or one; 0, or -1
 * with the reason in s->msg. */
int repro_count_run(repro_study *s, const char *run, const char *layer, repro_counts *c);
/* d, or +0 when it prints as zero with 4 decimals (no "-0.0000"). */
double repro_round4(double d);
/* OUT/csv_name: x (step), y (loss, empty when not finite), series (the
 * run's name) of runs[0..n); 0, or -1 with the reason in s->msg. */
int repro_loss_curves(repro_study *s, const char *csv_name, const char *const *runs, size_t n);
/* Trains the transformer run `name` at the level's size: mode, dtype,
 * loss-scale, then up to one more option (key NULL: none); 0 or a
 * REPRO_E* status with the reason in s->msg (transformer.c). */
int repro_train_tf(repro_study *s, const char *name, const char *mode, const char *dtype,
                   const char *scale, const char *key, const char *value);
/* The same with a second option (key2 NULL: none). */
int repro_train_tf2(repro_study *s, const char *name, const char *mode, const char *dtype,
                    const char *scale, const char *key, const char *value, const char *key2,
                    const char *value2);

/* ---- embedding_probe.c: what the embedding's fp16 sums lose, measured directly ---- */
/* windows of the training text in the probe's batch (the run's own batch) */
#define REPRO_PROBE_WINDOWS 64
typedef struct repro_embed_probe {
    size_t batch, tokens; /* windows, and the tokens they hold */
    size_t rows_touched;  /* distinct tokens: rows of wte with a nonzero sum */
    int top_token;        /* the most frequent token (a wte row) */
    size_t top_count;     /* its count: the terms its row sums */
    uint64_t nonzero;     /* wte gradient elements nonzero with fp32 sums */
    uint64_t differ;      /* elements whose fp16-sum gradient differs */
    double rel_l2;        /* ||g16 - g32|| / ||g32|| over wte */
    double top_rel_l2;    /* the same over the most frequent token's row */
} repro_embed_probe;
/* runs/run's checkpoint at scale (its final loss scale): 0, or -1 with the
 * reason in s->msg. */
int repro_embedding_probe(repro_study *s, const char *run, double scale, repro_embed_probe *out);

/* ---- one function per section, in the report's order ---- */
void repro_study_formats(repro_study *s);   /* formats.c */
void repro_study_underflow(repro_study *s); /* underflow.c */
void repro_study_rounding(repro_study *s);  /* rounding.c */
void repro_study_modes(repro_study *s);     /* modes.c */
void repro_study_scalers(repro_study *s);   /* scalers.c: 5, 6 and the validation */
void repro_study_fp32list(repro_study *s);  /* fp32list.c: softmax, LayerNorm in fp16 */
void repro_study_batchnorm(repro_study *s); /* batchnorm.c: keep_batchnorm_fp32 */
void repro_study_embedding(repro_study *s); /* embedding.c: the rows' sums in fp16 */
void repro_study_bf16(repro_study *s);      /* bf16.c: bf16 needs no loss scale */
/* communication.c: the gradient all-reduce in fp16, bf16 and fp32 */
void repro_study_communication(repro_study *s);

/* ---- communication_mpi.c: a data-parallel run simulated and under mpirun ---- */
typedef struct repro_dp_row {
    int world;
    char sim_run[32]; /* runs/dp-w<N>: --world N in this process */
    bool ran;         /* the mpirun run finished */
    bool same_checkpoint, same_steps, same_counters;
    char mpi_note[512]; /* "identical", "DIFFERENT", "not run: ...", "failed: ..." */
} repro_dp_row;
/* Trains runs/dp-w<world> (train's pairs, ended by NULL, and --world), then the same under
 * mpirun -np world in a temporary folder, and compares them.  0 (a missing or failing
 * mpirun is a note in row), or -1 with the reason in s->msg (the simulated run failed). */
int repro_dp_compare(repro_study *s, int world, const char *const *pairs, repro_dp_row *row);
void repro_study_loss_scaling(repro_study *s);      /* loss_scaling.c */
void repro_study_underflow_layers(repro_study *s);  /* underflow_layers.c */
void repro_study_deep_scale_choice(repro_study *s); /* scale_choice.c: on deepmlp */

#endif
