/* test_sweep_heatmaps: rp_add_sweep and rp_sweep_axes
 * (plots/sweep_heatmaps.c) on a hand-written summary.csv: the heatmaps'
 * cells, a one-axis grid, and the axes and files refused.  Each test works
 * in a fresh directory under a mkdtemp base; expected texts are worked out
 * by hand.  Without a gnuplot on PATH the tests that need one pass without
 * drawing and the program exits 77. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv */
#include <check.h>

#include "sweep_fixtures.h"
#include "report_testing.h"
#include "scratch.h"

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

static Suite *sweep_heatmaps_suite(void)
{
    Suite *s = suite_create("plots_sweep_heatmaps");
    TCase *tc = tcase_create("sweep_heatmaps");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sweep_report);
    tcase_add_test(tc, sweep_one_axis);
    tcase_add_test(tc, sweep_rejects);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return report_main(sweep_heatmaps_suite()); }
