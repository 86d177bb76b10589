/* test_record: the run directory's names (record.c): tables, layer names,
 * kinds, dtypes and histogram bins, and the calendar (record_time.c).
 * Expected texts are written out by hand. */
#include <check.h>
#include <string.h>

#include "check_main.h"
#include "record.h"

START_TEST(names_bins_times)
{
    ck_assert(rec_name_ok("fc1"));
    ck_assert(rec_name_ok("features.0-a_B"));
    ck_assert(!rec_name_ok(""));
    ck_assert(!rec_name_ok(NULL));
    ck_assert(!rec_name_ok("fc 1"));
    ck_assert(!rec_name_ok("a,b"));
    ck_assert(!rec_name_ok("a\"b"));
    char name[REC_NAME_MAX + 1];
    memset(name, 'x', sizeof name);
    name[REC_NAME_MAX - 1] = '\0'; /* 63 characters */
    ck_assert(rec_name_ok(name));
    name[REC_NAME_MAX - 1] = 'x';
    name[REC_NAME_MAX] = '\0'; /* 64 */
    ck_assert(!rec_name_ok(name));

    char label[REC_BIN_LABEL_MAX];
    ck_assert_str_eq(rec_hist_bin_label(AK_HIST_ZERO, label), "zero");
    ck_assert_str_eq(rec_hist_bin_label(AK_HIST_NONFINITE, label), "nonfinite");
    ck_assert_str_eq(rec_hist_bin_label(1, label), "-149");
    ck_assert_str_eq(rec_hist_bin_label(150, label), "0");
    ck_assert_str_eq(rec_hist_bin_label(AK_HIST_NONFINITE - 1, label), "127");
    ck_assert_ptr_null(rec_hist_bin_label(-1, label));
    ck_assert_ptr_null(rec_hist_bin_label(AK_HIST_BINS, label));
    int bin;
    ck_assert_int_eq(rec_hist_bin_parse("-24", &bin), AN_OK);
    ck_assert_int_eq(bin, 126); /* 1 + (-24) - (-149) */
    ck_assert_int_eq(rec_hist_bin_parse("zero", &bin), AN_OK);
    ck_assert_int_eq(bin, 0);
    ck_assert_int_eq(rec_hist_bin_parse("nonfinite", &bin), AN_OK);
    ck_assert_int_eq(bin, 278);
    ck_assert_int_eq(rec_hist_bin_parse("128", &bin), AN_EINVAL);
    ck_assert_int_eq(rec_hist_bin_parse("-150", &bin), AN_EINVAL);
    ck_assert_int_eq(rec_hist_bin_parse("+3", &bin), AN_EINVAL);
    ck_assert_int_eq(rec_hist_bin_parse("", &bin), AN_EINVAL);

    rec_kind k;
    ck_assert_int_eq(rec_kind_parse("activation_grad", &k), AN_OK);
    ck_assert_int_eq(k, REC_ACTIVATION_GRAD);
    ck_assert_int_eq(rec_kind_parse("grad", &k), AN_EINVAL);
    ak_dtype dt;
    ck_assert_int_eq(rec_dtype_parse("bf16", &dt), AN_OK);
    ck_assert_int_eq(dt, AK_BF16);
    ck_assert_int_eq(rec_dtype_parse("F16", &dt), AN_EINVAL);
    ck_assert_str_eq(rec_table_file(REC_HIST), "hist.csv");
    ck_assert_str_eq(rec_table_header(REC_EVAL), "epoch,step,test_loss,test_accuracy");
    ck_assert_str_eq(rec_table_file(REC_TRACE), "trace.csv");
    ck_assert_str_eq(rec_table_file(REC_TRACE_HIST), "trace_hist.csv");
    ck_assert_str_eq(rec_table_header(REC_TRACE),
                     "step,loss_scale,found_inf,count,zero,nonfinite,amax");
    ck_assert_str_eq(rec_table_header(REC_TRACE_HIST), "step,bin,count");
    ck_assert_str_eq(rec_table_file(REC_ALLREDUCE), "allreduce.csv");
    ck_assert_str_eq(rec_table_header(REC_ALLREDUCE),
                     "step,elements,inputs_nonzero,flushed_cast,flushed_prescale,"
                     "subnormal_messages,overflow_cast,overflow_in_sum,nonfinite_results,"
                     "zero_results,subnormal_results,max_abs_error,rel_l2_error,found_inf");
    ck_assert_ptr_null(rec_table_file((rec_table)8));
    ck_assert_ptr_null(rec_table_header((rec_table)-1));

    char t[REC_TIME_MAX];
    int64_t s;
    ck_assert_int_eq(rec_time_format(0, t), AN_OK);
    ck_assert_str_eq(t, "1970-01-01T00:00:00Z");
    ck_assert_int_eq(rec_time_format(951782400, t), AN_OK);
    ck_assert_str_eq(t, "2000-02-29T00:00:00Z");
    ck_assert_int_eq(rec_time_format(1738324800 + 3599, t), AN_OK);
    ck_assert_str_eq(t, "2025-01-31T12:59:59Z");
    ck_assert_int_eq(rec_time_format(-1, t), AN_OK);
    ck_assert_str_eq(t, "1969-12-31T23:59:59Z");
    ck_assert_int_eq(rec_time_format(REC_NO_TIME, t), AN_EINVAL);
    ck_assert_int_eq(rec_time_parse("2025-01-31T12:59:59Z", &s), AN_OK);
    ck_assert_int_eq(s, 1738324800 + 3599);
    ck_assert_int_eq(rec_time_parse("1969-12-31T23:59:59Z", &s), AN_OK);
    ck_assert_int_eq(s, -1);
    ck_assert_int_eq(rec_time_parse("2000-02-29T00:00:00Z", &s), AN_OK);
    ck_assert_int_eq(s, 951782400);
    ck_assert_int_eq(rec_time_parse("2023-02-29T00:00:00Z", &s), AN_EINVAL);
    ck_assert_int_eq(rec_time_parse("2023-13-01T00:00:00Z", &s), AN_EINVAL);
    ck_assert_int_eq(rec_time_parse("2023-01-01T24:00:00Z", &s), AN_EINVAL);
    ck_assert_int_eq(rec_time_parse("2023-01-01T00:00:00", &s), AN_EINVAL);
    ck_assert_int_eq(rec_time_parse("2023-01-01 00:00:00Z", &s), AN_EINVAL);
}
END_TEST

static Suite *record_suite(void)
{
    Suite *s = suite_create("analyze_record");
    TCase *tc = tcase_create("record");
    tcase_add_test(tc, names_bins_times);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_suite()); }
