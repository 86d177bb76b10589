/* test_runs: rp_add_runs (plots/runs.c, run_figures.c) on hand-written
 * run directories: the table of runs, every figure's CSV, and runs with
 * missing or malformed files.  Each test works in a fresh directory under a
 * mkdtemp base; expected CSV texts and numbers are worked out by hand.
 * Without a gnuplot on PATH the tests that need one pass without drawing
 * and the program exits 77. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setenv */
#include <check.h>

#include "run_fixtures.h"
#include "report_testing.h"
#include "scratch.h"

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

static Suite *runs_suite(void)
{
    Suite *s = suite_create("plots_runs");
    TCase *tc = tcase_create("runs");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, runs_report);
    tcase_add_test(tc, runs_with_bad_files);
    tcase_add_test(tc, runs_edge_cases);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return report_main(runs_suite()); }
