/* csv.c: reading comma-separated files (csv.h): the line source, splitting
 * and columns, the whole-file table and typed fields. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a file line by line ------------------------------------------------------------ */
int csv_open(csv_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->fp = fopen(path, "rb");
    return r->fp ? AN_OK : AN_EIO;
}

bool csv_next(csv_reader *r)
{
    const ssize_t got = getline(&r->line, &r->cap, r->fp);
    if (got <= 0) return false;
    r->line_no++;
    r->offset = r->end;
    r->end += got;
    r->complete = r->line[got - 1] == '\n';
    r->len = r->complete ? (size_t)got - 1 : (size_t)got;
    r->line[r->len] = '\0';
    r->has_nul = strlen(r->line) != r->len;
    return true;
}

bool csv_error(const csv_reader *r) { return r->fp && ferror(r->fp); }

void csv_close(csv_reader *r)
{
    free(r->line);
    if (r->fp) fclose(r->fp);
    memset(r, 0, sizeof *r);
}

/* ---- lines and columns ------------------------------------------------------------------ */
size_t csv_count_fields(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

size_t csv_split(char *line, char **fields, size_t max)
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

int csv_column(const char *header, const char *name)
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

void csv_missing_columns(char *const *fields, size_t n_fields, const char *want, char *out,
                         size_t len)
{
    out[0] = '\0';
    for (const char *p = want; *p;) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        bool found = false;
        for (size_t k = 0; k < n_fields && !found; k++)
            found = strlen(fields[k]) == n && memcmp(fields[k], p, n) == 0;
        if (!found) {
            const size_t used = strlen(out);
            snprintf(out + used, len - used, "%s'%.*s'", used ? ", " : "", (int)n, p);
        }
        p += n + (comma ? 1 : 0);
    }
}

/* ---- a whole file ---------------------------------------------------------------------- */
void csv_table_free(csv_table *t)
{
    free(t->text);
    free(t->fields);
    memset(t, 0, sizeof *t);
}

/* Every line of rd, its line end ("\n", "\r\n") removed, one after the
 * other in *text, each NUL-terminated; *last_complete: whether the last
 * one ended with a newline. */
static int slurp_lines(csv_reader *rd, const char *name, char **text, size_t *lines,
                       bool *last_complete, char *msg, size_t msg_len)
{
    size_t n = 0, cap = 0;
    bool nul = false, oom = false;
    *text = NULL;
    *lines = 0;
    while (csv_next(rd)) {
        size_t len = rd->len;
        if (len && rd->line[len - 1] == '\r') len--;
        if (!oom && n + len + 1 > cap) {
            size_t more = cap ? cap : 65536;
            while (more < n + len + 1)
                more *= 2;
            char *p = realloc(*text, more);
            if (p) {
                *text = p;
                cap = more;
            } else {
                oom = true;
            }
        }
        if (!oom) {
            memcpy(*text + n, rd->line, len);
            (*text)[n + len] = '\0';
            n += len + 1;
        }
        nul = nul || rd->has_nul;
        *last_complete = rd->complete;
        (*lines)++;
    }
    /* in this order: what the file could not give, then what it gave */
    if (csv_error(rd)) return ut_fail(msg, msg_len, AN_EIO, "%s: read error", name);
    if (oom) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", name);
    if (*lines == 0)
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: empty file (no header row)", name);
    if (nul) return ut_fail(msg, msg_len, AN_EFORMAT, "%s: a NUL byte: not a CSV file", name);
    return AN_OK;
}

int csv_table_read(const char *path, const char *name, csv_table *t, char *msg, size_t msg_len)
{
    memset(t, 0, sizeof *t);
    csv_reader rd;
    if (csv_open(&rd, path) != AN_OK)
        return ut_fail(msg, msg_len, AN_EIO, "%s: cannot open: %s", name, strerror(errno));
    size_t lines = 0;
    bool last_complete = false;
    int status = slurp_lines(&rd, name, &t->text, &lines, &last_complete, msg, msg_len);
    csv_close(&rd);
    if (status != AN_OK) {
        csv_table_free(t);
        return status;
    }
    t->cols = csv_count_fields(t->text);
    t->fields = malloc(lines * t->cols * sizeof *t->fields);
    if (!t->fields) {
        csv_table_free(t);
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", name);
    }
    char *line = t->text;
    for (size_t no = 1; no <= lines; no++) {
        char *next = line + strlen(line) + 1;
        if (!*line && no > 1) { /* a blank line ends nothing and holds nothing */
            line = next;
            continue;
        }
        const size_t got = csv_count_fields(line);
        if (got != t->cols) {
            status =
                ut_fail(msg, msg_len, AN_EFORMAT, "%s:%zu: expected %zu fields, got %zu%s", name,
                        no, t->cols, got,
                        no < lines || last_complete ? "" : " (the file ends there: cut short?)");
            csv_table_free(t);
            return status;
        }
        csv_split(line, t->fields + t->rows * t->cols, t->cols);
        t->rows++;
        line = next;
    }
    return AN_OK;
}

int csv_table_column(const csv_table *t, const char *name)
{
    for (size_t k = 0; k < t->cols; k++)
        if (strcmp(t->fields[k], name) == 0) return (int)k;
    return -1;
}

/* ---- typed fields ---------------------------------------------------------------------- */
bool csv_parse_i64(const char *s, int64_t *v)
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

bool csv_parse_u64(const char *s, uint64_t *v)
{
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    const unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *v = (uint64_t)x;
    return true;
}

int csv_bad_field(const csv_row *r, int col, const char *what)
{
    return ut_fail(r->msg, r->msg_len, AN_EFORMAT, "%s:%zu: column '%s': '%s' is not %s", r->file,
                   r->line, r->columns[col], r->fields[col], what);
}

int csv_get_count(const csv_row *r, int col, int64_t *v)
{
    return csv_parse_i64(r->fields[col], v) && *v >= 0
               ? AN_OK
               : csv_bad_field(r, col, "a non-negative integer");
}

int csv_get_u64(const csv_row *r, int col, uint64_t *v)
{
    return csv_parse_u64(r->fields[col], v) ? AN_OK
                                            : csv_bad_field(r, col, "a non-negative integer");
}

int csv_get_bool(const csv_row *r, int col, bool *v)
{
    const char *s = r->fields[col];
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) return csv_bad_field(r, col, "0 or 1");
    *v = s[0] == '1';
    return AN_OK;
}

int csv_get_flag(const csv_row *r, int col, int *v)
{
    bool b;
    if (csv_get_bool(r, col, &b) != AN_OK) return AN_EFORMAT;
    *v = b ? 1 : 0;
    return AN_OK;
}

/* strtof/strtod read the whole field, which must not start with a space
 * (they would skip it) and must not be empty. */
static bool number_start_ok(const char *s)
{
    return *s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v';
}

int csv_get_f32(const csv_row *r, int col, float *v)
{
    const char *s = r->fields[col];
    char *end;
    if (number_start_ok(s)) {
        errno = 0;
        *v = strtof(s, &end);
        /* ERANGE on underflow is fine: subnormals print and read back */
        if (!*end && (errno == 0 || errno == ERANGE)) return AN_OK;
    }
    return csv_bad_field(r, col, "a number");
}

int csv_get_f64(const csv_row *r, int col, double *v)
{
    const char *s = r->fields[col];
    char *end;
    if (number_start_ok(s)) {
        errno = 0;
        *v = strtod(s, &end);
        if (!*end && (errno == 0 || errno == ERANGE)) return AN_OK;
    }
    return csv_bad_field(r, col, "a number");
}

int csv_get_frac(const csv_row *r, int col, double *v)
{
    if (r->fields[col][0] == '\0') {
        *v = NAN;
        return AN_OK;
    }
    return csv_get_f64(r, col, v);
}
