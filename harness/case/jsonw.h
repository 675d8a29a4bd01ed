/* One JSON string writer for every report (run's JSON, lint's and dump's). */
#ifndef HX_JSONW_H
#define HX_JSONW_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Bytes >= 0x7f as \u00XX (Latin-1: any byte string stays valid JSON, for
 * names read from untrusted files); without it they pass through (UTF-8). */
#define HX_JSONW_LATIN1 1u

/* s[0..n) as a quoted JSON string. */
void hx_jsonw_strn(FILE *f, const char *s, size_t n, unsigned flags);
/* A C string, or null for NULL. */
void hx_jsonw_str(FILE *f, const char *s, unsigned flags);
/* n bytes as hex digits (no quotes) */
void hx_jsonw_hex(FILE *f, const uint8_t *p, size_t n);
/* ["0x..", ...]: a chain of addresses */
void hx_jsonw_addrs(FILE *f, const uint64_t *a, int n);

#endif
