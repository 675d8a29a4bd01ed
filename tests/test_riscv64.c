/* riscv64 on any host (plain code over bytes; no riscv64 build needed):
 * every encoder word against binutils' riscv64 objdump, the derived CFI of
 * riscv64 trampolines read back by the project's eh_frame reader and by
 * elfutils' libdw (dwarf_getcfi_elf on an EM_RISCV ELF wrapping it) against
 * the truth rows, and the kernel's riscv64 user FP walk (its first step takes
 * the live ra) on synthetic samples. */
#include <check.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arches.h"
#include "trampolines/tramp.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/view.h"
#include "unwinders/decode.h"

static const struct tr_arch *const RV = &tr_arch_riscv64;

/* Every op the encoder takes, both sp-adjust forms at their limits, several registers. */
static const char *const all_ops[] = {
	"push_fp", "set_fp", "alloc 16", "alloc 2048", "alloc 0x1000", "alloc 0x7ffff000",
	"save_reg ra", "save_reg s1", "save_reg s11", "save_reg t6", "save_reg x3", "save_reg a0",
	"call_target", "restore_reg a0", "restore_reg s1", "free 16", "free 2047", "free 0x2000",
	"nop", "restore_reg ra", "pop_fp", "ret", "tail_jump",
};

static void parse_op(const char *line, struct tr_op *op)
{
	struct ju_err err;
	memset(op, 0, sizeof(*op));
	ck_assert_msg(tr_op_parse(line, op, &err) == 0, "%s: %s", line, err.msg);
	if (op->reg_name[0]) {   /* as tr_emit resolves a name for the arch */
		int r = RV->dwarf_reg(op->reg_name);
		ck_assert_msg(r >= 0, "%s: not a riscv64 register", line);
		if (op->kind == TR_OP_RAW)
			op->effect_n = r;
		else
			op->n = r;
	}
}

/* objdump's text in the emitter's form: tabs to spaces, ", " between operands,
 * and its "add rd,rs,imm" (binutils 2.40 prints addi so) back to addi */
static void normalize(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = in; *p && *p != '\n' && o + 2 < cap; p++) {
		if (*p == '\t')
			out[o++] = ' ';
		else if (*p == ',') {
			out[o++] = ',';
			out[o++] = ' ';
		} else
			out[o++] = *p;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = 0;
	const char *last = strrchr(out, ' ');
	if (!strncmp(out, "add ", 4) && last && (last[1] == '-' || (last[1] >= '0' && last[1] <= '9'))) {
		char t[128];
		snprintf(t, sizeof(t), "addi %s", out + 4);
		snprintf(out, cap, "%s", t);
	}
}

/* The disassembly of bytes as "text" lines by offset; NULL when no riscv64 objdump. */
static FILE *objdump(const uint8_t *code, size_t n, char *path, size_t pathcap)
{
	snprintf(path, pathcap, "/tmp/ju-rv64-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, code, n), (ssize_t)n);
	close(fd);
	if (system("riscv64-linux-gnu-objdump --version >/dev/null 2>&1")) {
		unlink(path);
		return NULL;
	}
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "riscv64-linux-gnu-objdump -D -b binary -m riscv:rv64 %s", path);
	return popen(cmd, "r");
}

#define SKIP_NO_OBJDUMP "riscv64: no riscv64-linux-gnu-objdump (apt-get install binutils-riscv64-linux-gnu): " \
			"the encoder check against it is skipped\n"

/* The next instruction objdump printed: its offset, word and normalized text. */
static bool next_insn(FILE *p, unsigned *off, unsigned *word, char *text, size_t cap)
{
	char line[256], raw[128];
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " %x: %x %127[^\n]", off, word, raw) == 3) {
			char *t = raw;
			while (*t == ' ' || *t == '\t')
				t++;
			normalize(t, text, cap);
			return true;
		}
	return false;
}

START_TEST(words_match_objdump)
{
	static uint8_t code[1024];
	static char text[64][64];
	size_t n = sizeof(all_ops) / sizeof(all_ops[0]), size = 0;
	for (size_t i = 0; i < n; i++) {
		struct tr_op op;
		parse_op(all_ops[i], &op);
		struct ju_err err;
		struct tr_eff eff[TR_MAX_EFF];
		int ne, len = RV->encode(&op, code + size, sizeof(code) - size, text[i], sizeof(text[i]), eff, &ne,
					 &err);
		ck_assert_msg(len > 0 && len % 4 == 0, "%s: %s", all_ops[i], err.msg);
		size += (size_t)len;
	}
	char path[64];
	FILE *p = objdump(code, size, path, sizeof(path));
	if (!p) {
		printf(SKIP_NO_OBJDUMP);
		return;
	}
	unsigned at = 0, off, word, k = 0;
	char got[128];
	for (size_t i = 0; i < n; i++) {
		/* an op of several instructions is written "a; b; c" */
		char buf[64];
		snprintf(buf, sizeof(buf), "%s", text[i]);
		for (char *save = NULL, *want = strtok_r(buf, ";", &save); want; want = strtok_r(NULL, ";", &save)) {
			while (*want == ' ')
				want++;
			ck_assert_msg(next_insn(p, &off, &word, got, sizeof(got)), "objdump ends before '%s' (%s)",
				      want, all_ops[i]);
			ck_assert_uint_eq(off, at);
			ck_assert_msg(!strcmp(got, want), "%s: at 0x%x (%08x) objdump says '%s', the encoder '%s'",
				      all_ops[i], off, word, got, want);
			at += 4;
			k++;
		}
	}
	ck_assert_msg(!next_insn(p, &off, &word, got, sizeof(got)), "objdump has more: '%s' at 0x%x", got, off);
	pclose(p);
	unlink(path);
	ck_assert_uint_eq(at, size);
	ck_assert_uint_ge(k, n + 8);   /* the multi-word ops were split */
}
END_TEST

/* The capture's breakpoint and its jump over n bytes, disassembled. */
START_TEST(bkpt_and_jump_over)
{
	uint8_t code[16];
	ck_assert_uint_eq(RV->facts->bkpt_len, 4);
	memcpy(code, RV->facts->bkpt, 4);
	ck_assert_uint_eq(RV->jump_over(8, code + 4), 4);
	char path[64];
	FILE *p = objdump(code, 8, path, sizeof(path));
	if (!p) {
		printf(SKIP_NO_OBJDUMP);
		return;
	}
	unsigned off, word;
	char got[128];
	ck_assert(next_insn(p, &off, &word, got, sizeof(got)));
	ck_assert_uint_eq(word, 0x00100073);
	ck_assert_str_eq(got, "ebreak");
	ck_assert(next_insn(p, &off, &word, got, sizeof(got)));
	ck_assert_str_eq(got, "j 0x10");   /* from 4: over 8 bytes to 16 */
	pclose(p);
	unlink(path);
}
END_TEST

static const char *const bad_ops[][2] = {
	{ "alloc 2049", "not encodable" }, { "alloc 0x1001", "not encodable" }, { "free 2048", "not encodable" },
	{ "alloc 0", "not encodable" }, { "leave", "not a riscv64 instruction" },
	{ "endbr64", "not a riscv64 instruction" }, { "bti", "not a riscv64 instruction" },
	{ "paciasp", "not a riscv64 instruction" }, { "save_reg sp", "is not one of" },
	{ "restore_reg zero", "is not one of" },
};

START_TEST(bad_ops_named)
{
	struct tr_op op;
	parse_op(bad_ops[_i][0], &op);
	struct ju_err err;
	char text[64];
	uint8_t code[16];
	struct tr_eff eff[TR_MAX_EFF];
	int ne;
	ck_assert_int_lt(RV->encode(&op, code, sizeof(code), text, sizeof(text), eff, &ne, &err), 0);
	ck_assert_msg(strstr(err.msg, bad_ops[_i][1]), "%s: '%s'", bad_ops[_i][0], err.msg);
}
END_TEST

static struct tr_func *emit(const char *const *lines, size_t n)
{
	static struct tr_op ops[32];
	struct ju_err err;
	ck_assert_uint_le(n, 32);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0, "%s: %s", lines[i], err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(RV, ops, n, f, &err) == 0, "%s", err.msg);
	return f;
}

/* the shipped cases' code (cases/riscv64/) and a bigger frame */
static const char *const cpy[] = { "save_reg ra", "call_target", "restore_reg ra", "ret" };
static const char *const cpy_fp[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
static const char *const saves[] = { "push_fp", "set_fp", "save_reg s1", "alloc 32", "call_target",
				     "free 32", "restore_reg s1", "pop_fp", "ret" };

/* The truth rows of the stack effects: the frame record below s0, s0 = CFA;
 * one row per instruction, so an op of several (push_fp: three) has rows
 * between them where a sample can land (perf samples any instruction). */
/* lint's decoder on the C extension's stack forms (what gcc's rv64gc
 * prologues are made of; the JIT side writes none), each against
 * riscv64-linux-gnu-objdump's reading where it is installed */
static const struct { uint16_t h; const char *text; int kind; unsigned reg; int64_t n; bool end; } cforms[] = {
	{ 0x1141, "addi sp, sp, -16", UW_EFF_SP_ADD, 0, -16, false },
	{ 0xe406, "sd ra, 8(sp)", UW_EFF_STORE, 1, 8, false },
	{ 0xe022, "sd s0, 0(sp)", UW_EFF_STORE, 8, 0, false },
	{ 0x0800, "addi s0, sp, 16", UW_EFF_FP_FROM_SP, 0, 16, false },
	{ 0x60a2, "ld ra, 8(sp)", UW_EFF_RESTORE, 1, 8, false },
	{ 0x6402, "ld s0, 0(sp)", UW_EFF_RESTORE, 8, 0, false },
	{ 0x0141, "addi sp, sp, 16", UW_EFF_SP_ADD, 0, 16, false },
	{ 0x7179, "addi sp, sp, -48", UW_EFF_SP_ADD, 0, -48, false },   /* c.addi16sp */
	{ 0x9502, "jalr a0", UW_EFF_CLOBBER, 1, 0, false },
	{ 0x8082, "ret", -1, 0, 0, true },
	{ 0x9002, "ebreak", -1, 0, 0, true },
};

START_TEST(decoder_compressed)
{
	const struct uw_decoder *dc = uw_decoder_for(EM_RISCV);
	ck_assert_ptr_nonnull(dc);
	uint8_t code[2 * sizeof(cforms) / sizeof(cforms[0])];
	for (size_t i = 0; i < sizeof(cforms) / sizeof(cforms[0]); i++) {
		code[2 * i] = (uint8_t)cforms[i].h;
		code[2 * i + 1] = (uint8_t)(cforms[i].h >> 8);
		struct uw_insn x;
		ck_assert_uint_eq(dc->decode(code + 2 * i, 2, &x), 2);
		ck_assert_msg(x.end == cforms[i].end, "%s: end %d", cforms[i].text, x.end);
		if (cforms[i].kind < 0) {
			ck_assert_uint_eq(x.neff, 0);
			continue;
		}
		ck_assert_msg(x.neff >= 1 && (int)x.eff[0].kind == cforms[i].kind && x.eff[0].n == cforms[i].n &&
			      (cforms[i].kind == UW_EFF_SP_ADD || cforms[i].kind == UW_EFF_FP_FROM_SP ||
			       x.eff[0].reg == cforms[i].reg), "%s: effect %d reg %u n %lld", cforms[i].text,
			      x.neff ? (int)x.eff[0].kind : -1, x.neff ? x.eff[0].reg : 0,
			      x.neff ? (long long)x.eff[0].n : 0);
	}
	/* the defined illegal instruction, and a 48-bit form: not decoded */
	static const uint8_t zero[2] = { 0, 0 }, long48[6] = { 0x1f, 0, 0, 0, 0, 0 };
	struct uw_insn x;
	ck_assert_uint_eq(dc->decode(zero, 2, &x), 0);
	ck_assert_uint_eq(dc->decode(long48, 6, &x), 0);
	char path[64], text[128];
	FILE *p = objdump(code, sizeof(code), path, sizeof(path));
	if (!p) {
		printf(SKIP_NO_OBJDUMP);
		return;
	}
	unsigned off, word;
	size_t n = 0;
	while (next_insn(p, &off, &word, text, sizeof(text)) && n < sizeof(cforms) / sizeof(cforms[0])) {
		ck_assert_uint_eq(word, cforms[n].h);
		ck_assert_msg(!strcmp(text, cforms[n].text), "0x%04x: objdump '%s', the table '%s'", word, text,
			      cforms[n].text);
		n++;
	}
	pclose(p);
	unlink(path);
	ck_assert_uint_eq(n, sizeof(cforms) / sizeof(cforms[0]));
}
END_TEST

START_TEST(effects_truth)
{
	struct tr_func *f = emit(cpy_fp, 5);
	ck_assert_uint_eq(f->nrows, 9);
	ck_assert_uint_eq(f->code_size, 36);
	for (size_t i = 0; i < f->nrows; i++)
		ck_assert_int_eq(f->rows[i].offset, 4 * (int)i);
	/* entry: CFA = sp, RA in ra */
	ck_assert_int_eq(f->rows[0].cfa_reg, 2);
	ck_assert_int_eq(f->rows[0].cfa_off, 0);
	ck_assert_int_eq(f->rows[0].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->rows[0].ra_reg, 1);
	ck_assert_str_eq(f->rows[0].insn, "addi sp, sp, -16");
	/* after the addi, before sd ra: CFA = sp+16, ra still live */
	ck_assert_int_eq(f->rows[1].cfa_off, 16);
	ck_assert_int_eq(f->rows[1].ra_where, TR_RA_IN_REG);
	ck_assert_str_eq(f->rows[1].insn, "sd ra, 8(sp)");
	/* after sd ra: ra at CFA-8, s0 not saved yet */
	ck_assert_int_eq(f->rows[2].ra_where, TR_RA_AT_CFA);
	ck_assert_int_eq(f->rows[2].ra_off, -8);
	ck_assert(!f->rows[2].fp_saved);
	/* after push_fp: CFA = sp+16, ra at CFA-8, s0 at CFA-16 */
	ck_assert_int_eq(f->rows[3].cfa_off, 16);
	ck_assert_int_eq(f->rows[3].ra_off, -8);
	ck_assert_int_eq(f->rows[3].fp_save_off, -16);
	ck_assert(!f->rows[3].fp_frame);
	/* after set_fp: CFA = s0+0, s0 points just above its record: an FP walker finds it */
	ck_assert_int_eq(f->rows[4].cfa_reg, 8);
	ck_assert_int_eq(f->rows[4].cfa_off, 0);
	ck_assert(f->rows[4].fp_frame && f->rows[4].fp_ra_ok);
	ck_assert(f->rows[4].is_call);
	ck_assert_int_eq(f->ret_off, 20);
	/* after ld s0: the CFA is sp-based again, ra still at CFA-8 */
	ck_assert_int_eq(f->rows[6].cfa_reg, 2);
	ck_assert_int_eq(f->rows[6].cfa_off, 16);
	ck_assert_int_eq(f->rows[6].ra_where, TR_RA_AT_CFA);
	/* after pop_fp: back to entry */
	ck_assert_int_eq(f->rows[8].cfa_reg, 2);
	ck_assert_int_eq(f->rows[8].cfa_off, 0);
	ck_assert_int_eq(f->rows[8].ra_where, TR_RA_IN_REG);
	ck_assert(!f->rows[8].fp_saved);
	free(f);
	/* CPython's: ra in the slot's upper half (CFA-8), no record */
	f = emit(cpy, 4);
	ck_assert_uint_eq(f->nrows, 6);
	ck_assert_int_eq(f->rows[1].cfa_off, 16);
	ck_assert_int_eq(f->rows[1].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->rows[2].ra_off, -8);
	ck_assert(!f->rows[2].fp_saved && !f->rows[2].fp_frame);
	free(f);
	/* a big alloc: lui t0 leaves sp alone, the sub moves it */
	static const char *const big[] = { "alloc 0x4000", "ret" };
	f = emit(big, 2);
	ck_assert_uint_eq(f->nrows, 3);
	ck_assert_int_eq(f->rows[1].sp_off, 0);
	ck_assert_int_eq(f->rows[2].sp_off, 0x4000);
	free(f);
	/* raw bytes take the declared op's effect */
	static const char *const raw[] = { "raw 13 01 01 ff ; alloc 16", "ret" };
	f = emit(raw, 2);
	ck_assert_uint_eq(f->code[0], 0x13);
	ck_assert_int_eq(f->rows[1].sp_off, 16);
	free(f);
}
END_TEST

static Elf_Scn *add_scn(Elf *e, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
			const void *buf, size_t size)
{
	Elf_Scn *s = elf_newscn(e);
	ck_assert_ptr_nonnull(s);
	Elf_Data *d = elf_newdata(s);
	ck_assert_ptr_nonnull(d);
	d->d_buf = (void *)buf;
	d->d_size = size;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	d->d_version = EV_CURRENT;
	Elf64_Shdr *sh = elf64_getshdr(s);
	sh->sh_name = name;
	sh->sh_type = type;
	sh->sh_flags = flags;
	sh->sh_addr = addr;
	sh->sh_size = size;
	sh->sh_addralign = 1;
	return s;
}

/* An EM_RISCV ELF with .text and .eh_frame at their addresses. */
static void write_elf(const char *path, const struct tr_func *f, const struct tr_unwind *u, uint64_t code_addr)
{
	static const char shstr[] = "\0.text\0.eh_frame\0.shstrtab";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	ck_assert_ptr_nonnull(e);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_RISCV;
	eh->e_version = EV_CURRENT;
	add_scn(e, 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, code_addr, f->code, f->code_size);
	add_scn(e, 7, SHT_PROGBITS, SHF_ALLOC, code_addr + u->eh_off, u->data, u->eh_frame_size);
	Elf_Scn *ss = add_scn(e, 17, SHT_STRTAB, 0, 0, shstr, sizeof(shstr));
	elf64_getehdr(e)->e_shstrndx = (Elf64_Half)elf_ndxscn(ss);
	ck_assert_msg(elf_update(e, ELF_C_WRITE) >= 0, "elf_update: %s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

/* One reader's row: CFA reg+off, and per register 1 (ra) .. 31 where it is
 * saved at CFA+n (saved[r]), else not saved (in its register). */
struct rvrow {
	int cfa_reg;
	int64_t cfa_off;
	bool saved[32];
	int64_t off[32];
};

static void row_project(const struct ehf_fde *fde, uint64_t pc, struct rvrow *o)
{
	struct ehf_row r;
	struct ju_err err;
	ck_assert_msg(ehf_row_at(fde, pc, &r, &err) == 0, "%s", err.msg);
	ck_assert(r.cfa_defined && r.cfa_kind == EHF_CFA_REG_OFF);
	memset(o, 0, sizeof(*o));
	o->cfa_reg = r.cfa_reg;
	o->cfa_off = r.cfa_off;
	for (int c = 1; c < 32; c++)
		if (c == 2)
			continue;
		else if (r.reg[c].kind == EHF_OFFSET) {
			o->saved[c] = true;
			o->off[c] = r.reg[c].off;
		} else
			ck_assert_msg(r.reg[c].kind == EHF_UNDEF || r.reg[c].kind == EHF_SAME ||
				      r.reg[c].kind == EHF_INITIAL, "x%d: rule kind %d", c, r.reg[c].kind);
}

static void row_libdw(Dwarf_CFI *cfi, uint64_t pc, struct rvrow *o)
{
	Dwarf_Frame *fr = NULL;
	ck_assert_msg(dwarf_cfi_addrframe(cfi, pc, &fr) == 0, "libdw at 0x%llx: %s", (unsigned long long)pc,
		      dwarf_errmsg(-1));
	Dwarf_Addr start, end;
	bool sig;
	ck_assert_int_eq(dwarf_frame_info(fr, &start, &end, &sig), 1);   /* the return-address column */
	Dwarf_Op *ops, mem[3];
	size_t nops;
	ck_assert_int_eq(dwarf_frame_cfa(fr, &ops, &nops), 0);
	ck_assert(nops == 1 && ops[0].atom == DW_OP_bregx);
	memset(o, 0, sizeof(*o));
	o->cfa_reg = (int)ops[0].number;
	o->cfa_off = (int64_t)ops[0].number2;
	for (int c = 1; c < 32; c++) {
		if (c == 2)   /* sp: the CFA (elfutils' riscv backend: val_offset(0)) */
			continue;
		ck_assert_int_eq(dwarf_frame_register(fr, c, mem, &ops, &nops), 0);
		if (nops >= 1 && ops[0].atom == DW_OP_call_frame_cfa) {
			o->saved[c] = true;
			ck_assert_msg(nops == 1 || (nops == 2 && ops[1].atom == DW_OP_plus_uconst),
				      "x%d: libdw rule of %zu ops", c, nops);
			o->off[c] = nops == 2 ? (int64_t)ops[1].number : 0;
		}
	}
	free(fr);
}

static void check_cfi(const char *what, const char *const *lines, size_t n)
{
	enum { CODE = 0x100000 };
	struct tr_func *f = emit(lines, n);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	static struct tr_unwind u;
	struct ju_err err;
	ck_assert_msg(tr_unwind_build(f, &o, CODE, &u, &err) == 0, "%s: %s", what, err.msg);
	struct ehf_bases b = { .section = CODE + u.eh_off, .ptr_size = 8 };
	struct ehf_table t;
	struct ju_err ee;
	ck_assert_msg(ehf_parse(&t, u.data, u.eh_frame_size, &b, &ee) == 0, "%s: %s", what, ee.msg);
	const struct ehf_fde *fde = ehf_find_fde(&t, CODE);
	ck_assert_ptr_nonnull(fde);
	ck_assert_uint_eq(fde->cie->ra_reg, 1);
	char path[] = "/tmp/ju-rv64-elf-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	write_elf(path, f, &u, CODE);
	fd = open(path, O_RDONLY);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(e);
	ck_assert_msg(cfi, "%s: dwarf_getcfi_elf: %s", what, dwarf_errmsg(-1));
	for (size_t i = 0; i < f->nrows; i++) {
		const struct tr_row *r = &f->rows[i];
		struct rvrow a, d;
		row_project(fde, CODE + r->offset, &a);
		row_libdw(cfi, CODE + r->offset, &d);
		ck_assert_msg(a.cfa_reg == d.cfa_reg && a.cfa_off == d.cfa_off && a.cfa_reg == r->cfa_reg &&
			      a.cfa_off == r->cfa_off, "%s +%u (%s): CFA x%d%+lld here, x%d%+lld libdw, truth x%d%+lld",
			      what, r->offset, r->insn, a.cfa_reg, (long long)a.cfa_off, d.cfa_reg,
			      (long long)d.cfa_off, r->cfa_reg, (long long)r->cfa_off);
		for (int c = 1; c < 32; c++) {
			if (c == 2)
				continue;
			bool want = c == 1 ? r->ra_where == TR_RA_AT_CFA : (r->saved_mask >> c & 1);
			int64_t woff = c == 1 ? r->ra_off : r->saved_off[c];
			ck_assert_msg(a.saved[c] == want && d.saved[c] == want &&
				      (!want || (a.off[c] == woff && d.off[c] == woff)),
				      "%s +%u (%s): x%d saved %d@%lld here, %d@%lld libdw, truth %d@%lld", what,
				      r->offset, r->insn, c, a.saved[c], (long long)a.off[c], d.saved[c],
				      (long long)d.off[c], want, (long long)woff);
		}
	}
	dwarf_cfi_end(cfi);
	elf_end(e);
	close(fd);
	unlink(path);
	ehf_table_free(&t);
	free(f);
}

START_TEST(cfi_two_readers)
{
	check_cfi("cpython-riscv64", cpy, 4);
	check_cfi("cpython-riscv64-fp", cpy_fp, 5);
	check_cfi("saves", saves, 9);
}
END_TEST

/* ---- the kernel's riscv64 user FP walk on synthetic samples ----
 * E calls D calls C calls F (a JIT function with the psABI record).  Each
 * frame's record {caller's s0, return address} sits at its s0 - 16. */
#define BASE 0x7ffd0000ull
#define F_PC 0x7f0000001000ull     /* F's first instruction (cpython-riscv64-fp's layout) */
#define RET_C 0x402000ull          /* F's return address: into C */
#define RET_D 0x403000ull
#define RET_E 0x404000ull
static uint8_t stack[256];

static void put(uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - BASE), &v, 8);
}

static void frames(void)
{
	memset(stack, 0, sizeof(stack));
	put(BASE + 0x30, BASE + 0x80); put(BASE + 0x38, RET_C);   /* F's record (s0 = BASE+0x40) */
	put(BASE + 0x70, BASE + 0xc0); put(BASE + 0x78, RET_D);   /* C's (s0 = BASE+0x80) */
	put(BASE + 0xb0, 0);           put(BASE + 0xb8, RET_E);   /* D's (s0 = BASE+0xc0), E's s0 0 */
}

static void walk(uint64_t pc, uint64_t ra, uint64_t s0, struct uw_result *r)
{
	struct uw_sample s;
	memset(&s, 0, sizeof(s));
	s.arch = uw_arch_by_mach(EM_RISCV);
	ck_assert_ptr_nonnull(s.arch);
	s.mask = s.arch->facts->perf_mask;
	s.regs[s.arch->perf_ip] = pc;
	s.regs[s.arch->perf_lr] = ra;
	s.regs[s.arch->perf_sp] = BASE;
	s.regs[s.arch->perf_fp] = s0;
	s.stack_addr = BASE;
	s.stack = stack;
	s.stack_size = sizeof(stack);
	uw_fp.unwind(NULL, NULL, &s, r);
}

static void chain_is(const struct uw_result *r, const uint64_t *want, int n)
{
	ck_assert_int_eq(r->n, n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(r->addr[i] == want[i], "frame %d: 0x%llx, want 0x%llx", i,
			      (unsigned long long)r->addr[i], (unsigned long long)want[i]);
	ck_assert_int_eq(r->stop, UW_STOP_END);
}

/* F sampled after its call returned (pc 0x14, right after jalr at 0x10): ra
 * still holds that call's return address, inside F.  The first step takes it:
 * a bogus self frame, and F's caller C (in F's record's ra slot) is lost. */
/* perf's symbol loader drops an arch's ELF mapping symbols (symbol-elf.c:
 * arm64's "$a/$d/$t/$x" alone or before '.', riscv64's "$d"/"$x" prefix, as
 * GNU as writes "$xrv64i2p1_m2p0..."), so perf never names a pc after one */
START_TEST(mapping_symbols)
{
	ck_assert(arch_mapping_symbol(EM_RISCV, "$xrv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0"));
	ck_assert(arch_mapping_symbol(EM_RISCV, "$x"));
	ck_assert(arch_mapping_symbol(EM_RISCV, "$d"));
	ck_assert(!arch_mapping_symbol(EM_RISCV, "$a"));
	ck_assert(!arch_mapping_symbol(EM_RISCV, "hx_call"));
	ck_assert(arch_mapping_symbol(EM_AARCH64, "$x"));
	ck_assert(arch_mapping_symbol(EM_AARCH64, "$d.rodata"));
	ck_assert(!arch_mapping_symbol(EM_AARCH64, "$xyz"));
	ck_assert(!arch_mapping_symbol(EM_X86_64, "$x"));
	ck_assert(!arch_mapping_symbol(EM_RISCV, "$"));
}
END_TEST

START_TEST(fp_first_step_after_call)
{
	frames();
	struct uw_result r;
	walk(F_PC + 0x14, F_PC + 0x14, BASE + 0x40, &r);
	const uint64_t want[] = { F_PC + 0x14, F_PC + 0x14, RET_D, RET_E };
	chain_is(&r, want, 4);
	for (int i = 0; i < r.n; i++)
		ck_assert_uint_ne(r.addr[i], RET_C);
}
END_TEST

/* Control: F at its call (pc 0x10), record built and ra not yet overwritten:
 * the live ra is F's return address, the chain is the truth. */
START_TEST(fp_first_step_fresh_ra)
{
	frames();
	struct uw_result r;
	walk(F_PC + 0x10, RET_C, BASE + 0x40, &r);
	const uint64_t want[] = { F_PC + 0x10, RET_C, RET_D, RET_E };
	chain_is(&r, want, 4);
}
END_TEST

/* Control at entry (pc 0, no record yet, s0 still C's): the live ra is right
 * (C), but the first step's record is C's, whose ra slot it skips: D is lost. */
START_TEST(fp_first_step_at_entry)
{
	frames();
	struct uw_result r;
	walk(F_PC, RET_C, BASE + 0x80, &r);
	const uint64_t want[] = { F_PC, RET_C, RET_E };
	chain_is(&r, want, 3);
}
END_TEST

/* A zero ra ends the walk unstored (the kernel stores no 0 on riscv64). */
START_TEST(fp_zero_ra_ends)
{
	frames();
	put(BASE + 0x78, 0);   /* C's record: ra 0 */
	struct uw_result r;
	walk(F_PC + 0x10, RET_C, BASE + 0x40, &r);
	const uint64_t want[] = { F_PC + 0x10, RET_C };
	chain_is(&r, want, 2);
}
END_TEST

Suite *suite_riscv64(void);
Suite *suite_riscv64(void)
{
	Suite *s = suite_create("riscv64");
	TCase *tc = tcase_create("encode");
	tcase_add_test(tc, words_match_objdump);
	tcase_add_test(tc, bkpt_and_jump_over);
	tcase_add_loop_test(tc, bad_ops_named, 0, (int)(sizeof(bad_ops) / sizeof(bad_ops[0])));
	tcase_add_test(tc, effects_truth);
	tcase_add_test(tc, cfi_two_readers);
	tcase_add_test(tc, mapping_symbols);
	tcase_add_test(tc, decoder_compressed);
	suite_add_tcase(s, tc);
	TCase *fp = tcase_create("fp");
	tcase_add_test(fp, fp_first_step_after_call);
	tcase_add_test(fp, fp_first_step_fresh_ra);
	tcase_add_test(fp, fp_first_step_at_entry);
	tcase_add_test(fp, fp_zero_ra_ends);
	suite_add_tcase(s, fp);
	return s;
}
