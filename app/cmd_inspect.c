/* cmd_inspect.c: `ampscope inspect`, the precision statistics of the
 * tensors of safetensors files (analyze/inspect.h) as the training record
 * logs them for ampscope's own runs: a table, CSV, histograms, figures. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "commands.h"
#include "inspect.h"
#include "record.h"
#include "record_lock.h"
#include "report.h"

/* The CSV contract (README, CHANGELOG): one row per tensor and scale. */
#define INSPECT_CSV_HEADER                                                                         \
    "file,tensor,dtype,shape,target,scale,count,nonzero,nonfinite,flushed,"                        \
    "flushed_frac_of_nonzero,subnormal,subnormal_frac_of_nonzero,overflowed,"                      \
    "overflow_frac_of_nonzero,zero_frac_of_count,amax"
#define INSPECT_HIST_HEADER "file,tensor,bin,count"
#define MAX_SCALES          64

static const char *const targets[] = {"fp16", "bf16", NULL};
static const fpe_format_id target_ids[] = {FPE_FMT_F16, FPE_FMT_BF16};

typedef struct inspect_args {
    int target; /* index into targets */
    const char *scale, *scales, *plot;
    bool csv, hist, force;
    const char **files;
    size_t n_files;
} inspect_args;

#define F(field) offsetof(inspect_args, field)
static const opt_spec inspect_options[] = {
    {.name = "dtype",
     .kind = OPT_CHOICE,
     .offset = F(target),
     .choices = targets,
     .help = "the target format the values are cast to (default fp16)"},
    {.name = "scale",
     .kind = OPT_STRING,
     .offset = F(scale),
     .metavar = "S",
     .help = "the loss scale the values are multiplied by before the cast (default 1;\n"
             "finite, > 0 and an fp32 value, as the record's scale)"},
    {.name = "scales",
     .kind = OPT_STRING,
     .offset = F(scales),
     .metavar = "LIST",
     .help = "several scales, e.g. 1,1024,65536: one row per tensor per scale"},
    {.name = "csv",
     .kind = OPT_FLAG,
     .offset = F(csv),
     .help = "CSV on stdout instead of the table (columns below)"},
    {.name = "hist",
     .kind = OPT_FLAG,
     .offset = F(hist),
     .help = "the log2 histograms instead (with --csv: file,tensor,bin,count)"},
    {.name = "plot",
     .kind = OPT_DIR,
     .offset = F(plot),
     .help = "also draw each tensor's histogram, and all tensors' merged, into DIR\n"
             "(index.html, PNG and SVG; created if missing, its parent must exist)"},
    {.name = "force",
     .kind = OPT_FLAG,
     .offset = F(force),
     .help = "replace what --plot DIR holds (only the files ampscope writes)"},
    {.name = NULL},
};
#undef F

static void help(FILE *out)
{
    fprintf(out,
            "usage: ampscope inspect FILE.safetensors... [--dtype fp16|bf16] [--scale S |\n"
            "                        --scales LIST] [--csv] [--hist] [--plot DIR [--force]]\n"
            "\n"
            "For every tensor of the files (dtypes F32, F16, BF16 and F64; the metadata is\n"
            "not a tensor), the precision statistics `ampscope train` records for its own\n"
            "runs (tensors.csv, hist.csv): how many values are zero, and of the finite\n"
            "nonzero ones how many flush to zero, become subnormal or overflow when the value\n"
            "times the scale is cast to the target format; the non-finite values; max |x|;\n"
            "the log2 histogram.  Counts are exact: the exact product x*S rounded once to\n"
            "the target, to nearest even, by the record's own code (F64 values exactly too,\n"
            "never rounded to fp32 first).  Weights, activations or gradients saved from any\n"
            "framework (PyTorch: safetensors.torch.save_file) can be compared with a run's.\n"
            "\n");
    cli_print_options(out, inspect_options, 20);
    fprintf(out,
            "\n"
            "The columns of --csv, one row per tensor and scale:\n"
            "  " INSPECT_CSV_HEADER "\n"
            "(file as given, tensor as named in the file, dtype as stored, shape as\n"
            "120x400 (a scalar's is empty), scale, fractions and amax with %%.9g; a\n"
            "fraction of nothing (no nonzero values) is an empty field, as in the record; a\n"
            "field holding a comma, quote or line break is quoted, its quotes doubled).\n"
            "The bins of --hist are hist.csv's: e for 2^e <= |x| < 2^(e+1), zero, nonfinite;\n"
            "only nonzero bins, of the unscaled values.  The figures (of the unscaled values)\n"
            "shade fp16's subnormal and normal ranges and mark bf16's, as the report's\n"
            "histograms do, where x*S meets them for the first scale S.\n"
            "\n"
            "exit status: 0 done, 2 bad input (options, a missing, malformed or truncated\n"
            "file, a tensor of another dtype: nothing is printed), 1 a figure that could\n"
            "not be drawn or written (no gnuplot).\n");
}

static int add_file(void *base, const char *arg)
{
    inspect_args *a = base;
    a->files[a->n_files++] = arg;
    return CLI_OK;
}

/* One scale: finite, > 0 and exactly an fp32 value. */
static int parse_scale(const char *opt, const char *text, float *out)
{
    double v;
    if (opt_parse_decimal(text, &v) != 0)
        return cli_error(CLI_EINPUT, "%s wants a number, got '%s'", opt, text);
    if (!(isfinite(v) && v > 0))
        return cli_error(CLI_EINPUT, "%s %s: a scale must be finite and > 0", opt, text);
    const float f = (float)v;
    if (!isfinite(f) || f == 0)
        return cli_error(CLI_EINPUT,
                         "%s %s: not representable as fp32 (the record's scale is an fp32: "
                         "from 1.40129846e-45 to 3.40282347e+38)",
                         opt, text);
    if ((double)f != v)
        return cli_error(CLI_EINPUT,
                         "%s %s: not an fp32 value (the record's scale is an fp32; the nearest "
                         "is %.9g)",
                         opt, text, (double)f);
    *out = f;
    return CLI_OK;
}

static int parse_scales(const inspect_args *a, float *scales, size_t *n)
{
    *n = 1;
    scales[0] = 1;
    if (a->scale && a->scales) return cli_error(CLI_EINPUT, "give --scale or --scales, not both");
    if (a->scale) return parse_scale("--scale", a->scale, &scales[0]);
    if (!a->scales) return CLI_OK;
    *n = 0;
    for (const char *p = a->scales;; p++) {
        const size_t len = strcspn(p, ",");
        char item[64];
        if (len == 0 || len >= sizeof item)
            return cli_error(CLI_EINPUT, "--scales '%s': expected numbers separated by commas",
                             a->scales);
        if (*n == MAX_SCALES)
            return cli_error(CLI_EINPUT, "--scales: at most %d scales", MAX_SCALES);
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        const int rc = parse_scale("--scales", item, &scales[(*n)++]);
        if (rc) return rc;
        p += len;
        if (!*p) return CLI_OK;
    }
}

/* A CSV field: as it is, or quoted (RFC 4180) when it holds , " CR or LF. */
static void put_field(const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void shape_text(const st_tensor *t, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t d = 0; d < t->ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64, d ? "x" : "", t->shape[d]);
}

static double frac(uint64_t num, uint64_t den) { return den ? (double)num / (double)den : NAN; }

static void put_frac(double v)
{
    if (!isnan(v)) printf("%.9g", v);
}

static void csv_row(const char *file, const st_tensor *t, const char *target,
                    const an_inspect_row *r)
{
    char shape[256];
    shape_text(t, shape, sizeof shape);
    put_field(file);
    putchar(',');
    put_field(t->name);
    printf(",%s,%s,%s,%.9g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
           st_dtype_name(t->dtype), shape, target, (double)r->scale, r->count, r->nonzero,
           r->nonfinite, r->flushed);
    put_frac(frac(r->flushed, r->nonzero));
    printf(",%" PRIu64 ",", r->subnormal);
    put_frac(frac(r->subnormal, r->nonzero));
    printf(",%" PRIu64 ",", r->overflowed);
    put_frac(frac(r->overflowed, r->nonzero));
    putchar(',');
    put_frac(frac(r->zero, r->count));
    printf(",%.9g\n", r->amax);
}

/* A percentage for the table: "-" for a fraction of nothing. */
static const char *pct(uint64_t num, uint64_t den, char *buf)
{
    if (!den)
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "%.4g", 100.0 * (double)num / (double)den);
    return buf;
}

static void table_row(const st_tensor *t, int name_w, int shape_w, const an_inspect_row *r)
{
    char shape[256], a[32], b[32], c[32], d[32];
    shape_text(t, shape, sizeof shape);
    printf("%-*s  %-5s %-*s %10.6g %12" PRIu64 " %9s %9s %10s %9s %9" PRIu64 " %11.6g\n", name_w,
           t->name, st_dtype_name(t->dtype), shape_w, shape, (double)r->scale, r->count,
           pct(r->zero, r->count, a), pct(r->flushed, r->nonzero, b),
           pct(r->subnormal, r->nonzero, c), pct(r->overflowed, r->nonzero, d), r->nonfinite,
           r->amax);
}

static void table_head(const char *file, size_t n, const char *target, int name_w, int shape_w)
{
    printf("%s: %zu tensor%s, cast to %s\n", file, n, n == 1 ? "" : "s", target);
    printf("%-*s  %-5s %-*s %10s %12s %9s %9s %10s %9s %9s %11s\n", name_w, "tensor", "dtype",
           shape_w, "shape", "scale", "count", "zero%", "flushed%", "subnormal%", "overflow%",
           "nonfinite", "max|x|");
}

static void hist_rows(const char *file, const st_tensor *t, const uint64_t *hist, bool csv)
{
    uint64_t total = 0;
    for (int b = 0; b < AN_BINS; b++)
        total += hist[b];
    if (!csv) printf("%s: %s (%" PRIu64 " values)\n", file, t->name, total);
    for (int b = 0; b < AN_BINS; b++) {
        char label[REC_BIN_LABEL_MAX];
        if (!hist[b] || !an_bin_label(b, label)) continue;
        if (!csv) {
            printf("  %-10s %12" PRIu64 "  %8.4f%%\n", label, hist[b],
                   100.0 * (double)hist[b] / (double)total);
            continue;
        }
        put_field(file);
        putchar(',');
        put_field(t->name);
        printf(",%s,%" PRIu64 "\n", label, hist[b]);
    }
}

/* Every file read and every tensor's dtype checked before anything is printed. */
static int check_files(const inspect_args *a)
{
    char msg[1024];
    for (size_t i = 0; i < a->n_files; i++) {
        if (access(a->files[i], F_OK) != 0)
            return cli_error(CLI_EINPUT, "%s: no such file", a->files[i]);
        st_file *f = st_open(a->files[i], msg, sizeof msg);
        if (!f) return cli_error(CLI_EINPUT, "%s", msg);
        for (size_t k = 0; k < st_count(f); k++) {
            const st_tensor *t = st_at(f, k);
            if (!an_inspect_dtype_ok(t->dtype)) {
                const int rc = cli_error(CLI_EINPUT,
                                         "%s: tensor '%s' has dtype %s (inspect reads F32, F16, "
                                         "BF16 and F64)",
                                         a->files[i], t->name, st_dtype_name(t->dtype));
                st_close(f);
                return rc;
            }
        }
        st_close(f);
    }
    return CLI_OK;
}

/* --plot DIR: one writer, never an input nor inside a record, replaced
 * only with --force (which never removes an input). */
static int take_plot_dir(const inspect_args *a, int *lock_fd)
{
    int rc = cli_want_out_dir("--plot", a->plot);
    if (rc) return rc;
    rec_input *inputs = calloc(a->n_files, sizeof *inputs);
    if (!inputs) return cli_error(CLI_EFAIL, "out of memory");
    for (size_t i = 0; i < a->n_files; i++)
        inputs[i] = (rec_input){"FILE", a->files[i]};
    char msg[1024], said[1024];
    const rec_out_dir want = {.option = "--plot",
                              .dir = a->plot,
                              .command = "inspect",
                              .inputs = inputs,
                              .n_inputs = a->n_files,
                              .force = a->force};
    const int taken = rec_take_out_dir(&want, lock_fd, said, sizeof said, msg, sizeof msg);
    free(inputs);
    if (taken) return cli_error(taken == AN_EINVAL ? CLI_EINPUT : CLI_EFAIL, "%s", msg);
    if (said[0]) fprintf(stderr, "ampscope inspect: %s\n", said);
    return CLI_OK;
}

/* A figure's name from a running index and the tensor's name. */
static void figure_name(size_t k, const char *tensor, char *buf, size_t len)
{
    int n = snprintf(buf, len, "hist_%zu_", k);
    for (const char *p = tensor; *p && (size_t)n + 1 < len && n < 96; p++, n++)
        buf[n] = (strchr("-_.", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                  (*p >= 'A' && *p <= 'Z'))
                     ? *p
                     : '_';
    buf[n] = '\0';
}

/* A series' text for the figure's CSV: no comma or line break. */
static void series_text(const char *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s", s);
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == '\n' || *p == '\r' || *p == '"') *p = ' ';
}

/* hist.gp's ranges drawn where x*S meets them, S the first scale */
static const char *const *shift_vars(float scale, char *buf, size_t len, const char **vars)
{
    snprintf(buf, len, "shift=%.17g", log2((double)scale));
    vars[0] = buf;
    vars[1] = NULL;
    return vars;
}

static int plot_tensor(rp_report *r, size_t k, const char *file, const st_tensor *t,
                       const char *target, const an_inspect_row *row, const uint64_t *hist)
{
    char name[128], caption[1024], title[512], series[256], shape[256], a[32], b[32], c[32];
    figure_name(k, t->name, name, sizeof name);
    series_text(t->name, series, sizeof series);
    shape_text(t, shape, sizeof shape);
    snprintf(title, sizeof title, "%s", series);
    snprintf(caption, sizeof caption,
             "log2 |x| of %s in %s (%s, shape %s, %" PRIu64 " values), as a fraction of its "
             "values; shaded: where x*S falls in fp16's subnormal and normal ranges, dotted and "
             "dashed: in bf16's.  Cast to %s at scale S = %.9g: %s%% of the nonzero values "
             "flush, %s%% become subnormal, %s%% overflow.",
             t->name, file, st_dtype_name(t->dtype), shape[0] ? shape : "scalar", row->count,
             target, (double)row->scale, pct(row->flushed, row->nonzero, a),
             pct(row->subnormal, row->nonzero, b), pct(row->overflowed, row->nonzero, c));
    const char *const names[] = {series};
    const uint64_t *const hists[] = {hist};
    char shift[64];
    const char *vars[2];
    return rp_hist_figure(r, name, caption, title, names, hists, 1,
                          shift_vars(row->scale, shift, sizeof shift, vars));
}

/* The files' tensors, printed and, with a report, drawn (what could not be
 * drawn is the report's to say, at rp_close); hist_all gets every
 * histogram added. */
static int inspect_files(const inspect_args *a, const float *scales, size_t n_scales,
                         rp_report *rep, uint64_t *hist_all)
{
    const char *target = targets[a->target];
    const fpe_format_id tid = target_ids[a->target];
    char msg[1024];
    ak_backend *cpu = ak_open("cpu", msg, sizeof msg);
    an_inspect_row *rows = calloc(n_scales, sizeof *rows);
    uint64_t *hist = calloc(AN_BINS, sizeof *hist);
    int rc = CLI_OK;
    if (!cpu) rc = cli_error(CLI_EFAIL, "%s", msg);
    if (!rc && (!rows || !hist)) rc = cli_error(CLI_EFAIL, "out of memory");
    if (!rc && a->csv) puts(a->hist ? INSPECT_HIST_HEADER : INSPECT_CSV_HEADER);
    size_t figures = 0;
    for (size_t i = 0; !rc && i < a->n_files; i++) {
        const char *file = a->files[i];
        st_file *f = st_open(file, msg, sizeof msg);
        if (!f) {
            rc = cli_error(CLI_EINPUT, "%s", msg);
            break;
        }
        int name_w = 6, shape_w = 5;
        for (size_t k = 0; k < st_count(f); k++) {
            char shape[256];
            shape_text(st_at(f, k), shape, sizeof shape);
            const int nw = (int)strlen(st_at(f, k)->name), sw = (int)strlen(shape);
            name_w = nw > name_w ? (nw < 60 ? nw : 60) : name_w;
            shape_w = sw > shape_w ? sw : shape_w;
        }
        if (!a->csv && !a->hist) table_head(file, st_count(f), target, name_w, shape_w);
        for (size_t k = 0; !rc && k < st_count(f); k++) {
            const st_tensor *t = st_at(f, k);
            memset(hist, 0, AN_BINS * sizeof *hist);
            const int s =
                an_inspect_tensor(cpu, t, tid, scales, n_scales, rows, hist, msg, sizeof msg);
            if (s) {
                rc = cli_error(s == AN_EINVAL ? CLI_EINPUT : CLI_EFAIL, "%s: %s", file, msg);
                break;
            }
            if (a->hist) hist_rows(file, t, hist, a->csv);
            for (size_t j = 0; !a->hist && j < n_scales; j++) {
                if (a->csv)
                    csv_row(file, t, target, &rows[j]);
                else
                    table_row(t, name_w, shape_w, &rows[j]);
            }
            if (rep && rows[0].count) {
                (void)plot_tensor(rep, ++figures, file, t, target, &rows[0], hist);
                for (int b = 0; b < AN_BINS; b++)
                    hist_all[b] += hist[b];
            }
        }
        st_close(f);
        if (!rc && !a->csv && !a->hist && i + 1 < a->n_files) putchar('\n');
    }
    free(rows);
    free(hist);
    ak_close(cpu);
    return rc;
}

int cmd_inspect(int argc, char **argv)
{
    cli_set_context("inspect");
    inspect_args a = {0};
    a.files = argc > 1 ? calloc((size_t)argc, sizeof *a.files) : NULL;
    if (argc > 1 && !a.files) return cli_error(CLI_EFAIL, "out of memory");
    bool want_help;
    int rc = cli_parse_options(inspect_options, &a, argc, argv, &want_help, add_file);
    if (!rc && want_help) {
        help(stdout);
        free(a.files);
        return CLI_OK;
    }
    float scales[MAX_SCALES];
    size_t n_scales = 0;
    if (!rc && a.n_files == 0)
        rc = cli_error(CLI_EINPUT, "no FILE given (see 'ampscope inspect --help')");
    if (!rc) rc = parse_scales(&a, scales, &n_scales);
    if (!rc && a.force && !a.plot) rc = cli_error(CLI_EINPUT, "--force applies to --plot DIR");
    if (!rc) rc = check_files(&a);
    int lock_fd = -1;
    if (!rc && a.plot) rc = take_plot_dir(&a, &lock_fd);
    if (rc) {
        free(a.files);
        return rc;
    }
    char msg[1024];
    rp_report *rep = NULL;
    uint64_t *hist_all = NULL;
    if (a.plot) {
        hist_all = calloc(AN_BINS, sizeof *hist_all);
        rep = hist_all ? rp_open(a.plot, "ampscope inspect", msg, sizeof msg) : NULL;
        if (!rep) {
            rec_lock_release(lock_fd);
            free(hist_all);
            free(a.files);
            return cli_error(CLI_EFAIL, "%s", hist_all ? msg : "out of memory");
        }
        rp_section(rep, "histograms", "Histograms");
        rp_paragraphf(rep,
                      "The log2 histograms of the tensors of %zu file%s (ampscope inspect): "
                      "each tensor's, then all tensors merged.",
                      a.n_files, a.n_files == 1 ? "" : "s");
    }
    rc = inspect_files(&a, scales, n_scales, rep, hist_all);
    if (rep) {
        uint64_t values = 0;
        for (int b = 0; b < AN_BINS; b++)
            values += hist_all[b];
        if (!rc && !values) rp_paragraph(rep, "No tensor holds a value: nothing to draw.");
        if (!rc && values) {
            const char *const names[] = {"all tensors"};
            const uint64_t *const hists[] = {hist_all};
            char shift[64], caption[256];
            const char *vars[2];
            snprintf(caption, sizeof caption,
                     "log2 |x| of every value of every tensor of the files, as a fraction of "
                     "all; the ranges shaded and marked as above, at scale S = %.9g.",
                     (double)scales[0]);
            (void)rp_hist_figure(rep, "hist_all", caption, "all tensors", names, hists, 1,
                                 shift_vars(scales[0], shift, sizeof shift, vars));
        }
        const int closed = rp_close(rep, msg, sizeof msg);
        rec_lock_release(lock_fd);
        if (!rc && closed != RP_OK) rc = cli_error(CLI_EFAIL, "--plot %s", msg);
        if (!rc) fprintf(stderr, "ampscope inspect: figures in %s/index.html\n", a.plot);
    }
    free(hist_all);
    free(a.files);
    return rc;
}
