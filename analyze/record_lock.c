/* record_lock.c: one writer per record folder (record_lock.h): an
 * exclusive, non-blocking flock on DIR/.ampscope.lock, whose text names
 * the holder ("ampscope KIND PID\n"). */
#define _GNU_SOURCE /* flock, O_CLOEXEC */

#include "record_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The kind and pid of a lock file's text; false when it has none. */
static bool parse_text(int fd, char *kind, size_t kind_len, long *pid)
{
    char text[128];
    const ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return false;
    text[n] = '\0';
    char k[REC_LOCK_KIND_MAX];
    long p;
    if (sscanf(text, "ampscope %31s %ld", k, &p) != 2 || p <= 0) return false;
    snprintf(kind, kind_len, "%s", k);
    *pid = p;
    return true;
}

static bool alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

/* The holder of a lock another process took: its text is written just
 * after the lock, so a moment is allowed for it (a text naming a dead
 * process is an earlier writer's). */
static bool holder(int fd, char *kind, size_t kind_len, long *pid)
{
    for (int tries = 0; tries < 50; tries++) {
        if (parse_text(fd, kind, kind_len, pid) && alive(*pid)) return true;
        const struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return false;
}

int rec_lock_write_text(int fd, const char *dir, const char *kind, char *msg, size_t msg_len)
{
    char text[128];
    const int n = snprintf(text, sizeof text, "ampscope %s %ld\n", kind, (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
        return ut_fail(msg, msg_len, AN_EIO, "%s/%s: %s", dir, REC_LOCK_FILE, strerror(errno));
    return AN_OK;
}

int rec_lock_take(const char *dir, const char *kind, bool write_text, int *fd, bool *created,
                  char *msg, size_t msg_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, REC_LOCK_FILE);
    *fd = -1;
    bool made = false;
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0 && errno == ENOENT) {
        f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        made = f >= 0;
        if (f < 0 && errno == EEXIST) f = open(path, O_RDWR | O_CLOEXEC);
    }
    if (f < 0) return ut_fail(msg, msg_len, AN_EIO, "%s: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        int rc;
        char k[REC_LOCK_KIND_MAX];
        long pid;
        if (err != EWOULDBLOCK)
            rc = ut_fail(msg, msg_len, AN_EIO, "flock %s: %s", path, strerror(err));
        else if (holder(f, k, sizeof k, &pid))
            rc = ut_fail(msg, msg_len, AN_EINVAL,
                         "%s is in use by ampscope %s (pid %ld); wait for it or stop it", dir, k,
                         pid);
        else
            rc = ut_fail(msg, msg_len, AN_EINVAL,
                         "%s is in use by another process (it holds %s); wait for it or stop it",
                         dir, path);
        close(f);
        return rc;
    }
    if (write_text) {
        const int rc = rec_lock_write_text(f, dir, kind, msg, msg_len);
        if (rc) {
            if (made) unlink(path);
            close(f);
            return rc;
        }
    }
    *fd = f;
    if (created) *created = made;
    return AN_OK;
}

void rec_lock_kind(const char *dir, char *kind, size_t kind_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, REC_LOCK_FILE);
    kind[0] = '\0';
    const int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return;
    long pid;
    if (!parse_text(f, kind, kind_len, &pid)) kind[0] = '\0';
    close(f);
}

void rec_lock_release(int fd)
{
    if (fd >= 0) close(fd);
}
