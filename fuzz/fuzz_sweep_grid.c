/* fuzz_sweep_grid.c: `ampscope sweep --grid` (experiments/sweep.h
 * sw_grid_parse), then what the sweep does with a grid before it runs
 * anything: each run's name and, for grids of at most 4 points,
 * sweep_validate, which fills every point's train_options through train's
 * table and checks them as train_run does (nothing is trained or
 * written).  The input is the grid text. */
#define _XOPEN_SOURCE 700

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet_stdout();
    char *text = fuzz_string(data, size);
    sweep_options o;
    memset(&o, 0, sizeof o);
    char msg[512];
    msg[0] = '\0';
    if (sw_grid_parse(text, &o.grid, msg, sizeof msg) != 0) {
        if (!msg[0] || o.grid.axes || o.grid.n_axes) abort();
        fuzz_refused(msg);
        free(text);
        return 0;
    }
    const sw_grid *g = &o.grid;
    if (g->n_axes == 0 || g->n_runs == 0 || g->n_runs > SW_MAX_RUNS) abort();
    const size_t runs[3] = {0, g->n_runs / 2, g->n_runs - 1};
    static const char *shared[] = {"--net", "simplenet", "--steps", "1"};
    o.shared = shared;
    o.n_shared = 4;
    o.out_dir = "/dev/null";
    o.jobs = 1;
    for (int i = 0; i < 3; i++) {
        char name[64];
        sw_run_name(g, runs[i], name, sizeof name);
        if (strlen(name) >= sizeof name) abort();
        for (size_t a = 0; a < g->n_axes; a++)
            if (sw_grid_value(g, runs[i], a) >= g->axes[a].n_values) abort();
    }
    if (g->n_runs <= 4) {
        const int status = sweep_validate(&o, msg, sizeof msg);
        if (status != SW_OK && status != SW_EINPUT) abort();
        if (status != SW_OK) fuzz_refused(msg);
    }
    sw_grid_free(&o.grid);
    free(text);
    return 0;
}
