/* csv.c: the studies' CSV files in OUT, each written atomically (af_*),
 * a failure's reason left in the study's msg. */
#include "reproduce_internal.h"

#include <stdarg.h>
#include <stdio.h>

#include "atomic_file.h"

bool repro_csv_open(repro_study *s, repro_csv *c, const char *name, const char *header)
{
    char p[4096];
    repro_path(s, p, sizeof p, name, NULL);
    c->ok = af_begin(&c->f, p, s->msg, sizeof s->msg) == 0;
    if (c->ok) fprintf(c->f.fp, "%s\n", header);
    return c->ok;
}

void repro_csv_row(repro_csv *c, const char *fmt, ...)
{
    if (!c->ok) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->f.fp, fmt, ap);
    va_end(ap);
    fputc('\n', c->f.fp);
}

/* Gives the file up (the reason is already in s->msg). */
void repro_csv_abort(repro_csv *c)
{
    if (c->ok) af_abort(&c->f);
    c->ok = false;
}

bool repro_csv_close(repro_study *s, repro_csv *c)
{
    if (!c->ok) return false;
    c->ok = false;
    return af_commit(&c->f, s->msg, sizeof s->msg) == 0;
}
