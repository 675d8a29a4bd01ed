/* trampolines/ CFI and .eh_frame/.eh_frame_hdr writer.  Independent readers
 * judge the output: elfutils libdw (dwarf_getcfi_elf on an ELF the test
 * writes with libelf, once through section names and once through
 * PT_GNU_EH_FRAME only, which makes libdw follow eh_frame_ptr and the search
 * table), readelf when installed, and a few lines of header decoding here. */
#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trampolines/tramp.h"

#define MAXOPS 300

static struct ju_err err;

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

static void hexstr(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && o + 4 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%02x", i ? " " : "", p[i]);
}

#define ASSERT_BYTES(got, n, ...) do { \
	static const uint8_t want_[] = { __VA_ARGS__ }; \
	char g_[1024], w_[1024]; \
	hexstr(g_, sizeof(g_), (got), (n)); \
	hexstr(w_, sizeof(w_), want_, sizeof(want_)); \
	ck_assert_msg((n) == sizeof(want_) && !memcmp((got), want_, sizeof(want_)), \
		      "bytes\n got  %s\n want %s", g_, w_); \
} while (0)

static const char *const cpy313[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
static const char *const cpy312[] = { "alloc 8", "call_target", "free 8", "ret" };
static const char *const bigframe[] = { "push_fp", "set_fp", "alloc 0x1000", "call_target", "leave", "ret" };
static const char *const saves[] = {
	"push_fp", "set_fp", "save_reg %rbx", "save_reg r12", "alloc 8", "call_target",
	"free 8", "restore_reg %r12", "restore_reg rbx", "pop_fp", "ret",
};
/* CPython 3.13's trampoline with the directives its assembly file carries. */
static const char *const cpy313_dir[] = {
	"push_fp", ".cfi_def_cfa_offset 16", ".cfi_offset %rbp, -16", "set_fp",
	".cfi_def_cfa_register %rbp", "call_target", "pop_fp", ".cfi_def_cfa %rsp, 8", "ret",
};
static const char *const a64_cpy[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
/* the return address popped into r10 and pushed back before ret */
static const char *const rareg[] = { "push_fp", "set_fp", "call_target", "pop_fp", "raw 41 5a ; restore_reg r10",
				     "raw 41 52 ; save_reg r10", "ret" };

/* ---- derived and compiled CFA programs ---- */

START_TEST(test_derive_cpython_fp)
{
	/* CPython writes 41 0e 10 86 02 43 0d 06 43 0c 07 08 (facts section 7).
	 * The derived program is the same plus a final DW_CFA_restore(rbp) (c6):
	 * after `pop %rbp` the caller's rbp is back in its register, and the
	 * truth says so; CPython leaves the stale CFA-16 rule in place. */
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	uint8_t p[256];
	size_t n;
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6);
	free(f);
}
END_TEST

START_TEST(test_derive_others)
{
	uint8_t p[256];
	size_t n;
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy312, 4);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	/* advance 4; def_cfa_offset 16; advance 6; def_cfa_offset 8 */
	ASSERT_BYTES(p, n, 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08);
	free(f);

	f = emit_lines(&tr_arch_x86_64, bigframe, 6);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	/* ... advance 10 (to leave's end at 14); def_cfa rsp+8; restore rbp */
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x4a, 0x0c, 0x07, 0x08, 0xc6);
	free(f);

	f = emit_lines(&tr_arch_x86_64, saves, 11);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	/* rbx at cfa-24 (83 03) at 5, r12 at cfa-32 (8c 04) at 7, restored at 19 and 20 */
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x41, 0x83, 0x03,
		     0x42, 0x8c, 0x04, 0x4c, 0xcc, 0x41, 0xc3, 0x41, 0x0c, 0x07, 0x08, 0xc6);
	free(f);

	f = emit_lines(&tr_arch_x86_64, rareg, 7);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	/* after pop %r10 (at 9): def_cfa_offset 0, register rip r10 (09 10 0a); after
	 * push %r10 (at 11): def_cfa_offset 8, restore rip (d0: the CIE's cfa-8) */
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6,
		     0x42, 0x0e, 0x00, 0x09, 0x10, 0x0a, 0x42, 0x0e, 0x08, 0xd0);
	free(f);

	f = emit_lines(&tr_arch_aarch64, a64_cpy, 5);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	/* advance 1 (x4); def_cfa_offset 16; x29 at cfa-16; x30 at cfa-8; advance 1;
	 * def_cfa_register x29; advance 2; def_cfa sp+0; restore x29, x30 */
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01, 0x41, 0x0d, 0x1d,
		     0x42, 0x0c, 0x1f, 0x00, 0xdd, 0xde);
	free(f);
}
END_TEST

START_TEST(test_cie_init)
{
	uint8_t p[32];
	size_t n;
	ck_assert_int_eq(tr_cfi_cie_init(&tr_arch_x86_64, p, sizeof(p), &n), 0);
	ASSERT_BYTES(p, n, 0x0c, 0x07, 0x08, 0x90, 0x01);     /* def_cfa rsp+8; ra at cfa-8 */
	ck_assert_int_eq(tr_cfi_cie_init(&tr_arch_aarch64, p, sizeof(p), &n), 0);
	ASSERT_BYTES(p, n, 0x0c, 0x1f, 0x00);                 /* def_cfa sp+0 */
	ck_assert_int_eq(tr_cfi_cie_init(&tr_arch_x86_64, p, 3, &n), -ENOSPC);
}
END_TEST

START_TEST(test_advance_forms)
{
	/* 70 one-byte nops: advance_loc1; 19 sixteen-byte raws (304): advance_loc2. */
	static const char *l[40 + 70];
	size_t n = 0;
	for (int i = 0; i < 70; i++)
		l[n++] = "nop";
	l[n++] = "push_fp";
	l[n++] = "pop_fp";
	l[n++] = "ret";
	struct tr_func *f = emit_lines(&tr_arch_x86_64, l, n);
	uint8_t p[256];
	size_t pn;
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &pn, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, pn, 0x02, 71, 0x0e, 0x10, 0x86, 0x02, 0x41, 0x0e, 0x08, 0xc6);
	free(f);

	n = 0;
	for (int i = 0; i < 19; i++)
		l[n++] = "raw 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 ; none";
	l[n++] = "push_fp";
	l[n++] = ".cfi_adjust_cfa_offset 8";
	l[n++] = "ret";
	f = emit_lines(&tr_arch_x86_64, l, n);
	ck_assert_msg(tr_cfi_derive(f, p, sizeof(p), &pn, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, pn, 0x03, 0x31, 0x01, 0x0e, 0x10, 0x86, 0x02);   /* advance_loc2 305 */
	ck_assert_msg(tr_cfi_compile(f, p, sizeof(p), &pn, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, pn, 0x03, 0x31, 0x01, 0x0e, 0x10);
	free(f);
}
END_TEST

START_TEST(test_compile_cpython)
{
	/* GNU as assembles CPython's directives to exactly the facts' bytes. */
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313_dir, 9);
	uint8_t p[256];
	size_t n;
	ck_assert_msg(tr_cfi_compile(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, n, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08);
	free(f);
}
END_TEST

START_TEST(test_compile_all)
{
	static const char *const l[] = {
		".cfi_startproc",
		"push_fp",
		".cfi_adjust_cfa_offset 8",        /* 16: 0e 10 */
		".cfi_rel_offset %rbp, 0",         /* rbp at cfa-16: 86 02 */
		"save_reg %rbx",
		".cfi_adjust_cfa_offset 8",        /* 24: 0e 18 */
		".cfi_rel_offset 3, 0",            /* rbx at cfa-24: 83 03 */
		".cfi_remember_state",             /* 0a */
		".cfi_val_offset %r12, -8",        /* 14 0c 01 */
		".cfi_val_offset %r13, 16",        /* 15 0d 7e */
		".cfi_undefined %r14",             /* 07 0e */
		".cfi_same_value %r15",            /* 08 0f */
		".cfi_register %rip, %rax",        /* 09 10 00 */
		".cfi_offset 70, -8",              /* 05 46 01 */
		".cfi_offset %rcx, 8",             /* 11 02 7f */
		".cfi_restore %rbx",               /* c3 */
		".cfi_restore 70",                 /* 06 46 */
		".cfi_def_cfa_offset -8",          /* 13 01 */
		".cfi_restore_state",              /* 0b */
		".cfi_escape 0x2e, 0",             /* 2e 00 (GNU_args_size 0) */
		"restore_reg %rbx",
		"pop_fp",
		".cfi_def_cfa %rsp, 8",            /* 0c 07 08 */
		".cfi_def_cfa 7, -16",             /* 12 07 02 */
		"ret",
		".cfi_endproc",
	};
	struct tr_func *f = emit_lines(&tr_arch_x86_64, l, sizeof(l) / sizeof(l[0]));
	uint8_t p[256];
	size_t n;
	ck_assert_msg(tr_cfi_compile(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, n,
		     0x41, 0x0e, 0x10, 0x86, 0x02,
		     0x41, 0x0e, 0x18, 0x83, 0x03, 0x0a, 0x14, 0x0c, 0x01, 0x15, 0x0d, 0x7e,
		     0x07, 0x0e, 0x08, 0x0f, 0x09, 0x10, 0x00, 0x05, 0x46, 0x01, 0x11, 0x02, 0x7f,
		     0xc3, 0x06, 0x46, 0x13, 0x01, 0x0b, 0x2e, 0x00,
		     0x42, 0x0c, 0x07, 0x08, 0x12, 0x07, 0x02);
	free(f);

	static const char *const a64[] = { "paciasp", ".cfi_negate_ra_state", "push_fp", ".cfi_def_cfa_offset 16",
		".cfi_offset x29, -16", ".cfi_offset x30, -8", "ret" };
	f = emit_lines(&tr_arch_aarch64, a64, 7);
	ck_assert_msg(tr_cfi_compile(f, p, sizeof(p), &n, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(p, n, 0x41, 0x2d, 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01);
	free(f);
}
END_TEST

static const struct {
	const char *dir, *msg;
} compile_errors[] = {
	{ ".cfi_offset %rbp, -15", "line 2: .cfi_offset: offset -15 is not a multiple of the data alignment -8" },
	{ ".cfi_offset %foo, -16", "line 2: .cfi_offset: '%foo' is not an x86_64 register" },
	{ ".cfi_offset %rbp", "line 2: .cfi_offset: expected 2 arguments, got 1" },
	{ ".cfi_def_cfa_offset 1x", "line 2: .cfi_def_cfa_offset: '1x' is not a number" },
	{ ".cfi_restore_state", "no .cfi_remember_state" },
	{ ".cfi_escape 0x100", "'0x100' is not a byte" },
	{ ".cfi_bogus 1", "line 2: .cfi_bogus: unsupported directive" },
	{ ".cfi_signal_frame", "changes the CIE" },
	{ ".cfi_def_cfa_offset -12", "not a multiple of the data alignment" },
};

START_TEST(test_compile_errors)
{
	const char *l[] = { "push_fp", compile_errors[_i].dir, "ret" };
	struct tr_func *f = emit_lines(&tr_arch_x86_64, l, 3);
	uint8_t p[256];
	size_t n;
	ck_assert_int_eq(tr_cfi_compile(f, p, sizeof(p), &n, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, compile_errors[_i].msg), "got '%s', want '%s'", err.msg, compile_errors[_i].msg);
	free(f);
}
END_TEST

/* ---- the ELF the independent readers see ---- */

/* Where each part sits, as offsets from the code's start. */
struct layout {
	size_t eh_pos, hdr_pos;
};

static struct layout layout_of(const struct tr_unwind *u, enum tr_hdr_place hdr)
{
	struct layout l;
	if (hdr == TR_HDR_BEFORE) {
		l.hdr_pos = u->eh_off;
		l.eh_pos = u->eh_off + u->hdr_size;
	} else {
		l.eh_pos = u->eh_off;
		l.hdr_pos = u->eh_off + u->eh_frame_size;
	}
	return l;
}

static Elf_Scn *add_scn(Elf *e, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
			const void *buf, size_t size, uint64_t align)
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
	sh->sh_addralign = align;
	return s;
}

static Elf *new_elf(int fd, const struct tr_arch *a)
{
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	ck_assert_msg(e, "%s", elf_errmsg(-1));
	Elf64_Ehdr *eh = elf64_newehdr(e);
	ck_assert_ptr_nonnull(eh);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = a->facts->elf_mach;
	eh->e_version = EV_CURRENT;
	return e;
}

/* Named sections .text, .eh_frame, .eh_frame_hdr at the layout's addresses. */
static void write_elf_sections(const char *path, const struct tr_func *f, const struct tr_unwind *u,
			       enum tr_hdr_place hdr, uint64_t code_addr)
{
	static const char shstr[] = "\0.text\0.eh_frame\0.eh_frame_hdr\0.shstrtab";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	Elf *e = new_elf(fd, f->arch);
	struct layout l = layout_of(u, hdr);
	const uint8_t *eh = u->data + (hdr == TR_HDR_BEFORE ? u->hdr_size : 0);
	const uint8_t *hd = u->data + (hdr == TR_HDR_BEFORE ? 0 : u->eh_frame_size);
	add_scn(e, 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, code_addr, f->code, f->code_size, 16);
	add_scn(e, 7, SHT_PROGBITS, SHF_ALLOC, code_addr + l.eh_pos, eh, u->eh_frame_size, 1);
	if (hdr != TR_HDR_NONE)
		add_scn(e, 17, SHT_PROGBITS, SHF_ALLOC, code_addr + l.hdr_pos, hd, u->hdr_size, 1);
	Elf_Scn *ss = add_scn(e, 31, SHT_STRTAB, 0, 0, shstr, sizeof(shstr), 1);
	elf64_getehdr(e)->e_shstrndx = (Elf64_Half)elf_ndxscn(ss);
	ck_assert_msg(elf_update(e, ELF_C_WRITE) >= 0, "elf_update: %s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

/* No section names: libdw must take PT_GNU_EH_FRAME, follow eh_frame_ptr and
 * search the header's table, as perf's libunwind path does. */
static void write_elf_phdrs(const char *path, const struct tr_func *f, const struct tr_unwind *u,
			    enum tr_hdr_place hdr, uint64_t code_addr)
{
	enum { BLOB_OFF = 0x1000 };
	static uint8_t blob[TR_MAX_CODE + sizeof(u->data) + 16];
	struct layout l = layout_of(u, hdr);
	size_t bsize = u->eh_off + u->size;
	memset(blob, 0, sizeof(blob));
	memcpy(blob, f->code, f->code_size);
	memcpy(blob + u->eh_off, u->data, u->size);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	Elf *e = new_elf(fd, f->arch);
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	Elf64_Phdr *ph = elf64_newphdr(e, 2);
	ck_assert_ptr_nonnull(ph);
	Elf_Scn *s = add_scn(e, 0, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, code_addr, blob, bsize, 16);
	elf64_getshdr(s)->sh_offset = BLOB_OFF;
	Elf64_Ehdr *eh = elf64_getehdr(e);
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = (BLOB_OFF + bsize + 7) & ~(size_t)7;
	eh->e_shstrndx = SHN_UNDEF;
	ph = elf64_getphdr(e);
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = BLOB_OFF,
			      .p_vaddr = code_addr, .p_paddr = code_addr, .p_filesz = bsize,
			      .p_memsz = bsize, .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_offset = BLOB_OFF + l.hdr_pos,
			      .p_vaddr = code_addr + l.hdr_pos, .p_paddr = code_addr + l.hdr_pos,
			      .p_filesz = u->hdr_size, .p_memsz = u->hdr_size, .p_align = 4 };
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	ck_assert_msg(elf_update(e, ELF_C_WRITE) >= 0, "elf_update: %s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

/* CFA + n for a libdw register rule {call_frame_cfa [plus_uconst n]}; false if not that shape. */
static bool rule_cfa_off(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	*off = 0;
	if (nops == 1)
		return true;
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

enum { CHK_SAVED = 1, CHK_NOFDE = 2 };

static void check_libdw(const char *path, const char *what, const struct tr_func *f, uint64_t code_addr,
			unsigned flags)
{
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(e);
	if (!cfi && (flags & CHK_NOFDE)) {
		/* An empty .eh_frame: libdw finds no CFI at all, also a pass. */
		elf_end(e);
		close(fd);
		return;
	}
	ck_assert_msg(cfi, "%s: dwarf_getcfi_elf: %s", what, dwarf_errmsg(-1));
	const struct tr_arch *a = f->arch;
	for (size_t i = 0; i < f->nrows; i++) {
		const struct tr_row *r = &f->rows[i];
		Dwarf_Frame *fr = NULL;
		int rc = dwarf_cfi_addrframe(cfi, code_addr + r->offset, &fr);
		if (flags & CHK_NOFDE) {
			ck_assert_msg(rc != 0, "%s: 0x%x: an FDE where none was written", what, r->offset);
			continue;
		}
		ck_assert_msg(rc == 0, "%s: 0x%x: %s", what, r->offset, dwarf_errmsg(-1));
		Dwarf_Addr start, end;
		bool sig;
		ck_assert_int_eq(dwarf_frame_info(fr, &start, &end, &sig), a->facts->dw_ra);
		Dwarf_Op *ops;
		size_t nops;
		ck_assert_int_eq(dwarf_frame_cfa(fr, &ops, &nops), 0);
		ck_assert_msg(nops == 1 && ops[0].atom == DW_OP_bregx && (int)ops[0].number == r->cfa_reg &&
			      (int64_t)ops[0].number2 == r->cfa_off,
			      "%s: 0x%x (%s): libdw CFA op 0x%x r%d%+lld (nops %zu), truth r%d%+lld", what,
			      r->offset, r->insn, nops ? ops[0].atom : 0, nops ? (int)ops[0].number : -1,
			      nops ? (long long)ops[0].number2 : 0, nops, r->cfa_reg, (long long)r->cfa_off);
		Dwarf_Op mem[3];
		int64_t off;
		ck_assert_int_eq(dwarf_frame_register(fr, a->facts->dw_ra, mem, &ops, &nops), 0);
		bool at_cfa = rule_cfa_off(ops, nops, &off);
		if (r->ra_where == TR_RA_AT_CFA)
			ck_assert_msg(at_cfa && off == r->ra_off, "%s: 0x%x: RA rule (nops %zu) not CFA%+lld",
				      what, r->offset, nops, (long long)r->ra_off);
		else if (r->ra_reg == a->facts->dw_ra)   /* arm64's x30, the column itself: same value */
			ck_assert_msg(!at_cfa && nops == 0, "%s: 0x%x: RA should be in its register", what, r->offset);
		else
			ck_assert_msg(!at_cfa && nops == 1 && ops[0].atom == DW_OP_regx && (int)ops[0].number == r->ra_reg,
				      "%s: 0x%x: RA should be in r%d (libdw: nops %zu, op 0x%x r%d)", what, r->offset,
				      r->ra_reg, nops, nops ? ops[0].atom : 0, nops ? (int)ops[0].number : -1);
		for (int c = 0; (flags & CHK_SAVED) && c < 32; c++) {
			if (c == a->facts->dw_ra || c == a->facts->dw_sp)
				continue;
			ck_assert_int_eq(dwarf_frame_register(fr, c, mem, &ops, &nops), 0);
			at_cfa = rule_cfa_off(ops, nops, &off);
			if (r->saved_mask >> c & 1)
				ck_assert_msg(at_cfa && off == r->saved_off[c], "%s: 0x%x: r%d not at CFA%+d",
					      what, r->offset, c, r->saved_off[c]);
			else
				ck_assert_msg(!at_cfa, "%s: 0x%x: r%d has a CFA rule, truth: not saved",
					      what, r->offset, c);
		}
		free(fr);
	}
	/* Exact boundaries: nothing right before the code or at its end. */
	Dwarf_Frame *fr = NULL;
	ck_assert_msg(dwarf_cfi_addrframe(cfi, code_addr + f->code_size, &fr) != 0, "%s: FDE covers the end", what);
	ck_assert_msg(dwarf_cfi_addrframe(cfi, code_addr - 1, &fr) != 0, "%s: FDE covers code-1", what);
	dwarf_cfi_end(cfi);
	elf_end(e);
	close(fd);
}

static bool have_readelf(void)
{
	static int have = -1;
	if (have < 0) {
		have = system("readelf --version >/dev/null 2>&1") == 0;
		if (!have)
			printf("ehwrite: readelf not installed, its checks are skipped\n");
	}
	return have;
}

/* readelf's decoder: the FDE's pc range, and for x86_64 the CFA column of the
 * interpreted table at every truth row. */
static void check_readelf(const char *path, const char *what, const struct tr_func *f, uint64_t code_addr,
			  bool cfa_table, bool empty_table)
{
	if (!have_readelf())
		return;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s 2>&1", path);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	static char out[65536];
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	char want[128];
	snprintf(want, sizeof(want), "pc=%016llx..%016llx", (unsigned long long)code_addr,
		 (unsigned long long)(code_addr + f->code_size));
	ck_assert_msg(strstr(out, want), "%s: readelf lacks '%s':\n%s", what, want, out);
	/* binutils 2.42+ warns about a header without a search table: what that variant is */
	static const char empty_warn[] = "Warning: It is suspicious to have a .eh_frame_hdr section with an empty search table";
	char *ew = strstr(out, empty_warn);
	if (empty_table && ew)
		memset(ew, ' ', sizeof(empty_warn) - 1);
	ck_assert_msg(!strstr(out, "arning") && !strstr(out, "rror"), "%s: readelf complains:\n%s", what, out);
	if (!cfa_table)
		return;
	/* LOC lines: "0000000000401001 rsp+16   c-16  c-8" */
	struct { unsigned long long loc; char cfa[32]; } locs[64];
	size_t nl = 0;
	for (char *line = strtok(strstr(out, want), "\n"); line && nl < 64; line = strtok(NULL, "\n")) {
		unsigned long long loc;
		char cfa[32];
		/* a LOC row starts with 16 hex digits (binutils 2.42+ also prints an
		 * .eh_frame_hdr block whose "  Count ..." would otherwise scan as hex) */
		if (strspn(line, "0123456789abcdef") == 16 && line[16] == ' ' &&
		    sscanf(line, "%16llx %31s", &loc, cfa) == 2) {
			locs[nl].loc = loc;
			snprintf(locs[nl].cfa, sizeof(locs[nl].cfa), "%s", cfa);
			nl++;
		}
	}
	ck_assert_msg(nl > 0, "%s: no LOC rows in readelf output:\n%s", what, out);
	static const char *const names[] = { [6] = "rbp", [7] = "rsp" };
	for (size_t i = 0; i < f->nrows; i++) {
		const struct tr_row *r = &f->rows[i];
		const char *cur = NULL;
		for (size_t k = 0; k < nl; k++)
			if (locs[k].loc <= code_addr + r->offset)
				cur = locs[k].cfa;
		char exp[32];
		snprintf(exp, sizeof(exp), "%s+%lld", names[r->cfa_reg], (long long)r->cfa_off);
		ck_assert_msg(cur && !strcmp(cur, exp), "%s: readelf CFA at 0x%x is %s, truth %s", what,
			      r->offset, cur ? cur : "(none)", exp);
	}
}

/* The header as a table lookup reads it: our own few lines, not the writer's. */
static void check_hdr(const char *what, const struct tr_func *f, const struct tr_unwind *u,
		      const struct tr_unwind_opts *o, uint64_t code_addr)
{
	struct layout l = layout_of(u, o->hdr);
	const uint8_t *h = u->data + (o->hdr == TR_HDR_BEFORE ? 0 : u->eh_frame_size);
	uint64_t hdr_addr = code_addr + l.hdr_pos, eh_addr = code_addr + l.eh_pos;
	ck_assert_uint_eq(h[0], 1);
	ck_assert_uint_eq(h[1], DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	int32_t ptr;
	memcpy(&ptr, h + 4, 4);
	ck_assert_msg(hdr_addr + 4 + (int64_t)ptr == eh_addr, "%s: eh_frame_ptr %d", what, ptr);
	if (!o->hdr_table) {
		ck_assert_uint_eq(h[2], DW_EH_PE_omit);
		ck_assert_uint_eq(h[3], DW_EH_PE_omit);
		ck_assert_uint_eq(u->hdr_size, 8);
		return;
	}
	ck_assert_uint_eq(h[2], DW_EH_PE_udata4);
	ck_assert_uint_eq(h[3], o->table_enc);
	uint32_t count;
	memcpy(&count, h + 8, 4);
	bool has_fde = o->cfi != TR_CFI_NONE;
	ck_assert_uint_eq(count, has_fde ? 1 : 0);
	if (!has_fde)
		return;
	int64_t loc, fde;
	if (o->table_enc == (DW_EH_PE_datarel | DW_EH_PE_sdata8)) {
		memcpy(&loc, h + 12, 8);
		memcpy(&fde, h + 20, 8);
		ck_assert_uint_eq(u->hdr_size, 28);
	} else {
		int32_t l32, f32;
		memcpy(&l32, h + 12, 4);
		memcpy(&f32, h + 16, 4);
		loc = l32;
		fde = f32;
		ck_assert_uint_eq(u->hdr_size, 20);
	}
	ck_assert_msg(hdr_addr + loc == code_addr, "%s: table initial_loc", what);
	/* The FDE follows the CIE, whose length field says how long it is. */
	const uint8_t *eh = u->data + (o->hdr == TR_HDR_BEFORE ? u->hdr_size : 0);
	uint32_t cie_len;
	memcpy(&cie_len, eh, 4);
	ck_assert_msg(hdr_addr + fde == eh_addr + 4 + cie_len, "%s: table fde address", what);
	(void)f;
}

/* ---- every encoding option, judged by libdw (both paths) and readelf ---- */

/* One directory for the tcase's ELF files, made and removed in the parent
 * process (unchecked fixture), so a failing forked test leaves nothing behind. */
static char tmpdir[64];

static void tmpdir_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ju-ehwrite-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmpdir_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "ehwrite: could not remove %s\n", tmpdir);
}

static void o_default(struct tr_unwind_opts *o) { (void)o; }
static void o_sdata8(struct tr_unwind_opts *o) { o->fde_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata8; }
static void o_absptr(struct tr_unwind_opts *o) { o->fde_enc = DW_EH_PE_absptr; }
static void o_udata8(struct tr_unwind_opts *o) { o->fde_enc = DW_EH_PE_udata8; }
static void o_udata4(struct tr_unwind_opts *o) { o->fde_enc = DW_EH_PE_udata4; }
static void o_sdata4abs(struct tr_unwind_opts *o) { o->fde_enc = DW_EH_PE_sdata4; }
static void o_zplr(struct tr_unwind_opts *o) { strcpy(o->cie_aug, "zPLR"); }
static void o_zplr_lsda(struct tr_unwind_opts *o) { strcpy(o->cie_aug, "zPLR"); o->lsda_enc = DW_EH_PE_udata4; }
static void o_v8(struct tr_unwind_opts *o) { strcpy(o->cie_aug, "zLR"); o->cie_version = 3; o->terminator = true; }
static void o_zrs(struct tr_unwind_opts *o) { strcpy(o->cie_aug, "zRS"); }
static void o_noaug(struct tr_unwind_opts *o) { strcpy(o->cie_aug, ""); }
static void o_before(struct tr_unwind_opts *o) { o->hdr = TR_HDR_BEFORE; }
static void o_nohdr(struct tr_unwind_opts *o) { o->hdr = TR_HDR_NONE; }
static void o_table8(struct tr_unwind_opts *o) { o->table_enc = DW_EH_PE_datarel | DW_EH_PE_sdata8; }
static void o_notable(struct tr_unwind_opts *o) { o->hdr_table = false; }
static void o_unaligned(struct tr_unwind_opts *o) { o->eh_unaligned = true; }
static void o_dirs(struct tr_unwind_opts *o) { o->cfi = TR_CFI_DIRECTIVES; }
static void o_bytes(struct tr_unwind_opts *o)
{
	static const uint8_t cpython[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08 };
	o->cfi = TR_CFI_BYTES;
	memcpy(o->prog, cpython, sizeof(cpython));
	o->prog_len = sizeof(cpython);
}
static void o_none(struct tr_unwind_opts *o) { o->cfi = TR_CFI_NONE; o->terminator = true; o->mapped = 0; }
static void o_none_notable(struct tr_unwind_opts *o) { o->cfi = TR_CFI_NONE; o->hdr_table = false; }

static const struct enc_case {
	const char *name;
	bool a64;
	const char *const *lines;
	size_t n;
	void (*opts)(struct tr_unwind_opts *);
	unsigned flags;
} enc_cases[] = {
	{ "default", false, cpy313, 5, o_default, CHK_SAVED },
	{ "pcrel|sdata8", false, cpy313, 5, o_sdata8, CHK_SAVED },
	{ "absptr", false, cpy313, 5, o_absptr, CHK_SAVED },
	{ "udata8", false, cpy313, 5, o_udata8, CHK_SAVED },
	{ "udata4", false, cpy313, 5, o_udata4, CHK_SAVED },
	{ "sdata4-absolute", false, cpy313, 5, o_sdata4abs, CHK_SAVED },
	{ "zPLR", false, cpy313, 5, o_zplr, CHK_SAVED },
	{ "zPLR-lsda4", false, cpy313, 5, o_zplr_lsda, CHK_SAVED },
	{ "v8-zLR-v3-terminator", false, cpy313, 5, o_v8, CHK_SAVED },
	{ "zRS", false, cpy313, 5, o_zrs, CHK_SAVED },
	{ "no-augmentation", false, cpy313, 5, o_noaug, CHK_SAVED },
	{ "hdr-before", false, cpy313, 5, o_before, CHK_SAVED },
	{ "hdr-none", false, cpy313, 5, o_nohdr, CHK_SAVED },
	{ "table-sdata8", false, cpy313, 5, o_table8, CHK_SAVED },
	{ "no-table", false, cpy313, 5, o_notable, CHK_SAVED },
	{ "eh-unaligned", false, cpy312, 4, o_unaligned, CHK_SAVED },
	{ "directives", false, cpy313_dir, 9, o_dirs, 0 },
	{ "bytes", false, cpy313, 5, o_bytes, 0 },
	{ "saves", false, saves, 11, o_default, CHK_SAVED },
	{ "bigframe", false, bigframe, 6, o_default, CHK_SAVED },
	{ "nofp", false, cpy312, 4, o_default, CHK_SAVED },
	{ "none", false, cpy313, 5, o_none, CHK_NOFDE },
	{ "none-notable", false, cpy313, 5, o_none_notable, CHK_NOFDE },
	{ "aarch64", true, a64_cpy, 5, o_default, CHK_SAVED },
	{ "aarch64-v3", true, a64_cpy, 5, o_v8, CHK_SAVED },
	{ "ra-in-r10", false, rareg, 7, o_default, CHK_SAVED },
};

START_TEST(test_encodings)
{
	const struct enc_case *c = &enc_cases[_i];
	const struct tr_arch *a = c->a64 ? &tr_arch_aarch64 : &tr_arch_x86_64;
	const uint64_t code_addr = 0x7f1000;
	struct tr_func *f = emit_lines(a, c->lines, c->n);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	c->opts(&o);
	struct tr_unwind *u = calloc(1, sizeof(*u));
	ck_assert_msg(tr_unwind_build(f, &o, code_addr, u, &err) == 0, "%s: %s", c->name, err.msg);
	ck_assert_uint_eq(u->size, u->eh_frame_size + u->hdr_size);
	ck_assert_uint_eq(u->eh_off, o.eh_unaligned ? f->code_size : (f->code_size + 7) / 8 * 8);
	ck_assert_uint_eq(u->mapped_size, o.mapped >= 0 ? (uint64_t)o.mapped : (u->size + 15) / 16 * 16);
	if (o.hdr != TR_HDR_NONE)
		check_hdr(c->name, f, u, &o, code_addr);
	else
		ck_assert_uint_eq(u->hdr_size, 0);

	char path[128];
	snprintf(path, sizeof(path), "%s/%d.elf", tmpdir, _i);
	char what[128];
	write_elf_sections(path, f, u, o.hdr, code_addr);
	snprintf(what, sizeof(what), "%s (sections)", c->name);
	check_libdw(path, what, f, code_addr, c->flags);
	if (!(c->flags & CHK_NOFDE))
		check_readelf(path, what, f, code_addr, !c->a64, o.hdr != TR_HDR_NONE && !o.hdr_table);
	if (o.hdr != TR_HDR_NONE) {
		write_elf_phdrs(path, f, u, o.hdr, code_addr);
		snprintf(what, sizeof(what), "%s (PT_GNU_EH_FRAME)", c->name);
		check_libdw(path, what, f, code_addr, c->flags);
	}
	unlink(path);
	free(u);
	free(f);
}
END_TEST

/* ---- byte by byte: the reference layout (facts section 2) ---- */

START_TEST(test_bytes_cpython)
{
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	struct tr_unwind u;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(u.eh_off, 8);
	ck_assert_uint_eq(u.eh_frame_size, 56);
	ck_assert_uint_eq(u.hdr_size, 20);
	ck_assert_uint_eq(u.size, 76);
	ck_assert_uint_eq(u.mapped_size, 80);
	ASSERT_BYTES(u.data, u.size,
		/* CIE: length 20, id 0, version 1, "zR", code 1, data -8, RA 16, aug 1: pcrel|sdata4 */
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x52, 0x00, 0x01, 0x78, 0x10, 0x01,
		0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0x00, 0x00,
		/* FDE: length 28, CIE pointer 28, pc_begin -40 (code - field at eh+32), range 8, aug 0 */
		0x1c, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0xd8, 0xff, 0xff, 0xff, 0x08, 0x00, 0x00, 0x00,
		0x00, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6, 0x00, 0x00,
		/* header: 1, 0x1b, 0x03, 0x3b, eh_frame_ptr -(56+4), count 1, loc -64, fde -32 */
		0x01, 0x1b, 0x03, 0x3b, 0xc4, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0xc0, 0xff, 0xff, 0xff,
		0xe0, 0xff, 0xff, 0xff);
	free(f);
}
END_TEST

START_TEST(test_bytes_variants)
{
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	struct tr_unwind_opts o;
	struct tr_unwind u;
	/* V8: "zLR" v3, LSDA omitted, terminator; a code load without CFI is an empty eh_frame. */
	tr_unwind_opts_default(&o);
	strcpy(o.cie_aug, "zLR");
	o.cie_version = 3;
	o.terminator = true;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(u.data, 24,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x7a, 0x4c, 0x52, 0x00, 0x01, 0x78, 0x10,
		0x02, 0xff, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01);
	ck_assert_uint_eq(u.eh_frame_size, 24 + 32 + 4);
	ASSERT_BYTES(u.data + 56, 4, 0, 0, 0, 0);
	/* no augmentation: pc_begin/pc_range absptr, no aug data length */
	tr_unwind_opts_default(&o);
	strcpy(o.cie_aug, "");
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(u.data, 48,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x78, 0x10, 0x0c, 0x07, 0x08,
		0x90, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x24, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00, 0x00, 0x10, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
	/* zPLR with a 4-byte LSDA: personality absptr 0, aug data length 4 in the FDE */
	tr_unwind_opts_default(&o);
	strcpy(o.cie_aug, "zPLR");
	o.lsda_enc = DW_EH_PE_udata4;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(u.data, 32,
		0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x50, 0x4c, 0x52, 0x00, 0x01, 0x78,
		0x10, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x1b, 0x0c, 0x07, 0x08);
	ASSERT_BYTES(u.data + 40 + 16, 5, 0x04, 0x00, 0x00, 0x00, 0x00);
	/* header first (LLVM ORC): eh_frame_ptr +16 (eh_frame right after the 20 bytes), fde +44 */
	tr_unwind_opts_default(&o);
	o.hdr = TR_HDR_BEFORE;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ASSERT_BYTES(u.data, 20, 0x01, 0x1b, 0x03, 0x3b, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		     0xf8, 0xff, 0xff, 0xff, 0x2c, 0x00, 0x00, 0x00);
	/* no CFI, V8 style: only the terminator, a header with fde_count 0, mapped 0 */
	tr_unwind_opts_default(&o);
	o.cfi = TR_CFI_NONE;
	o.terminator = true;
	o.mapped = 0;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(u.mapped_size, 0);
	ASSERT_BYTES(u.data, u.size, 0x00, 0x00, 0x00, 0x00,
		     0x01, 0x1b, 0x03, 0x3b, 0xf8, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00);
	/* mapped given */
	tr_unwind_opts_default(&o);
	o.mapped = 4096;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(u.mapped_size, 4096);
	free(f);
}
END_TEST

START_TEST(test_unaligned_layout)
{
	/* 11 bytes of code: eh_frame at code+11, pc_begin encoded for that address. */
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy312, 4);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	struct tr_unwind u;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(u.eh_off, 16);
	int32_t aligned;
	memcpy(&aligned, u.data + 24 + 8, 4);
	o.eh_unaligned = true;
	ck_assert_msg(tr_unwind_build(f, &o, 0x7f1000, &u, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(u.eh_off, 11);
	int32_t unaligned;
	memcpy(&unaligned, u.data + 24 + 8, 4);
	ck_assert_int_eq(aligned, -(16 + 32));
	ck_assert_int_eq(unaligned, -(11 + 32));
	free(f);
}
END_TEST

START_TEST(test_build_errors)
{
	struct tr_func *f = emit_lines(&tr_arch_x86_64, cpy313, 5);
	struct tr_unwind_opts o;
	struct tr_unwind u;
	tr_unwind_opts_default(&o);
	o.fde_enc = DW_EH_PE_pcrel | DW_EH_PE_uleb128;
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "encoding 0x11 not supported"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	o.fde_enc = DW_EH_PE_datarel | DW_EH_PE_sdata4;
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "fde_enc 0x3b not supported"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	o.fde_enc = DW_EH_PE_udata4;
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f0000001000ull, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "does not fit"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	strcpy(o.cie_aug, "zX");
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "augmentation 'zX' not supported"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	o.cie_version = 2;
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "version 2"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	o.table_enc = DW_EH_PE_udata4;
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "table_enc"), "%s", err.msg);
	tr_unwind_opts_default(&o);
	o.cfi = TR_CFI_DIRECTIVES;
	free(f);
	static const char *const bad[] = { "push_fp", ".cfi_offset %rbp, -12", "ret" };
	f = emit_lines(&tr_arch_x86_64, bad, 3);
	ck_assert_int_lt(tr_unwind_build(f, &o, 0x7f1000, &u, &err), 0);
	ck_assert_msg(strstr(err.msg, "line 2: .cfi_offset"), "%s", err.msg);
	free(f);
}
END_TEST

Suite *suite_ehwrite(void)
{
	Suite *s = suite_create("ehwrite");
	TCase *tc = tcase_create("cfi");
	tcase_add_test(tc, test_derive_cpython_fp);
	tcase_add_test(tc, test_derive_others);
	tcase_add_test(tc, test_cie_init);
	tcase_add_test(tc, test_advance_forms);
	tcase_add_test(tc, test_compile_cpython);
	tcase_add_test(tc, test_compile_all);
	tcase_add_loop_test(tc, test_compile_errors, 0, (int)(sizeof(compile_errors) / sizeof(compile_errors[0])));
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("encode");
	tcase_add_unchecked_fixture(te, tmpdir_setup, tmpdir_teardown);
	tcase_add_loop_test(te, test_encodings, 0, (int)(sizeof(enc_cases) / sizeof(enc_cases[0])));
	tcase_add_test(te, test_bytes_cpython);
	tcase_add_test(te, test_bytes_variants);
	tcase_add_test(te, test_unaligned_layout);
	tcase_add_test(te, test_build_errors);
	suite_add_tcase(s, te);
	return s;
}
