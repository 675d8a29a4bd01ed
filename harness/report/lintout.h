/* lint's output: findings as text or JSON, rule counts, the rule list
 * (harness/report/lintout.c); names from untrusted dumps printed safely. */
#ifndef HX_LINTOUT_H
#define HX_LINTOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "unwinders/lint/lint.h"

/* A printable copy of a name: bytes outside ASCII as \xNN, at most 200. */
const char *hx_lj_pname(const char *s, size_t n, char *buf, size_t cap);

/* Findings of one file are kept and written errors first (then warnings,
 * infos; file order within a severity) unless --sort offset streams them. */
struct lint_out {
	FILE *f;
	const char *path;
	bool json, by_offset;
	bool first;
	enum lint_sev min;
	struct lint_finding *keep;
	size_t nkeep, cap;
	bool oom;
};

/* lint_file's callback (arg: a struct lint_out) */
void hx_lint_on_finding(const struct lint_finding *x, void *arg);
/* the kept findings, errors first, each severity in file order */
void hx_lint_flush(struct lint_out *o);
/* "JD052 x3, JD038 x1": the rules that fired, in table order */
void hx_lint_rule_counts(FILE *f, const struct lint_summary *sum, bool json);
void hx_lint_list_rules(FILE *f, bool json);

#endif
