/* report.c: the report writer (report.h).  The page is built in memory
 * and written once, atomically, by rp_close; figures are drawn by running
 * gnuplot on the built-in scripts (plot_scripts.inc, generated from
 * plots/<name>.gp) in the report folder, after the CSV each one reads has been
 * checked, so a bad input becomes a note that names the file and column
 * rather than a gnuplot error.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, fork/exec, vsnprintf */

#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"

#include "plot_scripts.inc" /* embedded_scripts[]: every plots/<name>.gp */

#define SCRIPT_COUNT (sizeof embedded_scripts / sizeof embedded_scripts[0])
#define WHY_MAX      1024 /* a note's reason */
#define TABLE_ROWS   200  /* rows of a CSV shown on the page; all are in the linked file */

/* The figure scripts and the columns each reads (common.gp is loaded by all). */
static const struct figure_script {
    const char *name;
    const char *columns;
} figure_scripts[] = {
    {"lines.gp", "x,y,series"},
    {"scale.gp", "step,scale,skipped,series"},
    {"hist.gp", "bin,count,series"},
    {"heatmap.gp", "x,y,value"},
    {"scatter.gp", "predicted,measured,label"},
};
#define FIGURE_SCRIPT_COUNT (sizeof figure_scripts / sizeof figure_scripts[0])

/* ---- a growing string --------------------------------------------------------------- */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed; /* an allocation failed: the text is incomplete */
} sbuf;

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

static void sb_addn(sbuf *b, const char *s, size_t n)
{
    if (!sb_reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_add(sbuf *b, const char *s) { sb_addn(b, s, strlen(s)); }

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap)
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

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* Text as HTML: the five characters that can end an element or attribute. */
static void sb_html(sbuf *b, const char *s)
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

/* A relative file name as a URL: unreserved characters and '/' as they
 * are, the rest percent-encoded. */
static void sb_url(sbuf *b, const char *s)
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

static const char *sb_str(const sbuf *b) { return b->p ? b->p : ""; }

static void sb_free(sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- the report ---------------------------------------------------------------------- */
struct rp_report {
    char *dir, *title;
    char *gnuplot;           /* the gnuplot that runs, NULL when none */
    char gnuplot_about[256]; /* its version, or why there is none */
    sbuf toc, body, notes;   /* the contents, the page, the list of what was left out */
    size_t n_notes;          /* things left out */
    size_t n_undrawn;        /* figures not drawn for want of gnuplot */
    bool scripts_written[SCRIPT_COUNT];
    rp_progress_fn *progress;
    void *progress_ctx;
    size_t n_sweeps; /* rp_add_sweep calls: the second sweep's files are sweep2_* */
};

const char *rp_dir(const rp_report *r) { return r ? r->dir : NULL; }
bool rp_have_gnuplot(const rp_report *r) { return r && r->gnuplot; }

void rp_set_progress(rp_report *r, rp_progress_fn *fn, void *ctx)
{
    if (!r) return;
    r->progress = fn;
    r->progress_ctx = ctx;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
progress(rp_report *r, const char *fmt, ...)
{
    if (!r->progress) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->progress(r->progress_ctx, line);
}

/* dir/name, malloc'ed (NULL when out of memory); "run/" gives "run/name". */
static char *join_path(const char *dir, const char *name)
{
    const size_t d = strlen(dir), n = d + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s", dir, d && dir[d - 1] == '/' ? "" : "/", name);
    return p;
}

/* Creates dir and its missing parents. */
static int make_dirs(const char *dir, char *msg, size_t msg_len)
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

/* Runs path with argv in cwd (NULL: here), stdin from /dev/null, stdout
 * and stderr together into out (its last out_len - 1 bytes, where an error
 * message is).  0 with the wait status in *status, or -1 with why. */
static int run_program(const char *path, char *const argv[], const char *cwd, char *out,
                       size_t out_len, int *status, char *why, size_t why_len)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return -1;
    }
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        /* only async-signal-safe calls between fork and exec */
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        if (fd[1] > 2) close(fd[1]);
        if (cwd && chdir(cwd) != 0) _exit(126);
        execv(path, argv);
        _exit(127);
    }
    close(fd[1]);
    const size_t cap = out_len ? out_len - 1 : 0;
    size_t kept = 0;
    char chunk[4096];
    for (;;) {
        const ssize_t got = read(fd[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        /* keep the tail: drop from the front what no longer fits */
        size_t n = (size_t)got;
        const char *from = chunk;
        if (n > cap) {
            from += n - cap;
            n = cap;
        }
        if (kept + n > cap) {
            const size_t drop = kept + n - cap;
            memmove(out, out + drop, kept - drop);
            kept -= drop;
        }
        memcpy(out + kept, from, n);
        kept += n;
    }
    if (out_len) out[kept] = '\0';
    close(fd[0]);
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(why, why_len, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* The last non-empty line of text, copied into line. */
static void last_line(const char *text, char *line, size_t len)
{
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    snprintf(line, len, "%.*s", (int)(end - start), start);
}

/* "exited with status 1", "was killed by signal 9" */
static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "ended with wait status %d", status);
}

/* The first executable `gnuplot` on PATH, if `gnuplot --version` runs. */
static void find_gnuplot(rp_report *r)
{
    const char *path = getenv("PATH");
    snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "gnuplot is not on PATH");
    if (!path || !*path) return;
    char *found = NULL;
    for (const char *p = path; !found;) {
        const char *colon = strchr(p, ':');
        const size_t n = colon ? (size_t)(colon - p) : strlen(p);
        /* an empty entry is the current directory, as for execvp */
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(n ? n : 1), n ? p : ".");
        char *cand = join_path(dir, "gnuplot");
        struct stat st;
        if (cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
        if (!colon) break;
        p = colon + 1;
    }
    if (!found) return;
    char out[512], why[256], state[64];
    int status = 0;
    char *argv[] = {found, (char *)"--version", NULL};
    if (run_program(found, argv, NULL, out, sizeof out, &status, why, sizeof why) != 0) {
        snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "%.150s --version: %.90s", found, why);
        free(found);
        return;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        describe_status(status, state, sizeof state);
        snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "%.150s --version %s", found, state);
        free(found);
        return;
    }
    last_line(out, r->gnuplot_about, sizeof r->gnuplot_about);
    r->gnuplot = found;
}

rp_report *rp_open(const char *out_dir, const char *title, char *msg, size_t msg_len)
{
    if (!out_dir || !*out_dir) {
        ut_fail(msg, msg_len, AN_EINVAL, "rp_open: empty output directory");
        return NULL;
    }
    if (make_dirs(out_dir, msg, msg_len) != AN_OK) return NULL;
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
    find_gnuplot(r);
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

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
missingf(rp_report *r, const char *what, const char *fmt, ...)
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

/* ---- CSV ------------------------------------------------------------------------------ */
/* A CSV file read whole: fields are NUL-terminated in place in text;
 * row i's fields are fields[i * cols ...], row 0 the header. */
typedef struct csv {
    char *text;
    char **fields;
    size_t rows, cols;
} csv;

static void csv_free(csv *c)
{
    free(c->text);
    free(c->fields);
    memset(c, 0, sizeof *c);
}

static size_t count_fields(const char *line, size_t len)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += line[i] == ',';
    return n;
}

/* Reads path (shown as name in messages): a header, then rows with as
 * many fields each.  A last line without its newline counts when it is
 * whole.  0, or -1 with why ("loss.csv:7: expected 3 fields, got 2"). */
static int csv_read(const char *path, const char *name, csv *c, char *why, size_t why_len)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "%s: cannot open: %s", name, strerror(errno));
        return -1;
    }
    sbuf all = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_addn(&all, chunk, n);
    const bool read_error = ferror(f);
    fclose(f);
    if (read_error || all.failed) {
        snprintf(why, why_len, "%s: %s", name, read_error ? "read error" : "out of memory");
        sb_free(&all);
        return -1;
    }
    if (all.n == 0) {
        snprintf(why, why_len, "%s: empty file (no header row)", name);
        sb_free(&all);
        return -1;
    }
    if (memchr(all.p, '\0', all.n)) {
        snprintf(why, why_len, "%s: a NUL byte: not a CSV file", name);
        sb_free(&all);
        return -1;
    }
    c->text = all.p;
    size_t lines = 1;
    for (size_t i = 0; i < all.n; i++)
        lines += all.p[i] == '\n';
    char *eol = strchr(c->text, '\n');
    size_t hlen = eol ? (size_t)(eol - c->text) : all.n;
    if (hlen && c->text[hlen - 1] == '\r') hlen--;
    c->cols = count_fields(c->text, hlen);
    c->fields = malloc(lines * c->cols * sizeof *c->fields);
    if (!c->fields) {
        snprintf(why, why_len, "%s: out of memory", name);
        csv_free(c);
        return -1;
    }
    char *line = c->text;
    for (size_t no = 1; line && *line; no++) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0 && no > 1) { /* a blank line ends nothing and holds nothing */
            line = next;
            continue;
        }
        const size_t got = count_fields(line, len);
        if (got != c->cols) {
            snprintf(why, why_len, "%s:%zu: expected %zu fields, got %zu%s", name, no, c->cols, got,
                     next ? "" : " (the file ends there: cut short?)");
            csv_free(c);
            return -1;
        }
        char **row = c->fields + c->rows * c->cols;
        for (size_t k = 0; k < c->cols; k++) {
            row[k] = line;
            char *comma = strchr(line, ',');
            if (comma) *comma = '\0';
            line = comma ? comma + 1 : line + strlen(line);
        }
        c->rows++;
        line = next;
    }
    return 0;
}

/* The columns of the comma-separated list want that the header fields
 * lack, as "'series'" or "'x', 'series'"; "" when it has them all. */
static void missing_columns(char *const *fields, size_t n_fields, const char *want, char *out,
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

/* ---- tables ---------------------------------------------------------------------------- */
/* A number shown with 4 significant digits (the CSV keeps them all);
 * integers, text and non-finite values as written. */
static void sb_cell(sbuf *b, const char *field)
{
    char *end;
    errno = 0;
    const double v = strtod(field, &end);
    const bool number = *field && *end == '\0' && errno == 0;
    if (number && isfinite(v) && strpbrk(field, ".eE")) {
        char shown[32];
        snprintf(shown, sizeof shown, "%.4g", v);
        sb_add(b, "<td class=\"num\">");
        sb_html(b, shown);
    } else {
        sb_add(b, number ? "<td class=\"num\">" : "<td>");
        sb_html(b, field);
    }
    sb_add(b, "</td>");
}

int rp_table_csv(rp_report *r, const char *caption, const char *csv_name)
{
    if (!r) return RP_EINVAL;
    const char *what = caption && *caption ? caption : csv_name ? csv_name : "a table";
    if (!csv_name || !*csv_name) {
        rp_missing(r, what, "rp_table_csv: no CSV file named");
        return RP_EINVAL;
    }
    char why[WHY_MAX];
    char *path = join_path(r->dir, csv_name);
    csv c;
    const int rc = path ? csv_read(path, csv_name, &c, why, sizeof why) : -1;
    if (!path) snprintf(why, sizeof why, "%s: out of memory", csv_name);
    free(path);
    if (rc != 0) {
        char w[WHY_MAX + 64];
        snprintf(w, sizeof w, "table %s", what);
        rp_missing(r, w, why);
        return RP_EPARTIAL;
    }
    sbuf *b = &r->body;
    sb_add(b, "<figure class=\"table\"><figcaption>");
    sb_html(b, caption ? caption : "");
    sb_add(b, " <span class=\"files\">(<a href=\"");
    sb_url(b, csv_name);
    sb_add(b, "\">CSV</a>)</span></figcaption>\n<div class=\"scroll\"><table>\n<tr>");
    for (size_t k = 0; k < c.cols; k++) {
        sb_add(b, "<th>");
        sb_html(b, c.fields[k]);
        sb_add(b, "</th>");
    }
    sb_add(b, "</tr>\n");
    const size_t shown = c.rows - 1 < TABLE_ROWS ? c.rows - 1 : TABLE_ROWS;
    for (size_t i = 1; i <= shown; i++) {
        sb_add(b, "<tr>");
        for (size_t k = 0; k < c.cols; k++)
            sb_cell(b, c.fields[i * c.cols + k]);
        sb_add(b, "</tr>\n");
    }
    sb_add(b, "</table></div>\n");
    if (shown < c.rows - 1)
        sb_printf(b, "<p class=\"small\">The first %zu of %zu rows; all are in the CSV.</p>\n",
                  shown, c.rows - 1);
    sb_add(b, "</figure>\n");
    csv_free(&c);
    return RP_OK;
}

/* ---- figures ---------------------------------------------------------------------------- */
static bool file_name_ok(const char *s)
{
    if (!s || !*s || *s == '.' || strlen(s) > 200) return false;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* A relative path inside the report folder: no leading '/', no "..". */
static bool relative_path_ok(const char *s)
{
    if (!s || !*s || *s == '/' || strchr(s, '\n')) return false;
    for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return false;
    return true;
}

static bool var_name_ok(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        const char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* key='value' for gnuplot -e: inside single quotes gnuplot reads '' as one
 * quote and nothing else specially; a newline would end the command. */
static void sb_gnuplot_assign(sbuf *b, const char *key, size_t key_len, const char *value)
{
    if (b->n) sb_add(b, ";");
    sb_addn(b, key, key_len);
    sb_add(b, "='");
    for (const char *s = value; *s; s++) {
        if (*s == '\'')
            sb_add(b, "''");
        else if (*s == '\n' || *s == '\r')
            sb_add(b, " ");
        else
            sb_addn(b, s, 1);
    }
    sb_add(b, "'");
}

/* s inside double quotes for a POSIX shell. */
static void sb_shell_quoted(sbuf *b, const char *s)
{
    sb_add(b, "\"");
    for (; *s; s++) {
        if (strchr("\"$`\\", *s)) sb_add(b, "\\");
        sb_addn(b, s, 1);
    }
    sb_add(b, "\"");
}

static const struct embedded_script *embedded(const char *name)
{
    for (size_t i = 0; i < SCRIPT_COUNT; i++)
        if (strcmp(embedded_scripts[i].name, name) == 0) return &embedded_scripts[i];
    return NULL;
}

/* Writes plots/<name> (and the common.gp it loads) once per report. */
static int write_script(rp_report *r, const char *name, char *why, size_t why_len)
{
    const char *need[2] = {"common.gp", name};
    for (int k = 0; k < 2; k++) {
        const struct embedded_script *s = embedded(need[k]);
        const size_t i = (size_t)(s - embedded_scripts);
        if (r->scripts_written[i]) continue;
        char rel[256];
        snprintf(rel, sizeof rel, "plots/%s", s->name);
        char *plots = join_path(r->dir, "plots");
        char *path = join_path(r->dir, rel);
        int rc = plots && path ? make_dirs(plots, why, why_len) : AN_ENOMEM;
        if (rc == AN_OK) rc = af_write(path, s->text, s->len, why, why_len);
        if (!plots || !path) snprintf(why, why_len, "%s: out of memory", rel);
        free(plots);
        free(path);
        if (rc != AN_OK) return -1;
        r->scripts_written[i] = true;
    }
    return 0;
}

static bool nonempty_file(const char *dir, const char *name)
{
    char *path = join_path(dir, name);
    struct stat st;
    const bool ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
    free(path);
    return ok;
}

static void remove_in(const char *dir, const char *name)
{
    char *path = join_path(dir, name);
    if (path) unlink(path);
    free(path);
}

/* The figure on the page: the PNG linking its SVG, its files, and how to
 * redraw it. */
static void emit_figure(rp_report *r, const char *script, const char *name, const char *caption,
                        const char *in, const char *expr)
{
    sbuf *b = &r->body;
    sb_add(b, "<figure id=\"fig-");
    sb_html(b, name);
    sb_add(b, "\"><a href=\"");
    sb_url(b, name);
    sb_add(b, ".svg\"><img src=\"");
    sb_url(b, name);
    sb_add(b, ".png\" alt=\"");
    sb_html(b, caption);
    sb_add(b, "\"></a>\n<figcaption>");
    sb_html(b, caption);
    sb_add(b, " <span class=\"files\">(<a href=\"");
    sb_url(b, name);
    sb_add(b, ".svg\">SVG</a> &middot; <a href=\"");
    sb_url(b, in);
    sb_add(b, "\">data</a> &middot; <a href=\"plots/");
    sb_url(b, script);
    sb_add(b, "\">script</a>)</span>\n<details><summary>redraw</summary><pre>");
    sbuf cmd = {0};
    sb_add(&cmd, "gnuplot -e ");
    sb_shell_quoted(&cmd, expr);
    sb_printf(&cmd, " plots/%s", script);
    sb_html(b, sb_str(&cmd));
    if (cmd.failed) b->failed = true;
    sb_free(&cmd);
    sb_add(b, "</pre></details></figcaption></figure>\n");
}

/* In place of a figure gnuplot could not draw: its data. */
static void emit_undrawn(rp_report *r, const char *caption, const char *in)
{
    sbuf *b = &r->body;
    sb_add(b, "<div class=\"undrawn\">Figure not drawn (no gnuplot): ");
    sb_html(b, caption);
    sb_add(b, " <span class=\"files\">(<a href=\"");
    sb_url(b, in);
    sb_add(b, "\">data</a>)</span></div>\n");
}

int rp_figure(rp_report *r, const char *script, const char *name, const char *caption,
              const char *const *vars)
{
    if (!r) return RP_EINVAL;
    char what[512], why[WHY_MAX];
    snprintf(what, sizeof what, "figure %s", name && *name ? name : "(unnamed)");
    const struct figure_script *fs = NULL;
    for (size_t i = 0; script && i < FIGURE_SCRIPT_COUNT; i++)
        if (strcmp(figure_scripts[i].name, script) == 0) fs = &figure_scripts[i];
    if (!fs) {
        missingf(r, what, "rp_figure: no built-in script '%s'", script ? script : "(null)");
        return RP_EINVAL;
    }
    if (!file_name_ok(name)) {
        missingf(r, what, "rp_figure: '%s' is not a file name ([A-Za-z0-9_.-], not starting '.')",
                 name ? name : "(null)");
        return RP_EINVAL;
    }
    if (!caption || !*caption) caption = name;

    /* gnuplot's -e: in (when the caller did not set it), the caller's variables in
     * order, then out */
    char default_in[256];
    snprintf(default_in, sizeof default_in, "%s.csv", name);
    const char *in = default_in;
    bool in_given = false;
    for (size_t i = 0; vars && vars[i]; i++) {
        const char *eq = strchr(vars[i], '=');
        const size_t klen = eq ? (size_t)(eq - vars[i]) : 0;
        if (!eq || !var_name_ok(vars[i], klen)) {
            missingf(r, what, "rp_figure: '%s' is not key=value", vars[i]);
            return RP_EINVAL;
        }
        if (klen == 3 && strncmp(vars[i], "out", 3) == 0) {
            missingf(r, what, "rp_figure: 'out' is set by the writer (the figure's name)");
            return RP_EINVAL;
        }
        if (klen == 2 && strncmp(vars[i], "in", 2) == 0) {
            in = eq + 1;
            in_given = true;
        }
    }
    if (!relative_path_ok(in)) {
        missingf(r, what, "rp_figure: in=%s: not a file inside the report folder", in);
        return RP_EINVAL;
    }
    sbuf expr = {0};
    if (!in_given) sb_gnuplot_assign(&expr, "in", 2, in);
    for (size_t i = 0; vars && vars[i]; i++)
        sb_gnuplot_assign(&expr, vars[i], (size_t)(strchr(vars[i], '=') - vars[i]),
                          strchr(vars[i], '=') + 1);
    sb_gnuplot_assign(&expr, "out", 3, name);

    /* the data first: a missing file or column is the data's fault, not gnuplot's */
    char *in_path = join_path(r->dir, in);
    csv c;
    int rc = in_path ? csv_read(in_path, in, &c, why, sizeof why) : -1;
    if (!in_path) snprintf(why, sizeof why, "%s: out of memory", in);
    free(in_path);
    if (rc == 0) {
        char cols[512];
        missing_columns(c.fields, c.cols, fs->columns, cols, sizeof cols);
        if (cols[0])
            snprintf(why, sizeof why, "%s: no column %s (%s reads %s)", in, cols, fs->name,
                     fs->columns);
        else if (c.rows < 2)
            snprintf(why, sizeof why, "%s: no rows under the header", in);
        rc = cols[0] || c.rows < 2 ? -1 : 0;
        csv_free(&c);
    }
    if (rc != 0) {
        rp_missing(r, what, why);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    if (write_script(r, fs->name, why, sizeof why) != 0) {
        rp_missing(r, what, why);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    if (!r->gnuplot) {
        r->n_undrawn++;
        emit_undrawn(r, caption, in);
        sb_free(&expr);
        return RP_ENOGNUPLOT;
    }
    if (expr.failed) {
        rp_missing(r, what, "out of memory");
        sb_free(&expr);
        return RP_EPARTIAL;
    }

    char png[256], svg[256], script_path[256];
    snprintf(png, sizeof png, "%s.png", name);
    snprintf(svg, sizeof svg, "%s.svg", name);
    snprintf(script_path, sizeof script_path, "plots/%s", fs->name);
    remove_in(r->dir, png); /* a figure from an earlier run must not pass for this one */
    remove_in(r->dir, svg);
    progress(r, "drawing %s", png);
    char out[4096], state[64];
    int status = 0;
    char *argv[] = {r->gnuplot, (char *)"-e", expr.p, script_path, NULL};
    if (run_program(r->gnuplot, argv, r->dir, out, sizeof out, &status, why, sizeof why) != 0) {
        missingf(r, what, "running %s: %s", r->gnuplot, why);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char line[512];
        describe_status(status, state, sizeof state);
        last_line(out, line, sizeof line);
        missingf(r, what, "gnuplot %s on %s with %s%s%s", state, script_path, in,
                 line[0] ? ": " : "", line);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    for (int k = 0; k < 2; k++) {
        const char *f = k ? svg : png;
        if (!nonempty_file(r->dir, f)) {
            missingf(r, what, "gnuplot exited 0 but wrote no %s (or an empty one)", f);
            sb_free(&expr);
            return RP_EPARTIAL;
        }
    }
    emit_figure(r, fs->name, name, caption, in, expr.p);
    sb_free(&expr);
    return RP_OK;
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
    char *path = join_path(r->dir, "index.html");
    if (page.failed || r->body.failed || r->toc.failed || r->notes.failed || !path)
        rc = ut_fail(msg, msg_len, RP_EIO, "%s/index.html: out of memory", r->dir);
    else if (af_write(path, page.p, page.n, why, sizeof why) != AN_OK)
        rc = ut_fail(msg, msg_len, RP_EIO, "%s", why);
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

/* ---- run directories ----------------------------------------------------------------------- */
/* One table of one run, read through record.h. */
typedef struct run_table {
    void *rows;
    size_t n;
    int rc; /* AN_OK, or why holds the reason */
    char why[WHY_MAX];
} run_table;

typedef struct run_data {
    const char *dir;
    char label[80]; /* the run's name in figures: its folder's name, made a word */
    rec_run *info;
    char info_why[WHY_MAX];
    run_table t[REC_TABLES];
} run_data;

#define ROWS(run, tab, type) ((const type *)(run)->t[tab].rows)

static void read_table(run_data *run, rec_table tab)
{
    run_table *t = &run->t[tab];
    char *path = join_path(run->dir, rec_table_file(tab));
    if (!path) {
        t->rc = ut_fail(t->why, sizeof t->why, AN_ENOMEM, "out of memory");
        return;
    }
    switch (tab) {
    case REC_STEPS:
        t->rc = rec_read_steps(path, (rec_step_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_TENSORS:
        t->rc = rec_read_tensors(path, (rec_tensor_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_UPDATES:
        t->rc = rec_read_updates(path, (rec_update_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_HIST:
        t->rc = rec_read_hist(path, (rec_hist_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    case REC_EVAL:
        t->rc = rec_read_eval(path, (rec_eval_row **)&t->rows, &t->n, t->why, sizeof t->why);
        break;
    default: t->rc = ut_fail(t->why, sizeof t->why, AN_EINVAL, "not read by the report"); break;
    }
    /* A header that differs is most often a column missing: say which. */
    if (t->rc == AN_EFORMAT && strstr(t->why, ": header is '")) {
        char line[2048], shown[2048], cols[512];
        char *fields[128];
        size_t nf = 0;
        FILE *f = fopen(path, "rb");
        if (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = '\0';
            snprintf(shown, sizeof shown, "%s", line);
            for (char *p = line; p && nf < 128; nf++) {
                fields[nf] = p;
                p = strchr(p, ',');
                if (p) *p++ = '\0';
            }
            missing_columns(fields, nf, rec_table_header(tab), cols, sizeof cols);
            if (cols[0])
                snprintf(t->why, sizeof t->why, "%s: no column %s (the header is '%.300s')", path,
                         cols, shown);
        }
        if (f) fclose(f);
    }
    if (t->rc == AN_OK && t->n == 0)
        t->rc = ut_fail(t->why, sizeof t->why, AN_EFORMAT, "%s: no rows under the header", path);
    free(path);
}

/* The run's folder name as a gnuplot word: [A-Za-z0-9_.+-], the rest '_'. */
static void run_label(run_data *runs, size_t i)
{
    const char *d = runs[i].dir;
    size_t end = strlen(d);
    while (end > 1 && d[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && d[start - 1] != '/')
        start--;
    char base[64];
    size_t n = 0;
    for (size_t k = start; k < end && n + 1 < sizeof base; k++) {
        const unsigned char c = (unsigned char)d[k];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || strchr("_.+-", c);
        base[n++] = ok ? (char)c : '_';
    }
    base[n] = '\0';
    if (!n || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        snprintf(base, sizeof base, "run%zu", i + 1);
    /* two runs in folders of one name stay apart */
    snprintf(runs[i].label, sizeof runs[i].label, "%s", base);
    for (int k = 2;; k++) {
        bool taken = false;
        for (size_t j = 0; j < i; j++)
            taken = taken || strcmp(runs[j].label, runs[i].label) == 0;
        if (!taken) break;
        snprintf(runs[i].label, sizeof runs[i].label, "%s-%d", base, k);
    }
}

/* A number for a CSV written here: exact enough to read back, and an
 * empty field (missing data to gnuplot) when it is not finite. */
static void sb_num(sbuf *b, double v, int digits)
{
    if (isfinite(v)) sb_printf(b, "%.*g", digits, v);
}

/* Writes the CSV text to name in the report folder; a note on failure. */
static int write_csv(rp_report *r, const char *name, sbuf *text, const char *figure)
{
    char why[WHY_MAX];
    char *path = join_path(r->dir, name);
    int rc = !path || text->failed ? AN_ENOMEM : af_write(path, text->p, text->n, why, sizeof why);
    if (rc == AN_ENOMEM) snprintf(why, sizeof why, "%s: out of memory", name);
    free(path);
    if (rc != AN_OK) {
        rp_missing(r, figure, why);
        return RP_EIO;
    }
    return RP_OK;
}

/* Notes, for a figure, each run whose table could not be read. */
static void note_unread(rp_report *r, run_data *runs, size_t n, rec_table tab, const char *figure)
{
    for (size_t i = 0; i < n; i++)
        if (runs[i].t[tab].rc != AN_OK) {
            char what[512];
            snprintf(what, sizeof what, "run %s in %s", runs[i].label, figure);
            rp_missing(r, what, runs[i].t[tab].why);
        }
}

static int worse(int a, int b)
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

/* Writes text as name.csv and draws it; a note instead when no run had rows. */
static int figure_from(rp_report *r, sbuf *text, bool any, const char *script, const char *name,
                       const char *caption, const char *const *more_vars)
{
    char csv_name[256], in[300];
    snprintf(csv_name, sizeof csv_name, "%s.csv", name);
    if (!any) {
        char what[300];
        snprintf(what, sizeof what, "figure %s", name);
        rp_missing(r, what, "no run has the data it needs");
        return RP_EPARTIAL;
    }
    int rc = write_csv(r, csv_name, text, caption);
    if (rc != RP_OK) return rc;
    snprintf(in, sizeof in, "in=%s", csv_name);
    const char *vars[16];
    size_t k = 0;
    vars[k++] = in;
    for (size_t i = 0; more_vars && more_vars[i] && k + 1 < 16; i++)
        vars[k++] = more_vars[i];
    vars[k] = NULL;
    return rp_figure(r, script, name, caption, vars);
}

/* ---- the summary table ---- */
static void option_text(const rec_run *info, const char *key, char *buf, size_t len)
{
    rec_option o;
    buf[0] = '\0';
    if (!info || !rec_run_option(info, key, &o)) return;
    if (o.type == REC_OPT_STRING)
        snprintf(buf, len, "%s", o.string);
    else if (o.type == REC_OPT_INT)
        snprintf(buf, len, "%lld", (long long)o.integer);
    else
        snprintf(buf, len, "%.9g", o.real);
    /* the table is a CSV without quoting */
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == '\n' || *p == '\r') *p = ';';
}

static int summary_table(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "runs", "Runs");
    sbuf t = {0};
    sb_add(&t, "run,net,mode,dtype,loss_scale,backend,steps,final_loss,final_test_accuracy,"
               "skipped_steps,final_scale\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        char v[5][128];
        const char *keys[4] = {"net", "mode", "dtype", "loss-scale"};
        for (int k = 0; k < 4; k++)
            option_text(run->info, keys[k], v[k], sizeof v[k]);
        /* train records loss-scale only when it is given; its default is none */
        if (run->info && !v[3][0]) snprintf(v[3], sizeof v[3], "none");
        snprintf(v[4], sizeof v[4], "%s", run->info ? rec_run_backend(run->info) : "");
        for (char *p = v[4]; *p; p++)
            if (*p == ',') *p = ';';
        sb_printf(&t, "%s,%s,%s,%s,%s,%s,", run->label, v[0], v[1], v[2], v[3], v[4]);
        if (run->t[REC_STEPS].rc == AN_OK) {
            const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
            const size_t ns = run->t[REC_STEPS].n;
            size_t skipped = 0;
            for (size_t k = 0; k < ns; k++)
                skipped += s[k].skipped;
            sb_printf(&t, "%zu,", ns);
            sb_num(&t, s[ns - 1].loss, 9);
            sb_add(&t, ",");
            if (run->t[REC_EVAL].rc == AN_OK)
                sb_num(&t, ROWS(run, REC_EVAL, rec_eval_row)[run->t[REC_EVAL].n - 1].test_accuracy,
                       9);
            sb_printf(&t, ",%zu,", skipped);
            sb_num(&t, s[ns - 1].loss_scale, 9);
            sb_add(&t, "\n");
        } else {
            sb_add(&t, ",,");
            if (run->t[REC_EVAL].rc == AN_OK)
                sb_num(&t, ROWS(run, REC_EVAL, rec_eval_row)[run->t[REC_EVAL].n - 1].test_accuracy,
                       9);
            sb_add(&t, ",,\n");
        }
    }
    for (size_t i = 0; i < n; i++) {
        char what[256];
        snprintf(what, sizeof what, "run %s in the table of runs", runs[i].label);
        if (!runs[i].info) rp_missing(r, what, runs[i].info_why);
    }
    note_unread(r, runs, n, REC_STEPS, "the table of runs (steps, final loss, skips, scale)");
    note_unread(r, runs, n, REC_EVAL, "the table of runs (final test accuracy)");
    int rc = write_csv(r, "runs.csv", &t, "the table of runs");
    sb_free(&t);
    if (rc == RP_OK)
        rc = rp_table_csv(r,
                          "The runs: options from run.json; the last step's loss and scale, "
                          "the steps whose update was skipped (steps.csv), the last evaluation "
                          "(eval.csv).",
                          "runs.csv");
    return rc;
}

/* ---- training curves and the loss scale ---- */
static int training_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "training", "Training");
    sbuf loss = {0}, acc = {0};
    bool any_loss = false, any_acc = false;
    sb_add(&loss, "x,y,series\n");
    sb_add(&acc, "x,y,series\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        if (run->t[REC_STEPS].rc == AN_OK) {
            const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
            for (size_t k = 0; k < run->t[REC_STEPS].n; k++) {
                sb_printf(&loss, "%lld,", (long long)s[k].step);
                sb_num(&loss, s[k].loss, 9);
                sb_printf(&loss, ",%s\n", run->label);
            }
            any_loss = true;
        }
        if (run->t[REC_EVAL].rc == AN_OK) {
            const rec_eval_row *e = ROWS(run, REC_EVAL, rec_eval_row);
            for (size_t k = 0; k < run->t[REC_EVAL].n; k++) {
                sb_printf(&acc, "%lld,", (long long)e[k].epoch);
                sb_num(&acc, e[k].test_accuracy, 9);
                sb_printf(&acc, ",%s\n", run->label);
            }
            any_acc = true;
        }
    }
    note_unread(r, runs, n, REC_STEPS, "the training-loss figure");
    const char *lv[] = {"title=Training loss", "xlabel=step", "ylabel=loss (per batch)", NULL};
    int rc = figure_from(r, &loss, any_loss, "lines.gp", "loss",
                         "The training loss of every step (steps.csv: loss).", lv);
    note_unread(r, runs, n, REC_EVAL, "the test-accuracy figure");
    const char *av[] = {"title=Test accuracy", "xlabel=epoch (eval.csv, from 0)",
                        "ylabel=test accuracy", "points=1", NULL};
    rc = worse(rc, figure_from(r, &acc, any_acc, "lines.gp", "accuracy",
                               "Test accuracy after each epoch (eval.csv: test_accuracy).", av));
    sb_free(&loss);
    sb_free(&acc);

    rp_section(r, "loss-scale", "Loss scale");
    sbuf sc = {0};
    bool any = false;
    sb_add(&sc, "step,scale,skipped,series\n");
    for (size_t i = 0; i < n; i++) {
        const run_data *run = &runs[i];
        if (run->t[REC_STEPS].rc != AN_OK) continue;
        const rec_step_row *s = ROWS(run, REC_STEPS, rec_step_row);
        for (size_t k = 0; k < run->t[REC_STEPS].n; k++) {
            sb_printf(&sc, "%lld,", (long long)s[k].step);
            sb_num(&sc, s[k].loss_scale, 9);
            sb_printf(&sc, ",%d,%s\n", s[k].skipped ? 1 : 0, run->label);
        }
        any = true;
    }
    note_unread(r, runs, n, REC_STEPS, "the loss-scale figure");
    const char *sv[] = {"title=Loss scale", NULL};
    rc = worse(rc, figure_from(r, &sc, any, "scale.gp", "scale",
                               "The scale each step's loss was multiplied by (steps.csv: "
                               "loss_scale); circles mark the steps whose update was skipped "
                               "for a non-finite gradient (skipped).",
                               sv));
    sb_free(&sc);
    return rc;
}

/* ---- per layer ---- */
typedef struct name_list {
    char (*names)[REC_NAME_MAX];
    size_t n, cap;
} name_list;

static bool names_add(name_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return true;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        void *p = realloc(l->names, cap * sizeof *l->names);
        if (!p) return false;
        l->names = p;
        l->cap = cap;
    }
    snprintf(l->names[l->n++], REC_NAME_MAX, "%s", name);
    return true;
}

static bool is_grad(rec_kind k) { return k == REC_ACTIVATION_GRAD || k == REC_WEIGHT_GRAD; }

static int flushed_figures(rp_report *r, run_data *runs, size_t n)
{
    name_list layers = {0};
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].t[REC_TENSORS].rc != AN_OK) continue;
        const rec_tensor_row *t = ROWS(&runs[i], REC_TENSORS, rec_tensor_row);
        for (size_t k = 0; k < runs[i].t[REC_TENSORS].n; k++)
            if (is_grad(t[k].kind)) oom = oom || !names_add(&layers, t[k].layer);
    }
    rp_paragraph(r, "Per layer, the fraction of the nonzero gradients that the cast to the run's "
                    "statistics format (tensors.csv: dtype) flushes to zero, at the loss scale "
                    "the step used (tensors.csv: flushed_frac_of_nonzero, activation_grad and "
                    "weight_grad rows). A gap is a step where the tensor had no nonzero value.");
    note_unread(r, runs, n, REC_TENSORS, "the flushed-gradient figures");
    int rc = oom ? RP_EIO : RP_OK;
    if (oom) rp_missing(r, "the flushed-gradient figures", "out of memory");
    if (!layers.n && !oom) {
        rp_missing(r, "the flushed-gradient figures",
                   "no run has activation_grad or weight_grad rows in tensors.csv");
        rc = RP_EPARTIAL;
    }
    for (size_t l = 0; l < layers.n; l++) {
        sbuf text = {0};
        sb_add(&text, "x,y,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_TENSORS].rc != AN_OK) continue;
            const rec_tensor_row *t = ROWS(&runs[i], REC_TENSORS, rec_tensor_row);
            /* one series per run and kind, the rows of each together */
            for (int kind = REC_WEIGHT_GRAD; kind <= REC_ACTIVATION_GRAD; kind++)
                for (size_t k = 0; k < runs[i].t[REC_TENSORS].n; k++) {
                    if ((int)t[k].kind != kind || strcmp(t[k].layer, layers.names[l]) != 0)
                        continue;
                    sb_printf(&text, "%lld,", (long long)t[k].step);
                    sb_num(&text, t[k].flushed_frac_of_nonzero, 17);
                    sb_printf(&text, ",%s:%s\n", runs[i].label, rec_kind_name(t[k].kind));
                }
        }
        char name[128], title[160], caption[256];
        snprintf(name, sizeof name, "flushed_%s", layers.names[l]);
        snprintf(title, sizeof title, "title=%s: gradients flushed to zero", layers.names[l]);
        snprintf(caption, sizeof caption,
                 "Layer %s: the fraction of its nonzero gradients flushed to zero by the cast.",
                 layers.names[l]);
        const char *v[] = {title, "xlabel=step", "ylabel=flushed / nonzero", "points=1", NULL};
        rc = worse(rc, figure_from(r, &text, true, "lines.gp", name, caption, v));
        sb_free(&text);
    }
    free(layers.names);
    return rc;
}

static int update_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "lost-updates", "Lost updates");
    rp_paragraph(r, "Per layer, the fraction of the nonzero weight updates that rounding to the "
                    "weights' format lost entirely (updates.csv: lost_frac_of_nonzero), beside "
                    "the fraction the 2^11 rule predicts from the update's and the weight's "
                    "magnitudes (predicted_lost_frac_of_nonzero).");
    name_list layers = {0};
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].t[REC_UPDATES].rc != AN_OK) continue;
        const rec_update_row *u = ROWS(&runs[i], REC_UPDATES, rec_update_row);
        for (size_t k = 0; k < runs[i].t[REC_UPDATES].n; k++)
            oom = oom || !names_add(&layers, u[k].layer);
    }
    note_unread(r, runs, n, REC_UPDATES, "the lost-update figures");
    int rc = oom ? RP_EIO : RP_OK;
    if (oom) rp_missing(r, "the lost-update figures", "out of memory");
    for (size_t l = 0; l < layers.n; l++) {
        sbuf text = {0};
        sb_add(&text, "x,y,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_UPDATES].rc != AN_OK) continue;
            const rec_update_row *u = ROWS(&runs[i], REC_UPDATES, rec_update_row);
            for (int pred = 0; pred < 2; pred++)
                for (size_t k = 0; k < runs[i].t[REC_UPDATES].n; k++) {
                    if (strcmp(u[k].layer, layers.names[l]) != 0) continue;
                    sb_printf(&text, "%lld,", (long long)u[k].step);
                    sb_num(&text,
                           pred ? u[k].predicted_lost_frac_of_nonzero : u[k].lost_frac_of_nonzero,
                           17);
                    sb_printf(&text, ",%s:%s\n", runs[i].label, pred ? "predicted" : "lost");
                }
        }
        char name[128], title[160], caption[256];
        snprintf(name, sizeof name, "updates_%s", layers.names[l]);
        snprintf(title, sizeof title, "title=%s: weight updates lost to rounding", layers.names[l]);
        snprintf(caption, sizeof caption,
                 "Layer %s: lost updates, measured (lost) and predicted by the 2^11 rule "
                 "(predicted).",
                 layers.names[l]);
        const char *v[] = {title, "xlabel=step", "ylabel=lost / nonzero updates", "points=1", NULL};
        rc = worse(rc, figure_from(r, &text, true, "lines.gp", name, caption, v));
        sb_free(&text);
    }
    free(layers.names);
    return rc;
}

/* ---- histograms ---- */
static int hist_figures(rp_report *r, run_data *runs, size_t n)
{
    rp_section(r, "underflow", "Underflow");
    int rc = RP_OK;
    note_unread(r, runs, n, REC_HIST, "the gradient histograms");
    static const rec_kind kinds[2] = {REC_ACTIVATION_GRAD, REC_WEIGHT_GRAD};
    static const char *const titles[2] = {"Activation gradients", "Weight gradients"};
    uint64_t *sum = calloc(AK_HIST_BINS, sizeof *sum);
    if (!sum) {
        rp_missing(r, "the gradient histograms", "out of memory");
        return RP_EIO;
    }
    for (int q = 0; q < 2; q++) {
        sbuf text = {0}, zeros = {0};
        bool any = false;
        sb_add(&text, "bin,count,series\n");
        for (size_t i = 0; i < n; i++) {
            if (runs[i].t[REC_HIST].rc != AN_OK) continue;
            const rec_hist_row *h = ROWS(&runs[i], REC_HIST, rec_hist_row);
            const size_t nh = runs[i].t[REC_HIST].n;
            int64_t last = -1;
            for (size_t k = 0; k < nh; k++)
                if (h[k].kind == kinds[q] && h[k].step > last) last = h[k].step;
            if (last < 0) {
                char what[256];
                snprintf(what, sizeof what, "run %s in the %s histogram", runs[i].label,
                         rec_kind_name(kinds[q]));
                missingf(r, what, "%s/%s: no %s rows", runs[i].dir, REC_HIST_CSV,
                         rec_kind_name(kinds[q]));
                continue;
            }
            /* the network's gradients of this kind: every layer's bins summed */
            memset(sum, 0, AK_HIST_BINS * sizeof *sum);
            uint64_t total = 0;
            for (size_t k = 0; k < nh; k++)
                if (h[k].kind == kinds[q] && h[k].step == last && h[k].bin >= 0 &&
                    h[k].bin < AK_HIST_BINS) {
                    sum[h[k].bin] += h[k].count;
                    total += h[k].count;
                }
            for (int b = 0; b < AK_HIST_BINS; b++) {
                char label[REC_BIN_LABEL_MAX];
                if (sum[b] && rec_hist_bin_label(b, label))
                    sb_printf(&text, "%s,%llu,%s\n", label, (unsigned long long)sum[b],
                              runs[i].label);
            }
            sb_printf(&zeros, "%s%s at step %lld: %.3g%% of %llu", any ? "; " : "", runs[i].label,
                      (long long)last,
                      total ? 100.0 * (double)sum[AK_HIST_ZERO] / (double)total : 0.0,
                      (unsigned long long)total);
            any = true;
        }
        char name[64], title[96], caption[512];
        snprintf(name, sizeof name, "hist_%s", rec_kind_name(kinds[q]));
        snprintf(title, sizeof title, "title=%s at the last recorded step", titles[q]);
        snprintf(caption, sizeof caption,
                 "log2 |%s| of all layers at each run's last histogram step (hist.csv), as a "
                 "fraction of all its values; the shaded bands are fp16's subnormal and normal "
                 "ranges.  The values are as recorded: a run with a loss scale records the "
                 "gradients of the scaled loss.",
                 rec_kind_name(kinds[q]));
        const char *v[] = {title, NULL};
        rc = worse(rc, figure_from(r, &text, any, "hist.gp", name, caption, v));
        if (any)
            rp_paragraphf(r, "Zeros (counted in the fractions, not drawn): %s.", sb_str(&zeros));
        sb_free(&text);
        sb_free(&zeros);
    }
    free(sum);
    return rc;
}

int rp_add_runs(rp_report *r, const char *const *run_dirs, size_t n)
{
    if (!r) return RP_EINVAL;
    if (!run_dirs || n == 0) {
        rp_missing(r, "the run figures", "rp_add_runs: no run directories");
        return RP_EINVAL;
    }
    run_data *runs = calloc(n, sizeof *runs);
    if (!runs) {
        rp_missing(r, "the run figures", "out of memory");
        return RP_EIO;
    }
    const size_t notes_before = r->n_notes;
    static const rec_table used[] = {REC_STEPS, REC_EVAL, REC_TENSORS, REC_UPDATES, REC_HIST};
    for (size_t i = 0; i < n; i++) {
        runs[i].dir = run_dirs[i] ? run_dirs[i] : "";
        run_label(runs, i);
        progress(r, "reading %s", runs[i].dir);
        char *json = join_path(runs[i].dir, REC_RUN_JSON);
        runs[i].info = json ? rec_run_read(json, runs[i].info_why, sizeof runs[i].info_why) : NULL;
        if (!json) snprintf(runs[i].info_why, sizeof runs[i].info_why, "out of memory");
        free(json);
        for (size_t k = 0; k < sizeof used / sizeof used[0]; k++)
            read_table(&runs[i], used[k]);
    }
    int rc = summary_table(r, runs, n);
    rc = worse(rc, training_figures(r, runs, n));
    rc = worse(rc, hist_figures(r, runs, n));
    rc = worse(rc, flushed_figures(r, runs, n));
    rc = worse(rc, update_figures(r, runs, n));
    /* a run left out of a figure that was still drawn is a note, not a figure's status */
    if (r->n_notes > notes_before) rc = worse(rc, RP_EPARTIAL);
    for (size_t i = 0; i < n; i++) {
        rec_run_free(runs[i].info);
        for (int k = 0; k < REC_TABLES; k++)
            free(runs[i].t[k].rows);
    }
    free(runs);
    return rc;
}

/* ---- a sweep folder ------------------------------------------------------------------------- */
/* summary.csv's outcome columns (experiments/sweep.h SW_SUMMARY_HEADER); every other column is
 * a grid axis.  Spelled out here: plots/ does not include upward. */
static const char *const sweep_outcomes[] = {
    "final_loss",       "test_accuracy", "skipped_steps", "final_scale", "mean_underflow_frac",
    "lost_update_frac", "wall_seconds",  "status",        "reason"};
#define SWEEP_OUTCOMES (sizeof sweep_outcomes / sizeof sweep_outcomes[0])

static bool is_outcome(const char *col)
{
    for (size_t i = 0; i < SWEEP_OUTCOMES; i++)
        if (strcmp(col, sweep_outcomes[i]) == 0) return true;
    return false;
}

static int column_of(const csv *c, const char *name)
{
    for (size_t k = 0; k < c->cols; k++)
        if (strcmp(c->fields[k], name) == 0) return (int)k;
    return -1;
}

/* Reads sweep_dir/summary.csv; 0, or -1 with why naming the file. */
static int read_summary(const char *sweep_dir, csv *c, char *why, size_t why_len)
{
    char *path = join_path(sweep_dir, "summary.csv");
    if (!path) {
        snprintf(why, why_len, "%s/summary.csv: out of memory", sweep_dir);
        return -1;
    }
    const int rc = csv_read(path, path, c, why, why_len);
    free(path);
    return rc;
}

int rp_sweep_axes(const char *sweep_dir, char *axes, size_t len, char *msg, size_t msg_len)
{
    if (!sweep_dir || !axes || !len)
        return ut_fail(msg, msg_len, RP_EINVAL, "rp_sweep_axes: no folder");
    axes[0] = '\0';
    csv c;
    char why[WHY_MAX];
    if (read_summary(sweep_dir, &c, why, sizeof why) != 0)
        return ut_fail(msg, msg_len, RP_EPARTIAL, "%s", why);
    for (size_t k = 0; k < c.cols; k++) {
        if (is_outcome(c.fields[k])) continue;
        const size_t used = strlen(axes);
        snprintf(axes + used, len - used, "%s%s", used ? "," : "", c.fields[k]);
    }
    csv_free(&c);
    if (!axes[0])
        return ut_fail(msg, msg_len, RP_EPARTIAL, "%s/summary.csv: no grid axis column", sweep_dir);
    if (msg && msg_len) msg[0] = '\0';
    return RP_OK;
}

/* The distinct values of column col (rows 1..), in order of first appearance. */
static size_t distinct_values(const csv *c, int col, const char **out)
{
    size_t n = 0;
    for (size_t i = 1; col >= 0 && i < c->rows; i++) {
        const char *v = c->fields[i * c->cols + (size_t)col];
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], v) == 0;
        if (!seen) out[n++] = v;
    }
    return n;
}

/* A finite number, or false (an empty field is a value that was not measured). */
static bool field_number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && *end == '\0' && errno == 0 && isfinite(*v);
}

int rp_add_sweep(rp_report *r, const char *sweep_dir, const char *axis_x, const char *axis_y)
{
    if (!r) return RP_EINVAL;
    if (!sweep_dir || !*sweep_dir) {
        rp_missing(r, "the sweep", "rp_add_sweep: no sweep folder");
        return RP_EINVAL;
    }
    r->n_sweeps++;
    char prefix[32];
    if (r->n_sweeps == 1)
        snprintf(prefix, sizeof prefix, "sweep");
    else
        snprintf(prefix, sizeof prefix, "sweep%zu", r->n_sweeps);
    char title[512];
    snprintf(title, sizeof title, "Sweep %s", sweep_dir);
    rp_section(r, prefix, title);
    progress(r, "reading %s/summary.csv", sweep_dir);
    csv c;
    char why[WHY_MAX];
    if (read_summary(sweep_dir, &c, why, sizeof why) != 0) {
        rp_missing(r, "the sweep's figures and table", why);
        return RP_EPARTIAL;
    }
    /* the axes: every column that is not an outcome, in the header's (the grid's) order */
    size_t n_axes = 0;
    int axis_col[64];
    for (size_t k = 0; k < c.cols && n_axes < 64; k++)
        if (!is_outcome(c.fields[k])) axis_col[n_axes++] = (int)k;
    int rc = RP_OK;
    char what[256];
    snprintf(what, sizeof what, "the heatmaps of sweep %s", sweep_dir);
    if (!axis_x && n_axes >= 1) axis_x = c.fields[axis_col[0]];
    if (!axis_y && n_axes >= 2 && strcmp(axis_x, c.fields[axis_col[1]]) != 0)
        axis_y = c.fields[axis_col[1]];
    if (!axis_y && n_axes >= 2 && strcmp(axis_x, c.fields[axis_col[1]]) == 0)
        axis_y = c.fields[axis_col[0]];
    const int cx = axis_x ? column_of(&c, axis_x) : -1;
    const int cy = axis_y ? column_of(&c, axis_y) : -1;
    const int cs = column_of(&c, "status");
    bool draw = true;
    if (n_axes == 0) {
        missingf(r, what, "%s/summary.csv: no grid axis column (only outcome columns)", sweep_dir);
        rc = RP_EPARTIAL;
        draw = false;
    } else if (cx < 0 || is_outcome(axis_x) || (axis_y && (cy < 0 || is_outcome(axis_y)))) {
        const char *bad = cx < 0 || is_outcome(axis_x) ? axis_x : axis_y;
        missingf(r, what, "rp_add_sweep: '%s' is not a grid axis of %s/summary.csv", bad,
                 sweep_dir);
        rc = RP_EINVAL;
        draw = false;
    } else if (axis_y && cx == cy) {
        missingf(r, what, "rp_add_sweep: the same axis '%s' twice", axis_x);
        rc = RP_EINVAL;
        draw = false;
    } else if (cs < 0) {
        missingf(r, what, "%s/summary.csv: no column 'status'", sweep_dir);
        rc = RP_EPARTIAL;
        draw = false;
    }

    const char **xs = calloc(c.rows + 1, sizeof *xs), **ys = calloc(c.rows + 1, sizeof *ys);
    if (draw && (!xs || !ys)) {
        rp_missing(r, what, "out of memory");
        rc = RP_EIO;
        draw = false;
    }
    static const struct {
        const char *column, *name, *title, *fmt;
    } metrics[3] = {
        {"test_accuracy", "accuracy", "final test accuracy", "%.3g"},
        {"skipped_steps", "skips", "skipped steps", "%.4g"},
        {"mean_underflow_frac", "underflow", "mean underflow fraction", "%.2g"},
    };
    if (draw) {
        const size_t nx = distinct_values(&c, cx, xs);
        size_t ny = 1;
        if (axis_y) ny = distinct_values(&c, cy, ys);
        /* the other axes averaged over, for the captions */
        char others[512] = "";
        for (size_t a = 0; a < n_axes; a++) {
            if (axis_col[a] == cx || axis_col[a] == cy) continue;
            const char *v[2];
            size_t nv = 0;
            for (size_t i = 1; i < c.rows && nv < 2; i++) {
                const char *f = c.fields[i * c.cols + (size_t)axis_col[a]];
                if (nv == 0 || strcmp(v[0], f) != 0) v[nv++] = f;
            }
            if (nv < 2) continue; /* a constant column averages nothing */
            const size_t used = strlen(others);
            snprintf(others + used, sizeof others - used, "%s%s", used ? ", " : "",
                     c.fields[axis_col[a]]);
        }
        for (int m = 0; m < 3; m++) {
            char fig[64], csv_name[80];
            snprintf(fig, sizeof fig, "%s_%s", prefix, metrics[m].name);
            snprintf(csv_name, sizeof csv_name, "%s.csv", fig);
            const int cv = column_of(&c, metrics[m].column);
            if (cv < 0) {
                char w[256];
                snprintf(w, sizeof w, "figure %s", fig);
                missingf(r, w, "%s/summary.csv: no column '%s'", sweep_dir, metrics[m].column);
                rc = worse(rc, RP_EPARTIAL);
                continue;
            }
            sbuf t = {0};
            sb_add(&t, "x,y,value,runs\n");
            bool any = false;
            for (size_t iy = 0; iy < ny; iy++)
                for (size_t ix = 0; ix < nx; ix++) {
                    double sum = 0;
                    size_t k = 0;
                    for (size_t i = 1; i < c.rows; i++) {
                        char *const *row = c.fields + i * c.cols;
                        double v;
                        if (strcmp(row[cx], xs[ix]) != 0 ||
                            (axis_y && strcmp(row[cy], ys[iy]) != 0))
                            continue;
                        if (strcmp(row[cs], "ok") != 0 && strcmp(row[cs], "diverged") != 0)
                            continue;
                        if (!field_number(row[cv], &v)) continue;
                        sum += v;
                        k++;
                    }
                    sb_printf(&t, "%s,%s,", xs[ix], axis_y ? ys[iy] : "all");
                    if (k) sb_num(&t, sum / (double)k, 9);
                    sb_printf(&t, ",%zu\n", k);
                    any = any || k;
                }
            char caption[1024];
            snprintf(caption, sizeof caption,
                     "The %s (summary.csv: %s) of the runs that ended ok or diverged, over %s "
                     "(x)%s%s%s; a blank cell has no such run.%s%s%s",
                     metrics[m].title, metrics[m].column, axis_x, axis_y ? " and " : "",
                     axis_y ? axis_y : " in one row (no second axis)", axis_y ? " (y)" : "",
                     others[0] ? " Each cell is the mean over " : "", others,
                     others[0] ? " (the runs column of the CSV counts them)." : "");
            char tv[160], xl[96], yl[96], cb[96], fv[32];
            snprintf(tv, sizeof tv, "title=%s", metrics[m].title);
            snprintf(xl, sizeof xl, "xlabel=%s", axis_x);
            snprintf(yl, sizeof yl, "ylabel=%s", axis_y ? axis_y : "");
            snprintf(cb, sizeof cb, "cblabel=%s", metrics[m].column);
            snprintf(fv, sizeof fv, "fmt=%s", metrics[m].fmt);
            const char *v[] = {tv, xl, yl, cb, fv, NULL};
            if (!any) {
                /* the CSV is still written, so the blank grid can be seen */
                write_csv(r, csv_name, &t, caption);
                char w[256];
                snprintf(w, sizeof w, "figure %s", fig);
                missingf(r, w, "%s/summary.csv: no run that ended ok or diverged has a %s",
                         sweep_dir, metrics[m].column);
                rc = worse(rc, RP_EPARTIAL);
            } else {
                rc = worse(rc, figure_from(r, &t, true, "heatmap.gp", fig, caption, v));
            }
            sb_free(&t);
        }
    }
    free(xs);
    free(ys);

    /* the summary itself, as the sweep wrote it */
    sbuf t = {0};
    for (size_t i = 0; i < c.rows; i++)
        for (size_t k = 0; k < c.cols; k++) {
            sb_add(&t, c.fields[i * c.cols + k]);
            sb_add(&t, k + 1 < c.cols ? "," : "\n");
        }
    char table[80];
    snprintf(table, sizeof table, "%s_summary.csv", prefix);
    int trc = write_csv(r, table, &t, "the sweep's table of runs");
    sb_free(&t);
    if (trc == RP_OK)
        trc = rp_table_csv(r,
                           "The sweep's runs (summary.csv): the grid axes, then each run's "
                           "outcome as `ampscope sweep` measured it from the run's record.",
                           table);
    csv_free(&c);
    return worse(rc, trc);
}
