/* test_figure: rp_figure (plots/figure.c, gnuplot.c): every built-in
 * script draws, the variables and failures gnuplot is run with (driven by
 * small stand-in `gnuplot` shell scripts on a PATH of their own), and the
 * figures refused before gnuplot runs.  Each test works in a fresh
 * directory under a mkdtemp base; expected texts are worked out by hand.
 * Without a gnuplot on PATH the tests that need one pass without drawing
 * and the program exits 77. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv */
#include <check.h>

#include "report_testing.h"
#include "scratch.h"

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
    /* it draws whole figures into the temporary names the writer gives (out_tmp) */
    fake_gnuplot(dir, "case \"$1\" in --version) echo 'gnuplot 9.9 stand-in'; exit 0;; esac\n"
                      "printf '%s|' \"$(pwd -P)\" \"$@\" > args.txt\n"
                      "sfx=${2##*out_tmp=\\'}; sfx=${sfx%%\\'*}\n"
                      "fig() { printf '\\211PNG\\r\\n\\032\\n\\000\\000\\000\\000"
                      "IEND\\256\\102\\140\\202' > \"$1.png$sfx\"; "
                      "printf '<svg>\\n</svg>\\n' > \"$1.svg$sfx\"; }\n"
                      "case \"$2\" in *out=\\'ok*) fig ok; fig ok2;; esac\n"
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
    snprintf(expect, sizeof expect,
             "%s|-e|in='ok.csv';title='it''s';out='ok';out_tmp='.tmp.%ld'|plots/lines.gp|", real,
             (long)getpid());
    assert_file_is(out, "args.txt", expect);
    put_in(out, "d.csv", "x,y,series\n1,2,a\n");
    const char *v[] = {"title=x", "in=d.csv", NULL};
    ck_assert_int_eq(rp_figure(r, "lines.gp", "ok2", "fine", v), RP_OK);
    snprintf(expect, sizeof expect,
             "%s|-e|title='x';in='d.csv';out='ok2';out_tmp='.tmp.%ld'|plots/lines.gp|", real,
             (long)getpid());
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

static Suite *figure_suite(void)
{
    Suite *s = suite_create("plots_figure");
    TCase *tc = tcase_create("figure");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_script_draws);
    tcase_add_test(tc, gnuplot_arguments_and_failures);
    tcase_add_test(tc, gnuplot_version_failure);
    tcase_add_test(tc, figure_rejects);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return report_main(figure_suite()); }
