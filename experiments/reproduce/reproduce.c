/* reproduce.c: the studies behind the report (`ampscope reproduce`):
 * reproduce_run, which ties the sections together into OUT/index.html, and
 * what every section shares (progress lines, paths in OUT, a failed section).
 *
 * Each study trains what it needs through the training library, its options
 * set by name through train's own table (topt_set, as the command line sets
 * them) and run in process (train_run), so every run directory under OUT/runs
 * is an ordinary record that `ampscope report` and `ampscope recommend` read
 * too, and its run.json holds the exact options.  A finished run (run.json with
 * an end time and the wall_seconds file this writer adds) is reused when
 * reproduce is started again on the same OUT; an unfinished one is removed
 * and trained again, so an interrupted reproduce resumes at run granularity.
 *
 * Then the analyses (analyze/: precision_stats, replay, recommend) turn the
 * records into CSV files in OUT, and the report writer (plots/report.h)
 * draws them and writes OUT/index.html.  Every section states the claim it
 * reproduces, the literature's number, ours, and the difference.
 *
 * One job per file: runs.c (the run plan per level, training and reusing
 * runs), csv.c (CSV files in OUT), formats.c, underflow.c,
 * underflow_layers.c, rounding.c, modes.c, scalers.c, loss_scaling.c,
 * scale_choice.c (one per study section); reproduce_internal.h holds the
 * study's state.
 */

#include "reproduce_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "record_lock.h"
#include "report.h"
#include "util.h"

void repro_progress(repro_study *s, const char *fmt, ...)
{
    if (!s->o->progress) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%5.0fs] ", ut_seconds() - s->t0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void repro_path(const repro_study *s, char *buf, size_t len, const char *a, const char *b)
{
    if (b)
        snprintf(buf, len, "%s/%s/%s", s->o->out_dir, a, b);
    else
        snprintf(buf, len, "%s/%s", s->o->out_dir, a);
}

void repro_section_failed(repro_study *s, const char *what)
{
    rp_missing(s->rep, what, s->msg);
    s->failures++;
    repro_progress(s, "%s: %s", what, s->msg);
}

/* ---- the whole ------------------------------------------------------------------------ */
/* The studies, in OUT (taken). */
static int run_studies(repro_study *s, char *msg, size_t msg_len)
{
    const repro_options *o = s->o;
    char runs[4096];
    repro_path(s, runs, sizeof runs, "runs", NULL);
    if (mkdir(runs, 0777) != 0 && errno != EEXIST)
        return ut_fail(msg, msg_len, REPRO_EFAIL, "%s: %s", runs, strerror(errno));
    if (o->progress)
        fprintf(stderr, "ampscope reproduce --%s: expect about %.0f minutes on a 2-core CPU\n",
                s->plan->name, s->plan->est_minutes);
    char title[128];
    snprintf(title, sizeof title, "ampscope: mixed-precision studies (--%s)", s->plan->name);
    s->rep = rp_open(o->out_dir, title, msg, msg_len);
    if (!s->rep) return REPRO_EFAIL;
    repro_study_formats(s);
    repro_study_underflow(s);
    repro_study_underflow_layers(s);
    repro_study_rounding(s);
    repro_study_modes(s);
    repro_study_scalers(s);
    repro_study_loss_scaling(s);
    repro_study_deep_scale_choice(s);
    repro_study_fp32list(s);
    repro_study_batchnorm(s);
    repro_study_embedding(s);
    repro_study_bf16(s);
    repro_study_communication(s);
    const int rc = rp_close(s->rep, msg, msg_len);
    if (s->interrupted)
        return ut_fail(msg, msg_len, REPRO_EFAIL,
                       "interrupted: the report in %s is partial; run the same command again to "
                       "finish it (finished runs are reused)",
                       o->out_dir);
    repro_progress(s, "report: %s/index.html", o->out_dir);
    if (rc == RP_ENOGNUPLOT)
        return ut_fail(msg, msg_len, REPRO_EFAIL,
                       "gnuplot is not installed, so the report has no figures (CSV files and "
                       "tables are in %s): install it with apt-get install gnuplot-nox",
                       o->out_dir);
    if (rc != RP_OK) return REPRO_EFAIL;
    if (s->failures)
        return ut_fail(msg, msg_len, REPRO_EFAIL, "%d part(s) of the report could not be made",
                       s->failures);
    return 0;
}

int reproduce_run(const repro_options *o, char *msg, size_t msg_len)
{
    repro_study s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.plan = &repro_plans[o->level];
    s.t0 = ut_seconds();
    /* OUT held for the whole run: one writer, never the data's folder nor
     * inside another record; its runs are its own */
    const rec_input inputs[] = {{"--data", o->data_dir}};
    const rec_out_dir want = {.option = "--out",
                              .dir = o->out_dir,
                              .command = "reproduce",
                              .inputs = inputs,
                              .n_inputs = 1,
                              .reuse = true,
                              .force = o->force};
    char said[1024];
    int lock_fd;
    int rc = rec_take_out_dir(&want, &lock_fd, said, sizeof said, msg, msg_len);
    if (rc) return rc == AN_EINVAL ? REPRO_EINPUT : REPRO_EFAIL;
    if (said[0]) fprintf(stderr, "ampscope reproduce: %s\n", said);
    rc = run_studies(&s, msg, msg_len);
    rec_lock_release(lock_fd);
    return rc;
}
