/* Suite lint: one builder per rule, bad breaks the rule, !bad is the same
 * dump fixed (tests/lint.h). */
#include "tests/lint.h"

/* ---- one builder per rule: bad breaks the rule, !bad is the same dump fixed ---- */

void lt_base(struct jb *b)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_std(b);
	jb_func(b, F, &o, "tramp", ADDR, 0);
}

void mk_magic(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, bad ? 0x12345678 : JD_MAGIC, 1, 40, EM_X86_64, 0);
	jb_close(b);
}

void mk_version(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, bad ? 2 : 1, 40, EM_X86_64, 0);
	jb_close(b);
}

void mk_hdrsize(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, bad ? 48 : 40, EM_X86_64, 0);
	if (bad)
		jb_zero(b, 8);
	jb_close(b);
}

void mk_flags(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, bad ? 6 : 0);
	jb_close(b);
}

void mk_archts(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, bad ? 1 : 0);
	jb_close(b);
}

void mk_mach(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, bad ? 9999 : EM_X86_64, 0);
	jb_close(b);
}

/* perf reads the dump outside /tmp: perf >= 6.8's libdw gets no module */
void mk_dumpdir(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_close(b);
	lt_lint_dir = bad ? "/home/x/bench" : "/tmp";
}

void mk_fname(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_close(b);
	c->name = bad ? "/tmp/x/perf.dump" : "/tmp/x/jit-4242.dump";
}

void mk_truncated(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_close(b);
	c->cut = bad ? 4 : 0;
}

void mk_recsize(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_prefix(b, JD_CODE_CLOSE, bad ? 8 : 16);
}

void mk_unknown(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_prefix(b, bad ? 9 : JD_CODE_CLOSE, 16);
}

void mk_afterclose(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_std(b);
	if (bad)
		jb_close(b);
	jb_func(b, F, &o, "tramp", ADDR, 0);
	if (!bad)
		jb_close(b);
}

void mk_tsback(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	if (bad)
		b->ts = 5;
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
}

/* the standard dump with clean unwinding info and one load under pid; the
 * load record's offset in b */
static size_t std_load_pid(struct jb *b, struct ctx *c, uint32_t pid)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	return jb_load_pid(b, pid, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_pid(struct jb *b, bool bad, struct ctx *c)
{
	std_load_pid(b, c, bad ? 777 : PID);
}

void mk_name(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad) {
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
		return;
	}
	/* "trampxxx" without a NUL, then code without a zero byte */
	jb_prefix(b, JD_CODE_LOAD, (uint32_t)(56 + 8 + F->code_size));
	uint8_t f[40];
	p32(f, PID);
	p32(f + 4, PID);
	p64(f + 8, ADDR);
	p64(f + 16, ADDR);
	p64(f + 24, F->code_size);
	p64(f + 32, 0);
	jb_put(b, f, sizeof(f));
	jb_put(b, "trampxxx", 8);
	jb_put(b, F->code, F->code_size);
}

void mk_codesize(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	size_t at = jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		p64(b->p + at + 40, 1000);
}

void mk_trailing(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad) {
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
		return;
	}
	/* name, NUL, code, then the padding: perf's code starts 2 bytes late */
	size_t n = 56 + 6 + F->code_size;
	size_t pad = (8 - n % 8) % 8;
	ck_assert_uint_gt(pad, 0);
	jb_prefix(b, JD_CODE_LOAD, (uint32_t)(n + pad));
	uint8_t f[40];
	p32(f, PID);
	p32(f + 4, PID);
	p64(f + 8, ADDR);
	p64(f + 16, ADDR);
	p64(f + 24, F->code_size);
	p64(f + 32, 0);
	jb_put(b, f, sizeof(f));
	jb_put(b, "tramp", 6);
	jb_put(b, F->code, F->code_size);
	jb_zero(b, pad);
}

void mk_empty(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_load(b, "tramp", ADDR, F->code, bad ? 0 : F->code_size, 0);
}

void mk_vma(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	size_t at = jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		p64(b->p + at + 24, ADDR + 0x100);
}

/* Two loads of the same code: perf 6.1's perf inject -j gives their jitted
 * .so files different build-ids (checked with readelf -n on its output for
 * CPython 3.13.0's 205 identical trampolines: 205 build-ids), so it is not a
 * finding (JD025 identical-code was removed). */
START_TEST(identical_code_is_clean)
{
	struct jb b = { 0 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	lt_base(&b);
	jb_func(&b, F, &o, "tramp2", ADDR + 0x1000, 1);
	jb_close(&b);
	struct lint_summary s = lt_lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
	free(b.p);
	char buf[4096];
	lt_show(buf, sizeof(buf));
	ck_assert_uint_eq(s.loads, 2);
	ck_assert_msg(lt_G.n == 0, "findings on two loads of the same code:\n%s", buf);
}
END_TEST

void mk_dupindex(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	lt_base(b);
	jb_func(b, FB, &o, "other", ADDR + 0x1000, bad ? 0 : 1);
}

void mk_wrap(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_load(b, "tramp", bad ? UINT64_MAX - 4 : ADDR, F->code, F->code_size, 0);
}

void mk_after(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	if (!bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_close(b);
}

/* written after its load, and picked up by the next load of another size */
void mk_after2(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	if (!bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad) {
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
		jb_load(b, "big", ADDR + 0x1000, FB->code, FB->code_size, 1);
	} else {
		jb_func(b, FB, &o, "big", ADDR + 0x1000, 1);
	}
}

void mk_noload(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	if (!bad)
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
}

void mk_overwritten(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	if (bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

/* unwinding data from opts, with a hook to damage it */
void mk_unw_with(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o,
			void (*damage)(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms))
{
	struct tr_unwind u;
	jb_std(b);
	lt_unw(f, o, ADDR, &u);
	uint64_t us = u.size, hs = u.hdr_size, ms = u.mapped_size;
	if (damage)
		damage(&u, &us, &hs, &ms);
	jb_unw(b, u.data, u.size, us, hs, ms);
	jb_load(b, "tramp", ADDR, f->code, f->code_size, 0);
	jb_close(b);
}

void dmg_usize(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*us += 64;
}

void dmg_hs0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*hs = 0;
}

void dmg_hs_big(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*hs += 4;
}

void dmg_cie_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	u->data[8] = 9;
}

void dmg_hdr_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	u->data[u->eh_frame_size] = 2;
}

void add32(uint8_t *p, int32_t d)
{
	int32_t v;
	memcpy(&v, p, 4);
	v += d;
	memcpy(p, &v, 4);
}

void dmg_table(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	add32(u->data + u->eh_frame_size + 12, 4);   /* initial_loc of entry 0 */
}

void dmg_ehptr(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	add32(u->data + u->eh_frame_size + 4, 8);
}

void dmg_ms0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*ms = 0;
}

void dmg_ms16(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*ms = 16;
}

void dmg_empty(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*us = *hs = 0;
}

/* misplaced terminator: 8 bytes of .eh_frame after it (the header then moves) */
void dmg_after_term(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	size_t es = u->eh_frame_size;
	memmove(u->data + es + 8, u->data + es, u->hdr_size);
	memset(u->data + es, 0x5a, 8);
	u->size += 8;
	u->eh_frame_size += 8;
	*us += 8;
}

/* only the CIE, and a header with fde_count 0 */
void dmg_no_fde(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	uint32_t len;
	memcpy(&len, u->data, 4);
	size_t cie = 4 + len;
	uint8_t h[12] = { 1, 0x1b, 0x03, 0x3b };
	p32(h + 4, (uint32_t)-(int32_t)(cie + 4));
	p32(h + 8, 0);
	memcpy(u->data + cie, h, sizeof(h));
	u->size = cie + sizeof(h);
	*us = u->size;
	*hs = sizeof(h);
}

#define MK_DMG(fn, dmg)                                            \
	void fn(       struct jb *b, bool bad, struct ctx *c)      \
	{                                                          \
		struct tr_unwind_opts o;                           \
		lt_opts_clean(&o);                                    \
		mk_unw_with(b, F, &o, bad ? dmg : NULL);           \
	}
MK_DMG(mk_usize, dmg_usize)
MK_DMG(mk_hs0, dmg_hs0)
MK_DMG(mk_hsbig, dmg_hs_big)
MK_DMG(mk_cie, dmg_cie_version)
MK_DMG(mk_hdrver, dmg_hdr_version)
MK_DMG(mk_table, dmg_table)
MK_DMG(mk_ehptr, dmg_ehptr)
MK_DMG(mk_ms0, dmg_ms0)
MK_DMG(mk_ms16, dmg_ms16)
MK_DMG(mk_unwempty, dmg_empty)
MK_DMG(mk_term_misplaced, dmg_after_term)
MK_DMG(mk_nofde, dmg_no_fde)

/* JD083: the same load without an FDE in a riscv64 dump, whose perf has only
 * libdw and elfutils' riscv backend no frame-pointer fallback (the header's
 * elf_mach alone names the arch; the code check needs an FDE, so the bytes
 * are not read as riscv64) */
void mk_nofde_rv(struct jb *b, bool bad, struct ctx *c)
{
	mk_nofde(b, bad, c);
	uint32_t rv = 243;                      /* EM_RISCV */
	memcpy(b->p + 12, &rv, 4);
}

void mk_hdrfirst(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.hdr = bad ? TR_HDR_BEFORE : TR_HDR_AFTER;
	mk_unw_with(b, F, &o, NULL);
}

void mk_noterm(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.terminator = !bad;
	mk_unw_with(b, F, &o, NULL);
}

void mk_tableenc(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	if (bad)
		o.table_enc = DW_EH_PE_datarel | DW_EH_PE_sdata8;
	mk_unw_with(b, F, &o, NULL);
}

void mk_notable(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.hdr_table = !bad;
	mk_unw_with(b, F, &o, NULL);
}

void mk_unaligned(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.eh_unaligned = bad;
	ck_assert_uint_eq(F11->code_size, 11);
	mk_unw_with(b, F11, &o, NULL);
}

void mk_gap(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	uint8_t code[64];
	lt_opts_clean(&o);
	jb_std(b);
	lt_unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	memcpy(code, F->code, F->code_size);
	memset(code + F->code_size, 0xcc, 8);      /* int3 padding after the function */
	jb_load(b, "tramp", ADDR, code, F->code_size + (bad ? 8 : 0), 0);
}

void mk_outside(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	o.fde_enc = DW_EH_PE_absptr | DW_EH_PE_udata8;
	jb_std(b);
	lt_unw(F, &o, bad ? ADDR - 0x10000 : ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_absolute(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	if (bad)
		o.fde_enc = DW_EH_PE_absptr | DW_EH_PE_udata8;
	mk_unw_with(b, F, &o, NULL);
}

void mk_overlap(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	lt_base(b);
	jb_func(b, FB, &o, "tramp2", ADDR + (bad ? 16 : 0x1000), 1);
}

/* CPython's program, its def_cfa_offset 24 after the push when bad (the truth is 16) */
void mk_cfa(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t good_prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07,
					     0x08, 0xc6 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, good_prog, sizeof(good_prog));
	o.prog_len = sizeof(good_prog);
	if (bad)
		o.prog[2] = 0x18;
	mk_unw_with(b, F, &o, NULL);
}

/* arm64: CPython's FDE (its trailing block names x29 at the ret, after ldp
 * restored it) against the program derived from the truth */
void mk_cfa_a64(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t cpython[] = { 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01, 0x43, 0xde, 0xdd, 0x0e, 0x00,
					   0x0d, 0x1d, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01 };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, cpython, sizeof(cpython));
		o.prog_len = sizeof(cpython);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_AARCH64, 0);
	lt_unw(FA, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, FA->code, FA->code_size, 0);
}

/* riscv64: CPython's trampoline (save_reg ra; jalr; restore_reg ra; ret) with
 * an FDE whose CFA is 16 bytes too high (bad), else the program derived from
 * the truth; the code bytes are the riscv64 encoder's */
void mk_cfa_rv(struct jb *b, bool bad, struct ctx *c)
{
	static const char *const cpy[] = { "save_reg ra", "call_target", "restore_reg ra", "ret" };
	static struct tr_func *fr;
	if (!fr)
		fr = lt_emit_for(&tr_arch_riscv64, cpy, 4);
	static const uint8_t high[] = { 0x41, 0x0e, 0x20, 0x41, 0x81, 0x01 };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, high, sizeof(high));
		o.prog_len = sizeof(high);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_RISCV, 0);
	lt_unw(fr, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, fr->code, fr->code_size, 0);
}

/* riscv64: ra's rule at CFA-16 where CPython's riscv64 prologue stored it at
 * CFA-8 (bad), else the derived program */
void mk_ra_rv(struct jb *b, bool bad, struct ctx *c)
{
	static const char *const cpy[] = { "save_reg ra", "call_target", "restore_reg ra", "ret" };
	static struct tr_func *fr;
	if (!fr)
		fr = lt_emit_for(&tr_arch_riscv64, cpy, 4);
	static const uint8_t slot[] = { 0x41, 0x0e, 0x10, 0x41, 0x81, 0x02 };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, slot, sizeof(slot));
		o.prog_len = sizeof(slot);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_RISCV, 0);
	lt_unw(fr, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, fr->code, fr->code_size, 0);
}

void mk_ra(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x07, 0x10, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43,
					0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog + (bad ? 0 : 2), sizeof(prog) - (bad ? 0 : 2));
	o.prog_len = sizeof(prog) - (bad ? 0 : 2);
	mk_unw_with(b, F, &o, NULL);
}

/* CPython's x86_64 FDE ends without restoring rbp's rule after the pop
 * (facts: real CPython ships it): at the ret the slot is below SP */
void mk_below_sp(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog, sizeof(prog));
	o.prog_len = sizeof(prog) - (bad ? 1 : 0);
	mk_unw_with(b, F, &o, NULL);
}

/* rbp's rule names cfa-8 (the return address's slot) where push stored it at cfa-16 */
void mk_saved_early(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog, sizeof(prog));
	o.prog_len = sizeof(prog);
	if (bad)
		o.prog[4] = 0x01;
	mk_unw_with(b, F, &o, NULL);
}

/* arm64: a program without a rule for x30, which blr overwrites: after the
 * call the rows still say the return address is in x30 */
void mk_ra_code(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x41, 0x0d, 0x1d, 0x42, 0x0c, 0x1f, 0x10,
					0x41, 0x0e, 0x00, 0xdd };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, prog, sizeof(prog));
		o.prog_len = sizeof(prog);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_AARCH64, 0);
	lt_unw(FA, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, FA->code, FA->code_size, 0);
}

/* A load of code bytes with a CFA program of its own (the CIE's: CFA = rsp+8,
 * the return address at cfa-8) */
void jb_code_prog(struct jb *b, const uint8_t *code, size_t n, const uint8_t *prog, size_t plen)
{
	static struct tr_func f;
	memcpy(&f, F, sizeof(f));
	ck_assert_uint_le(n, sizeof(f.code));
	memcpy(f.code, code, n);
	f.code_size = n;
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	ck_assert_uint_le(plen, sizeof(o.prog));
	memcpy(o.prog, prog, plen);
	o.prog_len = plen;
	jb_std(b);
	jb_func(b, &f, &o, "tramp", ADDR, 0);
	jb_close(b);
}

/* CPython's frame-pointer trampoline with 06 (push %es, invalid in 64-bit
 * mode: capstone does not decode it either) where its call is: the code
 * check cannot go on there and says so (the fixed dump has the call) */
void mk_undecoded(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x42, 0x0c, 0x07, 0x10, 0x41,
					0x0e, 0x08, 0xc6 };
	uint8_t k[sizeof(code)];
	memcpy(k, code, sizeof(code));
	if (bad)
		k[4] = k[5] = 0x06;
	jb_code_prog(b, k, sizeof(k), prog, sizeof(prog));
}

/* the fixed dump of mk_undecoded is clean, and the bad one has JD081 alone,
 * naming +0x4 and the bytes (the check takes up again at +0x6's row) */
START_TEST(undecoded_names_the_bytes)
{
	char buf[4096];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		mk_undecoded(&b, bad, NULL);
		lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		lt_show(buf, sizeof(buf));
		ck_assert_msg(lt_G.n == (size_t)bad, "%s", buf);
		if (bad)
			ck_assert_msg(!strcmp(lt_G.r[0]->id, "JD081") && lt_G.where[0].npc == 1 && lt_G.where[0].pc[0] == 4 &&
				      strstr(lt_G.msg[0], "at +0x4 lint's x86_64 decoder cannot decode the instruction that "
					     "starts with the bytes 06 06 5d c3 (4 of the 4 left)") &&
				      strstr(lt_G.msg[0], "[+0x4, +0x6)"), "%s", buf);
	}
}
END_TEST

/* a 16 KiB frame: the return address is above perf's 8192-byte copy */
/* a rule for xmm0 (DWARF 17) after the push: libunwind's x86_64 table ends at 16 */
void mk_past_libunwind(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t with[] = { 0x41, 0x08, 0x11, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c,
					0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	/* fixed: the same program without same_value r17 */
	static const uint8_t without[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08,
					   0xc6 };
	memcpy(o.prog, bad ? with : without, bad ? sizeof(with) : sizeof(without));
	o.prog_len = bad ? sizeof(with) : sizeof(without);
	mk_unw_with(b, F, &o, NULL);
}

/* the CFA exactly at the end of perf's 8192-byte copy: the return address is
 * its last word, which perf's libunwind path never reads (fuzz-074669363064) */
void mk_deep_edge(struct jb *b, bool bad, struct ctx *c)
{
	static struct tr_func *edge, *room;
	static const char *const e_ops[] = { "alloc 0x1ff8", "call_target", "free 0x1ff8", "ret" };
	static const char *const r_ops[] = { "alloc 0x1fe0", "call_target", "free 0x1fe0", "ret" };
	if (!edge) {
		edge = lt_emit(e_ops, 4);
		room = lt_emit(r_ops, 4);
	}
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_std(b);
	jb_func(b, bad ? edge : room, &o, "tramp", ADDR, 0);
}

void mk_deep(struct jb *b, bool bad, struct ctx *c)
{
	static struct tr_func *deep, *shallow;
	static const char *const d_ops[] = { "alloc 0x4008", "call_target", "free 0x4008", "ret" };
	static const char *const s_ops[] = { "alloc 0x1008", "call_target", "free 0x1008", "ret" };
	if (!deep) {
		deep = lt_emit(d_ops, 4);
		shallow = lt_emit(s_ops, 4);
	}
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_std(b);
	jb_func(b, bad ? deep : shallow, &o, "tramp", ADDR, 0);
}

/* one line entry whose file name holds garbage (V8 in node 20), or whose
 * entries end before the record does */
void jb_debug_name(struct jb *b, const char *name, size_t nlen, size_t tail)
{
	size_t len = 32 + 16 + nlen + 1 + tail;
	size_t pad = (8 - len % 8) % 8;
	jb_prefix(b, JD_CODE_DEBUG_INFO, (uint32_t)(len + pad));
	uint8_t f[32] = { 0 };
	p64(f, ADDR);
	p64(f + 8, 1);
	p64(f + 16, ADDR);
	p32(f + 24, 10);
	jb_put(b, f, sizeof(f));
	jb_put(b, name, nlen);
	jb_zero(b, 1);
	for (size_t i = 0; i < tail; i++)
		jb_put(b, "x", 1);
	jb_zero(b, pad);
}

void mk_dbg_name(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (bad)
		jb_debug_name(b, "f\x01\xfe\x80.py", 7, 0);
	else
		jb_debug_name(b, "caf\xc3\xa9.py", 8, 0);   /* UTF-8 is fine */
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_dbg_tail(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug_name(b, "f.py", 4, bad ? 12 : 0);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_move_unknown(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_move(b, ADDR, ADDR + 0x10000, F->code_size, bad ? 5 : 0);
}

void mk_move_mismatch(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	jb_move(b, bad ? ADDR + 0x5000 : ADDR, ADDR + 0x10000, F->code_size, 0);
}

void mk_dbg_after(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "big", ADDR + 0x1000, FB->code, FB->code_size, 1);
}

void mk_dbg_noload(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
	if (bad)
		jb_debug(b, ADDR + 0x9000, 1, 1, ADDR + 0x9000);
}

void mk_dbg_mismatch(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, bad ? ADDR + 0x9000 : ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_dbg_entries(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, ADDR, bad ? 5 : 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_dbg_over(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

void mk_dbg_range(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, ADDR, 1, 1, bad ? ADDR + 0x1000 : ADDR + 1);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

/* The conventional terminating line entry at code_addr + code_size, the last
 * one (QEMU writes one to every DEBUG_INFO: "perf requires a terminating
 * entry"; Erlang a dummy line), is not JD075; an entry at the end that is not
 * the last, or one past it, is. */
START_TEST(debug_terminator_is_clean)
{
	/* entries at ADDR + start + k (k < n), over code of code_size bytes; out: JD075's count */
	const uint64_t cs = F->code_size;
	const struct { uint64_t start; size_t n; int out; } t[] = {
		{ cs - 1, 2, 0 },          /* the last code byte, then the terminator */
		{ cs, 1, 0 },              /* the terminator alone */
		{ 0, 1, 0 },
		{ cs + 1, 1, 1 },          /* past the end */
		{ cs, 2, 2 },              /* the end but not the last, then past it */
	};
	char buf[4096];
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jb b = { 0 };
		jb_std(&b);
		jb_debug(&b, ADDR, t[i].n, t[i].n, ADDR + t[i].start);
		jb_load(&b, "tramp", ADDR, F->code, F->code_size, 0);
		lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		lt_show(buf, sizeof(buf));
		char msg[64];
		snprintf(msg, sizeof(msg), ": %d line entr", t[i].out);
		ck_assert_msg(lt_fired("JD075") == (t[i].out > 0) && (!t[i].out || strstr(buf, msg)),
			      "case %zu (%zu entries from +0x%" PRIx64 "):\n%s", i, t[i].n, t[i].start, buf);
	}
}
END_TEST

void mk_profile(struct jb *b, bool bad, struct ctx *c)
{
	lt_base(b);
	c->prof = bad ? PV_V61 : PV_CURRENT;
}

/* more loads than the histories hold: far-apart indices and addresses */
void mk_limit(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t ret[] = { 0xc3 };
	jb_std(b);
	size_t n = bad ? LINT_MAX_INDEX + 10 : 1000;
	for (size_t i = 0; i < n; i++)
		jb_load(b, "f", ADDR + 0x100 * i, ret, 1, 2 * i);
}
void lint_add_mk_tests(TCase *rules)
{
	tcase_add_test(rules, identical_code_is_clean);
	tcase_add_test(rules, undecoded_names_the_bytes);
	tcase_add_test(rules, debug_terminator_is_clean);
}

/* JD028: the second load has no UNWINDING_INFO; JD029: neither has (fixed: both have) */
void mk_nounw_some(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	lt_base(b);
	if (bad)
		jb_load(b, "bare", ADDR + 0x1000, F->code, F->code_size, 1);
	else
		jb_func(b, F, &o, "bare", ADDR + 0x1000, 1);
}

void mk_nounw_all(struct jb *b, bool bad, struct ctx *c)
{
	if (!bad) {
		mk_nounw_some(b, false, c);
		return;
	}
	jb_std(b);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_load(b, "bare", ADDR + 0x1000, F->code, F->code_size, 1);
}

/* JD082: fib as LLVM 19's MCJIT dumped it (tests/corpus/llvm19-mcjit-trixie),
 * before relocation: `movabs $0x0,%r15` then two `call *%r15`; fixed: the
 * immediate relocated.  arm64: `bl .` (94000000) against `bl` to a target. */
void mk_unrelocated(struct jb *b, bool bad, struct ctx *c)
{
	uint8_t code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x49, 0xbf, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x89, 0xc7,
			   0x41, 0xff, 0xd7, 0x48, 0x89, 0xdf, 0x41, 0xff, 0xd7, 0x41, 0x5f, 0xc3 };
	if (!bad)
		code[8] = 0x10;   /* movabs $0x1000,%r15 */
	jb_std(b);
	jb_load(b, "fib", ADDR, code, sizeof(code), 0);
}

void mk_unrelocated_a64(struct jb *b, bool bad, struct ctx *c)
{
	/* stp x29, x30, [sp, #-16]!; mov x29, sp; bl .; ldp x29, x30, [sp], #16; ret */
	uint8_t code[] = { 0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x00, 0x00, 0x00, 0x94,
			   0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6 };
	if (!bad)
		code[8] = 0x10;   /* bl .+0x40 */
	jb_hdr(b, JD_MAGIC, 1, 40, EM_AARCH64, 0);
	jb_load(b, "fib", ADDR, code, sizeof(code), 0);
}

/* JD017: the load's tid is the low 32 bits of a pthread_t, as Erlang/OTP
 * writes it (tests/corpus/erlang-otp29-sid: 0x951fe6c0); fixed: the pid's
 * own thread.  The tid sits at JD_LOAD_TID in the record. */
void mk_tid(struct jb *b, bool bad, struct ctx *c)
{
	size_t at = std_load_pid(b, c, PID);
	static const uint8_t tid[4] = { 0xc0, 0xe6, 0x1f, 0x95 };
	if (bad)
		memcpy(b->p + at + JD_LOAD_TID, tid, 4);
}

/* Code reused at one address (JD062): bad writes FB's code and CFI over F's
 * at ADDR, as tools/jit-reuse.c writes B over A; fixed, the same code and
 * CFI again (an identical re-load, no finding). */
void mk_reuse(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	lt_base(b);
	if (bad)
		jb_func(b, FB, &o, "big", ADDR, 1);
	else
		jb_func(b, F, &o, "tramp", ADDR, 1);
}
