/* record_internal.h: what the log files of analyze/ share, private to them
 * (record_log.c opens, resumes, flushes and closes a log; record_write.c
 * writes its rows).  Not installed, not for other folders. */
#ifndef AMPSCOPE_RECORD_INTERNAL_H
#define AMPSCOPE_RECORD_INTERNAL_H

#include <stdio.h>

#include "record.h"

struct rec_log {
    FILE *fp;
    char *path;
    int table; /* rec_table, or -1 for a header that is none of them */
    char error[512];
};

/* Records a printf-style message as the log's last error (rec_log_error)
 * and returns status. */
int rec_log_fail(rec_log *log, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
