/* record_read.c: the readers of record.h's CSV logs, on csv.h: one parser
 * per table filling its row struct field by field (an error names the
 * file, line and column), the one loop that reads a log into an array of
 * rows, and the summary of a run at its end. */
#include "record.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"

static int get_name(const csv_row *c, int col, char *name)
{
    if (!rec_name_ok(c->fields[col])) return csv_bad_field(c, col, "a layer name");
    strcpy(name, c->fields[col]);
    return AN_OK;
}

static int get_kind(const csv_row *c, int col, rec_kind *k)
{
    return rec_kind_parse(c->fields[col], k) == AN_OK
               ? AN_OK
               : csv_bad_field(c, col, "weight, activation, weight_grad or activation_grad");
}

static int get_dtype(const csv_row *c, int col, ak_dtype *dt)
{
    return rec_dtype_parse(c->fields[col], dt) == AN_OK
               ? AN_OK
               : csv_bad_field(c, col, "fp16, bf16 or fp32");
}

static int get_bin(const csv_row *c, int col, int *bin)
{
    return rec_hist_bin_parse(c->fields[col], bin) == AN_OK
               ? AN_OK
               : csv_bad_field(c, col, "a binade exponent, zero or nonfinite");
}

/* Each parser fills one row from c->fields; the first failing field ends
 * it (the || chains stop there). */
static int parse_step_row(const csv_row *c, void *out)
{
    rec_step_row *r = out;
    return csv_get_count(c, 0, &r->step) || csv_get_count(c, 1, &r->epoch) ||
                   csv_get_f32(c, 2, &r->loss) || csv_get_f32(c, 3, &r->loss_scale) ||
                   csv_get_bool(c, 4, &r->found_inf) || csv_get_bool(c, 5, &r->skipped) ||
                   csv_get_f32(c, 6, &r->lr)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_tensor_row(const csv_row *c, void *out)
{
    rec_tensor_row *r = out;
    return csv_get_count(c, 0, &r->step) || get_name(c, 1, r->layer) || get_kind(c, 2, &r->kind) ||
                   get_dtype(c, 3, &r->dtype) || csv_get_f32(c, 4, &r->scale) ||
                   csv_get_u64(c, 5, &r->count) || csv_get_u64(c, 6, &r->nonzero) ||
                   csv_get_u64(c, 7, &r->nonfinite) || csv_get_u64(c, 8, &r->flushed) ||
                   csv_get_frac(c, 9, &r->flushed_frac_of_nonzero) ||
                   csv_get_u64(c, 10, &r->subnormal) ||
                   csv_get_frac(c, 11, &r->subnormal_frac_of_nonzero) ||
                   csv_get_u64(c, 12, &r->overflowed) ||
                   csv_get_frac(c, 13, &r->overflow_frac_of_nonzero) ||
                   csv_get_frac(c, 14, &r->zero_frac_of_count) || csv_get_f64(c, 15, &r->amax)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_update_row(const csv_row *c, void *out)
{
    rec_update_row *r = out;
    return csv_get_count(c, 0, &r->step) || get_name(c, 1, r->layer) ||
                   csv_get_u64(c, 2, &r->elements) || csv_get_u64(c, 3, &r->nonzero_updates) ||
                   csv_get_u64(c, 4, &r->lost) || csv_get_frac(c, 5, &r->lost_frac_of_nonzero) ||
                   csv_get_frac(c, 6, &r->rel_update_error) ||
                   csv_get_u64(c, 7, &r->predicted_lost) ||
                   csv_get_frac(c, 8, &r->predicted_lost_frac_of_nonzero) ||
                   csv_get_u64(c, 9, &r->skipped)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_hist_row(const csv_row *c, void *out)
{
    rec_hist_row *r = out;
    return csv_get_count(c, 0, &r->step) || get_name(c, 1, r->layer) || get_kind(c, 2, &r->kind) ||
                   get_bin(c, 3, &r->bin) || csv_get_u64(c, 4, &r->count)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_eval_row(const csv_row *c, void *out)
{
    rec_eval_row *r = out;
    return csv_get_count(c, 0, &r->epoch) || csv_get_count(c, 1, &r->step) ||
                   csv_get_f64(c, 2, &r->test_loss) || csv_get_f64(c, 3, &r->test_accuracy)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_trace_row(const csv_row *c, void *out)
{
    rec_trace_row *r = out;
    if (csv_get_count(c, 0, &r->step) || csv_get_f64(c, 1, &r->loss_scale) ||
        csv_get_flag(c, 2, &r->found_inf) || csv_get_u64(c, 3, &r->count) ||
        csv_get_u64(c, 4, &r->zero) || csv_get_u64(c, 5, &r->nonfinite) ||
        csv_get_f64(c, 6, &r->amax))
        return AN_EFORMAT;
    /* What the writer guarantees, so that readers may rely on it. */
    if (!(r->loss_scale >= 0)) return csv_bad_field(c, 1, "a number >= 0");
    if (r->zero > r->count || r->nonfinite > r->count - r->zero)
        return ut_fail(c->msg, c->msg_len, AN_EFORMAT,
                       "%s:%zu: zero %" PRIu64 " + nonfinite %" PRIu64 " > count %" PRIu64, c->file,
                       c->line, r->zero, r->nonfinite, r->count);
    if (!(r->amax >= 0 && isfinite(r->amax))) return csv_bad_field(c, 6, "a finite number >= 0");
    return AN_OK;
}

static int parse_allreduce_row(const csv_row *c, void *out)
{
    rec_allreduce_row *r = out;
    uint64_t *counts[] = {&r->elements,         &r->inputs_nonzero,     &r->flushed_cast,
                          &r->flushed_prescale, &r->subnormal_messages, &r->overflow_cast,
                          &r->overflow_in_sum,  &r->nonfinite_results,  &r->zero_results,
                          &r->subnormal_results};
    if (csv_get_count(c, 0, &r->step)) return AN_EFORMAT;
    for (int i = 0; i < 10; i++)
        if (csv_get_u64(c, 1 + i, counts[i])) return AN_EFORMAT;
    if (csv_get_f64(c, 11, &r->max_abs_error) || csv_get_f64(c, 12, &r->rel_l2_error) ||
        csv_get_flag(c, 13, &r->found_inf))
        return AN_EFORMAT;
    return AN_OK;
}

static int parse_trace_hist_row(const csv_row *c, void *out)
{
    rec_trace_hist_row *r = out;
    return csv_get_count(c, 0, &r->step) || get_bin(c, 1, &r->bin) || csv_get_u64(c, 2, &r->count)
               ? AN_EFORMAT
               : AN_OK;
}

#define MAX_COLUMNS 32

/* Reads the log of table t at path into rows_out (see record.h), each row
 * by parse. */
static int read_table(const char *path, rec_table t, size_t row_size,
                      int (*parse)(const csv_row *, void *), void **rows_out, size_t *n_out,
                      char *msg, size_t msg_len)
{
    if (!rows_out || !n_out) return ut_fail(msg, msg_len, AN_EINVAL, "rec_read: rows or n NULL");
    *rows_out = NULL;
    *n_out = 0;
    if (!path) return ut_fail(msg, msg_len, AN_EINVAL, "rec_read: path is NULL");
    csv_reader in;
    if (csv_open(&in, path) != AN_OK)
        return ut_fail(msg, msg_len, AN_EIO, "%s: cannot open: %s", path, strerror(errno));

    /* The column names, for messages. */
    const char *const expected = rec_table_header(t);
    char header[1024];
    const char *columns[MAX_COLUMNS];
    snprintf(header, sizeof header, "%s", expected);
    const size_t ncols = csv_split(header, (char **)columns, MAX_COLUMNS);

    char *fields[MAX_COLUMNS + 1];
    size_t n = 0, room = 0;
    unsigned char *rows = NULL;
    int status = AN_OK;
    while (csv_next(&in)) {
        if (!in.complete) break; /* a row cut short by a kill */
        if (in.has_nul) {
            status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: a NUL byte in the line", path,
                             in.line_no);
            break;
        }
        if (in.line_no == 1) {
            if (strcmp(in.line, expected) != 0) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: header is '%.200s', expected '%s'",
                                 path, in.line, expected);
                break;
            }
            continue;
        }
        const size_t nf = csv_split(in.line, fields, MAX_COLUMNS + 1);
        if (nf != ncols) {
            status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: expected %zu fields, got %zu", path,
                             in.line_no, ncols, nf);
            break;
        }
        if (n == room) {
            room = room ? 2 * room : 64;
            unsigned char *more = realloc(rows, room * row_size);
            if (!more) {
                status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
                break;
            }
            rows = more;
        }
        void *row = rows + n * row_size;
        memset(row, 0, row_size);
        const csv_row c = {path, in.line_no, fields, columns, msg, msg_len};
        if ((status = parse(&c, row)) != AN_OK) break;
        n++;
    }
    if (status == AN_OK && csv_error(&in))
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read: %s", path, strerror(errno));
    if (status == AN_OK && in.line_no == 0)
        status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: empty file, expected the header '%s'", path,
                         expected);
    csv_close(&in);
    if (status != AN_OK) {
        free(rows);
        return status;
    }
    if (n == 0) {
        free(rows);
        rows = NULL;
    }
    *rows_out = rows;
    *n_out = n;
    return AN_OK;
}

int rec_read_steps(const char *path, rec_step_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_STEPS, sizeof **rows, parse_step_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_tensors(const char *path, rec_tensor_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_TENSORS, sizeof **rows, parse_tensor_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_updates(const char *path, rec_update_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_UPDATES, sizeof **rows, parse_update_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_hist(const char *path, rec_hist_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_HIST, sizeof **rows, parse_hist_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_eval(const char *path, rec_eval_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_EVAL, sizeof **rows, parse_eval_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_trace(const char *path, rec_trace_row **rows, size_t *n, char *msg, size_t msg_len)
{
    return read_table(path, REC_TRACE, sizeof **rows, parse_trace_row, (void **)rows, n, msg,
                      msg_len);
}

int rec_read_trace_hist(const char *path, rec_trace_hist_row **rows, size_t *n, char *msg,
                        size_t msg_len)
{
    return read_table(path, REC_TRACE_HIST, sizeof **rows, parse_trace_hist_row, (void **)rows, n,
                      msg, msg_len);
}

int rec_read_allreduce(const char *path, rec_allreduce_row **rows, size_t *n, char *msg,
                       size_t msg_len)
{
    return read_table(path, REC_ALLREDUCE, sizeof **rows, parse_allreduce_row, (void **)rows, n,
                      msg, msg_len);
}

/* ---- a run at its end ------------------------------------------------------------------- */
int rec_summarize_run(const char *run_dir, rec_run_summary *out, char *msg, size_t msg_len)
{
    if (!run_dir || !out)
        return ut_fail(msg, msg_len, AN_EINVAL, "rec_summarize_run: NULL argument");
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", run_dir, REC_STEPS_CSV);
    rec_step_row *st = NULL;
    size_t n = 0;
    int rc = rec_read_steps(path, &st, &n, msg, msg_len);
    if (rc != AN_OK) return rc;
    if (n == 0) {
        free(st);
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s has no rows", path);
    }
    out->steps = (int64_t)n;
    out->skipped = 0;
    for (size_t i = 0; i < n; i++)
        out->skipped += st[i].skipped;
    const size_t tail = n / 10 ? n / 10 : 1;
    double sum = 0;
    for (size_t i = n - tail; i < n; i++)
        sum += st[i].loss;
    out->final_loss = sum / (double)tail;
    out->final_scale = st[n - 1].loss_scale;
    free(st);
    out->test_accuracy = NAN;
    snprintf(path, sizeof path, "%s/%s", run_dir, REC_EVAL_CSV);
    if (access(path, F_OK) != 0) return AN_OK;
    rec_eval_row *ev = NULL;
    if ((rc = rec_read_eval(path, &ev, &n, msg, msg_len)) != AN_OK) return rc;
    if (n > 0) out->test_accuracy = ev[n - 1].test_accuracy;
    free(ev);
    return AN_OK;
}
