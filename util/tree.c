/* tree.c: the removal of a directory tree (util.h), for unfinished runs
 * that are redone and for scratch folders. */
#define _XOPEN_SOURCE 700 /* nftw */

#include "util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int ut_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    /* FTW_PHYS: a symbolic link is an entry to remove, not a folder to enter */
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}
