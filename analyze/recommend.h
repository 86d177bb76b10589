/* recommend.h: choosing a dynamic loss scaler's scale_window and
 * scale_factor from a trace, by replaying a grid of policies.
 *
 * Every grid point is the base policy (a preset or the user's dynamic
 * settings) with growth_factor = F, backoff_factor = 1/F and window = W.
 * The choice, in order:
 *   1. only policies whose skip fraction is at most max_skip_frac;
 *   2. the lowest mean underflow fraction at the scale held;
 *   3. then the fewest steps below the best scale;
 *   4. then the fewest skips; then the larger window, then the smaller factor.
 * When no point meets 1, the one with the fewest skips is chosen and the
 * reason says so.
 */
#ifndef AMPSCOPE_ANALYZE_RECOMMEND_H
#define AMPSCOPE_ANALYZE_RECOMMEND_H

#include <stddef.h>

#include "replay.h"

#define AN_GRID_MAX 64

typedef struct an_grid {
    double factors[AN_GRID_MAX]; /* > 1 */
    size_t n_factors;
    int32_t windows[AN_GRID_MAX]; /* >= 1 */
    size_t n_windows;
    double max_skip_frac; /* e.g. 0.01 */
} an_grid;

/* factors 2, 4, 8; windows 10, 20, 50, 100, 200, 500, 1000, 2000; 1% skips. */
an_grid an_grid_default(void);

/* Parses "factors=2,4,8;windows=100,1000;max-skip=0.01" (any subset, in any
 * order) over *g.  AN_OK or AN_EINVAL with a message naming the bad part. */
int an_grid_parse(const char *spec, an_grid *g, char *msg, size_t msg_len);

typedef struct an_grid_point {
    double factor;
    int32_t window;
    an_replay_result r;
} an_grid_point;

typedef struct an_recommendation {
    an_grid_point *points; /* n_factors x n_windows, factor-major */
    size_t n;
    size_t best;       /* index into points */
    char reason[1024]; /* why, in a sentence or three, with the numbers */
} an_recommendation;

/* Replays every grid point over t (base gives every other setting).  AN_OK,
 * or AN_EINVAL / AN_ENOMEM with a message. */
int an_recommend(const an_trace *t, const ak_scaler_config *base, fpe_format_id target,
                 const an_grid *g, an_recommendation *rec, char *msg, size_t msg_len);
void an_recommendation_free(an_recommendation *rec);

/* Writes the grid as CSV (factor,window,steps,overflow_steps,skipped_steps,
 * skip_frac,mean_underflow_frac,steps_below_best,mean_log2_below_best,
 * final_scale,chosen) to path atomically (atomic_file.h).  AN_OK or an
 * error with a message. */
int an_recommendation_write_csv(const an_recommendation *rec, const char *path, char *msg,
                                size_t msg_len);

#endif
