/* riscv64: encode ops, report their stack effects.  Every instruction is one
 * little-endian 32-bit word (no compressed forms are generated; a raw op may
 * hold them).  The frame record is the psABI's: the caller's s0 at s0-16 and
 * ra at s0-8, s0 pointing at the CFA.  tests/test_riscv64.c checks every
 * encoding against binutils' riscv64 objdump. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/arch.h"
#include "juerr.h"

enum { RV_SP = AF_riscv64_sp, RV_FP = AF_riscv64_fp, RV_RA = AF_riscv64_ra, RV_T0 = 5, RV_A3 = 13 };

/* the base ISA's formats (the unprivileged spec, chapter 2) */
static uint32_t rv_i(uint32_t op, int rd, uint32_t f3, int rs1, int32_t imm)
{
	return ((uint32_t)imm & 0xfff) << 20 | (uint32_t)rs1 << 15 | f3 << 12 | (uint32_t)rd << 7 | op;
}

static uint32_t rv_s(int rs2, int rs1, int32_t imm)   /* sd rs2, imm(rs1) */
{
	uint32_t u = (uint32_t)imm & 0xfff;
	return (u >> 5) << 25 | (uint32_t)rs2 << 20 | (uint32_t)rs1 << 15 | 3u << 12 | (u & 0x1f) << 7 | 0x23;
}

#define RV_ADDI(rd, rs, imm) rv_i(0x13, rd, 0, rs, imm)
#define RV_LD(rd, rs, imm) rv_i(0x03, rd, 3, rs, imm)
#define RV_JALR(rd, rs) rv_i(0x67, rd, 0, rs, 0)


/* insn: which of the op's instructions (words) has the effect: each gets a row */
static void eff_add(struct tr_eff *eff, int *neff, int insn, enum tr_eff_kind k, int reg, int64_t n)
{
	eff[*neff] = (struct tr_eff){ .kind = k, .reg = reg, .n = n, .insn = insn };
	(*neff)++;
}

/* ABI names (arches.def's DWREGS), "fp" for s0 and x0..x31 */
static int rv_dwarf_reg(const char *name)
{
	int r = arch_dw_number(&arch_facts[ARCH_ID_riscv64], name);
	if (r >= 0)
		return r;
	if (!strcmp(name, "fp"))
		return RV_FP;
	if (name[0] != 'x' || name[1] < '0' || name[1] > '9')
		return -ENOENT;
	char *end;
	long x = strtol(name + 1, &end, 10);
	if (*end || x > 31 || (name[1] == '0' && name[2]))
		return -ENOENT;
	return (int)x;
}

static const char *rv_name(int r)
{
	return arch_facts[ARCH_ID_riscv64].dw_names[r];
}

/* sp -= n (alloc) or sp += n: one addi within its 12-bit signed immediate,
 * else `lui t0, n >> 12; sub/add sp, sp, t0` for a multiple of 4096 */
static int rv_sp_adjust(bool alloc, int64_t n, uint32_t *w, char *text, size_t textcap)
{
	if (n > 0 && (alloc ? n <= 2048 : n <= 2047)) {
		w[0] = RV_ADDI(RV_SP, RV_SP, (int32_t)(alloc ? -n : n));
		snprintf(text, textcap, "addi sp, sp, %lld", (long long)(alloc ? -n : n));
		return 1;
	}
	if (n > 0 && !(n & 0xfff) && n < 0x80000000ll) {
		w[0] = (uint32_t)n | (uint32_t)RV_T0 << 7 | 0x37;   /* lui t0, n >> 12 */
		w[1] = (alloc ? 0x40000000u : 0) | (uint32_t)RV_T0 << 20 | (uint32_t)RV_SP << 15 |
		       (uint32_t)RV_SP << 7 | 0x33;
		snprintf(text, textcap, "lui t0, 0x%llx; %s sp, sp, t0", (unsigned long long)(n >> 12),
			 alloc ? "sub" : "add");
		return 2;
	}
	return -ERANGE;
}

/* save_reg / restore_reg: a 16-byte slot (the psABI keeps sp 16-aligned), the
 * register in its upper half: `save_reg ra` is CPython's prologue
 * (addi sp,sp,-16; sd ra,8(sp)) */
static int rv_save_restore(enum tr_op_kind kind, int64_t n, uint32_t *w, char *text, size_t textcap,
			   struct tr_eff *eff, int *neff, struct ju_err *err)
{
	if (n < 1 || n > 31 || n == RV_SP) {
		ju_errf(err, EINVAL, 0, "%s: DWARF register %lld is not one of x1, x3..x31",
			 tr_op_name(kind), (long long)n);
		return -EINVAL;
	}
	int r = (int)n;
	if (kind == TR_OP_SAVE_REG) {
		w[0] = RV_ADDI(RV_SP, RV_SP, -16);
		w[1] = rv_s(r, RV_SP, 8);
		snprintf(text, textcap, "addi sp, sp, -16; sd %s, 8(sp)", rv_name(r));
		eff_add(eff, neff, 0, TR_EFF_SP_ADD, 0, -16);
		eff_add(eff, neff, 1, TR_EFF_SAVE, r, 8);
	} else {
		w[0] = RV_LD(r, RV_SP, 8);
		w[1] = RV_ADDI(RV_SP, RV_SP, 16);
		snprintf(text, textcap, "ld %s, 8(sp); addi sp, sp, 16", rv_name(r));
		eff_add(eff, neff, 0, TR_EFF_RESTORE, r, 8);
		eff_add(eff, neff, 1, TR_EFF_SP_ADD, 0, 16);
	}
	return 2;
}

/* The op's words into w (at most 3); their count, or -errno with err filled. */
static int rv_encode_op(enum tr_op_kind kind, int64_t n, uint32_t *w,
			char *text, size_t textcap, struct tr_eff *eff, int *neff,
			struct ju_err *err)
{
	switch (kind) {
	case TR_OP_PUSH_FP:
		w[0] = RV_ADDI(RV_SP, RV_SP, -16);
		w[1] = rv_s(RV_RA, RV_SP, 8);
		w[2] = rv_s(RV_FP, RV_SP, 0);
		snprintf(text, textcap, "addi sp, sp, -16; sd ra, 8(sp); sd s0, 0(sp)");
		eff_add(eff, neff, 0, TR_EFF_SP_ADD, 0, -16);
		eff_add(eff, neff, 1, TR_EFF_SAVE, RV_RA, 8);
		eff_add(eff, neff, 2, TR_EFF_SAVE, RV_FP, 0);
		return 3;
	case TR_OP_SET_FP:
		w[0] = RV_ADDI(RV_FP, RV_SP, 16);
		snprintf(text, textcap, "addi s0, sp, 16");
		eff_add(eff, neff, 0, TR_EFF_FP_FROM_SP, 0, 16);
		return 1;
	case TR_OP_ALLOC:
	case TR_OP_FREE: {
		bool alloc = kind == TR_OP_ALLOC;
		int k = rv_sp_adjust(alloc, n, w, text, textcap);
		if (k < 0) {
			ju_errf(err, EINVAL, 0, "%s: size %lld not encodable (1..%d, or a multiple of 4096 below 2G)",
				 tr_op_name(kind), (long long)n, alloc ? 2048 : 2047);
			return -ERANGE;
		}
		eff_add(eff, neff, k - 1, TR_EFF_SP_ADD, 0, alloc ? -n : n);   /* the addi, or the sub/add after lui */
		return k;
	}
	case TR_OP_SAVE_REG:
	case TR_OP_RESTORE_REG:
		return rv_save_restore(kind, n, w, text, textcap, eff, neff, err);
	case TR_OP_CALL_TARGET:
		if (n) {
			ju_errf(err, EINVAL, 0, "call_target rel32: x86_64 only");
			return -EINVAL;
		}
		w[0] = RV_JALR(RV_RA, RV_A3);
		snprintf(text, textcap, "jalr a3");
		eff_add(eff, neff, 0, TR_EFF_CALL, 0, 0);
		return 1;
	case TR_OP_TAIL_JUMP:
		w[0] = RV_JALR(0, RV_A3);
		snprintf(text, textcap, "jr a3");
		eff_add(eff, neff, 0, TR_EFF_JUMP, 0, 0);
		return 1;
	case TR_OP_POP_FP:
		w[0] = RV_LD(RV_FP, RV_SP, 0);
		w[1] = RV_LD(RV_RA, RV_SP, 8);
		w[2] = RV_ADDI(RV_SP, RV_SP, 16);
		snprintf(text, textcap, "ld s0, 0(sp); ld ra, 8(sp); addi sp, sp, 16");
		eff_add(eff, neff, 0, TR_EFF_RESTORE, RV_FP, 0);
		eff_add(eff, neff, 1, TR_EFF_RESTORE, RV_RA, 8);
		eff_add(eff, neff, 2, TR_EFF_SP_ADD, 0, 16);
		return 3;
	case TR_OP_RET:
		w[0] = RV_JALR(0, RV_RA);
		snprintf(text, textcap, "ret");
		eff_add(eff, neff, 0, TR_EFF_RET, 0, 0);
		return 1;
	case TR_OP_NOP:
		w[0] = RV_ADDI(0, 0, 0);
		snprintf(text, textcap, "nop");
		return 1;
	case TR_OP_LEAVE:
	case TR_OP_ENDBR64:
	case TR_OP_BTI:
	case TR_OP_PACIASP:
	case TR_OP_AUTIASP:
		ju_errf(err, EINVAL, 0, "%s: not a riscv64 instruction", tr_op_name(kind));
		return -EINVAL;
	default:
		ju_errf(err, EINVAL, 0, "%s: cannot be encoded here", tr_op_name(kind));
		return -EINVAL;
	}
}

static int rv_encode(const struct tr_op *op, uint8_t *buf, size_t cap,
		     char *text, size_t textcap, struct tr_eff eff[TR_MAX_EFF], int *neff,
		     struct ju_err *err)
{
	return tr_encode_words(op, buf, cap, text, textcap, eff, neff, err, rv_encode_op, 3);
}

/* jal x0, .+4+skip (J-type; skip below 1M) */
static size_t rv_jump_over(size_t skip, uint8_t *b)
{
	uint32_t off = (uint32_t)(4 + skip);
	uint32_t w = (off >> 20 & 1) << 31 | (off >> 1 & 0x3ff) << 21 | (off >> 11 & 1) << 20 |
		     (off >> 12 & 0xff) << 12 | 0x6f;
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(w >> (8 * i));
	return 4;
}

/* alloc/free take 1..2047 or a multiple of 4096 (lui + sub) */
static bool rv_sp_imm_ok(int64_t n)
{
	return n < 2048 || !(n & 0xfff);
}

/* s1-s11 mostly, and two temporaries */
static const int rv_fuzz_regs[] = { 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 6, 7 };
/* f0-f31 (32-63) */
static const int rv_other_regs[] = { 32, 40, 50, 63 };

const struct tr_arch tr_arch_riscv64 = {
	.facts = &arch_facts[ARCH_ID_riscv64],
	.code_align = 1,   /* as GCC writes it: the C extension's 2-byte instructions */
	.data_align = -8,
	.encode = rv_encode,
	.dwarf_reg = rv_dwarf_reg,
	.jump_over = rv_jump_over,
	.fp_rec_off = -16,                /* the psABI's record sits below s0 */
	/* no landing pad op in the case format (Zicfilp's lpad is not one): a nop
	 * stands in; fuzz-cfi runs only in a riscv64 build (on another host
	 * `fuzz-cfi --arch riscv64` skips, naming the missing build) */
	.fuzz = {
		.slot = 16, .call_align = 16, .call_reg = RV_A3, .landing = TR_OP_NOP,
		.has_leave = false, .sp_imm_ok = rv_sp_imm_ok,
		.big_step = 0x1000, .big_count = 3,
		.save_regs = rv_fuzz_regs, .nsave_regs = sizeof(rv_fuzz_regs) / sizeof(rv_fuzz_regs[0]),
		.other_regs = rv_other_regs, .nother_regs = sizeof(rv_other_regs) / sizeof(rv_other_regs[0]),
	},
};
