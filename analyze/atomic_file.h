/* atomic_file.h: the base of analyze/: its status codes and the atomic
 * replacement of a file.
 *
 * Status codes.  Every analyze/ function that can fail returns 0 (AN_OK) or
 * a negative AN_E* code, and writes one message into the caller's buffer
 * (msg, msg_len; msg may be NULL; util.h's ut_fail) naming the file and, for a system call,
 * the call and its errno text: "run/run.json: rename run/run.json.tmp.42 ->
 * run/run.json: Permission denied".  Nothing here prints, exits or aborts.
 *
 * Atomic files.  A file that must never be seen half-written (run.json, a
 * checkpoint, a completion marker) is written to "NAME.tmp.<pid>" in the
 * same directory, flushed and fsync'ed, renamed over NAME, and then the
 * directory is fsync'ed so the rename itself survives a crash.  Readers see
 * the old NAME or the new one, never a mixture; on any failure the temporary
 * file is removed and NAME is left as it was (except when only the final
 * fsync of the directory fails: NAME is then new but perhaps not durable).  Two writers of the same
 * NAME in one process at once are not supported (they share the temporary name).
 */
#ifndef AMPSCOPE_ATOMIC_FILE_H
#define AMPSCOPE_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AN_OK      0
#define AN_EINVAL  (-1) /* a bad argument: NULL, a name the schema does not allow, a NaN option */
#define AN_EIO     (-2) /* a system call failed; the message has its errno text */
#define AN_EFORMAT (-3) /* a file's content is malformed or does not match the schema */
#define AN_ENOMEM  (-4) /* an allocation failed */

/* A file being written atomically.  Write with af_put, or through fp
 * (stdio) directly: af_commit checks the stream's error flag, so individual
 * writes need not be checked; af_put also keeps the first failure's errno
 * for the message. */
typedef struct af_file {
    FILE *fp;
    char *path; /* NAME */
    char *tmp;  /* NAME.tmp.<pid> */
    int err;    /* errno of the first failed af_put, or 0 */
} af_file;

/* Creates (or truncates) path's temporary file and opens fp on it. */
int af_begin(af_file *f, const char *path, char *msg, size_t msg_len);
/* Writes n bytes (after a failure, nothing more). */
void af_put(af_file *f, const void *data, size_t n);
/* Flushes, fsyncs and closes the temporary file, renames it over the path
 * and fsyncs the directory.  On failure the temporary file is removed.
 * Either way f is finished (its fields released). */
int af_commit(af_file *f, char *msg, size_t msg_len);
/* Gives up: closes and removes the temporary file.  Harmless on a finished
 * or zeroed af_file. */
void af_abort(af_file *f);

/* For a file another program wrote (gnuplot's figures): tmp, complete and
 * checked by the caller, is synced and renamed over path, and the directory
 * synced.  On failure tmp is removed and path left as it was. */
int af_install(const char *tmp, const char *path, char *msg, size_t msg_len);

/* The whole of it for a small file: path's content becomes data[0..n). */
int af_write(const char *path, const void *data, size_t n, char *msg, size_t msg_len);

/* Removes the temporary files "NAME.tmp.<pid>" that writers of path killed
 * in the middle of a write (SIGKILL, a crash) left behind: those whose pid
 * is this process's or no live process's on this host.  A live writer's
 * file is left alone.  Call it before writing path again (a resumed run).
 * Returns the number removed (>= 0), or AN_EIO with the directory or file
 * that could not be read or removed. */
int af_remove_stale(const char *path, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
