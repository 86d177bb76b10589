/* record_owner.c: what kind of record a folder is, and the checks that
 * keep a command's output off its inputs and off other records
 * (record_lock.h).  Paths are compared by device and inode, never by
 * text, so "run", "./run", "run/" and a link to it are one folder. */
#define _GNU_SOURCE /* realpath */

#include "record_lock.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "util.h"

/* ---- the files ampscope writes, per kind ----------------------------------------------------- */
/* A training run's own files, and what the studies add beside them: a
 * sweep's train.log and done.json (experiments/sweep.h), reproduce's
 * wall_seconds. */
static const char *const train_files[] = {REC_RUN_JSON,      REC_STEPS_CSV,
                                          REC_TENSORS_CSV,   REC_UPDATES_CSV,
                                          REC_HIST_CSV,      REC_EVAL_CSV,
                                          REC_TRACE_CSV,     REC_TRACE_HIST_CSV,
                                          REC_ALLREDUCE_CSV, REC_CHECKPOINT,
                                          "train.log",       "done.json",
                                          "wall_seconds",    NULL};
static const char *const sweep_files[] = {"sweep.json", "summary.csv", "sweep.lock", NULL};

static bool listed(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0) return true;
    return false;
}

static bool ends_with(const char *s, const char *end)
{
    const size_t n = strlen(s), m = strlen(end);
    return n > m && strcmp(s + n - m, end) == 0;
}

/* name without the ".tmp.PID" of an atomic writer's temporary file; true
 * when it had one */
static bool without_tmp(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s", name);
    char *t = strstr(out, ".tmp.");
    if (!t || !t[5] || strspn(t + 5, "0123456789") != strlen(t + 5)) return false;
    *t = '\0';
    return true;
}

/* Whether an entry of a folder of some kind is ampscope's: path is the
 * entry, shown its name as messages give it, name its last part. */
typedef bool entry_ok(const char *path, const char *shown, const char *name, bool is_dir,
                      char *foreign, size_t len);

/* Every entry of dir passes ok (lock files aside): their number (a killed
 * atomic write's temporary file, the only trace of a writer killed before
 * its first file, is not counted), or -1 with the first that does not in
 * foreign.  An unreadable folder counts as foreign. */
static long each_entry(const char *dir, const char *shown, entry_ok *ok, char *foreign, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (foreign && !foreign[0]) snprintf(foreign, len, "%s", shown[0] ? shown : ".");
        return -1;
    }
    long n = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (strcmp(e->d_name, REC_LOCK_FILE) == 0) continue;
        char path[4200], name_shown[4200], base[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(name_shown, sizeof name_shown, "%s%s%s", shown, shown[0] ? "/" : "", e->d_name);
        const bool tmp = without_tmp(e->d_name, base, sizeof base);
        struct stat st;
        const bool is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        const bool plain = is_dir || (lstat(path, &st) == 0 && S_ISREG(st.st_mode));
        if (!plain || !ok(path, name_shown, base, is_dir, foreign, len)) {
            /* the deepest entry that is not ampscope's (named first) */
            if (foreign && !foreign[0]) snprintf(foreign, len, "%s", name_shown);
            closedir(d);
            return -1;
        }
        n += !tmp;
    }
    closedir(d);
    return n;
}

static bool train_entry(const char *path, const char *shown, const char *name, bool is_dir,
                        char *foreign, size_t len)
{
    (void)path, (void)shown, (void)foreign, (void)len;
    return !is_dir && listed(name, train_files);
}

/* runs/<run>: a training run each */
static bool run_entry(const char *path, const char *shown, const char *name, bool is_dir,
                      char *foreign, size_t len)
{
    (void)name;
    return is_dir && each_entry(path, shown, train_entry, foreign, len) >= 0;
}

static bool plots_entry(const char *path, const char *shown, const char *name, bool is_dir,
                        char *foreign, size_t len)
{
    (void)path, (void)shown, (void)foreign, (void)len;
    return !is_dir && ends_with(name, ".gp");
}

static bool report_entry(const char *path, const char *shown, const char *name, bool is_dir,
                         char *foreign, size_t len)
{
    if (is_dir)
        return strcmp(name, "plots") == 0 &&
               each_entry(path, shown, plots_entry, foreign, len) >= 0;
    return strcmp(name, "index.html") == 0 || ends_with(name, ".csv") || ends_with(name, ".png") ||
           ends_with(name, ".svg");
}

static bool runs_folder(const char *path, const char *shown, const char *name, bool is_dir,
                        char *foreign, size_t len)
{
    return is_dir && strcmp(name, "runs") == 0 &&
           each_entry(path, shown, run_entry, foreign, len) >= 0;
}

static bool sweep_entry(const char *path, const char *shown, const char *name, bool is_dir,
                        char *foreign, size_t len)
{
    if (is_dir) return runs_folder(path, shown, name, is_dir, foreign, len);
    return listed(name, sweep_files);
}

static bool reproduce_entry(const char *path, const char *shown, const char *name, bool is_dir,
                            char *foreign, size_t len)
{
    if (is_dir && strcmp(name, "runs") == 0)
        return runs_folder(path, shown, name, is_dir, foreign, len);
    return report_entry(path, shown, name, is_dir, foreign, len);
}

static bool nothing(const char *path, const char *shown, const char *name, bool is_dir,
                    char *foreign, size_t len)
{
    (void)path, (void)shown, (void)name, (void)is_dir, (void)foreign, (void)len;
    return false;
}

/* ---- kinds ----------------------------------------------------------------------------------- */
static const struct {
    rec_folder kind;
    const char *command, *name;
    entry_ok *entry;
} kinds[] = {
    {REC_FOLDER_TRAIN, "train", "a training run", train_entry},
    {REC_FOLDER_SWEEP, "sweep", "a sweep folder", sweep_entry},
    {REC_FOLDER_REPORT, "report", "a report", report_entry},
    {REC_FOLDER_REPRODUCE, "reproduce", "a reproduce folder", reproduce_entry},
    {REC_FOLDER_INSPECT, "inspect", "an inspect folder", report_entry},
};
#define N_KINDS (sizeof kinds / sizeof *kinds)

rec_folder rec_folder_of_command(const char *command)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (strcmp(command, kinds[i].command) == 0) return kinds[i].kind;
    return REC_FOLDER_FOREIGN;
}

const char *rec_folder_name(rec_folder k)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (kinds[i].kind == k) return kinds[i].name;
    switch (k) {
    case REC_FOLDER_ABSENT: return "nothing";
    case REC_FOLDER_NOT_DIR: return "not a directory";
    case REC_FOLDER_EMPTY: return "an empty folder";
    default: return "files ampscope did not write";
    }
}

static bool has(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The kind a folder's lock file or, for folders written before locks,
 * its marker files say; REC_FOLDER_FOREIGN when none. */
static rec_folder marked_kind(const char *dir)
{
    char kind[REC_LOCK_KIND_MAX];
    rec_lock_kind(dir, kind, sizeof kind);
    if (kind[0]) return rec_folder_of_command(kind);
    if (has(dir, "sweep.json") || has(dir, "sweep.lock")) return REC_FOLDER_SWEEP;
    if (has(dir, REC_RUN_JSON) || has(dir, REC_STEPS_CSV) || has(dir, REC_CHECKPOINT))
        return REC_FOLDER_TRAIN;
    if (has(dir, "runs")) return REC_FOLDER_REPRODUCE;
    if (has(dir, "index.html") || has(dir, "plots")) return REC_FOLDER_REPORT;
    return REC_FOLDER_FOREIGN;
}

rec_folder rec_folder_kind(const char *dir, char *foreign, size_t foreign_len)
{
    if (foreign && foreign_len) foreign[0] = '\0';
    struct stat st;
    if (stat(dir, &st) != 0) return errno == ENOENT ? REC_FOLDER_ABSENT : REC_FOLDER_NOT_DIR;
    if (!S_ISDIR(st.st_mode)) return REC_FOLDER_NOT_DIR;
    const rec_folder k = marked_kind(dir);
    entry_ok *ok = nothing;
    for (size_t i = 0; i < N_KINDS; i++)
        if (kinds[i].kind == k) ok = kinds[i].entry;
    const long n = each_entry(dir, "", ok, foreign, foreign_len);
    if (n == 0) return REC_FOLDER_EMPTY;
    return n < 0 ? REC_FOLDER_FOREIGN : k;
}

/* ---- paths ----------------------------------------------------------------------------------- */
static bool same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The canonical folder path is in, or for a path that does not exist the
 * canonical form of its deepest existing ancestor; false when none. */
static bool canonical_folder(const char *path, char *out)
{
    char work[PATH_MAX];
    snprintf(work, sizeof work, "%s", path);
    struct stat st;
    char real[PATH_MAX];
    /* an existing file (or link) stands where its target stands */
    if (stat(work, &st) == 0 && !S_ISDIR(st.st_mode) && realpath(work, real)) {
        snprintf(work, sizeof work, "%s", real);
        *strrchr(work, '/') = '\0';
        if (!work[0]) snprintf(work, sizeof work, "/");
        return realpath(work, out) != NULL;
    }
    for (;;) {
        size_t n = strlen(work);
        while (n > 1 && work[n - 1] == '/')
            work[--n] = '\0';
        char *slash = strrchr(work, '/');
        if (!slash)
            snprintf(work, sizeof work, ".");
        else if (slash == work)
            work[1] = '\0';
        else
            *slash = '\0';
        if (realpath(work, out)) return true;
        if (strcmp(work, ".") == 0 || strcmp(work, "/") == 0) return false;
    }
}

/* The first folder from dir upwards (dir included) that is the same as
 * target; its canonical path in found.  Stops at stop (may be NULL). */
static bool above(const char *dir, const struct stat *target, const struct stat *stop, char *found)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (;;) {
        struct stat st;
        if (stat(p, &st) == 0) {
            if (stop && same(&st, stop)) return false;
            if (same(&st, target)) {
                snprintf(found, PATH_MAX, "%s", p);
                return true;
            }
        }
        char *slash = strrchr(p, '/');
        if (!slash || p[1] == '\0') return false;
        if (slash == p)
            p[1] = '\0';
        else
            *slash = '\0';
    }
}

/* path inside (or the same as) folder: path's canonical form has folder above it */
static bool inside(const char *path, const struct stat *folder)
{
    char real[PATH_MAX], found[PATH_MAX];
    if (!realpath(path, real)) return false;
    return above(real, folder, NULL, found);
}

int rec_check_output(const char *option, const char *path, const char *owner,
                     const rec_input *inputs, size_t n_inputs, char *msg, size_t msg_len)
{
    struct stat out, in, own;
    const bool exists = stat(path, &out) == 0;
    const bool owned = owner && stat(owner, &own) == 0;
    char folder[PATH_MAX], found[PATH_MAX];
    const bool have_folder = canonical_folder(path, folder);
    for (size_t i = 0; i < n_inputs; i++) {
        if (!inputs[i].path || stat(inputs[i].path, &in) != 0) continue;
        if (exists && same(&out, &in))
            return ut_fail(msg, msg_len, AN_EINVAL, "%s %s is %s %s: write it elsewhere", option,
                           path, inputs[i].option, inputs[i].path);
        if (S_ISDIR(in.st_mode) && have_folder && above(folder, &in, owned ? &own : NULL, found))
            return ut_fail(msg, msg_len, AN_EINVAL, "%s %s lies inside %s %s: write it elsewhere",
                           option, path, inputs[i].option, inputs[i].path);
    }
    if (!have_folder) return AN_OK;
    /* the records above it, up to its owner */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", folder);
    for (;;) {
        struct stat st;
        if (stat(p, &st) == 0) {
            if (owned && same(&st, &own)) break;
            const rec_folder k = marked_kind(p);
            if (k == REC_FOLDER_TRAIN || k == REC_FOLDER_SWEEP || k == REC_FOLDER_REPRODUCE)
                return ut_fail(msg, msg_len, AN_EINVAL,
                               "%s %s lies inside %s (%s), which it does not own: write it "
                               "outside that folder",
                               option, path, rec_folder_name(k), p);
        }
        char *slash = strrchr(p, '/');
        if (!slash || p[1] == '\0') break;
        if (slash == p)
            p[1] = '\0';
        else
            *slash = '\0';
    }
    return AN_OK;
}

/* ---- taking an output folder ----------------------------------------------------------------- */
/* Removes every entry of dir but the lock (each one checked to be
 * ampscope's), saying in said what went. */
static int clear(const rec_out_dir *o, rec_folder k, char *said, size_t said_len, char *msg,
                 size_t msg_len)
{
    DIR *d = opendir(o->dir);
    if (!d) return ut_fail(msg, msg_len, AN_EIO, "%s: %s", o->dir, strerror(errno));
    char names[600] = "";
    size_t used = 0;
    long n = 0;
    int rc = AN_OK;
    const struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, REC_LOCK_FILE) == 0)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", o->dir, e->d_name);
        if (ut_remove_tree(path) != 0) {
            rc = ut_fail(msg, msg_len, AN_EIO, "--force: cannot remove %s: %s", path,
                         strerror(errno));
            break;
        }
        if (used < 300)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n ? ", " : "",
                                     e->d_name);
        else if (used < sizeof names - 8)
            used += (size_t)snprintf(names + used, sizeof names - used, ", ...");
        n++;
    }
    closedir(d);
    if (!rc)
        snprintf(said, said_len, "--force: removed %s in %s (%ld entr%s: %s)", rec_folder_name(k),
                 o->dir, n, n == 1 ? "y" : "ies", names);
    return rc;
}

/* An empty folder's temporary files, which writers killed mid-write left
 * (under the lock no ampscope process writes here). */
static int remove_leftovers(const char *dir, char *msg, size_t msg_len)
{
    DIR *d = opendir(dir);
    if (!d) return ut_fail(msg, msg_len, AN_EIO, "%s: %s", dir, strerror(errno));
    int rc = AN_OK;
    const struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        char path[4200], base[256];
        if (!without_tmp(e->d_name, base, sizeof base)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = ut_fail(msg, msg_len, AN_EIO, "%s: %s", path, strerror(errno));
    }
    closedir(d);
    return rc;
}

/* Under the lock: the folder's content is fine for o, or it is refused,
 * or --force clears it. */
static int check_content(const rec_out_dir *o, char *said, size_t said_len, char *msg,
                         size_t msg_len)
{
    const char *opt = o->option, *dir = o->dir;
    char foreign[512], why[1024] = "";
    const rec_folder k = rec_folder_kind(dir, foreign, sizeof foreign);
    if (k == REC_FOLDER_EMPTY) return remove_leftovers(dir, msg, msg_len);
    if (k == REC_FOLDER_FOREIGN && o->force)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "%s %s holds %s, which ampscope did not write: --force removes only "
                       "ampscope's files; move it or choose another folder",
                       opt, dir, foreign);
    if (k == REC_FOLDER_FOREIGN)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "%s %s holds %s, which ampscope did not write: choose another folder", opt,
                       dir, foreign);
    const bool mine = k == rec_folder_of_command(o->command);
    if (mine && o->reuse && (!o->compatible || o->compatible(dir, o->ctx, why, sizeof why)))
        return AN_OK;
    if (!o->force) {
        if (why[0])
            return ut_fail(msg, msg_len, AN_EINVAL,
                           "%s %s %s, --force to replace it, or another %s", opt, dir, why, opt);
        if (mine && k == REC_FOLDER_TRAIN)
            return ut_fail(msg, msg_len, AN_EINVAL,
                           "%s %s already holds a run: give --resume %s to go on with it, --force "
                           "to replace it, or another %s",
                           opt, dir, dir, opt);
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "%s %s holds %s: give --force to replace it, or another %s", opt, dir,
                       rec_folder_name(k), opt);
    }
    struct stat d;
    if (stat(dir, &d) != 0) return ut_fail(msg, msg_len, AN_EIO, "%s: %s", dir, strerror(errno));
    for (size_t i = 0; i < o->n_inputs; i++)
        if (o->inputs[i].path && inside(o->inputs[i].path, &d))
            return ut_fail(msg, msg_len, AN_EINVAL,
                           "%s %s: --force would remove %s %s: choose another folder", opt, dir,
                           o->inputs[i].option, o->inputs[i].path);
    return clear(o, k, said, said_len, msg, msg_len);
}

/* the parent of a folder that does not exist: it must */
static int want_parent(const rec_out_dir *o, char *msg, size_t msg_len)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", o->dir);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash) return AN_OK; /* in the current folder */
    if (slash == parent)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
        return ut_fail(msg, msg_len, AN_EINVAL, "%s %s: no folder %s (make it first)", o->option,
                       o->dir, parent);
    return AN_OK;
}

int rec_take_out_dir(const rec_out_dir *o, int *lock_fd, char *said, size_t said_len, char *msg,
                     size_t msg_len)
{
    *lock_fd = -1;
    if (said && said_len) said[0] = '\0';
    if (o->force && o->resume)
        return ut_fail(msg, msg_len, AN_EINVAL,
                       "--force and --resume: a resumed run goes on with its record; give one");
    int rc = rec_check_output(o->option, o->dir, o->owner, o->inputs, o->n_inputs, msg, msg_len);
    if (rc) return rc;
    struct stat st;
    bool made_dir = false, made_lock = false;
    if (stat(o->dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return ut_fail(msg, msg_len, AN_EINVAL, "%s %s: not a directory", o->option, o->dir);
    } else if (errno != ENOENT) { /* a file on the way (ENOTDIR), no access: bad input */
        return ut_fail(msg, msg_len, errno == EIO ? AN_EIO : AN_EINVAL,
                       "%s %s: cannot create it: %s", o->option, o->dir, strerror(errno));
    } else if (o->resume) {
        return ut_fail(msg, msg_len, AN_EINVAL, "%s %s: no such directory", o->option, o->dir);
    } else {
        if ((rc = want_parent(o, msg, msg_len)) != 0) return rc;
        if (mkdir(o->dir, 0777) != 0 && errno != EEXIST)
            return ut_fail(msg, msg_len,
                           errno == ENOSPC || errno == EDQUOT || errno == EIO ? AN_EIO : AN_EINVAL,
                           "%s %s: cannot create it: %s", o->option, o->dir, strerror(errno));
        made_dir = true;
    }
    char why[1024];
    int fd;
    rc = rec_lock_take(o->dir, o->command, false, &fd, &made_lock, why, sizeof why);
    if (rc) {
        if (made_dir) rmdir(o->dir);
        return ut_fail(msg, msg_len, rc, "%s %s", o->option, why);
    }
    char said_here[1024] = "";
    if (!o->resume && !o->owner) rc = check_content(o, said_here, sizeof said_here, msg, msg_len);
    if (!rc) rc = rec_lock_write_text(fd, o->dir, o->command, msg, msg_len);
    if (rc) {
        if (made_lock) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", o->dir, REC_LOCK_FILE);
            unlink(path);
        }
        rec_lock_release(fd);
        if (made_dir) rmdir(o->dir);
        return rc;
    }
    if (said && said_len) snprintf(said, said_len, "%s", said_here);
    *lock_fd = fd;
    return AN_OK;
}
