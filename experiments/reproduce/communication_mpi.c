/* communication_mpi.c: the communication section's real data-parallel runs: the deep MLP in
 * O2 fp16 with PyTorch's dynamic loss scale and the fp16 compress hook, on 2 and 4 ranks
 * simulated in one process (runs/dp-w<N>, the study's own runs) and the same command under
 * `mpirun -np N` (this program, started again), compared bit for bit: the checkpoint (weights,
 * optimizer and scaler state), steps.csv and allreduce.csv's counters.  The MPI run's record
 * is written in a temporary folder and removed once compared (a run inside the report's
 * folder belongs to reproduce, which trains its runs itself). */
#define _XOPEN_SOURCE 700

#include "reproduce_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h" /* ut_find_on_path, ut_remove_tree */

/* Whether files a and b have the same bytes (false when either cannot be read). */
static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        const int ca = getc(fa), cb = getc(fb);
        if (ca != cb) same = false;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* allreduce.csv's counters (every column but the two errors, which the MPI ring's exact
 * reference sums differently: allreduce.h) of two records equal */
static bool same_counters(const char *a, const char *b)
{
    rec_allreduce_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0;
    char why[256];
    bool same = rec_read_allreduce(a, &ra, &na, why, sizeof why) == AN_OK &&
                rec_read_allreduce(b, &rb, &nb, why, sizeof why) == AN_OK && na == nb && na > 0;
    for (size_t i = 0; same && i < na; i++) {
        rec_allreduce_row x = ra[i], y = rb[i];
        x.max_abs_error = y.max_abs_error = 0;
        x.rel_l2_error = y.rel_l2_error = 0;
        same = memcmp(&x, &y, sizeof x) == 0;
    }
    free(ra);
    free(rb);
    return same;
}

/* mpirun -np world (this program) train pairs... --out dir; its last stderr line in why */
static int run_mpi(repro_study *s, const char *mpirun, int world, const char *const *pairs,
                   const char *dir, const char *log, char *why, size_t why_len)
{
    char self[4096], np[16];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(why, why_len, "cannot find this program (/proc/self/exe): %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    snprintf(np, sizeof np, "%d", world);
    const char *argv[2 * REPRO_MAX_PAIRS + 16];
    int a = 0;
    argv[a++] = mpirun;
    argv[a++] = "--oversubscribe";
    argv[a++] = "-np";
    argv[a++] = np;
    argv[a++] = self;
    argv[a++] = "train";
    char keys[REPRO_MAX_PAIRS][80];
    for (int i = 0; pairs[2 * i] && i < REPRO_MAX_PAIRS; i++) {
        snprintf(keys[i], sizeof keys[i], "--%s", pairs[2 * i]);
        argv[a++] = keys[i];
        argv[a++] = pairs[2 * i + 1];
    }
    argv[a++] = "--backend";
    argv[a++] = s->o->backend;
    if (s->o->data_dir) {
        argv[a++] = "--data";
        argv[a++] = s->o->data_dir;
    }
    argv[a++] = "--no-progress";
    argv[a++] = "--out";
    argv[a++] = dir;
    argv[a] = NULL;
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (!f || dup2(STDOUT_FILENO, STDERR_FILENO) < 0) _exit(127);
        /* OpenMPI refuses root unless told (a container's root) */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        /* a sanitizer build: LeakSanitizer would report what OpenMPI keeps at MPI_Finalize */
        const char *asan = getenv("ASAN_OPTIONS");
        char opts[1024];
        snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan ? ":" : "");
        setenv("ASAN_OPTIONS", opts, 1);
        execv(mpirun, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    /* the run's own message: the log's first line that is ampscope's */
    why[0] = '\0';
    FILE *f = fopen(log, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "ampscope", 8) == 0 && !why[0]) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(why, why_len, "%s", line);
        }
    if (f) fclose(f);
    if (!why[0])
        snprintf(why, why_len, "mpirun exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return -1;
}

int repro_dp_compare(repro_study *s, int world, const char *const *pairs, repro_dp_row *row)
{
    memset(row, 0, sizeof *row);
    row->world = world;
    snprintf(row->sim_run, sizeof row->sim_run, "dp-w%d", world);
    const char *with_world[2 * REPRO_MAX_PAIRS + 3];
    int n = 0;
    for (; pairs[n]; n += 2) {
        with_world[n] = pairs[n];
        with_world[n + 1] = pairs[n + 1];
    }
    char w[16];
    snprintf(w, sizeof w, "%d", world);
    with_world[n] = "world";
    with_world[n + 1] = w;
    with_world[n + 2] = NULL;
    if (repro_train_pairs(s, row->sim_run, NULL, with_world) != 0) return -1;
    char mpirun[4096];
    if (!ut_find_on_path("mpirun", mpirun, sizeof mpirun)) {
        snprintf(row->mpi_note, sizeof row->mpi_note, "not run: no mpirun on PATH");
        return 0;
    }
    char tmp[] = "/tmp/ampscope-dp-XXXXXX";
    if (!mkdtemp(tmp)) {
        snprintf(row->mpi_note, sizeof row->mpi_note, "not run: mkdtemp: %s", strerror(errno));
        return 0;
    }
    char dir[4200], log[4200], a[4300], b[4300];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    snprintf(log, sizeof log, "%s/mpirun.log", tmp);
    repro_progress(s, "%s: the same run under mpirun -np %d", row->sim_run, world);
    char why[1024];
    if (run_mpi(s, mpirun, world, pairs, dir, log, why, sizeof why) != 0) {
        snprintf(row->mpi_note, sizeof row->mpi_note, "failed: %.400s", why);
    } else {
        row->ran = true;
        static const char *const files[] = {REC_CHECKPOINT, REC_STEPS_CSV};
        bool *same[] = {&row->same_checkpoint, &row->same_steps};
        for (int i = 0; i < 2; i++) {
            repro_run_file(s, a, sizeof a, row->sim_run, files[i]);
            snprintf(b, sizeof b, "%s/%s", dir, files[i]);
            *same[i] = same_file(a, b);
        }
        repro_run_file(s, a, sizeof a, row->sim_run, REC_ALLREDUCE_CSV);
        snprintf(b, sizeof b, "%s/%s", dir, REC_ALLREDUCE_CSV);
        row->same_counters = same_counters(a, b);
        snprintf(row->mpi_note, sizeof row->mpi_note, "%s",
                 row->same_checkpoint && row->same_steps && row->same_counters ? "identical"
                                                                               : "DIFFERENT");
    }
    if (ut_remove_tree(tmp) != 0)
        repro_progress(s, "could not remove %s: %s", tmp, strerror(errno));
    return 0;
}
