/* The lint and dump commands (lintcmd.c, dumpcmd.c) and the output helpers
 * they share.  The JSON string writer here is lint's and dump's own; report.c
 * has another (to be merged into one). */
#ifndef HX_LINTCMD_H
#define HX_LINTCMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "unwinders/perfview.h"

int hx_dump_main(int argc, char **argv);
int hx_lint_main(int argc, char **argv);
/* Decode data (named name in messages) to out; 0 to the end, 1 stopped at a
 * broken record, 2 not a jitdump. */
int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code);
struct dump_filter;
/* The same, showing only the records filter selects (NULL: all). */
int hx_dump_mem_filtered(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
			 enum pv_profile prof, bool code, const struct dump_filter *filter);

/* JSON string of n bytes (bytes outside ASCII as \u00XX: Latin-1, always valid) */
void hx_lj_str(FILE *f, const char *s, size_t n);
/* the same for a C string; NULL writes null */
void hx_lj_cstr(FILE *f, const char *s);
void hx_lj_hex(FILE *f, const uint8_t *p, size_t n);
/* A printable copy of a name: bytes outside ASCII as \xNN, at most 200. */
const char *hx_lj_pname(const char *s, size_t n, char *buf, size_t cap);

#endif
