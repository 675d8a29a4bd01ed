/* Runs every Check suite.  Suites are weak so a partial build still runs the
 * rest; a missing suite is printed, never silently passed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The build compiles this file once per test tier (Makefile TIERS) with the
 * tier's suites as JU_SUITES: a tier links only against its layers. */
#ifdef JU_SUITES
#define SUITES(X) JU_SUITES(X)
#else
#error "built by the Makefile once per tier, with that tier's suites as JU_SUITES"
#endif
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
