/* replay.h: loss-scale policies simulated over a recorded gradient trace,
 * without retraining.
 *
 * A trace is what `ampscope train` writes once per step (trace.csv and
 * trace_hist.csv, analyze/record.h): for every step the loss scale the run
 * held, whether it found an overflow, and over all activation and weight
 * gradients of that step their count, zeros, non-finite values, max |g|
 * and log2 histogram, as stored (of the scaled loss).  an_trace_load
 * divides by the scale held, so a trace speaks of the true gradients: the
 * histogram's binades move down by log2 S (exact for a power-of-two S; else
 * each binade goes to the binade of its lower edge / S) and amax / S.
 * Steps whose recorded gradients overflowed have amax = +inf: their true
 * magnitudes are unknown, and the replay treats them as overflowing at any
 * scale >= the recorded one and as the recording step's histogram below it.
 * Traces from O0 runs (fp32 gradients, loss scale 1) never overflow and are
 * the intended input.
 *
 * The replay runs kernels/loss_scale.h's ak_loss_scale_step, the very rule
 * training uses, with found_inf predicted per step as
 * an_overflows(amax, scale held, target).
 */
#ifndef AMPSCOPE_ANALYZE_REPLAY_H
#define AMPSCOPE_ANALYZE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h" /* AN_* status codes */
#include "fpe.h"
#include "kernels.h"

typedef struct an_trace_step {
    int64_t step;
    double recorded_scale; /* the scale the recording run held */
    bool recorded_found_inf;
    double amax; /* max |g| in true units; +inf when the recorded gradients overflowed */
    uint64_t count, zero, nonfinite;
    uint64_t hist[AK_HIST_BINS]; /* true-unit log2 histogram */
} an_trace_step;

typedef struct an_trace {
    an_trace_step *steps; /* in step order */
    size_t n;
} an_trace;

/* Reads DIR/trace.csv and DIR/trace_hist.csv.  AN_OK; AN_EIO/AN_EINVAL
 * with a message naming the file (and line, column) otherwise.  An empty
 * trace (no rows) is AN_EINVAL ("... has no steps"). */
int an_trace_load(const char *run_dir, an_trace *t, char *msg, size_t msg_len);
void an_trace_free(an_trace *t);

/* What a policy did over a trace. */
typedef struct an_replay_result {
    int64_t steps;               /* trace steps replayed */
    int64_t overflow_steps;      /* steps predicted to overflow at the scale held */
    int64_t skipped_steps;       /* of those, steps the policy skips (drop_overflow_update) */
    double skip_frac;            /* skipped_steps / steps */
    double mean_underflow_frac;  /* mean over non-overflowing steps of flushed_frac_of_nonzero
                                    at the scale held (an_hist_fractions) */
    int64_t steps_below_best;    /* steps whose held scale was below that step's best power-of-two
                                    scale (an_best_pow2_scale) */
    double mean_log2_below_best; /* mean over steps of max(0, log2(best / held)) */
    double final_scale, min_scale, max_scale; /* of the scales held */
} an_replay_result;

/* Replays cfg (validated by ak_scaler_validate) over t for target (the
 * format the gradients would be cast to: fp16 or bf16).  When scales is not
 * NULL, scales[i] receives the scale held at step i and skipped[i] (when
 * not NULL) 1 if step i is skipped.  AN_OK or AN_EINVAL with a message. */
int an_replay(const an_trace *t, const ak_scaler_config *cfg, fpe_format_id target,
              an_replay_result *res, double *scales, uint8_t *skipped, char *msg, size_t msg_len);

#endif
