/* test_atomic_file: af_write replaces a file atomically, and every failure
 * (a missing directory, a file that cannot be created, renamed or
 * written) leaves the old file and no temporary behind.  Every test works
 * in a fresh directory under a mkdtemp base that the fixture removes. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record.h"
#include "scratch.h"

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

static Suite *atomic_file_suite(void)
{
    Suite *s = suite_create("analyze_atomic_file");
    TCase *tc = tcase_create("atomic_file");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, atomic_write_replaces);
    tcase_add_test(tc, atomic_missing_directory);
    tcase_add_test(tc, atomic_create_failure_keeps_old);
    tcase_add_test(tc, atomic_rename_failure_removes_temp);
    tcase_add_test(tc, atomic_write_failure_keeps_old);
    tcase_add_test(tc, atomic_unwritable_directory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(atomic_file_suite()); }
