/* aarch64: encode ops, report their stack effects.  Every instruction is one
 * little-endian 32-bit word.  Not checked by a disassembler here (no aarch64
 * binutils on the build machine): the CPython trampoline words are the ones
 * CPython's asm_trampoline.S assembles to. */
#include <errno.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/arch.h"
#include "juerr.h"

enum { A64_FP = AF_aarch64_fp, A64_LR = AF_aarch64_lr, A64_SP = AF_aarch64_sp };

enum {
	A64_STP_FP_LR_PRE = 0xa9bf7bfd,  /* stp x29, x30, [sp, #-16]! */
	A64_MOV_FP_SP = 0x910003fd,      /* mov x29, sp */
	A64_SUB_SP_IMM = 0xd10003ff,     /* sub sp, sp, #imm12 (<< 10; bit 22: lsl #12) */
	A64_ADD_SP_IMM = 0x910003ff,     /* add sp, sp, #imm12 */
	A64_STR_PRE16 = 0xf81f0fe0,      /* str xN, [sp, #-16]!  (| N) */
	A64_LDR_POST16 = 0xf84107e0,     /* ldr xN, [sp], #16    (| N) */
	A64_BLR_X3 = 0xd63f0060,         /* blr x3 */
	A64_BR_X3 = 0xd61f0060,          /* br x3 */
	A64_LDP_FP_LR_POST = 0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
	A64_RET = 0xd65f03c0,            /* ret */
	A64_NOP = 0xd503201f,            /* nop */
	A64_BTI_C = 0xd503245f,          /* bti c */
	A64_PACIASP = 0xd503233f,        /* paciasp (hint #25) */
	A64_AUTIASP = 0xd50323bf,        /* autiasp (hint #29) */
};


static void eff_add(struct tr_eff *eff, int *neff, enum tr_eff_kind k, int reg, int64_t n)
{
	eff[*neff] = (struct tr_eff){ .kind = k, .reg = reg, .n = n };
	(*neff)++;
}

static int a64_dwarf_reg(const char *name)
{
	if (!strcmp(name, "sp"))
		return A64_SP;
	if (!strcmp(name, "fp"))
		return A64_FP;
	if (!strcmp(name, "lr"))
		return A64_LR;
	if (name[0] != 'x' || name[1] < '0' || name[1] > '9')
		return -ENOENT;
	char *end;
	long r = strtol(name + 1, &end, 10);
	if (*end || r > 30 || (name[1] == '0' && name[2]))
		return -ENOENT;
	return (int)r;
}

/* Splits n into imm12 with an optional lsl #12; -ERANGE if not encodable. */
static int a64_addsub_imm(int64_t n, uint32_t *field)
{
	if (n >= 0 && n < 4096) {
		*field = (uint32_t)n << 10;
		return 0;
	}
	if (n > 0 && !(n & 0xfff) && (n >> 12) < 4096) {
		*field = (uint32_t)(n >> 12) << 10 | 1u << 22;
		return 0;
	}
	return -ERANGE;
}

/* alloc/free: sub/add sp, sp, #n */
static int a64_encode_sp(enum tr_op_kind kind, int64_t n, uint32_t *w, char *text, size_t textcap,
			  struct tr_eff *eff, int *neff, struct ju_err *err)
{
	bool alloc = kind == TR_OP_ALLOC;
	uint32_t f;
	if (a64_addsub_imm(n, &f)) {
		ju_errf(err, EINVAL, 0, "%s: size %lld not encodable (0..4095, or a multiple of 4096 below 16M)",
			 tr_op_name(kind), (long long)n);
		return -ERANGE;
	}
	*w = (alloc ? A64_SUB_SP_IMM : A64_ADD_SP_IMM) | f;
	snprintf(text, textcap, "%s sp, sp, #0x%llx", alloc ? "sub" : "add", (unsigned long long)n);
	eff_add(eff, neff, TR_EFF_SP_ADD, 0, alloc ? -n : n);
	return 0;
}

/* save_reg/restore_reg: str/ldr xN with a 16-byte pre/post index */
static int a64_encode_reg(enum tr_op_kind kind, int64_t n, uint32_t *w, char *text, size_t textcap,
			   struct tr_eff *eff, int *neff, struct ju_err *err)
{
	bool save = kind == TR_OP_SAVE_REG;
	if (n < 0 || n > 30) {
		ju_errf(err, EINVAL, 0, "%s: DWARF register %lld is not x0..x30",
			 tr_op_name(kind), (long long)n);
		return -EINVAL;
	}
	if (save) {
		*w = A64_STR_PRE16 | (uint32_t)n;
		snprintf(text, textcap, "str x%d, [sp, #-16]!", (int)n);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, -16);
		eff_add(eff, neff, TR_EFF_SAVE, (int)n, 0);
	} else {
		*w = A64_LDR_POST16 | (uint32_t)n;
		snprintf(text, textcap, "ldr x%d, [sp], #16", (int)n);
		eff_add(eff, neff, TR_EFF_RESTORE, (int)n, 0);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, 16);
	}
	return 0;
}

static int a64_encode_op(enum tr_op_kind kind, int64_t n, uint32_t *w,
			 char *text, size_t textcap, struct tr_eff *eff, int *neff,
			 struct ju_err *err)
{
	switch (kind) {
	case TR_OP_PUSH_FP:
		*w = A64_STP_FP_LR_PRE;
		snprintf(text, textcap, "stp x29, x30, [sp, #-16]!");
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, -16);
		eff_add(eff, neff, TR_EFF_SAVE, A64_FP, 0);
		eff_add(eff, neff, TR_EFF_SAVE, A64_LR, 8);
		return 0;
	case TR_OP_SET_FP:
		*w = A64_MOV_FP_SP;
		snprintf(text, textcap, "mov x29, sp");
		eff_add(eff, neff, TR_EFF_FP_FROM_SP, 0, 0);
		return 0;
	case TR_OP_ALLOC:
	case TR_OP_FREE:
		return a64_encode_sp(kind, n, w, text, textcap, eff, neff, err);
	case TR_OP_SAVE_REG:
	case TR_OP_RESTORE_REG:
		return a64_encode_reg(kind, n, w, text, textcap, eff, neff, err);
	case TR_OP_CALL_TARGET:
		if (n) {
			ju_errf(err, EINVAL, 0, "call_target rel32: x86_64 only");
			return -EINVAL;
		}
		*w = A64_BLR_X3;
		snprintf(text, textcap, "blr x3");
		eff_add(eff, neff, TR_EFF_CALL, 0, 0);
		return 0;
	case TR_OP_TAIL_JUMP:
		*w = A64_BR_X3;
		snprintf(text, textcap, "br x3");
		eff_add(eff, neff, TR_EFF_JUMP, 0, 0);
		return 0;
	case TR_OP_POP_FP:
		*w = A64_LDP_FP_LR_POST;
		snprintf(text, textcap, "ldp x29, x30, [sp], #16");
		eff_add(eff, neff, TR_EFF_RESTORE, A64_FP, 0);
		eff_add(eff, neff, TR_EFF_RESTORE, A64_LR, 8);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, 16);
		return 0;
	case TR_OP_RET:
		*w = A64_RET;
		snprintf(text, textcap, "ret");
		eff_add(eff, neff, TR_EFF_RET, 0, 0);
		return 0;
	case TR_OP_NOP:
		*w = A64_NOP;
		snprintf(text, textcap, "nop");
		return 0;
	case TR_OP_BTI:
		*w = A64_BTI_C;
		snprintf(text, textcap, "bti c");
		return 0;
	case TR_OP_PACIASP:
		*w = A64_PACIASP;
		snprintf(text, textcap, "paciasp");
		return 0;
	case TR_OP_AUTIASP:
		*w = A64_AUTIASP;
		snprintf(text, textcap, "autiasp");
		return 0;
	case TR_OP_LEAVE:
	case TR_OP_ENDBR64:
		ju_errf(err, EINVAL, 0, "%s: not an aarch64 instruction", tr_op_name(kind));
		return -EINVAL;
	default:
		ju_errf(err, EINVAL, 0, "%s: cannot be encoded here", tr_op_name(kind));
		return -EINVAL;
	}
}

/* one word per op: tr_encode_words's hook */
static int a64_words(enum tr_op_kind kind, int64_t n, uint32_t *w, char *text, size_t textcap,
		     struct tr_eff *eff, int *neff, struct ju_err *err)
{
	return a64_encode_op(kind, n, w, text, textcap, eff, neff, err) ? -1 : 1;
}

static int a64_encode(const struct tr_op *op, uint8_t *buf, size_t cap,
		      char *text, size_t textcap, struct tr_eff eff[TR_MAX_EFF], int *neff,
		      struct ju_err *err)
{
	return tr_encode_words(op, buf, cap, text, textcap, eff, neff, err, a64_words, 1);
}

/* b .+4+skip */
static size_t a64_jump_over(size_t skip, uint8_t *b)
{
	uint32_t w = 0x14000000u | (uint32_t)(1 + skip / 4);
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(w >> (8 * i));
	return 4;
}

/* add/sub sp take 0..4095 or a multiple of 4096 (a shifted immediate) */
static bool a64_sp_imm_ok(int64_t n)
{
	return n < 4096 || !(n & 0xfff);
}

static const int a64_fuzz_regs[] = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 9, 10, 15 };
/* v0-v31 (64-95) */
static const int a64_other_regs[] = { 64, 72, 79, 95 };

const struct tr_arch tr_arch_aarch64 = {
	.facts = &arch_facts[ARCH_ID_aarch64],
	.code_align = 4,
	.data_align = -8,
	.encode = a64_encode,
	.dwarf_reg = a64_dwarf_reg,
	.jump_over = a64_jump_over,
	.fuzz = {
		.slot = 16, .call_align = 0, .call_reg = 3 /* blr x3 */, .landing = TR_OP_BTI,
		.has_leave = false, .sp_imm_ok = a64_sp_imm_ok,
		.big_step = 0x1000, .big_count = 3,  /* a shifted immediate */
		.save_regs = a64_fuzz_regs, .nsave_regs = sizeof(a64_fuzz_regs) / sizeof(a64_fuzz_regs[0]),
		.other_regs = a64_other_regs, .nother_regs = sizeof(a64_other_regs) / sizeof(a64_other_regs[0]),
	},
};
