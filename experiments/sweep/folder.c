/* folder.c: the sweep's folder (sweep_internal.h): OUT taken through the
 * record lock (analyze/record_lock.h: one writer, never an input's folder
 * nor inside another record, --force), the leftovers of a killed rewrite
 * removed, sweep.json written or compared, so that a folder holds one
 * grid, and OUT/runs made. */

#include "sweep_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"
#include "record_lock.h"
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

/* rec_out_dir's compatible: a sweep folder is this sweep's when it has no
 * sweep.json yet or the same grid and shared options in it. */
static bool same_sweep(const char *dir, void *ctx, char *why, size_t len)
{
    const json_t *mine = ctx;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, SW_SWEEP_JSON);
    if (access(path, F_OK) != 0) return true;
    json_error_t err;
    json_t *old = json_load_file(path, 0, &err);
    if (!old) {
        snprintf(why, len, "has a damaged %s (%s, line %d)", path, err.text, err.line);
        return false;
    }
    const bool same = json_equal(json_object_get(old, "grid"), json_object_get(mine, "grid")) &&
                      json_equal(json_object_get(old, "shared"), json_object_get(mine, "shared"));
    if (!same) {
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
        snprintf(why, len,
                 "holds another sweep (%.1500s, in %.1000s): give that command to resume it", cmd,
                 path);
    }
    json_decref(old);
    return same;
}

/* Creates OUT and OUT/runs, or checks that OUT is this sweep's folder. */
int sw_setup_folder(const sweep_options *o, int *lock_fd, char *msg, size_t len)
{
    json_t *mine = describe(o);
    if (!mine) return ut_fail(msg, len, SW_EFAIL, "out of memory");
    /* what the runs read: --data and --init given to every run */
    rec_input inputs[2];
    size_t n_inputs = 0;
    for (int i = 0; i + 1 < o->n_shared; i += 2)
        if ((strcmp(o->shared[i], "--data") == 0 || strcmp(o->shared[i], "--init") == 0) &&
            n_inputs < 2)
            inputs[n_inputs++] = (rec_input){o->shared[i], o->shared[i + 1]};
    const rec_out_dir want = {.option = "--out",
                              .dir = o->out_dir,
                              .command = "sweep",
                              .inputs = inputs,
                              .n_inputs = n_inputs,
                              .reuse = true,
                              .force = o->force,
                              .compatible = same_sweep,
                              .ctx = mine};
    char path[4200], why[1024], said[1024];
    int rc = rec_take_out_dir(&want, lock_fd, said, sizeof said, why, sizeof why);
    if (rc) {
        json_decref(mine);
        return ut_fail(msg, len, rc == AN_EINVAL ? SW_EINPUT : SW_EFAIL, "%s", why);
    }
    if (said[0]) fprintf(stderr, "ampscope sweep: %s\n", said);
    /* what a sweep killed while it rewrote them left (under the lock, nobody
     * else writes them); unfinished runs' folders are redone whole */
    const char *ours[] = {SW_SWEEP_JSON, "summary.csv"};
    for (size_t i = 0; !rc && i < sizeof ours / sizeof *ours; i++) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, ours[i]);
        if (af_remove_stale(path, why, sizeof why) < 0) rc = ut_fail(msg, len, SW_EFAIL, "%s", why);
    }
    snprintf(path, sizeof path, "%s/%s", o->out_dir, SW_SWEEP_JSON);
    if (!rc && access(path, F_OK) != 0 &&
        rec_write_json(path, mine, JSON_INDENT(2), why, sizeof why) != AN_OK)
        rc = ut_fail(msg, len, SW_EFAIL, "%s", why);
    json_decref(mine);
    snprintf(path, sizeof path, "%s/runs", o->out_dir);
    if (!rc && mkdir(path, 0777) != 0 && errno != EEXIST)
        rc = ut_fail(msg, len, SW_EFAIL, "%s: %s", path, strerror(errno));
    return rc;
}
