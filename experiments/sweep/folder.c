/* folder.c: the sweep's folder (sweep_internal.h): OUT and OUT/runs
 * made, sweep.lock taken, the leftovers of a killed rewrite removed, and
 * sweep.json written or compared, so that a folder holds one grid. */
#define _GNU_SOURCE /* flock, O_CLOEXEC */

#include "sweep_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"
#include "util.h"

/* ---- folders and the sweep's identity -------------------------------------------------------- */
static json_t *describe(const sweep_options *o)
{
    json_t *grid = json_array(), *shared = json_array();
    for (size_t a = 0; a < o->grid.n_axes; a++) {
        json_t *values = json_array();
        for (size_t v = 0; v < o->grid.axes[a].n_values; v++)
            json_array_append_new(values, json_string(o->grid.axes[a].values[v]));
        json_array_append_new(grid, json_pack("{s:s, s:s, s:o}", "axis", o->grid.axes[a].name,
                                              "option", o->grid.axes[a].option, "values", values));
    }
    for (int i = 0; i < o->n_shared; i++)
        json_array_append_new(shared, json_string(o->shared[i]));
    return json_pack("{s:i, s:s, s:o, s:o, s:i}", "sweep_version", 1, "grid_text", o->grid_text,
                     "grid", grid, "shared", shared, "runs", (json_int_t)o->grid.n_runs);
}

/* Creates OUT and OUT/runs, or checks that OUT is this sweep's folder. */
int sw_setup_folder(const sweep_options *o, int *lock_fd, char *msg, size_t len)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        return ut_fail(msg, len,
                       errno == ENOSPC || errno == EDQUOT || errno == EIO ? SW_EFAIL : SW_EINPUT,
                       "--out %s: cannot create it: %s", o->out_dir, strerror(errno));
    struct stat st;
    if (stat(o->out_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ut_fail(msg, len, SW_EINPUT, "--out %s: not a directory", o->out_dir);
    char path[4200], why[512];
    snprintf(path, sizeof path, "%s/sweep.lock", o->out_dir);
    *lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (*lock_fd < 0) return ut_fail(msg, len, SW_EFAIL, "%s: %s", path, strerror(errno));
    if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0)
        return ut_fail(msg, len, SW_EINPUT,
                       "--out %s: another sweep is running in it (%s is locked)", o->out_dir, path);
    /* what a sweep killed while it rewrote them left (under the lock, nobody
     * else writes them); unfinished runs' folders are redone whole */
    const char *ours[] = {SW_SWEEP_JSON, "summary.csv"};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, ours[i]);
        if (af_remove_stale(path, why, sizeof why) < 0)
            return ut_fail(msg, len, SW_EFAIL, "%s", why);
    }
    json_t *mine = describe(o);
    if (!mine) return ut_fail(msg, len, SW_EFAIL, "out of memory");
    snprintf(path, sizeof path, "%s/%s", o->out_dir, SW_SWEEP_JSON);
    int rc = SW_OK;
    if (access(path, F_OK) == 0) {
        json_error_t err;
        json_t *old = json_load_file(path, 0, &err);
        if (!old)
            rc = ut_fail(msg, len, SW_EINPUT, "%s: %s (line %d)", path, err.text, err.line);
        else if (!json_equal(json_object_get(old, "grid"), json_object_get(mine, "grid")) ||
                 !json_equal(json_object_get(old, "shared"), json_object_get(mine, "shared"))) {
            /* its command line, so that it can be given again */
            char cmd[2048];
            const char *g = json_string_value(json_object_get(old, "grid_text"));
            size_t n = (size_t)snprintf(cmd, sizeof cmd, "--grid \"%s\"", g ? g : "?");
            json_t *v;
            size_t i;
            json_array_foreach(json_object_get(old, "shared"), i, v)
            {
                if (n < sizeof cmd && json_string_value(v))
                    n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s", json_string_value(v));
            }
            rc = ut_fail(msg, len, SW_EINPUT,
                         "--out %s holds another sweep (%s, in %s): give that command to resume "
                         "it, or another --out",
                         o->out_dir, cmd, path);
        }
        json_decref(old);
    } else {
        /* a folder that holds something else is not taken over */
        char runs[4200];
        snprintf(runs, sizeof runs, "%s/runs", o->out_dir);
        if (access(runs, F_OK) == 0)
            rc = ut_fail(msg, len, SW_EINPUT, "--out %s has runs/ but no %s: not a sweep folder",
                         o->out_dir, SW_SWEEP_JSON);
        if (!rc && rec_write_json(path, mine, JSON_INDENT(2), why, sizeof why) != AN_OK)
            rc = ut_fail(msg, len, SW_EFAIL, "%s", why);
    }
    json_decref(mine);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/runs", o->out_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return ut_fail(msg, len, SW_EFAIL, "%s: %s", path, strerror(errno));
    return SW_OK;
}
