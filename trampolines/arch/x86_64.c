/* x86_64: encode ops, report their stack effects.  Nothing here knows CFI. */
#include <errno.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "trampolines/arch.h"
#include "juerr.h"

enum { X86_SP = AF_x86_64_sp, X86_FP = AF_x86_64_fp };

/* DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8..r15) -> ModRM/opcode number. */
static const uint8_t x86_hw[16] = { 0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };
static const struct arch_facts *const x86_facts = &arch_facts[ARCH_ID_x86_64];

static const uint8_t x86_push_rbp[] = { 0x55 };                   /* push %rbp */
static const uint8_t x86_mov_rsp_rbp[] = { 0x48, 0x89, 0xe5 };     /* mov %rsp,%rbp */
static const uint8_t x86_sub8_rsp[] = { 0x48, 0x83, 0xec };        /* sub $imm8,%rsp */
static const uint8_t x86_sub32_rsp[] = { 0x48, 0x81, 0xec };       /* sub $imm32,%rsp */
static const uint8_t x86_add8_rsp[] = { 0x48, 0x83, 0xc4 };        /* add $imm8,%rsp */
static const uint8_t x86_add32_rsp[] = { 0x48, 0x81, 0xc4 };       /* add $imm32,%rsp */
static const uint8_t x86_call_rcx[] = { 0xff, 0xd1 };              /* call *%rcx */
static const uint8_t x86_call_rel32[] = { 0xe8, 0, 0, 0, 0 };       /* call rel32 (set when placed) */
static const uint8_t x86_jmp_rcx[] = { 0xff, 0xe1 };               /* jmp *%rcx */
static const uint8_t x86_pop_rbp[] = { 0x5d };                    /* pop %rbp */
static const uint8_t x86_leave[] = { 0xc9 };                      /* leave */
static const uint8_t x86_ret[] = { 0xc3 };                        /* ret */
static const uint8_t x86_nop[] = { 0x90 };                        /* nop */
static const uint8_t x86_endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };   /* endbr64 */
enum { X86_PUSH = 0x50, X86_POP = 0x58, X86_REX_B = 0x41 };        /* push/pop %reg, REX.B for r8-r15 */

/* Sticky-error byte sink (sljit style): calls chain, one check at the end. */
struct x86_buf {
	uint8_t *p;
	size_t len, cap;
	bool overflow;
};

static void put(struct x86_buf *b, const uint8_t *bytes, size_t n)
{
	if (b->len + n > b->cap) {
		b->overflow = true;
		return;
	}
	memcpy(b->p + b->len, bytes, n);
	b->len += n;
}

static void put8(struct x86_buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put32(struct x86_buf *b, uint32_t v)
{
	uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	put(b, le, 4);
}

static void eff_add(struct tr_eff *eff, int *neff, enum tr_eff_kind k, int reg, int64_t n)
{
	eff[*neff] = (struct tr_eff){ .kind = k, .reg = reg, .n = n };
	(*neff)++;
}

static int x86_dwarf_reg(const char *name)
{
	int r = arch_dw_number(x86_facts, name);
	return r < 0 ? -ENOENT : r;
}

/* alloc / free N: sub / add $N,%rsp (imm8 when it fits) */
static int x86_sp_adjust(enum tr_op_kind kind, int64_t n, struct x86_buf *b,
			 char *text, size_t textcap, struct tr_eff *eff, int *neff,
			 struct ju_err *err)
{
	bool alloc = kind == TR_OP_ALLOC;
	if (n < 0 || n > 0x7fffffff) {
		ju_errf(err, EINVAL, 0, "%s: size %lld out of range (0..0x7fffffff)",
			 tr_op_name(kind), (long long)n);
		return -ERANGE;
	}
	if (n <= 127) {
		put(b, alloc ? x86_sub8_rsp : x86_add8_rsp, 3);
		put8(b, (uint8_t)n);
	} else {
		put(b, alloc ? x86_sub32_rsp : x86_add32_rsp, 3);
		put32(b, (uint32_t)n);
	}
	snprintf(text, textcap, "%s $0x%llx,%%rsp", alloc ? "sub" : "add", (unsigned long long)n);
	eff_add(eff, neff, TR_EFF_SP_ADD, 0, alloc ? -n : n);
	return 0;
}

/* save_reg / restore_reg R: push / pop of DWARF register R */
static int x86_push_pop(enum tr_op_kind kind, int64_t n, struct x86_buf *b,
			char *text, size_t textcap, struct tr_eff *eff, int *neff,
			struct ju_err *err)
{
	bool save = kind == TR_OP_SAVE_REG;
	if (n < 0 || n > 15 || n == X86_SP) {
		ju_errf(err, EINVAL, 0, "%s: DWARF register %lld cannot be %s on x86_64",
			 tr_op_name(kind), (long long)n, save ? "pushed" : "popped");
		return -EINVAL;
	}
	uint8_t hw = x86_hw[n];
	if (hw >= 8)
		put8(b, X86_REX_B);
	put8(b, (uint8_t)((save ? X86_PUSH : X86_POP) + (hw & 7)));
	snprintf(text, textcap, "%s %%%s", save ? "push" : "pop", x86_facts->dw_names[n]);
	if (save) {
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, -8);
		eff_add(eff, neff, TR_EFF_SAVE, (int)n, 0);
	} else {
		eff_add(eff, neff, TR_EFF_RESTORE, (int)n, 0);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, 8);
	}
	return 0;
}

/* Encodes a non-RAW op. */
static int x86_encode_op(enum tr_op_kind kind, int64_t n, struct x86_buf *b,
			 char *text, size_t textcap, struct tr_eff *eff, int *neff,
			 struct ju_err *err)
{
	switch (kind) {
	case TR_OP_PUSH_FP:
		put(b, x86_push_rbp, sizeof(x86_push_rbp));
		snprintf(text, textcap, "push %%rbp");
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, -8);
		eff_add(eff, neff, TR_EFF_SAVE, X86_FP, 0);
		return 0;
	case TR_OP_SET_FP:
		put(b, x86_mov_rsp_rbp, sizeof(x86_mov_rsp_rbp));
		snprintf(text, textcap, "mov %%rsp,%%rbp");
		eff_add(eff, neff, TR_EFF_FP_FROM_SP, 0, 0);
		return 0;
	case TR_OP_ALLOC:
	case TR_OP_FREE:
		return x86_sp_adjust(kind, n, b, text, textcap, eff, neff, err);
	case TR_OP_SAVE_REG:
	case TR_OP_RESTORE_REG:
		return x86_push_pop(kind, n, b, text, textcap, eff, neff, err);
	case TR_OP_CALL_TARGET:
		if (n) {
			/* call rel32, the displacement 0 here: the capture points it at
			 * a jmp *%rcx it places in the arena (tr_func.rel32_off) */
			put(b, x86_call_rel32, sizeof(x86_call_rel32));
			snprintf(text, textcap, "call rel32");
			eff_add(eff, neff, TR_EFF_CALL, 0, 4);
			return 0;
		}
		put(b, x86_call_rcx, sizeof(x86_call_rcx));
		snprintf(text, textcap, "call *%%rcx");
		eff_add(eff, neff, TR_EFF_CALL, 0, 0);
		return 0;
	case TR_OP_TAIL_JUMP:
		put(b, x86_jmp_rcx, sizeof(x86_jmp_rcx));
		snprintf(text, textcap, "jmp *%%rcx");
		eff_add(eff, neff, TR_EFF_JUMP, 0, 0);
		return 0;
	case TR_OP_POP_FP:
		put(b, x86_pop_rbp, sizeof(x86_pop_rbp));
		snprintf(text, textcap, "pop %%rbp");
		eff_add(eff, neff, TR_EFF_RESTORE, X86_FP, 0);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, 8);
		return 0;
	case TR_OP_LEAVE:
		/* leave = mov %rbp,%rsp; pop %rbp */
		put(b, x86_leave, sizeof(x86_leave));
		snprintf(text, textcap, "leave");
		eff_add(eff, neff, TR_EFF_SP_FROM_FP, 0, 0);
		eff_add(eff, neff, TR_EFF_RESTORE, X86_FP, 0);
		eff_add(eff, neff, TR_EFF_SP_ADD, 0, 8);
		return 0;
	case TR_OP_RET:
		put(b, x86_ret, sizeof(x86_ret));
		snprintf(text, textcap, "ret");
		eff_add(eff, neff, TR_EFF_RET, 0, 0);
		return 0;
	case TR_OP_NOP:
		put(b, x86_nop, sizeof(x86_nop));
		snprintf(text, textcap, "nop");
		return 0;
	case TR_OP_ENDBR64:
		put(b, x86_endbr64, sizeof(x86_endbr64));
		snprintf(text, textcap, "endbr64");
		return 0;
	case TR_OP_BTI:
	case TR_OP_PACIASP:
	case TR_OP_AUTIASP:
		ju_errf(err, EINVAL, 0, "%s: not an x86_64 instruction", tr_op_name(kind));
		return -EINVAL;
	default:
		ju_errf(err, EINVAL, 0, "%s: cannot be encoded here", tr_op_name(kind));
		return -EINVAL;
	}
}

static int x86_encode(const struct tr_op *op, uint8_t *buf, size_t cap,
		      char *text, size_t textcap, struct tr_eff eff[TR_MAX_EFF], int *neff,
		      struct ju_err *err)
{
	struct x86_buf b = { .p = buf, .cap = cap };
	*neff = 0;
	if (op->kind == TR_OP_RAW) {
		/* The declared effect is encoded into scratch only for its effects. */
		uint8_t scratch[16];
		struct x86_buf sb = { .p = scratch, .cap = sizeof(scratch) };
		char etext[48] = "";
		int rc = op->effect == TR_OP_NOP ? 0 :
			 x86_encode_op(op->effect, op->effect_n, &sb, etext, sizeof(etext), eff, neff, err);
		if (rc < 0)
			return rc;
		put(&b, op->raw, op->raw_len);
		tr_raw_text(op, etext, text, textcap);
	} else {
		int rc = x86_encode_op(op->kind, op->n, &b, text, textcap, eff, neff, err);
		if (rc < 0)
			return rc;
	}
	if (b.overflow) {
		ju_errf(err, EINVAL, 0, "%s: no room for the instruction (%zu bytes left)",
			 tr_op_name(op->kind), cap);
		return -ENOSPC;
	}
	return (int)b.len;
}

/* jmp rel8 / rel32 over skip bytes */
static size_t x86_jump_over(size_t skip, uint8_t *b)
{
	if (skip < 128) {
		b[0] = 0xeb;
		b[1] = (uint8_t)skip;
		return 2;
	}
	b[0] = 0xe9;
	for (int i = 0; i < 4; i++)
		b[1 + i] = (uint8_t)(skip >> (8 * i));
	return 5;
}

/* callee-saved ones mostly, a few scratch ones (push/pop keeps them too) */
static const int x86_fuzz_regs[] = { 3, 12, 13, 14, 15, 3, 12, 13, 0, 4, 5, 8, 10 };
/* xmm0-15 (17-32), rflags 49, segment registers 50-55 */
static const int x86_other_regs[] = { 17, 18, 24, 32, 48, 49, 50, 55 };

const struct tr_arch tr_arch_x86_64 = {
	.facts = &arch_facts[ARCH_ID_x86_64],
	.code_align = 1,
	.data_align = -8,
	.encode = x86_encode,
	.dwarf_reg = x86_dwarf_reg,
	.jump_over = x86_jump_over,
	.fuzz = {
		.slot = 8, .call_align = 16, .call_reg = 2 /* call *%rcx */, .landing = TR_OP_ENDBR64,
		.has_leave = true, .sp_imm_ok = NULL,
		.big_step = 8, .big_count = 0x600,   /* 4 KiB .. 16 KiB: past the 8 KiB dump */
		.save_regs = x86_fuzz_regs, .nsave_regs = sizeof(x86_fuzz_regs) / sizeof(x86_fuzz_regs[0]),
		.other_regs = x86_other_regs, .nother_regs = sizeof(x86_other_regs) / sizeof(x86_other_regs[0]),
	},
};
