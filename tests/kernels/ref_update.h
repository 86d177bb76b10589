/* ref_update.h: what test_update.c and gpu_cases_update.c share: parameter
 * layouts, the default optimizer configuration, one backend's tensors and
 * scalars of a parameter, and the comparison of loss records. */
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

#endif
