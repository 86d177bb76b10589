/* record_write.c: the rows of record.h's CSV logs: one writer per table,
 * each checking its row before anything is written, and the writers
 * straight from the kernels' results.  Numbers print so that they read back
 * exactly (%.9g for fp32, %.17g for doubles); an undefined fraction is an
 * empty field.  The log files themselves are record_log.c's. */
#include "record_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- formatting a row ---------------------------------------------------------------------- */
/* One CSV line under construction; the longest row is ~16 numbers of at
 * most 24 characters plus a name. */
typedef struct out_line {
    char buf[1024];
    size_t n;
} out_line;

static void put(out_line *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(out_line *l, const char *fmt, ...)
{
    if (l->n > 0 && l->n < sizeof l->buf) l->buf[l->n++] = ',';
    if (l->n >= sizeof l->buf) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, ap);
    va_end(ap);
    if (k > 0) l->n += (size_t)k;
}

static void put_i64(out_line *l, int64_t v) { put(l, "%" PRId64, v); }
static void put_u64(out_line *l, uint64_t v) { put(l, "%" PRIu64, v); }
/* 9 significant digits single out every float, 17 every double. */
static void put_f32(out_line *l, float v) { put(l, "%.9g", (double)v); }
static void put_f64(out_line *l, double v) { put(l, "%.17g", v); }
/* A fraction: empty when undefined (NaN: its denominator was 0). */
static void put_frac(out_line *l, double v)
{
    if (isnan(v))
        put(l, "%s", "");
    else
        put_f64(l, v);
}

/* Checks that log is a log of table t and writes the finished line. */
static int check_log(rec_log *log, rec_table t, const char *call)
{
    if (!log) return AN_EINVAL;
    if (log->table != (int)t)
        return rec_log_fail(log, AN_EINVAL, "%s: %s is not a %s log", call, log->path,
                            rec_table_file(t));
    return AN_OK;
}

static int emit(rec_log *log, out_line *l)
{
    if (l->n + 1 >= sizeof l->buf)
        return rec_log_fail(log, AN_EINVAL, "%s: row too long", log->path);
    l->buf[l->n++] = '\n';
    if (fwrite(l->buf, 1, l->n, log->fp) != l->n)
        return rec_log_fail(log, AN_EIO, "%s: write: %s", log->path, strerror(errno));
    return AN_OK;
}

static int check_step(rec_log *log, const char *call, int64_t step, const char *layer)
{
    if (step < 0) return rec_log_fail(log, AN_EINVAL, "%s: step %" PRId64 " < 0", call, step);
    if (layer && !rec_name_ok(layer))
        return rec_log_fail(log, AN_EINVAL,
                            "%s: invalid layer name '%s' (1 to %d of [A-Za-z0-9_.-])", call, layer,
                            REC_NAME_MAX - 1);
    return AN_OK;
}

int rec_write_step(rec_log *log, const rec_step_row *r)
{
    int status = check_log(log, REC_STEPS, "rec_write_step");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_step: row is NULL");
    if ((status = check_step(log, "rec_write_step", r->step, NULL)) != AN_OK) return status;
    if (r->epoch < 0)
        return rec_log_fail(log, AN_EINVAL, "rec_write_step: epoch %" PRId64 " < 0", r->epoch);
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put_i64(&l, r->epoch);
    put_f32(&l, r->loss);
    put_f32(&l, r->loss_scale);
    put_i64(&l, r->found_inf ? 1 : 0);
    put_i64(&l, r->skipped ? 1 : 0);
    put_f32(&l, r->lr);
    return emit(log, &l);
}

int rec_write_tensor(rec_log *log, const rec_tensor_row *r)
{
    int status = check_log(log, REC_TENSORS, "rec_write_tensor");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_tensor: row is NULL");
    if ((status = check_step(log, "rec_write_tensor", r->step, r->layer)) != AN_OK) return status;
    if ((unsigned)r->kind >= REC_KINDS || ak_dtype_size(r->dtype) == 0)
        return rec_log_fail(log, AN_EINVAL, "rec_write_tensor: invalid kind %d or dtype %d",
                            (int)r->kind, (int)r->dtype);
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", r->layer);
    put(&l, "%s", rec_kind_name(r->kind));
    put(&l, "%s", ak_dtype_name(r->dtype));
    put_f32(&l, r->scale);
    put_u64(&l, r->count);
    put_u64(&l, r->nonzero);
    put_u64(&l, r->nonfinite);
    put_u64(&l, r->flushed);
    put_frac(&l, r->flushed_frac_of_nonzero);
    put_u64(&l, r->subnormal);
    put_frac(&l, r->subnormal_frac_of_nonzero);
    put_u64(&l, r->overflowed);
    put_frac(&l, r->overflow_frac_of_nonzero);
    put_frac(&l, r->zero_frac_of_count);
    put_f64(&l, r->amax);
    return emit(log, &l);
}

int rec_write_update(rec_log *log, const rec_update_row *r)
{
    int status = check_log(log, REC_UPDATES, "rec_write_update");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_update: row is NULL");
    if ((status = check_step(log, "rec_write_update", r->step, r->layer)) != AN_OK) return status;
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", r->layer);
    put_u64(&l, r->elements);
    put_u64(&l, r->nonzero_updates);
    put_u64(&l, r->lost);
    put_frac(&l, r->lost_frac_of_nonzero);
    put_frac(&l, r->rel_update_error);
    put_u64(&l, r->predicted_lost);
    put_frac(&l, r->predicted_lost_frac_of_nonzero);
    put_u64(&l, r->skipped);
    return emit(log, &l);
}

int rec_write_hist(rec_log *log, const rec_hist_row *r)
{
    int status = check_log(log, REC_HIST, "rec_write_hist");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_hist: row is NULL");
    if ((status = check_step(log, "rec_write_hist", r->step, r->layer)) != AN_OK) return status;
    char label[REC_BIN_LABEL_MAX];
    if ((unsigned)r->kind >= REC_KINDS || !rec_hist_bin_label(r->bin, label))
        return rec_log_fail(log, AN_EINVAL, "rec_write_hist: invalid kind %d or bin %d",
                            (int)r->kind, r->bin);
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", r->layer);
    put(&l, "%s", rec_kind_name(r->kind));
    put(&l, "%s", label);
    put_u64(&l, r->count);
    return emit(log, &l);
}

int rec_write_eval(rec_log *log, const rec_eval_row *r)
{
    int status = check_log(log, REC_EVAL, "rec_write_eval");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_eval: row is NULL");
    if ((status = check_step(log, "rec_write_eval", r->step, NULL)) != AN_OK) return status;
    if (r->epoch < 0)
        return rec_log_fail(log, AN_EINVAL, "rec_write_eval: epoch %" PRId64 " < 0", r->epoch);
    out_line l = {.n = 0};
    put_i64(&l, r->epoch);
    put_i64(&l, r->step);
    put_f64(&l, r->test_loss);
    put_f64(&l, r->test_accuracy);
    return emit(log, &l);
}

int rec_write_allreduce(rec_log *log, const rec_allreduce_row *r)
{
    int status = check_log(log, REC_ALLREDUCE, "rec_write_allreduce");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_allreduce: row is NULL");
    if ((status = check_step(log, "rec_write_allreduce", r->step, NULL)) != AN_OK) return status;
    if (r->found_inf != 0 && r->found_inf != 1)
        return rec_log_fail(log, AN_EINVAL, "rec_write_allreduce: found_inf %d is not 0 or 1",
                            r->found_inf);
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    const uint64_t counts[] = {r->elements,         r->inputs_nonzero,     r->flushed_cast,
                               r->flushed_prescale, r->subnormal_messages, r->overflow_cast,
                               r->overflow_in_sum,  r->nonfinite_results,  r->zero_results,
                               r->subnormal_results};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        put_u64(&l, counts[i]);
    put_f64(&l, r->max_abs_error);
    put_f64(&l, r->rel_l2_error);
    put_i64(&l, r->found_inf);
    return emit(log, &l);
}

/* A trace row's values, checked before anything is written: the counts
 * must add up (zero and non-finite values are part of count), amax is a
 * finite magnitude and the scale a non-negative number (0 and inf are
 * where an unguarded scale ends up, so they stay recordable). */
static int check_trace(rec_log *log, const char *call, const rec_trace_row *r)
{
    int status = check_step(log, call, r->step, NULL);
    if (status != AN_OK) return status;
    if (r->found_inf != 0 && r->found_inf != 1)
        return rec_log_fail(log, AN_EINVAL, "%s: found_inf %d is not 0 or 1", call, r->found_inf);
    if (!(r->loss_scale >= 0))
        return rec_log_fail(log, AN_EINVAL, "%s: loss_scale %g is not a number >= 0", call,
                            r->loss_scale);
    if (r->zero > r->count || r->nonfinite > r->count - r->zero)
        return rec_log_fail(log, AN_EINVAL,
                            "%s: zero %" PRIu64 " + nonfinite %" PRIu64 " > count %" PRIu64, call,
                            r->zero, r->nonfinite, r->count);
    if (!(r->amax >= 0 && isfinite(r->amax)))
        return rec_log_fail(log, AN_EINVAL, "%s: amax %g is not a finite number >= 0", call,
                            r->amax);
    return AN_OK;
}

int rec_write_trace(rec_log *log, const rec_trace_row *r)
{
    int status = check_log(log, REC_TRACE, "rec_write_trace");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_trace: row is NULL");
    if ((status = check_trace(log, "rec_write_trace", r)) != AN_OK) return status;
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put_f64(&l, r->loss_scale);
    put_i64(&l, r->found_inf);
    put_u64(&l, r->count);
    put_u64(&l, r->zero);
    put_u64(&l, r->nonfinite);
    put_f64(&l, r->amax);
    return emit(log, &l);
}

int rec_write_trace_hist(rec_log *log, const rec_trace_hist_row *r)
{
    int status = check_log(log, REC_TRACE_HIST, "rec_write_trace_hist");
    if (status != AN_OK) return status;
    if (!r) return rec_log_fail(log, AN_EINVAL, "rec_write_trace_hist: row is NULL");
    if ((status = check_step(log, "rec_write_trace_hist", r->step, NULL)) != AN_OK) return status;
    char label[REC_BIN_LABEL_MAX];
    if (!rec_hist_bin_label(r->bin, label))
        return rec_log_fail(log, AN_EINVAL, "rec_write_trace_hist: invalid bin %d", r->bin);
    out_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", label);
    put_u64(&l, r->count);
    return emit(log, &l);
}

int rec_write_tensor_stats(rec_log *log, int64_t step, const char *layer, rec_kind kind,
                           ak_dtype dtype, float scale, const ak_stats *s)
{
    int status = check_log(log, REC_TENSORS, "rec_write_tensor_stats");
    if (status != AN_OK) return status;
    if ((status = check_step(log, "rec_write_tensor_stats", step, layer)) != AN_OK) return status;
    rec_tensor_row row;
    if (rec_tensor_row_of(&row, step, layer, kind, dtype, scale, s) != AN_OK)
        return rec_log_fail(log, AN_EINVAL,
                            "rec_write_tensor_stats: stats NULL, or invalid kind %d "
                            "or dtype %d",
                            (int)kind, (int)dtype);
    return rec_write_tensor(log, &row);
}

int rec_write_update_loss(rec_log *log, int64_t step, const char *layer, const ak_update_loss *u)
{
    int status = check_log(log, REC_UPDATES, "rec_write_update_loss");
    if (status != AN_OK) return status;
    if ((status = check_step(log, "rec_write_update_loss", step, layer)) != AN_OK) return status;
    rec_update_row row;
    if (rec_update_row_of(&row, step, layer, u) != AN_OK)
        return rec_log_fail(log, AN_EINVAL, "rec_write_update_loss: loss is NULL");
    return rec_write_update(log, &row);
}

int rec_write_hist_stats(rec_log *log, int64_t step, const char *layer, rec_kind kind,
                         const ak_stats *s)
{
    int status = check_log(log, REC_HIST, "rec_write_hist_stats");
    if (status != AN_OK) return status;
    if ((status = check_step(log, "rec_write_hist_stats", step, layer)) != AN_OK) return status;
    if (!s) return rec_log_fail(log, AN_EINVAL, "rec_write_hist_stats: stats is NULL");
    rec_hist_row row = {.step = step, .kind = kind};
    strcpy(row.layer, layer);
    for (int bin = 0; bin < AK_HIST_BINS; bin++) {
        if (s->hist[bin] == 0) continue;
        row.bin = bin;
        row.count = s->hist[bin];
        if ((status = rec_write_hist(log, &row)) != AN_OK) return status;
    }
    return AN_OK;
}

int rec_write_trace_stats(rec_log *trace, rec_log *hist, int64_t step, double loss_scale,
                          bool found_inf, const ak_stats *s)
{
    int status = check_log(trace, REC_TRACE, "rec_write_trace_stats");
    if (status != AN_OK) return status;
    if ((status = check_log(hist, REC_TRACE_HIST, "rec_write_trace_stats")) != AN_OK) return status;
    if (!s) return rec_log_fail(trace, AN_EINVAL, "rec_write_trace_stats: stats is NULL");
    const rec_trace_row row = {.step = step,
                               .loss_scale = loss_scale,
                               .found_inf = found_inf ? 1 : 0,
                               .count = s->count,
                               .zero = s->zero,
                               .nonfinite = s->nonfinite,
                               .amax = s->amax};
    /* Checked up front so that a bad step leaves neither log half-written. */
    if ((status = check_trace(trace, "rec_write_trace_stats", &row)) != AN_OK) return status;
    if ((status = rec_write_trace(trace, &row)) != AN_OK) return status;
    rec_trace_hist_row h = {.step = step};
    for (int bin = 0; bin < AK_HIST_BINS; bin++) {
        if (s->hist[bin] == 0) continue;
        h.bin = bin;
        h.count = s->hist[bin];
        if ((status = rec_write_trace_hist(hist, &h)) != AN_OK) return status;
    }
    return AN_OK;
}
