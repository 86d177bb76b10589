/* error.c: the one way a library reports an error: a status returned and a
 * message written into the caller's buffer (util.h). */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>

int ut_fail(char *msg, size_t msg_len, int status, const char *fmt, ...)
{
    if (!msg || msg_len == 0) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
    return status;
}
