/* reproduce.c: the studies behind the report (`ampscope reproduce`).
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
 */
#define _XOPEN_SOURCE 700

#include "reproduce.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "fpe.h"
#include "precision_stats.h"
#include "recommend.h"
#include "record.h"
#include "replay.h"
#include "report.h"
#include "train.h"
#include "train_options.h"
#include "util.h"

/* ---- sizes per level ----------------------------------------------------------------- */
typedef struct level_plan {
    const char *name;
    const char *mlp_steps;                      /* mode table, trace, validation: mlp steps */
    const char *mlp_subset;                     /* training samples (60000: all) */
    const char *lenet_steps;                    /* the O0 LeNet-5 run (underflow study) */
    const char *sn_width, *sn_batch, *sn_steps; /* simplenet: rounding-error study */
    const char *stats_every, *hist_every;
    double est_minutes; /* on a 2-core CPU */
} level_plan;

static const level_plan plans[] = {
    {"smoke", "40", "1024", "20", "64", "16", "12", "5", "10", 0.5},
    {"quick", "937", "60000", "1875", "1024", "128", "40", "50", "100", 3},
    {"full", "4685", "60000", "9375", "4096", "512", "250", "100", "500", 120},
};

/* ---- the study's state --------------------------------------------------------------- */
typedef struct study {
    const repro_options *o;
    const level_plan *plan;
    rp_report *rep;
    char msg[1024];
    int failures;     /* sections that could not be made */
    bool interrupted; /* a run stopped for SIGINT/SIGTERM: train nothing more */
    double t0;
} study;

static void progress(study *s, const char *fmt, ...)
{
    if (!s->o->progress) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%5.0fs] ", ut_seconds() - s->t0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void path_of(const study *s, char *buf, size_t len, const char *a, const char *b)
{
    if (b)
        snprintf(buf, len, "%s/%s/%s", s->o->out_dir, a, b);
    else
        snprintf(buf, len, "%s/%s", s->o->out_dir, a);
}

/* ---- training runs ------------------------------------------------------------------- */
/* Whether runs/name holds a finished run; *seconds its wall time. */
static bool finished(study *s, const char *name, double *seconds)
{
    char p[4096], why[256];
    path_of(s, p, sizeof p, "runs", name);
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
 * the study's --backend, --data, --no-progress and --out dir, in that order
 * (run.json records them so).  0, or TRAIN_EINPUT with the reason in msg. */
static int set_options(const study *s, train_options *o, const char *dir, va_list ap, char *msg,
                       size_t msg_len)
{
    int rc = TRAIN_OK;
    for (const char *key; !rc && (key = va_arg(ap, const char *));) {
        const char *text = va_arg(ap, const char *);
        rc = topt_set(o, key, text, msg, msg_len);
    }
    if (!rc) rc = topt_set(o, "backend", s->o->backend, msg, msg_len);
    if (!rc && s->o->data_dir) rc = topt_set(o, "data", s->o->data_dir, msg, msg_len);
    if (!rc) rc = topt_set(o, "no-progress", NULL, msg, msg_len);
    if (!rc) rc = topt_set(o, "out", dir, msg, msg_len);
    if (!rc) rc = topt_finish(o, msg, msg_len);
    return rc;
}

/* Trains runs/name with train's options given as name, text pairs after
 * seconds, ended by NULL (set_options); *seconds the wall time of the
 * training (NULL: not wanted).  0, or a REPRO_E* status with the reason in
 * s->msg. */
static int train(study *s, const char *name, double *seconds, ...)
{
    double wall = 0;
    if (s->interrupted) {
        snprintf(s->msg, sizeof s->msg, "not trained: reproduce was interrupted");
        return REPRO_EFAIL;
    }
    if (finished(s, name, &wall)) {
        progress(s, "%s: reusing the finished run", name);
        if (seconds) *seconds = wall;
        return 0;
    }
    char dir[4096];
    path_of(s, dir, sizeof dir, "runs", name);
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
    progress(s, "%s: training", name);
    va_list ap;
    va_start(ap, seconds);
    int rc = set_options(s, o, dir, ap, msg, sizeof msg);
    va_end(ap);
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

/* ---- reading records ------------------------------------------------------------------ */
static void run_file(const study *s, char *buf, size_t len, const char *run, const char *file)
{
    snprintf(buf, len, "%s/runs/%s/%s", s->o->out_dir, run, file);
}

/* The histogram of kind k merged over layers and over every recorded step
 * (all_steps) or only the last one. */
static int merged_hist(study *s, const char *run, rec_kind k, bool all_steps,
                       uint64_t hist[AK_HIST_BINS])
{
    char p[4096];
    run_file(s, p, sizeof p, run, REC_HIST_CSV);
    rec_hist_row *rows = NULL;
    size_t n = 0;
    memset(hist, 0, AK_HIST_BINS * sizeof *hist);
    if (rec_read_hist(p, &rows, &n, s->msg, sizeof s->msg) != 0) return -1;
    int64_t last = -1;
    for (size_t i = 0; i < n; i++)
        if (rows[i].step > last) last = rows[i].step;
    for (size_t i = 0; i < n; i++)
        if (rows[i].kind == k && (all_steps || rows[i].step == last))
            hist[rows[i].bin] += rows[i].count;
    free(rows);
    if (last < 0) {
        snprintf(s->msg, sizeof s->msg, "%.900s has no rows", p);
        return -1;
    }
    return 0;
}

static int summarize(study *s, const char *run, rec_run_summary *out)
{
    char dir[4096];
    path_of(s, dir, sizeof dir, "runs", run);
    return rec_summarize_run(dir, out, s->msg, sizeof s->msg) == AN_OK ? 0 : -1;
}

/* ---- CSV files in OUT ------------------------------------------------------------------ */
typedef struct csv {
    af_file f;
    bool ok;
} csv;

static bool csv_open(study *s, csv *c, const char *name, const char *header)
{
    char p[4096];
    path_of(s, p, sizeof p, name, NULL);
    c->ok = af_begin(&c->f, p, s->msg, sizeof s->msg) == 0;
    if (c->ok) fprintf(c->f.fp, "%s\n", header);
    return c->ok;
}

static void csv_row(csv *c, const char *fmt, ...)
{
    if (!c->ok) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->f.fp, fmt, ap);
    va_end(ap);
    fputc('\n', c->f.fp);
}

/* Gives the file up (the reason is already in s->msg). */
static void csv_abort(csv *c)
{
    if (c->ok) af_abort(&c->f);
    c->ok = false;
}

static bool csv_close(study *s, csv *c)
{
    if (!c->ok) return false;
    c->ok = false;
    return af_commit(&c->f, s->msg, sizeof s->msg) == 0;
}

static void section_failed(study *s, const char *what)
{
    rp_missing(s->rep, what, s->msg);
    s->failures++;
    progress(s, "%s: %s", what, s->msg);
}

/* ---- 1. format facts ------------------------------------------------------------------- */
typedef struct fmt_fact {
    const char *name;
    fpe_format_id f;
    uint32_t min_sub, min_norm, max, one, one_next;
} fmt_fact;

static double value_of(fpe_format_id f, uint32_t bits)
{
    fpe_env env = fpe_env_default();
    if (f == FPE_FMT_F16) return fpe_f16_to_f64(&env, (uint16_t)bits);
    if (f == FPE_FMT_BF16) return fpe_bf16_to_f64(&env, (uint16_t)bits);
    return fpe_f32_to_f64(&env, bits);
}

static void study_formats(study *s)
{
    rp_section(s->rep, "formats", "Format facts");
    rp_claim(s->rep,
             "fp16 has 11 significant bits and a range of 2^-24 .. 65504; bf16 keeps fp32's "
             "range with 8 significant bits.",
             "IEEE 754-2008 binary16 and binary32; bfloat16 as Google and Intel define it: "
             "fp16 min subnormal 2^-24 ~ 5.96e-8, min normal 2^-14 ~ 6.10e-5, max 65504; bf16 "
             "min subnormal 2^-133, min normal 2^-126, max ~ 3.39e38.",
             "Computed below by the emulator from the formats' bit patterns.",
             "None: these are definitions, and the emulator's conversions are checked against "
             "MPFR bit for bit.");
    static const fmt_fact facts[] = {
        {"fp16", FPE_FMT_F16, 0x0001, 0x0400, 0x7BFF, 0x3C00, 0x3C01},
        {"bf16", FPE_FMT_BF16, 0x0001, 0x0080, 0x7F7F, 0x3F80, 0x3F81},
        {"fp32", FPE_FMT_F32, 0x00000001, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0x3F800001},
    };
    csv c = {.ok = false};
    if (csv_open(s, &c, "formats.csv",
                 "format,precision_bits,min_subnormal,min_normal,max,machine_epsilon,"
                 "log2_min_subnormal,log2_min_normal")) {
        for (int i = 0; i < 3; i++) {
            const fmt_fact *f = &facts[i];
            const double sub = value_of(f->f, f->min_sub), norm = value_of(f->f, f->min_norm);
            const double eps = value_of(f->f, f->one_next) - value_of(f->f, f->one);
            csv_row(&c, "%s,%d,%.9g,%.9g,%.9g,%.9g,%d,%d", f->name, 1 - (int)log2(eps), sub, norm,
                    value_of(f->f, f->max), eps, (int)log2(sub), (int)log2(norm));
        }
    }
    if (!csv_close(s, &c)) {
        section_failed(s, "formats.csv");
        return;
    }
    rp_table_csv(s->rep, "The formats, from the emulator", "formats.csv");

    /* worked examples, each through the emulator's conversions and adds */
    fpe_env env = fpe_env_default();
    const uint16_t a = fpe_f64_to_f16(&env, 0.00006666666);
    const uint16_t b = fpe_f64_to_f16(&env, 65520.0);
    const uint16_t z = fpe_f64_to_f16(&env, ldexp(1.0, -25));
    const uint16_t w = fpe_f64_to_f16(&env, 2048.0), d = fpe_f64_to_f16(&env, 1.0);
    const uint16_t sum = fpe_f16_add(&env, w, d);
    const uint16_t w2 = fpe_f64_to_f16(&env, 2047.0), sum2 = fpe_f16_add(&env, w2, d);
    if (csv_open(s, &c, "examples.csv", "input,fp16_bits,fp16_value,note")) {
        csv_row(&c, "0.00006666666,0x%04X,%.10g,below 2^-14: a subnormal with fewer bits", a,
                value_of(FPE_FMT_F16, a));
        csv_row(&c, "65520,0x%04X,%g,rounds past 65504 to infinity", b, value_of(FPE_FMT_F16, b));
        csv_row(&c, "2^-25,0x%04X,%g,half the smallest subnormal: ties to even give 0", z,
                value_of(FPE_FMT_F16, z));
        csv_row(&c, "2048 + 1,0x%04X,%g,|w| >= 2^11 |dw|: the update is lost", sum,
                value_of(FPE_FMT_F16, sum));
        csv_row(&c, "2047 + 1,0x%04X,%g,|w| < 2^11 |dw|: the update lands", sum2,
                value_of(FPE_FMT_F16, sum2));
    }
    if (!csv_close(s, &c)) {
        section_failed(s, "examples.csv");
        return;
    }
    rp_table_csv(s->rep, "Worked examples in fp16 (round to nearest even)", "examples.csv");
}

/* ---- 2. underflow ---------------------------------------------------------------------- */
/* The MLP's fp32 run: its histograms serve the underflow study, its
 * gradient trace (recorded every step by default) the scaler studies. */
static int train_mlp_o0(study *s)
{
    const level_plan *p = s->plan;
    return train(s, "mlp-o0", NULL, "net", "mlp", "mode", "O0", "steps", p->mlp_steps, "subset",
                 p->mlp_subset, "stats-every", p->stats_every, "hist-every", p->hist_every, "seed",
                 "1", NULL);
}

static const char *kind_label(rec_kind k)
{
    return k == REC_ACTIVATION_GRAD ? "activation gradients" : "weight gradients";
}

static void study_underflow(study *s)
{
    const level_plan *p = s->plan;
    rp_section(s->rep, "underflow", "Underflow: which gradients fp16 and bf16 lose");
    if (train(s, "lenet5-o0", NULL, "net", "lenet5", "mode", "O0", "steps", p->lenet_steps,
              "stats-every", p->stats_every, "hist-every", p->hist_every, "trace-every", "0",
              "seed", "1", NULL) != 0 ||
        train_mlp_o0(s) != 0 ||
        train(s, "simplenet-o0", NULL, "net", "simplenet", "width", p->sn_width, "batch",
              p->sn_batch, "mode", "O0", "steps", p->sn_steps, "stats-every", "0", "hist-every",
              "10", "trace-every", "0", NULL) != 0) {
        section_failed(s, "the O0 runs of the underflow study");
        return;
    }
    /* the histograms at the last recorded step */
    csv c = {.ok = false};
    if (!csv_open(s, &c, "underflow_hist.csv", "bin,count,series")) {
        section_failed(s, "underflow_hist.csv");
        return;
    }
    const char *runs[] = {"lenet5-o0", "mlp-o0", "simplenet-o0"};
    const rec_kind kinds[] = {REC_ACTIVATION_GRAD, REC_WEIGHT_GRAD};
    uint64_t h[AK_HIST_BINS];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            if (merged_hist(s, runs[r], kinds[k], false, h) != 0) {
                csv_abort(&c);
                break;
            }
            for (int e = AK_HIST_EMIN; e <= AK_HIST_EMAX; e++)
                if (h[AK_HIST_BIN(e)])
                    csv_row(&c, "%d,%llu,%s %s", e, (unsigned long long)h[AK_HIST_BIN(e)], runs[r],
                            kind_label(kinds[k]));
        }
    if (!csv_close(s, &c)) {
        section_failed(s, "underflow_hist.csv");
        return;
    }
    rp_claim(s->rep,
             "Many activation gradients are small enough that a plain fp16 cast flushes them to "
             "zero; scaling the loss moves them into fp16's range.",
             "Micikevicius et al. 2018, Fig. 3 (Multibox SSD): about 67% of activation gradients "
             "are zero, and a plain fp16 cast zeroes about 31% more; scaling by 8 restored fp32 "
             "accuracy. The MindSpore AMP article: in one layer 68% are zero and about 4% lie in "
             "[2^-32, 2^-20].",
             "The histograms and the table below: LeNet-5 and the MLP on Fashion-MNIST and "
             "SimpleNet on synthetic data, trained in fp32 (O0), gradients at the last recorded "
             "step (histograms) and over all recorded steps (table).",
             "Our networks are small classifiers with ReLU on 28x28 images, not a detection "
             "network: their zero fraction comes from ReLU and max-pooling and the magnitudes sit "
             "higher, so fewer values fall below fp16's subnormals at scale 1 than in SSD.");
    const char *hv[] = {"title=log2 |gradient| at the last recorded step (fp32 training)", NULL};
    rp_figure(s->rep, "hist.gp", "underflow_hist",
              "Gradient magnitudes with fp16's and bf16's subnormal and normal ranges", hv);

    /* the table per loss scale, over all recorded steps */
    static const double scales[] = {1, 8, 128, 1024, 32768};
    if (!csv_open(s, &c, "underflow_table.csv",
                  "run,gradients,target,loss_scale,count,zero_frac_of_all,"
                  "flushed_frac_of_nonzero,subnormal_frac_of_nonzero,overflow_frac_of_nonzero,"
                  "zero_after_cast_frac_of_all")) {
        section_failed(s, "underflow_table.csv");
        return;
    }
    double lenet_zero = NAN, lenet_flush1 = NAN;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 2; k++) {
            if (merged_hist(s, runs[r], kinds[k], true, h) != 0) {
                csv_abort(&c);
                break;
            }
            for (int t = 0; t < 2; t++)
                for (int i = 0; i < 5; i++) {
                    an_fractions f;
                    const fpe_format_id target = t == 0 ? FPE_FMT_F16 : FPE_FMT_BF16;
                    if (an_hist_fractions(h, target, scales[i], &f) != AN_OK) continue;
                    if (r == 0 && k == 0 && t == 0 && i == 0) {
                        lenet_zero = f.zero_frac_of_all;
                        lenet_flush1 = f.zero_after_cast_frac_of_all - f.zero_frac_of_all;
                    }
                    csv_row(&c, "%s,%s,%s,%g,%llu,%.6f,%.6f,%.6f,%.6f,%.6f", runs[r],
                            kind_label(kinds[k]), t == 0 ? "fp16" : "bf16", scales[i],
                            (unsigned long long)f.count, f.zero_frac_of_all,
                            f.flushed_frac_of_nonzero, f.subnormal_frac_of_nonzero,
                            f.overflow_frac_of_nonzero, f.zero_after_cast_frac_of_all);
                }
        }
    if (!csv_close(s, &c)) {
        section_failed(s, "underflow_table.csv");
        return;
    }
    rp_paragraphf(s->rep,
                  "LeNet-5's activation gradients: %.1f%% are exactly zero in fp32 (SSD: 67%%), "
                  "and a plain fp16 cast at scale 1 zeroes a further %.2f%% of all values (SSD: "
                  "31%%). Fractions of the nonzero values are named so in the column headers.",
                  100 * lenet_zero, 100 * lenet_flush1);
    rp_table_csv(s->rep,
                 "Per loss scale: zeros in fp32, and what the cast flushes, makes subnormal "
                 "or overflows (classes decided per binade: precision_stats.h)",
                 "underflow_table.csv");

    /* the MindSpore observation: per layer */
    char f[4096];
    run_file(s, f, sizeof f, "lenet5-o0", REC_HIST_CSV);
    rec_hist_row *rows = NULL;
    size_t n = 0;
    c.ok = false;
    if (rec_read_hist(f, &rows, &n, s->msg, sizeof s->msg) != 0 ||
        !csv_open(s, &c, "layer_zero.csv",
                  "layer,count,zero_frac_of_all,frac_of_all_in_2^-32_to_2^-20")) {
        free(rows);
        section_failed(s, "layer_zero.csv");
        return;
    }
    const char *layers[] = {"conv1", "conv2", "fc1", "fc2", "fc3"};
    for (int l = 0; l < 5; l++) {
        uint64_t total = 0, zero = 0, band = 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].kind != REC_ACTIVATION_GRAD || strcmp(rows[i].layer, layers[l]) != 0)
                continue;
            total += rows[i].count;
            if (rows[i].bin == AK_HIST_ZERO) zero += rows[i].count;
            if (rows[i].bin >= AK_HIST_BIN(-32) && rows[i].bin < AK_HIST_BIN(-20))
                band += rows[i].count;
        }
        if (total)
            csv_row(&c, "%s,%llu,%.4f,%.4f", layers[l], (unsigned long long)total,
                    (double)zero / (double)total, (double)band / (double)total);
    }
    free(rows);
    if (!csv_close(s, &c)) {
        section_failed(s, "layer_zero.csv");
        return;
    }
    rp_paragraph(s->rep, "The MindSpore article's per-layer view (68% zeros, about 4% in "
                         "[2^-32, 2^-20]) for LeNet-5's activation gradients, the network of "
                         "that article, over all recorded steps:");
    rp_table_csv(s->rep, "Per layer: zeros and the [2^-32, 2^-20) band", "layer_zero.csv");
}

/* ---- 3. rounding error ------------------------------------------------------------------- */
/* Per step of run: the lost-update fraction over all layers, and its 2^p prediction. */
static bool lost_rows(study *s, csv *c, const char *run, const char *label)
{
    char p[4096];
    run_file(s, p, sizeof p, run, REC_UPDATES_CSV);
    rec_update_row *rows = NULL;
    size_t n = 0;
    if (rec_read_updates(p, &rows, &n, s->msg, sizeof s->msg) != 0) return false;
    for (size_t i = 0; i < n;) {
        uint64_t nz = 0, lost = 0, pred = 0;
        size_t j = i;
        for (; j < n && rows[j].step == rows[i].step; j++) {
            nz += rows[j].nonzero_updates;
            lost += rows[j].lost;
            pred += rows[j].predicted_lost;
        }
        if (nz) {
            csv_row(c, "%lld,%.6f,%s lost", (long long)rows[i].step, (double)lost / (double)nz,
                    label);
            csv_row(c, "%lld,%.6f,%s 2^p rule", (long long)rows[i].step, (double)pred / (double)nz,
                    label);
        }
        i = j;
    }
    free(rows);
    return true;
}

static bool loss_rows(study *s, csv *c, const char *run, const char *label)
{
    char p[4096];
    run_file(s, p, sizeof p, run, REC_STEPS_CSV);
    rec_step_row *rows = NULL;
    size_t n = 0;
    if (rec_read_steps(p, &rows, &n, s->msg, sizeof s->msg) != 0) return false;
    for (size_t i = 0; i < n; i++)
        csv_row(c, "%lld,%.7g,%s", (long long)rows[i].step, rows[i].loss, label);
    free(rows);
    return true;
}

static void study_rounding(study *s)
{
    const level_plan *p = s->plan;
    rp_section(s->rep, "rounding", "Rounding error: weight updates that fp16 loses");
#define SIMPLENET_LR(mode)                                                                         \
    "net", "simplenet", "width", p->sn_width, "batch", p->sn_batch, "mode", mode, "dtype", "fp16", \
        "loss-scale", "pytorch", "lr", "1e-4", "steps", p->sn_steps, "stats-every", "1",           \
        "hist-every", "0", "trace-every", "0", NULL
    if (train(s, "simplenet-o3-fp16", NULL, SIMPLENET_LR("O3")) != 0 ||
        train(s, "simplenet-o2-fp16", NULL, SIMPLENET_LR("O2")) != 0) {
#undef SIMPLENET_LR
        section_failed(s, "the simplenet runs of the rounding study");
        return;
    }
    rp_claim(
        s->rep,
        "Without fp32 master weights, fp16 weights stop moving when |w| >= 2^11 |dw|; with "
        "masters the updates land.",
        "Micikevicius et al. 2018: an fp16 weight does not move when |w| >= 2^11 |dw|; "
        "updating fp16 weights without an fp32 master copy cost about 80% relative accuracy "
        "on a speech model.",
        "SimpleNet (PaddlePaddle's AMP tutorial network) with lr 1e-4, O3 (fp16 weights) "
        "against O2 (fp32 masters): the lost fraction of the nonzero intended updates at "
        "every step, beside the 2^p rule's prediction (p = 11 for fp16 weights, 24 for the "
        "fp32 masters).",
        "We measure lost updates directly, not accuracy on a speech model. For fp16 weights the "
        "rule and the count agree; for fp32 masters the rule over-predicts, because it "
        "flags every update up to one unit of the weight's last place, while those between "
        "half a unit and one unit round up and land.");
    csv c = {.ok = false};
    if (!csv_open(s, &c, "lost_updates.csv", "x,y,series") ||
        !lost_rows(s, &c, "simplenet-o3-fp16", "O3 fp16") ||
        !lost_rows(s, &c, "simplenet-o2-fp16", "O2 fp16 (fp32 masters)") || !csv_close(s, &c)) {
        csv_abort(&c);
        section_failed(s, "lost_updates.csv");
        return;
    }
    const char *lv[] = {"title=Lost weight updates (fraction of nonzero intended updates)",
                        "xlabel=step", "ylabel=fraction lost", "points=1", NULL};
    rp_figure(s->rep, "lines.gp", "lost_updates", "Lost updates, O3 against O2, and the 2^p rule",
              lv);
    if (!csv_open(s, &c, "rounding_loss.csv", "x,y,series") ||
        !loss_rows(s, &c, "simplenet-o3-fp16", "O3 fp16") ||
        !loss_rows(s, &c, "simplenet-o2-fp16", "O2 fp16") || !csv_close(s, &c)) {
        csv_abort(&c);
        section_failed(s, "rounding_loss.csv");
        return;
    }
    const char *rv[] = {"title=Training loss (MSE, synthetic data)", "xlabel=step", "ylabel=loss",
                        "logy=1", NULL};
    rp_figure(s->rep, "lines.gp", "rounding_loss", "Training loss of O3 and O2", rv);

    /* bf16 updates: nearest against stochastic rounding (O3, no masters) */
#define BF16_O3(sr)                                                                                \
    "net", "mlp", "mode", "O3", "dtype", "bf16", "lr", "0.01", "steps", p->mlp_steps, "subset",    \
        p->mlp_subset, "stats-every", p->stats_every, "hist-every", "0", "trace-every", "0",       \
        "stochastic-rounding", sr, NULL
    if (train(s, "mlp-o3-bf16-rne", NULL, BF16_O3("off")) != 0 ||
        train(s, "mlp-o3-bf16-sr", NULL, BF16_O3("on")) != 0) {
#undef BF16_O3
        section_failed(s, "the bf16 rounding runs");
        return;
    }
    rec_run_summary a, b;
    if (summarize(s, "mlp-o3-bf16-rne", &a) != 0 || summarize(s, "mlp-o3-bf16-sr", &b) != 0) {
        section_failed(s, "the bf16 rounding runs' summaries");
        return;
    }
    rp_claim(s->rep,
             "Nearest rounding of bf16 weight updates cancels small updates; stochastic rounding "
             "keeps them on average.",
             "Zamirai et al. 2020: stochastic rounding or Kahan summation recover up to 7 points "
             "of accuracy over nearest rounding in pure bf16 training.",
             NULL,
             "A small MLP for one pass over the data is a far easier task than their models; the "
             "gap is in the lost updates first, and in accuracy only as far as they matter.");
    rp_paragraphf(s->rep,
                  "MLP, O3 bf16 (no masters), lr 0.01, %lld steps: nearest rounding ends with test "
                  "accuracy %.2f%% (loss %.4f), stochastic rounding %.2f%% (loss %.4f).",
                  (long long)a.steps, 100 * a.test_accuracy, a.final_loss, 100 * b.test_accuracy,
                  b.final_loss);
    if (!csv_open(s, &c, "bf16_lost.csv", "x,y,series") ||
        !lost_rows(s, &c, "mlp-o3-bf16-rne", "bf16 nearest") ||
        !lost_rows(s, &c, "mlp-o3-bf16-sr", "bf16 stochastic") || !csv_close(s, &c)) {
        csv_abort(&c);
        section_failed(s, "bf16_lost.csv");
        return;
    }
    const char *bv[] = {"title=Lost bf16 weight updates: nearest against stochastic rounding",
                        "xlabel=step", "ylabel=fraction lost", NULL};
    rp_figure(s->rep, "lines.gp", "bf16_lost", "bf16 updates: nearest and stochastic rounding", bv);
}

/* ---- 4. precision modes ------------------------------------------------------------------ */
static void study_modes(study *s)
{
    const level_plan *p = s->plan;
    rp_section(s->rep, "modes", "Precision modes O0-O3");
    static const struct {
        const char *name, *mode, *dtype, *scale;
    } modes[] = {
        {"mlp-O0", "O0", "fp16", "none"},      {"mlp-O1-fp16", "O1", "fp16", "pytorch"},
        {"mlp-O1-bf16", "O1", "bf16", "none"}, {"mlp-O2-fp16", "O2", "fp16", "pytorch"},
        {"mlp-O2-bf16", "O2", "bf16", "none"}, {"mlp-O3-fp16", "O3", "fp16", "pytorch"},
        {"mlp-O3-bf16", "O3", "bf16", "none"},
    };
    double t0 = NAN;
    csv c = {.ok = false};
    if (!csv_open(s, &c, "modes.csv",
                  "mode,dtype,loss_scale,steps,final_loss,test_accuracy,skipped,"
                  "seconds_per_step,speedup_vs_O0"))
        goto fail;
    for (int i = 0; i < 7; i++) {
        double sec;
        rec_run_summary r;
        if (train(s, modes[i].name, &sec, "net", "mlp", "mode", modes[i].mode, "dtype",
                  modes[i].dtype, "loss-scale", modes[i].scale, "steps", p->mlp_steps, "subset",
                  p->mlp_subset, "stats-every", "0", "hist-every", "0", "trace-every", "0", "seed",
                  "1", NULL) != 0 ||
            summarize(s, modes[i].name, &r) != 0) {
            csv_abort(&c);
            goto fail;
        }
        const double per_step = sec / (double)r.steps;
        if (i == 0) t0 = per_step;
        csv_row(&c, "%s,%s,%s,%lld,%.5f,%.4f,%lld,%.6f,%.3f", modes[i].mode,
                i == 0 ? "fp32" : modes[i].dtype, modes[i].scale, (long long)r.steps, r.final_loss,
                r.test_accuracy, (long long)r.skipped, per_step, t0 / per_step);
    }
    if (!csv_close(s, &c)) goto fail;
    rp_claim(s->rep,
             "Mixed precision keeps the fp32 result; on hardware with fp16 tensor cores it is "
             "also faster.",
             "The PaddlePaddle AMP tutorial (3 x Linear 4096, batch 512, 250 steps, V100): fp32 "
             "2.926 s, O1 1.294 s (2.1x), O2 0.890 s (3.0x).",
             "The table: the MLP on Fashion-MNIST in every mode, same seed and data order; time "
             "per step (including the test-set evaluation) on this report's backend.",
             "On the cpu backend low precision is emulated bit for bit in software, so it costs "
             "time instead of saving it (O2 about 1.2x the O0 time, O3 several times, see "
             "docs/PERFORMANCE.md); the speedups of the tutorial need a GPU (--backend cuda).");
    rp_table_csv(s->rep, "Modes: accuracy, skipped steps, time per step", "modes.csv");
    return;
fail:
    section_failed(s, "modes.csv");
}

/* ---- 5 and 6. loss scalers ---------------------------------------------------------------- */
static const char *const presets[] = {"pytorch", "apex",      "mindspore-manager", "mindspore-amp",
                                      "paddle",  "deepspeed", "megatron",          "keras"};

static void study_scalers(study *s)
{
    const level_plan *p = s->plan;
    rp_section(s->rep, "scalers", "Loss scalers of seven frameworks on one trace");
    char dir[4096], why[512];
    path_of(s, dir, sizeof dir, "runs", "mlp-o0");
    an_trace t;
    if (train_mlp_o0(s) != 0 || an_trace_load(dir, &t, s->msg, sizeof s->msg) != AN_OK) {
        section_failed(s, "the MLP's gradient trace");
        return;
    }
    rp_claim(s->rep,
             "The frameworks' dynamic loss scalers differ in their start, window and hysteresis, "
             "so on the same gradients they hold different scales and skip different steps.",
             "Each framework's rule from its source (REFERENCES.md): PyTorch, Apex, Paddle and "
             "Keras start at 2^16 or 2^15 with windows of 2000; MindSpore's manager at 2^24; "
             "DeepSpeed and Megatron use hysteresis 2 and windows of 1000 (Megatron starts at "
             "2^32).",
             "Every preset replayed (analyze/replay.h, the training rule itself) over the MLP's "
             "fp32 gradient trace, for fp16.",
             "A replay predicts overflow from max |g| times the scale, assuming fp16 training "
             "would see the fp32 run's gradients; the validation below checks that assumption.");
    csv c = {.ok = false}, tab = {.ok = false};
    double *scales = malloc(t.n * sizeof *scales);
    uint8_t *skipped = malloc(t.n);
    if (!scales || !skipped || !csv_open(s, &c, "scalers.csv", "step,scale,skipped,series") ||
        !csv_open(s, &tab, "scalers_table.csv",
                  "preset,init_scale,window,hysteresis,overflow_steps,skipped_steps,"
                  "mean_underflow_frac,steps_below_best,final_scale")) {
        free(scales);
        free(skipped);
        csv_abort(&c);
        an_trace_free(&t);
        section_failed(s, "scalers.csv");
        return;
    }
    for (size_t k = 0; k < sizeof presets / sizeof *presets; k++) {
        ak_scaler_config cfg;
        an_replay_result res;
        if (ak_scaler_preset(presets[k], &cfg, why, sizeof why) != 0 ||
            an_replay(&t, &cfg, FPE_FMT_F16, &res, scales, skipped, s->msg, sizeof s->msg) != AN_OK)
            continue;
        for (size_t i = 0; i < t.n; i++)
            csv_row(&c, "%lld,%.9g,%d,%s", (long long)t.steps[i].step, scales[i], skipped[i],
                    presets[k]);
        csv_row(&tab, "%s,%g,%d,%d,%lld,%lld,%.6f,%lld,%g", presets[k], cfg.init_scale,
                (int)cfg.window, (int)cfg.hysteresis, (long long)res.overflow_steps,
                (long long)res.skipped_steps, res.mean_underflow_frac,
                (long long)res.steps_below_best, res.final_scale);
    }
    free(scales);
    free(skipped);
    const bool ok1 = csv_close(s, &c), ok = csv_close(s, &tab) && ok1;
    if (!ok) {
        an_trace_free(&t);
        section_failed(s, "scalers.csv");
        return;
    }
    const char *sv[] = {"title=Loss scale held by each preset (replayed), skips marked", NULL};
    rp_figure(s->rep, "scale.gp", "scalers", "Scale trajectories of the presets on one trace", sv);
    rp_table_csv(s->rep, "Per preset, over the trace", "scalers_table.csv");

    /* 6. the grid and the recommendation */
    rp_section(s->rep, "choose", "Choosing scale_window and scale_factor");
    ak_scaler_config base;
    ak_scaler_preset("pytorch", &base, why, sizeof why);
    an_grid g = an_grid_default();
    an_recommendation rec;
    char path[4096];
    path_of(s, path, sizeof path, "recommend_grid.csv", NULL);
    if (an_recommend(&t, &base, FPE_FMT_F16, &g, &rec, s->msg, sizeof s->msg) != AN_OK ||
        an_recommendation_write_csv(&rec, path, s->msg, sizeof s->msg) != AN_OK) {
        an_trace_free(&t);
        section_failed(s, "recommend_grid.csv");
        return;
    }
    rp_claim(s->rep,
             "A scaler should hold the largest scale that does not overflow, and skip few steps: "
             "a short window retries growth often and pays in skipped steps, a long one holds a "
             "lower scale than it could and pays in underflow.",
             "Micikevicius et al. 2018: choose S with S max|g| < 65504 and skip the steps that "
             "overflow; the frameworks default to factor 2 and windows of 1000-2000.",
             rec.reason,
             "The recommendation is for this network and trace; `ampscope recommend RUN_DIR` "
             "gives one for any run recorded with a trace.");
    csv hm1 = {.ok = false}, hm2 = {.ok = false};
    if (csv_open(s, &hm1, "grid_underflow.csv", "x,y,value") &&
        csv_open(s, &hm2, "grid_skips.csv", "x,y,value")) {
        for (size_t i = 0; i < rec.n; i++) {
            csv_row(&hm1, "%d,%g,%.4f", (int)rec.points[i].window, rec.points[i].factor,
                    100 * rec.points[i].r.mean_underflow_frac);
            csv_row(&hm2, "%d,%g,%.3f", (int)rec.points[i].window, rec.points[i].factor,
                    100 * rec.points[i].r.skip_frac);
        }
    }
    const bool hm_ok = csv_close(s, &hm1);
    if (!csv_close(s, &hm2) || !hm_ok) {
        section_failed(s, "the grid heatmaps' CSV");
    } else {
        const char *h1[] = {
            "title=Mean underflow (% of nonzero gradients flushed) at the scale held",
            "xlabel=scale_window", "ylabel=scale_factor", "cblabel=%", NULL};
        rp_figure(s->rep, "heatmap.gp", "grid_underflow", "Underflow over the grid", h1);
        const char *h2[] = {"title=Skipped steps (% of steps)", "xlabel=scale_window",
                            "ylabel=scale_factor", "cblabel=%", NULL};
        rp_figure(s->rep, "heatmap.gp", "grid_skips", "Skipped steps over the grid", h2);
        rp_table_csv(s->rep, "The grid (chosen = 1)", "recommend_grid.csv");
    }

    /* validation: real O2 fp16 runs at grid points against the replay's prediction */
    static const struct {
        const char *factor, *window;
    } pts[] = {{"2", "10"}, {"2", "50"}, {"4", "20"}, {"8", "100"}};
    csv v = {.ok = false};
    if (!csv_open(s, &v, "validation.csv", "predicted,measured,label,factor,window,within_20pct")) {
        an_recommendation_free(&rec);
        an_trace_free(&t);
        section_failed(s, "validation.csv");
        return;
    }
    int within = 0, total = 0;
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "mlp-O2-f%s-w%s", pts[i].factor, pts[i].window);
        rec_run_summary r;
        if (train(s, name, NULL, "net", "mlp", "mode", "O2", "dtype", "fp16", "loss-scale",
                  "dynamic", "init-scale", "65536", "scale-factor", pts[i].factor, "scale-window",
                  pts[i].window, "steps", p->mlp_steps, "subset", p->mlp_subset, "stats-every", "0",
                  "hist-every", "0", "trace-every", "0", "seed", "1", NULL) != 0 ||
            summarize(s, name, &r) != 0) {
            csv_abort(&v);
            break;
        }
        ak_scaler_config cfg = base;
        cfg.init_scale = 65536;
        cfg.growth_factor = (float)atof(pts[i].factor);
        cfg.backoff_factor = 1.0f / cfg.growth_factor;
        cfg.window = atoi(pts[i].window);
        an_replay_result res;
        if (an_replay(&t, &cfg, FPE_FMT_F16, &res, NULL, NULL, s->msg, sizeof s->msg) != AN_OK) {
            csv_abort(&v);
            break;
        }
        const double pred = (double)res.skipped_steps, meas = (double)r.skipped;
        const bool agrees = meas == 0 ? pred == 0 : fabs(pred - meas) <= 0.2 * meas;
        within += agrees;
        total++;
        csv_row(&v, "%g,%g,f%s w%s,%s,%s,%d", pred, meas, pts[i].factor, pts[i].window,
                pts[i].factor, pts[i].window, agrees);
    }
    if (!csv_close(s, &v)) {
        section_failed(s, "validation.csv");
    } else {
        rp_paragraphf(s->rep,
                      "Validation: real O2 fp16 runs of the MLP at %d grid points (initial scale "
                      "2^16), their skipped steps against the replay's prediction from the fp32 "
                      "trace: %d of %d within +-20%%.",
                      total, within, total);
        const char *vv[] = {"title=Skipped steps: replay prediction against O2 training", NULL};
        rp_figure(s->rep, "scatter.gp", "validation", "Predicted against measured skips", vv);
        rp_table_csv(s->rep, "Validation runs", "validation.csv");
        if (within < total)
            rp_paragraphf(s->rep,
                          "NOT REPRODUCED: %d of %d grid points fall outside +-20%% (see the "
                          "table); the replay's assumption that fp16 training sees the fp32 "
                          "run's gradients does not hold closely enough there.",
                          total - within, total);
    }
    an_recommendation_free(&rec);
    an_trace_free(&t);
}

/* ---- the whole ------------------------------------------------------------------------ */
int reproduce_run(const repro_options *o, char *msg, size_t msg_len)
{
    study s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.plan = &plans[o->level];
    s.t0 = ut_seconds();
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return ut_fail(msg, msg_len, REPRO_EINPUT, "--out %s: %s", o->out_dir, strerror(errno));
    char runs[4096];
    path_of(&s, runs, sizeof runs, "runs", NULL);
    if (mkdir(runs, 0777) != 0 && errno != EEXIST)
        return ut_fail(msg, msg_len, REPRO_EFAIL, "%s: %s", runs, strerror(errno));
    if (o->progress)
        fprintf(stderr, "ampscope reproduce --%s: expect about %.0f minutes on a 2-core CPU\n",
                s.plan->name, s.plan->est_minutes);
    char title[128];
    snprintf(title, sizeof title, "ampscope: mixed-precision studies (--%s)", s.plan->name);
    s.rep = rp_open(o->out_dir, title, msg, msg_len);
    if (!s.rep) return REPRO_EFAIL;
    study_formats(&s);
    study_underflow(&s);
    study_rounding(&s);
    study_modes(&s);
    study_scalers(&s);
    const int rc = rp_close(s.rep, msg, msg_len);
    if (s.interrupted)
        return ut_fail(msg, msg_len, REPRO_EFAIL,
                       "interrupted: the report in %s is partial; run the same command again to "
                       "finish it (finished runs are reused)",
                       o->out_dir);
    progress(&s, "report: %s/index.html", o->out_dir);
    if (rc == RP_ENOGNUPLOT)
        return ut_fail(msg, msg_len, REPRO_EFAIL,
                       "gnuplot is not installed, so the report has no figures (CSV files and "
                       "tables are in %s): install it with apt-get install gnuplot-nox",
                       o->out_dir);
    if (rc != RP_OK) return REPRO_EFAIL;
    if (s.failures)
        return ut_fail(msg, msg_len, REPRO_EFAIL, "%d part(s) of the report could not be made",
                       s.failures);
    return 0;
}
