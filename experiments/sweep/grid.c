/* grid.c: the sweep's grid (sweep.h): the --grid text parsed into axes
 * of train options and their values, the points in order (the first axis
 * slowest) and each run's folder name. */
#define _GNU_SOURCE /* strndup, strtok_r */

#include "sweep.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grid_fail(char *msg, size_t len, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, len, fmt, a, b);
    return -1;
}

static bool name_ok(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return false;
    return true;
}

void sw_grid_free(sw_grid *g)
{
    for (size_t a = 0; g->axes && a < g->n_axes; a++) {
        free(g->axes[a].name);
        free(g->axes[a].option);
        for (size_t v = 0; v < g->axes[a].n_values; v++)
            free(g->axes[a].values[v]);
        free(g->axes[a].values);
    }
    free(g->axes);
    memset(g, 0, sizeof *g);
}

/* One "name=v1,v2" word into axis x. */
static int parse_axis(const char *word, sw_axis *x, char *msg, size_t len)
{
    const char *eq = strchr(word, '=');
    if (!eq) return grid_fail(msg, len, "--grid: '%s' is not AXIS=V1,V2,...%s", word, "");
    x->name = strndup(word, (size_t)(eq - word));
    if (!x->name) return grid_fail(msg, len, "%s%s", "out of memory", "");
    if (!*x->name) return grid_fail(msg, len, "--grid: '%s' has no axis name%s", word, "");
    if (!name_ok(x->name))
        return grid_fail(msg, len, "--grid: '%s' is not an option name%s", x->name, "");
    x->option = malloc(strlen(x->name) + 3);
    if (!x->option) return grid_fail(msg, len, "%s%s", "out of memory", "");
    strcpy(x->option, "--");
    for (const char *c = x->name; *c; c++)
        x->option[2 + (c - x->name)] = *c == '_' ? '-' : *c;
    x->option[2 + strlen(x->name)] = '\0';
    const char *own[] = {"--out", "--resume", "--no-progress", "--help"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strcmp(x->option, own[i]) == 0)
            return grid_fail(msg, len,
                             "--grid: '%s' cannot be an axis (the sweep sets it: each run's "
                             "folder is DIR/runs/<run>, a rerun resumes)%s",
                             x->name, "");
    const char *list = eq + 1;
    if (!*list) return grid_fail(msg, len, "--grid: axis '%s' has no values%s", x->name, "");
    size_t n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    x->values = calloc(n, sizeof *x->values);
    if (!x->values) return grid_fail(msg, len, "%s%s", "out of memory", "");
    const char *p = list;
    for (size_t v = 0; v < n; v++) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        if (end == p)
            return grid_fail(msg, len, "--grid: axis '%s' has an empty value in '%s'", x->name,
                             list);
        x->values[v] = strndup(p, (size_t)(end - p));
        if (!x->values[v]) return grid_fail(msg, len, "%s%s", "out of memory", "");
        x->n_values = v + 1;
        if (x->values[v][0] == '-')
            return grid_fail(msg, len, "--grid: axis '%s': the value '%s' starts with '-'", x->name,
                             x->values[v]);
        for (size_t w = 0; w < v; w++)
            if (strcmp(x->values[w], x->values[v]) == 0)
                return grid_fail(msg, len, "--grid: axis '%s' repeats the value '%s'", x->name,
                                 x->values[v]);
        p = end + 1;
    }
    return 0;
}

int sw_grid_parse(const char *text, sw_grid *g, char *msg, size_t len)
{
    memset(g, 0, sizeof *g);
    char *copy = strdup(text ? text : "");
    if (!copy) return grid_fail(msg, len, "%s%s", "out of memory", "");
    size_t words = 0;
    for (char *save = NULL, *w = strtok_r(copy, " \t\n", &save); w;
         w = strtok_r(NULL, " \t\n", &save))
        words++;
    free(copy);
    if (words == 0) return grid_fail(msg, len, "--grid is empty: give AXIS=V1,V2 ...%s%s", "", "");
    g->axes = calloc(words, sizeof *g->axes);
    copy = strdup(text);
    if (!g->axes || !copy) {
        free(copy);
        return grid_fail(msg, len, "%s%s", "out of memory", "");
    }
    int rc = 0;
    g->n_runs = 1;
    char *save = NULL;
    for (char *w = strtok_r(copy, " \t\n", &save); w && !rc; w = strtok_r(NULL, " \t\n", &save)) {
        sw_axis *x = &g->axes[g->n_axes++];
        rc = parse_axis(w, x, msg, len);
        for (size_t a = 0; !rc && a + 1 < g->n_axes; a++)
            if (strcmp(g->axes[a].option, x->option) == 0)
                rc = grid_fail(msg, len, "--grid: axis '%s' is given twice (as '%s')", x->name,
                               g->axes[a].name);
        if (!rc && g->n_runs > SW_MAX_RUNS / x->n_values) {
            char max[32];
            snprintf(max, sizeof max, "%d", SW_MAX_RUNS);
            rc = grid_fail(msg, len, "--grid has more than %s runs (at axis '%s')", max, x->name);
        }
        if (!rc) g->n_runs *= x->n_values;
    }
    free(copy);
    if (rc) sw_grid_free(g);
    return rc;
}

size_t sw_grid_value(const sw_grid *g, size_t run, size_t axis)
{
    /* the first axis slowest: the last axis is the lowest digit */
    for (size_t a = g->n_axes; a-- > axis + 1;)
        run /= g->axes[a].n_values;
    return run % g->axes[axis].n_values;
}

void sw_run_name(const sw_grid *g, size_t run, char *buf, size_t len)
{
    int width = 1;
    for (size_t m = g->n_runs > 0 ? g->n_runs - 1 : 0; m >= 10; m /= 10)
        width++;
    char name[128];
    int n = snprintf(name, sizeof name, "%0*zu", width, run);
    for (size_t a = 0; a < g->n_axes && n < 120; a++) {
        const char *v = g->axes[a].values[sw_grid_value(g, run, a)];
        name[n++] = '-';
        for (; *v && n < 120; v++) {
            const char c = *v;
            const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            name[n++] = safe ? c : '_';
        }
    }
    name[n] = '\0';
    snprintf(buf, len, "%s", name);
}
