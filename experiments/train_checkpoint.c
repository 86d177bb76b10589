/* train_checkpoint.c: a run's checkpoint (checkpoint.h): written at each
 * epoch's end, every --checkpoint-every steps, on a signal and at the end,
 * after the logs' rows it keeps are on the disk; and --resume, which
 * reloads it (its checksum verified), has the record checked against it
 * (train_verify.c), and goes on bit for bit (train_internal.h). */
#define _POSIX_C_SOURCE 200809L

#include "atomic_file.h" /* ut_fail, af_remove_stale */
#include "train_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int train_save_checkpoint(train_state *r, int64_t step, int64_t epoch, int64_t batch, char *msg,
                          size_t len)
{
    if (r->rank != 0) return 0; /* rank 0 holds the record (its state is every rank's) */
    /* the rows the checkpoint keeps reach the disk before it does */
    const int rc = train_sync_logs(r, msg, len);
    if (rc) return rc;
    ckpt_state s;
    memset(&s, 0, sizeof s);
    s.step = step;
    s.epoch = epoch;
    s.batch = batch;
    s.sr_index = r->opt.round.index;
    s.skips = r->skips;
    s.scale_used = r->scale_used;
    train_run_identity(r, &s.run);
    if (ak_to_host(r->b, &s.opt, r->opt_state, sizeof s.opt) != 0 ||
        ak_to_host(r->b, &s.scaler, r->scaler, sizeof s.scaler) != 0)
        return train_backend_fail(r, msg, len, "reading the state for the checkpoint");
    char why[1024];
    if (ckpt_save(train_path(r, REC_CHECKPOINT), r->m, &s, why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    return 0;
}

int train_restore(train_state *r, ckpt_state *at, char *msg, size_t len)
{
    char why[1024];
    /* a run killed before its first checkpoint starts again from step 0 */
    const bool has_checkpoint = r->o->resume && access(train_path(r, REC_CHECKPOINT), F_OK) == 0;
    if (has_checkpoint && ckpt_load(train_path(r, REC_CHECKPOINT), r->m, at, why, sizeof why) != 0)
        return ut_fail(msg, len, TRAIN_EINPUT, "--resume: %s", why);
    /* the record agrees with itself before anything in it changes (rank 0 holds it; the
     * other ranks of an MPI run only read the checkpoint) */
    if (r->o->resume && r->rank == 0) {
        const int rc = train_verify_resume(r, at, has_checkpoint, msg, len);
        if (rc) return rc;
    }
    /* what writers killed in the middle of a write left (af_begin's names) */
    if (r->rank == 0 && (af_remove_stale(train_path(r, REC_CHECKPOINT), why, sizeof why) < 0 ||
                         af_remove_stale(train_path(r, REC_RUN_JSON), why, sizeof why) < 0))
        return ut_fail(msg, len, TRAIN_EFAIL, "%s", why);
    if (!has_checkpoint) return 0;
    if (ak_to_device(r->b, r->opt_state, &at->opt, sizeof at->opt) != 0 ||
        ak_to_device(r->b, r->scaler, &at->scaler, sizeof at->scaler) != 0)
        return train_backend_fail(r, msg, len, "restoring the state");
    r->opt.round.index = at->sr_index;
    r->skips = at->skips;
    r->scale_used = at->scale_used;
    r->after = at->scaler;
    return 0;
}
