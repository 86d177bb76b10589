/* record_json.c: run.json (record.h): what ran (versions, backend, device,
 * times, the options in the order they were set), written atomically and
 * read back with every member checked; and rec_write_json, the atomic
 * writer of any JSON file in a run or sweep directory. */
#include "record.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_RECORD_VERSION 1

struct rec_run {
    char *info[4]; /* version, git revision, backend, device */
    int64_t start, end;
    json_t *options; /* an object: insertion order is kept */
    json_t *given;   /* an array of strings, or NULL (a record from before "given") */
    json_t *resumes; /* an array of {"step", "given"} */
};

static const char *const info_keys[4] = {"ampscope_version", "git_revision", "backend", "device"};

static char *dup_str(const char *s)
{
    if (!s) s = "";
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

rec_run *rec_run_new(const char *version, const char *git_revision, const char *backend,
                     const char *device)
{
    rec_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    const char *v[4] = {version, git_revision, backend, device};
    bool ok = true;
    for (int i = 0; i < 4; i++)
        ok = (r->info[i] = dup_str(v[i])) != NULL && ok;
    r->options = json_object();
    r->resumes = json_array();
    r->start = r->end = REC_NO_TIME;
    if (!ok || !r->options || !r->resumes) {
        rec_run_free(r);
        return NULL;
    }
    return r;
}

void rec_run_free(rec_run *r)
{
    if (!r) return;
    for (int i = 0; i < 4; i++)
        free(r->info[i]);
    json_decref(r->options);
    json_decref(r->given);
    json_decref(r->resumes);
    free(r);
}

const char *rec_run_version(const rec_run *r) { return r->info[0]; }
const char *rec_run_git_revision(const rec_run *r) { return r->info[1]; }
const char *rec_run_backend(const rec_run *r) { return r->info[2]; }
const char *rec_run_device(const rec_run *r) { return r->info[3]; }
int64_t rec_run_start(const rec_run *r) { return r->start; }
int64_t rec_run_end(const rec_run *r) { return r->end; }
void rec_run_set_start(rec_run *r, int64_t t) { r->start = t; }
void rec_run_set_end(rec_run *r, int64_t t) { r->end = t; }

/* Takes the reference to value in every case. */
static int set_option(rec_run *r, const char *key, json_t *value)
{
    if (!r || !key || !*key || !value) {
        json_decref(value);
        return AN_EINVAL;
    }
    return json_object_set_new(r->options, key, value) == 0 ? AN_OK : AN_EINVAL;
}

int rec_run_set_string(rec_run *r, const char *key, const char *value)
{
    return value ? set_option(r, key, json_string(value)) : AN_EINVAL;
}

int rec_run_set_int(rec_run *r, const char *key, int64_t value)
{
    return set_option(r, key, json_integer((json_int_t)value));
}

int rec_run_set_real(rec_run *r, const char *key, double value)
{
    return isfinite(value) ? set_option(r, key, json_real(value)) : AN_EINVAL;
}

size_t rec_run_option_count(const rec_run *r) { return r ? json_object_size(r->options) : 0; }

static void option_of(const char *key, json_t *v, rec_option *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->key = key;
    if (json_is_string(v)) {
        opt->type = REC_OPT_STRING;
        opt->string = json_string_value(v);
    } else if (json_is_integer(v)) {
        opt->type = REC_OPT_INT;
        opt->integer = (int64_t)json_integer_value(v);
    } else {
        opt->type = REC_OPT_REAL;
        opt->real = json_real_value(v);
    }
}

int rec_run_option_at(const rec_run *r, size_t i, rec_option *opt)
{
    if (!r || !opt) return AN_EINVAL;
    void *it = json_object_iter(r->options);
    for (size_t k = 0; it && k < i; k++)
        it = json_object_iter_next(r->options, it);
    if (!it) return AN_EINVAL;
    option_of(json_object_iter_key(it), json_object_iter_value(it), opt);
    return AN_OK;
}

bool rec_run_option(const rec_run *r, const char *key, rec_option *opt)
{
    if (!r || !key || !opt) return false;
    void *it = json_object_iter_at(r->options, key);
    if (!it) return false;
    option_of(json_object_iter_key(it), json_object_iter_value(it), opt);
    return true;
}

/* ---- the options as given ---------------------------------------------------------------- */
static json_t *arg_list(const rec_run *r, size_t list)
{
    if (!r || !r->given) return NULL;
    if (list == 0) return r->given;
    return json_object_get(json_array_get(r->resumes, list - 1), "given");
}

size_t rec_run_arg_lists(const rec_run *r)
{
    return r && r->given ? 1 + json_array_size(r->resumes) : 0;
}

size_t rec_run_args(const rec_run *r, size_t list, int64_t *step)
{
    json_t *a = arg_list(r, list);
    if (step)
        *step = a && list > 0 ? (int64_t)json_integer_value(
                                    json_object_get(json_array_get(r->resumes, list - 1), "step"))
                              : 0;
    return json_array_size(a);
}

const char *rec_run_arg(const rec_run *r, size_t list, size_t j)
{
    return json_string_value(json_array_get(arg_list(r, list), j));
}

bool rec_run_text_ok(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    json_decref(j);
    return j != NULL;
}

/* A new array of the strings, or NULL (one is not valid UTF-8, or out of memory). */
static json_t *string_array(const char *const *args, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (!args[i] || json_array_append_new(a, json_string(args[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

int rec_run_set_given(rec_run *r, const char *const *args, size_t n)
{
    json_t *a = r ? string_array(args, n) : NULL;
    if (!a) return AN_EINVAL;
    json_decref(r->given);
    r->given = a;
    json_array_clear(r->resumes);
    return AN_OK;
}

int rec_run_add_resume(rec_run *r, int64_t step, const char *const *args, size_t n)
{
    if (!r || !r->given || step < 0) return AN_EINVAL;
    json_t *a = string_array(args, n);
    json_t *entry = a ? json_pack("{s:I,s:o}", "step", (json_int_t)step, "given", a) : NULL;
    if (!entry) return AN_EINVAL;
    return json_array_append_new(r->resumes, entry) == 0 ? AN_OK : AN_EINVAL;
}

static json_t *time_json(int64_t t)
{
    char buf[REC_TIME_MAX];
    if (t == REC_NO_TIME) return json_null();
    return rec_time_format(t, buf) == AN_OK ? json_string(buf) : NULL;
}

int rec_run_write(const rec_run *r, const char *path, char *msg, size_t msg_len)
{
    if (!r || !path) return ut_fail(msg, msg_len, AN_EINVAL, "rec_run_write: r or path is NULL");
    json_t *root = json_object();
    if (!root) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    int status = AN_OK;
    json_object_set_new(root, "record_version", json_integer(RUN_RECORD_VERSION));
    for (int i = 0; i < 4 && status == AN_OK; i++) {
        json_t *s = json_string(r->info[i]);
        if (!s || json_object_set_new(root, info_keys[i], s) != 0)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: %s '%s' is not valid UTF-8", path,
                             info_keys[i], r->info[i]);
    }
    const int64_t times[2] = {r->start, r->end};
    const char *time_keys[2] = {"start_time", "end_time"};
    for (int i = 0; i < 2 && status == AN_OK; i++) {
        json_t *tj = time_json(times[i]);
        if (!tj || json_object_set_new(root, time_keys[i], tj) != 0)
            status = ut_fail(msg, msg_len, AN_EINVAL, "%s: %s %" PRId64 " is not a year 0-9999",
                             path, time_keys[i], times[i]);
    }
    if (status == AN_OK && r->given) {
        json_object_set(root, "given", r->given);
        json_object_set(root, "resumes", r->resumes);
    }
    if (status == AN_OK) {
        json_object_set(root, "options", r->options);
        status = rec_write_json(path, root, JSON_INDENT(2) | JSON_REAL_PRECISION(17), msg, msg_len);
    }
    json_decref(root);
    return status;
}

int rec_write_json(const char *path, const json_t *j, size_t flags, char *msg, size_t msg_len)
{
    if (!path || !j) return ut_fail(msg, msg_len, AN_EINVAL, "rec_write_json: NULL argument");
    char *text = json_dumps(j, flags);
    if (!text) return ut_fail(msg, msg_len, AN_ENOMEM, "%s: json_dumps failed", path);
    const size_t n = strlen(text);
    char *with_newline = realloc(text, n + 2);
    if (!with_newline) {
        free(text);
        return ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
    }
    with_newline[n] = '\n';
    with_newline[n + 1] = '\0';
    const int status = af_write(path, with_newline, n + 1, msg, msg_len);
    free(with_newline);
    return status;
}

/* One string member of root (a time when t is not NULL: a string or null). */
static int read_member(json_t *root, const char *path, const char *key, const char **s, int64_t *t,
                       char *msg, size_t msg_len)
{
    json_t *v = json_object_get(root, key);
    if (!v) return ut_fail(msg, msg_len, AN_EFORMAT, "%s: missing \"%s\"", path, key);
    if (t && json_is_null(v)) {
        *t = REC_NO_TIME;
        return AN_OK;
    }
    if (!json_is_string(v))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"%s\" is not a string%s", path, key,
                       t ? " or null" : "");
    *s = json_string_value(v);
    if (t && rec_time_parse(*s, t) != AN_OK)
        return ut_fail(msg, msg_len, AN_EFORMAT,
                       "%s: \"%s\": '%s' is not a UTC time YYYY-MM-DDTHH:MM:SSZ", path, key, *s);
    return AN_OK;
}

/* An array of strings: 0, or AN_EFORMAT naming what in path. */
static int strings_ok(const json_t *a, const char *path, const char *what, char *msg,
                      size_t msg_len)
{
    size_t i;
    const json_t *v;
    if (!json_is_array(a))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: %s is not an array of strings", path, what);
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v))
            return ut_fail(msg, msg_len, AN_EFORMAT, "%s: %s: item %zu is not a string", path, what,
                           i);
    }
    return AN_OK;
}

/* "given" (absent in older records) and "resumes" (only with "given"). */
static int given_ok(json_t *root, const char *path, char *msg, size_t msg_len)
{
    json_t *given = json_object_get(root, "given"), *resumes = json_object_get(root, "resumes");
    if (!given && !resumes) return AN_OK;
    if (!given) return ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"resumes\" without \"given\"", path);
    if (strings_ok(given, path, "\"given\"", msg, msg_len) != AN_OK) return AN_EFORMAT;
    if (!resumes) return AN_OK;
    if (!json_is_array(resumes))
        return ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"resumes\" is not an array", path);
    size_t i;
    json_t *e;
    json_array_foreach(resumes, i, e)
    {
        json_t *step = json_object_get(e, "step");
        char what[64];
        snprintf(what, sizeof what, "\"resumes\" entry %zu", i);
        if (!json_is_object(e) || !json_is_integer(step) || json_integer_value(step) < 0)
            return ut_fail(msg, msg_len, AN_EFORMAT, "%s: %s has no \"step\" >= 0", path, what);
        if (strings_ok(json_object_get(e, "given"), path, what, msg, msg_len) != AN_OK)
            return AN_EFORMAT;
    }
    return AN_OK;
}

rec_run *rec_run_read(const char *path, char *msg, size_t msg_len)
{
    if (!path) {
        ut_fail(msg, msg_len, AN_EINVAL, "rec_run_read: path is NULL");
        return NULL;
    }
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        const int code = json_error_code(&err) == json_error_cannot_open_file ? AN_EIO : AN_EFORMAT;
        ut_fail(msg, msg_len, code, "%s:%d:%d: %s", path, err.line, err.column, err.text);
        return NULL;
    }
    rec_run *r = NULL;
    const char *info[4];
    int64_t start = REC_NO_TIME, end = REC_NO_TIME;
    const char *ignored;
    json_t *version = json_object_get(root, "record_version");
    json_t *options = json_object_get(root, "options");
    if (!json_is_object(root)) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: not a JSON object", path);
        goto done;
    }
    if (!json_is_integer(version) || json_integer_value(version) != RUN_RECORD_VERSION) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"record_version\" is not %d", path,
                RUN_RECORD_VERSION);
        goto done;
    }
    for (int i = 0; i < 4; i++)
        if (read_member(root, path, info_keys[i], &info[i], NULL, msg, msg_len) != AN_OK) goto done;
    if (read_member(root, path, "start_time", &ignored, &start, msg, msg_len) != AN_OK ||
        read_member(root, path, "end_time", &ignored, &end, msg, msg_len) != AN_OK)
        goto done;
    if (!json_is_object(options)) {
        ut_fail(msg, msg_len, AN_EFORMAT, "%s: \"options\" is missing or not an object", path);
        goto done;
    }
    const char *key;
    json_t *value;
    json_object_foreach(options, key, value)
    {
        if (!*key || !(json_is_string(value) || json_is_integer(value) || json_is_real(value))) {
            ut_fail(msg, msg_len, AN_EFORMAT,
                    "%s: option \"%s\" is not a non-empty name with a string or number", path, key);
            goto done;
        }
    }
    if (given_ok(root, path, msg, msg_len) != AN_OK) goto done;
    r = rec_run_new(info[0], info[1], info[2], info[3]);
    if (!r) {
        ut_fail(msg, msg_len, AN_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    json_decref(r->options);
    r->options = json_incref(options);
    r->given = json_incref(json_object_get(root, "given"));
    if (json_object_get(root, "resumes")) {
        json_decref(r->resumes);
        r->resumes = json_incref(json_object_get(root, "resumes"));
    }
    r->start = start;
    r->end = end;
done:
    json_decref(root);
    return r;
}
