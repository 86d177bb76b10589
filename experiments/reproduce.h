/* reproduce.h: the studies behind the report (reproduce/). */
#ifndef AMPSCOPE_REPRODUCE_H
#define AMPSCOPE_REPRODUCE_H

#include <stdbool.h>
#include <stddef.h>

/* reproduce_run's statuses (the program's exit statuses 1 and 2). */
enum repro_status { REPRO_OK = 0, REPRO_EFAIL = -1, REPRO_EINPUT = -2 };

typedef enum repro_level { REPRO_SMOKE = 0, REPRO_QUICK = 1, REPRO_FULL = 2 } repro_level;

typedef struct repro_options {
    const char *out_dir;
    const char *backend;  /* cpu (default), cuda, auto */
    const char *data_dir; /* NULL: Debian's Fashion-MNIST */
    repro_level level;
    bool force;                         /* --force: replace what out_dir holds (ampscope's files) */
    bool progress;                      /* a line per run on stderr */
    const char *version, *git_revision; /* the program's, recorded in each run.json */
} repro_options;

/* Runs the studies and writes out_dir/index.html; 0, or a repro_status
 * with the reason in msg.  Prints its progress on stderr (o->progress) and
 * each run's last line on stdout, as train_run does. */
int reproduce_run(const repro_options *o, char *msg, size_t msg_len);

#endif
