/* test_record_json: run.json (record_json.c) written and read back, and
 * the files it refuses.  Every test works in a fresh directory under a
 * mkdtemp base that the fixture removes. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record.h"
#include "scratch.h"

START_TEST(run_json_round_trip)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "run.json");
    rec_run *r = rec_run_new("0.1.0", "9687ec7", "cuda", "NVIDIA H100 80GB HBM3");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(rec_run_set_string(r, "net", "lenet5"), AN_OK);
    ck_assert_int_eq(rec_run_set_int(r, "epochs", 5), AN_OK);
    ck_assert_int_eq(rec_run_set_real(r, "lr", 0.01), AN_OK);
    ck_assert_int_eq(rec_run_set_int(r, "seed", INT64_MIN), AN_OK);
    ck_assert_int_eq(rec_run_set_real(r, "init_scale", 65536.0), AN_OK); /* stays a real */
    ck_assert_int_eq(rec_run_set_real(r, "tiny", 0x1p-1074), AN_OK);
    ck_assert_int_eq(rec_run_set_string(r, "data", "/usr/share/datasets/fashion-mnist \"x\"\n"),
                     AN_OK);
    ck_assert_int_eq(rec_run_set_string(r, "empty", ""), AN_OK);
    ck_assert_int_eq(rec_run_set_int(r, "epochs", 6), AN_OK); /* replaced */
    rec_run_set_start(r, 1738324800);
    ck_assert_int_eq(rec_run_write(r, path, msg, sizeof msg), AN_OK);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(strstr(text, "\"start_time\": \"2025-01-31T12:00:00Z\""));
    ck_assert_ptr_nonnull(strstr(text, "\"end_time\": null"));
    ck_assert_ptr_nonnull(strstr(text, "\"init_scale\": 65536.0"));
    free(text);

    rec_run *back = rec_run_read(path, msg, sizeof msg);
    ck_assert_msg(back != NULL, "%s", msg);
    ck_assert_str_eq(rec_run_version(back), "0.1.0");
    ck_assert_str_eq(rec_run_git_revision(back), "9687ec7");
    ck_assert_str_eq(rec_run_backend(back), "cuda");
    ck_assert_str_eq(rec_run_device(back), "NVIDIA H100 80GB HBM3");
    ck_assert_int_eq(rec_run_start(back), 1738324800);
    ck_assert(rec_run_end(back) == REC_NO_TIME);
    ck_assert_uint_eq(rec_run_option_count(back), 8);
    const char *keys[8] = {"net", "epochs", "lr", "seed", "init_scale", "tiny", "data", "empty"};
    rec_option o;
    for (size_t i = 0; i < 8; i++) {
        ck_assert_int_eq(rec_run_option_at(back, i, &o), AN_OK);
        ck_assert_str_eq(o.key, keys[i]);
    }
    ck_assert_int_eq(rec_run_option_at(back, 8, &o), AN_EINVAL);
    ck_assert(rec_run_option(back, "net", &o) && o.type == REC_OPT_STRING);
    ck_assert_str_eq(o.string, "lenet5");
    ck_assert(rec_run_option(back, "epochs", &o) && o.type == REC_OPT_INT && o.integer == 6);
    ck_assert(rec_run_option(back, "seed", &o) && o.type == REC_OPT_INT && o.integer == INT64_MIN);
    ck_assert(rec_run_option(back, "lr", &o) && o.type == REC_OPT_REAL && same_f64(o.real, 0.01));
    ck_assert(rec_run_option(back, "init_scale", &o) && o.type == REC_OPT_REAL &&
              o.real == 65536.0);
    ck_assert(rec_run_option(back, "tiny", &o) && same_f64(o.real, 0x1p-1074));
    ck_assert(rec_run_option(back, "data", &o));
    ck_assert_str_eq(o.string, "/usr/share/datasets/fashion-mnist \"x\"\n");
    ck_assert(!rec_run_option(back, "nope", &o));

    /* the end: rewritten in place */
    rec_run_set_end(back, 1738324800 + 90);
    ck_assert_int_eq(rec_run_write(back, path, msg, sizeof msg), AN_OK);
    rec_run *done = rec_run_read(path, msg, sizeof msg);
    ck_assert_ptr_nonnull(done);
    ck_assert_int_eq(rec_run_end(done), 1738324800 + 90);
    ck_assert_uint_eq(rec_run_option_count(done), 8);
    ck_assert_int_eq(dir_entries(dir), 1);
    rec_run_free(done);
    rec_run_free(back);
    rec_run_free(r);
    rec_run_free(NULL);
}
END_TEST

START_TEST(run_json_rejects)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "run.json");
    rec_run *r = rec_run_new(NULL, NULL, "cpu", NULL);
    ck_assert_str_eq(rec_run_version(r), "");
    ck_assert_int_eq(rec_run_set_real(r, "lr", NAN), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_real(r, "lr", INFINITY), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_int(r, "", 1), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_int(r, NULL, 1), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_string(r, "x", NULL), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_string(r, "x", "\xff\xfe"), AN_EINVAL);
    ck_assert_int_eq(rec_run_set_string(r, "\xff", "x"), AN_EINVAL);
    ck_assert_uint_eq(rec_run_option_count(r), 0);
    rec_run_set_start(r, 253402300800LL); /* year 10000 */
    ck_assert_int_eq(rec_run_write(r, path, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "start_time");
    rec_run_free(r);
    r = rec_run_new("0.1.0", "x", "cpu", "\xc3\x28"); /* invalid UTF-8 */
    ck_assert_int_eq(rec_run_write(r, path, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "device");
    rec_run_free(r);

    static const struct {
        const char *text, *part;
    } bad[] = {
        {"{", "run.json:1:"},
        {"[]", "not a JSON object"},
        {"{\"record_version\": 2}", "\"record_version\" is not 1"},
        {"{\"record_version\": 1, \"ampscope_version\": \"0.1\"}", "missing \"git_revision\""},
        {"{\"record_version\": 1, \"ampscope_version\": 1}",
         "\"ampscope_version\" is not a string"},
        {"{\"record_version\": 1, \"ampscope_version\": \"a\", \"git_revision\": \"b\", "
         "\"backend\": \"c\", \"device\": \"d\", \"start_time\": \"yesterday\", \"end_time\": "
         "null, \"options\": {}}",
         "\"start_time\": 'yesterday' is not a UTC time"},
        {"{\"record_version\": 1, \"ampscope_version\": \"a\", \"git_revision\": \"b\", "
         "\"backend\": \"c\", \"device\": \"d\", \"start_time\": null, \"end_time\": "
         "null, \"options\": {\"layers\": [1, 2]}}",
         "option \"layers\""},
        {"{\"record_version\": 1, \"ampscope_version\": \"a\", \"git_revision\": \"b\", "
         "\"backend\": \"c\", \"device\": \"d\", \"start_time\": null, \"end_time\": "
         "null, \"options\": 3}",
         "\"options\" is missing or not an object"},
        {"{\"record_version\": 1, \"record_version\": 1}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_file(path, bad[i].text);
        ck_assert_ptr_null(rec_run_read(path, msg, sizeof msg));
        ASSERT_MSG(msg, path);
        ASSERT_MSG(msg, bad[i].part);
    }
    path_in(path, sizeof path, dir, "none.json");
    ck_assert_ptr_null(rec_run_read(path, msg, sizeof msg));
    ASSERT_MSG(msg, "none.json");
}
END_TEST

/* "given" and "resumes": written, read back, appended to; absent in older records */
START_TEST(run_json_given)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "run.json");
    rec_run *r = rec_run_new("0.1.0", "x", "cpu", "d");
    ck_assert_uint_eq(rec_run_arg_lists(r), 0); /* none yet */
    ck_assert_int_eq(rec_run_add_resume(r, 3, NULL, 0), AN_EINVAL);
    ck_assert_int_eq(rec_run_write(r, path, msg, sizeof msg), AN_OK);
    char *text = slurp(path);
    ck_assert_ptr_null(strstr(text, "\"given\""));
    ck_assert_ptr_null(strstr(text, "\"resumes\""));
    free(text);
    const char *given[] = {"--net", "mlp", "--no-progress", "--lr", "0.01"};
    ck_assert_int_eq(rec_run_set_given(r, given, 5), AN_OK);
    const char *bad[] = {"--net", "\xff"};
    ck_assert_int_eq(rec_run_set_given(r, bad, 2), AN_EINVAL);
    ck_assert_int_eq(rec_run_add_resume(r, -1, given, 1), AN_EINVAL);
    ck_assert_int_eq(rec_run_write(r, path, msg, sizeof msg), AN_OK);
    text = slurp(path);
    ck_assert_ptr_nonnull(strstr(text, "\"given\": [\n    \"--net\",\n    \"mlp\",\n    "
                                       "\"--no-progress\",\n    \"--lr\",\n    \"0.01\"\n  ],\n"
                                       "  \"resumes\": [],\n  \"options\""));
    free(text);
    rec_run *back = rec_run_read(path, msg, sizeof msg);
    ck_assert_msg(back != NULL, "%s", msg);
    ck_assert_uint_eq(rec_run_arg_lists(back), 1);
    int64_t step = -1;
    ck_assert_uint_eq(rec_run_args(back, 0, &step), 5);
    ck_assert_int_eq(step, 0);
    ck_assert_str_eq(rec_run_arg(back, 0, 2), "--no-progress");
    ck_assert_ptr_null(rec_run_arg(back, 0, 5));
    ck_assert_uint_eq(rec_run_args(back, 1, NULL), 0);
    const char *more[] = {"--steps", "400"}, *again[] = {"--epochs", "9"};
    ck_assert_int_eq(rec_run_add_resume(back, 120, more, 2), AN_OK);
    ck_assert_int_eq(rec_run_add_resume(back, 0, again, 2), AN_OK);
    ck_assert_int_eq(rec_run_write(back, path, msg, sizeof msg), AN_OK);
    rec_run *twice = rec_run_read(path, msg, sizeof msg);
    ck_assert_msg(twice != NULL, "%s", msg);
    ck_assert_uint_eq(rec_run_arg_lists(twice), 3);
    ck_assert_uint_eq(rec_run_args(twice, 1, &step), 2);
    ck_assert_int_eq(step, 120);
    ck_assert_str_eq(rec_run_arg(twice, 1, 1), "400");
    ck_assert_uint_eq(rec_run_args(twice, 2, &step), 2);
    ck_assert_int_eq(step, 0);
    ck_assert_str_eq(rec_run_arg(twice, 2, 0), "--epochs");
    ck_assert_uint_eq(rec_run_args(twice, 3, &step), 0);
    /* setting "given" again starts the resumes over */
    ck_assert_int_eq(rec_run_set_given(twice, given, 2), AN_OK);
    ck_assert_uint_eq(rec_run_arg_lists(twice), 1);
    rec_run_free(twice);
    rec_run_free(back);
    rec_run_free(r);

    static const struct {
        const char *lists, *part;
    } broken[] = {
        {"\"given\": {}", "\"given\" is not an array of strings"},
        {"\"given\": [\"--net\", 3]", "\"given\": item 1 is not a string"},
        {"\"resumes\": []", "\"resumes\" without \"given\""},
        {"\"given\": [], \"resumes\": {}", "\"resumes\" is not an array"},
        {"\"given\": [], \"resumes\": [3]", "\"resumes\" entry 0 has no \"step\" >= 0"},
        {"\"given\": [], \"resumes\": [{\"step\": -1, \"given\": []}]",
         "\"resumes\" entry 0 has no \"step\" >= 0"},
        {"\"given\": [], \"resumes\": [{\"step\": 1.5, \"given\": []}]",
         "\"resumes\" entry 0 has no \"step\" >= 0"},
        {"\"given\": [], \"resumes\": [{\"step\": 1, \"given\": [], \"x\": 1}, {\"step\": 2}]",
         "\"resumes\" entry 1 is not an array of strings"},
        {"\"given\": [], \"resumes\": [{\"step\": 1, \"given\": [null]}]",
         "\"resumes\" entry 0: item 0 is not a string"},
        {"\"given\": [\"a\\u0000b\"]", "run.json:1:"},
        {"\"given\": [\"\xc3\x28\"]", "run.json:1:"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char doc[1024];
        snprintf(doc, sizeof doc,
                 "{\"record_version\": 1, \"ampscope_version\": \"a\", \"git_revision\": \"b\", "
                 "\"backend\": \"c\", \"device\": \"d\", \"start_time\": null, \"end_time\": "
                 "null, %s, \"options\": {}}",
                 broken[i].lists);
        put_file(path, doc);
        ck_assert_ptr_null(rec_run_read(path, msg, sizeof msg));
        ASSERT_MSG(msg, path);
        ASSERT_MSG(msg, broken[i].part);
    }
}
END_TEST

static Suite *record_json_suite(void)
{
    Suite *s = suite_create("analyze_record_json");
    TCase *tc = tcase_create("record_json");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, run_json_round_trip);
    tcase_add_test(tc, run_json_rejects);
    tcase_add_test(tc, run_json_given);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_json_suite()); }
