/* csv.h: reading comma-separated files with a header line, the one CSV
 * reader of analyze/ (the record's logs, record.h) and plots/ (the report's
 * tables and figure data, a sweep's summary.csv).
 *
 * The files are ampscope's own: fields separated by commas, no quoting, the
 * first line the header.  Two ways in, one line source under both:
 *   csv_reader  a file line by line, each line with its number, its byte
 *               offset and whether it ended with a newline, for a reader
 *               that decides itself what a line cut short means (the
 *               record's logs: a run killed mid-write; their resume);
 *   csv_table   a whole file in memory, split into rows of fields, for
 *               files read by column name (the report).
 * Around them: splitting a line, finding columns by name, and typed fields
 * whose errors name the file, the line and the column
 * ("run/steps.csv:17: column 'loss': 'x' is not a number").
 *
 * Errors as in atomic_file.h: an AN_* status and a message.
 */
#ifndef AMPSCOPE_CSV_H
#define AMPSCOPE_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "atomic_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- a file line by line ------------------------------------------------------------ */
typedef struct csv_reader {
    FILE *fp;
    char *line;     /* the current line, its newline removed, NUL-terminated */
    size_t len;     /* its length in bytes (a NUL byte inside it counts) */
    size_t cap;     /* of line */
    size_t line_no; /* the current line's number, 1 for the first */
    int64_t offset; /* the byte offset where the current line starts */
    int64_t end;    /* the byte offset just past it (and its newline) */
    bool complete;  /* it ended with a newline (a last line may not) */
    bool has_nul;   /* it holds a NUL byte: not text */
} csv_reader;

/* Opens path for reading: AN_OK, or AN_EIO with errno saying why (the
 * caller names the file in its own words). */
int csv_open(csv_reader *r, const char *path);
/* The next line into r (line, len, line_no, offset, complete, has_nul):
 * true, or false at the end of the file or on a read error (csv_error). */
bool csv_next(csv_reader *r);
/* Whether reading failed (errno says why). */
bool csv_error(const csv_reader *r);
void csv_close(csv_reader *r); /* harmless on a reader csv_open failed on */

/* ---- lines and columns ------------------------------------------------------------------ */
/* The number of fields of a line (its commas plus one). */
size_t csv_count_fields(const char *line);
/* Splits line at its commas in place; returns the number of fields, storing
 * at most max pointers. */
size_t csv_split(char *line, char **fields, size_t max);
/* The index of the column name in a header line, or -1. */
int csv_column(const char *header, const char *name);
/* The columns of the comma-separated list want that the n header fields
 * lack, as "'series'" or "'x', 'series'" in out; "" when it has them all. */
void csv_missing_columns(char *const *fields, size_t n, const char *want, char *out, size_t len);

/* ---- a whole file ---------------------------------------------------------------------- */
/* Fields NUL-terminated in place in text; row i's fields are
 * fields[i * cols ...], row 0 the header. */
typedef struct csv_table {
    char *text;
    char **fields;
    size_t rows, cols;
} csv_table;

/* Reads path (named name in messages): a header, then rows with as many
 * fields each.  A "\r\n" line end reads as "\n", a blank line after the
 * header is skipped, and a last line without its newline counts when it is
 * whole.  AN_OK, or an error with a message ("loss.csv:7: expected 3
 * fields, got 2"). */
int csv_table_read(const char *path, const char *name, csv_table *t, char *msg, size_t msg_len);
void csv_table_free(csv_table *t);
/* The index of the header's column name, or -1. */
int csv_table_column(const csv_table *t, const char *name);

/* ---- typed fields ---------------------------------------------------------------------- */
/* Strict decimal integers: an optional '-' (i64 only), then digits only;
 * no spaces, no '+', no empty string, nothing after, no overflow. */
bool csv_parse_i64(const char *s, int64_t *v);
bool csv_parse_u64(const char *s, uint64_t *v);

/* One row being parsed, for messages: fields[k] is under columns[k]. */
typedef struct csv_row {
    const char *file;
    size_t line;
    char **fields;
    const char *const *columns;
    char *msg;
    size_t msg_len;
} csv_row;

/* AN_EFORMAT with "FILE:LINE: column 'C': 'VALUE' is not WHAT". */
int csv_bad_field(const csv_row *r, int col, const char *what);
/* Each: AN_OK with the value, or csv_bad_field. */
int csv_get_count(const csv_row *r, int col, int64_t *v); /* an integer >= 0 */
int csv_get_u64(const csv_row *r, int col, uint64_t *v);
int csv_get_bool(const csv_row *r, int col, bool *v); /* 0 or 1 */
int csv_get_flag(const csv_row *r, int col, int *v);  /* 0 or 1 */
/* Numbers as strtof/strtod read them, the whole field (inf, nan, hex and
 * subnormals included; no leading space, not empty). */
int csv_get_f32(const csv_row *r, int col, float *v);
int csv_get_f64(const csv_row *r, int col, double *v);
/* A fraction: a number, or an empty field for an undefined one (NaN). */
int csv_get_frac(const csv_row *r, int col, double *v);

#ifdef __cplusplus
}
#endif
#endif
