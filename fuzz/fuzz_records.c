/* fuzz_records.c: the run directory's readers (analyze/record.h and
 * analyze/replay.h): each CSV table, run.json, the gradient trace
 * (an_trace_load, then a replay over it) and the end-of-run summary.
 *
 * Input: byte 0 picks the reader (modulo 10): 0-6 rec_read_* on the table
 * of that rec_table id, 7 rec_run_read (and a write/read round trip of what
 * it accepted), 8 an_trace_load + an_replay, 9 rec_summarize_run.  For the
 * readers of one file the rest is that file.  For 8 and 9, bytes 1-2
 * (little-endian) are the length of the first file (trace.csv, steps.csv)
 * and the rest is the second (trace_hist.csv, eval.csv; absent when empty
 * for 9). */
#define _XOPEN_SOURCE 700

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"
#include "loss_scale.h"
#include "record.h"
#include "replay.h"

/* A layer name read from a file must be a C string within its field. */
static void check_name(const char *s, size_t cap)
{
    if (strnlen(s, cap) >= cap) abort();
}

static void read_table(int table, const char *path)
{
    char msg[512];
    msg[0] = '\0';
    size_t n = 0;
    int status = AN_OK;
    switch (table) {
    case REC_STEPS: {
        rec_step_row *r = NULL;
        status = rec_read_steps(path, &r, &n, msg, sizeof msg);
        if (status == AN_OK) (void)fuzz_touch(r, n * sizeof *r);
        free(r);
        break;
    }
    case REC_TENSORS: {
        rec_tensor_row *r = NULL;
        status = rec_read_tensors(path, &r, &n, msg, sizeof msg);
        for (size_t i = 0; status == AN_OK && i < n; i++)
            check_name(r[i].layer, sizeof r[i].layer);
        free(r);
        break;
    }
    case REC_UPDATES: {
        rec_update_row *r = NULL;
        status = rec_read_updates(path, &r, &n, msg, sizeof msg);
        for (size_t i = 0; status == AN_OK && i < n; i++)
            check_name(r[i].layer, sizeof r[i].layer);
        free(r);
        break;
    }
    case REC_HIST: {
        rec_hist_row *r = NULL;
        status = rec_read_hist(path, &r, &n, msg, sizeof msg);
        for (size_t i = 0; status == AN_OK && i < n; i++)
            check_name(r[i].layer, sizeof r[i].layer);
        free(r);
        break;
    }
    case REC_EVAL: {
        rec_eval_row *r = NULL;
        status = rec_read_eval(path, &r, &n, msg, sizeof msg);
        if (status == AN_OK) (void)fuzz_touch(r, n * sizeof *r);
        free(r);
        break;
    }
    case REC_TRACE: {
        rec_trace_row *r = NULL;
        status = rec_read_trace(path, &r, &n, msg, sizeof msg);
        if (status == AN_OK) (void)fuzz_touch(r, n * sizeof *r);
        free(r);
        break;
    }
    default: {
        rec_trace_hist_row *r = NULL;
        status = rec_read_trace_hist(path, &r, &n, msg, sizeof msg);
        if (status == AN_OK) (void)fuzz_touch(r, n * sizeof *r);
        free(r);
        break;
    }
    }
    if (status != AN_OK && !msg[0]) abort(); /* every failure says why */
    if (status != AN_OK) fuzz_refused(msg);
}

static void read_run_json(const char *path)
{
    char msg[512];
    msg[0] = '\0';
    rec_run *r = rec_run_read(path, msg, sizeof msg);
    if (!r) {
        if (!msg[0]) abort();
        fuzz_refused(msg);
        return;
    }
    (void)fuzz_touch(rec_run_version(r), strlen(rec_run_version(r)));
    (void)fuzz_touch(rec_run_device(r), strlen(rec_run_device(r)));
    const size_t n = rec_run_option_count(r);
    for (size_t i = 0; i < n; i++) {
        rec_option o;
        if (rec_run_option_at(r, i, &o) != AN_OK) abort();
        if (o.type == REC_OPT_STRING) (void)fuzz_touch(o.string, strlen(o.string));
        if (o.type == REC_OPT_REAL && !isfinite(o.real)) abort();
    }
    /* What was accepted must be written and read back the same. */
    const char *again = fuzz_path(1, "again.json");
    if (rec_run_write(r, again, msg, sizeof msg) != AN_OK) abort();
    rec_run *s = rec_run_read(again, msg, sizeof msg);
    if (!s || rec_run_option_count(s) != n || rec_run_start(s) != rec_run_start(r) ||
        rec_run_end(s) != rec_run_end(r) || strcmp(rec_run_backend(s), rec_run_backend(r)) != 0)
        abort();
    if (rec_run_arg_lists(s) != rec_run_arg_lists(r)) abort();
    for (size_t l = 0; l < rec_run_arg_lists(r); l++) {
        int64_t step_r, step_s;
        const size_t m = rec_run_args(r, l, &step_r);
        if (rec_run_args(s, l, &step_s) != m || step_s != step_r) abort();
        for (size_t j = 0; j < m; j++)
            if (strcmp(rec_run_arg(r, l, j), rec_run_arg(s, l, j)) != 0) abort();
    }
    for (size_t i = 0; i < n; i++) {
        rec_option a, b;
        if (rec_run_option_at(r, i, &a) != AN_OK || rec_run_option_at(s, i, &b) != AN_OK) abort();
        if (strcmp(a.key, b.key) != 0 || a.type != b.type) abort();
        if (a.type == REC_OPT_STRING && strcmp(a.string, b.string) != 0) abort();
        if (a.type == REC_OPT_INT && a.integer != b.integer) abort();
        if (a.type == REC_OPT_REAL && memcmp(&a.real, &b.real, sizeof a.real) != 0) abort();
    }
    rec_run_free(s);
    rec_run_free(r);
}

static void load_trace(const char *dir)
{
    char msg[512];
    msg[0] = '\0';
    an_trace t;
    memset(&t, 0, sizeof t);
    if (an_trace_load(dir, &t, msg, sizeof msg) != AN_OK) {
        if (!msg[0]) abort();
        fuzz_refused(msg);
        an_trace_free(&t);
        return;
    }
    if (t.n == 0 || !t.steps) abort();
    (void)fuzz_touch(t.steps, t.n * sizeof *t.steps);
    static const char *const presets[] = {"pytorch", "deepspeed", "paddle"};
    double *scales = malloc(t.n * sizeof *scales);
    uint8_t *skipped = malloc(t.n);
    if (!scales || !skipped) abort();
    for (int p = 0; p < 3; p++) {
        ak_scaler_config cfg;
        if (ak_scaler_preset(presets[p], &cfg, msg, sizeof msg) != 0) abort();
        an_replay_result res;
        const int status = an_replay(&t, &cfg, p == 2 ? FPE_FMT_BF16 : FPE_FMT_F16, &res, scales,
                                     skipped, msg, sizeof msg);
        if (status != AN_OK && !msg[0]) abort();
        if (status == AN_OK && (res.steps != (int64_t)t.n || res.skipped_steps > res.steps))
            abort();
    }
    free(scales);
    free(skipped);
    an_trace_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const int mode = data[0] % 10;
    data++;
    size--;
    if (mode < 7) {
        const char *path = fuzz_path(0, rec_table_file((rec_table)mode));
        fuzz_write(path, data, size);
        read_table(mode, path);
        return 0;
    }
    if (mode == 7) {
        const char *path = fuzz_path(0, "run.json");
        fuzz_write(path, data, size);
        read_run_json(path);
        return 0;
    }
    if (size < 2) return 0;
    size_t first = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2;
    size -= 2;
    if (first > size) first = size;
    const char *dir = fuzz_path(2, "run");
    mkdir(dir, 0700);
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/%s", dir, mode == 8 ? "trace.csv" : "steps.csv");
    snprintf(b, sizeof b, "%s/%s", dir, mode == 8 ? "trace_hist.csv" : "eval.csv");
    remove(fuzz_path(3, "run/trace.csv"));
    remove(fuzz_path(3, "run/trace_hist.csv"));
    remove(fuzz_path(3, "run/steps.csv"));
    remove(fuzz_path(3, "run/eval.csv"));
    fuzz_write(a, data, first);
    if (mode == 8 || size > first) fuzz_write(b, data + first, size - first);
    if (mode == 8) {
        load_trace(dir);
    } else {
        rec_run_summary sum;
        char msg[512];
        msg[0] = '\0';
        const int status = rec_summarize_run(dir, &sum, msg, sizeof msg);
        if (status != AN_OK && !msg[0]) abort();
        if (status != AN_OK) fuzz_refused(msg);
    }
    return 0;
}
