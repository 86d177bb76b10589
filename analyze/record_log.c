/* record_log.c: the CSV logs of record.h as files: opening one for
 * appending (the header written once, or checked), the resume that cuts a
 * log back to its checkpoint's step (and drops a last line a kill cut
 * short), the check before that resume (rec_log_check: no gap, no
 * duplicate, not cut short), flushing, syncing and closing.  The rows are
 * written by record_write.c. */
#define _POSIX_C_SOURCE 200809L /* ftruncate, fdopen */
#include "record_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"

int rec_log_fail(rec_log *log, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log->error, sizeof log->error, fmt, ap);
    va_end(ap);
    return status;
}

/* The step field of the reader's complete line with the header's number
 * of fields (cut at its comma in place). */
static int row_step(csv_reader *in, const char *path, int step_col, int64_t *step, char *msg,
                    size_t msg_len)
{
    char *f = in->line;
    for (int i = 0; i < step_col; i++)
        f = strchr(f, ',') + 1;
    char *comma = strchr(f, ',');
    if (comma) *comma = '\0';
    if (!csv_parse_i64(f, step))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: column 'step': '%s' is not an integer",
                       path, in->line_no, f);
    return AN_OK;
}

/* Whether a row of step `step` may follow the kept rows before it (*last,
 * -1 before the first) in a log that e describes (rec_log_check). */
static int check_order(const rec_log_expect *e, const char *path, size_t line_no, int64_t step,
                       int64_t *last, char *msg, size_t msg_len)
{
    const long long s = step, p = *last, next = *last + e->every;
    int status = AN_OK;
    if (e->every <= 0)
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s:%zu: a row of step %lld, but this run logs no rows there", path,
                         line_no, s);
    else if (*last < 0 && step != e->first)
        status =
            ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: the first row is step %lld, expected %lld",
                    path, line_no, s, (long long)e->first);
    else if (*last >= 0 && step == *last && e->one_row)
        status =
            ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: step %lld appears twice", path, line_no, s);
    else if (*last >= 0 && step < *last)
        status =
            ut_fail(msg, msg_len, AN_EFORMAT,
                    "%s:%zu: step %lld after step %lld: the steps go back", path, line_no, s, p);
    else if (*last >= 0 && step > next)
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s:%zu: step %lld after step %lld: the rows of step %lld are missing",
                         path, line_no, s, p, next);
    else if (*last >= 0 && step != *last && step != next)
        status = ut_fail(msg, msg_len, AN_EFORMAT,
                         "%s:%zu: step %lld after step %lld, expected step %lld (one every %lld)",
                         path, line_no, s, p, next, (long long)e->every);
    *last = step;
    return status;
}

/* Where the log at path must be cut for a resume after step keep (see
 * rec_log_open): *cut = the offset of the first line to drop, or the file's
 * size.  With e, the rows kept must also be in e's order (rec_log_check);
 * *last is the step of the last one (-1: none). */
static int scan_log(const char *path, const char *header, int step_col, int64_t keep,
                    const rec_log_expect *e, off_t *cut, int64_t *last, char *msg, size_t msg_len)
{
    csv_reader in;
    *last = -1;
    if (csv_open(&in, path) != AN_OK)
        return ut_fail(msg, msg_len, AN_EIO, "%s: cannot read: %s", path, strerror(errno));
    const size_t header_len = strlen(header), ncols = csv_count_fields(header);
    int status = AN_OK;
    *cut = -1;
    while (*cut < 0 && csv_next(&in)) {
        char *line = in.line;
        const size_t n = in.len;
        if (in.line_no == 1) {
            /* A header cut short is rewritten; anything else is not our file. */
            const bool match = in.complete ? n == header_len && memcmp(line, header, n) == 0
                                           : n <= header_len && memcmp(line, header, n) == 0;
            if (!match) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s: header is '%.*s', expected '%s'",
                                 path, (int)(n > 200 ? 200 : n), line, header);
                break;
            }
            if (!in.complete) *cut = 0;
        } else if (!in.complete) {
            *cut = (off_t)in.offset;
        } else {
            if (in.has_nul) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: a NUL byte in the line", path,
                                 in.line_no);
                break;
            }
            const size_t got = csv_count_fields(line);
            if (got != ncols) {
                status = ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: expected %zu fields, got %zu",
                                 path, in.line_no, ncols, got);
                break;
            }
            int64_t step;
            if ((status = row_step(&in, path, step_col, &step, msg, msg_len)) != AN_OK) break;
            if (step > keep)
                *cut = (off_t)in.offset;
            else if (e && (status = check_order(e, path, in.line_no, step, last, msg, msg_len)))
                break;
        }
    }
    if (status == AN_OK && csv_error(&in))
        status = ut_fail(msg, msg_len, AN_EIO, "%s: read: %s", path, strerror(errno));
    if (status == AN_OK && *cut < 0) *cut = (off_t)in.end;
    csv_close(&in);
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
    const int step_col = csv_column(header, "step");
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
        if (strcmp(header, rec_table_header(t)) == 0) log->table = t;

    const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
        ut_fail(msg, msg_len, AN_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
        goto fail;
    }
    off_t cut = 0;
    int64_t last;
    if (scan_log(path, header, step_col, resume_after_step, NULL, &cut, &last, msg, msg_len) !=
        AN_OK) {
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

int rec_log_check(const char *path, const char *header, const rec_log_expect *e, char *msg,
                  size_t msg_len)
{
    const int step_col = header && e ? csv_column(header, "step") : -1;
    if (!path || !*path || step_col < 0 || e->first < 0 || e->every < 0 || e->through < -1)
        return ut_fail(
            msg, msg_len, AN_EINVAL,
            "rec_log_check: an empty path, a header without 'step' or a bad expectation");
    /* the last step whose rows the log must hold: first + k * every <= through */
    const int64_t need = e->every > 0 && e->through >= e->first
                             ? e->first + (e->through - e->first) / e->every * e->every
                             : -1;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        if (need < 0) return AN_OK; /* created on opening */
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: missing; the checkpoint keeps its rows through step %lld", path,
                       (long long)need);
    }
    off_t cut;
    int64_t last;
    const int status = scan_log(path, header, step_col, e->through, e, &cut, &last, msg, msg_len);
    if (status != AN_OK) return status;
    if (last < 0 && need >= 0)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: no rows, but the checkpoint keeps the rows through step %lld: the log "
                       "was cut short",
                       path, (long long)need);
    if (last < need)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: its last row is step %lld, but the checkpoint keeps the rows through "
                       "step %lld: the log was cut short",
                       path, (long long)last, (long long)need);
    return AN_OK;
}

rec_log *rec_log_open_table(const char *dir, rec_table t, int64_t resume_after_step, char *msg,
                            size_t msg_len)
{
    if (!dir || !*dir || (unsigned)t >= REC_TABLES) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_log_open_table: empty directory or invalid table");
        return NULL;
    }
    const size_t n = strlen(dir) + strlen(rec_table_file(t)) + 2;
    char *path = malloc(n);
    if (!path) {
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", dir);
        return NULL;
    }
    snprintf(path, n, "%s/%s", dir, rec_table_file(t));
    rec_log *log = rec_log_open(path, rec_table_header(t), resume_after_step, msg, msg_len);
    free(path);
    return log;
}

int rec_log_flush(rec_log *log)
{
    if (!log) return AN_EINVAL;
    errno = 0;
    if (fflush(log->fp) != 0 || ferror(log->fp))
        return rec_log_fail(log, AN_EIO, "%s: write: %s", log->path, strerror(errno ? errno : EIO));
    return AN_OK;
}

int rec_log_sync(rec_log *log)
{
    if (!log) return AN_EINVAL;
    const int status = rec_log_flush(log);
    if (status != AN_OK) return status;
    if (fsync(fileno(log->fp)) != 0)
        return rec_log_fail(log, AN_EIO, "%s: fsync: %s", log->path, strerror(errno));
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
