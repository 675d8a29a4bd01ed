/* The lint and dump commands (lintcmd.c, dumpcmd.c) and the text helper they
 * share; their JSON goes through the one writer (jsonw.h, Latin-1: names
 * read from untrusted dumps stay valid JSON). */
#ifndef HX_LINTCMD_H
#define HX_LINTCMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "unwinders/model/perfview.h"

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

/* A printable copy of a name: bytes outside ASCII as \xNN, at most 200. */
const char *hx_lj_pname(const char *s, size_t n, char *buf, size_t cap);

#endif
