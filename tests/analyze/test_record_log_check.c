/* test_record_log_check: rec_log_check (record_log.c), the check of a log
 * before a resume cuts it back: the rows it keeps are in order, by the
 * logging cadence, with no gap and no step twice, and reach the last step
 * the checkpoint keeps; rows past it and a last line cut short are left to
 * rec_log_open; nothing is written.  Expected messages are written out by
 * hand. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record.h"
#include "scratch.h"

static const char head[] = "step,epoch,loss,loss_scale,found_inf,skipped,lr\n";

/* steps.csv of dir holding text; rec_log_check with e; the file unchanged.
 * Returns the status, the message in msg. */
static int check_steps(const char *dir, const char *text, rec_log_expect e, char *msg, size_t len)
{
    char path[256];
    path_in(path, sizeof path, dir, "steps.csv");
    put_file(path, text);
    msg[0] = '\0';
    const int status = rec_log_check(path, REC_STEPS_HEADER, &e, msg, len);
    assert_file(path, text); /* the check writes nothing */
    return status;
}

/* The message without the scratch directory's name: "steps.csv:5: ..." */
static const char *tail_of(const char *msg, const char *dir)
{
    const size_t n = strlen(dir);
    return strncmp(msg, dir, n) == 0 && msg[n] == '/' ? msg + n + 1 : msg;
}

#define ROW(s) #s ",0,1,1,0,0,1\n"

START_TEST(one_row_per_step)
{
    char dir[128], msg[512], text[1024];
    new_dir(dir, sizeof dir);
    const rec_log_expect through3 = {0, 1, 3, true};
    /* whole: rows 0..3 */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1) ROW(2) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_OK);
    /* rows past the checkpoint and a last line cut short are rec_log_open's to drop, whatever
     * they hold */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(9) ROW(2) "5,0,1",
             head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_OK);
    /* a gap */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(2) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv:3: step 2 after step 0: the rows of step 1 are missing");
    /* a step twice */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1) ROW(1) ROW(2) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:4: step 1 appears twice");
    /* going back */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1) ROW(2) ROW(0) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:5: step 0 after step 2: the steps go back");
    /* not starting at the first step */
    snprintf(text, sizeof text, "%s" ROW(1) ROW(2) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:2: the first row is step 1, expected 0");
    /* cut short: whole lines, or in the middle of a line the checkpoint keeps */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv: its last row is step 1, but the checkpoint keeps the rows "
                     "through step 3: the log was cut short");
    snprintf(text, sizeof text, "%s" ROW(0) ROW(1) ROW(2) "3,0,1,", head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv: its last row is step 2, but the checkpoint keeps the rows "
                     "through step 3: the log was cut short");
    /* a step that the next row skips past the checkpoint: the rows after it go, so the log
     * ends too early */
    snprintf(text, sizeof text, "%s" ROW(0) ROW(7) ROW(2) ROW(3), head);
    ck_assert_int_eq(check_steps(dir, text, through3, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv: its last row is step 0, but the checkpoint keeps the rows "
                     "through step 3: the log was cut short");
}
END_TEST

START_TEST(header_and_lines)
{
    char dir[128], msg[512], text[1024];
    new_dir(dir, sizeof dir);
    const rec_log_expect through1 = {0, 1, 1, true}, none = {0, 1, -1, true};
    /* only the header, or one cut short: fine when no row is required */
    ck_assert_int_eq(check_steps(dir, head, none, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(check_steps(dir, "step,epo", none, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(check_steps(dir, "", none, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(check_steps(dir, "step,epo", through1, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv: no rows, but the checkpoint keeps the rows through step 1: the "
                     "log was cut short");
    ck_assert_int_eq(check_steps(dir, head, through1, msg, sizeof msg), AN_EFORMAT);
    /* another header */
    ck_assert_int_eq(check_steps(dir, "step,epoch,loss\n" ROW(0) ROW(1), through1, msg, sizeof msg),
                     AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv: header is 'step,epoch,loss', expected "
                                        "'step,epoch,loss,loss_scale,found_inf,skipped,lr'");
    /* a line with a field too many, a step that is not an integer, a NUL byte */
    snprintf(text, sizeof text, "%s" ROW(0) "1,0,1,1,0,0,1,7\n", head);
    ck_assert_int_eq(check_steps(dir, text, through1, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:3: expected 7 fields, got 8");
    snprintf(text, sizeof text, "%s" ROW(0) "1.0,0,1,1,0,0,1\n", head);
    ck_assert_int_eq(check_steps(dir, text, through1, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:3: column 'step': '1.0' is not an integer");
    char path[256];
    path_in(path, sizeof path, dir, "steps.csv");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s" ROW(0), head);
    fwrite("1,0\0,1,1,0,0,1\n", 1, 15, f);
    fclose(f);
    ck_assert_int_eq(rec_log_check(path, REC_STEPS_HEADER, &through1, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "steps.csv:3: a NUL byte in the line");
    /* missing: fine when no row is required (rec_log_open creates it) */
    unlink(path);
    ck_assert_int_eq(rec_log_check(path, REC_STEPS_HEADER, &none, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_check(path, REC_STEPS_HEADER, &through1, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "steps.csv: missing; the checkpoint keeps its rows through step 1");
    ck_assert_int_eq(access(path, F_OK), -1); /* not created */
    /* bad arguments */
    ck_assert_int_eq(rec_log_check(path, REC_STEPS_HEADER, NULL, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(rec_log_check(path, "epoch,loss", &none, msg, sizeof msg), AN_EINVAL);
    const rec_log_expect bad = {0, -1, 3, true};
    ck_assert_int_eq(rec_log_check(path, REC_STEPS_HEADER, &bad, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(rec_log_check(NULL, REC_STEPS_HEADER, &none, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* tensors.csv-like logs: a block of rows per logged step, every 5 steps */
START_TEST(blocks_by_cadence)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "trace_hist.csv");
    const rec_log_expect e = {0, 5, 12, false}; /* steps 0, 5, 10 required */
    put_file(path, "step,bin,count\n0,-3,1\n0,-2,4\n5,-3,2\n10,-1,1\n10,0,3\n15,0,1\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &e, msg, sizeof msg), AN_OK);
    put_file(path, "step,bin,count\n0,-3,1\n0,-2,4\n10,-1,1\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &e, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "trace_hist.csv:4: step 10 after step 0: the rows of step 5 are missing");
    put_file(path, "step,bin,count\n0,-3,1\n5,-3,2\n7,-3,2\n10,-1,1\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &e, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "trace_hist.csv:4: step 7 after step 5, expected step 10 (one every 5)");
    put_file(path, "step,bin,count\n0,-3,1\n5,-3,2\n0,-3,2\n10,-1,1\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &e, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "trace_hist.csv:4: step 0 after step 5: the steps go back");
    put_file(path, "step,bin,count\n0,-3,1\n5,-3,2\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &e, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "trace_hist.csv: its last row is step 5, but the checkpoint "
                     "keeps the rows through step 10: the log was cut short");
    /* a cadence of 0 logs nothing */
    const rec_log_expect never = {0, 0, 12, false};
    put_file(path, "step,bin,count\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &never, msg, sizeof msg), AN_OK);
    put_file(path, "step,bin,count\n0,-3,1\n");
    ck_assert_int_eq(rec_log_check(path, REC_TRACE_HIST_HEADER, &never, msg, sizeof msg),
                     AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir),
                     "trace_hist.csv:2: a row of step 0, but this run logs no rows there");
}
END_TEST

/* eval.csv: its step column second, the first evaluation after the first epoch's steps */
START_TEST(eval_by_epoch)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "eval.csv");
    put_file(path, "epoch,step,test_loss,test_accuracy\n0,100,0.5,0.75\n1,200,0.25,0.875\n");
    const rec_log_expect to250 = {100, 100, 250, true}, to300 = {100, 100, 300, true},
                         to99 = {100, 100, 99, true};
    ck_assert_int_eq(rec_log_check(path, REC_EVAL_HEADER, &to250, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_check(path, REC_EVAL_HEADER, &to99, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_check(path, REC_EVAL_HEADER, &to300, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "eval.csv: its last row is step 200, but the checkpoint "
                                        "keeps the rows through step 300: the log was cut short");
    put_file(path, "epoch,step,test_loss,test_accuracy\n0,100,0.5,0.75\n1,100,0.25,0.875\n");
    ck_assert_int_eq(rec_log_check(path, REC_EVAL_HEADER, &to250, msg, sizeof msg), AN_EFORMAT);
    ck_assert_str_eq(tail_of(msg, dir), "eval.csv:3: step 100 appears twice");
}
END_TEST

static Suite *record_log_check_suite(void)
{
    Suite *s = suite_create("analyze_record_log_check");
    TCase *tc = tcase_create("record_log_check");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, one_row_per_step);
    tcase_add_test(tc, header_and_lines);
    tcase_add_test(tc, blocks_by_cadence);
    tcase_add_test(tc, eval_by_epoch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_log_check_suite()); }
