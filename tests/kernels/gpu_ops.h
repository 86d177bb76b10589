/* gpu_ops.h: the table of gpu_backend_ops, every kernel op on the cuda
 * backend against the cpu backend (as ggml's test-backend-ops).
 *
 * A row (go_case) names the AK_OPS entries it runs, a case builder that
 * makes the inputs and runs the op on both backends (run(case, i) for i in
 * [0, loops): the shapes, dtypes and modes it sweeps), and the comparison,
 * as data (go_cmp): bit for bit, or within a stated bound with NaN
 * positions and infinity signs agreeing.  Rows are grouped in families, one
 * file each (gpu_cases_<family>.c), one ctest entry each
 * (kernels_gpu_ops_<family>); gpu_table.c lists the families, the one table
 * the driver (gpu_backend_ops.c) and the coverage test (test_op_coverage.c)
 * walk.  Every buffer is guarded (kt_twin): a write out of bounds fails.
 */
#ifndef AMPSCOPE_TESTS_GPU_OPS_H
#define AMPSCOPE_TESTS_GPU_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kt.h"

/* ---- the comparison ------------------------------------------------------------- */
typedef enum go_kind {
    GO_EXACT, /* the same bits */
    GO_CLOSE, /* elements of a dtype: see go_cmp */
    GO_REL,   /* double scalars (sums): |cuda - cpu| <= rel |cpu|, NaN and inf exactly */
} go_kind;

/* GO_CLOSE: NaN where the other is NaN (and the same bits with nan_bits);
 * an infinity where the other has the same infinity (or, with inf_step,
 * the largest finite value of that sign when steps >= 1); else at most
 * `steps` representable values apart, or
 *   |cuda - cpu| <= ulps ulp(max(|cuda|, |cpu|)) + rel scale[i] + extra[i]
 * where the case builder gives scale[] and extra[] (the terms of the
 * op's stated bound: a sum of |products|, a reference's error) or none. */
typedef struct go_cmp {
    go_kind kind;
    double steps, ulps, rel;
    bool nan_bits, inf_step;
    const char *bound; /* the bound in words, and where it is stated */
} go_cmp;

#define GO_BITS                                                                                    \
    {                                                                                              \
        GO_EXACT, 0, 0, 0, false, false, "bit for bit"                                             \
    }
extern const go_cmp go_bits; /* GO_BITS, for a pointer */

/* Counts the elements of the two results that do not agree as cmp says,
 * printing the first few (cuda's as "cuda").  cpu and gpu: one uint32_t of
 * bits per element of dt. */
size_t go_compare(const char *what, const go_cmp *cmp, ak_dtype dt, const uint32_t *cpu,
                  const uint32_t *gpu, size_t n, const double *scale, const double *extra);
/* The same for packed elements of dt (GO_EXACT: their bytes). */
size_t go_compare_packed(const char *what, const go_cmp *cmp, ak_dtype dt, const void *cpu,
                         const void *gpu, size_t n);
/* The same for a tensor on both backends (downloaded here). */
size_t go_compare_twin(const char *what, const go_cmp *cmp, kt_twin *t, const double *scale,
                       const double *extra);
/* Two double scalars: GO_REL (or GO_EXACT: the same value, both NaN alike). */
bool go_agree_f64(const go_cmp *cmp, double cpu, double gpu);

/* ---- inputs --------------------------------------------------------------------- */
/* n host elements of format f (packed, malloc'd): every 16-bit pattern in a
 * shuffled order, repeated, or kt_fill_f32_bits's mix (seeded by seed). */
void *go_inputs(fpe_format_id f, size_t n, uint64_t seed);

/* ---- the table ------------------------------------------------------------------ */
typedef struct go_case go_case;
struct go_case {
    const char *ops;  /* the AK_OPS entries it runs, space-separated */
    const char *name; /* the case, as Check reports it */
    int loops;        /* run(c, 0) .. run(c, loops - 1) */
    void (*run)(const go_case *c, int i);
    go_cmp cmp; /* how the results are compared */
};

typedef struct go_family {
    const char *name; /* ctest: kernels_gpu_ops_<name> */
    const go_case *cases;
    size_t count;
    ak_backend **cpu, **gpu; /* the family's backends, opened around each case */
} go_family;

extern const go_family *const go_families[];
extern const size_t go_nfamilies;

/* A case builder: as Check's START_TEST, with the row as c and the index as _i. */
#if defined(__GNUC__)
#define GO_UNUSED __attribute__((unused))
#else
#define GO_UNUSED
#endif
#define GO_CASE(fn) static void fn(const go_case *c GO_UNUSED, int _i GO_UNUSED)

/* A family's table, named go_family_<fam>, with the file's backends cpu
 * and gpu. */
#define GO_FAMILY(fam, rows)                                                                       \
    const go_family go_family_##fam = {#fam, rows, sizeof rows / sizeof rows[0], &cpu, &gpu}

extern const go_family go_family_memory, go_family_cast, go_family_unscale, go_family_stats,
    go_family_update, go_family_gemm, go_family_conv, go_family_layers, go_family_gelu,
    go_family_avgpool, go_family_softmax, go_family_norm, go_family_embedding, go_family_dropout,
    go_family_add, go_family_loss, go_family_loss_scale, go_family_grad;

#endif
