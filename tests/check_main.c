/* Runs every Check suite.  Suites are weak so a partial build still runs the
 * rest; a missing suite is printed, never silently passed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITES(X) \
	X(ehframe) X(emit) X(ehwrite) X(jdwrite) X(jitdump) X(arena) X(capture) X(fp) \
	X(oracle) X(judge) X(caseparse) X(samples) X(cli) X(perfview) X(libunwind) X(libdw) \
	X(aarch64) X(lrstep) X(lint) X(decode) X(perfdata) X(host) X(spin) X(maptree) X(realreplay) \
	X(report) X(perfcheck) X(files) X(fuzzcfi) X(session)

#define DECL(n) Suite *suite_##n(void) __attribute__((weak));
SUITES(DECL)

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *only = argc > 1 ? argv[1] : NULL;
	SRunner *sr = NULL;
	int missing = 0;
#define ADD(n) \
	if (!only || !strcmp(only, #n)) { \
		if (suite_##n) { \
			if (!sr) sr = srunner_create(suite_##n()); \
			else srunner_add_suite(sr, suite_##n()); \
		} else { printf("suite %s: not built\n", #n); missing++; } \
	}
	SUITES(ADD)
	if (!sr) {
		fprintf(stderr, "no suite to run\n");
		return 1;
	}
	const char *tap = getenv("JU_TAP");
	if (tap)
		srunner_set_tap(sr, tap);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (missing)
		printf("%d suite(s) not built: the run fails\n", missing);
	return failed || missing ? 1 : 0;
}
