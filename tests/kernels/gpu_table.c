/* gpu_table.c: the one table of gpu_backend_ops: every family of cases
 * (gpu_cases_<family>.c), in the order the driver runs them.  A new op
 * gets a row in its family's file (or a new family here); the coverage
 * test (test_op_coverage.c) fails while an AK_OPS entry is in no row. */
#include "gpu_ops.h"

const go_family *const go_families[] = {
    &go_family_memory,     &go_family_cast,    &go_family_unscale, &go_family_stats,
    &go_family_update,     &go_family_gemm,    &go_family_conv,    &go_family_layers,
    &go_family_gelu,       &go_family_avgpool, &go_family_softmax, &go_family_norm,
    &go_family_embedding,  &go_family_dropout, &go_family_add,     &go_family_loss,
    &go_family_loss_scale, &go_family_grad,
};
const size_t go_nfamilies = sizeof go_families / sizeof go_families[0];
