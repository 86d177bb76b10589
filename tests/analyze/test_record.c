/* test_record: atomic files, the CSV logs (writing, resuming, reading back)
 * and run.json.  Every test works in a fresh directory under a mkdtemp
 * base that the fixture removes.  Expected texts and numbers are written
 * out by hand. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "scratch.h"
#include "record.h"

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* The whole content of a file (NUL-terminated, malloc'ed), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    const size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void assert_file(const char *path, const char *expected)
{
    char *got = slurp(path);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, expected);
    free(got);
}

/* The number of entries of dir (without . and ..). */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

#define ASSERT_MSG(msg, part)                                                                      \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' lacks '%s'", (msg), (part))

static bool same_f32(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static bool same_f64(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* ---- atomic files ----------------------------------------------------------------------- */
START_TEST(atomic_write_replaces)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "marker");
    ck_assert_int_eq(af_write(path, "old\n", 4, msg, sizeof msg), AN_OK);
    assert_file(path, "old\n");
    ck_assert_int_eq(af_write(path, "new content\n", 12, msg, sizeof msg), AN_OK);
    assert_file(path, "new content\n");
    ck_assert_int_eq(dir_entries(dir), 1); /* no NAME.tmp.<pid> left */
    ck_assert_int_eq(af_write(path, NULL, 0, msg, sizeof msg), AN_OK);
    assert_file(path, "");

    /* af_begin / af_abort: nothing changes, the temporary file is gone */
    af_file f;
    ck_assert_int_eq(af_begin(&f, path, msg, sizeof msg), AN_OK);
    fputs("half", f.fp);
    ck_assert_int_eq(dir_entries(dir), 2);
    af_abort(&f);
    af_abort(&f); /* harmless twice */
    ck_assert_int_eq(dir_entries(dir), 1);
    assert_file(path, "");
}
END_TEST

START_TEST(atomic_missing_directory)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "missing/run.json");
    ck_assert_int_eq(af_write(path, "x", 1, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "No such file or directory");
    ck_assert_int_eq(af_write("", "x", 1, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(af_write(path, NULL, 1, msg, sizeof msg), AN_EINVAL);
}
END_TEST

/* The temporary name is taken by a directory: creating it fails. */
START_TEST(atomic_create_failure_keeps_old)
{
    char dir[128], path[256], tmp[300], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "run.json");
    put_file(path, "old\n");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    ck_assert_int_eq(af_write(path, "new\n", 4, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, tmp);
    ASSERT_MSG(msg, "Is a directory");
    assert_file(path, "old\n");
    rmdir(tmp);
}
END_TEST

/* NAME is a non-empty directory: the rename fails, the temporary goes. */
START_TEST(atomic_rename_failure_removes_temp)
{
    char dir[128], path[256], inner[300], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "taken");
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    put_file(inner, "kept\n");
    ck_assert_int_eq(af_write(path, "new\n", 4, msg, sizeof msg), AN_EIO);
    ASSERT_MSG(msg, "rename");
    ASSERT_MSG(msg, path);
    ck_assert_int_eq(dir_entries(dir), 1);
    assert_file(inner, "kept\n");
}
END_TEST

/* A write that fails midway (the file-size limit stands in for a full
 * disk, and works when the tests run as root). */
START_TEST(atomic_write_failure_keeps_old)
{
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "checkpoint.safetensors");
    put_file(path, "old\n");
    struct rlimit saved, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = saved;
    small.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    const size_t n = 1 << 20;
    char *big = calloc(n, 1);
    const int status = af_write(path, big, n, msg, sizeof msg);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, SIG_DFL);
    free(big);
    ck_assert_int_eq(status, AN_EIO);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "File too large");
    assert_file(path, "old\n");
    ck_assert_int_eq(dir_entries(dir), 1);
}
END_TEST

/* A directory without write permission (not enforced for root). */
START_TEST(atomic_unwritable_directory)
{
    if (geteuid() == 0) return; /* root writes anywhere; the other failures cover this path */
    char dir[128], path[256], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "run.json");
    put_file(path, "old\n");
    ck_assert_int_eq(chmod(dir, 0500), 0);
    const int status = af_write(path, "new\n", 4, msg, sizeof msg);
    chmod(dir, 0700);
    ck_assert_int_eq(status, AN_EIO);
    ASSERT_MSG(msg, path);
    ASSERT_MSG(msg, "Permission denied");
    assert_file(path, "old\n");
}
END_TEST

/* ---- names, bins and times ------------------------------------------------------------------ */
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
    ck_assert_ptr_null(rec_table_file((rec_table)7));
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

/* ---- the logs: header, appending, resuming ------------------------------------------------- */
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

/* ---- round trips ------------------------------------------------------------------------------
 */
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

/* A hand-made ak_stats: 10 elements, 2 zeros, 7 finite nonzero, 1 inf. */
static ak_stats hand_stats(void)
{
    ak_stats s;
    memset(&s, 0, sizeof s);
    s.count = 10;
    s.zero = 2;
    s.nonzero = 7;
    s.nonfinite = 1;
    s.flushed = 3;
    s.subnormal = 2;
    s.overflowed = 1;
    s.amax = 65504.0;
    s.hist[AK_HIST_ZERO] = 2;
    s.hist[AK_HIST_BIN(AK_HIST_EMIN)] = 1;
    s.hist[AK_HIST_BIN(-24)] = 3;
    s.hist[AK_HIST_BIN(15)] = 2;
    s.hist[AK_HIST_BIN(AK_HIST_EMAX)] = 1;
    s.hist[AK_HIST_NONFINITE] = 1;
    return s;
}

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
static void write_text(const char *dir, const char *file, const char *text)
{
    char path[256];
    path_in(path, sizeof path, dir, file);
    put_file(path, text);
}

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

/* ---- the readers' rejections -------------------------------------------------------------------
 */
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

/* ---- run.json
 * ------------------------------------------------------------------------------------ */
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

static Suite *record_suite(void)
{
    Suite *s = suite_create("analyze_record");
    TCase *tc = tcase_create("record");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, atomic_write_replaces);
    tcase_add_test(tc, atomic_missing_directory);
    tcase_add_test(tc, atomic_create_failure_keeps_old);
    tcase_add_test(tc, atomic_rename_failure_removes_temp);
    tcase_add_test(tc, atomic_write_failure_keeps_old);
    tcase_add_test(tc, atomic_unwritable_directory);
    tcase_add_test(tc, names_bins_times);
    tcase_add_test(tc, log_header_once_and_appends);
    tcase_add_test(tc, log_resume_truncates);
    tcase_add_test(tc, log_open_rejects);
    tcase_add_test(tc, writers_reject);
    tcase_add_test(tc, steps_round_trip);
    tcase_add_test(tc, tensors_round_trip);
    tcase_add_test(tc, updates_round_trip);
    tcase_add_test(tc, hist_only_nonzero_bins);
    tcase_add_test(tc, eval_round_trip);
    tcase_add_test(tc, summarize_run);
    tcase_add_test(tc, trace_round_trip);
    tcase_add_test(tc, trace_writers_reject);
    tcase_add_test(tc, trace_resume_truncates);
    tcase_add_test(tc, readers_reject);
    tcase_add_test(tc, run_json_round_trip);
    tcase_add_test(tc, run_json_rejects);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_suite()); }
