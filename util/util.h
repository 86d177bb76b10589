/* util.h: the small helpers every floor above emulate/ shares, so that none
 * keeps a copy: an error message into the caller's buffer (error.c), the
 * removal of a directory tree (tree.c), a monotonic clock (clock.c) and the
 * "stop after this step" flag that SIGINT and SIGTERM raise (signals.c).
 *
 * util/ sits right above emulate/ and includes nothing of the project: any
 * library may link ampscope_util.  Nothing here prints, exits or aborts.
 */
#ifndef AMPSCOPE_UTIL_H
#define AMPSCOPE_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a printf-style message into msg (at most msg_len bytes, always
 * terminated; nothing when msg is NULL or msg_len is 0) and returns status:
 * `return ut_fail(msg, len, AN_EIO, "%s: %s", path, strerror(errno));` */
int ut_fail(char *msg, size_t msg_len, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Removes path and, when it is a directory, everything under it, depth
 * first.  Symbolic links are removed, never followed (a link to a folder
 * outside the tree leaves that folder alone).  An entry that vanishes on
 * the way, or a path that does not exist, is not an error.  0, or -1 with
 * errno set by the removal that failed. */
int ut_remove_tree(const char *path);

/* The first executable `name` in a directory of $PATH (empty entries skipped) into path
 * (size bytes); false when there is none. */
bool ut_find_on_path(const char *name, char *path, size_t size);

/* CLOCK_MONOTONIC in seconds: for durations, not dates. */
double ut_seconds(void);
/* The CPU time of the whole process (every thread), in seconds
 * (CLOCK_PROCESS_CPUTIME_ID): what a computation costs whatever else runs
 * on the machine. */
double ut_cpu_seconds(void);

/* Installs one handler for SIGINT and SIGTERM that records the signal's
 * number for ut_stop_requested; the dispositions it replaces are kept for
 * ut_restore_signals.  restart false: a blocking call (waitpid, nanosleep)
 * returns EINTR when the signal comes, so a loop around it sees the flag at
 * once; true: SA_RESTART, the call goes on.  The flag is not cleared here
 * (a stop asked for before stays asked for).  0, or -1 with errno. */
int ut_stop_on_signals(bool restart);
/* The number of the last SIGINT or SIGTERM received since the flag was
 * last cleared, or 0. */
int ut_stop_requested(void);
/* Records sig as if it had come (a caller that must wind down for its own
 * reason, such as an MPI peer it can no longer hear). */
void ut_stop_set(int sig);
/* Forgets a signal received before. */
void ut_stop_clear(void);
/* Puts back the dispositions the last ut_stop_on_signals replaced. */
void ut_restore_signals(void);

#ifdef __cplusplus
}
#endif
#endif
