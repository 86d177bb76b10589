/* record.c: the run directory's schema (record.h): names, rows, the CSV
 * logs (open/resume, writers, readers) and run.json. */
#define _POSIX_C_SOURCE 200809L /* getline, ftruncate, fdopen */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tables and names ------------------------------------------------------------ */
static const char *const table_files[REC_TABLES] = {
    REC_STEPS_CSV, REC_TENSORS_CSV, REC_UPDATES_CSV,   REC_HIST_CSV,
    REC_EVAL_CSV,  REC_TRACE_CSV,   REC_TRACE_HIST_CSV};
static const char *const table_headers[REC_TABLES] = {
    REC_STEPS_HEADER, REC_TENSORS_HEADER, REC_UPDATES_HEADER,   REC_HIST_HEADER,
    REC_EVAL_HEADER,  REC_TRACE_HEADER,   REC_TRACE_HIST_HEADER};

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

static bool dtype_ok(ak_dtype dt) { return ak_dtype_size(dt) != 0; }

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

/* Strict decimal integers: an optional '-' (when allowed), then digits
 * only; no spaces, no '+', no empty string, nothing after. */
static bool parse_i64(const char *s, int64_t *v)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    if (*d < '0' || *d > '9') return false;
    char *end;
    errno = 0;
    const long long x = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *v = (int64_t)x;
    return true;
}

static bool parse_u64(const char *s, uint64_t *v)
{
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    const unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *v = (uint64_t)x;
    return true;
}

int rec_hist_bin_parse(const char *s, int *bin)
{
    if (!s) return AN_EINVAL;
    int64_t e;
    if (strcmp(s, "zero") == 0)
        *bin = AK_HIST_ZERO;
    else if (strcmp(s, "nonfinite") == 0)
        *bin = AK_HIST_NONFINITE;
    else if (parse_i64(s, &e) && e >= AK_HIST_EMIN && e <= AK_HIST_EMAX)
        *bin = AK_HIST_BIN((int)e);
    else
        return AN_EINVAL;
    return AN_OK;
}

/* ---- times: proleptic Gregorian calendar, UTC, no leap seconds --------------------------- */
/* Days since 1970-01-01 of y-m-d (m in 1..12), by counting from March, so
 * that the leap day ends the year. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;                                  /* [0, 399] */
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const int64_t doe = z - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Years 0000 to 9999: what four digits hold. */
#define TIME_MIN (-62167219200LL) /* 0000-01-01T00:00:00Z */
#define TIME_MAX 253402300799LL   /* 9999-12-31T23:59:59Z */

int rec_time_format(int64_t t, char *buf)
{
    if (t < TIME_MIN || t > TIME_MAX) return AN_EINVAL;
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days -= 1;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    /* the fields are in range: 20 characters; the compiler cannot know */
    char text[64];
    snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, m, d, (int)(secs / 3600),
             (int)(secs / 60 % 60), (int)(secs % 60));
    memcpy(buf, text, 21);
    return AN_OK;
}

static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

int rec_time_parse(const char *s, int64_t *t)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, se;
    if (!s || strlen(s) != 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) ||
        s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se) ||
        s[19] != 'Z')
        return AN_EINVAL;
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || se > 59)
        return AN_EINVAL;
    *t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return AN_OK;
}

/* ---- rows from the kernels' results ---------------------------------------------------- */
static double frac(uint64_t num, uint64_t den) { return den ? (double)num / (double)den : NAN; }

int rec_tensor_row_of(rec_tensor_row *row, int64_t step, const char *layer, rec_kind kind,
                      ak_dtype dtype, float scale, const ak_stats *s)
{
    if (!row || !s || !rec_name_ok(layer) || (unsigned)kind >= REC_KINDS || !dtype_ok(dtype))
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

/* ---- the logs ------------------------------------------------------------------------ */
struct rec_log {
    FILE *fp;
    char *path;
    int table; /* rec_table, or -1 for a header that is none of them */
    char error[512];
};

static int log_fail(rec_log *log, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int log_fail(rec_log *log, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log->error, sizeof log->error, fmt, ap);
    va_end(ap);
    return status;
}

/* Splits line (no newline) at commas in place; returns the number of
 * fields, storing at most max pointers. */
static size_t split_fields(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        if (n < max) fields[n] = p;
        n++;
        char *comma = strchr(p, ',');
        if (!comma) break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

static size_t count_fields(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

/* The index of column name in header, or -1. */
static int column_index(const char *header, const char *name)
{
    const size_t len = strlen(name);
    int i = 0;
    for (const char *p = header;; i++) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && memcmp(p, name, n) == 0) return i;
        if (!comma) return -1;
        p = comma + 1;
    }
}

/* Where the log at path must be cut for a resume after step keep (see
 * rec_log_open): *cut = the offset of the first line to drop, or the file's
 * size. */
static int scan_log(const char *path, const char *header, int step_col, int64_t keep, off_t *cut,
                    char *msg, size_t msg_len)
{
    FILE *in = fopen(path, "rb");
    if (!in) return ut_fail(msg, msg_len, AN_EIO, "%s: cannot read: %s", path, strerror(errno));
    const size_t header_len = strlen(header), ncols = count_fields(header);
    char *line = NULL, *fields[1];
    size_t cap = 0, line_no = 0;
    off_t off = 0;
    ssize_t got;
    int status = AN_OK;
    *cut = -1;
    while (*cut < 0 && (got = getline(&line, &cap, in)) > 0) {
        line_no++;
        const bool complete = line[got - 1] == '\n';
        if (line_no == 1) {
            /* A header cut short is rewritten; anything else is not our file. */
            const size_t n = complete ? (size_t)got - 1 : (size_t)got;
            const bool match = complete ? n == header_len && memcmp(line, header, n) == 0
                                        : n <= header_len && memcmp(line, header, n) == 0;
            if (!match) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: header is '%.*s', expected '%s'",
                                 path, (int)(n > 200 ? 200 : n), line, header);
                break;
            }
            if (!complete) *cut = 0;
        } else if (!complete) {
            *cut = off;
        } else {
            line[got - 1] = '\0';
            if (strlen(line) != (size_t)got - 1) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: a NUL byte in the line", path,
                                 line_no);
                break;
            }
            const size_t n = count_fields(line);
            if (n != ncols) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: expected %zu fields, got %zu",
                                 path, line_no, ncols, n);
                break;
            }
            /* the step field: split up to it */
            char *f = line;
            for (int i = 0; i < step_col; i++)
                f = strchr(f, ',') + 1;
            char *comma = strchr(f, ',');
            if (comma) *comma = '\0';
            fields[0] = f;
            int64_t step;
            if (!parse_i64(fields[0], &step)) {
                status = ut_fail(msg, msg_len, AN_EFORMAT,
                                 "%s:%zu: column 'step': '%s' is not an integer", path, line_no,
                                 fields[0]);
                break;
            }
            if (step > keep) *cut = off;
        }
        off += got;
    }
    if (status == AN_OK && ferror(in))
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read: %s", path, strerror(errno));
    if (status == AN_OK && *cut < 0) *cut = off;
    free(line);
    fclose(in);
    return status;
}

rec_log *rec_log_open(const char *path, const char *header, int64_t resume_after_step, char *msg,
                      size_t msg_len)
{
    if (!path || !*path) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open: empty path");
        return NULL;
    }
    if (!header || !*header || strchr(header, '\n')) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open: %s: empty or multi-line header", path);
        return NULL;
    }
    const int step_col = column_index(header, "step");
    if (step_col < 0) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open: %s: header '%s' has no column 'step'", path,
                header);
        return NULL;
    }
    if (resume_after_step < -1) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open: %s: resume_after_step %" PRId64 " < -1",
                path, resume_after_step);
        return NULL;
    }
    rec_log *log = calloc(1, sizeof *log);
    if (log) log->path = malloc(strlen(path) + 1);
    if (!log || !log->path) {
        free(log);
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    strcpy(log->path, path);
    log->table = -1;
    for (int t = 0; t < REC_TABLES; t++)
        if (strcmp(header, table_headers[t]) == 0) log->table = t;

    const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
        ut_fail(msg, msg_len, AN_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
        goto fail;
    }
    off_t cut = 0;
    if (scan_log(path, header, step_col, resume_after_step, &cut, msg, msg_len) != AN_OK) {
        close(fd);
        goto fail;
    }
    const off_t size = lseek(fd, 0, SEEK_END);
    if (size < 0 || (cut < size && ftruncate(fd, cut) != 0)) {
        ut_fail(msg, msg_len, AN_EIO, "%s: truncate to %lld bytes: %s", path, (long long)cut,
                strerror(errno));
        close(fd);
        goto fail;
    }
    log->fp = fdopen(fd, "ab");
    if (!log->fp) {
        ut_fail(msg, msg_len, AN_EIO, "%s: fdopen: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    /* A step's rows usually leave in one write. */
    setvbuf(log->fp, NULL, _IOFBF, 1 << 20);
    if (cut == 0) {
        fprintf(log->fp, "%s\n", header);
        if (rec_log_flush(log) != AN_OK) {
            ut_fail(msg, msg_len, AN_EIO, "%s", log->error);
            rec_log_close(log, NULL, 0);
            return NULL;
        }
    }
    return log;
fail:
    free(log->path);
    free(log);
    return NULL;
}

rec_log *rec_log_open_table(const char *dir, rec_table t, int64_t resume_after_step, char *msg,
                            size_t msg_len)
{
    if (!dir || !*dir || (unsigned)t >= REC_TABLES) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open_table: empty directory or invalid table");
        return NULL;
    }
    const size_t n = strlen(dir) + strlen(table_files[t]) + 2;
    char *path = malloc(n);
    if (!path) {
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", dir);
        return NULL;
    }
    snprintf(path, n, "%s/%s", dir, table_files[t]);
    rec_log *log = rec_log_open(path, table_headers[t], resume_after_step, msg, msg_len);
    free(path);
    return log;
}

int rec_log_flush(rec_log *log)
{
    if (!log) return AN_EINVAL;
    errno = 0;
    if (fflush(log->fp) != 0 || ferror(log->fp))
        return log_fail(log, AN_EIO, "%s: write: %s", log->path, strerror(errno ? errno : EIO));
    return AN_OK;
}

int rec_log_sync(rec_log *log)
{
    if (!log) return AN_EINVAL;
    const int status = rec_log_flush(log);
    if (status != AN_OK) return status;
    if (fsync(fileno(log->fp)) != 0)
        return log_fail(log, AN_EIO, "%s: fsync: %s", log->path, strerror(errno));
    return AN_OK;
}

int rec_log_close(rec_log *log, char *msg, size_t msg_len)
{
    if (!log) return AN_OK;
    int status = AN_OK;
    errno = 0;
    if (fflush(log->fp) != 0 || ferror(log->fp))
        status = ut_fail(msg, msg_len, AN_EIO, "%s: write: %s", log->path,
                         strerror(errno ? errno : EIO));
    if (fclose(log->fp) != 0 && status == AN_OK)
        status = ut_fail(msg, msg_len, AN_EIO, "%s: close: %s", log->path, strerror(errno));
    free(log->path);
    free(log);
    return status;
}

const char *rec_log_error(const rec_log *log) { return log ? log->error : ""; }

const char *rec_log_path(const rec_log *log) { return log ? log->path : ""; }

/* ---- formatting a row ---------------------------------------------------------------------- */
/* One CSV line under construction; the longest row is ~16 numbers of at
 * most 24 characters plus a name. */
typedef struct csv_line {
    char buf[1024];
    size_t n;
} csv_line;

static void put(csv_line *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(csv_line *l, const char *fmt, ...)
{
    if (l->n > 0 && l->n < sizeof l->buf) l->buf[l->n++] = ',';
    if (l->n >= sizeof l->buf) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, ap);
    va_end(ap);
    if (k > 0) l->n += (size_t)k;
}

static void put_i64(csv_line *l, int64_t v) { put(l, "%" PRId64, v); }
static void put_u64(csv_line *l, uint64_t v) { put(l, "%" PRIu64, v); }
/* 9 significant digits single out every float, 17 every double. */
static void put_f32(csv_line *l, float v) { put(l, "%.9g", (double)v); }
static void put_f64(csv_line *l, double v) { put(l, "%.17g", v); }
/* A fraction: empty when undefined (NaN: its denominator was 0). */
static void put_frac(csv_line *l, double v)
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
        return log_fail(log, AN_EINVAL, "%s: %s is not a %s log", call, log->path, table_files[t]);
    return AN_OK;
}

static int emit(rec_log *log, csv_line *l)
{
    if (l->n + 1 >= sizeof l->buf) return log_fail(log, AN_EINVAL, "%s: row too long", log->path);
    l->buf[l->n++] = '\n';
    if (fwrite(l->buf, 1, l->n, log->fp) != l->n)
        return log_fail(log, AN_EIO, "%s: write: %s", log->path, strerror(errno));
    return AN_OK;
}

static int check_step(rec_log *log, const char *call, int64_t step, const char *layer)
{
    if (step < 0) return log_fail(log, AN_EINVAL, "%s: step %" PRId64 " < 0", call, step);
    if (layer && !rec_name_ok(layer))
        return log_fail(log, AN_EINVAL, "%s: invalid layer name '%s' (1 to %d of [A-Za-z0-9_.-])",
                        call, layer, REC_NAME_MAX - 1);
    return AN_OK;
}

int rec_write_step(rec_log *log, const rec_step_row *r)
{
    int status = check_log(log, REC_STEPS, "rec_write_step");
    if (status != AN_OK) return status;
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_step: row is NULL");
    if ((status = check_step(log, "rec_write_step", r->step, NULL)) != AN_OK) return status;
    if (r->epoch < 0)
        return log_fail(log, AN_EINVAL, "rec_write_step: epoch %" PRId64 " < 0", r->epoch);
    csv_line l = {.n = 0};
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
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_tensor: row is NULL");
    if ((status = check_step(log, "rec_write_tensor", r->step, r->layer)) != AN_OK) return status;
    if ((unsigned)r->kind >= REC_KINDS || !dtype_ok(r->dtype))
        return log_fail(log, AN_EINVAL, "rec_write_tensor: invalid kind %d or dtype %d",
                        (int)r->kind, (int)r->dtype);
    csv_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", r->layer);
    put(&l, "%s", kind_names[r->kind]);
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
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_update: row is NULL");
    if ((status = check_step(log, "rec_write_update", r->step, r->layer)) != AN_OK) return status;
    csv_line l = {.n = 0};
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
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_hist: row is NULL");
    if ((status = check_step(log, "rec_write_hist", r->step, r->layer)) != AN_OK) return status;
    char label[REC_BIN_LABEL_MAX];
    if ((unsigned)r->kind >= REC_KINDS || !rec_hist_bin_label(r->bin, label))
        return log_fail(log, AN_EINVAL, "rec_write_hist: invalid kind %d or bin %d", (int)r->kind,
                        r->bin);
    csv_line l = {.n = 0};
    put_i64(&l, r->step);
    put(&l, "%s", r->layer);
    put(&l, "%s", kind_names[r->kind]);
    put(&l, "%s", label);
    put_u64(&l, r->count);
    return emit(log, &l);
}

int rec_write_eval(rec_log *log, const rec_eval_row *r)
{
    int status = check_log(log, REC_EVAL, "rec_write_eval");
    if (status != AN_OK) return status;
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_eval: row is NULL");
    if ((status = check_step(log, "rec_write_eval", r->step, NULL)) != AN_OK) return status;
    if (r->epoch < 0)
        return log_fail(log, AN_EINVAL, "rec_write_eval: epoch %" PRId64 " < 0", r->epoch);
    csv_line l = {.n = 0};
    put_i64(&l, r->epoch);
    put_i64(&l, r->step);
    put_f64(&l, r->test_loss);
    put_f64(&l, r->test_accuracy);
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
        return log_fail(log, AN_EINVAL, "%s: found_inf %d is not 0 or 1", call, r->found_inf);
    if (!(r->loss_scale >= 0))
        return log_fail(log, AN_EINVAL, "%s: loss_scale %g is not a number >= 0", call,
                        r->loss_scale);
    if (r->zero > r->count || r->nonfinite > r->count - r->zero)
        return log_fail(log, AN_EINVAL,
                        "%s: zero %" PRIu64 " + nonfinite %" PRIu64 " > count %" PRIu64, call,
                        r->zero, r->nonfinite, r->count);
    if (!(r->amax >= 0 && isfinite(r->amax)))
        return log_fail(log, AN_EINVAL, "%s: amax %g is not a finite number >= 0", call, r->amax);
    return AN_OK;
}

int rec_write_trace(rec_log *log, const rec_trace_row *r)
{
    int status = check_log(log, REC_TRACE, "rec_write_trace");
    if (status != AN_OK) return status;
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_trace: row is NULL");
    if ((status = check_trace(log, "rec_write_trace", r)) != AN_OK) return status;
    csv_line l = {.n = 0};
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
    if (!r) return log_fail(log, AN_EINVAL, "rec_write_trace_hist: row is NULL");
    if ((status = check_step(log, "rec_write_trace_hist", r->step, NULL)) != AN_OK) return status;
    char label[REC_BIN_LABEL_MAX];
    if (!rec_hist_bin_label(r->bin, label))
        return log_fail(log, AN_EINVAL, "rec_write_trace_hist: invalid bin %d", r->bin);
    csv_line l = {.n = 0};
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
        return log_fail(log, AN_EINVAL,
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
        return log_fail(log, AN_EINVAL, "rec_write_update_loss: loss is NULL");
    return rec_write_update(log, &row);
}

int rec_write_hist_stats(rec_log *log, int64_t step, const char *layer, rec_kind kind,
                         const ak_stats *s)
{
    int status = check_log(log, REC_HIST, "rec_write_hist_stats");
    if (status != AN_OK) return status;
    if ((status = check_step(log, "rec_write_hist_stats", step, layer)) != AN_OK) return status;
    if (!s) return log_fail(log, AN_EINVAL, "rec_write_hist_stats: stats is NULL");
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
    if (!s) return log_fail(trace, AN_EINVAL, "rec_write_trace_stats: stats is NULL");
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

/* ---- reading the logs ---------------------------------------------------------------------- */
/* Where a field comes from, for messages. */
typedef struct field_ctx {
    const char *path;
    size_t line;
    char **fields;
    const char *const *columns;
    char *msg;
    size_t msg_len;
} field_ctx;

static int bad_field(const field_ctx *c, int col, const char *what)
{
    return ut_fail(c->msg, c->msg_len, AN_EFORMAT, "%s:%zu: column '%s': '%s' is not %s", c->path,
                   c->line, c->columns[col], c->fields[col], what);
}

static int get_i64(const field_ctx *c, int col, int64_t *v)
{
    return parse_i64(c->fields[col], v) && *v >= 0 ? AN_OK
                                                   : bad_field(c, col, "a non-negative integer");
}

static int get_u64(const field_ctx *c, int col, uint64_t *v)
{
    return parse_u64(c->fields[col], v) ? AN_OK : bad_field(c, col, "a non-negative integer");
}

static int get_bool(const field_ctx *c, int col, bool *v)
{
    const char *s = c->fields[col];
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) return bad_field(c, col, "0 or 1");
    *v = s[0] == '1';
    return AN_OK;
}

/* strtof/strtod read the whole field, which must not start with a space
 * (they would skip it) and must not be empty. */
static bool number_start_ok(const char *s)
{
    return *s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v';
}

static int get_f32(const field_ctx *c, int col, float *v)
{
    const char *s = c->fields[col];
    char *end;
    if (number_start_ok(s)) {
        errno = 0;
        *v = strtof(s, &end);
        /* ERANGE on underflow is fine: subnormals print and read back */
        if (!*end && (errno == 0 || errno == ERANGE)) return AN_OK;
    }
    return bad_field(c, col, "a number");
}

static int get_f64(const field_ctx *c, int col, double *v)
{
    const char *s = c->fields[col];
    char *end;
    if (number_start_ok(s)) {
        errno = 0;
        *v = strtod(s, &end);
        if (!*end && (errno == 0 || errno == ERANGE)) return AN_OK;
    }
    return bad_field(c, col, "a number");
}

static int get_frac(const field_ctx *c, int col, double *v)
{
    if (c->fields[col][0] == '\0') {
        *v = NAN;
        return AN_OK;
    }
    return get_f64(c, col, v);
}

static int get_name(const field_ctx *c, int col, char *name)
{
    if (!rec_name_ok(c->fields[col])) return bad_field(c, col, "a layer name");
    strcpy(name, c->fields[col]);
    return AN_OK;
}

static int get_kind(const field_ctx *c, int col, rec_kind *k)
{
    return rec_kind_parse(c->fields[col], k) == AN_OK
               ? AN_OK
               : bad_field(c, col, "weight, activation, weight_grad or activation_grad");
}

static int get_dtype(const field_ctx *c, int col, ak_dtype *dt)
{
    return rec_dtype_parse(c->fields[col], dt) == AN_OK ? AN_OK
                                                        : bad_field(c, col, "fp16, bf16 or fp32");
}

static int get_bin(const field_ctx *c, int col, int *bin)
{
    return rec_hist_bin_parse(c->fields[col], bin) == AN_OK
               ? AN_OK
               : bad_field(c, col, "a binade exponent, zero or nonfinite");
}

/* Each parser fills one row from c->fields; the first failing field ends
 * it (the || chains stop there). */
static int parse_step_row(const field_ctx *c, void *out)
{
    rec_step_row *r = out;
    return get_i64(c, 0, &r->step) || get_i64(c, 1, &r->epoch) || get_f32(c, 2, &r->loss) ||
                   get_f32(c, 3, &r->loss_scale) || get_bool(c, 4, &r->found_inf) ||
                   get_bool(c, 5, &r->skipped) || get_f32(c, 6, &r->lr)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_tensor_row(const field_ctx *c, void *out)
{
    rec_tensor_row *r = out;
    return get_i64(c, 0, &r->step) || get_name(c, 1, r->layer) || get_kind(c, 2, &r->kind) ||
                   get_dtype(c, 3, &r->dtype) || get_f32(c, 4, &r->scale) ||
                   get_u64(c, 5, &r->count) || get_u64(c, 6, &r->nonzero) ||
                   get_u64(c, 7, &r->nonfinite) || get_u64(c, 8, &r->flushed) ||
                   get_frac(c, 9, &r->flushed_frac_of_nonzero) || get_u64(c, 10, &r->subnormal) ||
                   get_frac(c, 11, &r->subnormal_frac_of_nonzero) ||
                   get_u64(c, 12, &r->overflowed) ||
                   get_frac(c, 13, &r->overflow_frac_of_nonzero) ||
                   get_frac(c, 14, &r->zero_frac_of_count) || get_f64(c, 15, &r->amax)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_update_row(const field_ctx *c, void *out)
{
    rec_update_row *r = out;
    return get_i64(c, 0, &r->step) || get_name(c, 1, r->layer) || get_u64(c, 2, &r->elements) ||
                   get_u64(c, 3, &r->nonzero_updates) || get_u64(c, 4, &r->lost) ||
                   get_frac(c, 5, &r->lost_frac_of_nonzero) ||
                   get_frac(c, 6, &r->rel_update_error) || get_u64(c, 7, &r->predicted_lost) ||
                   get_frac(c, 8, &r->predicted_lost_frac_of_nonzero) || get_u64(c, 9, &r->skipped)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_hist_row(const field_ctx *c, void *out)
{
    rec_hist_row *r = out;
    return get_i64(c, 0, &r->step) || get_name(c, 1, r->layer) || get_kind(c, 2, &r->kind) ||
                   get_bin(c, 3, &r->bin) || get_u64(c, 4, &r->count)
               ? AN_EFORMAT
               : AN_OK;
}

static int parse_eval_row(const field_ctx *c, void *out)
{
    rec_eval_row *r = out;
    return get_i64(c, 0, &r->epoch) || get_i64(c, 1, &r->step) || get_f64(c, 2, &r->test_loss) ||
                   get_f64(c, 3, &r->test_accuracy)
               ? AN_EFORMAT
               : AN_OK;
}

static int get_flag(const field_ctx *c, int col, int *v)
{
    bool b;
    if (get_bool(c, col, &b) != AN_OK) return AN_EFORMAT;
    *v = b ? 1 : 0;
    return AN_OK;
}

static int parse_trace_row(const field_ctx *c, void *out)
{
    rec_trace_row *r = out;
    if (get_i64(c, 0, &r->step) || get_f64(c, 1, &r->loss_scale) || get_flag(c, 2, &r->found_inf) ||
        get_u64(c, 3, &r->count) || get_u64(c, 4, &r->zero) || get_u64(c, 5, &r->nonfinite) ||
        get_f64(c, 6, &r->amax))
        return AN_EFORMAT;
    /* What the writer guarantees, so that readers may rely on it. */
    if (!(r->loss_scale >= 0)) return bad_field(c, 1, "a number >= 0");
    if (r->zero > r->count || r->nonfinite > r->count - r->zero)
        return ut_fail(c->msg, c->msg_len, AN_EFORMAT,
                       "%s:%zu: zero %" PRIu64 " + nonfinite %" PRIu64 " > count %" PRIu64, c->path,
                       c->line, r->zero, r->nonfinite, r->count);
    if (!(r->amax >= 0 && isfinite(r->amax))) return bad_field(c, 6, "a finite number >= 0");
    return AN_OK;
}

static int parse_trace_hist_row(const field_ctx *c, void *out)
{
    rec_trace_hist_row *r = out;
    return get_i64(c, 0, &r->step) || get_bin(c, 1, &r->bin) || get_u64(c, 2, &r->count)
               ? AN_EFORMAT
               : AN_OK;
}

#define MAX_COLUMNS 32

static int read_table(const char *path, rec_table t, size_t row_size,
                      int (*parse)(const field_ctx *, void *), void **rows_out, size_t *n_out,
                      char *msg, size_t msg_len)
{
    if (!rows_out || !n_out) return ut_fail(msg, msg_len, AN_EINVAL, "rec_read: rows or n NULL");
    *rows_out = NULL;
    *n_out = 0;
    if (!path) return ut_fail(msg, msg_len, AN_EINVAL, "rec_read: path is NULL");
    FILE *in = fopen(path, "rb");
    if (!in) return ut_fail(msg, msg_len, AN_EIO, "%s: cannot open: %s", path, strerror(errno));

    /* The column names, for messages. */
    char header[1024];
    const char *columns[MAX_COLUMNS];
    snprintf(header, sizeof header, "%s", table_headers[t]);
    const size_t ncols = split_fields(header, (char **)columns, MAX_COLUMNS);

    char *line = NULL, *fields[MAX_COLUMNS + 1];
    size_t cap = 0, line_no = 0, n = 0, room = 0;
    unsigned char *rows = NULL;
    ssize_t got;
    int status = AN_OK;
    while ((got = getline(&line, &cap, in)) > 0) {
        line_no++;
        if (line[got - 1] != '\n') break; /* a row cut short by a kill */
        line[got - 1] = '\0';
        if (strlen(line) != (size_t)got - 1) {
            status =
                ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: a NUL byte in the line", path, line_no);
            break;
        }
        if (line_no == 1) {
            if (strcmp(line, table_headers[t]) != 0) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: header is '%.200s', expected '%s'",
                                 path, line, table_headers[t]);
                break;
            }
            continue;
        }
        const size_t nf = split_fields(line, fields, MAX_COLUMNS + 1);
        if (nf != ncols) {
            status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: expected %zu fields, got %zu", path,
                             line_no, ncols, nf);
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
        const field_ctx c = {path, line_no, fields, columns, msg, msg_len};
        if ((status = parse(&c, row)) != AN_OK) break;
        n++;
    }
    if (status == AN_OK && ferror(in))
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read: %s", path, strerror(errno));
    if (status == AN_OK && line_no == 0)
        status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: empty file, expected the header '%s'", path,
                         table_headers[t]);
    free(line);
    fclose(in);
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

/* ---- run.json ------------------------------------------------------------------------------ */
#define RUN_RECORD_VERSION 1

struct rec_run {
    char *info[4]; /* version, git revision, backend, device */
    int64_t start, end;
    json_t *options; /* an object: insertion order is kept */
};

static const char *const info_keys[4] = {"ampscope_version", "git_revision", "backend", "device"};

static char *dup_str(const char *s)
{
    if (!s) s = "";
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

rec_run *rec_run_new(const char *version, const char *git_revision, const char *backend,
                     const char *device)
{
    rec_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    const char *v[4] = {version, git_revision, backend, device};
    bool ok = true;
    for (int i = 0; i < 4; i++)
        ok = (r->info[i] = dup_str(v[i])) != NULL && ok;
    r->options = json_object();
    r->start = r->end = REC_NO_TIME;
    if (!ok || !r->options) {
        rec_run_free(r);
        return NULL;
    }
    return r;
}

void rec_run_free(rec_run *r)
{
    if (!r) return;
    for (int i = 0; i < 4; i++)
        free(r->info[i]);
    json_decref(r->options);
    free(r);
}

const char *rec_run_version(const rec_run *r) { return r->info[0]; }
const char *rec_run_git_revision(const rec_run *r) { return r->info[1]; }
const char *rec_run_backend(const rec_run *r) { return r->info[2]; }
const char *rec_run_device(const rec_run *r) { return r->info[3]; }
int64_t rec_run_start(const rec_run *r) { return r->start; }
int64_t rec_run_end(const rec_run *r) { return r->end; }
void rec_run_set_start(rec_run *r, int64_t t) { r->start = t; }
void rec_run_set_end(rec_run *r, int64_t t) { r->end = t; }

/* Takes the reference to value in every case. */
static int set_option(rec_run *r, const char *key, json_t *value)
{
    if (!r || !key || !*key || !value) {
        json_decref(value);
        return AN_EINVAL;
    }
    return json_object_set_new(r->options, key, value) == 0 ? AN_OK : AN_EINVAL;
}

int rec_run_set_string(rec_run *r, const char *key, const char *value)
{
    return value ? set_option(r, key, json_string(value)) : AN_EINVAL;
}

int rec_run_set_int(rec_run *r, const char *key, int64_t value)
{
    return set_option(r, key, json_integer((json_int_t)value));
}

int rec_run_set_real(rec_run *r, const char *key, double value)
{
    return isfinite(value) ? set_option(r, key, json_real(value)) : AN_EINVAL;
}

size_t rec_run_option_count(const rec_run *r) { return r ? json_object_size(r->options) : 0; }

static void option_of(const char *key, json_t *v, rec_option *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->key = key;
    if (json_is_string(v)) {
        opt->type = REC_OPT_STRING;
        opt->string = json_string_value(v);
    } else if (json_is_integer(v)) {
        opt->type = REC_OPT_INT;
        opt->integer = (int64_t)json_integer_value(v);
    } else {
        opt->type = REC_OPT_REAL;
        opt->real = json_real_value(v);
    }
}

int rec_run_option_at(const rec_run *r, size_t i, rec_option *opt)
{
    if (!r || !opt) return AN_EINVAL;
    void *it = json_object_iter(r->options);
    for (size_t k = 0; it && k < i; k++)
        it = json_object_iter_next(r->options, it);
    if (!it) return AN_EINVAL;
    option_of(json_object_iter_key(it), json_object_iter_value(it), opt);
    return AN_OK;
}

bool rec_run_option(const rec_run *r, const char *key, rec_option *opt)
{
    if (!r || !key || !opt) return false;
    void *it = json_object_iter_at(r->options, key);
    if (!it) return false;
    option_of(json_object_iter_key(it), json_object_iter_value(it), opt);
    return true;
}

static json_t *time_json(int64_t t)
{
    char buf[REC_TIME_MAX];
    if (t == REC_NO_TIME) return json_null();
    return rec_time_format(t, buf) == AN_OK ? json_string(buf) : NULL;
}

int rec_run_write(const rec_run *r, const char *path, char *msg, size_t msg_len)
{
    if (!r || !path) return ut_fail(msg, msg_len, AN_EINVAL, "rec_run_write: r or path is NULL");
    json_t *root = json_object();
    if (!root) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    int status = AN_OK;
    json_object_set_new(root, "record_version", json_integer(RUN_RECORD_VERSION));
    for (int i = 0; i < 4 && status == AN_OK; i++) {
        json_t *s = json_string(r->info[i]);
        if (!s || json_object_set_new(root, info_keys[i], s) != 0)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: %s '%s' is not valid UTF-8", path,
                             info_keys[i], r->info[i]);
    }
    const int64_t times[2] = {r->start, r->end};
    const char *time_keys[2] = {"start_time", "end_time"};
    for (int i = 0; i < 2 && status == AN_OK; i++) {
        json_t *tj = time_json(times[i]);
        if (!tj || json_object_set_new(root, time_keys[i], tj) != 0)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: %s %" PRId64 " is not a year 0-9999",
                             path, time_keys[i], times[i]);
    }
    if (status == AN_OK) {
        json_object_set(root, "options", r->options);
        status = rec_write_json(path, root, JSON_INDENT(2) | JSON_REAL_PRECISION(17), msg, msg_len);
    }
    json_decref(root);
    return status;
}

int rec_write_json(const char *path, const json_t *j, size_t flags, char *msg, size_t msg_len)
{
    if (!path || !j) return ut_fail(msg, msg_len, AN_EINVAL, "rec_write_json: NULL argument");
    char *text = json_dumps(j, flags);
    if (!text) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: json_dumps failed", path);
    const size_t n = strlen(text);
    char *with_newline = realloc(text, n + 2);
    if (!with_newline) {
        free(text);
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    }
    with_newline[n] = '\n';
    with_newline[n + 1] = '\0';
    const int status = af_write(path, with_newline, n + 1, msg, msg_len);
    free(with_newline);
    return status;
}

/* One string member of root (a time when t is not NULL: a string or null). */
static int read_member(json_t *root, const char *path, const char *key, const char **s, int64_t *t,
                       char *msg, size_t msg_len)
{
    json_t *v = json_object_get(root, key);
    if (!v) return ut_fail(msg, msg_len, AN_EFORMAT, "%s: missing \"%s\"", path, key);
    if (t && json_is_null(v)) {
        *t = REC_NO_TIME;
        return AN_OK;
    }
    if (!json_is_string(v))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"%s\" is not a string%s", path, key,
                       t ? " or null" : "");
    *s = json_string_value(v);
    if (t && rec_time_parse(*s, t) != AN_OK)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: \"%s\": '%s' is not a UTC time YYYY-MM-DDTHH:MM:SSZ", path, key, *s);
    return AN_OK;
}

rec_run *rec_run_read(const char *path, char *msg, size_t msg_len)
{
    if (!path) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_run_read: path is NULL");
        return NULL;
    }
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        const int code = json_error_code(&err) == json_error_cannot_open_file ? AN_EIO : AN_EFORMAT;
        ut_fail(msg, msg_len, code, "%s:%d:%d: %s", path, err.line, err.column, err.text);
        return NULL;
    }
    rec_run *r = NULL;
    const char *info[4];
    int64_t start = REC_NO_TIME, end = REC_NO_TIME;
    const char *ignored;
    json_t *version = json_object_get(root, "record_version");
    json_t *options = json_object_get(root, "options");
    if (!json_is_object(root)) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: not a JSON object", path);
        goto done;
    }
    if (!json_is_integer(version) || json_integer_value(version) != RUN_RECORD_VERSION) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"record_version\" is not %d", path,
                RUN_RECORD_VERSION);
        goto done;
    }
    for (int i = 0; i < 4; i++)
        if (read_member(root, path, info_keys[i], &info[i], NULL, msg, msg_len) != AN_OK) goto done;
    if (read_member(root, path, "start_time", &ignored, &start, msg, msg_len) != AN_OK ||
        read_member(root, path, "end_time", &ignored, &end, msg, msg_len) != AN_OK)
        goto done;
    if (!json_is_object(options)) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"options\" is missing or not an object", path);
        goto done;
    }
    const char *key;
    json_t *value;
    json_object_foreach(options, key, value)
    {
        if (!*key || !(json_is_string(value) || json_is_integer(value) || json_is_real(value))) {
            ut_fail(msg, msg_len, AN_EFORMAT,
                    "%s: option \"%s\" is not a non-empty name with a string or number", path, key);
            goto done;
        }
    }
    r = rec_run_new(info[0], info[1], info[2], info[3]);
    if (!r) {
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    json_decref(r->options);
    r->options = json_incref(options);
    r->start = start;
    r->end = end;
done:
    json_decref(root);
    return r;
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
