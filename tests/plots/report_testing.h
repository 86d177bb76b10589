/* report_testing.h: what the report writer's tests share (test_report,
 * test_figure, test_runs, test_sweep_heatmaps): files written and read
 * back, checks of a drawn figure and of index.html's links and text, a
 * stand-in gnuplot, and the main that skips (77) without gnuplot.  Static
 * inline, so that a test that uses only some of them compiles clean. */
#ifndef AMPSCOPE_TESTS_PLOTS_REPORT_TESTING_H
#define AMPSCOPE_TESTS_PLOTS_REPORT_TESTING_H

/* the includer defines _XOPEN_SOURCE 700 first (mkdtemp, setenv) */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "report.h"

static inline void path_in(char *out, size_t len, const char *dir, const char *name)
{
    const int n = snprintf(out, len, "%s/%s", dir, name);
    ck_assert_msg(n > 0 && (size_t)n < len, "path too long: %s/%s", dir, name);
}

/* The whole content of dir/name (NUL-terminated, malloc'ed, *len bytes), or NULL. */
static inline char *slurp_in(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    path_in(path, sizeof path, dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static inline void put_in(const char *dir, const char *name, const char *text)
{
    char path[1024];
    path_in(path, sizeof path, dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static inline bool exists_in(const char *dir, const char *name)
{
    char path[1024];
    struct stat st;
    path_in(path, sizeof path, dir, name);
    return stat(path, &st) == 0;
}

static inline void assert_file_is(const char *dir, const char *name, const char *expected)
{
    char *got = slurp_in(dir, name, NULL);
    ck_assert_msg(got != NULL, "%s/%s is missing", dir, name);
    ck_assert_str_eq(got, expected);
    free(got);
}

/* A drawn figure: name.png with the PNG signature and more than a blank
 * canvas's bytes, name.svg an XML/SVG document that ends with </svg>. */
static inline void assert_figure(const char *dir, const char *name)
{
    char file[256];
    size_t len = 0;
    snprintf(file, sizeof file, "%s.png", name);
    char *png = slurp_in(dir, file, &len);
    ck_assert_msg(png != NULL, "%s is missing", file);
    ck_assert_msg(len > 2000, "%s has only %zu bytes", file, len);
    ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
    free(png);
    snprintf(file, sizeof file, "%s.svg", name);
    char *svg = slurp_in(dir, file, &len);
    ck_assert_msg(svg != NULL, "%s is missing", file);
    ck_assert_msg(strncmp(svg, "<?xml", 5) == 0 || strncmp(svg, "<svg", 4) == 0,
                  "%s does not start as SVG", file);
    while (len && (svg[len - 1] == '\n' || svg[len - 1] == ' '))
        svg[--len] = '\0';
    ck_assert_msg(len > 6 && strcmp(svg + len - 6, "</svg>") == 0, "%s does not end with </svg>",
                  file);
    ck_assert_msg(strstr(svg, "<path") != NULL, "%s draws nothing", file);
    free(svg);
}

static inline void assert_no_figure(const char *dir, const char *name)
{
    char file[256];
    snprintf(file, sizeof file, "%s.png", name);
    ck_assert_msg(!exists_in(dir, file), "%s exists", file);
}

/* Every href and src of index.html (but #anchors) names a file in dir;
 * returns how many there were. */
static inline int assert_links_exist(const char *dir)
{
    char *page = slurp_in(dir, "index.html", NULL);
    ck_assert_ptr_nonnull(page);
    int links = 0;
    static const char *const attrs[] = {"href=\"", "src=\""};
    for (int a = 0; a < 2; a++)
        for (const char *p = page; (p = strstr(p, attrs[a])) != NULL;) {
            p += strlen(attrs[a]);
            const char *end = strchr(p, '"');
            ck_assert_ptr_nonnull(end);
            char target[512];
            snprintf(target, sizeof target, "%.*s", (int)(end - p), p);
            if (target[0] != '#') {
                ck_assert_msg(strstr(target, "://") == NULL && target[0] != '/',
                              "index.html links outside the report: %s", target);
                ck_assert_msg(exists_in(dir, target), "index.html links to missing %s", target);
                links++;
            }
            p = end;
        }
    free(page);
    return links;
}

static inline void assert_page_has(const char *dir, const char *text)
{
    char *page = slurp_in(dir, "index.html", NULL);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page, text) != NULL, "index.html lacks: %s", text);
    free(page);
}

static inline void assert_page_lacks(const char *dir, const char *text)
{
    char *page = slurp_in(dir, "index.html", NULL);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page, text) == NULL, "index.html has: %s", text);
    free(page);
}

/* A stand-in gnuplot: `bin/gnuplot` running body (sh), PATH set to bin only. */
static inline void fake_gnuplot(const char *dir, const char *body)
{
    char bin[1024], script[1400];
    path_in(bin, sizeof bin, dir, "bin");
    ck_assert_int_eq(mkdir(bin, 0777), 0);
    snprintf(script, sizeof script, "#!/bin/sh\n%s\n", body);
    put_in(bin, "gnuplot", script);
    char path[1100];
    path_in(path, sizeof path, bin, "gnuplot");
    ck_assert_int_eq(chmod(path, 0755), 0);
    ck_assert_int_eq(setenv("PATH", bin, 1), 0);
}

/* Runs suite; 77 (skipped) when it passed without a gnuplot on PATH to draw. */
static inline int report_main(Suite *suite)
{
    /* Check runs each test in a child: whether one drew is asked of a report here */
    char msg[256], dir[] = "/tmp/ampscope-gp-XXXXXX";
    bool have = false;
    if (mkdtemp(dir)) {
        rp_report *r = rp_open(dir, "probe", msg, sizeof msg);
        have = rp_have_gnuplot(r);
        if (r) rp_close(r, msg, sizeof msg);
        char page[300];
        snprintf(page, sizeof page, "%s/index.html", dir);
        unlink(page);
        rmdir(dir);
    }
    const int status = ts_run_suite(suite);
    if (status == EXIT_SUCCESS && !have) {
        printf("gnuplot is not on PATH: the figures were not drawn (skipped)\n");
        return 77;
    }
    return status;
}

#endif
