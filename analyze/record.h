/* record.h: the run directory's schema, in one place.
 *
 * A training run writes, under its --out directory:
 *   run.json                what ran: options, versions, backend, device, times
 *   steps.csv               one row per step
 *   tensors.csv             precision statistics per layer and tensor kind
 *   updates.csv             rounding loss of the optimizer's updates per layer
 *   hist.csv                log2 histograms per layer and tensor kind
 *   eval.csv                test loss and accuracy per epoch
 *   checkpoint.safetensors  (safetensors.h)
 * experiments/ writes them through the writers below; plots/ and `recommend`
 * read them through the readers, so the column lists exist only here.
 *
 * CSV.  Comma-separated, one header line, no quoting: layer names are
 * restricted (rec_name_ok) so that no field needs it.  Numbers read back
 * exactly: fp32 values print with %.9g, doubles with %.17g, integers in
 * full; NaN and infinities print as nan, -nan, inf, -inf (their payloads are
 * not kept).  A fraction whose denominator is zero (0/0, say no nonzero
 * elements) is an empty field, read back as NaN: it is undefined, not 0, and
 * gnuplot skips an empty field as missing data.  The denominator of every
 * fraction is in its column name (flushed_frac_of_nonzero).
 *
 * Logs are append-only and flushed a step at a time (rec_log_flush), so a
 * killed run keeps every completed row; a resumed run cuts each log back to
 * its checkpoint's step first (rec_log_open), so every step's rows appear
 * exactly once.
 *
 * Errors as in atomic_file.h: an AN_* status and a message naming the file
 * (and line: "run/steps.csv:17: expected 7 fields, got 5").
 *
 * Implemented by job: record.c (names, rows from the kernels' results),
 * record_time.c (the calendar), record_log.c (a log's file: open, resume,
 * flush, close), record_write.c (the writers), record_read.c (the readers,
 * on csv.h), record_json.c (run.json).
 */
#ifndef AMPSCOPE_RECORD_H
#define AMPSCOPE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- file names and column lists ------------------------------------------ */
#define REC_RUN_JSON       "run.json"
#define REC_CHECKPOINT     "checkpoint.safetensors"
#define REC_STEPS_CSV      "steps.csv"
#define REC_TENSORS_CSV    "tensors.csv"
#define REC_UPDATES_CSV    "updates.csv"
#define REC_HIST_CSV       "hist.csv"
#define REC_EVAL_CSV       "eval.csv"
#define REC_TRACE_CSV      "trace.csv"
#define REC_TRACE_HIST_CSV "trace_hist.csv"
#define REC_ALLREDUCE_CSV  "allreduce.csv"

/* found_inf and skipped are 0 or 1. */
#define REC_STEPS_HEADER "step,epoch,loss,loss_scale,found_inf,skipped,lr"
/* From an ak_stats: kind is weight|activation|weight_grad|activation_grad,
 * dtype the target format (fp16|bf16|fp32), scale the factor the statistics
 * were taken at.  zero = count - nonzero - nonfinite. */
#define REC_TENSORS_HEADER                                                                         \
    "step,layer,kind,dtype,scale,count,nonzero,nonfinite,flushed,flushed_frac_of_nonzero,"         \
    "subnormal,subnormal_frac_of_nonzero,overflowed,overflow_frac_of_nonzero,zero_frac_of_count,"  \
    "amax"
/* From an ak_update_loss: rel_update_error = sum |applied - intended| /
 * sum |intended|; skipped counts update calls skipped for found-inf. */
#define REC_UPDATES_HEADER                                                                         \
    "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,rel_update_error,"              \
    "predicted_lost,predicted_lost_frac_of_nonzero,skipped"
/* Long format, only nonzero bins: bin is e for the binade 2^e <= |x| <
 * 2^(e+1), or "zero", or "nonfinite". */
#define REC_HIST_HEADER "step,layer,kind,bin,count"
#define REC_EVAL_HEADER "epoch,step,test_loss,test_accuracy"
/* The gradient trace, one row per step (analyze/replay.h replays loss-scale
 * policies over it): over every activation and weight gradient of the step
 * (of the scaled loss, as stored), their count, zeros, non-finite values
 * and max |g| over the finite ones (ak_stats.amax), the scale
 * the step's loss was multiplied by and whether the step found an
 * overflow (0 or 1). */
#define REC_TRACE_HEADER "step,loss_scale,found_inf,count,zero,nonfinite,amax"
/* The same gradients' log2 histogram, long format, nonzero bins only (bin
 * as in hist.csv). */
#define REC_TRACE_HIST_HEADER "step,bin,count"
/* A data-parallel run's gradient all-reduce, one row a step (experiments/allreduce/allreduce.h,
 * ar_stats): the (rank, element) inputs that were nonzero, flushed by the casts and by the
 * pre-division, subnormal as messages, made inf by the cast; results inf where every message
 * was finite, non-finite, zero where the exact mean is not, subnormal; the largest error and
 * the relative 2-norm error against the exact mean of the ranks' gradients (unscaled); whether
 * the result holds inf or NaN (the step's found_inf, decided after the reduction). */
#define REC_ALLREDUCE_HEADER                                                                       \
    "step,elements,inputs_nonzero,flushed_cast,flushed_prescale,subnormal_messages,"               \
    "overflow_cast,overflow_in_sum,nonfinite_results,zero_results,subnormal_results,"              \
    "max_abs_error,rel_l2_error,found_inf"

typedef enum rec_table {
    REC_STEPS,
    REC_TENSORS,
    REC_UPDATES,
    REC_HIST,
    REC_EVAL,
    REC_TRACE,
    REC_TRACE_HIST,
    REC_ALLREDUCE
} rec_table;
#define REC_TABLES 8
const char *rec_table_file(rec_table t);   /* "steps.csv", ...; NULL for an invalid id */
const char *rec_table_header(rec_table t); /* REC_STEPS_HEADER, ...; NULL for an invalid id */

/* ---- names ----------------------------------------------------------------------- */
/* Layer names: 1 to REC_NAME_MAX - 1 characters from [A-Za-z0-9_.-]
 * ("fc1", "features.0"). */
#define REC_NAME_MAX 64
bool rec_name_ok(const char *name);

typedef enum rec_kind {
    REC_WEIGHT = 0,
    REC_ACTIVATION = 1,
    REC_WEIGHT_GRAD = 2,
    REC_ACTIVATION_GRAD = 3
} rec_kind;
#define REC_KINDS 4
const char *rec_kind_name(rec_kind k);            /* "weight", ...; "?" for an invalid id */
int rec_kind_parse(const char *s, rec_kind *k);   /* AN_OK or AN_EINVAL */
int rec_dtype_parse(const char *s, ak_dtype *dt); /* "fp16"|"bf16"|"fp32" (ak_dtype_name) */

/* A histogram bin's label: "zero", "nonfinite" or the binade's e ("-24").
 * buf holds at least REC_BIN_LABEL_MAX bytes.  Returns buf, or NULL for an
 * invalid bin. */
#define REC_BIN_LABEL_MAX 16
char *rec_hist_bin_label(int bin, char *buf);
int rec_hist_bin_parse(const char *s, int *bin); /* label -> AK_HIST_* index */

/* ISO 8601 UTC, "2025-01-31T12:00:00Z".  buf holds REC_TIME_MAX bytes. */
#define REC_TIME_MAX 32
int rec_time_format(int64_t unix_seconds, char *buf);
int rec_time_parse(const char *s, int64_t *unix_seconds);

/* ---- rows ------------------------------------------------------------------------- */
typedef struct rec_step_row {
    int64_t step;
    int64_t epoch;
    float loss;
    float loss_scale;
    bool found_inf;
    bool skipped;
    float lr;
} rec_step_row;

typedef struct rec_tensor_row {
    int64_t step;
    char layer[REC_NAME_MAX];
    rec_kind kind;
    ak_dtype dtype;
    float scale;
    uint64_t count, nonzero, nonfinite;
    uint64_t flushed;
    double flushed_frac_of_nonzero;
    uint64_t subnormal;
    double subnormal_frac_of_nonzero;
    uint64_t overflowed;
    double overflow_frac_of_nonzero;
    double zero_frac_of_count;
    double amax;
} rec_tensor_row;

typedef struct rec_update_row {
    int64_t step;
    char layer[REC_NAME_MAX];
    uint64_t elements;
    uint64_t nonzero_updates;
    uint64_t lost;
    double lost_frac_of_nonzero;
    double rel_update_error;
    uint64_t predicted_lost;
    double predicted_lost_frac_of_nonzero;
    uint64_t skipped;
} rec_update_row;

typedef struct rec_hist_row {
    int64_t step;
    char layer[REC_NAME_MAX];
    rec_kind kind;
    int bin; /* AK_HIST_ZERO, AK_HIST_BIN(e), AK_HIST_NONFINITE */
    uint64_t count;
} rec_hist_row;

typedef struct rec_eval_row {
    int64_t epoch;
    int64_t step; /* the step after which the evaluation ran */
    double test_loss;
    double test_accuracy; /* in [0, 1] */
} rec_eval_row;

typedef struct rec_trace_row {
    int64_t step;
    double loss_scale;
    int found_inf; /* 0 or 1 */
    uint64_t count, zero, nonfinite;
    double amax;
} rec_trace_row;

typedef struct rec_allreduce_row {
    int64_t step;
    uint64_t elements, inputs_nonzero, flushed_cast, flushed_prescale, subnormal_messages;
    uint64_t overflow_cast, overflow_in_sum, nonfinite_results, zero_results, subnormal_results;
    double max_abs_error, rel_l2_error;
    int found_inf; /* 0 or 1 */
} rec_allreduce_row;

typedef struct rec_trace_hist_row {
    int64_t step;
    int bin; /* AK_HIST_* index */
    uint64_t count;
} rec_trace_hist_row;

/* The rows the writers derive from the kernels' results: fractions are
 * num / den in double, NaN when den is 0. */
int rec_tensor_row_of(rec_tensor_row *row, int64_t step, const char *layer, rec_kind kind,
                      ak_dtype dtype, float scale, const ak_stats *s);
int rec_update_row_of(rec_update_row *row, int64_t step, const char *layer,
                      const ak_update_loss *u);

/* ---- writing the logs ------------------------------------------------------------------- */
typedef struct rec_log rec_log;

/* Opens the CSV log at path for appending, creating it if needed.  The
 * header line is written when the file is empty; otherwise the file's first
 * line must equal header (AN_EFORMAT).  A last line without its newline
 * (a write cut short) is removed, and so is every row from the first one
 * whose step column is greater than resume_after_step: pass the
 * checkpoint's step to resume, or -1 for a fresh run, which keeps no rows
 * (refusing to reuse a run directory is the caller's choice).  header must
 * have a column named "step".  Rows are buffered until rec_log_flush. */
rec_log *rec_log_open(const char *path, const char *header, int64_t resume_after_step, char *msg,
                      size_t msg_len);
/* What a log must hold before a resume cuts it back (rec_log_check): rows
 * of steps first, first + every, first + 2 every, ... in order, each step
 * once (one_row: one row; else one or more rows in a block), up to at least
 * the last such step <= through.  every 0: no rows at all; through -1:
 * none required. */
typedef struct rec_log_expect {
    int64_t first, every, through;
    bool one_row;
} rec_log_expect;
/* Checks the log at path as rec_log_open(path, header, e->through) would
 * keep it, and writes nothing: the header (one cut short only when no row is
 * required), every kept line whole with the header's fields and an integer
 * step, in e's order with no gap and no step twice, and the kept rows
 * reaching the last required step (a log cut short is damage, not a kill:
 * its rows were synced before the checkpoint).  Rows past e->through are
 * not checked: rec_log_open drops them, and so is a last line without its
 * newline.  A missing file passes when no row is required.  AN_OK, or
 * AN_EFORMAT / AN_EIO with one line naming the file (and the line). */
int rec_log_check(const char *path, const char *header, const rec_log_expect *e, char *msg,
                  size_t msg_len);
/* rec_log_open(dir/rec_table_file(t), rec_table_header(t), ...). */
rec_log *rec_log_open_table(const char *dir, rec_table t, int64_t resume_after_step, char *msg,
                            size_t msg_len);
/* Hands the rows written so far to the kernel (fflush, not fsync: they
 * survive the process being killed, not the machine losing power).  Call
 * it after each step's rows. */
int rec_log_flush(rec_log *log);
/* Flushes and fsyncs: the rows written so far survive the machine losing
 * power too.  Call it before a checkpoint is written, so that a checkpoint
 * on disk never runs ahead of the rows it cuts the logs back to. */
int rec_log_sync(rec_log *log);
/* Flushes and closes; NULL is harmless. */
int rec_log_close(rec_log *log, char *msg, size_t msg_len);
const char *rec_log_error(const rec_log *log); /* the last error's message, "" if none */
const char *rec_log_path(const rec_log *log);

/* One row each.  The log must have been opened with the table's header
 * (AN_EINVAL otherwise); layer names must pass rec_name_ok, steps and
 * epochs be >= 0.  Errors are recorded in the log (rec_log_error). */
int rec_write_step(rec_log *log, const rec_step_row *row);
int rec_write_tensor(rec_log *log, const rec_tensor_row *row);
int rec_write_update(rec_log *log, const rec_update_row *row);
int rec_write_hist(rec_log *log, const rec_hist_row *row);
int rec_write_eval(rec_log *log, const rec_eval_row *row);
int rec_write_trace(rec_log *log, const rec_trace_row *row);
int rec_write_trace_hist(rec_log *log, const rec_trace_hist_row *row);
int rec_write_allreduce(rec_log *log, const rec_allreduce_row *row);
/* Straight from the kernels' results (via rec_*_row_of). */
int rec_write_tensor_stats(rec_log *log, int64_t step, const char *layer, rec_kind kind,
                           ak_dtype dtype, float scale, const ak_stats *s);
int rec_write_update_loss(rec_log *log, int64_t step, const char *layer, const ak_update_loss *u);
/* One row per nonzero bin of s->hist, in bin order (zero first). */
int rec_write_hist_stats(rec_log *log, int64_t step, const char *layer, rec_kind kind,
                         const ak_stats *s);
/* A step's trace from the statistics s of all its gradients: the trace row
 * (amax = s->amax) in trace, one trace_hist row per nonzero bin in hist. */
int rec_write_trace_stats(rec_log *trace, rec_log *hist, int64_t step, double loss_scale,
                          bool found_inf, const ak_stats *s);

/* ---- reading the logs ------------------------------------------------------------------- */
/* Reads every row of a log into a malloc'ed array (*rows, free() it; NULL
 * when there are none).  The header must be the table's, every line must
 * have its fields and every field parse (AN_EFORMAT, naming file, line and
 * column).  A last line without its newline (a run killed mid-write) is not
 * a row and is ignored. */
int rec_read_steps(const char *path, rec_step_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_tensors(const char *path, rec_tensor_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_updates(const char *path, rec_update_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_hist(const char *path, rec_hist_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_eval(const char *path, rec_eval_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_allreduce(const char *path, rec_allreduce_row **rows, size_t *n, char *msg,
                       size_t msg_len);
int rec_read_trace(const char *path, rec_trace_row **rows, size_t *n, char *msg, size_t msg_len);
int rec_read_trace_hist(const char *path, rec_trace_hist_row **rows, size_t *n, char *msg,
                        size_t msg_len);

/* ---- JSON files ------------------------------------------------------------------------ */
/* Writes the JSON value j (a jansson json_t) to path atomically (af_write),
 * dumped with jansson's flags and ended by a newline.  AN_OK, or an error
 * naming path. */
struct json_t;
int rec_write_json(const char *path, const struct json_t *j, size_t flags, char *msg,
                   size_t msg_len);

/* ---- a run at its end ----------------------------------------------------------------- */
/* What the record of run_dir says at its end: its steps and skipped steps,
 * the final loss as the mean of the last 10% of the steps' losses (at
 * least one: one batch's loss is noisy), the scale of the last step, and
 * the last evaluation's test accuracy (NaN when eval.csv is absent or has
 * no rows).  AN_OK; an error naming the file when steps.csv is missing,
 * malformed or empty, or eval.csv is malformed. */
typedef struct rec_run_summary {
    int64_t steps, skipped;
    double final_loss, final_scale, test_accuracy;
} rec_run_summary;
int rec_summarize_run(const char *run_dir, rec_run_summary *out, char *msg, size_t msg_len);

/* ---- run.json ----------------------------------------------------------------------------- */
/* {
 *   "record_version": 1,
 *   "ampscope_version": "0.1.0", "git_revision": "9687ec7", "backend": "cuda",
 *   "device": "NVIDIA H100 80GB HBM3",
 *   "start_time": "2025-01-31T12:00:00Z", "end_time": null (until the run ends),
 *   "given": ["--net", "lenet5", "--epochs", "5", "--no-progress", ...],
 *   "resumes": [{"step": 120, "given": ["--epochs", "8"]}, ...],
 *   "options": {"net": "lenet5", "epochs": 5, "lr": 0.01, ...}
 * }
 * "given" is the command's options as given, argv-style (a flag alone, an
 * option with a value as two strings); each entry of "resumes" the options a
 * resume gave on top of them and the step from which they apply.  Records
 * written before "given" existed have neither.  Options keep the order they
 * were set in; values are strings, integers or finite reals (a real keeps its
 * exact double through %.17g). */
typedef struct rec_run rec_run;

#define REC_NO_TIME INT64_MIN /* start/end not recorded (end_time null) */

/* A new record; the strings are copied (NULL is taken as "").  NULL when
 * out of memory. */
rec_run *rec_run_new(const char *version, const char *git_revision, const char *backend,
                     const char *device);
void rec_run_free(rec_run *r); /* NULL is harmless */

const char *rec_run_version(const rec_run *r);
const char *rec_run_git_revision(const rec_run *r);
const char *rec_run_backend(const rec_run *r);
const char *rec_run_device(const rec_run *r);
int64_t rec_run_start(const rec_run *r); /* unix seconds, or REC_NO_TIME */
int64_t rec_run_end(const rec_run *r);
void rec_run_set_start(rec_run *r, int64_t unix_seconds);
void rec_run_set_end(rec_run *r, int64_t unix_seconds);

typedef enum rec_option_type {
    REC_OPT_STRING = 0,
    REC_OPT_INT = 1,
    REC_OPT_REAL = 2
} rec_option_type;
typedef struct rec_option {
    const char *key;
    rec_option_type type;
    const char *string; /* REC_OPT_STRING */
    int64_t integer;    /* REC_OPT_INT */
    double real;        /* REC_OPT_REAL */
} rec_option;

/* Setting a key again replaces its value.  Keys must be non-empty, keys
 * and strings valid UTF-8, reals finite (else AN_EINVAL). */
int rec_run_set_string(rec_run *r, const char *key, const char *value);
int rec_run_set_int(rec_run *r, const char *key, int64_t value);
int rec_run_set_real(rec_run *r, const char *key, double value);
size_t rec_run_option_count(const rec_run *r);
/* The i-th option in order; pointers stay valid until r changes. */
int rec_run_option_at(const rec_run *r, size_t i, rec_option *opt);
/* The option named key: true, or false when there is none. */
bool rec_run_option(const rec_run *r, const char *key, rec_option *opt);

/* The argv-style lists: list 0 is "given", list i >= 1 the i-th entry of
 * "resumes".  rec_run_arg_lists is 0 for a record without "given", else 1 +
 * the resumes; rec_run_args the length of a list (0 when there is no such
 * list) and, when step is not NULL, the step it applies from (0 for
 * "given"); rec_run_arg its j-th string (NULL past the end). */
size_t rec_run_arg_lists(const rec_run *r);
size_t rec_run_args(const rec_run *r, size_t list, int64_t *step);
const char *rec_run_arg(const rec_run *r, size_t list, size_t j);
/* Sets "given" (replacing it; "resumes" emptied) / appends a resume at step
 * (>= 0; a record with "given" only).  Strings valid UTF-8, else AN_EINVAL. */
int rec_run_set_given(rec_run *r, const char *const *args, size_t n);
int rec_run_add_resume(rec_run *r, int64_t step, const char *const *args, size_t n);
/* Whether s can be a string of run.json (valid UTF-8). */
bool rec_run_text_ok(const char *s);

/* Writes r atomically (af_write) as above. */
int rec_run_write(const rec_run *r, const char *path, char *msg, size_t msg_len);
/* Reads and validates a run.json: NULL with the reason in msg on failure. */
rec_run *rec_run_read(const char *path, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
