/* aarch64 decoder for the code-vs-CFI check. */
#include <capstone/capstone.h>
#include <stdio.h>

#include "unwinders/decode.h"
#include "unwinders/uwarch.h"

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* aarch64: the stack instructions JIT prologues and epilogues use (Arm ARM
 * C4.1); one word each, unknown words stop the check as on x86_64. */
static size_t a64_decode(const uint8_t *p, size_t n, struct uw_insn *e)
{
	e->end = e->data = e->fp_base = e->call = e->jump = false;   /* readers stop at neff */
	e->neff = 0;
	if (n < 4)
		return 0;
	uint32_t w = rd32(p);
	unsigned rd = w & 31, rn = (w >> 5) & 31, rt2 = (w >> 10) & 31;
	if ((w & 0xfffff01f) == 0xd503201f)             /* hint: nop, paciasp, autiasp, bti */
		return 4;
	if ((w & 0xfffffc1f) == 0xd65f0000 || (w & 0xfffffc1f) == 0xd61f0000 ||
	    (w & 0xfc000000) == 0x14000000 || (w & 0xffe0001f) == 0xd4200000) {
		e->end = true;                           /* ret, br, b, brk */
		return 4;
	}
	if ((w & 0xfffffc1f) == 0xd63f0000 || (w & 0xfc000000) == 0x94000000) {
		uw_insn_reg(e, UW_EFF_CLOBBER, 30, 0);       /* blr, bl: x30 is the return address into us */
		return 4;
	}
	if ((w & 0xff000010) == 0x54000000 || (w & 0x7e000000) == 0x34000000 ||
	    (w & 0x7e000000) == 0x36000000)
		return 4;                                   /* b.cond, cbz/cbnz, tbz/tbnz */
	/* stp/ldp of x registers: pre-index (writeback), post-index, signed offset */
	if ((w & 0x7fc00000) == 0x29800000 || (w & 0x7fc00000) == 0x28800000 ||
	    (w & 0x7fc00000) == 0x29c00000 || (w & 0x7fc00000) == 0x28c00000 ||
	    (w & 0x7f800000) == 0x29000000) {
		if (!(w >> 31))
			return 0;                               /* w registers */
		bool load = w & (1u << 22), wb = (w & 0x7f000000) != 0x29000000 || (w & (1u << 23));
		bool post = (w & 0x01800000) == 0x00800000;
		int64_t imm = ((int64_t)(((w >> 15) & 0x7f) ^ 0x40) - 0x40) * 8;
		if (wb && rn == 31 && !post)
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		else if (wb && rn == 29)
			uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
		if (rn == 31) {                             /* the pair at sp (+ imm without writeback) */
			int64_t at = wb ? 0 : imm;
			uw_insn_reg(e, load ? UW_EFF_RESTORE : UW_EFF_STORE, rd, at);
			uw_insn_reg(e, load ? UW_EFF_RESTORE : UW_EFF_STORE, rt2, at + 8);
		}
		if (wb && rn == 31 && post)
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		if (load && (rd == 29 || rt2 == 29))
			uw_insn_add(e, UW_EFF_FP_RESTORE, 0);                              /* ldp x29, ...: the caller's */
		if (load && (rd == 31 || rt2 == 31))
			return 0;
		return 4;
	}
	/* str/ldr x, pre- and post-index */
	if ((w & 0xffe00400) == 0xf8000400 || (w & 0xffe00400) == 0xf8400400) {
		bool load = w & (1u << 22), pre = w & (1u << 11);
		int64_t imm = ((int64_t)(((w >> 12) & 0x1ff) ^ 0x100) - 0x100);
		if (rn == 31 && pre)
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		else if (rn == 29)
			uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
		if (rn == 31)
			uw_insn_reg(e, load ? UW_EFF_RESTORE : UW_EFF_STORE, rd, 0);
		if (rn == 31 && !pre)
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		if (load && rd == 29)
			uw_insn_add(e, UW_EFF_FP_RESTORE, 0);
		return 4;
	}
	/* add/sub x, immediate (mov x29, sp is add x29, sp, #0) */
	if ((w & 0xff800000) == 0x91000000 || (w & 0xff800000) == 0xd1000000) {
		int64_t imm = (int64_t)((w >> 10) & 0xfff) << ((w & (1u << 22)) ? 12 : 0);
		if ((w & 0xff800000) == 0xd1000000)
			imm = -imm;
		if (rd == 31 && rn == 31) {
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		} else if (rd == 31 && rn == 29) {
			uw_insn_add(e, UW_EFF_SP_FROM_FP, imm);
		} else if (rd == 29 && rn == 31) {
			uw_insn_add(e, UW_EFF_FP_FROM_SP, imm);
		} else if (rd == 29 && rn == 29) {
			uw_insn_add(e, UW_EFF_FP_ADD, imm);
		} else if (rd == 31 || rd == 29) {
			uw_insn_add(e, rd == 31 ? UW_EFF_SP_UNKNOWN : UW_EFF_FP_UNKNOWN, 0);
		}
		return 4;
	}
	if ((w & 0xffe0ffe0) == 0xaa0003e0) {           /* mov x, x (orr with xzr) */
		if (rd == 29)
			uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
		return 4;
	}
	if ((w & 0x1f000000) == 0x10000000 || (w & 0x1f800000) == 0x12800000) {
		/* adr/adrp, movz/movn/movk: no stack register is their destination */
		if (rd == 29)
			uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
		return 4;
	}
	return 0;
}

static const char *a64_reg(unsigned r)
{
	return uw_decoder_reg(&arch_facts[ARCH_ID_aarch64], r);
}

/* lint's JD082 on arm64: `bl .` (94000000: imm26 0, a branch-and-link to
 * itself, the R_AARCH64_CALL26 relocation not applied) at each 4-byte
 * boundary. */
static size_t a64_calls_zero(const uint8_t *code, size_t n, uint64_t addr, uint64_t *off, unsigned max,
			     unsigned *noff, char *first, size_t flen)
{
	size_t hits = 0;
	(void)addr;
	for (size_t i = 0; i + 4 <= n; i += 4)
		if (!code[i] && !code[i + 1] && !code[i + 2] && code[i + 3] == 0x94) {
			if (!hits++)
				snprintf(first, flen, "bl . (94000000)");
			if (*noff < max)
				off[(*noff)++] = i;
		}
	return hits;
}

/* DWARF: x29 the frame pointer, sp 31, x30 the return address column; a bl
 * leaves CFA = sp + 0 with the return address in x30 (AAPCS64) */
const struct uw_decoder uw_decoder_aarch64 = {
	UW_DECODER_FACTS(aarch64), .max_insn = 4, .decode = a64_decode, .reg_name = a64_reg,
	.calls_zero = a64_calls_zero,
};

/* the profiler side's record of the arch (unwinders/uwarch.h) */
const struct uw_arch uw_arch_aarch64 = {
	.facts = &arch_facts[ARCH_ID_aarch64],
	/* arch/arm64/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
			    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22",
			    "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr", "sp", "pc" },
	.perf_sp = 31, .perf_ip = 32, .perf_fp = 29, .perf_lr = 30,
	.ndw = 33,
	.lu_regs = 97,
	/* DWARF 0-30 x0-x30, 31 sp; 32 is used here for the pc (perf id 32) */
	.perf_of_dw = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
			20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1, -1, -1, -1, -1,
			-1, -1 },
	.pac_mask = 0x0000ffffffffffffull,     /* libgcc authenticates; 48-bit user VA */
	/* arch/arm64/kernel/perf_callchain.c: stop on misalignment, on a record
	 * that does not move up the stack, PAC bits stripped from lr
	 * (ptrauth_strip_insn_pac, 48-bit VA) */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = 0x0000ffffffffffffull, .align = 8, .monotonic = true },
	.lu_ip_reads = 1,
	.has_cs = true, .cs_arch = CS_ARCH_ARM64, .cs_mode = CS_MODE_ARM, .cs_att = false,
	.decoder = &uw_decoder_aarch64,
};
