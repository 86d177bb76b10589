/* test_record_write: the CSV logs written (record_log.c, record_write.c):
 * the header once, appending, the resume that cuts a log back to its
 * checkpoint's step, and every writer's refusals.  Every test works in a
 * fresh directory under a mkdtemp base that the fixture removes; expected
 * texts are written out by hand. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record.h"
#include "scratch.h"

START_TEST(log_header_once_and_appends)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *log = rec_log_open_table(dir, REC_STEPS, -1, msg, sizeof msg);
    ck_assert_msg(log != NULL, "%s", msg);
    path_in(path, sizeof path, dir, "steps.csv");
    ck_assert_str_eq(rec_log_path(log), path);
    assert_file(path, "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"); /* header at once */
    rec_step_row r = {0, 0, 2.5f, 65536.0f, false, false, 0.01f};
    ck_assert_int_eq(rec_write_step(log, &r), AN_OK);
    r = (rec_step_row){1, 0, 0.25f, 32768.0f, true, true, 0.01f};
    ck_assert_int_eq(rec_write_step(log, &r), AN_OK);
    ck_assert_int_eq(rec_log_flush(log), AN_OK);
    /* flushed rows are in the file while the log is open */
    assert_file(path, "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
                      "0,0,2.5,65536,0,0,0.00999999978\n"
                      "1,0,0.25,32768,1,1,0.00999999978\n");
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);

    log = rec_log_open(path, REC_STEPS_HEADER, 1, msg, sizeof msg); /* resume after step 1 */
    ck_assert_msg(log != NULL, "%s", msg);
    r = (rec_step_row){2, 1, 1e-4f, 1.0f, false, false, 1e-4f};
    ck_assert_int_eq(rec_write_step(log, &r), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    assert_file(path, "step,epoch,loss,loss_scale,found_inf,skipped,lr\n"
                      "0,0,2.5,65536,0,0,0.00999999978\n"
                      "1,0,0.25,32768,1,1,0.00999999978\n"
                      "2,1,9.99999975e-05,1,0,0,9.99999975e-05\n");
    ck_assert_int_eq(rec_log_close(NULL, msg, sizeof msg), AN_OK);
}
END_TEST

START_TEST(log_resume_truncates)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "steps.csv");
    const char *head = "step,epoch,loss,loss_scale,found_inf,skipped,lr\n";
    const char *rows = "1,0,1,1,0,0,1\n"
                       "2,0,1,1,0,0,1\n"
                       "3,0,1,1,0,0,1\n"
                       "4,0,1,1,0,0,1\n";
    char text[1024];
    /* rows past the checkpoint's step and the partial last line go */
    snprintf(text, sizeof text, "%s%s5,1,0.5", head, rows);
    put_file(path, text);
    rec_log *log = rec_log_open(path, REC_STEPS_HEADER, 2, msg, sizeof msg);
    ck_assert_msg(log != NULL, "%s", msg);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    snprintf(text, sizeof text, "%s1,0,1,1,0,0,1\n2,0,1,1,0,0,1\n", head);
    assert_file(path, text);

    /* only the partial line goes when every row is at or before the step */
    snprintf(text, sizeof text, "%s%s5,1,0.5", head, rows);
    put_file(path, text);
    log = rec_log_open(path, REC_STEPS_HEADER, 4, msg, sizeof msg);
    ck_assert_ptr_nonnull(log);
    rec_log_close(log, NULL, 0);
    snprintf(text, sizeof text, "%s%s", head, rows);
    assert_file(path, text);

    /* a fresh run keeps no rows, and the header once */
    log = rec_log_open(path, REC_STEPS_HEADER, -1, msg, sizeof msg);
    ck_assert_ptr_nonnull(log);
    rec_log_close(log, NULL, 0);
    assert_file(path, head);

    /* a header cut short is completed */
    put_file(path, "step,epo");
    log = rec_log_open(path, REC_STEPS_HEADER, 10, msg, sizeof msg);
    ck_assert_ptr_nonnull(log);
    rec_log_close(log, NULL, 0);
    assert_file(path, head);

    /* the step column need not be the first: eval.csv */
    path_in(path, sizeof path, dir, "eval.csv");
    put_file(path, "epoch,step,test_loss,test_accuracy\n0,100,0.5,0.75\n1,200,0.25,0.875\n"
                   "2,300,0.125,0.9375\n");
    log = rec_log_open_table(dir, REC_EVAL, 250, msg, sizeof msg);
    ck_assert_msg(log != NULL, "%s", msg);
    rec_log_close(log, NULL, 0);
    assert_file(path, "epoch,step,test_loss,test_accuracy\n0,100,0.5,0.75\n1,200,0.25,0.875\n");
}
END_TEST

START_TEST(log_open_rejects)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "steps.csv");

    put_file(path, "step,epoch,loss\n1,0,1\n");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, 5, msg, sizeof msg));
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "header is 'step,epoch,loss', expected "
                    "'step,epoch,loss,loss_scale,found_inf,skipped,lr'");
    assert_file(path, "step,epoch,loss\n1,0,1\n"); /* untouched */
    /* a fresh run does not take over a file of another shape either */
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, -1, msg, sizeof msg));
    /* a partial first line that is not the header's beginning */
    put_file(path, "hello");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, -1, msg, sizeof msg));
    ASSERT_MSG(msg, "header is 'hello'");
    assert_file(path, "hello");

    /* a complete but malformed row before the cut */
    put_file(path, "step,epoch,loss,loss_scale,found_inf,skipped,lr\n1,0,1,1,0,0,1\n2,0,1\n");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, 5, msg, sizeof msg));
    ASSERT_MSG(msg, "steps.csv:3: expected 7 fields, got 3");
    put_file(path, "step,epoch,loss,loss_scale,found_inf,skipped,lr\nx,0,1,1,0,0,1\n");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, 5, msg, sizeof msg));
    ASSERT_MSG(msg, "steps.csv:2: column 'step': 'x' is not an integer");

    ck_assert_ptr_null(rec_log_open(path, "epoch,loss", -1, msg, sizeof msg));
    ASSERT_MSG(msg, "no column 'step'");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, -2, msg, sizeof msg));
    ASSERT_MSG(msg, "resume_after_step -2");
    ck_assert_ptr_null(rec_log_open(NULL, REC_STEPS_HEADER, -1, msg, sizeof msg));
    ck_assert_ptr_null(rec_log_open(path, "step\nx", -1, msg, sizeof msg));
    path_in(path, sizeof path, dir, "missing/steps.csv");
    ck_assert_ptr_null(rec_log_open(path, REC_STEPS_HEADER, -1, msg, sizeof msg));
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "No such file or directory");
    ck_assert_ptr_null(rec_log_open_table(dir, (rec_table)9, -1, msg, sizeof msg));
}
END_TEST

START_TEST(writers_reject)
{
    char dir[128], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *steps = rec_log_open_table(dir, REC_STEPS, -1, msg, sizeof msg);
    rec_log *tensors = rec_log_open_table(dir, REC_TENSORS, -1, msg, sizeof msg);
    rec_log *hist = rec_log_open_table(dir, REC_HIST, -1, msg, sizeof msg);
    ck_assert(steps && tensors && hist);
    const rec_eval_row e = {0, 0, 1, 1};
    ck_assert_int_eq(rec_write_eval(steps, &e), AN_EINVAL);
    ASSERT_MSG(rec_log_error(steps), "rec_write_eval");
    ASSERT_MSG(rec_log_error(steps), "is not a eval.csv log");
    rec_step_row s = {-1, 0, 1, 1, false, false, 1};
    ck_assert_int_eq(rec_write_step(steps, &s), AN_EINVAL);
    ASSERT_MSG(rec_log_error(steps), "step -1 < 0");
    s.step = 0;
    s.epoch = -3;
    ck_assert_int_eq(rec_write_step(steps, &s), AN_EINVAL);
    ASSERT_MSG(rec_log_error(steps), "epoch -3 < 0");
    ck_assert_int_eq(rec_write_step(steps, NULL), AN_EINVAL);

    ak_stats st;
    memset(&st, 0, sizeof st);
    ck_assert_int_eq(rec_write_tensor_stats(tensors, 1, "fc,1", REC_WEIGHT, AK_F16, 1, &st),
                     AN_EINVAL);
    ASSERT_MSG(rec_log_error(tensors), "invalid layer name 'fc,1'");
    ck_assert_int_eq(rec_write_tensor_stats(tensors, 1, "fc1", (rec_kind)7, AK_F16, 1, &st),
                     AN_EINVAL);
    ck_assert_int_eq(rec_write_tensor_stats(tensors, 1, "fc1", REC_WEIGHT, (ak_dtype)9, 1, &st),
                     AN_EINVAL);
    ck_assert_int_eq(rec_write_tensor_stats(tensors, 1, "fc1", REC_WEIGHT, AK_F16, 1, NULL),
                     AN_EINVAL);
    ck_assert_int_eq(rec_write_update_loss(tensors, 1, "fc1", NULL), AN_EINVAL);
    ASSERT_MSG(rec_log_error(tensors), "is not a updates.csv log");
    rec_hist_row h = {1, "fc1", REC_WEIGHT, AK_HIST_BINS, 1};
    ck_assert_int_eq(rec_write_hist(hist, &h), AN_EINVAL);
    ASSERT_MSG(rec_log_error(hist), "invalid kind 0 or bin 279");
    ck_assert_int_eq(rec_write_hist_stats(hist, 1, "", REC_WEIGHT, &st), AN_EINVAL);
    ck_assert_int_eq(rec_log_close(steps, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(tensors, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);
    /* nothing but the headers was written */
    char path[256];
    path_in(path, sizeof path, dir, "hist.csv");
    assert_file(path, "step,layer,kind,bin,count\n");
}
END_TEST

START_TEST(trace_writers_reject)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *trace = rec_log_open_table(dir, REC_TRACE, -1, msg, sizeof msg);
    rec_log *hist = rec_log_open_table(dir, REC_TRACE_HIST, -1, msg, sizeof msg);
    rec_log *steps = rec_log_open_table(dir, REC_STEPS, -1, msg, sizeof msg);
    ck_assert(trace && hist && steps);
    const rec_trace_row good = {1, 1024.0, 0, 10, 2, 1, 3.5};
    rec_trace_row r = good;

    ck_assert_int_eq(rec_write_trace(steps, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(steps), "rec_write_trace: ");
    ASSERT_MSG(rec_log_error(steps), "is not a trace.csv log");
    ck_assert_int_eq(rec_write_trace(hist, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(hist), "is not a trace.csv log");
    ck_assert_int_eq(rec_write_trace(NULL, &r), AN_EINVAL);
    ck_assert_int_eq(rec_write_trace(trace, NULL), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "rec_write_trace: row is NULL");
    r.step = -1;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "rec_write_trace: step -1 < 0");
    r = good;
    r.found_inf = 2;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "found_inf 2 is not 0 or 1");
    r = good;
    r.loss_scale = NAN;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "loss_scale nan is not a number >= 0");
    r.loss_scale = -1.0;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "loss_scale -1 is not");
    r = good;
    r.nonfinite = 9; /* 2 + 9 > 10 */
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "zero 2 + nonfinite 9 > count 10");
    r.zero = UINT64_MAX; /* no wraparound lets it pass */
    r.nonfinite = 11;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "> count 10");
    r = good;
    r.amax = INFINITY;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "amax inf is not a finite number >= 0");
    r.amax = NAN;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    r.amax = -0.5;
    ck_assert_int_eq(rec_write_trace(trace, &r), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "amax -0.5");

    rec_trace_hist_row h = {1, AK_HIST_BINS, 1};
    ck_assert_int_eq(rec_write_trace_hist(hist, &h), AN_EINVAL);
    ASSERT_MSG(rec_log_error(hist), "rec_write_trace_hist: invalid bin 279");
    h.bin = -1;
    ck_assert_int_eq(rec_write_trace_hist(hist, &h), AN_EINVAL);
    h = (rec_trace_hist_row){-2, AK_HIST_ZERO, 1};
    ck_assert_int_eq(rec_write_trace_hist(hist, &h), AN_EINVAL);
    ASSERT_MSG(rec_log_error(hist), "step -2 < 0");
    ck_assert_int_eq(rec_write_trace_hist(hist, NULL), AN_EINVAL);
    ck_assert_int_eq(rec_write_trace_hist(trace, &h), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "is not a trace_hist.csv log");

    /* from the stats: every check comes before the first row */
    ak_stats st = hand_stats();
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, 1.0, false, NULL), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "rec_write_trace_stats: stats is NULL");
    ck_assert_int_eq(rec_write_trace_stats(trace, steps, 0, 1.0, false, &st), AN_EINVAL);
    ASSERT_MSG(rec_log_error(steps), "rec_write_trace_stats: ");
    ASSERT_MSG(rec_log_error(steps), "is not a trace_hist.csv log");
    ck_assert_int_eq(rec_write_trace_stats(hist, hist, 0, 1.0, false, &st), AN_EINVAL);
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, -5, 1.0, false, &st), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "rec_write_trace_stats: step -5 < 0");
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, -1.0, false, &st), AN_EINVAL);
    st.zero = 20;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, 1.0, false, &st), AN_EINVAL);
    ASSERT_MSG(rec_log_error(trace), "zero 20 + nonfinite 1 > count 10");
    ck_assert_int_eq(rec_log_close(trace, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(steps, msg, sizeof msg), AN_OK);
    /* nothing but the headers was written */
    path_in(path, sizeof path, dir, "trace.csv");
    assert_file(path, "step,loss_scale,found_inf,count,zero,nonfinite,amax\n");
    path_in(path, sizeof path, dir, "trace_hist.csv");
    assert_file(path, "step,bin,count\n");
}
END_TEST

/* A resumed run cuts both trace logs back to the checkpoint's step. */
START_TEST(trace_resume_truncates)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "trace.csv");
    put_file(path, "step,loss_scale,found_inf,count,zero,nonfinite,amax\n"
                   "0,65536,0,4,1,0,2\n"
                   "1,65536,1,4,1,1,2\n"
                   "2,32768,0,4,1,0,2\n"
                   "3,32768,0,4,1,0,2\n"
                   "4,327");
    rec_log *trace = rec_log_open_table(dir, REC_TRACE, 1, msg, sizeof msg);
    ck_assert_msg(trace != NULL, "%s", msg);
    assert_file(path, "step,loss_scale,found_inf,count,zero,nonfinite,amax\n"
                      "0,65536,0,4,1,0,2\n"
                      "1,65536,1,4,1,1,2\n");
    path_in(path, sizeof path, dir, "trace_hist.csv");
    put_file(path, "step,bin,count\n0,zero,1\n0,1,3\n1,zero,1\n1,nonfinite,1\n2,zero,1\n"
                   "2,1,3\n3,ze");
    rec_log *hist = rec_log_open_table(dir, REC_TRACE_HIST, 1, msg, sizeof msg);
    ck_assert_msg(hist != NULL, "%s", msg);
    assert_file(path, "step,bin,count\n0,zero,1\n0,1,3\n1,zero,1\n1,nonfinite,1\n");

    /* the run goes on from step 2 */
    ak_stats s;
    memset(&s, 0, sizeof s);
    s.count = 2;
    s.zero = 1;
    s.nonzero = 1;
    s.amax = 0.75;
    s.hist[AK_HIST_ZERO] = 1;
    s.hist[AK_HIST_BIN(-1)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 2, 32768.0, false, &s), AN_OK);
    ck_assert_int_eq(rec_log_close(trace, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);
    assert_file(path, "step,bin,count\n0,zero,1\n0,1,3\n1,zero,1\n1,nonfinite,1\n"
                      "2,zero,1\n2,-1,1\n");
    path_in(path, sizeof path, dir, "trace.csv");
    assert_file(path, "step,loss_scale,found_inf,count,zero,nonfinite,amax\n"
                      "0,65536,0,4,1,0,2\n"
                      "1,65536,1,4,1,1,2\n"
                      "2,32768,0,2,1,0,0.75\n");
}
END_TEST

static Suite *record_write_suite(void)
{
    Suite *s = suite_create("analyze_record_write");
    TCase *tc = tcase_create("record_write");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, log_header_once_and_appends);
    tcase_add_test(tc, log_resume_truncates);
    tcase_add_test(tc, log_open_rejects);
    tcase_add_test(tc, writers_reject);
    tcase_add_test(tc, trace_writers_reject);
    tcase_add_test(tc, trace_resume_truncates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_write_suite()); }
