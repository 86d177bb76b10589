/* options.c: a field set from an option's text by its table row, and the
 * strict number parsing every option shares (see options.h). */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A refusal: the message (ut_fail), then this module's status. */
#define fail(msg, msg_len, ...) ut_fail(msg, msg_len, OPT_EINPUT, __VA_ARGS__)

/* ---- numbers ------------------------------------------------------------ */
int opt_parse_decimal(const char *s, double *value)
{
    if (s[0] == '\0' || isspace((unsigned char)s[0])) return OPT_EINPUT;
    if (strchr(s, 'x') || strchr(s, 'X'))
        return OPT_EINPUT; /* "0x1p3" is a hex float to strtod but a bit pattern to us */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') return OPT_EINPUT;
    /* errno may be ERANGE: strtod has then rounded to an infinity, to zero
     * or to a subnormal, which is the correctly rounded double we want. */
    *value = v;
    return OPT_OK;
}

/* Digits only, after an optional sign: strtoll alone accepts leading space. */
static bool is_decimal_integer(const char *s, bool allow_minus)
{
    if (*s == '+' || (allow_minus && *s == '-')) s++;
    if (*s == '\0') return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

int opt_parse_int(const char *s, int64_t min, int64_t max, int64_t *value)
{
    if (!is_decimal_integer(s, true)) return OPT_EINPUT;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < min || v > max) return OPT_EINPUT;
    *value = v;
    return OPT_OK;
}

int opt_parse_uint(const char *s, uint64_t umax, uint64_t *value)
{
    if (!is_decimal_integer(s, false)) return OPT_EINPUT;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v > umax) return OPT_EINPUT;
    *value = v;
    return OPT_OK;
}

/* ---- rows --------------------------------------------------------------- */
const opt_spec *opt_find(const opt_spec *table, const char *name)
{
    for (const opt_spec *r = table; r->name; r++)
        if (*r->name && strcmp(r->name, name) == 0) return r;
    return NULL;
}

bool opt_takes_value(const opt_spec *row) { return row->kind != OPT_FLAG; }

const char *opt_choice_list(const char *const *choices, char *buf, size_t len)
{
    size_t n = 0, used = 0;
    while (choices[n])
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, choices[i]);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
    return buf;
}

int opt_choice(const opt_spec *row, const char *text, int *index, char *msg, size_t msg_len)
{
    for (int i = 0; row->choices[i]; i++)
        if (strcmp(text, row->choices[i]) == 0) {
            *index = i;
            return OPT_OK;
        }
    char list[512];
    return fail(msg, msg_len, "--%s wants %s, got '%s'", row->name,
                opt_choice_list(row->choices, list, sizeof list), text);
}

const char *opt_metavar(const opt_spec *row, char *buf, size_t len)
{
    if (row->metavar) return row->metavar;
    switch (row->kind) {
    case OPT_FLAG: return "";
    case OPT_PATH: return "FILE";
    case OPT_DIR: return "DIR";
    case OPT_I64:
    case OPT_INT:
    case OPT_SIZE:
    case OPT_U64: return "N";
    case OPT_FLOAT:
    case OPT_DOUBLE: return "X";
    case OPT_ONOFF: return "on|off";
    case OPT_CHOICE: {
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; row->choices[i]; i++) {
            int w = snprintf(buf + used, len - used, "%s%s", i ? "|" : "", row->choices[i]);
            if (w < 0 || (size_t)w >= len - used) break;
            used += (size_t)w;
        }
        return buf;
    }
    default: return "S";
    }
}

int opt_set(const opt_spec *row, void *base, const char *text, char *msg, size_t msg_len)
{
    /* every option that takes a value wants one: `--lr ''` and `--lr=` are refused
     * here, once, before a custom parser or a field sees them */
    if (opt_takes_value(row) && (!text || !*text))
        return fail(msg, msg_len, "option --%s needs a value", row->name);
    if (row->parse) return row->parse(row, base, text, msg, msg_len);
    if (row->offset == OPT_NO_FIELD) return OPT_OK;
    char *field = (char *)base + row->offset;
    int64_t n;
    double d;
    int index;
    switch (row->kind) {
    case OPT_FLAG: *(bool *)field = true; return OPT_OK;
    case OPT_STRING:
    case OPT_PATH:
    case OPT_DIR: *(const char **)field = text; return OPT_OK;
    case OPT_I64:
    case OPT_INT:
    case OPT_SIZE:
    case OPT_U64:
        if (opt_parse_int(text, row->imin, row->imax, &n) != 0)
            return fail(msg, msg_len, "--%s wants an integer in [%lld, %lld], got '%s'", row->name,
                        (long long)row->imin, (long long)row->imax, text);
        if (row->kind == OPT_I64)
            *(int64_t *)field = n;
        else if (row->kind == OPT_INT)
            *(int *)field = (int)n;
        else if (row->kind == OPT_SIZE)
            *(size_t *)field = (size_t)n;
        else
            *(uint64_t *)field = (uint64_t)n;
        return OPT_OK;
    case OPT_FLOAT:
    case OPT_DOUBLE:
        if (opt_parse_decimal(text, &d) != 0 || !isfinite(d) || d < row->rmin || d > row->rmax ||
            (row->open_min && d == row->rmin))
            return fail(msg, msg_len, "--%s wants a number in %c%g, %g], got '%s'", row->name,
                        row->open_min ? '(' : '[', row->rmin, row->rmax, text);
        if (row->kind == OPT_FLOAT)
            *(float *)field = (float)d;
        else
            *(double *)field = d;
        return OPT_OK;
    case OPT_ONOFF:
        if (strcmp(text, "on") == 0)
            *(bool *)field = true;
        else if (strcmp(text, "off") == 0)
            *(bool *)field = false;
        else
            return fail(msg, msg_len, "--%s wants on or off, got '%s'", row->name, text);
        return OPT_OK;
    case OPT_CHOICE:
        if (opt_choice(row, text, &index, msg, msg_len) != 0) return OPT_EINPUT;
        *(int *)field = index;
        return OPT_OK;
    case OPT_CUSTOM: break;
    }
    return fail(msg, msg_len, "--%s: no way to read it", row->name);
}
