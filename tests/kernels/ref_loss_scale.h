/* ref_loss_scale.h: what the test_loss_scale_*.c share: a preset's
 * configuration, a scripted run checked step by step, and sequence A. */
#ifndef AMPSCOPE_TESTS_REF_LOSS_SCALE_H
#define AMPSCOPE_TESTS_REF_LOSS_SCALE_H

#include "kt.h"

#define REF_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Sequence A, window 3: growth after 3 clean steps, an overflow, a run cut
 * short by an overflow, growth, two overflows, growth (the presets' tables in
 * test_loss_scale_presets.c work it out by hand). */
#define REF_SEQ_A "CCCOCCOCCCOOCCC"

/* The preset's configuration (fails the test if it is refused). */
ak_scaler_config ref_scaler_preset(const char *name);

/* Runs the events ('C' a clean step, 'O' an overflow) through
 * ak_loss_scale_step and checks every step's scale (scale[i] after step i),
 * inverse and skip decision, and the step and overflow counters. */
void ref_scaler_check_run(const char *what, const ak_scaler_config *cfg, const char *events,
                          const float *scale);

#endif
