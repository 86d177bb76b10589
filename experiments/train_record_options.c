/* train_record_options.c: the options as given, in run.json and back (see
 * train_options.h).  A run records the options of its train_options as
 * given ("given", argv-style); --resume replays them and each resume's
 * additions through topt_set, so the rebuilt structure is the one the
 * original command line gave, and refuses any addition that would change
 * what the run means. */
#include "train_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A refusal: the message (ut_fail), then this module's status. */
#define fail(msg, msg_len, ...) ut_fail(msg, msg_len, TRAIN_EINPUT, __VA_ARGS__)

/* Not recorded: they name the folder (or say what to do with it), not the run. */
static bool names_the_folder(const char *key)
{
    return strcmp(key, "out") == 0 || strcmp(key, "resume") == 0 || strcmp(key, "force") == 0;
}

/* What a resume may give: the length (to extend it), progress and the checkpoints' cadence. */
static bool may_change(const char *key)
{
    static const char *const keys[] = {"steps", "epochs", "checkpoint-every", "no-progress"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (strcmp(key, keys[i]) == 0) return true;
    return false;
}

/* The given entries from first on as argv ("--key", then its text), without
 * the ones that name the folder: *n strings in args (room for 2 * n_given),
 * the "--key" texts in keys (room for n_given). */
typedef char key_text[72]; /* "--" + a table name */
static void as_args(const train_options *o, int first, const char **args, key_text *keys, size_t *n)
{
    *n = 0;
    for (int i = first; i < o->n_given; i++) {
        if (names_the_folder(o->given[i].key)) continue;
        snprintf(keys[i], sizeof keys[i], "--%s", o->given[i].key);
        args[(*n)++] = keys[i];
        if (o->given[i].text) args[(*n)++] = o->given[i].text;
    }
}

/* Records the given entries from first on: "given" (step < 0) or a resume at step. */
static int record_args(const train_options *o, int first, rec_run *r, int64_t step, char *msg,
                       size_t len)
{
    const size_t m = (size_t)o->n_given + 1;
    const char **args = malloc(2 * m * sizeof *args);
    key_text *keys = malloc(m * sizeof *keys);
    int rc = TRAIN_OK;
    size_t n = 0;
    if (!args || !keys) rc = ut_fail(msg, len, TRAIN_EFAIL, "out of memory");
    if (!rc) as_args(o, first, args, keys, &n);
    if (!rc && step < 0 && rec_run_set_given(r, args, n) != 0)
        rc = ut_fail(msg, len, TRAIN_EFAIL, "out of memory"); /* topt_set checked the texts */
    if (!rc && step >= 0 && n > 0 && rec_run_add_resume(r, step, args, n) != 0)
        rc = ut_fail(msg, len, TRAIN_EFAIL, "out of memory");
    free(args);
    free(keys);
    return rc;
}

int topt_record(const train_options *o, rec_run *r, char *msg, size_t len)
{
    int rc = record_args(o, 0, r, -1, msg, len);
    /* and each one in "options" (a later one replacing an earlier), as the
     * argv scan took them; the caller adds what the defaults resolved to */
    for (int i = 0; i < o->n_given && !rc; i++)
        if (o->given[i].text && o->given[i].text[0] != '-')
            rec_run_set_string(r, o->given[i].key, o->given[i].text);
    return rc;
}

int topt_record_resume(const train_options *o, rec_run *r, int64_t step, char *msg, size_t len)
{
    int rc = record_args(o, o->n_recorded, r, step, msg, len);
    for (int i = o->n_recorded; i < o->n_given && !rc; i++)
        if (o->given[i].text && !names_the_folder(o->given[i].key))
            rec_run_set_string(r, o->given[i].key, o->given[i].text);
    return rc;
}

/* ---- a resume's options ----------------------------------------------------------------- */
/* Whether two texts of row's option mean the same value (0.01 and 0.010 do). */
static bool same_value(const opt_spec *row, const char *a, const char *b)
{
    if (!a || !b) return a == b;
    if (strcmp(a, b) == 0) return true;
    switch (row->kind) {
    case OPT_I64:
    case OPT_INT:
    case OPT_SIZE:
    case OPT_U64:
    case OPT_FLOAT:
    case OPT_DOUBLE:
    case OPT_ONOFF:
    case OPT_CHOICE: break;
    default: return false;
    }
    opt_spec value_only = *row;
    value_only.offset = 0;
    value_only.parse = NULL;
    union {
        int64_t i;
        double d;
    } x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    return opt_set(&value_only, &x, a, NULL, 0) == 0 && opt_set(&value_only, &y, b, NULL, 0) == 0 &&
           memcmp(&x, &y, sizeof x) == 0;
}

/* --steps or --epochs on a resume: the same unit as the record's length,
 * and not shorter.  *same when it changes nothing. */
static int check_length(const train_options *o, const opt_spec *row, const char *text, bool *same,
                        char *msg, size_t len)
{
    const char *steps = topt_given(o, "steps");
    const bool by_steps = strcmp(row->name, "steps") == 0;
    if (by_steps != (steps != NULL)) {
        const char *epochs = topt_given(o, "epochs");
        if (steps)
            return fail(msg, len,
                        "--resume: --%s cannot change on a resumed run whose length run.json "
                        "gives as --steps %s (extend it with --steps)",
                        row->name, steps);
        return fail(msg, len,
                    "--resume: --%s cannot change on a resumed run whose length run.json gives "
                    "as --epochs %s%s (extend it with --epochs)",
                    row->name, epochs ? epochs : "1", epochs ? "" : " (the default)");
    }
    /* both OPT_I64: their values alone, with the table's message for a bad one */
    opt_spec value_only = *row;
    value_only.offset = 0;
    const char *was = by_steps ? steps : topt_given(o, "epochs");
    int64_t before = 1, after;
    if (opt_set(&value_only, &after, text, msg, len) != 0) return TRAIN_EINPUT;
    if (was && opt_set(&value_only, &before, was, msg, len) != 0) return TRAIN_EINPUT;
    if (after < before)
        return fail(msg, len,
                    "--resume: --%s %s would shorten the run (run.json has %lld): a resume may "
                    "only extend it",
                    row->name, text, (long long)before);
    *same = after == before;
    return TRAIN_OK;
}

int topt_resume_set(train_options *o, const char *name, const char *text, char *msg, size_t len)
{
    const opt_spec *row = opt_find(topt_table, name);
    if (!row) return topt_set(o, name, text, msg, len); /* its message */
    if (opt_takes_value(row) && !text) return fail(msg, len, "option --%s needs a value", name);
    const char *dir = topt_given(o, "resume");
    if (strcmp(name, "resume") == 0)
        return fail(msg, len, "--resume is given twice: resume one run at a time");
    if (strcmp(name, "out") == 0)
        return fail(msg, len,
                    "--resume: --out cannot be given with --resume (the run's folder is %s)",
                    dir ? dir : "the one resumed");
    if (strcmp(name, "init") == 0)
        return fail(msg, len,
                    "--resume: --init cannot be given with --resume (the run goes on from its "
                    "checkpoint)");
    bool same = false;
    if (strcmp(name, "steps") == 0 || strcmp(name, "epochs") == 0) {
        const int rc = check_length(o, row, text, &same, msg, len);
        if (rc) return rc;
    } else if (strcmp(name, "no-progress") == 0) {
        same = !o->progress;
    } else {
        const char *was = topt_given(o, name);
        same = was && same_value(row, was, text);
        if (!same && !may_change(name))
            return was ? fail(msg, len,
                              "--resume: --%s cannot change on a resumed run (run.json has %s)",
                              name, was)
                       : fail(msg, len,
                              "--resume: --%s cannot change on a resumed run (run.json does not "
                              "give it: the run uses its default)",
                              name);
    }
    /* the same value again changes nothing and is not recorded */
    return same ? TRAIN_OK : topt_set(o, name, text, msg, len);
}

int topt_from_record(train_options *o, const rec_run *r, const char *path, char *msg, size_t len)
{
    const size_t lists = rec_run_arg_lists(r);
    if (lists == 0)
        return fail(msg, len,
                    "%s has no \"given\" list of options (written by an older ampscope): the "
                    "run cannot be resumed; train it again with --out",
                    path);
    char why[1024];
    for (size_t list = 0; list < lists; list++) {
        const size_t n = rec_run_args(r, list, NULL);
        for (size_t j = 0; j < n; j++) {
            const char *a = rec_run_arg(r, list, j), *text = NULL;
            const opt_spec *row = strncmp(a, "--", 2) == 0 ? opt_find(topt_table, a + 2) : NULL;
            char where[64];
            if (list == 0)
                snprintf(where, sizeof where, "\"given\"");
            else
                snprintf(where, sizeof where, "\"resumes\" entry %zu", list - 1);
            if (!row || names_the_folder(row->name))
                return fail(msg, len, "%s: %s: '%s' is not an option of a run", path, where, a);
            if (opt_takes_value(row) && (text = rec_run_arg(r, list, ++j)) == NULL)
                return fail(msg, len, "%s: %s: %s has no value", path, where, a);
            /* a resume's entries are what a resume may give, checked again */
            const int rc = list == 0 ? topt_set(o, row->name, text, why, sizeof why)
                                     : topt_resume_set(o, row->name, text, why, sizeof why);
            if (rc) return fail(msg, len, "%s: %s: %s", path, where, why);
        }
    }
    o->n_recorded = o->n_given;
    return TRAIN_OK;
}
