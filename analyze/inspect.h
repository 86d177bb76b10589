/* inspect.h: the precision statistics of any tensor in a safetensors file
 * (`ampscope inspect`): for a target format and loss scales, how many of its
 * values are zero, flush, become subnormal or overflow, how many are not
 * finite, max |x| and the log2 histogram, as the training record counts
 * them for ampscope's own runs (analyze/record.h, tensors.csv and hist.csv).
 *
 * Counts are exact: x scaled by S is the exact product x * S rounded once to
 * the target, to nearest even (kernels.h, ak_stats).  F32, F16 and BF16
 * tensors go through the record's own code, ak_stats_accumulate on the cpu
 * backend.  F64 tensors, which the kernels do not take, are classified here
 * (an_f64_class): never by rounding to fp32 first, which can change a class
 * (2^-25 (1 + 2^-40) rounds to the fp32 2^-25, which flushes in fp16, but
 * itself rounds up to the fp16 subnormal 2^-24).
 *
 * The histogram is wider than the record's (AK_HIST_*): F64 values reach
 * binades from 2^-1074 to 2^1023.  Bin labels are hist.csv's ("zero",
 * "nonfinite", the binade's e), the record's own label inside its range.
 *
 * Errors as in atomic_file.h: an AN_* status and a message in msg.
 */
#ifndef AMPSCOPE_ANALYZE_INSPECT_H
#define AMPSCOPE_ANALYZE_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h"
#include "fpe.h"
#include "kernels.h"
#include "safetensors.h"

/* The wide log2 histogram: AN_BIN_ZERO zeros (either sign), AN_BIN(e) the
 * finite x with 2^e <= |x| < 2^(e+1), AN_BIN_NONFINITE infinities and NaNs. */
#define AN_BIN_EMIN      (-1074)
#define AN_BIN_EMAX      1023
#define AN_BIN_ZERO      0
#define AN_BIN(e)        (1 + (e) - (AN_BIN_EMIN))
#define AN_BIN_NONFINITE (AN_BIN_EMAX - AN_BIN_EMIN + 2)
#define AN_BINS          (AN_BIN_EMAX - AN_BIN_EMIN + 3)

/* A bin's label, as hist.csv's (rec_hist_bin_label): buf holds at least
 * REC_BIN_LABEL_MAX bytes.  buf, or NULL for an invalid bin. */
char *an_bin_label(int bin, char *buf);
/* hist += the record's histogram (AK_HIST_* layout). */
void an_bins_add_ak(uint64_t hist[AN_BINS], const uint64_t ak[AK_HIST_BINS]);

/* What one tensor holds at one scale (ak_stats' fields and meanings). */
typedef struct an_inspect_row {
    float scale;
    uint64_t count, zero, nonzero, nonfinite;
    uint64_t flushed, subnormal, overflowed; /* of the finite nonzero values */
    double amax;                             /* max |x| over finite x (0 when none); unscaled */
} an_inspect_row;

/* The dtypes inspect reads. */
bool an_inspect_dtype_ok(st_dtype dt); /* F32, F16, BF16, F64 */

/* The statistics of tensor t for target (FPE_FMT_F16, _BF16 or _F32) at
 * each of the n_scales scales (finite, > 0): rows[i] for scales[i], and,
 * when hist is not NULL, its histogram added to hist (unscaled, so once).
 * cpu is a cpu backend (ak_open("cpu")).  AN_OK; AN_EINVAL with "tensor
 * 'NAME' has dtype I64 (inspect reads F32, F16, BF16 and F64)" or for a bad
 * scale or target; AN_EIO with the backend's message. */
int an_inspect_tensor(ak_backend *cpu, const st_tensor *t, fpe_format_id target,
                      const float *scales, size_t n_scales, an_inspect_row *rows,
                      uint64_t hist[AN_BINS], char *msg, size_t msg_len);

/* The class of |x| * s rounded once to target (FPE_FMT_F16, _BF16, _F32),
 * to nearest even, exactly, for finite nonzero x and finite s > 0:
 * AN_CLASS_FLUSHED (to zero), _SUBNORMAL (a nonzero subnormal), _NORMAL or
 * _OVERFLOWED (to infinity). */
enum { AN_CLASS_FLUSHED = 0, AN_CLASS_SUBNORMAL, AN_CLASS_NORMAL, AN_CLASS_OVERFLOWED };
int an_f64_class(double x, double s, fpe_format_id target);

#endif
