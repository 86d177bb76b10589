/* test_util: util/ (util.h): a nested tree with a symbolic link removed
 * without following the link, the stop flag raised by SIGINT and SIGTERM
 * (with and without SA_RESTART), the clock's monotony, and ut_fail's
 * format, truncation and status. */
#define _XOPEN_SOURCE 700 /* mkdtemp, symlink, kill */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "util.h"

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("x\n", f);
    ck_assert_int_eq(fclose(f), 0);
}

static void join(char *buf, size_t len, const char *dir, const char *name)
{
    ck_assert_int_lt(snprintf(buf, len, "%s/%s", dir, name), (int)len);
}

/* ---- tree removal ------------------------------------------------------------------------ */
START_TEST(tree_nested_with_symlink)
{
    char base[64] = "/tmp/ampscope-util-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    char tree[128], outside[128], p[256], q[256];
    join(tree, sizeof tree, base, "tree");
    join(outside, sizeof outside, base, "outside");
    ck_assert_int_eq(mkdir(tree, 0700), 0);
    ck_assert_int_eq(mkdir(outside, 0700), 0);
    join(p, sizeof p, outside, "keep.txt");
    make_file(p);
    /* tree/a/b/c/deep.txt, tree/a/one.txt, tree/top.txt, tree/a/link -> outside */
    join(p, sizeof p, tree, "a");
    ck_assert_int_eq(mkdir(p, 0700), 0);
    join(p, sizeof p, tree, "a/b");
    ck_assert_int_eq(mkdir(p, 0700), 0);
    join(p, sizeof p, tree, "a/b/c");
    ck_assert_int_eq(mkdir(p, 0700), 0);
    join(p, sizeof p, tree, "a/b/c/deep.txt");
    make_file(p);
    join(p, sizeof p, tree, "a/one.txt");
    make_file(p);
    join(p, sizeof p, tree, "top.txt");
    make_file(p);
    join(p, sizeof p, tree, "a/link");
    ck_assert_int_eq(symlink(outside, p), 0);
    join(q, sizeof q, tree, "dangling");
    ck_assert_int_eq(symlink("/nonexistent/ampscope", q), 0);

    ck_assert_int_eq(ut_remove_tree(tree), 0);
    struct stat st;
    ck_assert_int_ne(lstat(tree, &st), 0);
    /* the link was removed, not followed */
    join(p, sizeof p, outside, "keep.txt");
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert(S_ISREG(st.st_mode));

    /* nothing there: not an error */
    ck_assert_int_eq(ut_remove_tree(tree), 0);
    /* a plain file alone */
    ck_assert_int_eq(ut_remove_tree(p), 0);
    ck_assert_int_ne(lstat(p, &st), 0);
    /* a link given as the path: the link goes, its target stays */
    join(p, sizeof p, base, "link");
    ck_assert_int_eq(symlink(outside, p), 0);
    ck_assert_int_eq(ut_remove_tree(p), 0);
    ck_assert_int_ne(lstat(p, &st), 0);
    ck_assert_int_eq(stat(outside, &st), 0);

    ck_assert_int_eq(ut_remove_tree(base), 0);
    ck_assert_int_ne(lstat(base, &st), 0);
}
END_TEST

START_TEST(tree_failure_sets_errno)
{
    if (geteuid() == 0) return; /* root removes from a read-only folder */
    char base[64] = "/tmp/ampscope-util-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    char sub[128], p[256];
    join(sub, sizeof sub, base, "ro");
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    join(p, sizeof p, sub, "f");
    make_file(p);
    ck_assert_int_eq(chmod(sub, 0500), 0);
    errno = 0;
    ck_assert_int_eq(ut_remove_tree(sub), -1);
    ck_assert_int_eq(errno, EACCES);
    ck_assert_int_eq(chmod(sub, 0700), 0);
    ck_assert_int_eq(ut_remove_tree(base), 0);
}
END_TEST

/* ---- the stop flag ----------------------------------------------------------------------- */
START_TEST(stop_flag)
{
    ut_stop_clear();
    ck_assert_int_eq(ut_stop_requested(), 0);
    ck_assert_int_eq(ut_stop_on_signals(false), 0);
    ck_assert_int_eq(raise(SIGTERM), 0); /* the process survives: the handler took it */
    ck_assert_int_eq(ut_stop_requested(), SIGTERM);
    ck_assert_int_eq(raise(SIGINT), 0);
    ck_assert_int_eq(ut_stop_requested(), SIGINT); /* the last one */
    /* installing again does not forget a stop asked for */
    ck_assert_int_eq(ut_stop_on_signals(true), 0);
    ck_assert_int_eq(ut_stop_requested(), SIGINT);
    ut_stop_set(SIGTERM); /* without a signal */
    ck_assert_int_eq(ut_stop_requested(), SIGTERM);
    ut_stop_clear();
    ck_assert_int_eq(ut_stop_requested(), 0);
}
END_TEST

/* Without SA_RESTART a sleep is cut short by the signal (what the sweep
 * benchmark's waitpid loop needs); the flags are the handler's. */
START_TEST(stop_flag_restart_choice)
{
    struct sigaction sa;
    ck_assert_int_eq(ut_stop_on_signals(false), 0);
    ck_assert_int_eq(sigaction(SIGINT, NULL, &sa), 0);
    ck_assert((sa.sa_flags & SA_RESTART) == 0);
    ck_assert_int_eq(ut_stop_on_signals(true), 0);
    ck_assert_int_eq(sigaction(SIGTERM, NULL, &sa), 0);
    ck_assert((sa.sa_flags & SA_RESTART) != 0);

    ck_assert_int_eq(ut_stop_on_signals(false), 0);
    ut_stop_clear();
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* the child sends SIGTERM to the parent while it sleeps */
        const struct timespec wait = {0, 50 * 1000 * 1000};
        nanosleep(&wait, NULL);
        kill(getppid(), SIGTERM);
        _exit(0);
    }
    struct timespec ts = {5, 0}, left;
    const double t0 = ut_seconds();
    const int rc = nanosleep(&ts, &left);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(errno, EINTR);
    ck_assert_double_lt(ut_seconds() - t0, 4.0);
    ck_assert_int_eq(ut_stop_requested(), SIGTERM);
    ut_stop_clear();
}
END_TEST

START_TEST(stop_flag_restore)
{
    struct sigaction sa, got;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    ck_assert_int_eq(sigaction(SIGINT, &sa, NULL), 0);
    ck_assert_int_eq(sigaction(SIGTERM, &sa, NULL), 0);
    ck_assert_int_eq(ut_stop_on_signals(false), 0);
    ck_assert_int_eq(sigaction(SIGINT, NULL, &got), 0);
    ck_assert(got.sa_handler != SIG_IGN);
    ut_restore_signals();
    ck_assert_int_eq(sigaction(SIGINT, NULL, &got), 0);
    ck_assert(got.sa_handler == SIG_IGN);
    ck_assert_int_eq(sigaction(SIGTERM, NULL, &got), 0);
    ck_assert(got.sa_handler == SIG_IGN);
    ut_restore_signals(); /* a second time: nothing to put back */
    ck_assert_int_eq(sigaction(SIGTERM, NULL, &got), 0);
    ck_assert(got.sa_handler == SIG_IGN);
}
END_TEST

/* ---- the clock --------------------------------------------------------------------------- */
START_TEST(clock_monotonic)
{
    double last = ut_seconds();
    ck_assert(last >= 0);
    for (int i = 0; i < 100000; i++) {
        const double t = ut_seconds();
        ck_assert(t >= last);
        last = t;
    }
    const double t0 = ut_seconds();
    const struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    const double dt = ut_seconds() - t0;
    ck_assert_double_ge(dt, 0.029);
    ck_assert_double_lt(dt, 5.0);
}
END_TEST

/* ---- ut_fail ----------------------------------------------------------------------------- */
START_TEST(fail_format)
{
    char msg[64];
    ck_assert_int_eq(ut_fail(msg, sizeof msg, -2, "%s: %s (%d)", "run.json", "bad", 7), -2);
    ck_assert_str_eq(msg, "run.json: bad (7)");
    ck_assert_int_eq(ut_fail(msg, sizeof msg, 0, "plain"), 0);
    ck_assert_str_eq(msg, "plain");
}
END_TEST

START_TEST(fail_truncation)
{
    char msg[8];
    memset(msg, 'z', sizeof msg);
    ck_assert_int_eq(ut_fail(msg, sizeof msg, -4, "%s", "0123456789"), -4);
    ck_assert_str_eq(msg, "0123456");
    /* one byte: only the terminator */
    char one[2] = {'q', 'q'};
    ck_assert_int_eq(ut_fail(one, 1, -1, "abc"), -1);
    ck_assert_int_eq(one[0], '\0');
    ck_assert_int_eq(one[1], 'q');
    /* no buffer, or a zero length: nothing written, the status still comes back */
    ck_assert_int_eq(ut_fail(NULL, 10, -3, "x"), -3);
    ck_assert_int_eq(ut_fail(one, 0, -5, "x"), -5);
    ck_assert_int_eq(one[1], 'q');
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("util");
    tcase_add_test(tc, tree_nested_with_symlink);
    tcase_add_test(tc, tree_failure_sets_errno);
    tcase_add_test(tc, stop_flag);
    tcase_add_test(tc, stop_flag_restart_choice);
    tcase_add_test(tc, stop_flag_restore);
    tcase_add_test(tc, clock_monotonic);
    tcase_add_test(tc, fail_format);
    tcase_add_test(tc, fail_truncation);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(util_suite()); }
