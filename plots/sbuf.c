/* sbuf.c: a growing string (sbuf.h). */
#include "sbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool sb_reserve(sbuf *b, size_t more)
{
    if (b->failed) return false;
    if (b->n + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void sb_addn(sbuf *b, const char *s, size_t n)
{
    if (!sb_reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void sb_add(sbuf *b, const char *s) { sb_addn(b, s, strlen(s)); }

void sb_vprintf(sbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    if (n >= 0 && sb_reserve(b, (size_t)n)) {
        vsnprintf(b->p + b->n, (size_t)n + 1, fmt, again);
        b->n += (size_t)n;
    }
    va_end(again);
}

void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void sb_html(sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': sb_add(b, "&amp;"); break;
        case '<': sb_add(b, "&lt;"); break;
        case '>': sb_add(b, "&gt;"); break;
        case '"': sb_add(b, "&quot;"); break;
        case '\'': sb_add(b, "&#39;"); break;
        default: sb_addn(b, s, 1);
        }
    }
}

void sb_url(sbuf *b, const char *s)
{
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/", c))
            sb_addn(b, s, 1);
        else
            sb_printf(b, "%%%02X", c);
    }
}

const char *sb_str(const sbuf *b) { return b->p ? b->p : ""; }

void sb_free(sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void sb_num(sbuf *b, double v, int digits)
{
    if (isfinite(v)) sb_printf(b, "%.*g", digits, v);
}
