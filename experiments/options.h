/* options.h: options as data.  A command's options are one table of rows
 * {name, kind, field, range, metavar, help, group}; the same table sets a
 * field from an option's text (here, in the library floor, so the training
 * library's own table and every study fill their structures the way the
 * command line does), and gives the program its parsing of argv, its --help,
 * the man page and the completion (app/cli_options.c).
 *
 * Values are parsed strictly (opt_parse_decimal, opt_parse_int): no
 * surrounding space, no trailing characters, no hex floats.  Errors come back
 * as OPT_EINPUT with one message naming the option ("--lr wants a number in
 * (0, 1e+06], got 'x'"); nothing here prints.
 */
#ifndef AMPSCOPE_OPTIONS_H
#define AMPSCOPE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { OPT_OK = 0, OPT_EINPUT = -2 };

typedef enum opt_kind {
    OPT_FLAG,   /* no value: sets a bool (or calls parse with a NULL text) */
    OPT_STRING, /* const char *, the text itself */
    OPT_PATH,   /* const char *, a file */
    OPT_DIR,    /* const char *, a directory */
    OPT_I64,    /* int64_t in [imin, imax] */
    OPT_INT,    /* int in [imin, imax] */
    OPT_SIZE,   /* size_t in [imin, imax] */
    OPT_U64,    /* uint64_t in [imin, imax] (imax at most INT64_MAX) */
    OPT_FLOAT,  /* a finite float in [rmin, rmax] ((rmin, rmax] when open_min) */
    OPT_DOUBLE, /* the same as a double */
    OPT_ONOFF,  /* bool from "on" or "off" */
    OPT_CHOICE, /* int: the index of the text among choices */
    OPT_CUSTOM  /* parse() */
} opt_kind;

/* No field: the row is documented and recognised, its text kept by the
 * caller (or handled by parse). */
#define OPT_NO_FIELD SIZE_MAX

typedef struct opt_spec opt_spec;
/* Sets what row means from text (NULL for a flag) in base; 0, or
 * OPT_EINPUT with a message. */
typedef int (*opt_parse_fn)(const opt_spec *row, void *base, const char *text, char *msg,
                            size_t msg_len);

struct opt_spec {
    const char *name; /* without "--"; NULL ends a table; "" a line of help, not an option */
    opt_kind kind;
    size_t offset; /* of the field in the options structure, or OPT_NO_FIELD */
    int64_t imin, imax;
    double rmin, rmax;
    bool open_min;
    const char *const *choices; /* OPT_CHOICE (and custom rows that pick a name): NULL-ended */
    opt_parse_fn parse;         /* OPT_CUSTOM; for OPT_FLAG, instead of setting a bool */
    /* The help: "--name METAVAR" (METAVAR from the kind when NULL: N, X, on|off, a|b|c, DIR,
     * FILE, S), or label instead when not NULL ("" : printed with another row's label).
     * help may hold '\n' (its lines go on under the help column) and, with help_arg, one %s. */
    const char *metavar;
    const char *label;
    const char *help;
    const char *(*help_arg)(void);
    const char *group; /* a heading ("optimizer:") printed before this row */
    bool deferred;     /* recognised now, checked later by the table's owner (train's scaler) */
};

/* The row called name in table, or NULL. */
const opt_spec *opt_find(const opt_spec *table, const char *name);
/* Whether the row takes a value (every kind but OPT_FLAG). */
bool opt_takes_value(const opt_spec *row);
/* Sets row's field in base from text; 0 or OPT_EINPUT with the message.
 * A row that takes a value refuses an empty or missing text ("option --NAME
 * needs a value"), whatever its kind or parser. */
int opt_set(const opt_spec *row, void *base, const char *text, char *msg, size_t msg_len);
/* The index of text among row->choices, or OPT_EINPUT with "--NAME wants A, B or C, got 'T'". */
int opt_choice(const opt_spec *row, const char *text, int *index, char *msg, size_t msg_len);
/* "A, B or C" from a NULL-ended list (with "or" before the last). */
const char *opt_choice_list(const char *const *choices, char *buf, size_t len);
/* The metavar the help shows for row: its own, or one from its kind. */
const char *opt_metavar(const opt_spec *row, char *buf, size_t len);

/* All of s as a decimal floating-point number the way strtod reads it (also inf, nan),
 * rounded to nearest; no empty string, surrounding space, trailing characters or hex
 * floats.  0, or OPT_EINPUT without a message. */
int opt_parse_decimal(const char *s, double *value);
/* All of s as a decimal integer in [min, max] (or [0, umax]).  0, or OPT_EINPUT. */
int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *value);
int opt_parse_uint(const char *s, uint64_t umax, uint64_t *value);

#endif
