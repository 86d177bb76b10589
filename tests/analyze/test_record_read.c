/* test_record_read: the CSV logs read back (record_read.c): every table's
 * round trip through its writer and reader, bit for bit, the summary of a
 * run at its end, and the readers' refusals, each naming the file, line and
 * column.  Every test works in a fresh directory under a mkdtemp base that
 * the fixture removes; expected texts and numbers are written out by
 * hand. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record.h"
#include "scratch.h"

START_TEST(steps_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const rec_step_row in[] = {
        {0, 0, 0x1.fffffep-1f, 65536.0f, false, false, 1e-4f},
        {1, 0, 0x1p-149f, 0x1p-14f, true, true, 0.01f},     /* a subnormal loss */
        {2, 1, NAN, INFINITY, true, false, 0x1.000002p+0f}, /* a diverged loss */
        {3, 1, -0.0f, 4294967296.0f, false, false, 3.40282347e38f},
        {4000000000LL, 7, -INFINITY, 1.0f, false, true, 0.1f},
    };
    const size_t n_in = sizeof in / sizeof in[0];
    rec_log *log = rec_log_open_table(dir, REC_STEPS, -1, msg, sizeof msg);
    for (size_t i = 0; i < n_in; i++)
        ck_assert_int_eq(rec_write_step(log, &in[i]), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "steps.csv");
    rec_step_row *out;
    size_t n;
    ck_assert_int_eq(rec_read_steps(path, &out, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, n_in);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(out[i].step, in[i].step);
        ck_assert_int_eq(out[i].epoch, in[i].epoch);
        ck_assert_msg(same_f32(out[i].loss, in[i].loss), "row %zu loss %a", i, (double)out[i].loss);
        ck_assert(same_f32(out[i].loss_scale, in[i].loss_scale));
        ck_assert(out[i].found_inf == in[i].found_inf && out[i].skipped == in[i].skipped);
        ck_assert(same_f32(out[i].lr, in[i].lr));
    }
    ck_assert(signbit(out[3].loss)); /* -0 stays -0 */
    free(out);
}
END_TEST

START_TEST(tensors_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const ak_stats s = hand_stats();
    ak_stats empty;
    memset(&empty, 0, sizeof empty);
    rec_log *log = rec_log_open_table(dir, REC_TENSORS, -1, msg, sizeof msg);
    ck_assert_int_eq(
        rec_write_tensor_stats(log, 100, "conv1", REC_ACTIVATION_GRAD, AK_F16, 65536.0f, &s),
        AN_OK);
    ck_assert_int_eq(
        rec_write_tensor_stats(log, 100, "fc3.bias", REC_WEIGHT, AK_BF16, 1.0f, &empty), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "tensors.csv");
    /* the fractions: 3/7, 2/7, 1/7 of the nonzero, 2/10 of the count; the
     * empty tensor's are 0/0: empty fields */
    assert_file(path, REC_TENSORS_HEADER
                "\n"
                "100,conv1,activation_grad,fp16,65536,10,7,1,3,0.42857142857142855,2,"
                "0.2857142857142857,1,0.14285714285714285,0.20000000000000001,65504\n"
                "100,fc3.bias,weight,bf16,1,0,0,0,0,,0,,0,,,0\n");
    rec_tensor_row *out;
    size_t n;
    ck_assert_int_eq(rec_read_tensors(path, &out, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 2);
    const rec_tensor_row *r = &out[0];
    ck_assert_int_eq(r->step, 100);
    ck_assert_str_eq(r->layer, "conv1");
    ck_assert_int_eq(r->kind, REC_ACTIVATION_GRAD);
    ck_assert_int_eq(r->dtype, AK_F16);
    ck_assert(same_f32(r->scale, 65536.0f));
    ck_assert(r->count == 10 && r->nonzero == 7 && r->nonfinite == 1);
    ck_assert(r->flushed == 3 && r->subnormal == 2 && r->overflowed == 1);
    ck_assert(same_f64(r->flushed_frac_of_nonzero, 3.0 / 7.0));
    ck_assert(same_f64(r->subnormal_frac_of_nonzero, 2.0 / 7.0));
    ck_assert(same_f64(r->overflow_frac_of_nonzero, 1.0 / 7.0));
    ck_assert(same_f64(r->zero_frac_of_count, 0.2));
    ck_assert(same_f64(r->amax, 65504.0));
    r = &out[1];
    ck_assert_str_eq(r->layer, "fc3.bias");
    ck_assert_int_eq(r->dtype, AK_BF16);
    ck_assert(isnan(r->flushed_frac_of_nonzero) && isnan(r->subnormal_frac_of_nonzero) &&
              isnan(r->overflow_frac_of_nonzero) && isnan(r->zero_frac_of_count));

    /* the row the writer wrote is the row the reader read, bit for bit */
    rec_tensor_row direct;
    ck_assert_int_eq(
        rec_tensor_row_of(&direct, 100, "conv1", REC_ACTIVATION_GRAD, AK_F16, 65536.0f, &s), AN_OK);
    ck_assert_int_eq(memcmp(&direct, &out[0], sizeof direct), 0);
    free(out);
}
END_TEST

START_TEST(updates_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const ak_update_loss u = {.elements = 100,
                              .nonzero = 80,
                              .lost = 20,
                              .predicted_lost = 16,
                              .skipped = 0,
                              .sum_abs_err = 0.5,
                              .sum_abs_intended = 2.0};
    const ak_update_loss none = {.elements = 5, .skipped = 1};
    rec_log *log = rec_log_open_table(dir, REC_UPDATES, -1, msg, sizeof msg);
    ck_assert_int_eq(rec_write_update_loss(log, 7, "fc1", &u), AN_OK);
    ck_assert_int_eq(rec_write_update_loss(log, 8, "fc1", &none), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "updates.csv");
    assert_file(path, REC_UPDATES_HEADER "\n"
                                         "7,fc1,100,80,20,0.25,0.25,16,0.20000000000000001,0\n"
                                         "8,fc1,5,0,0,,,0,,1\n");
    rec_update_row *out;
    size_t n;
    ck_assert_int_eq(rec_read_updates(path, &out, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(out[0].step, 7);
    ck_assert_str_eq(out[0].layer, "fc1");
    ck_assert(out[0].elements == 100 && out[0].nonzero_updates == 80 && out[0].lost == 20);
    ck_assert(out[0].predicted_lost == 16 && out[0].skipped == 0);
    ck_assert(same_f64(out[0].lost_frac_of_nonzero, 0.25));
    ck_assert(same_f64(out[0].rel_update_error, 0.25));
    ck_assert(same_f64(out[0].predicted_lost_frac_of_nonzero, 0.2));
    ck_assert(isnan(out[1].lost_frac_of_nonzero) && isnan(out[1].rel_update_error) &&
              isnan(out[1].predicted_lost_frac_of_nonzero));
    ck_assert(out[1].skipped == 1 && out[1].elements == 5);
    rec_update_row direct;
    ck_assert_int_eq(rec_update_row_of(&direct, 7, "fc1", &u), AN_OK);
    ck_assert_int_eq(memcmp(&direct, &out[0], sizeof direct), 0);
    free(out);
}
END_TEST

START_TEST(hist_only_nonzero_bins)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const ak_stats s = hand_stats();
    rec_log *log = rec_log_open_table(dir, REC_HIST, -1, msg, sizeof msg);
    ck_assert_int_eq(rec_write_hist_stats(log, 3, "conv2", REC_WEIGHT_GRAD, &s), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "hist.csv");
    assert_file(path, "step,layer,kind,bin,count\n"
                      "3,conv2,weight_grad,zero,2\n"
                      "3,conv2,weight_grad,-149,1\n"
                      "3,conv2,weight_grad,-24,3\n"
                      "3,conv2,weight_grad,15,2\n"
                      "3,conv2,weight_grad,127,1\n"
                      "3,conv2,weight_grad,nonfinite,1\n");
    rec_hist_row *out;
    size_t n;
    ck_assert_int_eq(rec_read_hist(path, &out, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 6);
    const int bins[6] = {0, 1, 126, 165, 277, 278}; /* 1 + e + 149 */
    const uint64_t counts[6] = {2, 1, 3, 2, 1, 1};
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(out[i].step, 3);
        ck_assert_str_eq(out[i].layer, "conv2");
        ck_assert_int_eq(out[i].kind, REC_WEIGHT_GRAD);
        ck_assert_int_eq(out[i].bin, bins[i]);
        ck_assert_uint_eq(out[i].count, counts[i]);
    }
    free(out);
}
END_TEST

START_TEST(eval_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const rec_eval_row in[] = {
        {0, 1875, 1.0 / 3.0, 0.8123}, {1, 3750, 0.1, 1.0}, {2, 5625, 0x1p-1074, 0}};
    rec_log *log = rec_log_open_table(dir, REC_EVAL, -1, msg, sizeof msg);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(rec_write_eval(log, &in[i]), AN_OK);
    ck_assert_int_eq(rec_log_flush(log), AN_OK);
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "eval.csv");
    char *text = slurp(path);
    ck_assert_ptr_nonnull(strstr(text, "\n0,1875,0.33333333333333331,0.81230000000000002\n"));
    free(text);
    rec_eval_row *out;
    size_t n;
    ck_assert_int_eq(rec_read_eval(path, &out, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert(out[i].epoch == in[i].epoch && out[i].step == in[i].step);
        ck_assert(same_f64(out[i].test_loss, in[i].test_loss));
        ck_assert(same_f64(out[i].test_accuracy, in[i].test_accuracy));
    }
    free(out);
}
END_TEST

/* rec_summarize_run on hand-written records: 20 steps with losses 1..20,
 * the last 2 (10%) averaged; skips counted; the last scale; the last
 * evaluation's accuracy, or NaN without eval.csv; bad records named. */
START_TEST(summarize_run)
{
    char dir[128], msg[512], text[4096];
    new_dir(dir, sizeof dir);
    size_t len = (size_t)snprintf(text, sizeof text, "%s\n", REC_STEPS_HEADER);
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,0,%d,%d,%d,%d,0.01\n", i, i + 1,
                                i < 19 ? 1024 : 512, i == 4 || i == 18, i == 4 || i == 18);
    write_text(dir, REC_STEPS_CSV, text);
    rec_run_summary r;
    ck_assert_int_eq(rec_summarize_run(dir, &r, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(r.steps, 20);
    ck_assert_int_eq(r.skipped, 2);
    ck_assert(r.final_loss == 19.5); /* (19 + 20) / 2 */
    ck_assert(r.final_scale == 512);
    ck_assert(isnan(r.test_accuracy));
    write_text(dir, REC_EVAL_CSV, REC_EVAL_HEADER "\n0,10,0.5,0.75\n1,20,0.25,0.875\n");
    ck_assert_int_eq(rec_summarize_run(dir, &r, msg, sizeof msg), AN_OK);
    ck_assert(r.test_accuracy == 0.875);
    write_text(dir, REC_EVAL_CSV, REC_EVAL_HEADER "\n0,10,0.5\n");
    ck_assert_int_ne(rec_summarize_run(dir, &r, msg, sizeof msg), AN_OK);
    ck_assert_ptr_nonnull(strstr(msg, "eval.csv"));
    write_text(dir, REC_STEPS_CSV, REC_STEPS_HEADER "\n");
    ck_assert_int_eq(rec_summarize_run(dir, &r, msg, sizeof msg), AN_EFORMAT);
    ck_assert_ptr_nonnull(strstr(msg, "steps.csv has no rows"));
    char missing[256];
    path_in(missing, sizeof missing, dir, "nowhere");
    ck_assert_int_ne(rec_summarize_run(missing, &r, msg, sizeof msg), AN_OK);
    ck_assert_ptr_nonnull(strstr(msg, "nowhere/steps.csv"));
    ck_assert_int_eq(rec_summarize_run(NULL, &r, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* A data-parallel run's all-reduce rows: written, the file as expected, read back. */
START_TEST(allreduce_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *log = rec_log_open_table(dir, REC_ALLREDUCE, -1, msg, sizeof msg);
    ck_assert_ptr_nonnull(log);
    const rec_allreduce_row rows_in[] = {
        {0, 10, 18, 2, 1, 3, 0, 0, 0, 1, 2, 0x1p-20, 0.25, 0},
        {1, 10, 20, 0, 0, 0, 1, 4, 4, 0, 0, 0.0, INFINITY, 1},
    };
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq(rec_write_allreduce(log, &rows_in[i]), AN_OK);
    rec_allreduce_row bad = rows_in[0];
    bad.found_inf = 2;
    ck_assert_int_eq(rec_write_allreduce(log, &bad), AN_EINVAL);
    ck_assert_int_eq(rec_write_step(log, &(rec_step_row){0}), AN_EINVAL); /* another table's */
    ck_assert_int_eq(rec_log_close(log, msg, sizeof msg), AN_OK);
    path_in(path, sizeof path, dir, "allreduce.csv");
    assert_file(path, REC_ALLREDUCE_HEADER "\n"
                                           "0,10,18,2,1,3,0,0,0,1,2,9.5367431640625e-07,0.25,0\n"
                                           "1,10,20,0,0,0,1,4,4,0,0,0,inf,1\n");
    rec_allreduce_row *rows;
    size_t n;
    ck_assert_int_eq(rec_read_allreduce(path, &rows, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(rows[i].step, rows_in[i].step);
        ck_assert(rows[i].elements == rows_in[i].elements &&
                  rows[i].inputs_nonzero == rows_in[i].inputs_nonzero &&
                  rows[i].flushed_cast == rows_in[i].flushed_cast &&
                  rows[i].flushed_prescale == rows_in[i].flushed_prescale &&
                  rows[i].subnormal_messages == rows_in[i].subnormal_messages &&
                  rows[i].overflow_cast == rows_in[i].overflow_cast &&
                  rows[i].overflow_in_sum == rows_in[i].overflow_in_sum &&
                  rows[i].nonfinite_results == rows_in[i].nonfinite_results &&
                  rows[i].zero_results == rows_in[i].zero_results &&
                  rows[i].subnormal_results == rows_in[i].subnormal_results);
        ck_assert(same_f64(rows[i].max_abs_error, rows_in[i].max_abs_error));
        ck_assert(same_f64(rows[i].rel_l2_error, rows_in[i].rel_l2_error));
        ck_assert_int_eq(rows[i].found_inf, rows_in[i].found_inf);
    }
    free(rows);
}
END_TEST

/* The gradient trace of two steps, from hand_stats (amax 65504) and from
 * nothing; the rows read back as written and the bins as in hist.csv. */
START_TEST(trace_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    const ak_stats s = hand_stats();
    ak_stats empty;
    memset(&empty, 0, sizeof empty);
    rec_log *trace = rec_log_open_table(dir, REC_TRACE, -1, msg, sizeof msg);
    rec_log *hist = rec_log_open_table(dir, REC_TRACE_HIST, -1, msg, sizeof msg);
    ck_assert(trace && hist);
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, 65536.0, true, &s), AN_OK);
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 1, 32768.0, false, &empty), AN_OK);
    /* the extremes a scale and an amax can take */
    const rec_trace_row extra[] = {
        {2, 0x1p-14, 0, 3, 0, 0, 0x1p-1074}, /* the smallest double amax */
        {3, 0.0, 1, 3, 1, 2, 0.0},           /* an unguarded scale backed off to 0 */
        {4, INFINITY, 1, 5, 0, 5, 0.0},      /* or grown to inf; all five values inf */
        {5, 1.0 / 3.0, 0, 1, 0, 0, 0x1.fffffffffffffp+1023},
    };
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(rec_write_trace(trace, &extra[i]), AN_OK);
    const rec_trace_hist_row h = {5, AK_HIST_BIN(AK_HIST_EMAX), 1};
    ck_assert_int_eq(rec_write_trace_hist(hist, &h), AN_OK);
    ck_assert_int_eq(rec_log_close(trace, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);

    path_in(path, sizeof path, dir, "trace.csv");
    assert_file(path, "step,loss_scale,found_inf,count,zero,nonfinite,amax\n"
                      "0,65536,1,10,2,1,65504\n"
                      "1,32768,0,0,0,0,0\n"
                      "2,6.103515625e-05,0,3,0,0,4.9406564584124654e-324\n"
                      "3,0,1,3,1,2,0\n"
                      "4,inf,1,5,0,5,0\n"
                      "5,0.33333333333333331,0,1,0,0,1.7976931348623157e+308\n");
    rec_trace_row *rows;
    size_t n;
    ck_assert_int_eq(rec_read_trace(path, &rows, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 6);
    ck_assert(rows[0].step == 0 && rows[0].loss_scale == 65536.0 && rows[0].found_inf == 1);
    ck_assert(rows[0].count == 10 && rows[0].zero == 2 && rows[0].nonfinite == 1);
    ck_assert(rows[0].amax == 65504.0);
    ck_assert(rows[1].step == 1 && rows[1].loss_scale == 32768.0 && rows[1].found_inf == 0);
    ck_assert(rows[1].count == 0 && rows[1].amax == 0.0);
    for (size_t i = 0; i < 4; i++) {
        const rec_trace_row *r = &rows[2 + i];
        ck_assert_int_eq(r->step, extra[i].step);
        ck_assert(same_f64(r->loss_scale, extra[i].loss_scale));
        ck_assert_int_eq(r->found_inf, extra[i].found_inf);
        ck_assert(r->count == extra[i].count && r->zero == extra[i].zero &&
                  r->nonfinite == extra[i].nonfinite);
        ck_assert(same_f64(r->amax, extra[i].amax));
    }
    free(rows);

    path_in(path, sizeof path, dir, "trace_hist.csv");
    assert_file(path, "step,bin,count\n"
                      "0,zero,2\n"
                      "0,-149,1\n"
                      "0,-24,3\n"
                      "0,15,2\n"
                      "0,127,1\n"
                      "0,nonfinite,1\n"
                      "5,127,1\n");
    rec_trace_hist_row *hrows;
    ck_assert_int_eq(rec_read_trace_hist(path, &hrows, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 7);
    const int bins[7] = {0, 1, 126, 165, 277, 278, 277}; /* 1 + e + 149 */
    const uint64_t counts[7] = {2, 1, 3, 2, 1, 1, 1};
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(hrows[i].step, i < 6 ? 0 : 5);
        ck_assert_int_eq(hrows[i].bin, bins[i]);
        ck_assert_uint_eq(hrows[i].count, counts[i]);
    }
    free(hrows);
}
END_TEST

static void expect_read_error(const char *dir, const char *name, const char *text, const char *part)
{
    char path[256], msg[512];
    path_in(path, sizeof path, dir, name);
    put_file(path, text);
    void *rows = (void *)1;
    size_t n = 99;
    int status;
    if (strcmp(name, "steps.csv") == 0)
        status = rec_read_steps(path, (rec_step_row **)&rows, &n, msg, sizeof msg);
    else if (strcmp(name, "tensors.csv") == 0)
        status = rec_read_tensors(path, (rec_tensor_row **)&rows, &n, msg, sizeof msg);
    else if (strcmp(name, "updates.csv") == 0)
        status = rec_read_updates(path, (rec_update_row **)&rows, &n, msg, sizeof msg);
    else if (strcmp(name, "hist.csv") == 0)
        status = rec_read_hist(path, (rec_hist_row **)&rows, &n, msg, sizeof msg);
    else if (strcmp(name, "trace.csv") == 0)
        status = rec_read_trace(path, (rec_trace_row **)&rows, &n, msg, sizeof msg);
    else if (strcmp(name, "trace_hist.csv") == 0)
        status = rec_read_trace_hist(path, (rec_trace_hist_row **)&rows, &n, msg, sizeof msg);
    else
        status = rec_read_eval(path, (rec_eval_row **)&rows, &n, msg, sizeof msg);
    ck_assert_int_eq(status, AN_EFORMAT);
    ck_assert_ptr_null(rows);
    ck_assert_uint_eq(n, 0);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, part);
}

START_TEST(readers_reject)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
#define STEPS REC_STEPS_HEADER "\n"
    expect_read_error(dir, "steps.csv", STEPS "1,0,1,1,0,0,1\n2,0,1,1,0\n",
                      "steps.csv:3: expected 7 fields, got 5");
    expect_read_error(dir, "steps.csv", STEPS "1,0,1,1,0,0,1,9\n", "expected 7 fields, got 8");
    expect_read_error(dir, "steps.csv", STEPS "1,0,abc,1,0,0,1\n",
                      "steps.csv:2: column 'loss': 'abc' is not a number");
    expect_read_error(dir, "steps.csv", STEPS "1,0,,1,0,0,1\n", "column 'loss': '' is not");
    expect_read_error(dir, "steps.csv", STEPS "1,0, 1,1,0,0,1\n", "column 'loss': ' 1'");
    expect_read_error(dir, "steps.csv", STEPS "1,0,1x,1,0,0,1\n", "column 'loss': '1x'");
    expect_read_error(dir, "steps.csv", STEPS "1,0,1,1,2,0,1\n",
                      "column 'found_inf': '2' is not 0 or 1");
    expect_read_error(dir, "steps.csv", STEPS "-1,0,1,1,0,0,1\n", "column 'step': '-1'");
    expect_read_error(dir, "steps.csv", STEPS "+1,0,1,1,0,0,1\n", "column 'step': '+1'");
    expect_read_error(dir, "steps.csv", STEPS "99999999999999999999,0,1,1,0,0,1\n",
                      "column 'step'");
    expect_read_error(dir, "steps.csv", "step,epoch\n", "header is 'step,epoch', expected");
    expect_read_error(dir, "steps.csv", "", "empty file");
    expect_read_error(dir, "tensors.csv",
                      REC_TENSORS_HEADER "\n1,fc1,gradient,fp16,1,1,1,0,0,0,0,0,0,0,0,1\n",
                      "tensors.csv:2: column 'kind': 'gradient'");
    expect_read_error(dir, "tensors.csv",
                      REC_TENSORS_HEADER "\n1,fc1,weight,fp8,1,1,1,0,0,0,0,0,0,0,0,1\n",
                      "column 'dtype': 'fp8' is not fp16, bf16 or fp32");
    expect_read_error(dir, "tensors.csv",
                      REC_TENSORS_HEADER "\n1,fc 1,weight,fp16,1,1,1,0,0,0,0,0,0,0,0,1\n",
                      "column 'layer': 'fc 1' is not a layer name");
    expect_read_error(dir, "tensors.csv",
                      REC_TENSORS_HEADER "\n1,fc1,weight,fp16,1,-1,1,0,0,0,0,0,0,0,0,1\n",
                      "column 'count': '-1' is not a non-negative integer");
    expect_read_error(dir, "updates.csv", REC_UPDATES_HEADER "\n1,fc1,1,1,1,x,0,0,0,0\n",
                      "column 'lost_frac_of_nonzero': 'x'");
    expect_read_error(dir, "hist.csv", "step,layer,kind,bin,count\n1,fc1,weight,128,4\n",
                      "hist.csv:2: column 'bin': '128' is not a binade exponent");
    expect_read_error(dir, "eval.csv", "epoch,step,test_loss,test_accuracy\n0,1,0.5\n",
                      "eval.csv:2: expected 4 fields, got 3");
#define TRACE REC_TRACE_HEADER "\n"
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,4,1,0,2\n1,1,0,4,1,0\n",
                      "trace.csv:3: expected 7 fields, got 6");
    expect_read_error(dir, "trace.csv", TRACE "0,x,0,4,1,0,2\n",
                      "trace.csv:2: column 'loss_scale': 'x' is not a number");
    expect_read_error(dir, "trace.csv", TRACE "0,-2,0,4,1,0,2\n",
                      "column 'loss_scale': '-2' is not a number >= 0");
    expect_read_error(dir, "trace.csv", TRACE "0,nan,0,4,1,0,2\n",
                      "column 'loss_scale': 'nan' is not a number >= 0");
    expect_read_error(dir, "trace.csv", TRACE "0,1,2,4,1,0,2\n",
                      "column 'found_inf': '2' is not 0 or 1");
    expect_read_error(dir, "trace.csv", TRACE "-1,1,0,4,1,0,2\n", "column 'step': '-1'");
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,-4,1,0,2\n",
                      "column 'count': '-4' is not a non-negative integer");
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,4,3,2,2\n",
                      "trace.csv:2: zero 3 + nonfinite 2 > count 4");
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,4,5,0,2\n", "zero 5 + nonfinite 0 > count 4");
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,4,1,0,inf\n",
                      "column 'amax': 'inf' is not a finite number >= 0");
    expect_read_error(dir, "trace.csv", TRACE "0,1,0,4,1,0,-1\n",
                      "column 'amax': '-1' is not a finite number >= 0");
    expect_read_error(dir, "trace.csv", "step,loss_scale\n", "header is 'step,loss_scale'");
    expect_read_error(dir, "trace_hist.csv", "step,bin,count\n0,zero,3\n0,-150,1\n",
                      "trace_hist.csv:3: column 'bin': '-150' is not a binade exponent");
    expect_read_error(dir, "trace_hist.csv", "step,bin,count\n0,-3\n",
                      "trace_hist.csv:2: expected 3 fields, got 2");
    expect_read_error(dir, "trace_hist.csv", "step,bin,count\n0,-3,1.5\n",
                      "column 'count': '1.5' is not a non-negative integer");
#undef TRACE

    /* a last line cut short is not a row; a missing file is an I/O error */
    path_in(path, sizeof path, dir, "steps.csv");
    put_file(path, STEPS "1,0,1,1,0,0,1\n2,0,1,1");
    rec_step_row *rows;
    size_t n;
    ck_assert_int_eq(rec_read_steps(path, &rows, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 1);
    free(rows);
    put_file(path, STEPS);
    ck_assert_int_eq(rec_read_steps(path, &rows, &n, msg, sizeof msg), AN_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(rows);
    path_in(path, sizeof path, dir, "nothing.csv");
    ck_assert_int_eq(rec_read_steps(path, &rows, &n, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, "nothing.csv: cannot open: No such file or directory");
#undef STEPS
}
END_TEST

static Suite *record_read_suite(void)
{
    Suite *s = suite_create("analyze_record_read");
    TCase *tc = tcase_create("record_read");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, steps_round_trip);
    tcase_add_test(tc, tensors_round_trip);
    tcase_add_test(tc, updates_round_trip);
    tcase_add_test(tc, hist_only_nonzero_bins);
    tcase_add_test(tc, eval_round_trip);
    tcase_add_test(tc, summarize_run);
    tcase_add_test(tc, trace_round_trip);
    tcase_add_test(tc, allreduce_round_trip);
    tcase_add_test(tc, readers_reject);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_read_suite()); }
