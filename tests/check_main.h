/* check_main.h: how every Check program of tests/ runs its suite. */
#ifndef AMPSCOPE_TESTS_CHECK_MAIN_H
#define AMPSCOPE_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs the suite (forking, as Check does by default) and gives main's exit
 * status.  stdout is line-buffered first: Check's forked children exit
 * without flushing, and mismatch reports must not be lost. */
static inline int ts_run_suite(Suite *s)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
