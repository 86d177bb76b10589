/* pool.c: the runs on this process's --jobs slots (sweep_internal.h): a
 * run started in a free slot (its folder made fresh, its log opened), a
 * slot's run reaped without waiting and judged from its exit status (0 ok,
 * 3 diverged, anything else or a signal failed), its completion marker
 * written when it ended ok or diverged. */
#define _GNU_SOURCE /* strsignal */

#include "sweep_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void sw_nap(void)
{
    const struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* snprintf's "%s" without the compiler's truncation warning: cut at len. */
static void copy_text(char *dst, size_t len, const char *src)
{
    const size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- running one training -------------------------------------------------------------------- */
/* Starts run k in slot sl; on failure to start, fills res (RS_FAILED) and
 * returns -1. */
static int start_run(sw_sweep *s, sw_slot *sl, size_t k, sw_result *res)
{
    char dir[4200], log[4400];
    sw_path_in(s, dir, sizeof dir, k, NULL);
    sw_path_in(s, log, sizeof log, k, SW_TRAIN_LOG);
    memset(res, 0, sizeof *res);
    res->run = (int32_t)k;
    res->state = RS_FAILED;
    /* an unfinished run is redone from the start, as a fresh record */
    if (access(dir, F_OK) == 0 && ut_remove_tree(dir) != 0) {
        snprintf(res->reason, sizeof res->reason, "cannot remove the unfinished run %.300s: %.60s",
                 dir, strerror(errno));
        return -1;
    }
    int fd = -1;
    if (mkdir(dir, 0777) != 0 || (fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0) {
        snprintf(res->reason, sizeof res->reason, "%.340s: %.60s", fd < 0 ? log : dir,
                 strerror(errno));
        return -1;
    }
    if (sw_train_start(s->o, k, dir, fd, &sl->pid, res->reason, sizeof res->reason) != 0) return -1;
    sl->run = k;
    sl->t0 = ut_seconds();
    return 0;
}

/* The last "ampscope train: ..." line of the run's log, the message train
 * ended with. */
static void train_message(const sw_sweep *s, size_t k, char *buf, size_t len)
{
    char path[4400], line[1024];
    sw_path_in(s, path, sizeof path, k, SW_TRAIN_LOG);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    const char *prefix = "ampscope train: ";
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            line[strcspn(line, "\n")] = '\0';
            copy_text(buf, len, line + strlen(prefix));
        }
    fclose(f);
}

/* Whether slot sl's run has ended (then sl is free and res says how, and
 * an ended run has its marker). */
bool sw_reap(sw_sweep *s, sw_slot *sl, sw_result *res)
{
    int status;
    const pid_t got = waitpid(sl->pid, &status, WNOHANG);
    if (got == 0 || (got < 0 && errno == EINTR)) return false;
    memset(res, 0, sizeof *res);
    res->run = (int32_t)sl->run;
    res->wall = ut_seconds() - sl->t0;
    sl->pid = 0;
    char why[400];
    train_message(s, sl->run, why, sizeof why);
    int exit_status = -1;
    if (got < 0) {
        res->state = RS_FAILED;
        snprintf(res->reason, sizeof res->reason, "waitpid: %s", strerror(errno));
    } else if (WIFSIGNALED(status)) {
        res->state = RS_FAILED;
        snprintf(res->reason, sizeof res->reason, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        exit_status = WEXITSTATUS(status);
        res->state = exit_status == 0 ? RS_OK : exit_status == 3 ? RS_DIVERGED : RS_FAILED;
        if (res->state == RS_FAILED)
            snprintf(res->reason, sizeof res->reason, "exit status %d: %s", exit_status,
                     why[0] ? why : "no message (see train.log)");
        else if (res->state == RS_DIVERGED)
            snprintf(res->reason, sizeof res->reason, "%s", why);
    }
    sw_one_line(res->reason);
    if (res->state == RS_OK || res->state == RS_DIVERGED) {
        char msg[512];
        if (sw_write_marker(s, res, exit_status, msg, sizeof msg) != 0) {
            res->state = RS_FAILED;
            snprintf(res->reason, sizeof res->reason, "the run ended but %.380s", msg);
            sw_one_line(res->reason);
        }
    }
    return true;
}

size_t sw_running(const sw_sweep *s)
{
    size_t n = 0;
    for (int j = 0; j < s->o->jobs; j++)
        n += s->slots[j].pid != 0;
    return n;
}

void sw_forward_stop(sw_sweep *s)
{
    for (int j = 0; j < s->o->jobs; j++)
        if (s->slots[j].pid) kill(s->slots[j].pid, SIGTERM);
}

/* Starts run k in a free slot (there is one); false if it could not start
 * (res then holds the failure). */
bool sw_start_in_free_slot(sw_sweep *s, size_t k, sw_result *res)
{
    for (int j = 0; j < s->o->jobs; j++)
        if (!s->slots[j].pid) return start_run(s, &s->slots[j], k, res) == 0;
    return false;
}
