/* runs.c: the run plan per level, and training a study's runs: each filled
 * through train's option table and trained by train_run in process; a
 * finished run is reused, an unfinished one removed and trained again. */
#define _XOPEN_SOURCE 700

#include "reproduce_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"
#include "train.h"
#include "train_options.h"
#include "util.h"

/* ---- sizes per level ----------------------------------------------------------------- */
const repro_plan repro_plans[] = {
    {"smoke", "40", "1024", "20", "64", "16", "12", "5", "10", 1, "20", "1280", "2", "4"},
    {"quick", "937", "60000", "1875", "1024", "128", "40", "50", "100", 7, "200", "12800", "10",
     "16"},
    {"full", "4685", "60000", "9375", "4096", "512", "250", "100", "500", 140, "1875", "60000",
     "100", "64"},
};

/* The new nets: a tiny transformer and resnet for --quick (their sections
 * take a small share of its 10 minutes), larger for --full.  The
 * transformer's 300 steps at lr 3e-3 take it below the unigram plateau
 * (2.91 nats, where 100 steps at 1e-3 stopped), so its runs compare a model
 * that has learnt something. */
const repro_net_plan repro_net_plans[] = {
    {"16", "1", "2", "16", "6", "3e-3", "4", "128", "2", "2"},
    {"32", "1", "2", "32", "300", "3e-3", "4", "1024", "32", "10"},
    {"64", "2", "4", "64", "1000", "3e-3", "8", "60000", "937", "50"},
};

/* ---- training runs ------------------------------------------------------------------- */
/* Whether runs/name holds a finished run; *seconds its wall time. */
static bool finished(repro_study *s, const char *name, double *seconds)
{
    char p[4096], why[256];
    repro_path(s, p, sizeof p, "runs", name);
    char f[4200];
    snprintf(f, sizeof f, "%s/wall_seconds", p);
    FILE *fp = fopen(f, "r");
    if (!fp) return false;
    const bool got = fscanf(fp, "%lf", seconds) == 1;
    fclose(fp);
    snprintf(f, sizeof f, "%s/%s", p, REC_RUN_JSON);
    rec_run *r = rec_run_read(f, why, sizeof why);
    const bool ended = r && rec_run_end(r) != REC_NO_TIME;
    rec_run_free(r);
    return got && ended;
}

/* Sets train's options from name, text pairs (a NULL name ends them), then
 * the study's --backend, --data (not for a language model, which reads its
 * own text), --no-progress and --out dir, in that order (run.json records
 * them so).  0, or TRAIN_EINPUT with the reason in msg. */
static int set_options(const repro_study *s, train_options *o, const char *dir,
                       const char *const *pairs, char *msg, size_t msg_len)
{
    int rc = TRAIN_OK;
    bool text = false;
    for (size_t i = 0; !rc && pairs[i]; i += 2) {
        rc = topt_set(o, pairs[i], pairs[i + 1], msg, msg_len);
        if (strcmp(pairs[i], "net") == 0) text = strcmp(pairs[i + 1], "transformer") == 0;
    }
    if (!rc) rc = topt_set(o, "backend", s->o->backend, msg, msg_len);
    if (!rc && s->o->data_dir && !text) rc = topt_set(o, "data", s->o->data_dir, msg, msg_len);
    if (!rc) rc = topt_set(o, "no-progress", NULL, msg, msg_len);
    if (!rc) rc = topt_set(o, "out", dir, msg, msg_len);
    if (!rc) rc = topt_finish(o, msg, msg_len);
    o->owner_dir = s->o->out_dir; /* the runs lie in reproduce's folder, which it holds */
    return rc;
}

int repro_train(repro_study *s, const char *name, double *seconds, ...)
{
    const char *pairs[REPRO_MAX_PAIRS * 2 + 1];
    size_t n = 0;
    bool fits = true;
    va_list ap;
    va_start(ap, seconds);
    for (const char *key; (key = va_arg(ap, const char *));) {
        const char *text = va_arg(ap, const char *);
        fits = fits && n < REPRO_MAX_PAIRS * 2;
        if (fits) {
            pairs[n++] = key;
            pairs[n++] = text;
        }
    }
    va_end(ap);
    pairs[n] = NULL;
    if (!fits) {
        snprintf(s->msg, sizeof s->msg, "run %s: more than %d options", name, REPRO_MAX_PAIRS);
        return REPRO_EFAIL;
    }
    return repro_train_pairs(s, name, seconds, pairs);
}

/* Trains runs/name with train's options given as name, text pairs ended by
 * a NULL name (set_options); *seconds the wall time of the training (NULL:
 * not wanted).  0, or a REPRO_E* status with the reason in s->msg. */
int repro_train_pairs(repro_study *s, const char *name, double *seconds, const char *const *pairs)
{
    double wall = 0;
    if (s->interrupted) {
        snprintf(s->msg, sizeof s->msg, "not trained: reproduce was interrupted");
        return REPRO_EFAIL;
    }
    if (finished(s, name, &wall)) {
        repro_progress(s, "%s: reusing the finished run", name);
        if (seconds) *seconds = wall;
        return 0;
    }
    char dir[4096];
    repro_path(s, dir, sizeof dir, "runs", name);
    if (access(dir, F_OK) == 0 && ut_remove_tree(dir) != 0) {
        snprintf(s->msg, sizeof s->msg, "%.900s: cannot remove the unfinished run: %s", dir,
                 strerror(errno));
        return REPRO_EFAIL;
    }
    /* large (the options as given): not on the stack */
    train_options *o = malloc(sizeof *o);
    if (!o) {
        snprintf(s->msg, sizeof s->msg, "out of memory");
        return REPRO_EFAIL;
    }
    train_options_default(o);
    o->version = s->o->version;
    o->git_revision = s->o->git_revision;
    o->progress = true;
    char msg[1024];
    repro_progress(s, "%s: training", name);
    int rc = set_options(s, o, dir, pairs, msg, sizeof msg);
    if (!rc) {
        const double t = ut_seconds();
        fflush(stdout);
        rc = train_run(o, msg, sizeof msg);
        wall = ut_seconds() - t;
    }
    free(o);
    if (rc != TRAIN_OK && rc != TRAIN_DIVERGED) {
        /* train finishes the step, keeps the record and reports the signal */
        if (rc == TRAIN_INTERRUPTED) s->interrupted = true;
        /* at most what the program's one message holds, as before */
        snprintf(s->msg, sizeof s->msg, "run %s: %.511s", name, msg);
        return rc == TRAIN_EINPUT ? REPRO_EINPUT : REPRO_EFAIL;
    }
    char f[4200], text[64];
    snprintf(f, sizeof f, "%s/wall_seconds", dir);
    snprintf(text, sizeof text, "%.6f\n", wall);
    af_file af;
    if (af_begin(&af, f, s->msg, sizeof s->msg) != 0) return REPRO_EFAIL;
    af_put(&af, text, strlen(text));
    if (af_commit(&af, s->msg, sizeof s->msg) != 0) return REPRO_EFAIL;
    if (seconds) *seconds = wall;
    return 0;
}

/* The MLP's fp32 run: its histograms serve the underflow study, its
 * gradient trace (recorded every step by default) the scaler studies. */
int repro_train_mlp_o0(repro_study *s)
{
    const repro_plan *p = s->plan;
    return repro_train(s, "mlp-o0", NULL, "net", "mlp", "mode", "O0", "steps", p->mlp_steps,
                       "subset", p->mlp_subset, "stats-every", p->stats_every, "hist-every",
                       p->hist_every, "seed", "1", NULL);
}

int repro_train_lenet5_o0(repro_study *s)
{
    const repro_plan *p = s->plan;
    return repro_train(s, "lenet5-o0", NULL, "net", "lenet5", "mode", "O0", "steps", p->lenet_steps,
                       "stats-every", p->stats_every, "hist-every", p->hist_every, "trace-every",
                       "0", "seed", "1", NULL);
}

/* ---- reading records ------------------------------------------------------------------ */
void repro_run_file(const repro_study *s, char *buf, size_t len, const char *run, const char *file)
{
    snprintf(buf, len, "%s/runs/%s/%s", s->o->out_dir, run, file);
}

int repro_summarize(repro_study *s, const char *run, rec_run_summary *out)
{
    char dir[4096];
    repro_path(s, dir, sizeof dir, "runs", run);
    return rec_summarize_run(dir, out, s->msg, sizeof s->msg) == AN_OK ? 0 : -1;
}
