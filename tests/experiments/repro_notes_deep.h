/* repro_notes_deep.h: the loss-scaling and per-layer underflow sections'
 * sentences against hand-written records (repro_notes_deep.c), a test case
 * of test_repro_notes. */
#ifndef AMPSCOPE_TESTS_REPRO_NOTES_DEEP_H
#define AMPSCOPE_TESTS_REPRO_NOTES_DEEP_H

#include <check.h>

void repro_notes_deep(Suite *s);

#endif
