/* Generations of a case's code: the case parser's part for [code 2] ..
 * [code N] (casegen.c), and what the capture and the runner read of them. */
#ifndef HX_CASEGEN_H
#define HX_CASEGEN_H

#include "harness/case/case.h"

/* Bytes from the first generation's address a move may put the code in
 * (the capture maps them all: past them nothing is mapped for the code). */
#define HX_GEN_AREA 0x1000

/* A generation written over the first fits its block: the first's code
 * size rounded up to this (a JIT's allocator hands out aligned blocks). */
#define HX_GEN_BLOCK 16

const char *hx_gen_how_name(int how);
/* "[code N]": 0 (*gi its index in c->gens), 1 when s is no such header,
 * -EINVAL with "path:line: message" in err. */
int hx_gen_section(struct hx_case *c, const char *s, int line, int *gi, struct ju_err *err);
/* A line of [code N] (comment stripped, trimmed): 0 or -EINVAL (err). */
int hx_gen_line(struct hx_case *c, int gi, const char *s, int line, struct ju_err *err);
/* The whole case's generations once every line is read (after [expect]):
 * 0 or a negative errno (err names the line). */
int hx_gen_check(struct hx_case *c, struct ju_err *err);
/* An "at" item's "@gN" suffix cut off t into *gen (0: none); -EINVAL if malformed. */
int hx_gen_suffix(char *t, int *gen);

#endif
