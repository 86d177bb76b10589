/* recommend.c: a grid of dynamic loss-scale policies replayed over one
 * trace, the choice among them with its reasons, and the grid as CSV
 * (recommend.h). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "recommend.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "loss_scale.h"

an_grid an_grid_default(void)
{
    an_grid g;
    memset(&g, 0, sizeof g);
    static const double factors[] = {2, 4, 8};
    static const int32_t windows[] = {10, 20, 50, 100, 200, 500, 1000, 2000};
    g.n_factors = sizeof factors / sizeof factors[0];
    g.n_windows = sizeof windows / sizeof windows[0];
    memcpy(g.factors, factors, sizeof factors);
    memcpy(g.windows, windows, sizeof windows);
    g.max_skip_frac = 0.01;
    return g;
}

/* ---- parsing ------------------------------------------------------------------------------- */
/* A growth factor must stay above 1, and finite, once it is an fp32 (the
 * scaler's arithmetic), and so must its reciprocal stay in (0, 1). */
static bool factor_ok(double f)
{
    const float x = (float)f, inv = (float)(1.0 / f);
    return isfinite(f) && f > 1 && isfinite(x) && x > 1.0f && inv > 0.0f && inv < 1.0f;
}

static bool parse_double(const char *s, double *v)
{
    if (!*s || *s == ' ' || *s == '\t') return false;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && errno == 0;
}

static bool parse_window(const char *s, int32_t *v)
{
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    const long long x = strtoll(s, &end, 10);
    if (*end || errno || x < 1 || x > INT32_MAX) return false;
    *v = (int32_t)x;
    return true;
}

/* Parses the comma-separated list value of key into g's factors or windows. */
static int parse_list(const char *spec, const char *key, char *value, an_grid *g, bool factors,
                      char *msg, size_t msg_len)
{
    size_t n = 0;
    char *save = NULL;
    if (!*value) return ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s has no values", spec, key);
    /* strtok_r would skip empty fields: "2,,4" and a trailing comma are mistakes */
    if (value[0] == ',' || strstr(value, ",,") || value[strlen(value) - 1] == ',')
        return ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s: an empty value", spec, key);
    for (char *p = value;; p = NULL) {
        char *tok = strtok_r(p, ",", &save);
        if (!tok) break;
        if (n == AN_GRID_MAX)
            return ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s has more than %d values", spec,
                           key, AN_GRID_MAX);
        if (factors) {
            double f;
            if (!parse_double(tok, &f) || !factor_ok(f))
                return ut_fail(msg, msg_len, AN_EINVAL,
                               "grid '%s': %s: '%s' is not a number > 1 (finite as an fp32)", spec,
                               key, tok);
            for (size_t i = 0; i < n; i++)
                if (g->factors[i] == f)
                    return ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s: '%s' appears twice",
                                   spec, key, tok);
            g->factors[n++] = f;
        } else {
            int32_t w;
            if (!parse_window(tok, &w))
                return ut_fail(msg, msg_len, AN_EINVAL,
                               "grid '%s': %s: '%s' is not an integer in [1, %d]", spec, key, tok,
                               INT32_MAX);
            for (size_t i = 0; i < n; i++)
                if (g->windows[i] == w)
                    return ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s: '%s' appears twice",
                                   spec, key, tok);
            g->windows[n++] = w;
        }
    }
    if (factors)
        g->n_factors = n;
    else
        g->n_windows = n;
    return AN_OK;
}

int an_grid_parse(const char *spec, an_grid *g, char *msg, size_t msg_len)
{
    if (!spec || !g) return ut_fail(msg, msg_len, AN_EINVAL, "an_grid_parse: spec or grid NULL");
    const size_t len = strlen(spec);
    char *copy = malloc(len + 1);
    if (!copy) return ut_fail(msg, msg_len, AN_ENOMEM, "grid '%s': out of memory", spec);
    memcpy(copy, spec, len + 1);
    an_grid out = *g; /* *g changes only when the whole spec parses */
    bool given[3] = {false, false, false};
    static const char *const keys[3] = {"factors", "windows", "max-skip"};
    int status = AN_OK;
    char *part = copy;
    while (status == AN_OK && len > 0) {
        char *semi = strchr(part, ';');
        if (semi) *semi = '\0';
        char *eq = strchr(part, '=');
        if (!eq) {
            status = ut_fail(msg, msg_len, AN_EINVAL,
                             "grid '%s': '%s' is not KEY=VALUES (factors, windows or max-skip)",
                             spec, part);
            break;
        }
        *eq = '\0';
        const char *key = part, *value = eq + 1;
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(key, keys[i]) == 0) k = i;
        if (k < 0) {
            status = ut_fail(msg, msg_len, AN_EINVAL,
                             "grid '%s': unknown key '%s' (expected factors, windows or max-skip)",
                             spec, key);
            break;
        }
        if (given[k]) {
            status = ut_fail(msg, msg_len, AN_EINVAL, "grid '%s': %s given twice", spec, key);
            break;
        }
        given[k] = true;
        if (k == 2) {
            double v;
            if (!parse_double(value, &v) || !(v >= 0 && v <= 1))
                status =
                    ut_fail(msg, msg_len, AN_EINVAL,
                            "grid '%s': max-skip: '%s' is not a fraction in [0, 1]", spec, value);
            else
                out.max_skip_frac = v;
        } else {
            status = parse_list(spec, key, eq + 1, &out, k == 0, msg, msg_len);
        }
        if (!semi) break;
        part = semi + 1;
    }
    free(copy);
    if (status == AN_OK) *g = out;
    return status;
}

/* ---- choosing ------------------------------------------------------------------------------ */
/* a before b by underflow (a NaN, no step measured, last), then steps below
 * the best scale, then skips, then the larger window, then the smaller
 * factor. */
static int cmp_underflow_first(const an_grid_point *a, const an_grid_point *b)
{
    const double ua = a->r.mean_underflow_frac, ub = b->r.mean_underflow_frac;
    if (isnan(ua) != isnan(ub)) return isnan(ua) ? 1 : -1;
    if (ua != ub && !isnan(ua)) return ua < ub ? -1 : 1;
    if (a->r.steps_below_best != b->r.steps_below_best)
        return a->r.steps_below_best < b->r.steps_below_best ? -1 : 1;
    if (a->r.skipped_steps != b->r.skipped_steps)
        return a->r.skipped_steps < b->r.skipped_steps ? -1 : 1;
    if (a->window != b->window) return a->window > b->window ? -1 : 1;
    if (a->factor != b->factor) return a->factor < b->factor ? -1 : 1;
    return 0;
}

/* The fallback: the fewest skips first, the rest as above. */
static int cmp_skips_first(const an_grid_point *a, const an_grid_point *b)
{
    if (a->r.skipped_steps != b->r.skipped_steps)
        return a->r.skipped_steps < b->r.skipped_steps ? -1 : 1;
    return cmp_underflow_first(a, b);
}

/* "mean underflow 1.23% of ...", or why there is none. */
static void fmt_underflow(char *buf, size_t len, double u)
{
    if (isnan(u))
        snprintf(buf, len, "no underflow to measure (every step overflowed)");
    else
        snprintf(buf, len, "mean underflow %.3g%% of nonzero gradients at the scale held", 100 * u);
}

/* The runner-up's underflow, short. */
static void fmt_underflow_short(char *buf, size_t len, double u)
{
    if (isnan(u))
        snprintf(buf, len, "every step overflowing");
    else
        snprintf(buf, len, "at %.3g%%", 100 * u);
}

/* The reason when the choice met the skip limit: what it achieves, then
 * which criterion set it apart from the runner-up. */
static void explain(an_recommendation *rec, const an_grid *g, size_t kept, long runner_up)
{
    const an_grid_point *b = &rec->points[rec->best];
    char u[128];
    fmt_underflow(u, sizeof u, b->r.mean_underflow_frac);
    int k = snprintf(rec->reason, sizeof rec->reason,
                     "factor %g, window %" PRId32 ": %" PRId64 " of %" PRId64
                     " steps skipped (%.3g%%, within the %.3g%% allowed); %s; %" PRId64
                     " steps below the best power-of-two scale. ",
                     b->factor, b->window, b->r.skipped_steps, b->r.steps, 100 * b->r.skip_frac,
                     100 * g->max_skip_frac, u, b->r.steps_below_best);
    if (k < 0 || (size_t)k >= sizeof rec->reason) return;
    char *p = rec->reason + k;
    const size_t left = sizeof rec->reason - (size_t)k;
    if (runner_up < 0) {
        snprintf(p, left, "It is the only one of the %zu grid points within the skip limit.",
                 rec->n);
        return;
    }
    const an_grid_point *r = &rec->points[runner_up];
    char ur[64];
    fmt_underflow_short(ur, sizeof ur, r->r.mean_underflow_frac);
    const bool same_u = r->r.mean_underflow_frac == b->r.mean_underflow_frac ||
                        (isnan(r->r.mean_underflow_frac) && isnan(b->r.mean_underflow_frac));
    if (!same_u)
        snprintf(p, left,
                 "Of the %zu of %zu grid points within the skip limit it has the lowest "
                 "underflow (next: factor %g, window %" PRId32 " %s).",
                 kept, rec->n, r->factor, r->window, ur);
    else if (r->r.steps_below_best != b->r.steps_below_best)
        snprintf(p, left,
                 "Of the %zu of %zu grid points within the skip limit it ties on underflow and "
                 "spends the fewest steps below the best scale (next: factor %g, window %" PRId32
                 " with %" PRId64 ").",
                 kept, rec->n, r->factor, r->window, r->r.steps_below_best);
    else if (r->r.skipped_steps != b->r.skipped_steps)
        snprintf(p, left,
                 "Of the %zu of %zu grid points within the skip limit it ties on underflow and "
                 "steps below the best scale and skips the fewest (next: factor %g, window "
                 "%" PRId32 " with %" PRId64 ").",
                 kept, rec->n, r->factor, r->window, r->r.skipped_steps);
    else
        snprintf(p, left,
                 "Of the %zu of %zu grid points within the skip limit it ties on every measure "
                 "with factor %g, window %" PRId32 "; the larger window, then the smaller factor, "
                 "decides.",
                 kept, rec->n, r->factor, r->window);
}

static int grid_check(const an_grid *g, char *msg, size_t msg_len)
{
    if (g->n_factors < 1 || g->n_factors > AN_GRID_MAX || g->n_windows < 1 ||
        g->n_windows > AN_GRID_MAX)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "an_recommend: the grid has %zu factors and %zu windows (1 to %d each)",
                       g->n_factors, g->n_windows, AN_GRID_MAX);
    for (size_t i = 0; i < g->n_factors; i++)
        if (!factor_ok(g->factors[i]))
            return ut_fail(msg, msg_len, AN_EINVAL, "an_recommend: factor %g is not > 1",
                           g->factors[i]);
    for (size_t i = 0; i < g->n_windows; i++)
        if (g->windows[i] < 1)
            return ut_fail(msg, msg_len, AN_EINVAL, "an_recommend: window %" PRId32 " is not >= 1",
                           g->windows[i]);
    if (!(g->max_skip_frac >= 0 && g->max_skip_frac <= 1))
        return ut_fail(msg, msg_len, AN_EINVAL, "an_recommend: max_skip_frac %g is not in [0, 1]",
                       g->max_skip_frac);
    return AN_OK;
}

int an_recommend(const an_trace *t, const ak_scaler_config *base, fpe_format_id target,
                 const an_grid *g, an_recommendation *rec, char *msg, size_t msg_len)
{
    if (!rec) return ut_fail(msg, msg_len, AN_EINVAL, "an_recommend: recommendation is NULL");
    memset(rec, 0, sizeof *rec);
    if (!t || !base || !g)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_recommend: trace, policy or grid is NULL");
    if (base->kind != AK_SCALER_DYNAMIC)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "an_recommend: the base policy is %s, not dynamic: it has no window or "
                       "factor to choose",
                       ak_scaler_kind_name(base->kind));
    int status = grid_check(g, msg, msg_len);
    if (status != AN_OK) return status;

    const size_t n = g->n_factors * g->n_windows;
    rec->points = calloc(n, sizeof *rec->points);
    if (!rec->points) return ut_fail(msg, msg_len, AN_ENOMEM, "an_recommend: out of memory");
    rec->n = n;
    for (size_t i = 0; i < g->n_factors; i++) {
        for (size_t j = 0; j < g->n_windows; j++) {
            an_grid_point *pt = &rec->points[i * g->n_windows + j];
            pt->factor = g->factors[i];
            pt->window = g->windows[j];
            ak_scaler_config cfg = *base;
            cfg.growth_factor = (float)pt->factor;
            cfg.backoff_factor = (float)(1.0 / pt->factor);
            cfg.window = pt->window;
            char why[512];
            if ((status = an_replay(t, &cfg, target, &pt->r, NULL, NULL, why, sizeof why)) !=
                AN_OK) {
                ut_fail(msg, msg_len, status, "an_recommend: factor %g, window %" PRId32 ": %s",
                        pt->factor, pt->window, why);
                an_recommendation_free(rec);
                return status;
            }
        }
    }

    /* 1. within the skip limit; 2-4. the order of cmp_underflow_first. */
    size_t kept = 0;
    long best = -1, runner_up = -1;
    for (size_t i = 0; i < n; i++) {
        const an_grid_point *pt = &rec->points[i];
        if (!(pt->r.skip_frac <= g->max_skip_frac)) continue;
        kept++;
        if (best < 0 || cmp_underflow_first(pt, &rec->points[best]) < 0) {
            runner_up = best;
            best = (long)i;
        } else if (runner_up < 0 || cmp_underflow_first(pt, &rec->points[runner_up]) < 0) {
            runner_up = (long)i;
        }
    }
    if (best >= 0) {
        rec->best = (size_t)best;
        explain(rec, g, kept, runner_up);
        return AN_OK;
    }
    best = 0;
    for (size_t i = 1; i < n; i++)
        if (cmp_skips_first(&rec->points[i], &rec->points[best]) < 0) best = (long)i;
    rec->best = (size_t)best;
    const an_grid_point *b = &rec->points[best];
    char u[128];
    fmt_underflow(u, sizeof u, b->r.mean_underflow_frac);
    snprintf(rec->reason, sizeof rec->reason,
             "No grid point kept skips within %.3g%% of the steps. The fewest: factor %g, window "
             "%" PRId32 ", %" PRId64 " of %" PRId64 " steps skipped (%.3g%%); %s; %" PRId64
             " steps below the best power-of-two scale. Try longer windows, or allow "
             "more skips.",
             100 * g->max_skip_frac, b->factor, b->window, b->r.skipped_steps, b->r.steps,
             100 * b->r.skip_frac, u, b->r.steps_below_best);
    return AN_OK;
}

void an_recommendation_free(an_recommendation *rec)
{
    if (!rec) return;
    free(rec->points);
    rec->points = NULL;
    rec->n = 0;
    rec->best = 0;
}

/* ---- the grid as CSV ----------------------------------------------------------------------- */
/* Doubles as record.h writes them: %.17g, and an undefined value (NaN) as
 * an empty field. */
static void put_real(FILE *f, double v)
{
    if (!isnan(v)) fprintf(f, "%.17g", v);
}

int an_recommendation_write_csv(const an_recommendation *rec, const char *path, char *msg,
                                size_t msg_len)
{
    if (!rec || !rec->points || rec->n == 0 || rec->best >= rec->n)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "an_recommendation_write_csv: no recommendation to write");
    if (!path || !*path)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_recommendation_write_csv: empty path");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: open_memstream: %s", path, strerror(errno));
    fputs("factor,window,steps,overflow_steps,skipped_steps,skip_frac,mean_underflow_frac,"
          "steps_below_best,mean_log2_below_best,final_scale,chosen\n",
          f);
    for (size_t i = 0; i < rec->n; i++) {
        const an_grid_point *p = &rec->points[i];
        put_real(f, p->factor);
        fprintf(f, ",%" PRId32 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", p->window, p->r.steps,
                p->r.overflow_steps, p->r.skipped_steps);
        put_real(f, p->r.skip_frac);
        fputc(',', f);
        put_real(f, p->r.mean_underflow_frac);
        fprintf(f, ",%" PRId64 ",", p->r.steps_below_best);
        put_real(f, p->r.mean_log2_below_best);
        fputc(',', f);
        put_real(f, p->r.final_scale);
        fprintf(f, ",%d\n", i == rec->best ? 1 : 0);
    }
    const bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        free(buf);
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: formatting the grid failed", path);
    }
    const int status = af_write(path, buf, len, msg, msg_len);
    free(buf);
    return status;
}
