/* test_report: the report's page (plots/report.c, table.c): the folder
 * made, sections and text escaped, tables and their limits, the notes of
 * what was left out, and a report written without gnuplot.  Each test works
 * in a fresh directory under a mkdtemp base; expected texts are worked out
 * by hand.  Without a gnuplot on PATH the tests that need one pass without
 * drawing and the program exits 77. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv */
#include <check.h>

#include "run_fixtures.h"
#include "sweep_fixtures.h"
#include "report_testing.h"
#include "scratch.h"

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
    put_in(dir, "t.csv",
           "name,<v>\n<b>x</b>,0.83040000000000003\nplain,65536\nq,nan\n"
           "bits,0x045E\nneg,-0X7C00\n");
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
    /* bit patterns stay as written: strtod reads 0x045E as 1118 (its E no exponent) */
    assert_page_has(dir, "<td>bits</td><td>0x045E</td>");
    assert_page_has(dir, "<td>neg</td><td>-0X7C00</td>");
    assert_page_lacks(dir, "1118");
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

static Suite *report_suite(void)
{
    Suite *s = suite_create("plots_report");
    TCase *tc = tcase_create("report");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, open_makes_folders_and_rejects);
    tcase_add_test(tc, html_escaping);
    tcase_add_test(tc, table_limits_and_missing);
    tcase_add_test(tc, no_gnuplot);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return report_main(report_suite()); }
