/* report.c: the report's page (report.h): opening a report (its folder,
 * which gnuplot draws), sections, claims, paragraphs and the notes of what
 * was left out, built in memory and written once, atomically, as
 * index.html by rp_close.  The figures are figure.c's, the tables
 * table.c's; report_internal.h lists the rest.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "atomic_file.h"
#include "record.h"
#include "report_internal.h"

const char *rp_dir(const rp_report *r) { return r ? r->dir : NULL; }
bool rp_have_gnuplot(const rp_report *r) { return r && r->gnuplot; }

void rp_set_progress(rp_report *r, rp_progress_fn *fn, void *ctx)
{
    if (!r) return;
    r->progress = fn;
    r->progress_ctx = ctx;
}

void rp_progress(rp_report *r, const char *fmt, ...)
{
    if (!r->progress) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->progress(r->progress_ctx, line);
}

void rp_io_failed(rp_report *r, const char *why)
{
    if (r && !r->io_failed[0]) snprintf(r->io_failed, sizeof r->io_failed, "%s", why);
}

char *rp_join_path(const char *dir, const char *name)
{
    const size_t d = strlen(dir), n = d + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s", dir, d && dir[d - 1] == '/' ? "" : "/", name);
    return p;
}

int rp_make_dirs(const char *dir, char *msg, size_t msg_len)
{
    char *p = strdup(dir);
    if (!p) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", dir);
    int rc = AN_OK;
    for (char *s = p + 1;; s++) {
        const bool end = *s == '\0';
        if (*s == '/' || end) {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                rc = ut_fail(msg, msg_len, AN_EIO, "mkdir %s: %s", p, strerror(errno));
                break;
            }
            if (end) break;
            *s = '/';
        }
    }
    struct stat st;
    if (rc == AN_OK && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        rc = ut_fail(msg, msg_len, AN_EIO, "%s: not a directory", dir);
    free(p);
    return rc;
}

rp_report *rp_open(const char *out_dir, const char *title, char *msg, size_t msg_len)
{
    if (!out_dir || !*out_dir) {
        ut_fail(msg, msg_len, AN_EINVAL, "rp_open: empty output directory");
        return NULL;
    }
    if (rp_make_dirs(out_dir, msg, msg_len) != AN_OK) return NULL;
    rp_report *r = calloc(1, sizeof *r);
    if (r) {
        r->dir = strdup(out_dir);
        r->title = strdup(title && *title ? title : "ampscope report");
    }
    if (!r || !r->dir || !r->title) {
        if (r) {
            free(r->dir);
            free(r->title);
        }
        free(r);
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", out_dir);
        return NULL;
    }
    /* "out/" and "out" are one folder; the page's paths are relative anyway */
    for (size_t n = strlen(r->dir); n > 1 && r->dir[n - 1] == '/'; n--)
        r->dir[n - 1] = '\0';
    rp_find_gnuplot(r);
    if (msg && msg_len) msg[0] = '\0';
    return r;
}

/* ---- page text ------------------------------------------------------------------------ */
void rp_missing(rp_report *r, const char *what, const char *why)
{
    if (!r) return;
    r->n_notes++;
    sb_printf(&r->body, "<div class=\"note\" id=\"note-%zu\"><strong>Left out: ", r->n_notes);
    sb_html(&r->body, what ? what : "?");
    sb_add(&r->body, "</strong><br>");
    sb_html(&r->body, why ? why : "");
    sb_add(&r->body, "</div>\n");
    sb_printf(&r->notes, "<li><a href=\"#note-%zu\">", r->n_notes);
    sb_html(&r->notes, what ? what : "?");
    sb_add(&r->notes, "</a>: ");
    sb_html(&r->notes, why ? why : "");
    sb_add(&r->notes, "</li>\n");
}

void rp_missingf(rp_report *r, const char *what, const char *fmt, ...)
{
    char why[WHY_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rp_missing(r, what, why);
}

/* Section ids become anchors: anything but [A-Za-z0-9_-] is replaced. */
void rp_section(rp_report *r, const char *id, const char *title)
{
    if (!r) return;
    char anchor[64];
    size_t n = 0;
    for (const char *s = id ? id : ""; *s && n + 1 < sizeof anchor; s++) {
        const unsigned char c = (unsigned char)*s;
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_';
        anchor[n++] = ok ? (char)c : '-';
    }
    anchor[n] = '\0';
    if (!n) snprintf(anchor, sizeof anchor, "section");
    sb_printf(&r->body, "<h2 id=\"%s\">", anchor);
    sb_html(&r->body, title ? title : "");
    sb_add(&r->body, "</h2>\n");
    sb_printf(&r->toc, "<li><a href=\"#%s\">", anchor);
    sb_html(&r->toc, title ? title : "");
    sb_add(&r->toc, "</a></li>\n");
}

void rp_claim(rp_report *r, const char *claim, const char *literature, const char *ours,
              const char *difference)
{
    if (!r) return;
    const char *label[4] = {"Claim", "Literature", "Ours", "Difference"};
    const char *text[4] = {claim, literature, ours, difference};
    sb_add(&r->body, "<dl class=\"claim\">\n");
    for (int i = 0; i < 4; i++) {
        if (!text[i]) continue;
        sb_printf(&r->body, "<dt>%s</dt><dd>", label[i]);
        sb_html(&r->body, text[i]);
        sb_add(&r->body, "</dd>\n");
    }
    sb_add(&r->body, "</dl>\n");
}

void rp_paragraph(rp_report *r, const char *text)
{
    if (!r) return;
    sb_add(&r->body, "<p>");
    sb_html(&r->body, text ? text : "");
    sb_add(&r->body, "</p>\n");
}

void rp_paragraphf(rp_report *r, const char *fmt, ...)
{
    if (!r || !fmt) return;
    sbuf text = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&text, fmt, ap);
    va_end(ap);
    rp_paragraph(r, sb_str(&text));
    if (text.failed) r->body.failed = true;
    sb_free(&text);
}

/* ---- the page ----------------------------------------------------------------------------- */
static const char page_style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1000px;"
    "margin:2em auto;padding:0 1em;color:#222;line-height:1.45}"
    "h1{font-size:1.7em;margin-bottom:.2em}"
    "h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}"
    ".meta,.small{color:#666;font-size:.9em}"
    "figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}"
    "figcaption{font-size:.92em;color:#333;margin-top:.3em}"
    ".files{color:#777;white-space:nowrap}"
    "details summary{cursor:pointer;color:#777;font-size:.9em}"
    "pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:.85em}"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;font-size:.9em}"
    "th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left}"
    "th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr:nth-child(even) td{background:#fafafa}"
    ".note{background:#fff6e0;border-left:4px solid #e6a700;padding:.5em .8em;margin:1em 0}"
    ".undrawn{background:#f4f4f4;border-left:4px solid #999;padding:.5em .8em;margin:1em 0}"
    ".summary{background:#fff6e0;border:1px solid #e6c46a;padding:.6em 1em;margin:1em 0}"
    ".claim{display:grid;grid-template-columns:8em 1fr;gap:.3em 1em;border:1px solid #cfdcec;"
    "background:#f5f9fd;padding:.8em 1em;margin:1em 0}"
    ".claim dt{font-weight:600;color:#2a4a6b}.claim dd{margin:0}";

int rp_close(rp_report *r, char *msg, size_t msg_len)
{
    if (!r) return ut_fail(msg, msg_len, RP_EINVAL, "rp_close: no report");
    sbuf page = {0};
    sb_add(&page, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>");
    sb_html(&page, r->title);
    sb_printf(&page, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", page_style);
    sb_html(&page, r->title);
    sb_add(&page, "</h1>\n<p class=\"meta\">Written by ampscope");
    char when[REC_TIME_MAX];
    if (rec_time_format((int64_t)time(NULL), when) == AN_OK) {
        sb_add(&page, " on ");
        sb_html(&page, when);
    }
    sb_add(&page, "; figures by ");
    sb_html(&page, r->gnuplot ? r->gnuplot_about : "none");
    sb_add(&page, ". Every figure links its data (CSV) and the gnuplot script that drew it; "
                  "redraw one by running the command under it in this folder.</p>\n");
    if (!r->gnuplot && r->n_undrawn) {
        sb_add(&page, "<div class=\"summary\"><strong>No figures:</strong> ");
        sb_html(&page, r->gnuplot_about);
        sb_add(&page, ". Install gnuplot (<code>apt-get install gnuplot-nox</code>) and write the "
                      "report again; the tables and every figure's data are below.</div>\n");
    }
    if (r->n_notes) {
        sb_printf(&page,
                  "<div class=\"summary\"><strong>%zu thing%s left out</strong> of this "
                  "report:<ul>\n",
                  r->n_notes, r->n_notes == 1 ? " was" : "s were");
        sb_add(&page, sb_str(&r->notes));
        sb_add(&page, "</ul></div>\n");
    }
    if (r->toc.n) {
        sb_add(&page, "<nav><strong>Contents</strong><ul>\n");
        sb_add(&page, sb_str(&r->toc));
        sb_add(&page, "</ul></nav>\n");
    }
    sb_add(&page, sb_str(&r->body));
    sb_add(&page, "</body>\n</html>\n");

    int rc = RP_OK;
    char why[WHY_MAX];
    char *path = rp_join_path(r->dir, "index.html");
    if (page.failed || r->body.failed || r->toc.failed || r->notes.failed || !path)
        rc = ut_fail(msg, msg_len, RP_EIO, "%s/index.html: out of memory", r->dir);
    else if (af_write(path, page.p, page.n, why, sizeof why) != AN_OK)
        rc = ut_fail(msg, msg_len, RP_EIO, "%s", r->io_failed[0] ? r->io_failed : why);
    else if (r->io_failed[0])
        rc = ut_fail(msg, msg_len, RP_EIO, "%s (%s/index.html names what was left out)",
                     r->io_failed, r->dir);
    else if (r->n_undrawn)
        rc = ut_fail(msg, msg_len, RP_ENOGNUPLOT,
                     "%s: no figures drawn (install gnuplot: apt-get install gnuplot-nox); the "
                     "CSV files and tables are in %s/index.html",
                     r->gnuplot_about, r->dir);
    else if (r->n_notes)
        rc = ut_fail(msg, msg_len, RP_EPARTIAL,
                     "%s/index.html: %zu thing%s left out (see its notes)", r->dir, r->n_notes,
                     r->n_notes == 1 ? "" : "s");
    else if (msg && msg_len)
        msg[0] = '\0';
    free(path);
    sb_free(&page);
    sb_free(&r->toc);
    sb_free(&r->body);
    sb_free(&r->notes);
    free(r->gnuplot);
    free(r->dir);
    free(r->title);
    free(r);
    return rc;
}

int rp_worse(int a, int b)
{
    /* RP_EIO > RP_ENOGNUPLOT > RP_EPARTIAL > RP_OK; RP_EINVAL is the caller's bug */
    static const int order[] = {RP_OK, RP_EPARTIAL, RP_ENOGNUPLOT, RP_EINVAL, RP_EIO};
    int ra = 0, rb = 0;
    for (int k = 0; k < 5; k++) {
        if (order[k] == a) ra = k;
        if (order[k] == b) rb = k;
    }
    return ra >= rb ? a : b;
}
