/* What a test needs of the arch it runs on: the facts from arches.def
 * (arches.h), and the test values of each arch's cases in one table here
 * instead of an #if per test.  An arch without a row fails the test that
 * asks, naming the arch. */
#ifndef JU_TESTS_HOSTARCH_H
#define JU_TESTS_HOSTARCH_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arches.h"

struct host_cases {
	const char *arch;
	const char *dir;        /* cases/<arch> */
	const char *cpython;    /* its CPython trampoline case (a frame-pointer one) */
	const char *leftover;   /* a case whose verdicts do not depend on the stack's leftovers */
	const char *losses;     /* cases whose recording loses frames that lint explains (space-separated) */
	int min_cols;           /* the narrowest terminal its case set's matrix is checked at (test_report) */
	bool libdw_fp;          /* elfutils' backend walks frame pointers where there is no CFI
				 * (x86_64, aarch64: its unwind hook; riscv64's backend has none) */
};

static const struct host_cases host_cases_table[] = {
	{ "x86_64", "cases/x86_64", "cpython-3.13-fp.case", "eh-frame-unaligned.case",
	  "neg-cfa-off-by-8.case unwind-after-load.case", 80, true },
	{ "aarch64", "cases/aarch64", "cpython-aarch64.case", "big-frame.case", "neg-ra-column.case",
	  /* at 80 columns a wrapped cell of its six-unwinder table is one
	   * tests/term_check.py cannot read (cpython-aarch64-bytes fp): open */
	  100, true },
	/* riscv64 (no lint decoder: its losses are the records' own, order and placement) */
	{ "riscv64", "cases/riscv64", "cpython-riscv64-fp.case", "big-frame.case",
	  "unwind-after-load.case hdr-before.case", 100, false },
};

/* also called while a suite is built, outside a test: no ck_assert here */
static inline const struct arch_facts *host_facts(void)
{
	const struct arch_facts *f = arch_facts_host();
	if (!f) {
		fprintf(stderr, "tests/hostarch.h: this build's arch (JU_HOST_ARCH) is not in arches.def\n");
		abort();
	}
	return f;
}

static inline const struct host_cases *host_cases(void)
{
	const struct arch_facts *f = host_facts();
	for (size_t i = 0; i < sizeof(host_cases_table) / sizeof(host_cases_table[0]); i++)
		if (!strcmp(host_cases_table[i].arch, f->name))
			return &host_cases_table[i];
	ck_abort_msg("tests/hostarch.h: no row for arch %s", f->name);
	return NULL;
}

/* Does a program this test starts (perf, sh) run on another arch than this
 * build?  Under qemu-user the build is aarch64 while the programs it execs run
 * natively (binfmt): `uname -m` from a shell says the machine's own arch. */
static inline bool runs_under_other_arch(void)
{
	char m[64] = "";
	FILE *p = popen("uname -m", "r");
	if (!p)
		return false;
	if (!fgets(m, sizeof(m), p))
		m[0] = 0;
	pclose(p);
	m[strcspn(m, "\n")] = 0;
	return m[0] && strcmp(m, host_facts()->name) != 0;
}

#endif
