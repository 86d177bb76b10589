/* figure.c: the report's figures (rp_figure): the built-in scripts
 * (plot_scripts.inc, generated from plots/<name>.gp) and the columns each
 * reads, the checks made before gnuplot runs (names, variables, the CSV and
 * its columns), so that a bad input becomes a note naming the file and
 * column rather than a gnuplot error, the scripts copied into the report's
 * plots/ folder, and the figure on the page with the command that redraws
 * it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.h"
#include "csv.h"
#include "report_internal.h"

#include "plot_scripts.inc" /* embedded_scripts[]: every plots/<name>.gp */

#define SCRIPT_COUNT (sizeof embedded_scripts / sizeof embedded_scripts[0])
_Static_assert(SCRIPT_COUNT <= RP_SCRIPT_SLOTS, "rp_report.scripts_written is too short");

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
        char *plots = rp_join_path(r->dir, "plots");
        char *path = rp_join_path(r->dir, rel);
        int rc = plots && path ? rp_make_dirs(plots, why, why_len) : AN_ENOMEM;
        if (rc == AN_OK) rc = af_write(path, s->text, s->len, why, why_len);
        if (!plots || !path) snprintf(why, why_len, "%s: out of memory", rel);
        free(plots);
        free(path);
        if (rc != AN_OK) return -1;
        r->scripts_written[i] = true;
    }
    return 0;
}

/* ---- a figure written whole or not at all ---------------------------------------------
 * gnuplot exits 0 when its output cannot be written (a full disk leaves an empty or cut-short
 * file), so it draws into NAME.png.tmp.<pid> and NAME.svg.tmp.<pid>; each is checked whole and
 * only then renamed over NAME.png and NAME.svg.  Until then the previous figures stay as they
 * were. */
static bool ends_with(const unsigned char *buf, size_t n, const char *tail, size_t tail_len)
{
    return n >= tail_len && memcmp(buf + n - tail_len, tail, tail_len) == 0;
}

/* A PNG is whole when it starts with the signature and ends with the IEND chunk; an SVG when
 * it ends with its closing tag (and whitespace). */
static bool figure_whole(const char *path, bool png)
{
    static const char png_sig[8] = "\x89PNG\r\n\x1a\n";
    static const char png_end[12] = "\0\0\0\0IEND\xae\x42\x60\x82";
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    unsigned char head[8], tail[64];
    size_t n_head = fread(head, 1, sizeof head, f), n_tail = 0;
    if (fseek(f, -(long)sizeof tail, SEEK_END) != 0) rewind(f);
    n_tail = fread(tail, 1, sizeof tail, f);
    fclose(f);
    if (png)
        return n_head == 8 && memcmp(head, png_sig, 8) == 0 && ends_with(tail, n_tail, png_end, 12);
    while (n_tail > 0 && (tail[n_tail - 1] == '\n' || tail[n_tail - 1] == '\r' ||
                          tail[n_tail - 1] == ' ' || tail[n_tail - 1] == '\t'))
        n_tail--;
    return n_head > 0 && ends_with(tail, n_tail, "</svg>", 6);
}

/* Why gnuplot's file came out cut short: the file system's own answer to one more write
 * (ENOSPC on a full disk, EDQUOT over a quota), or "" when a write now succeeds. */
static void probe_write(const char *tmp, char *why, size_t len)
{
    why[0] = '\0';
    const int fd = open(tmp, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, len, "%s", strerror(errno));
        return;
    }
    static const char block[65536];
    if (write(fd, block, sizeof block) < 0 || fsync(fd) != 0)
        snprintf(why, len, "%s", strerror(errno));
    close(fd);
}

/* Installs name.png and name.svg from their temporary files, both checked first.  keep
 * false: only removes them.  Either way no temporary file is left.  RP_OK; RP_EPARTIAL when
 * gnuplot wrote no file or a cut-short one where more could be written; RP_EIO when the file
 * system refuses (why: the figure's path and the errno text). */
static int install_figure(rp_report *r, const char *name, const char *tmp_suffix, bool keep,
                          char *why, size_t why_len)
{
    char *final[2] = {NULL, NULL}, *tmp[2] = {NULL, NULL};
    int rc = keep ? RP_OK : RP_EPARTIAL;
    for (int k = 0; k < 2; k++) {
        char file[300];
        snprintf(file, sizeof file, "%s.%s", name, k ? "svg" : "png");
        final[k] = rp_join_path(r->dir, file);
        snprintf(file + strlen(file), sizeof file - strlen(file), "%s", tmp_suffix);
        tmp[k] = rp_join_path(r->dir, file);
    }
    if (!final[0] || !final[1] || !tmp[0] || !tmp[1]) {
        snprintf(why, why_len, "%s.png: out of memory", name);
        rc = RP_EPARTIAL;
    }
    for (int k = 0; k < 2 && rc == RP_OK; k++) {
        if (figure_whole(tmp[k], k == 0)) continue;
        struct stat st;
        char reason[256] = "";
        const bool some = stat(tmp[k], &st) == 0 && st.st_size > 0;
        if (some) probe_write(tmp[k], reason, sizeof reason);
        if (reason[0])
            snprintf(why, why_len, "%s: %s", final[k], reason);
        else
            snprintf(why, why_len, "gnuplot exited 0 but wrote %s %s.%s%s",
                     some ? "a cut-short" : "no", name, k ? "svg" : "png",
                     some ? "" : " (or an empty one)");
        rc = reason[0] ? RP_EIO : RP_EPARTIAL;
    }
    for (int k = 0; k < 2 && rc == RP_OK; k++)
        if (af_install(tmp[k], final[k], why, why_len) != AN_OK) rc = RP_EIO;
    for (int k = 0; k < 2; k++) {
        if (tmp[k]) unlink(tmp[k]); /* gone after an install; a leftover after a failure */
        free(tmp[k]);
        free(final[k]);
    }
    return rc;
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
        rp_missingf(r, what, "rp_figure: no built-in script '%s'", script ? script : "(null)");
        return RP_EINVAL;
    }
    if (!file_name_ok(name)) {
        rp_missingf(r, what,
                    "rp_figure: '%s' is not a file name ([A-Za-z0-9_.-], not starting '.')",
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
            rp_missingf(r, what, "rp_figure: '%s' is not key=value", vars[i]);
            return RP_EINVAL;
        }
        if (klen == 3 && strncmp(vars[i], "out", 3) == 0) {
            rp_missingf(r, what, "rp_figure: 'out' is set by the writer (the figure's name)");
            return RP_EINVAL;
        }
        if (klen == 2 && strncmp(vars[i], "in", 2) == 0) {
            in = eq + 1;
            in_given = true;
        }
    }
    if (!relative_path_ok(in)) {
        rp_missingf(r, what, "rp_figure: in=%s: not a file inside the report folder", in);
        return RP_EINVAL;
    }
    sbuf expr = {0};
    if (!in_given) sb_gnuplot_assign(&expr, "in", 2, in);
    for (size_t i = 0; vars && vars[i]; i++)
        sb_gnuplot_assign(&expr, vars[i], (size_t)(strchr(vars[i], '=') - vars[i]),
                          strchr(vars[i], '=') + 1);
    sb_gnuplot_assign(&expr, "out", 3, name);

    /* the data first: a missing file or column is the data's fault, not gnuplot's */
    char *in_path = rp_join_path(r->dir, in);
    csv_table c;
    int rc = in_path ? csv_table_read(in_path, in, &c, why, sizeof why) : -1;
    if (!in_path) snprintf(why, sizeof why, "%s: out of memory", in);
    free(in_path);
    if (rc == 0) {
        char cols[512];
        csv_missing_columns(c.fields, c.cols, fs->columns, cols, sizeof cols);
        if (cols[0])
            snprintf(why, sizeof why, "%s: no column %s (%s reads %s)", in, cols, fs->name,
                     fs->columns);
        else if (c.rows < 2)
            snprintf(why, sizeof why, "%s: no rows under the header", in);
        rc = cols[0] || c.rows < 2 ? -1 : 0;
        csv_table_free(&c);
    }
    if (rc != 0) {
        rp_missing(r, what, why);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    if (write_script(r, fs->name, why, sizeof why) != 0) {
        rp_io_failed(r, why);
        rp_missing(r, what, why);
        sb_free(&expr);
        return RP_EIO;
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

    char png[256], script_path[256];
    snprintf(png, sizeof png, "%s.png", name);
    snprintf(script_path, sizeof script_path, "plots/%s", fs->name);
    rp_progress(r, "drawing %s", png);
    /* drawn into temporary files (common.gp's out_tmp); the page shows the command without */
    char tmp_suffix[32];
    snprintf(tmp_suffix, sizeof tmp_suffix, ".tmp.%ld", (long)getpid());
    for (int k = 0; k < 2; k++) { /* what a killed report left */
        char file[300];
        snprintf(file, sizeof file, "%s.%s", name, k ? "svg" : "png");
        char *path = rp_join_path(r->dir, file);
        if (path) af_remove_stale(path, NULL, 0);
        free(path);
    }
    sbuf run_expr = {0};
    sb_add(&run_expr, sb_str(&expr));
    sb_gnuplot_assign(&run_expr, "out_tmp", 7, tmp_suffix);
    char out[4096], state[64];
    int status = 0;
    char *argv[] = {r->gnuplot, (char *)"-e", run_expr.p, script_path, NULL};
    const int ran = run_expr.failed ? -1
                                    : rp_run_program(r->gnuplot, argv, r->dir, out, sizeof out,
                                                     &status, why, sizeof why);
    if (run_expr.failed) snprintf(why, sizeof why, "out of memory");
    sb_free(&run_expr);
    if (ran != 0) {
        rp_missingf(r, what, "running %s: %s", r->gnuplot, why);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char line[512];
        rp_describe_status(status, state, sizeof state);
        rp_last_line(out, line, sizeof line);
        install_figure(r, name, tmp_suffix, false, why, sizeof why); /* removes its files */
        rp_missingf(r, what, "gnuplot %s on %s with %s%s%s", state, script_path, in,
                    line[0] ? ": " : "", line);
        sb_free(&expr);
        return RP_EPARTIAL;
    }
    const int installed = install_figure(r, name, tmp_suffix, true, why, sizeof why);
    if (installed != RP_OK) {
        if (installed == RP_EIO) rp_io_failed(r, why);
        rp_missing(r, what, why);
        sb_free(&expr);
        return installed;
    }
    emit_figure(r, fs->name, name, caption, in, expr.p);
    sb_free(&expr);
    return RP_OK;
}

int rp_figure_from(rp_report *r, sbuf *text, bool any, const char *script, const char *name,
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
    int rc = rp_write_csv(r, csv_name, text, caption);
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
