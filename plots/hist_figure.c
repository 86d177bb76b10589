/* hist_figure.c: rp_hist_figure, one log2-histogram figure (hist.gp) from
 * histograms in memory (`ampscope inspect`), drawn as the report draws the
 * histograms of a run's record. */
#include "report_internal.h"

#include "inspect.h"

#include <stdio.h>

int rp_hist_figure(rp_report *r, const char *name, const char *caption, const char *title,
                   const char *const *series, const uint64_t *const *hists, size_t n,
                   const char *const *more_vars)
{
    sbuf text = {0};
    bool any = false;
    sb_add(&text, "bin,count,series\n");
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < AN_BINS; b++) {
            char label[REC_BIN_LABEL_MAX];
            if (!hists[i][b] || !an_bin_label(b, label)) continue;
            sb_printf(&text, "%s,%llu,%s\n", label, (unsigned long long)hists[i][b], series[i]);
            any = true;
        }
    char title_var[512];
    snprintf(title_var, sizeof title_var, "title=%s", title ? title : "");
    const char *vars[16];
    size_t k = 0;
    vars[k++] = title_var;
    for (size_t i = 0; more_vars && more_vars[i] && k + 1 < 16; i++)
        vars[k++] = more_vars[i];
    vars[k] = NULL;
    const int rc = rp_figure_from(r, &text, any, "hist.gp", name, caption, vars);
    sb_free(&text);
    return rc;
}
