/* test_replay_load: gradient traces loaded from run directories
 * (an_trace_load, replay.c): written with the record writers and
 * normalized to true units by the scale each step held, the files refused,
 * and a run killed mid-write.  Every test works in a fresh directory under
 * a mkdtemp base that the fixture removes; expected numbers are worked out
 * by hand in the comments. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "files.h"
#include "loss_scale.h"
#include "record.h"
#include "replay.h"
#include "scratch.h"

#define BIN(e) AK_HIST_BIN(e)

static void clear_stats(ak_stats *s) { memset(s, 0, sizeof *s); }

/* A trace written with the record writers, normalized by the scale held:
 *   step 0, scale 2^16: amax 2^15 -> 0.5; binade 14 -> -2; -10 -> -26;
 *     -149 -> -165, kept in the lowest binade -149; 1 zero.
 *   step 1, scale 2^16, an inf among the gradients: amax -> +inf; binade
 *     5 -> -11; the non-finite value stays non-finite.
 *   step 2, scale 3: binade 2 ([4, 8)) -> lower edge 4/3, binade 0;
 *     -149 -> [2^-149 / 3, ...) below the range: -149; amax 6 -> 2.
 *   step 3, scale 0.5: binade 127 -> 128, kept in 127; amax 2^127 -> 2^128.
 *   step 4, scale 1, found_inf set with no non-finite value counted: its
 *     magnitudes are unknown all the same: amax +inf. */
START_TEST(load_normalizes)
{
    char dir[128], msg[512];
    new_dir(dir, sizeof dir);
    rec_log *trace = rec_log_open_table(dir, REC_TRACE, -1, msg, sizeof msg);
    rec_log *hist = rec_log_open_table(dir, REC_TRACE_HIST, -1, msg, sizeof msg);
    ck_assert(trace && hist);
    ak_stats s;
    clear_stats(&s);
    s.count = 5;
    s.zero = 1;
    s.nonzero = 4;
    s.amax = 32768.0;
    s.hist[AK_HIST_ZERO] = 1;
    s.hist[BIN(14)] = 1;
    s.hist[BIN(-10)] = 2;
    s.hist[BIN(-149)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 0, 65536.0, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 3;
    s.nonzero = 2;
    s.nonfinite = 1;
    s.amax = 100.0;
    s.hist[BIN(5)] = 2;
    s.hist[AK_HIST_NONFINITE] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 1, 65536.0, true, &s), AN_OK);
    clear_stats(&s);
    s.count = 2;
    s.nonzero = 2;
    s.amax = 6.0;
    s.hist[BIN(2)] = 1;
    s.hist[BIN(-149)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 2, 3.0, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 1;
    s.nonzero = 1;
    s.amax = 0x1p127;
    s.hist[BIN(127)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 3, 0.5, false, &s), AN_OK);
    clear_stats(&s);
    s.count = 1;
    s.nonzero = 1;
    s.amax = 2.0;
    s.hist[BIN(1)] = 1;
    ck_assert_int_eq(rec_write_trace_stats(trace, hist, 4, 1.0, true, &s), AN_OK);
    ck_assert_int_eq(rec_log_close(trace, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(rec_log_close(hist, msg, sizeof msg), AN_OK);

    an_trace t;
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 5);
    const an_trace_step *st = t.steps;
    ck_assert(st[0].step == 0 && st[0].recorded_scale == 65536.0 && !st[0].recorded_found_inf);
    ck_assert(st[0].amax == 0.5);
    ck_assert(st[0].count == 5 && st[0].zero == 1 && st[0].nonfinite == 0);
    ck_assert_uint_eq(st[0].hist[AK_HIST_ZERO], 1);
    ck_assert_uint_eq(st[0].hist[BIN(-2)], 1);
    ck_assert_uint_eq(st[0].hist[BIN(-26)], 2);
    ck_assert_uint_eq(st[0].hist[BIN(-149)], 1);
    ck_assert_uint_eq(st[0].hist[BIN(14)], 0);
    ck_assert_uint_eq(st[0].hist[BIN(-10)], 0);

    ck_assert(st[1].recorded_found_inf && isinf(st[1].amax) && st[1].amax > 0);
    ck_assert_uint_eq(st[1].hist[BIN(-11)], 2);
    ck_assert_uint_eq(st[1].hist[AK_HIST_NONFINITE], 1);

    ck_assert(st[2].recorded_scale == 3.0 && st[2].amax == 2.0);
    ck_assert_uint_eq(st[2].hist[BIN(0)], 1);
    ck_assert_uint_eq(st[2].hist[BIN(-149)], 1);

    ck_assert(st[3].amax == 0x1p128);
    ck_assert_uint_eq(st[3].hist[BIN(127)], 1);
    ck_assert(isinf(st[4].amax));
    ck_assert_uint_eq(st[4].hist[BIN(1)], 1);
    for (size_t i = 0; i < t.n; i++) {
        uint64_t total = 0;
        for (int b = 0; b < AK_HIST_BINS; b++)
            total += st[i].hist[b];
        ck_assert_uint_eq(total, st[i].count); /* nothing lost on the way */
    }

    /* replayed with pytorch (2^16, window 2000) in fp16:
     *   0: amax .5 x 2^16 = 32768: clean         (best 2^16: not below)
     *   1: +inf recorded at 2^16, held 2^16: overflow -> 2^15
     *   2: amax 2 x 2^15 = 65536: overflow -> 2^14 (best 2^14)
     *   3: amax 2^128 x 2^14: overflow -> 2^13 (best 2^-113)
     *   4: +inf recorded at 1, held 2^13 >= 1: overflow -> 2^12 */
    ak_scaler_config cfg = preset("pytorch");
    double scales[5];
    an_replay_result r;
    ck_assert_int_eq(an_replay(&t, &cfg, FPE_FMT_F16, &r, scales, NULL, msg, sizeof msg), AN_OK);
    ck_assert(scales[0] == 0x1p16 && scales[1] == 0x1p16 && scales[2] == 0x1p15 &&
              scales[3] == 0x1p14 && scales[4] == 0x1p13);
    ck_assert_int_eq(r.overflow_steps, 4);
    ck_assert_int_eq(r.skipped_steps, 4);
    ck_assert_int_eq(r.steps_below_best, 0);
    /* step 0 alone is clean: -26 + 16 = -10, nothing flushes ... except the
     * clamped -149 + 16 = -133: 1 of 4 nonzero */
    ck_assert_double_eq_tol(r.mean_underflow_frac, 0.25, 1e-15);
    an_trace_free(&t);
}
END_TEST

static void expect_load_error(const char *dir, int status, const char *part)
{
    an_trace t = {(an_trace_step *)1, 99};
    char msg[1024] = "";
    ck_assert_int_eq(an_trace_load(dir, &t, msg, sizeof msg), status);
    ck_assert_ptr_null(t.steps);
    ck_assert_uint_eq(t.n, 0);
    ASSERT_MSG(msg, part);
}

#define TRACE_H REC_TRACE_HEADER "\n"
#define HIST_H  REC_TRACE_HIST_HEADER "\n"

START_TEST(load_rejects)
{
    char dir[128], msg[512];
    new_dir(dir, sizeof dir);
    /* no files */
    expect_load_error(dir, AN_EIO, "trace.csv: cannot open");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n");
    expect_load_error(dir, AN_EIO, "trace_hist.csv: cannot open");

    /* the steps' histograms do not match */
    write_text(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n1,-3,1\n");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv: step 1 has histogram rows but no row in");
    write_text(dir, "trace_hist.csv", HIST_H "0,zero,1\n2,-1,1\n");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT,
                      "trace_hist.csv: step 0: the histogram holds 1 values (1 zero, 0 "
                      "non-finite) but");
    write_text(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n2,-1,1\n");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,0,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv says count 2 (0 zero, 0 non-finite)");
    /* a step with values and no histogram rows at all */
    write_text(dir, "trace_hist.csv", HIST_H "2,-1,1\n");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,1,0,0.5\n2,1,0,1,0,0,0.5\n");
    expect_load_error(dir, AN_EFORMAT, "step 0: the histogram holds 0 values");
    write_text(dir, "trace_hist.csv", HIST_H "0,zero,1\n0,-1,1\n0,-1,1\n1,0,1\n");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,3,1,0,0.5\n1,1,0,1,0,0,1\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv: step 0: bin -1 appears twice");

    /* steps out of order, repeated, a scale that cannot be divided out */
    write_text(dir, "trace_hist.csv", HIST_H);
    write_text(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n2,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv: step 2 follows step 3");
    write_text(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n3,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "step 3 follows step 3");
    write_text(dir, "trace.csv", TRACE_H "3,0,0,0,0,0,0\n4,1,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv: step 3: loss_scale 0 cannot be divided out");
    write_text(dir, "trace.csv", TRACE_H "3,1,0,0,0,0,0\n4,inf,0,0,0,0,0\n");
    expect_load_error(dir, AN_EFORMAT, "step 4: loss_scale inf cannot be divided out");

    /* malformed rows, through the readers */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,1,0\n");
    expect_load_error(dir, AN_EFORMAT, "trace.csv:2: expected 7 fields, got 6");
    write_text(dir, "trace.csv", TRACE_H "0,1,0,0,0,0,0\n");
    write_text(dir, "trace_hist.csv", HIST_H "0,two,1\n");
    expect_load_error(dir, AN_EFORMAT, "trace_hist.csv:2: column 'bin': 'two'");

    /* nothing recorded yet */
    write_text(dir, "trace.csv", TRACE_H);
    write_text(dir, "trace_hist.csv", HIST_H);
    expect_load_error(dir, AN_EINVAL, "trace.csv has no steps");

    an_trace t;
    ck_assert_int_eq(an_trace_load(NULL, &t, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_trace_load("", &t, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(an_trace_load(dir, NULL, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* A run killed between writing a step's two files: its last step is
 * dropped, wherever it is missing. */
START_TEST(load_killed_run)
{
    char dir[128];
    new_dir(dir, sizeof dir);
    an_trace t;
    char msg[512];
    /* step 2's histogram is cut short (1 of 3 values) */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,3,1,0,1\n");
    write_text(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n2,zero,1\n2,0,1\n2,-");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_int_eq(t.steps[1].step, 1);
    an_trace_free(&t);
    /* step 2's histogram is there, its trace row is not */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,");
    write_text(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n2,0,1\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    an_trace_free(&t);
    /* step 2's trace row is there, no histogram row */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,1,0,0,1\n");
    write_text(dir, "trace_hist.csv", HIST_H "0,0,1\n1,0,1\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 2);
    an_trace_free(&t);
    /* ... but a step of no values has no histogram rows and is complete */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,1,0,0,1\n1,1,0,1,0,0,1\n2,1,0,0,0,0,0\n");
    ck_assert_msg(an_trace_load(dir, &t, msg, sizeof msg) == AN_OK, "%s", msg);
    ck_assert_uint_eq(t.n, 3);
    an_trace_free(&t);
    /* only the one step, incomplete: nothing to replay */
    write_text(dir, "trace.csv", TRACE_H "0,1,0,2,0,0,1\n");
    write_text(dir, "trace_hist.csv", HIST_H "0,0,1\n");
    expect_load_error(dir, AN_EINVAL, "has no steps");
}
END_TEST

static Suite *replay_load_suite(void)
{
    Suite *s = suite_create("analyze_replay_load");
    TCase *tc = tcase_create("replay_load");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, load_normalizes);
    tcase_add_test(tc, load_rejects);
    tcase_add_test(tc, load_killed_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(replay_load_suite()); }
