/* trampolines/ op parser and emitters: bytes against golden files whose
 * instruction text came from objdump (tests/golden/trampolines/README), truth
 * rows against hand-derived tables, error messages. */
#include <errno.h>
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trampolines/tramp.h"

#define GOLDEN "tests/golden/trampolines/"
#define MAXOPS 300

static struct ju_err err;

/* Parses lines into ops (line numbers 1..n) and emits them for arch. */
static struct tr_func *emit_lines(const struct tr_arch *a, const char *const *lines, size_t n)
{
	static struct tr_op ops[MAXOPS];
	ck_assert_uint_le(n, MAXOPS);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].line = (int)i + 1;
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0,
			      "parse '%s': %s", lines[i], err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(a, ops, n, f, &err) == 0, "emit: %s", err.msg);
	return f;
}

/* Emits and returns the error message (the emit must fail). */
static const char *emit_error(const struct tr_arch *a, const char *const *lines, size_t n)
{
	static struct tr_op ops[MAXOPS];
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].line = (int)i + 1;
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0,
			      "parse '%s': %s", lines[i], err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	int rc = tr_emit(a, ops, n, f, &err);
	free(f);
	ck_assert_msg(rc < 0, "emit should fail");
	return err.msg;
}

static char *read_text(const char *path)
{
	FILE *fp = fopen(path, "r");
	char cwd[512];
	ck_assert_msg(fp, "cannot open %s (cwd %s): run the tests from the repository root",
		      path, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	static char buf[16384];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return buf;
}

static size_t parse_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned v;
	int used;
	while (sscanf(s, " %2x%n", &v, &used) == 1) {
		ck_assert_uint_lt(n, cap);
		out[n++] = (uint8_t)v;
		s += used;
	}
	return n;
}

/* One disassembled instruction from objdump's output. */
struct dis {
	unsigned off, len;
	char text[64];
};

/* Parses `objdump -D` lines "   4:\tff d1   \tcall   *%rcx"; continuation lines
 * (bytes only) extend the previous instruction.  Whitespace runs become one space. */
static size_t parse_objdump(const char *s, struct dis *d, size_t cap)
{
	size_t n = 0;
	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t ll = eol ? (size_t)(eol - s) : strlen(s);
		char line[256];
		snprintf(line, sizeof(line), "%.*s", (int)ll, s);
		s += ll + (eol ? 1 : 0);
		unsigned off;
		char *colon = strchr(line, ':');
		if (!colon || sscanf(line, " %x:", &off) != 1)
			continue;
		char *tab1 = strchr(colon, '\t');
		if (!tab1)
			continue;
		char *tab2 = strchr(tab1 + 1, '\t');
		unsigned nb = 0;
		for (char *p = tab1 + 1; p < (tab2 ? tab2 : line + strlen(line)); p++)
			if (isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1])) {
				nb++;
				p++;
			}
		if (!tab2) {
			ck_assert_uint_gt(n, 0);
			d[n - 1].len += nb;
			continue;
		}
		ck_assert_uint_lt(n, cap);
		d[n].off = off;
		d[n].len = nb;
		size_t o = 0;
		bool sp = false;
		for (char *p = tab2 + 1; *p && o < sizeof(d[n].text) - 1; p++) {
			if (isspace((unsigned char)*p)) {
				sp = o > 0;
				continue;
			}
			if (sp)
				d[n].text[o++] = ' ';
			sp = false;
			d[n].text[o++] = *p;
		}
		d[n].text[o] = '\0';
		n++;
	}
	return n;
}

static void check_against_dis(const struct tr_func *f, const struct dis *d, size_t nd, const char *what)
{
	ck_assert_msg(nd == f->nrows, "%s: %zu instructions disassembled, %zu rows", what, nd, f->nrows);
	for (size_t i = 0; i < nd; i++) {
		ck_assert_msg(d[i].off == f->rows[i].offset && d[i].len == f->rows[i].len,
			      "%s: insn %zu at 0x%x len %u, row at 0x%x len %u", what, i,
			      d[i].off, d[i].len, f->rows[i].offset, f->rows[i].len);
		ck_assert_msg(!strcmp(d[i].text, f->rows[i].insn), "%s: at 0x%x objdump says '%s', emitter '%s'",
			      what, d[i].off, d[i].text, f->rows[i].insn);
	}
}

/* Golden bytes, golden objdump text, and (when objdump is installed) a live objdump. */
static void check_golden(const char *name, const struct tr_func *f)
{
	char path[256];
	uint8_t want[256];
	snprintf(path, sizeof(path), GOLDEN "%s.hex", name);
	size_t nw = parse_hex(read_text(path), want, sizeof(want));
	ck_assert_msg(nw == f->code_size && !memcmp(want, f->code, nw),
		      "%s: code differs from %s (%zu vs %zu bytes)", name, path, f->code_size, nw);

	struct dis d[64];
	snprintf(path, sizeof(path), GOLDEN "%s.objdump", name);
	size_t nd = parse_objdump(read_text(path), d, 64);
	check_against_dis(f, d, nd, path);

	if (system("objdump --version >/dev/null 2>&1") != 0) {
		printf("emit: objdump not installed, live disassembly of %s skipped\n", name);
		return;
	}
	char bin[] = "/tmp/ju-emit-XXXXXX";
	int fd = mkstemp(bin);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, f->code, f->code_size), (ssize_t)f->code_size);
	close(fd);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "objdump -D -b binary -mi386:x86-64 %s", bin);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	static char out[16384];
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	unlink(bin);
	if (st != 0) {
		/* e.g. a native aarch64 objdump built without x86 support */
		printf("emit: '%s' failed (status %d), live disassembly of %s skipped\n", cmd, st, name);
		return;
	}
	/* Keep only instruction lines; the header has "file format binary:" etc. */
	static char insns[16384];
	size_t o = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned off;
		char c;
		if (sscanf(line, " %x%c", &off, &c) == 2 && c == ':')
			o += (size_t)snprintf(insns + o, sizeof(insns) - o, "%s\n", line);
	}
	nd = parse_objdump(insns, d, 64);
	check_against_dis(f, d, nd, "live objdump");
}

/* ---- golden encodings ---- */

static const char *const cpy313[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
static const char *const cpy313_cet[] = { "endbr64", "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
static const char *const cpy312[] = { "alloc 8", "call_target", "free 8", "ret" };
static const char *const bigframe[] = { "push_fp", "set_fp", "alloc 0x1000", "call_target", "leave", "ret" };
static const char *const saves[] = {
	"push_fp", "set_fp", "save_reg %rbx", "save_reg r12", "alloc 8", "call_target",
	"free 8", "restore_reg %r12", "restore_reg rbx", "pop_fp", "ret",
};
static const char *const tail[] = { "push_fp", "set_fp", "pop_fp", "tail_jump" };
static const char *const misc[] = { "nop", "alloc 0x88", "call_target", "free 136", "ret  " };

static const struct golden_case {
	const char *name;
	const char *const *lines;
	size_t n;
} goldens[] = {
	{ "cpython-3.13-fp", cpy313, 5 },
	{ "cpython-3.13-fp-cet", cpy313_cet, 6 },
	{ "cpython-3.12-nofp", cpy312, 4 },
	{ "bigframe", bigframe, 6 },
	{ "saves", saves, 11 },
	{ "tail", tail, 4 },
	{ "misc", misc, 5 },
};

START_TEST(test_golden)
{
	const struct golden_case *g = &goldens[_i];
	struct tr_func *f = emit_lines(&tr_arch_x86_64, g->lines, g->n);
	check_golden(g->name, f);
	free(f);
}
END_TEST

/* ---- truth rows ---- */

struct want_row {
	uint32_t off;
	int cfa_reg;
	int64_t cfa_off, sp_off;
	bool fp_saved, fp_frame, is_call;
};

static void check_rows(const struct tr_func *f, const struct want_row *w, size_t n)
{
	ck_assert_uint_eq(f->nrows, n);
	for (size_t i = 0; i < n; i++) {
		const struct tr_row *r = &f->rows[i];
		ck_assert_msg(r->offset == w[i].off, "row %zu at 0x%x, want 0x%x", i, r->offset, w[i].off);
		ck_assert_msg(r->cfa_reg == w[i].cfa_reg && r->cfa_off == w[i].cfa_off,
			      "0x%x (%s): CFA r%d%+lld, want r%d%+lld", r->offset, r->insn, r->cfa_reg,
			      (long long)r->cfa_off, w[i].cfa_reg, (long long)w[i].cfa_off);
		ck_assert_msg(r->sp_off == w[i].sp_off, "0x%x: CFA-SP %lld want %lld", r->offset,
			      (long long)r->sp_off, (long long)w[i].sp_off);
		ck_assert_msg(r->fp_saved == w[i].fp_saved, "0x%x: fp_saved %d", r->offset, r->fp_saved);
		ck_assert_msg(r->fp_frame == w[i].fp_frame, "0x%x: fp_frame %d", r->offset, r->fp_frame);
		ck_assert_msg(r->is_call == w[i].is_call, "0x%x: is_call %d", r->offset, r->is_call);
	}
}

START_TEST(test_rows_cpython_fp)
{
	/* Before push: CFA=rsp+8. Before mov: rbp saved at CFA-16. The call and
	 * the pop see rbp -> frame record. After the pop: back to rsp+8. */
	static const struct want_row w[] = {
		{ 0, 7, 8, 8, false, false, false },
		{ 1, 7, 16, 16, true, false, false },
		{ 4, 6, 16, 16, true, true, true },
		{ 6, 6, 16, 16, true, true, false },
		{ 7, 7, 8, 8, false, false, false },
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	check_rows(f, w, 5);
	ck_assert_int_eq(f->ret_off, 6);
	for (size_t i = 0; i < f->nrows; i++) {
		ck_assert_int_eq(f->rows[i].ra_where, TR_RA_AT_CFA);
		ck_assert_int_eq(f->rows[i].ra_off, -8);
		if (f->rows[i].fp_saved)
			ck_assert_int_eq(f->rows[i].fp_save_off, -16);
		ck_assert(f->rows[i].fp_ra_ok == f->rows[i].fp_frame);
	}
	ck_assert_str_eq(f->rows[2].insn, "call *%rcx");
	free(f);
}
END_TEST

/* call_target rel32: e8 and a displacement of 0 (the capture sets it), the
 * return address after its 5 bytes, the displacement's offset recorded;
 * x86_64 only, and no other argument */
START_TEST(test_call_rel32)
{
	static const char *const l[] = { "push_fp", "set_fp", "call_target rel32", "pop_fp", "ret" };
	struct tr_func *f = emit_lines(&tr_arch_x86_64, l, 5);
	static const uint8_t want[] = { 0x55, 0x48, 0x89, 0xe5, 0xe8, 0, 0, 0, 0, 0x5d, 0xc3 };
	ck_assert_uint_eq(f->code_size, sizeof(want));
	ck_assert(!memcmp(f->code, want, sizeof(want)));
	ck_assert_int_eq(f->ret_off, 9);
	ck_assert_int_eq(f->rel32_off, 5);
	ck_assert(f->rows[2].is_call);
	free(f);
	f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	ck_assert_int_eq(f->rel32_off, -1);
	free(f);
	static const char *const bad[] = { "call_target rel32" };
	const char *m = emit_error(&tr_arch_aarch64, bad, 1);
	ck_assert_msg(strstr(m, "x86_64 only"), "%s", m);
	struct tr_op op = { 0 };
	struct ju_err msg;
	ck_assert_int_ne(tr_op_parse("call_target rel8", &op, &msg), 0);
	ck_assert_msg(strstr(msg.msg, "expected nothing or rel32"), "%s", msg.msg);
}
END_TEST

START_TEST(test_rows_cpython_nofp)
{
	static const struct want_row w[] = {
		{ 0, 7, 8, 8, false, false, false },
		{ 4, 7, 16, 16, false, false, true },
		{ 6, 7, 16, 16, false, false, false },
		{ 10, 7, 8, 8, false, false, false },
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy312, 4);
	check_rows(f, w, 4);
	ck_assert_int_eq(f->ret_off, 6);
	free(f);
}
END_TEST

START_TEST(test_rows_bigframe)
{
	/* leave = mov %rbp,%rsp; pop %rbp: before it the CFA is still rbp-based. */
	static const struct want_row w[] = {
		{ 0, 7, 8, 8, false, false, false },
		{ 1, 7, 16, 16, true, false, false },
		{ 4, 6, 16, 16, true, true, false },
		{ 11, 6, 16, 0x1010, true, true, true },
		{ 13, 6, 16, 0x1010, true, true, false },
		{ 14, 7, 8, 8, false, false, false },
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, bigframe, 6);
	check_rows(f, w, 6);
	ck_assert_int_eq(f->ret_off, 13);
	free(f);
}
END_TEST

START_TEST(test_rows_saves)
{
	static const struct want_row w[] = {
		{ 0, 7, 8, 8, false, false, false },
		{ 1, 7, 16, 16, true, false, false },
		{ 4, 6, 16, 16, true, true, false },
		{ 5, 6, 16, 24, true, true, false },
		{ 7, 6, 16, 32, true, true, false },
		{ 11, 6, 16, 40, true, true, true },
		{ 13, 6, 16, 40, true, true, false },
		{ 17, 6, 16, 32, true, true, false },
		{ 19, 6, 16, 24, true, true, false },
		{ 20, 6, 16, 16, true, true, false },
		{ 21, 7, 8, 8, false, false, false },
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, saves, 11);
	check_rows(f, w, 11);
	/* rbx (3) pushed at CFA-24, r12 (12) at CFA-32; popped in reverse. */
	ck_assert_uint_eq(f->rows[2].saved_mask, 1u << 6);
	ck_assert_uint_eq(f->rows[3].saved_mask, 1u << 6 | 1u << 3);
	ck_assert_int_eq(f->rows[3].saved_off[3], -24);
	ck_assert_uint_eq(f->rows[4].saved_mask, 1u << 6 | 1u << 3 | 1u << 12);
	ck_assert_int_eq(f->rows[4].saved_off[12], -32);
	ck_assert_uint_eq(f->rows[7].saved_mask, 1u << 6 | 1u << 3 | 1u << 12);
	ck_assert_uint_eq(f->rows[8].saved_mask, 1u << 6 | 1u << 3);
	ck_assert_uint_eq(f->rows[9].saved_mask, 1u << 6);
	ck_assert_uint_eq(f->rows[10].saved_mask, 0);
	free(f);
}
END_TEST

START_TEST(test_rows_raw_match_ops)
{
	/* Raw bytes with declared effects give the same code and rows as the ops. */
	static const char *const raw[] = {
		"raw 55 ; push_fp", "raw 48 89 e5 ; set_fp", "raw ff d1 ; call_target",
		"raw 5d ; pop_fp", "raw c3 ; ret",
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, raw, 5);
	struct tr_func *g = emit_lines(&tr_arch_x86_64, cpy313, 5);
	ck_assert_uint_eq(f->code_size, g->code_size);
	ck_assert_mem_eq(f->code, g->code, g->code_size);
	ck_assert_int_eq(f->ret_off, g->ret_off);
	for (size_t i = 0; i < g->nrows; i++) {
		struct tr_row a = f->rows[i], b = g->rows[i];
		memset(a.insn, 0, sizeof(a.insn));
		memset(b.insn, 0, sizeof(b.insn));
		ck_assert_msg(!memcmp(&a, &b, sizeof(a)), "row %zu differs", i);
	}
	ck_assert_str_eq(f->rows[0].insn, "raw 55 (push %rbp)");
	free(f);
	free(g);
}
END_TEST

START_TEST(test_rows_raw_lie)
{
	/* A raw instruction may lie about its effect: the truth follows the declaration. */
	static const char *const lie[] = { "push_fp", "raw 90 ; none", "call_target", "pop_fp", "ret" };
	struct tr_func *f = emit_lines(&tr_arch_x86_64, lie, 5);
	ck_assert_uint_eq(f->code_size, 6);
	ck_assert_int_eq(f->rows[2].cfa_reg, 7);
	ck_assert_int_eq(f->rows[2].cfa_off, 16);
	ck_assert(!f->rows[2].fp_frame);
	ck_assert_str_eq(f->rows[1].insn, "raw 90 (none)");
	free(f);
}
END_TEST

START_TEST(test_cfi_ops_recorded)
{
	static const char *const l[] = {
		"push_fp", ".cfi_def_cfa_offset 16", ".cfi_offset %rbp, -16", "set_fp",
		".cfi_def_cfa_register %rbp", "call_target", "pop_fp", ".cfi_def_cfa %rsp, 8", "ret",
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, l, 9);
	ck_assert_uint_eq(f->nrows, 5);
	ck_assert_uint_eq(f->ncfi, 4);
	ck_assert_uint_eq(f->cfi[0].offset, 1);
	ck_assert_uint_eq(f->cfi[1].offset, 1);
	ck_assert_uint_eq(f->cfi[2].offset, 4);
	ck_assert_uint_eq(f->cfi[3].offset, 7);
	ck_assert_int_eq(f->cfi[3].line, 8);
	ck_assert_str_eq(f->cfi[1].text, ".cfi_offset %rbp, -16");
	free(f);
}
END_TEST

/* ---- parser ---- */

START_TEST(test_parse_ok)
{
	struct tr_op op;
	memset(&op, 0, sizeof(op));
	ck_assert_int_eq(tr_op_parse("alloc 0x10", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_ALLOC);
	ck_assert_int_eq(op.n, 16);
	ck_assert_int_eq(tr_op_parse("  free 24   ", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_FREE);
	ck_assert_int_eq(op.n, 24);
	ck_assert_int_eq(tr_op_parse("save_reg %rbx", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_SAVE_REG);
	ck_assert_int_eq(op.n, 3);
	ck_assert_str_eq(op.reg_name, "%rbx");
	ck_assert_int_eq(tr_op_parse("restore_reg x19", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_RESTORE_REG);
	ck_assert_int_eq(op.n, 19);
	ck_assert_int_eq(tr_op_parse("raw 48 83 ec 08 ; alloc 8", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_RAW);
	ck_assert_uint_eq(op.raw_len, 4);
	ck_assert_uint_eq(op.raw[3], 8);
	ck_assert_int_eq(op.effect, TR_OP_ALLOC);
	ck_assert_int_eq(op.effect_n, 8);
	ck_assert_int_eq(tr_op_parse("raw 90 ; none", &op, &err), 0);
	ck_assert_int_eq(op.effect, TR_OP_NOP);
	ck_assert_int_eq(tr_op_parse("raw 0x41 0x53;save_reg %rbx", &op, &err), 0);
	ck_assert_int_eq(op.effect, TR_OP_SAVE_REG);
	ck_assert_int_eq(op.effect_n, 3);
	ck_assert_int_eq(tr_op_parse(".cfi_offset %rbp, -16  ", &op, &err), 0);
	ck_assert_int_eq(op.kind, TR_OP_CFI);
	ck_assert_str_eq(op.cfi, ".cfi_offset %rbp, -16");
	op.line = 42;
	ck_assert_int_eq(tr_op_parse("ret", &op, &err), 0);
	ck_assert_int_eq(op.line, 42);
	for (int k = 0; k < TR_OP__COUNT; k++)
		ck_assert_str_ne(tr_op_name((enum tr_op_kind)k), "?");
}
END_TEST

static const struct {
	const char *line, *msg;
} parse_errors[] = {
	{ "pushfp", "unknown op 'pushfp' (expected push_fp, set_fp," },
	{ "raw zz ; none", "raw: 'zz' is not a hex byte" },
	{ "raw 555 ; none", "raw: '555' is not a hex byte" },
	{ "raw 55", "raw: missing '; <effect>'" },
	{ "raw 55 ;", "raw: missing effect" },
	{ "raw ; push_fp", "raw: no bytes" },
	{ "raw 55 ; pushfp", "raw: effect: unknown op 'pushfp'" },
	{ "raw 55 ; raw 55 ; none", "raw: effect: 'raw' cannot be an effect" },
	{ "raw 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 ; none", "raw: more than 16 bytes" },
	{ "alloc", "alloc: missing size" },
	{ "alloc -8", "alloc: '-8' is not a size" },
	{ "free 8x", "free: '8x' is not a size" },
	{ "save_reg", "save_reg: missing register" },
	{ "save_reg %foo", "save_reg: unknown register '%foo'" },
	{ "ret 1", "ret takes no argument" },
	{ "", "empty op line" },
};

START_TEST(test_parse_errors)
{
	struct tr_op op;
	memset(&op, 0, sizeof(op));
	ck_assert_int_lt(tr_op_parse(parse_errors[_i].line, &op, &err), 0);
	ck_assert_msg(strstr(err.msg, parse_errors[_i].msg), "'%s': got '%s', want '%s'",
		      parse_errors[_i].line, err.msg, parse_errors[_i].msg);
}
END_TEST

/* ---- emit errors ---- */

START_TEST(test_emit_errors)
{
	static const char *const bti[] = { "bti", "ret" };
	ck_assert_ptr_nonnull(strstr(emit_error(&tr_arch_x86_64, bti, 2), "line 1: bti: not an x86_64 instruction"));
	static const char *const above[] = { "nop", "free 16", "ret" };
	const char *m = emit_error(&tr_arch_x86_64, above, 3);
	ck_assert_msg(strstr(m, "line 2:") && strstr(m, "above the CFA"), "%s", m);
	static const char *const a64reg[] = { "save_reg x19" };
	m = emit_error(&tr_arch_x86_64, a64reg, 1);
	ck_assert_msg(strstr(m, "'x19' is not an x86_64 register"), "%s", m);
	static const char *const nofp[] = { "leave" };
	m = emit_error(&tr_arch_x86_64, nofp, 1);
	ck_assert_msg(strstr(m, "FP was never set"), "%s", m);
	static const char *const twocalls[] = { "alloc 8", "call_target", "call_target" };
	m = emit_error(&tr_arch_x86_64, twocalls, 3);
	ck_assert_msg(strstr(m, "line 3:") && strstr(m, "second call_target"), "%s", m);
	static const char *const x86only[] = { "endbr64" };
	m = emit_error(&tr_arch_aarch64, x86only, 1);
	ck_assert_msg(strstr(m, "not an aarch64 instruction"), "%s", m);
	static const char *const rsp[] = { "save_reg %rsp" };
	m = emit_error(&tr_arch_x86_64, rsp, 1);
	ck_assert_msg(strstr(m, "cannot be pushed"), "%s", m);
}
END_TEST

START_TEST(test_emit_limits)
{
	static const char *nops[TR_MAX_INSNS + 1];
	for (size_t i = 0; i <= TR_MAX_INSNS; i++)
		nops[i] = "nop";
	const char *m = emit_error(&tr_arch_x86_64, nops, TR_MAX_INSNS + 1);
	ck_assert_msg(strstr(m, "more than 256 instructions"), "%s", m);
	struct tr_func *f = emit_lines(&tr_arch_x86_64, nops, TR_MAX_INSNS);
	ck_assert_uint_eq(f->nrows, TR_MAX_INSNS);
	ck_assert_int_eq(f->ret_off, -1);
	free(f);
}
END_TEST

/* Programmatic ops (no reg_name) use n as the DWARF number. */
START_TEST(test_emit_programmatic)
{
	struct tr_op ops[3];
	memset(ops, 0, sizeof(ops));
	ops[0].kind = TR_OP_SAVE_REG;
	ops[0].n = 15;             /* r15 */
	ops[1].kind = TR_OP_RESTORE_REG;
	ops[1].n = 15;
	ops[2].kind = TR_OP_RET;
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_int_eq(tr_emit(&tr_arch_x86_64, ops, 3, f, &err), 0);
	static const uint8_t want[] = { 0x41, 0x57, 0x41, 0x5f, 0xc3 };  /* push %r15; pop %r15; ret */
	ck_assert_uint_eq(f->code_size, sizeof(want));
	ck_assert_mem_eq(f->code, want, sizeof(want));
	ck_assert_str_eq(f->rows[0].insn, "push %r15");
	ck_assert_int_eq(f->rows[1].saved_off[15], -16);
	free(f);
}
END_TEST

/* ---- aarch64 (no disassembler here: the CPython words, checked by hand) ---- */

START_TEST(test_aarch64_cpython)
{
	static const char *const l[] = { "paciasp", "push_fp", "set_fp", "call_target", "pop_fp", "autiasp", "ret" };
	struct tr_func *f = emit_lines(&tr_arch_aarch64, l, 7);
	static const uint8_t want[] = {
		0x3f, 0x23, 0x03, 0xd5,  /* paciasp */
		0xfd, 0x7b, 0xbf, 0xa9,  /* stp x29, x30, [sp, #-16]! */
		0xfd, 0x03, 0x00, 0x91,  /* mov x29, sp */
		0x60, 0x00, 0x3f, 0xd6,  /* blr x3 */
		0xfd, 0x7b, 0xc1, 0xa8,  /* ldp x29, x30, [sp], #16 */
		0xbf, 0x23, 0x03, 0xd5,  /* autiasp */
		0xc0, 0x03, 0x5f, 0xd6,  /* ret */
	};
	ck_assert_uint_eq(f->code_size, sizeof(want));
	ck_assert_mem_eq(f->code, want, sizeof(want));
	static const struct want_row w[] = {
		{ 0, 31, 0, 0, false, false, false },
		{ 4, 31, 0, 0, false, false, false },
		{ 8, 31, 16, 16, true, false, false },
		{ 12, 29, 16, 16, true, true, true },
		{ 16, 29, 16, 16, true, true, false },
		{ 20, 31, 0, 0, false, false, false },
		{ 24, 31, 0, 0, false, false, false },
	};
	check_rows(f, w, 7);
	ck_assert_int_eq(f->rows[0].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->rows[0].ra_reg, 30);
	ck_assert_int_eq(f->rows[2].ra_where, TR_RA_AT_CFA);
	ck_assert_int_eq(f->rows[2].ra_off, -8);
	ck_assert(f->rows[3].fp_ra_ok);
	ck_assert_int_eq(f->rows[5].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->ret_off, 16);
	free(f);
}
END_TEST

START_TEST(test_aarch64_misc)
{
	static const char *const l[] = {
		"bti", "alloc 32", "save_reg x19", "restore_reg x19", "free 32", "alloc 0x2000",
		"free 0x2000", "nop", "tail_jump",
	};
	struct tr_func *f = emit_lines(&tr_arch_aarch64, l, 9);
	static const uint32_t want[] = {
		0xd503245f,  /* bti c */
		0xd10083ff,  /* sub sp, sp, #0x20 */
		0xf81f0ff3,  /* str x19, [sp, #-16]! */
		0xf84107f3,  /* ldr x19, [sp], #16 */
		0x910083ff,  /* add sp, sp, #0x20 */
		0xd1400bff,  /* sub sp, sp, #0x2, lsl #12 */
		0x91400bff,  /* add sp, sp, #0x2, lsl #12 */
		0xd503201f,  /* nop */
		0xd61f0060,  /* br x3 */
	};
	ck_assert_uint_eq(f->code_size, sizeof(want));
	for (size_t i = 0; i < 9; i++) {
		uint32_t w = (uint32_t)f->code[4 * i] | (uint32_t)f->code[4 * i + 1] << 8 |
			     (uint32_t)f->code[4 * i + 2] << 16 | (uint32_t)f->code[4 * i + 3] << 24;
		ck_assert_msg(w == want[i], "insn %zu (%s): %08x want %08x", i, f->rows[i].insn, w, want[i]);
	}
	ck_assert_int_eq(f->rows[3].saved_off[19], -48);
	ck_assert_int_eq(f->rows[3].sp_off, 48);
	free(f);
	static const char *const bad[] = { "alloc 4097" };
	const char *m = emit_error(&tr_arch_aarch64, bad, 1);
	ck_assert_msg(strstr(m, "not encodable"), "%s", m);
}
END_TEST

START_TEST(test_arch_lookup)
{
	ck_assert_ptr_eq(tr_arch_by_name("x86_64"), &tr_arch_x86_64);
	ck_assert_ptr_eq(tr_arch_by_name("aarch64"), &tr_arch_aarch64);
	ck_assert_ptr_eq(tr_arch_by_name("riscv64"), &tr_arch_riscv64);
	ck_assert_ptr_null(tr_arch_by_name("mips64"));
	ck_assert_ptr_nonnull(tr_arch_host());
	ck_assert_int_eq(tr_arch_x86_64.dwarf_reg("%rip"), 16);
	ck_assert_int_eq(tr_arch_x86_64.dwarf_reg("rsp"), 7);
	ck_assert_int_eq(tr_arch_x86_64.dwarf_reg("%r15"), 15);
	ck_assert_int_eq(tr_arch_x86_64.dwarf_reg("x1"), -ENOENT);
	ck_assert_int_eq(tr_arch_aarch64.dwarf_reg("x29"), 29);
	ck_assert_int_eq(tr_arch_aarch64.dwarf_reg("sp"), 31);
	ck_assert_int_eq(tr_arch_aarch64.dwarf_reg("x31"), -ENOENT);
	ck_assert_int_eq(tr_arch_aarch64.dwarf_reg("x05"), -ENOENT);
	ck_assert_int_eq(tr_arch_aarch64.dwarf_reg("%rbp"), -ENOENT);
	ck_assert_uint_eq(tr_arch_x86_64.facts->bkpt_len, 1);
	ck_assert_uint_eq(tr_arch_x86_64.facts->bkpt[0], 0xcc);
}
END_TEST

Suite *suite_emit(void)
{
	Suite *s = suite_create("emit");
	TCase *tc = tcase_create("x86_64");
	tcase_add_loop_test(tc, test_golden, 0, (int)(sizeof(goldens) / sizeof(goldens[0])));
	tcase_add_test(tc, test_rows_cpython_fp);
	tcase_add_test(tc, test_rows_cpython_nofp);
	tcase_add_test(tc, test_call_rel32);
	tcase_add_test(tc, test_rows_bigframe);
	tcase_add_test(tc, test_rows_saves);
	tcase_add_test(tc, test_rows_raw_match_ops);
	tcase_add_test(tc, test_rows_raw_lie);
	tcase_add_test(tc, test_cfi_ops_recorded);
	tcase_add_test(tc, test_emit_errors);
	tcase_add_test(tc, test_emit_limits);
	tcase_add_test(tc, test_emit_programmatic);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("parse");
	tcase_add_test(tp, test_parse_ok);
	tcase_add_loop_test(tp, test_parse_errors, 0, (int)(sizeof(parse_errors) / sizeof(parse_errors[0])));
	tcase_add_test(tp, test_arch_lookup);
	suite_add_tcase(s, tp);
	TCase *ta = tcase_create("aarch64");
	tcase_add_test(ta, test_aarch64_cpython);
	tcase_add_test(ta, test_aarch64_misc);
	suite_add_tcase(s, ta);
	return s;
}
