/* gnuplot.c: the report's gnuplot: the first `gnuplot` on PATH whose
 * `--version` runs, and running a program with its output captured (the
 * tail, where an error message is), for figure.c. */
#define _POSIX_C_SOURCE 200809L /* fork/exec */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_internal.h"

int rp_run_program(const char *path, char *const argv[], const char *cwd, char *out, size_t out_len,
                   int *status, char *why, size_t why_len)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return -1;
    }
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_len, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        /* only async-signal-safe calls between fork and exec */
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        if (fd[1] > 2) close(fd[1]);
        if (cwd && chdir(cwd) != 0) _exit(126);
        execv(path, argv);
        _exit(127);
    }
    close(fd[1]);
    const size_t cap = out_len ? out_len - 1 : 0;
    size_t kept = 0;
    char chunk[4096];
    for (;;) {
        const ssize_t got = read(fd[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        /* keep the tail: drop from the front what no longer fits */
        size_t n = (size_t)got;
        const char *from = chunk;
        if (n > cap) {
            from += n - cap;
            n = cap;
        }
        if (kept + n > cap) {
            const size_t drop = kept + n - cap;
            memmove(out, out + drop, kept - drop);
            kept -= drop;
        }
        memcpy(out + kept, from, n);
        kept += n;
    }
    if (out_len) out[kept] = '\0';
    close(fd[0]);
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(why, why_len, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

void rp_last_line(const char *text, char *line, size_t len)
{
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    snprintf(line, len, "%.*s", (int)(end - start), start);
}

void rp_describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "ended with wait status %d", status);
}

/* The first executable `gnuplot` on PATH, if `gnuplot --version` runs. */
void rp_find_gnuplot(rp_report *r)
{
    const char *path = getenv("PATH");
    snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "gnuplot is not on PATH");
    if (!path || !*path) return;
    char *found = NULL;
    for (const char *p = path; !found;) {
        const char *colon = strchr(p, ':');
        const size_t n = colon ? (size_t)(colon - p) : strlen(p);
        /* an empty entry is the current directory, as for execvp */
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)(n ? n : 1), n ? p : ".");
        char *cand = rp_join_path(dir, "gnuplot");
        struct stat st;
        if (cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            found = cand;
        else
            free(cand);
        if (!colon) break;
        p = colon + 1;
    }
    if (!found) return;
    char out[512], why[256], state[64];
    int status = 0;
    char *argv[] = {found, (char *)"--version", NULL};
    if (rp_run_program(found, argv, NULL, out, sizeof out, &status, why, sizeof why) != 0) {
        snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "%.150s --version: %.90s", found, why);
        free(found);
        return;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rp_describe_status(status, state, sizeof state);
        snprintf(r->gnuplot_about, sizeof r->gnuplot_about, "%.150s --version %s", found, state);
        free(found);
        return;
    }
    rp_last_line(out, r->gnuplot_about, sizeof r->gnuplot_about);
    r->gnuplot = found;
}
