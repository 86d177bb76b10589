/* ref_stats.c: running ak_stats_accumulate for test_stats and gpu_cases_stats (see ref_stats.h). */
#include "ref_stats.h"

#include <check.h>

void ref_stats_accumulate(ak_backend *b, ak_tensor x, fpe_format_id target,
                          const uint32_t *scale_bits, ak_stats *inout)
{
    float *scale = NULL;
    if (scale_bits) {
        scale = kt_dev_alloc(b, sizeof *scale);
        kt_dev_put(b, scale, scale_bits, sizeof *scale_bits);
    }
    kt_buf r = kt_buf_alloc(b, sizeof *inout / sizeof(float), AK_F32);
    kt_dev_put(b, r.t.data, inout, sizeof *inout);
    const int rc = ak_stats_accumulate(b, x, target, scale, (ak_stats *)r.t.data);
    ck_assert_msg(rc == AK_OK, "%s ak_stats_accumulate: %d %s", ak_backend_name(b), rc,
                  ak_error(b));
    kt_dev_get(b, inout, r.t.data, sizeof *inout);
    ck_assert_msg(kt_buf_guards_ok(&r), "ak_stats_accumulate wrote outside its result");
    kt_buf_free(&r);
    kt_dev_free(b, scale);
}
