/* sweep_fixtures.h: a hand-written sweep summary for the report's tests
 * (test_sweep_heatmaps, test_report): three axes a, b, c, and rows whose
 * status and empty values decide what each heatmap cell averages. */
#ifndef AMPSCOPE_TESTS_PLOTS_SWEEP_FIXTURES_H
#define AMPSCOPE_TESTS_PLOTS_SWEEP_FIXTURES_H

#include "report_testing.h"

static const char sweep_header[] =
    "a,b,c,final_loss,test_accuracy,skipped_steps,final_scale,mean_underflow_frac,"
    "lost_update_frac,wall_seconds,status,reason\n";

/* Three axes; c is averaged over when the heatmaps are a by b.  Failed and
 * pending rows never count; an empty value does not count in its mean. */
static const char sweep_rows[] = "1,x,p,0.5,0.5,2,1024,0.25,0,1.0,ok,\n"
                                 "1,x,q,0.5,0.75,4,1024,0.125,0,1.0,diverged,\n"
                                 "1,y,p,0.5,0.25,1,1024,,0,1.0,ok,\n"
                                 "1,y,q,0.5,0.9,9,1024,0.5,0,1.0,failed,boom\n"
                                 "2,x,p,0.5,0.125,0,1024,0.5,0,1.0,ok,\n"
                                 "2,x,q,0.5,0.375,6,1024,0.25,0,1.0,ok,\n"
                                 "2,y,p,,,,,,,,failed,crash\n"
                                 "2,y,q,,,,,,,,pending,running\n";

static inline void make_sweep(const char *dir, const char *header, const char *rows)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", header, rows);
    put_in(dir, "summary.csv", text);
}

#endif
