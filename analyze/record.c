/* record.c: the run directory's names (record.h): the tables' files and
 * headers, layer names, tensor kinds, dtypes, histogram bin labels, and the
 * rows the writers derive from the kernels' results.  The calendar is in
 * record_time.c, the logs in record_log.c (open, resume, flush),
 * record_write.c (the writers) and record_read.c (the readers), run.json in
 * record_json.c. */
#include "record.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"

/* ---- tables and names ------------------------------------------------------------ */
static const char *const table_files[REC_TABLES] = {
    REC_STEPS_CSV, REC_TENSORS_CSV, REC_UPDATES_CSV,    REC_HIST_CSV,
    REC_EVAL_CSV,  REC_TRACE_CSV,   REC_TRACE_HIST_CSV, REC_ALLREDUCE_CSV};
static const char *const table_headers[REC_TABLES] = {
    REC_STEPS_HEADER, REC_TENSORS_HEADER, REC_UPDATES_HEADER,    REC_HIST_HEADER,
    REC_EVAL_HEADER,  REC_TRACE_HEADER,   REC_TRACE_HIST_HEADER, REC_ALLREDUCE_HEADER};

const char *rec_table_file(rec_table t) { return (unsigned)t < REC_TABLES ? table_files[t] : NULL; }

const char *rec_table_header(rec_table t)
{
    return (unsigned)t < REC_TABLES ? table_headers[t] : NULL;
}

bool rec_name_ok(const char *name)
{
    if (!name) return false;
    size_t n = 0;
    for (; name[n]; n++) {
        const char c = name[n];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok || n + 1 >= REC_NAME_MAX) return false;
    }
    return n > 0;
}

static const char *const kind_names[REC_KINDS] = {"weight", "activation", "weight_grad",
                                                  "activation_grad"};

const char *rec_kind_name(rec_kind k) { return (unsigned)k < REC_KINDS ? kind_names[k] : "?"; }

int rec_kind_parse(const char *s, rec_kind *k)
{
    for (int i = 0; s && i < REC_KINDS; i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *k = (rec_kind)i;
            return AN_OK;
        }
    }
    return AN_EINVAL;
}

int rec_dtype_parse(const char *s, ak_dtype *dt)
{
    static const ak_dtype all[] = {AK_F16, AK_BF16, AK_F32};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(s, ak_dtype_name(all[i])) == 0) {
            *dt = all[i];
            return AN_OK;
        }
    }
    return AN_EINVAL;
}

char *rec_hist_bin_label(int bin, char *buf)
{
    if (bin == AK_HIST_ZERO)
        snprintf(buf, REC_BIN_LABEL_MAX, "zero");
    else if (bin == AK_HIST_NONFINITE)
        snprintf(buf, REC_BIN_LABEL_MAX, "nonfinite");
    else if (bin > AK_HIST_ZERO && bin < AK_HIST_NONFINITE)
        snprintf(buf, REC_BIN_LABEL_MAX, "%d", bin - AK_HIST_BIN(0));
    else
        return NULL;
    return buf;
}

int rec_hist_bin_parse(const char *s, int *bin)
{
    if (!s) return AN_EINVAL;
    int64_t e;
    if (strcmp(s, "zero") == 0)
        *bin = AK_HIST_ZERO;
    else if (strcmp(s, "nonfinite") == 0)
        *bin = AK_HIST_NONFINITE;
    else if (csv_parse_i64(s, &e) && e >= AK_HIST_EMIN && e <= AK_HIST_EMAX)
        *bin = AK_HIST_BIN((int)e);
    else
        return AN_EINVAL;
    return AN_OK;
}

/* ---- rows from the kernels' results ---------------------------------------------------- */
static double frac(uint64_t num, uint64_t den) { return den ? (double)num / (double)den : NAN; }

int rec_tensor_row_of(rec_tensor_row *row, int64_t step, const char *layer, rec_kind kind,
                      ak_dtype dtype, float scale, const ak_stats *s)
{
    if (!row || !s || !rec_name_ok(layer) || (unsigned)kind >= REC_KINDS ||
        ak_dtype_size(dtype) == 0)
        return AN_EINVAL;
    memset(row, 0, sizeof *row);
    row->step = step;
    strcpy(row->layer, layer);
    row->kind = kind;
    row->dtype = dtype;
    row->scale = scale;
    row->count = s->count;
    row->nonzero = s->nonzero;
    row->nonfinite = s->nonfinite;
    row->flushed = s->flushed;
    row->flushed_frac_of_nonzero = frac(s->flushed, s->nonzero);
    row->subnormal = s->subnormal;
    row->subnormal_frac_of_nonzero = frac(s->subnormal, s->nonzero);
    row->overflowed = s->overflowed;
    row->overflow_frac_of_nonzero = frac(s->overflowed, s->nonzero);
    row->zero_frac_of_count = frac(s->zero, s->count);
    row->amax = s->amax;
    return AN_OK;
}

int rec_update_row_of(rec_update_row *row, int64_t step, const char *layer, const ak_update_loss *u)
{
    if (!row || !u || !rec_name_ok(layer)) return AN_EINVAL;
    memset(row, 0, sizeof *row);
    row->step = step;
    strcpy(row->layer, layer);
    row->elements = u->elements;
    row->nonzero_updates = u->nonzero;
    row->lost = u->lost;
    row->lost_frac_of_nonzero = frac(u->lost, u->nonzero);
    row->rel_update_error =
        u->sum_abs_intended != 0 ? u->sum_abs_err / u->sum_abs_intended : (double)NAN;
    row->predicted_lost = u->predicted_lost;
    row->predicted_lost_frac_of_nonzero = frac(u->predicted_lost, u->nonzero);
    row->skipped = u->skipped;
    return AN_OK;
}
