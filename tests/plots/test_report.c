/* test_report: the report writer (plots/report.h) on small hand-written
 * CSV files and run directories, each test in a fresh directory under a
 * mkdtemp base.  The figures are drawn by the gnuplot on PATH; the paths
 * where gnuplot fails, writes nothing or is missing are driven by small
 * stand-in `gnuplot` shell scripts on a PATH of their own.  Expected CSV
 * texts and numbers are worked out by hand.  Without a gnuplot on PATH the
 * tests that need one pass without drawing and the program exits 77. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "record.h"
#include "report.h"
#include "scratch.h"

/* ---- files ---- */
static void path_in(char *out, size_t len, const char *dir, const char *name)
{
    const int n = snprintf(out, len, "%s/%s", dir, name);
    ck_assert_msg(n > 0 && (size_t)n < len, "path too long: %s/%s", dir, name);
}

/* The whole content of dir/name (NUL-terminated, malloc'ed, *len bytes), or NULL. */
static char *slurp_in(const char *dir, const char *name, size_t *len)
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

static void put_in(const char *dir, const char *name, const char *text)
{
    char path[1024];
    path_in(path, sizeof path, dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static bool exists_in(const char *dir, const char *name)
{
    char path[1024];
    struct stat st;
    path_in(path, sizeof path, dir, name);
    return stat(path, &st) == 0;
}

static void assert_file_is(const char *dir, const char *name, const char *expected)
{
    char *got = slurp_in(dir, name, NULL);
    ck_assert_msg(got != NULL, "%s/%s is missing", dir, name);
    ck_assert_str_eq(got, expected);
    free(got);
}

/* A drawn figure: name.png with the PNG signature and more than a blank
 * canvas's bytes, name.svg an XML/SVG document that ends with </svg>. */
static void assert_figure(const char *dir, const char *name)
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

static void assert_no_figure(const char *dir, const char *name)
{
    char file[256];
    snprintf(file, sizeof file, "%s.png", name);
    ck_assert_msg(!exists_in(dir, file), "%s exists", file);
}

/* Every href and src of index.html (but #anchors) names a file in dir;
 * returns how many there were. */
static int assert_links_exist(const char *dir)
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

static void assert_page_has(const char *dir, const char *text)
{
    char *page = slurp_in(dir, "index.html", NULL);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page, text) != NULL, "index.html lacks: %s", text);
    free(page);
}

static void assert_page_lacks(const char *dir, const char *text)
{
    char *page = slurp_in(dir, "index.html", NULL);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page, text) == NULL, "index.html has: %s", text);
    free(page);
}

/* A stand-in gnuplot: `bin/gnuplot` running body (sh), PATH set to bin only. */
static void fake_gnuplot(const char *dir, const char *body)
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

/* ---- run directories ---- */
static const char steps_a[] = "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
                              "0,0,2.5,65536,0,0,0.01\n"
                              "1,0,2,65536,1,1,0.01\n"
                              "2,0,1.5,32768,0,0,0.01\n";
static const char eval_a[] = "epoch,step,test_loss,test_accuracy\n"
                             "0,3,1.25,0.75\n";
#define TENSORS_HEADER                                                                             \
    "step,layer,kind,dtype,scale,count,nonzero,nonfinite,flushed,flushed_frac_of_nonzero,"         \
    "subnormal,subnormal_frac_of_nonzero,overflowed,overflow_frac_of_nonzero,zero_frac_of_count,"  \
    "amax\n"
static const char tensors_a[] =
    TENSORS_HEADER "0,fc1,weight,fp16,65536,8,8,0,0,0,0,0,0,0,0,1\n"
                   "0,fc1,weight_grad,fp16,65536,8,8,0,2,0.25,1,0.125,0,0,0,0.5\n"
                   "0,fc1,activation_grad,fp16,65536,4,4,0,1,0.25,0,0,0,0,0,0.25\n"
                   "0,relu1,activation_grad,fp16,65536,4,2,0,0,0,0,0,0,0,0.5,0.25\n"
                   "2,fc1,weight_grad,fp16,32768,8,8,0,4,0.5,0,0,0,0,0,0.5\n"
                   "2,fc1,activation_grad,fp16,32768,4,0,0,0,,0,,0,,1,0\n";
static const char updates_a[] =
    "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,rel_update_error,"
    "predicted_lost,predicted_lost_frac_of_nonzero,skipped\n"
    "0,fc1,8,8,2,0.25,0.01,3,0.375,0\n"
    "2,fc1,8,8,1,0.125,0.01,1,0.125,0\n";
static const char hist_a[] = "step,layer,kind,bin,count\n"
                             "0,fc1,activation_grad,-20,3\n"
                             "2,fc1,activation_grad,zero,1\n"
                             "2,fc1,activation_grad,-20,2\n"
                             "2,relu1,activation_grad,-10,4\n"
                             "2,relu1,activation_grad,-20,5\n"
                             "2,fc1,weight_grad,-8,8\n";

static void write_run_json(const char *dir, const char *mode, const char *loss_scale)
{
    char path[1024], msg[512];
    rec_run *info = rec_run_new("0.1.0", "abc1234", "cpu", "test machine");
    ck_assert_ptr_nonnull(info);
    ck_assert_int_eq(rec_run_set_string(info, "net", "mlp"), AN_OK);
    ck_assert_int_eq(rec_run_set_string(info, "mode", mode), AN_OK);
    ck_assert_int_eq(rec_run_set_string(info, "dtype", "fp16"), AN_OK);
    if (loss_scale) ck_assert_int_eq(rec_run_set_string(info, "loss-scale", loss_scale), AN_OK);
    ck_assert_int_eq(rec_run_set_int(info, "batch", 4), AN_OK);
    rec_run_set_start(info, 1700000000);
    path_in(path, sizeof path, dir, "run.json");
    ck_assert_int_eq(rec_run_write(info, path, msg, sizeof msg), AN_OK);
    rec_run_free(info);
}

/* Run "a": O2 with the pytorch scaler, one skipped step, layers fc1 and relu1. */
static void make_run_a(const char *dir)
{
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    write_run_json(dir, "O2", "pytorch");
    put_in(dir, "steps.csv", steps_a);
    put_in(dir, "eval.csv", eval_a);
    put_in(dir, "tensors.csv", tensors_a);
    put_in(dir, "updates.csv", updates_a);
    put_in(dir, "hist.csv", hist_a);
}

/* Run "b": O0, no scaler, two steps, layer fc1 only. */
static void make_run_b(const char *dir)
{
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    write_run_json(dir, "O0", NULL);
    put_in(dir, "steps.csv",
           "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
           "0,0,2.25,1,0,0,0.01\n"
           "1,0,1.75,1,0,0,0.01\n");
    put_in(dir, "eval.csv",
           "epoch,step,test_loss,test_accuracy\n"
           "0,2,1.5,0.5\n"
           "1,4,1,0.625\n");
    put_in(dir, "tensors.csv",
           TENSORS_HEADER "1,fc1,weight_grad,fp16,1,8,8,0,1,0.125,0,0,0,0,0,2\n");
    put_in(dir, "updates.csv",
           "step,layer,elements,nonzero_updates,lost,lost_frac_of_nonzero,rel_update_error,"
           "predicted_lost,predicted_lost_frac_of_nonzero,skipped\n"
           "1,fc1,8,8,0,0,0,0,0,0\n");
    put_in(dir, "hist.csv",
           "step,layer,kind,bin,count\n"
           "1,fc1,activation_grad,-3,2\n"
           "1,fc1,weight_grad,-5,6\n"
           "1,fc1,weight_grad,zero,2\n");
}

/* The two runs in dir/a, dir/b and a report folder dir/out. */
static void make_runs(const char *dir, char *a, char *b, char *out, size_t len)
{
    path_in(a, len, dir, "a");
    path_in(b, len, dir, "b");
    path_in(out, len, dir, "out");
    make_run_a(a);
    make_run_b(b);
}

/* ---- tests ---- */
START_TEST(open_makes_folders_and_rejects)
{
    char dir[256], out[512], msg[512];
    new_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/x/y/z/", dir);
    rp_report *r = rp_open(out, NULL, msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    out[strlen(out) - 1] = '\0';
    ck_assert_str_eq(rp_dir(r), out); /* as given, less the trailing '/' */
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_OK);
    ck_assert_str_eq(msg, "");
    ck_assert(exists_in(dir, "x/y/z/index.html"));
    assert_page_has(out, "<title>ampscope report</title>");

    /* a folder under a regular file */
    put_in(dir, "file", "x");
    snprintf(out, sizeof out, "%s/file/sub", dir);
    ck_assert_ptr_null(rp_open(out, "t", msg, sizeof msg));
    ck_assert_msg(strstr(msg, "mkdir") && strstr(msg, "file/sub"), "message: %s", msg);
    ck_assert_ptr_null(rp_open("", "t", msg, sizeof msg));
    ck_assert_ptr_nonnull(strstr(msg, "empty output directory"));
    ck_assert_ptr_null(rp_open(NULL, "t", msg, sizeof msg));
    ck_assert_int_eq(rp_close(NULL, msg, sizeof msg), RP_EINVAL);
    ck_assert_int_eq(rp_figure(NULL, "lines.gp", "x", "c", NULL), RP_EINVAL);
    ck_assert_int_eq(rp_table_csv(NULL, "c", "x.csv"), RP_EINVAL);
    ck_assert_int_eq(rp_add_runs(NULL, NULL, 0), RP_EINVAL);
    ck_assert(!rp_have_gnuplot(NULL));
    ck_assert_ptr_null(rp_dir(NULL));
}
END_TEST

/* Every built-in script draws a PNG and an SVG from a hand-written CSV. */
START_TEST(every_script_draws)
{
    char dir[256], msg[512];
    new_dir(dir, sizeof dir);
    rp_report *r = rp_open(dir, "All scripts", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    if (!rp_have_gnuplot(r)) {
        rp_close(r, msg, sizeof msg);
        return;
    }
    /* interleaved series, an empty y, a non-numeric y */
    put_in(dir, "l.csv", "x,y,series\n0,1,a\n0,2,b_2\n1,1.5,a\n1,,b_2\n2,1.25,a\n2,3,b_2\n3,x,a\n");
    put_in(dir, "s.csv",
           "step,scale,skipped,series\n0,65536,0,p\n1,65536,1,p\n2,32768,0,p\n"
           "0,1024,0,q\n1,2048,0,q\n");
    put_in(dir, "h.csv", "bin,count,series\nzero,5,a\n-20,3,a\n-19,2,a\n-8,4,b\nnonfinite,1,b\n");
    put_in(dir, "g.csv", "x,y,value\n2,1000,0.5\n2,2000,1\n4,1000,3\n4,2000,\n");
    put_in(dir, "p.csv", "predicted,measured,label\n10,11,f2w100\n20,17,f4w50\n5,5,\n");
    const char *lv[] = {"in=l.csv",    "title=it's \"quoted\"; and_more",
                        "xlabel=step", "ylabel=y",
                        "logy=1",      "points=1",
                        NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "lines", "Lines", lv), RP_OK);
    const char *sv[] = {"in=s.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "scale.gp", "scale", "Scale", sv), RP_OK);
    const char *hv[] = {"in=h.csv", "title=Histogram", NULL};
    ck_assert_int_eq(rp_figure(r, "hist.gp", "hist", "Histogram", hv), RP_OK);
    /* labels with spaces, and in= by default the figure's name .csv */
    put_in(dir, "spaces.csv", "x,y,series\n0,1,O3 fp16\n0,2,O2 fp16\n1,2,O3 fp16\n1,3,O2 fp16\n");
    ck_assert_int_eq(rp_figure(r, "lines.gp", "spaces", "Spaces", NULL), RP_OK);
    /* only zeros: nothing to draw but the ranges, still a figure */
    put_in(dir, "z.csv", "bin,count,series\nzero,5,a\n");
    const char *zv[] = {"in=z.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "hist.gp", "zeros", "Zeros", zv), RP_OK);
    const char *gv[] = {"in=g.csv", "cblabel=skips", "fmt=%.2f", NULL};
    ck_assert_int_eq(rp_figure(r, "heatmap.gp", "grid", "Grid", gv), RP_OK);
    const char *pv[] = {"in=p.csv", "band=0.1", NULL};
    ck_assert_int_eq(rp_figure(r, "scatter.gp", "scatter", "Scatter", pv), RP_OK);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_OK);
    static const char *const figures[] = {"lines", "spaces", "scale",  "hist",
                                          "zeros", "grid",   "scatter"};
    for (int i = 0; i < 7; i++)
        assert_figure(dir, figures[i]);
    static const char *const scripts[] = {"common.gp", "lines.gp",   "scale.gp",
                                          "hist.gp",   "heatmap.gp", "scatter.gp"};
    for (int i = 0; i < 6; i++) {
        char name[64];
        snprintf(name, sizeof name, "plots/%s", scripts[i]);
        ck_assert_msg(exists_in(dir, name), "%s missing", name);
    }
    /* 7 figures x (png, svg twice, csv, script) */
    ck_assert_int_eq(assert_links_exist(dir), 35);
    /* the title went through gnuplot's quoting and into the SVG as text */
    char *svg = slurp_in(dir, "lines.svg", NULL);
    ck_assert_ptr_nonnull(strstr(svg, ">it's \"quoted\"; and_more<"));
    free(svg);
    svg = slurp_in(dir, "spaces.svg", NULL); /* both series in the key, whole */
    ck_assert_ptr_nonnull(strstr(svg, ">O3 fp16<"));
    ck_assert_ptr_nonnull(strstr(svg, ">O2 fp16<"));
    free(svg);
    /* the redraw command, shell-quoted, then HTML-escaped */
    assert_page_has(dir, "gnuplot -e &quot;in=&#39;l.csv&#39;;title=&#39;it&#39;&#39;s "
                         "\\&quot;quoted\\&quot;; and_more&#39;;");
}
END_TEST

/* The stand-in gnuplot sees the report folder as its directory and the
 * variables quoted for gnuplot's -e; exit statuses and missing output
 * become notes. */
START_TEST(gnuplot_arguments_and_failures)
{
    char dir[256], out[512], msg[512];
    new_dir(dir, sizeof dir);
    fake_gnuplot(dir, "case \"$1\" in --version) echo 'gnuplot 9.9 stand-in'; exit 0;; esac\n"
                      "printf '%s|' \"$(pwd -P)\" \"$@\" > args.txt\n"
                      "case \"$2\" in *out=\\'ok*) echo png > ok.png; echo svg > ok.svg; \n"
                      "  echo png > ok2.png; echo svg > ok2.svg;; esac\n"
                      "case \"$2\" in *out=\\'fail\\'*) echo 'line 3: boom' >&2; exit 1;; esac\n"
                      "case \"$2\" in *out=\\'sig\\'*) kill -9 $$;; esac\n"
                      "exit 0");
    path_in(out, sizeof out, dir, "out");
    rp_report *r = rp_open(out, "t", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    ck_assert(rp_have_gnuplot(r));
    char real[600], expect[1024];
    ck_assert_ptr_nonnull(realpath(out, real));
    /* in= defaults to the figure's name .csv */
    put_in(out, "ok.csv", "x,y,series\n1,2,a\n");
    const char *t[] = {"title=it's", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "ok", "fine", t), RP_OK);
    snprintf(expect, sizeof expect, "%s|-e|in='ok.csv';title='it''s';out='ok'|plots/lines.gp|",
             real);
    assert_file_is(out, "args.txt", expect);
    put_in(out, "d.csv", "x,y,series\n1,2,a\n");
    const char *v[] = {"title=x", "in=d.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "ok2", "fine", v), RP_OK);
    snprintf(expect, sizeof expect, "%s|-e|title='x';in='d.csv';out='ok2'|plots/lines.gp|", real);
    assert_file_is(out, "args.txt", expect);
    ck_assert_int_eq(rp_figure(r, "lines.gp", "fail", "fails", v), RP_EPARTIAL);
    ck_assert_int_eq(rp_figure(r, "lines.gp", "empty", "writes nothing", v), RP_EPARTIAL);
    ck_assert_int_eq(rp_figure(r, "lines.gp", "sig", "killed", v), RP_EPARTIAL);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_EPARTIAL);
    ck_assert_msg(strstr(msg, "3 things left out"), "message: %s", msg);
    assert_page_has(out, "gnuplot 9.9 stand-in");
    assert_page_has(out, "Left out: figure fail</strong><br>gnuplot exited with status 1 on "
                         "plots/lines.gp with d.csv: line 3: boom");
    assert_page_has(out, "<img src=\"ok2.png\"");
    assert_page_has(out, "Left out: figure empty</strong><br>gnuplot exited 0 but wrote no "
                         "empty.png");
    assert_page_has(out, "Left out: figure sig</strong><br>gnuplot was killed by signal 9");
    assert_page_has(out, "<img src=\"ok.png\"");
    assert_page_lacks(out, "fail.png");
    assert_links_exist(out);
}
END_TEST

/* A gnuplot whose --version fails counts as none. */
START_TEST(gnuplot_version_failure)
{
    char dir[256], out[512], msg[512];
    new_dir(dir, sizeof dir);
    fake_gnuplot(dir, "exit 3");
    path_in(out, sizeof out, dir, "out");
    rp_report *r = rp_open(out, "t", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    ck_assert(!rp_have_gnuplot(r));
    put_in(out, "d.csv", "x,y,series\n1,2,a\n");
    const char *v[] = {"in=d.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f", "c", v), RP_ENOGNUPLOT);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_ENOGNUPLOT);
    ck_assert_msg(strstr(msg, "/bin/gnuplot --version exited with status 3"), "message: %s", msg);
}
END_TEST

/* Bad arguments and bad data are notes; nothing is drawn for them. */
START_TEST(figure_rejects)
{
    char dir[256], msg[512];
    new_dir(dir, sizeof dir);
    rp_report *r = rp_open(dir, "t", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    put_in(dir, "good.csv", "x,y,series\n1,2,a\n");
    put_in(dir, "nocol.csv", "x,y\n1,2\n");
    put_in(dir, "head.csv", "x,y,series\n");
    put_in(dir, "short.csv", "x,y,series\n1,2,a\n3,4\n5,6,a\n");
    put_in(dir, "cut.csv", "x,y,series\n1,2,a\n3,4");
    put_in(dir, "empty.csv", "");
    const char *in_good[] = {"in=good.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "bars.gp", "f1", "c", in_good), RP_EINVAL);
    ck_assert_int_eq(rp_figure(r, "common.gp", "f2", "c", in_good), RP_EINVAL);
    ck_assert_int_eq(rp_figure(r, NULL, "f3", "c", in_good), RP_EINVAL);
    ck_assert_int_eq(rp_figure(r, "lines.gp", "../f4", "c", in_good), RP_EINVAL);
    ck_assert_int_eq(rp_figure(r, "lines.gp", ".f5", "c", in_good), RP_EINVAL);
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f6", "c", NULL), RP_EPARTIAL); /* no f6.csv */
    const char *with_out[] = {"in=good.csv", "out=x", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f7", "c", with_out), RP_EINVAL);
    const char *bad_key[] = {"in=good.csv", "1x=2", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f8", "c", bad_key), RP_EINVAL);
    const char *no_eq[] = {"in=good.csv", "title", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f9", "c", no_eq), RP_EINVAL);
    const char *abs_in[] = {"in=/etc/passwd", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f10", "c", abs_in), RP_EINVAL);
    const char *up_in[] = {"in=../good.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f11", "c", up_in), RP_EINVAL);
    const char *missing[] = {"in=none.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f12", "c", missing), RP_EPARTIAL);
    const char *nocol[] = {"in=nocol.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f13", "c", nocol), RP_EPARTIAL);
    const char *nocol_scale[] = {"in=good.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "scale.gp", "f14", "c", nocol_scale), RP_EPARTIAL);
    const char *head[] = {"in=head.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f15", "c", head), RP_EPARTIAL);
    const char *shortrow[] = {"in=short.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f16", "c", shortrow), RP_EPARTIAL);
    const char *cut[] = {"in=cut.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f17", "c", cut), RP_EPARTIAL);
    const char *empty[] = {"in=empty.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "f18", "c", empty), RP_EPARTIAL);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_EPARTIAL);
    ck_assert_msg(strstr(msg, "18 things left out"), "message: %s", msg);
    static const char *const notes[] = {
        "rp_figure: no built-in script &#39;bars.gp&#39;",
        "rp_figure: no built-in script &#39;common.gp&#39;",
        "rp_figure: no built-in script &#39;(null)&#39;",
        "rp_figure: &#39;../f4&#39; is not a file name",
        "rp_figure: &#39;.f5&#39; is not a file name",
        "Left out: figure f6</strong><br>f6.csv: cannot open: No such file or directory",
        "rp_figure: &#39;out&#39; is set by the writer",
        "rp_figure: &#39;1x=2&#39; is not key=value",
        "rp_figure: &#39;title&#39; is not key=value",
        "Left out: figure f10</strong><br>rp_figure: in=/etc/passwd: not a file inside the "
        "report folder",
        "Left out: figure f11</strong><br>rp_figure: in=../good.csv: not a file inside the "
        "report folder",
        "none.csv: cannot open: No such file or directory",
        "nocol.csv: no column &#39;series&#39; (lines.gp reads x,y,series)",
        "good.csv: no column &#39;step&#39;, &#39;scale&#39;, &#39;skipped&#39; (scale.gp reads "
        "step,scale,skipped,series)",
        "head.csv: no rows under the header",
        "short.csv:3: expected 3 fields, got 2",
        "cut.csv:3: expected 3 fields, got 2 (the file ends there: cut short?)",
        "empty.csv: empty file (no header row)",
    };
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        assert_page_has(dir, notes[i]);
    for (int i = 1; i <= 18; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        assert_no_figure(dir, name);
    }
    assert_links_exist(dir);
}
END_TEST

/* Every text the caller gives is escaped; the page's own markup is not. */
START_TEST(html_escaping)
{
    char dir[256], msg[512];
    new_dir(dir, sizeof dir);
    rp_report *r = rp_open(dir, "<T> & \"U\"", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    rp_section(r, "a b<", "Sec <1>");
    rp_claim(r, "c<laim", "l&it", NULL, "d'iff");
    rp_paragraph(r, "<script>alert(1)</script>");
    rp_paragraphf(r, "%d < %s", 3, "4 & 5");
    rp_missing(r, "wh<at>", "wh\"y\"");
    put_in(dir, "t.csv", "name,<v>\n<b>x</b>,0.83040000000000003\nplain,65536\nq,nan\n");
    ck_assert_int_eq(rp_table_csv(r, "Cap & <cap>", "t.csv"), RP_OK);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_EPARTIAL); /* the one note */
    assert_page_has(dir, "<title>&lt;T&gt; &amp; &quot;U&quot;</title>");
    assert_page_has(dir, "<h2 id=\"a-b-\">Sec &lt;1&gt;</h2>");
    assert_page_has(dir, "<li><a href=\"#a-b-\">Sec &lt;1&gt;</a></li>");
    assert_page_has(dir, "<dt>Claim</dt><dd>c&lt;laim</dd>");
    assert_page_has(dir, "<dt>Literature</dt><dd>l&amp;it</dd>");
    assert_page_has(dir, "<dt>Difference</dt><dd>d&#39;iff</dd>");
    assert_page_lacks(dir, "<dt>Ours</dt>");
    assert_page_has(dir, "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
    assert_page_has(dir, "<p>3 &lt; 4 &amp; 5</p>");
    assert_page_has(dir, "Left out: wh&lt;at&gt;</strong><br>wh&quot;y&quot;");
    assert_page_has(dir, "<th>&lt;v&gt;</th>");
    assert_page_has(dir, "<td>&lt;b&gt;x&lt;/b&gt;</td><td class=\"num\">0.8304</td>");
    assert_page_has(dir, "<td>plain</td><td class=\"num\">65536</td>");
    assert_page_has(dir, "<td>q</td><td class=\"num\">nan</td>");
    assert_page_has(dir, "Cap &amp; &lt;cap&gt;");
    assert_page_lacks(dir, "<script>");
    assert_page_lacks(dir, "<b>");
    assert_links_exist(dir);
}
END_TEST

/* A long table shows its first 200 rows; a missing one is a note. */
START_TEST(table_limits_and_missing)
{
    char dir[256], msg[512];
    new_dir(dir, sizeof dir);
    rp_report *r = rp_open(dir, "t", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    char *text = malloc(8192);
    size_t n = (size_t)snprintf(text, 8192, "i\n");
    for (int i = 0; i < 250; i++)
        n += (size_t)snprintf(text + n, 8192 - n, "%d\n", i);
    put_in(dir, "long.csv", text);
    free(text);
    ck_assert_int_eq(rp_table_csv(r, "Long", "long.csv"), RP_OK);
    ck_assert_int_eq(rp_table_csv(r, "Gone", "gone.csv"), RP_EPARTIAL);
    ck_assert_int_eq(rp_table_csv(r, "None", NULL), RP_EINVAL);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_EPARTIAL);
    assert_page_has(dir, "<td class=\"num\">199</td>");
    assert_page_lacks(dir, "<td class=\"num\">200</td>");
    assert_page_has(dir, "The first 200 of 250 rows; all are in the CSV.");
    assert_page_has(dir, "Left out: table Gone</strong><br>gone.csv: cannot open");
    assert_page_has(dir, "rp_table_csv: no CSV file named");
    assert_links_exist(dir);
}
END_TEST

/* Two good runs: the combined CSVs hold exactly their rows; every figure is drawn. */
START_TEST(runs_report)
{
    char dir[256], a[512], b[512], out[512], msg[512];
    new_dir(dir, sizeof dir);
    make_runs(dir, a, b, out, sizeof a);
    rp_report *r = rp_open(out, "Two runs", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    const bool drawn = rp_have_gnuplot(r);
    const char *runs[] = {a, b};
    ck_assert_int_eq(rp_add_runs(r, runs, 2), drawn ? RP_OK : RP_ENOGNUPLOT);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), drawn ? RP_OK : RP_ENOGNUPLOT);

    assert_file_is(out, "runs.csv",
                   "run,net,mode,dtype,loss_scale,backend,steps,final_loss,final_test_accuracy,"
                   "skipped_steps,final_scale\n"
                   "a,mlp,O2,fp16,pytorch,cpu,3,1.5,0.75,1,32768\n"
                   "b,mlp,O0,fp16,none,cpu,2,1.75,0.625,0,1\n");
    assert_file_is(out, "loss.csv", "x,y,series\n0,2.5,a\n1,2,a\n2,1.5,a\n0,2.25,b\n1,1.75,b\n");
    assert_file_is(out, "accuracy.csv", "x,y,series\n0,0.75,a\n0,0.5,b\n1,0.625,b\n");
    assert_file_is(out, "scale.csv",
                   "step,scale,skipped,series\n0,65536,0,a\n1,65536,1,a\n2,32768,0,a\n"
                   "0,1,0,b\n1,1,0,b\n");
    /* the last histogram step of each run, layers summed, bins in order (zero first) */
    assert_file_is(out, "hist_activation_grad.csv",
                   "bin,count,series\nzero,1,a\n-20,7,a\n-10,4,a\n-3,2,b\n");
    assert_file_is(out, "hist_weight_grad.csv", "bin,count,series\n-8,8,a\nzero,2,b\n-5,6,b\n");
    /* weight_grad rows, then activation_grad rows, per run; 0/0 is an empty field */
    assert_file_is(out, "flushed_fc1.csv",
                   "x,y,series\n0,0.25,a:weight_grad\n2,0.5,a:weight_grad\n"
                   "0,0.25,a:activation_grad\n2,,a:activation_grad\n1,0.125,b:weight_grad\n");
    assert_file_is(out, "flushed_relu1.csv", "x,y,series\n0,0,a:activation_grad\n");
    assert_file_is(out, "updates_fc1.csv",
                   "x,y,series\n0,0.25,a:lost\n2,0.125,a:lost\n0,0.375,a:predicted\n"
                   "2,0.125,a:predicted\n1,0,b:lost\n1,0,b:predicted\n");
    ck_assert(!exists_in(out, "updates_relu1.csv")); /* relu1 has no weights */
    assert_page_has(out, "Zeros (counted in the fractions, not drawn): a at step 2: 8.33% of 12; "
                         "b at step 1: 0% of 2.");
    assert_page_has(out, "<td>a</td><td>mlp</td><td>O2</td><td>fp16</td><td>pytorch</td>");
    static const char *const figures[] = {
        "loss",        "accuracy",      "scale",      "hist_activation_grad", "hist_weight_grad",
        "flushed_fc1", "flushed_relu1", "updates_fc1"};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (drawn)
            assert_figure(out, figures[i]);
        else
            assert_no_figure(out, figures[i]);
    assert_links_exist(out);
    assert_page_lacks(out, "Left out");
}
END_TEST

/* A run whose steps.csv lacks a column, whose tensors.csv is cut short and
 * which has no hist.csv loses those figures only, each with a note naming
 * the file and the column or line. */
START_TEST(runs_with_bad_files)
{
    char dir[256], a[512], b[512], out[512], msg[512];
    new_dir(dir, sizeof dir);
    make_runs(dir, a, b, out, sizeof a);
    put_in(b, "steps.csv", "step,epoch,loss,found_inf,skipped,lr\n0,0,2.25,0,0,0.01\n");
    put_in(b, "tensors.csv",
           TENSORS_HEADER "1,fc1,weight_grad,fp16,1,8,8,0,1,0.125,0,0,0,0,0,2\n"
                          "2,fc1,weight_grad,fp16\n"
                          "3,fc1,weight_grad,fp16,1,8,8,0,1,0.125,0,0,0,0,0,2\n");
    char path[1024];
    path_in(path, sizeof path, b, "hist.csv");
    ck_assert_int_eq(unlink(path), 0);
    put_in(b, "eval.csv", "epoch,step,test_loss,test_accuracy\n");
    rp_report *r = rp_open(out, "Bad", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    const bool drawn = rp_have_gnuplot(r);
    const char *runs[] = {a, b};
    ck_assert_int_eq(rp_add_runs(r, runs, 2), drawn ? RP_EPARTIAL : RP_ENOGNUPLOT);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), drawn ? RP_EPARTIAL : RP_ENOGNUPLOT);
    if (drawn) ck_assert_msg(strstr(msg, "things left out (see its notes)"), "message: %s", msg);

    char note[1024];
    snprintf(note, sizeof note,
             "Left out: run b in the training-loss figure</strong><br>%s/steps.csv: no column "
             "&#39;loss_scale&#39; (the header is &#39;step,epoch,loss,found_inf,skipped,lr&#39;)",
             b);
    assert_page_has(out, note);
    assert_page_has(out, "Left out: run b in the loss-scale figure");
    snprintf(note, sizeof note,
             "Left out: run b in the flushed-gradient figures</strong><br>%s/tensors.csv:3: "
             "expected 16 fields, got 4",
             b);
    assert_page_has(out, note);
    snprintf(note, sizeof note,
             "Left out: run b in the gradient histograms</strong><br>%s/hist.csv: cannot open", b);
    assert_page_has(out, note);
    snprintf(note, sizeof note,
             "Left out: run b in the test-accuracy figure</strong><br>%s/eval.csv: no rows under "
             "the header",
             b);
    assert_page_has(out, note);
    /* the other figures hold run a (and b where its data was good) */
    assert_file_is(out, "loss.csv", "x,y,series\n0,2.5,a\n1,2,a\n2,1.5,a\n");
    assert_file_is(out, "accuracy.csv", "x,y,series\n0,0.75,a\n");
    assert_file_is(out, "hist_weight_grad.csv", "bin,count,series\n-8,8,a\n");
    assert_file_is(out, "updates_fc1.csv",
                   "x,y,series\n0,0.25,a:lost\n2,0.125,a:lost\n0,0.375,a:predicted\n"
                   "2,0.125,a:predicted\n1,0,b:lost\n1,0,b:predicted\n");
    assert_file_is(out, "runs.csv",
                   "run,net,mode,dtype,loss_scale,backend,steps,final_loss,final_test_accuracy,"
                   "skipped_steps,final_scale\n"
                   "a,mlp,O2,fp16,pytorch,cpu,3,1.5,0.75,1,32768\n"
                   "b,mlp,O0,fp16,none,cpu,,,,,\n");
    if (drawn) {
        static const char *const figures[] = {
            "loss", "accuracy", "scale", "hist_weight_grad", "flushed_fc1", "updates_fc1"};
        for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
            assert_figure(out, figures[i]);
    }
    assert_links_exist(out);
}
END_TEST

/* No run has what a figure needs, runs in folders of one name, a missing run.json. */
START_TEST(runs_edge_cases)
{
    char dir[256], a[512], a2[512], out[512], msg[512];
    new_dir(dir, sizeof dir);
    path_in(a, sizeof a, dir, "run");
    char sub[512];
    path_in(sub, sizeof sub, dir, "x");
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    path_in(a2, sizeof a2, sub, "run/");
    make_run_a(a);
    make_run_a(a2);
    char path[1024];
    path_in(path, sizeof path, a2, "run.json");
    ck_assert_int_eq(unlink(path), 0);
    /* neither has updates */
    put_in(a, "updates.csv", "nothing,here\n");
    path_in(path, sizeof path, a2, "updates.csv");
    ck_assert_int_eq(unlink(path), 0);
    path_in(out, sizeof out, dir, "out");
    rp_report *r = rp_open(out, "Edge", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    const char *runs[] = {a, a2};
    const int rc = rp_add_runs(r, runs, 2);
    ck_assert(rc == RP_EPARTIAL || rc == RP_ENOGNUPLOT);
    ck_assert_int_eq(rp_add_runs(r, runs, 0), RP_EINVAL);
    rp_close(r, msg, sizeof msg);
    assert_file_is(
        out, "loss.csv",
        "x,y,series\n0,2.5,run\n1,2,run\n2,1.5,run\n0,2.5,run-2\n1,2,run-2\n2,1.5,run-2\n");
    assert_page_has(out, "Left out: run run-2 in the table of runs</strong><br>");
    assert_page_has(out, "/x/run/run.json");
    assert_page_has(out, "updates.csv: no column &#39;step&#39;, &#39;layer&#39;");
    assert_page_has(out, "rp_add_runs: no run directories");
    assert_file_is(out, "runs.csv",
                   "run,net,mode,dtype,loss_scale,backend,steps,final_loss,final_test_accuracy,"
                   "skipped_steps,final_scale\n"
                   "run,mlp,O2,fp16,pytorch,cpu,3,1.5,0.75,1,32768\n"
                   "run-2,,,,,,3,1.5,0.75,1,32768\n");
    ck_assert(!exists_in(out, "updates_fc1.csv"));
    assert_links_exist(out);
}
END_TEST

/* PATH without gnuplot: RP_ENOGNUPLOT, the CSVs, tables and scripts are written. */
START_TEST(no_gnuplot)
{
    char dir[256], a[512], b[512], out[512], msg[512], empty[512];
    new_dir(dir, sizeof dir);
    make_runs(dir, a, b, out, sizeof a);
    path_in(empty, sizeof empty, dir, "emptybin");
    ck_assert_int_eq(mkdir(empty, 0777), 0);
    ck_assert_int_eq(setenv("PATH", empty, 1), 0);
    rp_report *r = rp_open(out, "No gnuplot", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    ck_assert(!rp_have_gnuplot(r));
    const char *runs[] = {a, b};
    ck_assert_int_eq(rp_add_runs(r, runs, 2), RP_ENOGNUPLOT);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_ENOGNUPLOT);
    ck_assert_msg(strstr(msg, "gnuplot is not on PATH") &&
                      strstr(msg, "apt-get install gnuplot-nox"),
                  "message: %s", msg);
    static const char *const files[] = {"runs.csv",
                                        "loss.csv",
                                        "accuracy.csv",
                                        "scale.csv",
                                        "hist_activation_grad.csv",
                                        "flushed_fc1.csv",
                                        "updates_fc1.csv",
                                        "plots/lines.gp",
                                        "plots/common.gp",
                                        "plots/scale.gp",
                                        "plots/hist.gp"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        ck_assert_msg(exists_in(out, files[i]), "%s missing", files[i]);
    assert_no_figure(out, "loss");
    assert_page_has(out, "<table>");
    assert_page_has(out, "apt-get install gnuplot-nox");
    assert_page_has(out, "Figure not drawn (no gnuplot): The training loss");
    assert_page_lacks(out, ".png");
    assert_links_exist(out);

    /* PATH unset altogether */
    ck_assert_int_eq(unsetenv("PATH"), 0);
    r = rp_open(out, "No PATH", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    ck_assert(!rp_have_gnuplot(r));
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_OK); /* nothing asked for a figure */
}
END_TEST

/* ---- sweeps ---- */
static const char sweep_header[] =
    "a,b,c,final_loss,test_accuracy,skipped_steps,final_scale,mean_underflow_frac,"
    "lost_update_frac,wall_seconds,status,reason\n";
/* Three axes; c is averaged over when the heatmaps are a by b.  Failed and
 * pending rows never count; an empty value does not count in its mean. */
static const char sweep_rows[] = "1,x,p,0.5,0.5,2,1024,0.25,0,1.0,ok,\n"
                                 "1,x,q,0.5,0.75,4,1024,0.125,0,1.0,diverged,\n"
                                 "1,y,p,0.5,0.25,1,1024,,0,1.0,ok,\n"
                                 "1,y,q,0.5,0.9,9,1024,0.5,0,1.0,failed,boom\n"
                                 "2,x,p,0.5,0.125,0,1024,0.5,0,1.0,ok,\n"
                                 "2,x,q,0.5,0.375,6,1024,0.25,0,1.0,ok,\n"
                                 "2,y,p,,,,,,,,failed,crash\n"
                                 "2,y,q,,,,,,,,pending,running\n";

static void make_sweep(const char *dir, const char *header, const char *rows)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", header, rows);
    put_in(dir, "summary.csv", text);
}

START_TEST(sweep_report)
{
    char dir[256], sw[512], out[512], msg[512], axes[64];
    new_dir(dir, sizeof dir);
    path_in(sw, sizeof sw, dir, "sweep");
    path_in(out, sizeof out, dir, "out");
    ck_assert_int_eq(mkdir(sw, 0777), 0);
    make_sweep(sw, sweep_header, sweep_rows);
    ck_assert_int_eq(rp_sweep_axes(sw, axes, sizeof axes, msg, sizeof msg), RP_OK);
    ck_assert_str_eq(axes, "a,b,c");

    rp_report *r = rp_open(out, "A sweep", msg, sizeof msg);
    ck_assert_ptr_nonnull(r);
    const bool drawn = rp_have_gnuplot(r);
    const int want = drawn ? RP_OK : RP_ENOGNUPLOT;
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), want); /* a by b, over c */
    ck_assert_int_eq(rp_add_sweep(r, sw, "c", "a"), want);   /* c by a, over b */
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), want);

    /* a=1,b=x: ok 0.5 and diverged 0.75; a=1,b=y: only p (q failed); a=2,b=y: none */
    assert_file_is(out, "sweep_accuracy.csv",
                   "x,y,value,runs\n1,x,0.625,2\n2,x,0.25,2\n1,y,0.25,1\n2,y,,0\n");
    assert_file_is(out, "sweep_skips.csv", "x,y,value,runs\n1,x,3,2\n2,x,3,2\n1,y,1,1\n2,y,,0\n");
    /* 1,y,p has no underflow value: the cell is empty */
    assert_file_is(out, "sweep_underflow.csv",
                   "x,y,value,runs\n1,x,0.1875,2\n2,x,0.375,2\n1,y,,0\n2,y,,0\n");
    /* c=p,a=1: 0.5 (x) and 0.25 (y); c=q,a=1: 0.75 (y failed); a=2: x only (y failed/pending) */
    assert_file_is(out, "sweep2_accuracy.csv",
                   "x,y,value,runs\np,1,0.375,2\nq,1,0.75,1\np,2,0.125,1\nq,2,0.375,1\n");
    char table[2048];
    snprintf(table, sizeof table, "%s%s", sweep_header, sweep_rows);
    assert_file_is(out, "sweep_summary.csv", table);
    assert_page_has(out, "Each cell is the mean over c ");
    assert_page_has(out, "Each cell is the mean over b ");
    assert_page_has(out, "<td>boom</td>");
    static const char *const figures[] = {"sweep_accuracy", "sweep_skips", "sweep_underflow",
                                          "sweep2_accuracy"};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (drawn)
            assert_figure(out, figures[i]);
        else
            assert_no_figure(out, figures[i]);
    assert_links_exist(out);
    assert_page_lacks(out, "Left out");
}
END_TEST

/* One axis: one row, y "all"; no other axis to average over. */
START_TEST(sweep_one_axis)
{
    char dir[256], sw[512], out[512], msg[512];
    new_dir(dir, sizeof dir);
    path_in(sw, sizeof sw, dir, "sweep");
    path_in(out, sizeof out, dir, "out");
    ck_assert_int_eq(mkdir(sw, 0777), 0);
    put_in(sw, "summary.csv",
           "f,final_loss,test_accuracy,skipped_steps,final_scale,mean_underflow_frac,"
           "lost_update_frac,wall_seconds,status,reason\n"
           "2,1,0.5,1,8,0.25,0,1,ok,\n4,1,0.75,3,16,0.5,0,1,diverged,nan loss\n");
    rp_report *r = rp_open(out, "One axis", msg, sizeof msg);
    const int want = rp_have_gnuplot(r) ? RP_OK : RP_ENOGNUPLOT;
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), want);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), want);
    assert_file_is(out, "sweep_skips.csv", "x,y,value,runs\n2,all,1,1\n4,all,3,1\n");
    assert_page_lacks(out, "mean over");
}
END_TEST

/* Every rejection: an axis that is not a grid column (or is an outcome),
 * the same axis twice, a missing metric column (that heatmap only), a
 * missing status column, a malformed or missing summary.csv. */
START_TEST(sweep_rejects)
{
    char dir[256], sw[512], out[512], msg[512], axes[64];
    new_dir(dir, sizeof dir);
    path_in(sw, sizeof sw, dir, "sweep");
    path_in(out, sizeof out, dir, "out");
    ck_assert_int_eq(mkdir(sw, 0777), 0);
    ck_assert_int_eq(rp_sweep_axes(sw, axes, sizeof axes, msg, sizeof msg), RP_EPARTIAL);
    ck_assert_msg(strstr(msg, "summary.csv: cannot open") != NULL, "%s", msg);
    ck_assert_int_eq(rp_sweep_axes(NULL, axes, sizeof axes, msg, sizeof msg), RP_EINVAL);

    rp_report *r = rp_open(out, "Bad sweeps", msg, sizeof msg);
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), RP_EPARTIAL); /* no summary.csv */
    ck_assert_int_eq(rp_add_sweep(r, NULL, NULL, NULL), RP_EINVAL);
    make_sweep(sw, sweep_header, sweep_rows);
    ck_assert_int_eq(rp_add_sweep(r, sw, "zz", NULL), RP_EINVAL);
    ck_assert_int_eq(rp_add_sweep(r, sw, "a", "status"), RP_EINVAL);
    ck_assert_int_eq(rp_add_sweep(r, sw, "b", "b"), RP_EINVAL);
    ck_assert_int_eq(rp_close(r, msg, sizeof msg), RP_EPARTIAL);
    assert_page_has(out, "summary.csv: cannot open");
    assert_page_has(out, "rp_add_sweep: no sweep folder");
    assert_page_has(out, "rp_add_sweep: &#39;zz&#39; is not a grid axis of ");
    assert_page_has(out, "rp_add_sweep: &#39;status&#39; is not a grid axis of ");
    assert_page_has(out, "rp_add_sweep: the same axis &#39;b&#39; twice");
    ck_assert(!exists_in(out, "sweep3_accuracy.csv"));

    /* no mean_underflow_frac: that heatmap only; no status: no heatmap */
    put_in(sw, "summary.csv",
           "a,b,final_loss,test_accuracy,skipped_steps,status\n1,x,1,0.5,0,ok\n2,x,1,0.25,1,ok\n");
    char out2[600];
    path_in(out2, sizeof out2, dir, "out2");
    r = rp_open(out2, "Missing columns", msg, sizeof msg);
    const bool drawn = rp_have_gnuplot(r);
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), drawn ? RP_EPARTIAL : RP_ENOGNUPLOT);
    assert_file_is(out2, "sweep_accuracy.csv", "x,y,value,runs\n1,x,0.5,1\n2,x,0.25,1\n");
    ck_assert(!exists_in(out2, "sweep_underflow.csv"));
    put_in(sw, "summary.csv", "a,b,test_accuracy\n1,x,0.5\n");
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), RP_EPARTIAL);
    ck_assert(!exists_in(out2, "sweep2_accuracy.csv"));
    put_in(sw, "summary.csv", "a,b,test_accuracy,status\n1,x,0.5,ok\n2,x\n");
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), RP_EPARTIAL);
    put_in(sw, "summary.csv", "test_accuracy,status\n0.5,ok\n");
    ck_assert_int_eq(rp_add_sweep(r, sw, NULL, NULL), RP_EPARTIAL);
    ck_assert_int_eq(rp_sweep_axes(sw, axes, sizeof axes, msg, sizeof msg), RP_EPARTIAL);
    ck_assert_msg(strstr(msg, "summary.csv: no grid axis column") != NULL, "%s", msg);
    ck_assert_int_ne(rp_close(r, msg, sizeof msg), RP_OK);
    assert_page_has(out2, "summary.csv: no column &#39;mean_underflow_frac&#39;");
    assert_page_has(out2, "summary.csv: no column &#39;status&#39;");
    assert_page_has(out2, "summary.csv:3: expected 4 fields, got 2");
    assert_page_has(out2, "summary.csv: no grid axis column (only outcome columns)");
}
END_TEST

static Suite *report_suite(void)
{
    Suite *s = suite_create("plots_report");
    TCase *tc = tcase_create("report");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, open_makes_folders_and_rejects);
    tcase_add_test(tc, every_script_draws);
    tcase_add_test(tc, gnuplot_arguments_and_failures);
    tcase_add_test(tc, gnuplot_version_failure);
    tcase_add_test(tc, figure_rejects);
    tcase_add_test(tc, html_escaping);
    tcase_add_test(tc, table_limits_and_missing);
    tcase_add_test(tc, runs_report);
    tcase_add_test(tc, runs_with_bad_files);
    tcase_add_test(tc, runs_edge_cases);
    tcase_add_test(tc, no_gnuplot);
    tcase_add_test(tc, sweep_report);
    tcase_add_test(tc, sweep_one_axis);
    tcase_add_test(tc, sweep_rejects);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
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
    const int status = ts_run_suite(report_suite());
    if (status == EXIT_SUCCESS && !have) {
        printf("gnuplot is not on PATH: the figures were not drawn (skipped)\n");
        return 77;
    }
    return status;
}
