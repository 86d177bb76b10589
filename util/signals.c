/* signals.c: SIGINT and SIGTERM as a request to stop (util.h).  The
 * handler only records the signal; the training loop, the sweep and the
 * sweep benchmark look at the flag between steps and wind down cleanly. */
#define _POSIX_C_SOURCE 200809L /* sigaction */

#include "util.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t stop_signal;
static struct sigaction saved_int, saved_term;
static bool saved;

static void on_signal(int sig) { stop_signal = sig; }

int ut_stop_on_signals(bool restart)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term;
    if (sigaction(SIGINT, &sa, &old_int) != 0) return -1;
    if (sigaction(SIGTERM, &sa, &old_term) != 0) {
        sigaction(SIGINT, &old_int, NULL);
        return -1;
    }
    saved_int = old_int;
    saved_term = old_term;
    saved = true;
    return 0;
}

int ut_stop_requested(void) { return (int)stop_signal; }

void ut_stop_set(int sig) { stop_signal = sig; }

void ut_stop_clear(void) { stop_signal = 0; }

void ut_restore_signals(void)
{
    if (!saved) return;
    sigaction(SIGINT, &saved_int, NULL);
    sigaction(SIGTERM, &saved_term, NULL);
    saved = false;
}
