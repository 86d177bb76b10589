/* markers.c: a run's completion marker, runs/<run>/done.json
 * (sweep_internal.h): written atomically by the process that reaped a run
 * that ended ok or diverged; a run with a valid one is not trained again. */
#define _GNU_SOURCE /* gethostname */

#include "sweep_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "record.h"

int sw_write_marker(const sw_sweep *s, const sw_result *r, int exit_status, char *msg, size_t len)
{
    char path[4400], host[256] = "";
    sw_path_in(s, path, sizeof path, (size_t)r->run, SW_DONE_JSON);
    gethostname(host, sizeof host - 1);
    json_t *j = json_pack("{s:s, s:i, s:f, s:s, s:s, s:i}", "status", sw_state_name(r->state),
                          "exit_status", exit_status, "wall_seconds", r->wall, "reason", r->reason,
                          "host", host, "rank", s->rank);
    if (!j) return ut_fail(msg, len, AN_ENOMEM, "%s: out of memory", path);
    const int rc = rec_write_json(path, j, JSON_INDENT(2), msg, len);
    json_decref(j);
    return rc;
}

/* A valid marker: true with its state, wall time and reason in r. */
bool sw_read_marker(const sw_sweep *s, size_t run, sw_result *r)
{
    char path[4400];
    sw_path_in(s, path, sizeof path, run, SW_DONE_JSON);
    json_t *j = json_load_file(path, 0, NULL);
    const char *status = NULL, *reason = "";
    double wall = 0;
    bool ok = j && json_unpack(j, "{s:s, s:F, s?s}", "status", &status, "wall_seconds", &wall,
                               "reason", &reason) == 0;
    if (ok && strcmp(status, "ok") == 0)
        r->state = RS_OK;
    else if (ok && strcmp(status, "diverged") == 0)
        r->state = RS_DIVERGED;
    else
        ok = false;
    if (ok) {
        r->run = (int32_t)run;
        r->wall = wall;
        snprintf(r->reason, sizeof r->reason, "%s", reason);
    }
    json_decref(j);
    return ok;
}
