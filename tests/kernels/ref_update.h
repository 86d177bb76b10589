/* ref_update.h: what the test_update_*.c and gpu_cases_update.c share:
 * parameter layouts, the default optimizer configuration, one backend's
 * tensors and scalars of a parameter, and the comparison of loss records;
 * for the cpu tests, the reference optimizer, written from PyTorch's
 * torch.optim formulas in plain C float and double arithmetic in the order
 * kernels/update.c states, and the driver that runs it beside ak_update. */
#ifndef AMPSCOPE_TESTS_REF_UPDATE_H
#define AMPSCOPE_TESTS_REF_UPDATE_H

#include "kt.h"

#define REF_NONE (-1) /* a tensor that is not given */

/* A parameter's tensors, in ak_param's order. */
enum { REF_MASTER, REF_MODEL, REF_GRAD, REF_M, REF_V, REF_PARTS };
extern const char *const ref_part_names[REF_PARTS]; /* "master", "model", ... */

/* The dtypes of a parameter's tensors (REF_NONE: not given); the master,
 * when there is one, is fp32. */
typedef struct ref_layout {
    bool master;
    int model, grad, m, v;
} ref_layout;
ref_layout ref_lay(bool master, int model, int grad, int m, int v);
/* The dtype of part k (REF_MASTER ... REF_V) of L, or REF_NONE. */
int ref_part_dtype(const ref_layout *L, int k);

/* torch.optim's defaults: momentum 0.9, no dampening, betas 0.9 and 0.999,
 * eps 1e-8; rounding to nearest even. */
ak_opt_config ref_config(ak_optimizer kind, float lr, float weight_decay);

/* One backend's memory for a parameter of layout L: its tensors (guarded;
 * none where L gives none), the state, the loss record and found_inf, all
 * zero. */
typedef struct ref_rig {
    ak_backend *b;
    kt_buf buf[REF_PARTS];
    ak_param p;
    ak_opt_state *state;
    ak_update_loss *loss;
    float *found_inf;
} ref_rig;
void ref_rig_open(ref_rig *r, ak_backend *b, const ref_layout *L, size_t n);
/* Frees what ref_rig_open allocated (not the backend); the guards must hold. */
void ref_rig_close(ref_rig *r);

/* The loss record got against want: the counts equal, the sums within
 * 1e-12 relative (their summation order may differ), NaN and infinities
 * exactly; failures name the two sides (got_name, want_name). */
void ref_check_loss(const ak_update_loss *got, const ak_update_loss *want, const char *got_name,
                    const char *want_name);

/* ---- the reference optimizer and its driver (the cpu tests) ---------------------- */
/* An element's value in fp32, exactly (the emulator's widening). */
float ref_widen(int dt, uint32_t bits);
/* fp32 -> dt to nearest even (the emulator's conversion). */
uint32_t ref_narrow_rne(int dt, float x);

/* The reference's step state: the step and the powers beta^step. */
typedef struct ref_state {
    int64_t step;
    double b1p, b2p;
} ref_state;
/* ak_opt_step_begin's effect on s. */
void ref_begin(const ak_opt_config *c, ref_state *s);

typedef struct ref_mirror { /* element bits, fp16/bf16 in the low half */
    size_t n;
    uint32_t *master, *model, *grad, *m, *v;
} ref_mirror;

/* One ak_update of every element of h; the loss it records is added to L. */
void ref_update_step(const ak_opt_config *c, const ref_state *s, const ref_layout *L, ref_mirror *h,
                     ak_update_loss *loss);
/* The mirror to the backend's tensors; the tensors against the mirror
 * (returns the mismatches). */
void ref_mirror_put(ref_rig *d, const ref_mirror *h);
size_t ref_mirror_compare(ref_rig *d, const ref_mirror *h);

/* What ref_fill_all fills with: values of training size, or every class of
 * bit pattern. */
enum { REF_DATA_TYPICAL, REF_DATA_SPECIAL };
/* Weights, moments (nonnegative v) and the first gradient. */
void ref_fill_all(ts_rng *r, int data, const ref_layout *L, ref_mirror *h);

/* A parameter of n elements: its host mirror (zero) and its memory on the
 * cpu backend (ref_rig: zero state, loss record and found_inf). */
typedef struct ref_param {
    ref_mirror h;
    ref_rig d;
} ref_param;

ref_param ref_param_open(const ref_layout *L, size_t n);
void ref_param_close(ref_param *x);

/* Runs `steps` steps of cfg on a fresh parameter with layout L (a new
 * gradient each step), comparing everything with the reference after each. */
void ref_run_case(ak_opt_config cfg, ref_layout L, size_t n, int steps, int data, uint64_t seed);
/* kt_rounding in mode with seed, stream 7, index 1000. */
ak_rounding ref_rounding(fpe_round mode, uint64_t seed);

#endif
