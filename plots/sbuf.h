/* sbuf.h: a growing string, how plots/ builds its page, its CSV files and
 * gnuplot's command lines in memory.  An allocation that fails marks the
 * string failed (the text is then incomplete) and later additions do
 * nothing, so a writer checks once, at the end.  Private to plots/. */
#ifndef AMPSCOPE_PLOTS_SBUF_H
#define AMPSCOPE_PLOTS_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed; /* an allocation failed: the text is incomplete */
} sbuf;

void sb_addn(sbuf *b, const char *s, size_t n);
void sb_add(sbuf *b, const char *s);
void sb_vprintf(sbuf *b, const char *fmt, va_list ap);
void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Text as HTML: the five characters that can end an element or attribute
 * escaped. */
void sb_html(sbuf *b, const char *s);
/* A relative file name as a URL: unreserved characters and '/' as they
 * are, the rest percent-encoded. */
void sb_url(sbuf *b, const char *s);
/* A number for a CSV written here: exact enough to read back, and an
 * empty field (missing data to gnuplot) when it is not finite. */
void sb_num(sbuf *b, double v, int digits);
const char *sb_str(const sbuf *b); /* "" while empty */
void sb_free(sbuf *b);

#endif
