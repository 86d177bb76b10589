/* train_fault.c: --fault, numerical faults injected into chosen steps for
 * the tests (train.h): parsing the SPEC and finding a step's fault.
 * train_step.c applies them: through the scale the backward pass uses, or
 * (nan-weights) to the weights after the update. */
#include "atomic_file.h" /* ut_fail */
#include "train.h"

#include <string.h>

static const char *const fault_names[] = {
    "", "nonfinite-loss", "inf-loss", "overflow-grads", "zero-grads", "nan-weights"};
#define FAULT_KINDS (sizeof fault_names / sizeof fault_names[0])

/* A step number: digits only, at most 2^40. */
static bool fault_step(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 13) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > (INT64_C(1) << 40)) return false;
    *out = v;
    return true;
}

int train_fault_parse(const char *spec, train_fault *faults, int *n_faults, char *msg,
                      size_t msg_len)
{
    *n_faults = 0;
    if (!spec || !*spec) return ut_fail(msg, msg_len, -1, "--fault: empty SPEC");
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, '+');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *at = memchr(p, '@', len);
        if (!at)
            return ut_fail(msg, msg_len, -1, "--fault %s: '%.*s' is not KIND@STEPS", spec, (int)len,
                           p);
        if (*n_faults == TRAIN_MAX_FAULTS)
            return ut_fail(msg, msg_len, -1, "--fault %s: more than %d clauses", spec,
                           TRAIN_MAX_FAULTS);
        train_fault *f = &faults[(*n_faults)++];
        memset(f, 0, sizeof *f);
        for (size_t k = 1; k < FAULT_KINDS; k++)
            if (strlen(fault_names[k]) == (size_t)(at - p) &&
                memcmp(p, fault_names[k], (size_t)(at - p)) == 0)
                f->kind = (train_fault_kind)k;
        if (f->kind == TRAIN_FAULT_NONE)
            return ut_fail(msg, msg_len, -1,
                           "--fault %s: unknown kind '%.*s' (expected nonfinite-loss, inf-loss, "
                           "overflow-grads, zero-grads or nan-weights)",
                           spec, (int)(at - p), p);
        const char *steps = at + 1, *stop = p + len;
        if ((size_t)(stop - steps) != 3 || memcmp(steps, "all", 3) != 0) {
            for (const char *q = steps;;) {
                const char *comma = memchr(q, ',', (size_t)(stop - q));
                const char *item_end = comma ? comma : stop;
                const char *dash = memchr(q, '-', (size_t)(item_end - q));
                int64_t lo = 0, hi = 0;
                bool ok = f->n_ranges < TRAIN_MAX_FAULT_RANGES;
                if (ok && dash)
                    ok = fault_step(q, (size_t)(dash - q), &lo) &&
                         fault_step(dash + 1, (size_t)(item_end - dash - 1), &hi) && lo <= hi;
                else if (ok && (ok = fault_step(q, (size_t)(item_end - q), &lo)))
                    hi = lo;
                if (!ok)
                    return ut_fail(msg, msg_len, -1,
                                   "--fault %s: '%.*s' is not a step N, a range N-M (N <= M) or "
                                   "all (at most %d per clause)",
                                   spec, (int)(item_end - q), q, TRAIN_MAX_FAULT_RANGES);
                f->lo[f->n_ranges] = lo;
                f->hi[f->n_ranges++] = hi;
                if (!comma) break;
                q = comma + 1;
            }
        }
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

train_fault_kind train_fault_at(const train_fault *faults, int n_faults, int64_t step)
{
    for (int i = 0; i < n_faults; i++) {
        if (faults[i].n_ranges == 0) return faults[i].kind;
        for (int k = 0; k < faults[i].n_ranges; k++)
            if (step >= faults[i].lo[k] && step <= faults[i].hi[k]) return faults[i].kind;
    }
    return TRAIN_FAULT_NONE;
}
