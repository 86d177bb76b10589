/* atomic_file.c: status messages and atomic file replacement (atomic_file.h). */
#define _POSIX_C_SOURCE 200809L /* fdopen, fsync, kill */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void af_release(af_file *f)
{
    free(f->path);
    free(f->tmp);
    f->fp = NULL;
    f->path = NULL;
    f->tmp = NULL;
    f->err = 0;
}

int af_begin(af_file *f, const char *path, char *msg, size_t msg_len)
{
    if (!f) return ut_fail(msg, msg_len, AN_EINVAL, "af_begin: f is NULL");
    f->fp = NULL;
    f->path = f->tmp = NULL;
    f->err = 0;
    if (!path || !*path) return ut_fail(msg, msg_len, AN_EINVAL, "af_begin: empty path");
    const size_t n = strlen(path);
    const size_t tmp_len = n + 32;
    f->path = malloc(n + 1);
    f->tmp = malloc(tmp_len);
    if (!f->path || !f->tmp) {
        af_release(f);
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    }
    memcpy(f->path, path, n + 1);
    snprintf(f->tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
    /* O_TRUNC, not O_EXCL: a leftover NAME.tmp.<pid> can only be from a dead
     * process that had our pid, and is garbage. */
    const int fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int e = errno;
        ut_fail(msg, msg_len, AN_EIO, "%s: cannot create %s: %s", path, f->tmp, strerror(e));
        af_release(f);
        return AN_EIO;
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        const int e = errno;
        close(fd);
        unlink(f->tmp);
        ut_fail(msg, msg_len, AN_EIO, "%s: fdopen %s: %s", path, f->tmp, strerror(e));
        af_release(f);
        return AN_EIO;
    }
    return AN_OK;
}

/* The directory holding path ("." for a bare name), allocated. */
static int parent_dir(const char *path, char **dir)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (slash && n == 0) n = 1; /* "/name": the root */
    *dir = malloc(n + 1);
    if (!*dir) return AN_ENOMEM;
    if (slash)
        memcpy(*dir, path, n);
    else
        (*dir)[0] = '.';
    (*dir)[n] = '\0';
    return AN_OK;
}

/* Renames the written, synced tmp over path, then makes the rename durable
 * by syncing the directory.  On a failed rename tmp is removed. */
static int install(const char *tmp, const char *path, char *msg, size_t msg_len)
{
    if (rename(tmp, path) != 0) {
        const int e = errno;
        unlink(tmp);
        return ut_fail(msg, msg_len, AN_EIO, "%s: rename %s -> %s: %s", path, tmp, path,
                       strerror(e));
    }
    /* The rename is durable only once the directory entry is on disk. */
    char *dir = NULL;
    int status = AN_OK;
    if (parent_dir(path, &dir) != AN_OK) {
        status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    } else {
        const int dfd = open(dir, O_RDONLY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0)
            status = ut_fail(msg, msg_len, AN_EIO, "%s: fsync of directory %s: %s", path, dir,
                             strerror(errno));
        if (dfd >= 0) close(dfd);
    }
    free(dir);
    return status;
}

int af_commit(af_file *f, char *msg, size_t msg_len)
{
    if (!f || !f->fp) return ut_fail(msg, msg_len, AN_EINVAL, "af_commit: no file being written");
    int status = AN_OK;
    const char *what = NULL;
    int e = 0;
    /* fflush retries what a failed write left in the buffer, so its errno
     * is the cause; a bare error flag (no pending data) has lost it. */
    if (f->err) {
        what = "write";
        e = f->err;
    } else if (fflush(f->fp) != 0) {
        what = "write";
        e = errno;
    } else if (ferror(f->fp)) {
        what = "write";
        e = EIO;
    } else if (fsync(fileno(f->fp)) != 0) {
        what = "fsync";
        e = errno;
    }
    if (fclose(f->fp) != 0 && !what) {
        what = "close";
        e = errno;
    }
    f->fp = NULL;
    if (what) {
        status = ut_fail(msg, msg_len, AN_EIO, "%s: %s %s: %s", f->path, what, f->tmp, strerror(e));
        unlink(f->tmp);
    } else {
        status = install(f->tmp, f->path, msg, msg_len);
    }
    af_release(f);
    return status;
}

int af_install(const char *tmp, const char *path, char *msg, size_t msg_len)
{
    if (!tmp || !path || !*tmp || !*path)
        return ut_fail(msg, msg_len, AN_EINVAL, "no temporary file or path");
    const int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        const int e = errno;
        if (fd >= 0) close(fd);
        unlink(tmp);
        return ut_fail(msg, msg_len, AN_EIO, "%s: fsync %s: %s", path, tmp, strerror(e));
    }
    close(fd);
    return install(tmp, path, msg, msg_len);
}

void af_put(af_file *f, const void *data, size_t n)
{
    if (!f || !f->fp || f->err || n == 0) return;
    errno = 0;
    if (fwrite(data, 1, n, f->fp) != n) f->err = errno ? errno : EIO;
}

void af_abort(af_file *f)
{
    if (!f) return;
    if (f->fp) fclose(f->fp);
    if (f->tmp) unlink(f->tmp);
    af_release(f);
}

int af_write(const char *path, const void *data, size_t n, char *msg, size_t msg_len)
{
    if (!data && n > 0) return ut_fail(msg, msg_len, AN_EINVAL, "af_write: data is NULL");
    af_file f;
    const int status = af_begin(&f, path, msg, msg_len);
    if (status != AN_OK) return status;
    af_put(&f, data, n);
    return af_commit(&f, msg, msg_len);
}

int af_remove_stale(const char *path, char *msg, size_t msg_len)
{
    if (!path || !*path) return ut_fail(msg, msg_len, AN_EINVAL, "af_remove_stale: empty path");
    char *dir = NULL;
    if (parent_dir(path, &dir) != AN_OK)
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const size_t base_len = strlen(base);
    DIR *d = opendir(dir);
    if (!d) {
        const int e = errno;
        ut_fail(msg, msg_len, AN_EIO, "%s: cannot read directory %s: %s", path, dir, strerror(e));
        free(dir);
        return AN_EIO;
    }
    int removed = 0, status = AN_OK;
    const struct dirent *ent;
    while (status == AN_OK && (ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, ".tmp.", 5) != 0)
            continue;
        const char *digits = name + base_len + 5;
        char *end;
        errno = 0;
        const long pid = strtol(digits, &end, 10);
        if (!*digits || *end || errno || pid <= 0) continue; /* not one of af_begin's names */
        /* kill(pid, 0) fails with ESRCH only when no such process exists */
        const bool dead = pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
        if (!dead) continue;
        const size_t n = strlen(dir) + strlen(name) + 2;
        char *full = malloc(n);
        if (!full) {
            status = ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
            break;
        }
        snprintf(full, n, "%s/%s", dir, name);
        if (unlink(full) == 0)
            removed++;
        else if (errno != ENOENT)
            status = ut_fail(msg, msg_len, AN_EIO, "%s: cannot remove %s: %s", path, full,
                             strerror(errno));
        free(full);
    }
    closedir(d);
    free(dir);
    return status == AN_OK ? removed : status;
}
