/* tc_infer.h: what a black-box fp16/bf16 dot product with fp32 accumulation
 * does, found from crafted inputs in the style of Fasi, Higham, Mikaitis and
 * Pranesh (2021) and the FTTN tests of Li et al. (2024).
 *
 * The black box is a callback d = c + sum_{l<k} a_l b_l (16-bit patterns of
 * one format, fp32 c and d): cuBLAS on the GPU (gpu_tc_probe.cu) or the
 * model of kernels/elem/tc_dot.h on the CPU (test_tc_infer.c proves that the
 * inference recovers the model's parameters).  Every probe but one sets c =
 * 0 and builds its terms from products, so the answers hold whether a GEMM
 * feeds C into the tensor cores or adds it in an fp32 epilogue; the one that
 * uses c says which.
 *
 * What each probe assumes is stated in tc_infer.c; in short the features
 * are measured in this order, each using the ones before:
 *   products exact -> block size -> final rounding -> extra alignment bits
 *   -> truncation of shifted-out bits -> normalisation inside a block
 *   -> whether c enters the first block.
 */
#ifndef AMPSCOPE_TESTS_GPU_TC_INFER_H
#define AMPSCOPE_TESTS_GPU_TC_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fpe.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef float (*tc_dot_fn)(const uint16_t *a, const uint16_t *b, size_t k, float c, void *ctx);

#define TC_UNKNOWN        (-1000) /* a feature the probes could not decide */
#define TC_BLOCK_SCAN_MAX 256     /* the largest block size looked for */

/* How bits shifted out in the alignment are treated. */
typedef enum tc_align {
    TC_ALIGN_UNKNOWN = 0,
    TC_ALIGN_TRUNCATE, /* toward zero, per term */
    TC_ALIGN_FLOOR,    /* toward -inf */
    TC_ALIGN_NEAREST,  /* rounded to nearest */
    TC_ALIGN_CEIL      /* toward +inf */
} tc_align;

typedef struct tc_features {
    bool products_exact;
    int block;      /* products aligned together; 2 means "1 or 2"; 0: none up to the scan limit */
    int round;      /* fpe_round of a block's sum to fp32 (RNE, RZ, RD, RU), or TC_UNKNOWN */
    int extra_bits; /* fraction bits kept beyond fp32's 23 below the largest exponent, or
                       TC_UNKNOWN; TC_EXTRA_ABOVE when more than the probes can see */
    tc_align align;
    int normalises_in_block; /* 1, 0, or TC_UNKNOWN (blocks of fewer than 4) */
    int c_in_block;          /* 1: c is aligned with the first block; 0: added afterwards */
    int calls;               /* how many dot products the inference asked for */
} tc_features;

#define TC_EXTRA_ABOVE 1000

/* Runs every probe against dot for inputs of format f (FPE_FMT_F16 or
 * FPE_FMT_BF16).  0, or -1 when f is not one of them or dot is NULL. */
int tc_infer(fpe_format_id f, tc_dot_fn dot, void *ctx, tc_features *out);

/* The model the features describe, when they name one: products exact,
 * block, round and extra_bits known, truncation.  false otherwise. */
bool tc_features_model(const tc_features *ft, ak_tc_model *out);

/* One line per feature, "  name: value", for people. */
void tc_features_print(FILE *fp, const char *title, const tc_features *ft);

#ifdef __cplusplus
}
#endif
#endif
