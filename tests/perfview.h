/* Suite perfview's parts (tests/test_perfview.c, tests/perfview_*.c). */
#ifndef JU_TESTS_PERFVIEW_H
#define JU_TESTS_PERFVIEW_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

/* the tool is on PATH */
bool pvt_have_tool(const char *name);
/* Run a command and keep its stdout (stderr dropped); returns the exit status. */
int pvt_run(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* perfview_inject.c: the comparisons with real perf inject's files (golden) and live runs */
void perfview_add_inject(TCase *files, TCase *live);
/* perfview_move.c: a JIT_CODE_MOVE in perf's view */
void perfview_add_move(TCase *tc);

#endif
