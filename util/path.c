/* path.c: ut_find_on_path (util.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

bool ut_find_on_path(const char *name, char *path, size_t size)
{
    const char *p = getenv("PATH");
    if (!p) return false;
    while (*p) {
        const char *end = strchr(p, ':');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && (size_t)snprintf(path, size, "%.*s/%s", (int)len, p, name) < size &&
            access(path, X_OK) == 0)
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}
