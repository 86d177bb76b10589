/* clock.c: the monotonic clock every duration is measured with, and the
 * process's CPU time (util.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "util.h"

#include <time.h>

double ut_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ut_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
