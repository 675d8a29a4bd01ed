/* sh(FMT, ...): run the formatted command through system(); its exit
 * status, 128 when it did not exit (killed).  For the suites that run the
 * binary as a user would. */
#ifndef JU_TESTS_SH_H
#define JU_TESTS_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#endif
