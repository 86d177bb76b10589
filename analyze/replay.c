/* replay.c: loading a gradient trace in true units and replaying a
 * loss-scale policy over it (replay.h).
 *
 * The policy is never re-implemented here: each step runs
 * ak_loss_scale_step (kernels/loss_scale.h), the function training runs,
 * with found_inf predicted from the step's amax at the scale held. */
#define _POSIX_C_SOURCE 200809L
#include "replay.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "loss_scale.h"
#include "precision_stats.h"
#include "record.h"

/* ---- loading ----------------------------------------------------------------------------- */
/* The binade of 2^e / s, exactly: s = m 2^x with m in [0.5, 1) gives
 * 2^(e-x) / m with 1/m in (1, 2], so binade e - x, or e - x + 1 when m is
 * 0.5 (a power of two).  Clamped to the histogram's range: a true value
 * beyond it stays in the outermost binade, still nonzero and finite, as
 * every realistic scale classifies it the same way. */
static int unscaled_bin(int e, double s)
{
    int x;
    const double m = frexp(s, &x);
    long b = (long)e - x + (m == 0.5 ? 1 : 0);
    if (b < AK_HIST_EMIN) b = AK_HIST_EMIN;
    if (b > AK_HIST_EMAX) b = AK_HIST_EMAX;
    return (int)b;
}

/* The index of the trace row of step, or -1 (rows sorted by step). */
static long find_step(const rec_trace_row *rows, size_t n, int64_t step)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && rows[lo].step == step ? (long)lo : -1;
}

typedef struct load_ctx {
    char trace_path[4096], hist_path[4096];
    rec_trace_row *rows;
    size_t n;
    rec_trace_hist_row *hrows;
    size_t nh;
    uint64_t (*raw)[AK_HIST_BINS]; /* recorded-unit histograms, per trace row */
    uint8_t (*seen)[AK_HIST_BINS]; /* which bins had a row */
} load_ctx;

static void load_ctx_free(load_ctx *c)
{
    free(c->rows);
    free(c->hrows);
    free(c->raw);
    free(c->seen);
}

/* Whether a row's histogram adds up to its counts. */
static bool hist_matches(const rec_trace_row *r, const uint64_t hist[AK_HIST_BINS])
{
    uint64_t total = 0;
    for (int i = 0; i < AK_HIST_BINS; i++)
        total += hist[i];
    return total == r->count && hist[AK_HIST_ZERO] == r->zero &&
           hist[AK_HIST_NONFINITE] == r->nonfinite;
}

/* Reads both files and matches the histogram rows to the trace rows.  The
 * last step of the run (the largest in either file) may be incomplete in
 * one of them, a run killed between writing the two: it is dropped then.
 * Every other mismatch is malformed. */
static int load_rows(load_ctx *c, char *msg, size_t msg_len)
{
    int status = rec_read_trace(c->trace_path, &c->rows, &c->n, msg, msg_len);
    if (status != AN_OK) return status;
    if ((status = rec_read_trace_hist(c->hist_path, &c->hrows, &c->nh, msg, msg_len)) != AN_OK)
        return status;
    for (size_t i = 1; i < c->n; i++)
        if (c->rows[i].step <= c->rows[i - 1].step)
            return ut_fail(msg, msg_len, AN_EFORMAT,
                           "%s: step %" PRId64 " follows step %" PRId64
                           " (steps must increase, each once)",
                           c->trace_path, c->rows[i].step, c->rows[i - 1].step);
    int64_t last = c->n ? c->rows[c->n - 1].step : -1;
    for (size_t j = 0; j < c->nh; j++)
        if (c->hrows[j].step > last) last = c->hrows[j].step;

    if (c->n) {
        c->raw = calloc(c->n, sizeof *c->raw);
        c->seen = calloc(c->n, sizeof *c->seen);
        if (!c->raw || !c->seen)
            return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", c->trace_path);
    }
    bool drop_last = false;
    for (size_t j = 0; j < c->nh; j++) {
        const rec_trace_hist_row *h = &c->hrows[j];
        const long i = find_step(c->rows, c->n, h->step);
        if (i < 0) {
            if (h->step == last) {
                drop_last = true; /* its trace row was never written */
                continue;
            }
            return ut_fail(msg, msg_len, AN_EFORMAT,
                           "%s: step %" PRId64 " has histogram rows but no row in %s", c->hist_path,
                           h->step, c->trace_path);
        }
        char label[REC_BIN_LABEL_MAX];
        if (c->seen[i][h->bin])
            return ut_fail(msg, msg_len, AN_EFORMAT, "%s: step %" PRId64 ": bin %s appears twice",
                           c->hist_path, h->step, rec_hist_bin_label(h->bin, label));
        c->seen[i][h->bin] = 1;
        c->raw[i][h->bin] += h->count;
    }
    for (size_t i = 0; i < c->n; i++) {
        const rec_trace_row *r = &c->rows[i];
        if (hist_matches(r, c->raw[i])) continue;
        if (r->step == last) {
            drop_last = true; /* its histogram was cut short */
            continue;
        }
        uint64_t total = 0;
        for (int b = 0; b < AK_HIST_BINS; b++)
            total += c->raw[i][b];
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: step %" PRId64 ": the histogram holds %" PRIu64 " values (%" PRIu64
                       " zero, %" PRIu64 " non-finite) but %s says count %" PRIu64 " (%" PRIu64
                       " zero, %" PRIu64 " non-finite)",
                       c->hist_path, r->step, total, c->raw[i][AK_HIST_ZERO],
                       c->raw[i][AK_HIST_NONFINITE], c->trace_path, r->count, r->zero,
                       r->nonfinite);
    }
    if (drop_last && c->n && c->rows[c->n - 1].step == last) c->n--;
    return AN_OK;
}

int an_trace_load(const char *run_dir, an_trace *t, char *msg, size_t msg_len)
{
    if (!t) return ut_fail(msg, msg_len, AN_EINVAL, "an_trace_load: trace is NULL");
    t->steps = NULL;
    t->n = 0;
    if (!run_dir || !*run_dir) return ut_fail(msg, msg_len, AN_EINVAL, "empty run directory");
    load_ctx c;
    memset(&c, 0, sizeof c);
    if (snprintf(c.trace_path, sizeof c.trace_path, "%s/%s", run_dir, REC_TRACE_CSV) >=
            (int)sizeof c.trace_path ||
        snprintf(c.hist_path, sizeof c.hist_path, "%s/%s", run_dir, REC_TRACE_HIST_CSV) >=
            (int)sizeof c.hist_path)
        return ut_fail(msg, msg_len, AN_EINVAL, "%.200s...: directory name too long", run_dir);

    int status = load_rows(&c, msg, msg_len);
    if (status == AN_OK && c.n == 0)
        status = ut_fail(msg, msg_len, AN_EINVAL, "%s has no steps", c.trace_path);
    an_trace_step *steps = NULL;
    if (status == AN_OK && !(steps = calloc(c.n, sizeof *steps)))
        status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", c.trace_path);
    for (size_t i = 0; status == AN_OK && i < c.n; i++) {
        const rec_trace_row *r = &c.rows[i];
        const double s = r->loss_scale;
        if (!(s > 0) || !isfinite(s)) {
            status = ut_fail(msg, msg_len, AN_EFORMAT,
                             "%s: step %" PRId64 ": loss_scale %g cannot be divided out",
                             c.trace_path, r->step, s);
            break;
        }
        an_trace_step *st = &steps[i];
        st->step = r->step;
        st->recorded_scale = s;
        st->recorded_found_inf = r->found_inf != 0;
        st->count = r->count;
        st->zero = r->zero;
        st->nonfinite = r->nonfinite;
        /* A step whose own check or counts saw an overflow has no known
         * true magnitude (replay.h). */
        st->amax = r->nonfinite > 0 || r->found_inf ? INFINITY : r->amax / s;
        st->hist[AK_HIST_ZERO] = c.raw[i][AK_HIST_ZERO];
        st->hist[AK_HIST_NONFINITE] = c.raw[i][AK_HIST_NONFINITE];
        for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++)
            st->hist[AK_HIST_BIN(unscaled_bin(e, s))] += c.raw[i][AK_HIST_BIN(e)];
    }
    load_ctx_free(&c);
    if (status != AN_OK) {
        free(steps);
        return status;
    }
    t->steps = steps;
    t->n = c.n;
    return AN_OK;
}

void an_trace_free(an_trace *t)
{
    if (!t) return;
    free(t->steps);
    t->steps = NULL;
    t->n = 0;
}

/* ---- replaying ---------------------------------------------------------------------------- */
/* Whether step s overflows at the scale held. */
static bool predict_overflow(const an_trace_step *s, double held, fpe_format_id target)
{
    /* Unknown magnitudes: they overflowed at the recorded scale, so at any
     * scale at least as large (replay.h). */
    if (isinf(s->amax)) return held >= s->recorded_scale;
    return an_overflows(s->amax, held, target);
}

/* flushed_frac_of_nonzero of s at the scale held; the two scales a
 * histogram cannot be taken at are the limits: 0 flushes every nonzero
 * value, inf none. */
static double underflow_at(const an_trace_step *s, double held, fpe_format_id target)
{
    an_fractions f;
    if (held > 0 && isfinite(held) && an_hist_fractions(s->hist, target, held, &f) == AN_OK)
        return f.flushed_frac_of_nonzero;
    uint64_t nonzero = 0;
    for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++)
        nonzero += s->hist[AK_HIST_BIN(e)];
    return held == 0 && nonzero > 0 ? 1.0 : 0.0;
}

int an_replay(const an_trace *t, const ak_scaler_config *cfg, fpe_format_id target,
              an_replay_result *res, double *scales, uint8_t *skipped, char *msg, size_t msg_len)
{
    if (!t || !t->steps || t->n == 0)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_replay: the trace is NULL or empty");
    if (!res) return ut_fail(msg, msg_len, AN_EINVAL, "an_replay: result is NULL");
    if ((unsigned)target > (unsigned)FPE_FMT_F32)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "an_replay: target format %d is not fp16, bf16 or fp32", (int)target);
    char why[256];
    if (!cfg || ak_scaler_validate(cfg, why, sizeof why) != 0)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_replay: %s", cfg ? why : "the policy is NULL");
    ak_scaler_state st;
    if (ak_scaler_init(cfg, &st) != 0)
        return ut_fail(msg, msg_len, AN_EINVAL, "an_replay: ak_scaler_init refused the policy");

    memset(res, 0, sizeof *res);
    double underflow_sum = 0, log2_below_sum = 0;
    int64_t clean = 0;
    res->min_scale = INFINITY;
    res->max_scale = -INFINITY;
    for (size_t i = 0; i < t->n; i++) {
        const an_trace_step *s = &t->steps[i];
        const double held = st.scale; /* before this step's update */
        const bool found_inf = predict_overflow(s, held, target);
        ak_loss_scale_step(cfg, &st, found_inf);
        const bool skip = st.skip != 0.0f;

        res->overflow_steps += found_inf;
        res->skipped_steps += skip;
        if (!found_inf) {
            underflow_sum += underflow_at(s, held, target);
            clean++;
        }
        const double best = an_best_pow2_scale(s->amax, target);
        if (best > 0 && held < best) {
            res->steps_below_best++;
            log2_below_sum += log2(best / held);
        }
        if (held < res->min_scale) res->min_scale = held;
        if (held > res->max_scale) res->max_scale = held;
        res->final_scale = held;
        if (scales) scales[i] = held;
        if (skipped) skipped[i] = skip ? 1 : 0;
    }
    res->steps = (int64_t)t->n;
    res->skip_frac = (double)res->skipped_steps / (double)res->steps;
    /* No step to measure is not "nothing flushed". */
    res->mean_underflow_frac = clean > 0 ? underflow_sum / (double)clean : (double)NAN;
    res->mean_log2_below_best = log2_below_sum / (double)res->steps;
    return AN_OK;
}
