/* reproduce.h: the studies behind the report (reproduce.c). */
#ifndef AMPSCOPE_REPRODUCE_H
#define AMPSCOPE_REPRODUCE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum repro_level { REPRO_SMOKE = 0, REPRO_QUICK = 1, REPRO_FULL = 2 } repro_level;

typedef struct repro_options {
    const char *out_dir;
    const char *backend;  /* cpu (default), cuda, auto */
    const char *data_dir; /* NULL: Debian's Fashion-MNIST */
    repro_level level;
    bool progress; /* a line per run on stderr */
} repro_options;

/* Runs the studies and writes out_dir/index.html; 0, or a cli.h status
 * with the reason in msg. */
int reproduce_run(const repro_options *o, char *msg, size_t msg_len);

#endif
