/* Arch-neutral stack ops, the JIT side's instruction model (objtool's idea:
 * arch files only encode ops and describe their stack effect; generic code
 * in op.c derives the truth rows and, from them, CFI). */
#ifndef TR_OP_H
#define TR_OP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "juerr.h"

enum tr_op_kind {
	TR_OP_PUSH_FP,     /* x86: push %rbp        arm64: stp x29,x30,[sp,#-16]! */
	TR_OP_SET_FP,      /* x86: mov %rsp,%rbp    arm64: mov x29,sp */
	TR_OP_ALLOC,       /* sub $n,%rsp           arm64: sub sp,sp,#n */
	TR_OP_FREE,        /* add $n,%rsp           arm64: add sp,sp,#n */
	TR_OP_SAVE_REG,    /* push %reg (x86) / str xN,[sp,#-16]! ; reg = DWARF number */
	TR_OP_RESTORE_REG, /* pop %reg / ldr xN,[sp],#16 */
	TR_OP_CALL_TARGET, /* x86: call *%rcx       arm64: blr x3; n 1: call rel32 (x86) */
	TR_OP_TAIL_JUMP,   /* x86: jmp *%rcx        arm64: br x3 */
	TR_OP_POP_FP,      /* x86: pop %rbp         arm64: ldp x29,x30,[sp],#16 */
	TR_OP_LEAVE,       /* x86: leave */
	TR_OP_RET,
	TR_OP_NOP,
	TR_OP_ENDBR64,
	TR_OP_BTI,
	TR_OP_PACIASP,
	TR_OP_AUTIASP,
	TR_OP_RAW,         /* raw bytes with a declared stack effect (another op kind) */
	TR_OP_CFI,         /* a .cfi_* directive: no bytes, applies at the end of the previous op */
	TR_OP__COUNT
};

#define TR_RAW_MAX 16
#define TR_CFI_TEXT_MAX 96

struct tr_op {
	enum tr_op_kind kind;
	int64_t n;                 /* ALLOC/FREE size; SAVE/RESTORE DWARF register */
	uint8_t raw[TR_RAW_MAX];   /* RAW bytes */
	size_t raw_len;
	enum tr_op_kind effect;    /* RAW: the op whose stack effect the bytes have (TR_OP_NOP = none) */
	int64_t effect_n;          /* RAW: n of that op */
	char cfi[TR_CFI_TEXT_MAX]; /* CFI: directive text, e.g. ".cfi_def_cfa_offset 16" */
	int line;                  /* line in the case file, for messages */
	char reg_name[16];         /* SAVE/RESTORE (or a RAW effect's): the name as written;
				    * when set, tr_emit resolves it for the arch and n is ignored */
};

/* Parse one op line of a case file ("push_fp", "alloc 0x1000", "raw 55 ; push_fp",
 * ".cfi_offset %rbp, -16").  Returns 0, or -errno with err filled.
 * op->line is kept as the caller set it (zero-initialise op, or set line after). */
int tr_op_parse(const char *line, struct tr_op *op, struct ju_err *err);
const char *tr_op_name(enum tr_op_kind k);
/* DWARF number of a register name known to any arch ("%rbx", "rbx", "x19"), or -1. */
int tr_reg_any(const char *name);

/* Arch-neutral stack effects an arch reports for one encoded instruction. */
enum tr_eff_kind {
	TR_EFF_SP_ADD,      /* sp += n */
	TR_EFF_SAVE,        /* DWARF reg r stored at [sp + n] (sp as before this effect) */
	TR_EFF_RESTORE,     /* DWARF reg r loaded from [sp + n] */
	TR_EFF_FP_FROM_SP,  /* fp = sp + n */
	TR_EFF_SP_FROM_FP,  /* sp = fp + n */
	TR_EFF_CALL,        /* call: return address = end of this instruction; n > 0: its
			     * last n bytes are a displacement the code's placer sets (rel32) */
	TR_EFF_RET,         /* return: end of function */
	TR_EFF_JUMP,        /* tail jump: end of function */
};

struct tr_eff {
	enum tr_eff_kind kind;
	int reg;
	int64_t n;
	int insn;    /* the op's instruction that does it (0: its first): an op of several
		      * fixed-width instructions gets one row per instruction (tr_emit) */
};

#define TR_MAX_EFF 4

enum tr_ra_where { TR_RA_AT_CFA, TR_RA_IN_REG };

#define TR_NREGS 64  /* DWARF registers a row tracks as saved (x86_64 0..16, arm64 0..31) */

/* The truth at one instruction boundary: the state before the instruction at
 * `offset` executes. Registers are DWARF numbers. Saved offsets are relative
 * to the CFA. */
struct tr_row {
	uint32_t offset;
	uint32_t len;
	char insn[48];               /* assembly text, e.g. "push %rbp" */
	int cfa_reg;
	int64_t cfa_off;
	int64_t sp_off;              /* CFA - SP */
	bool fp_saved;               /* caller's FP stored at CFA + fp_save_off */
	int64_t fp_save_off;
	enum tr_ra_where ra_where;
	int64_t ra_off;              /* TR_RA_AT_CFA: RA at CFA + ra_off */
	int ra_reg;                  /* TR_RA_IN_REG: DWARF register holding the RA */
	bool fp_frame;               /* FP points at this function's frame record */
	bool is_call;                /* this instruction is the call_target */
	/* Added by the JIT side (not in the first header): */
	bool fp_set;                 /* FP was set from SP here and still is: FP = CFA - fp_off */
	int64_t fp_off;
	bool fp_ra_ok;               /* fp_frame, and the RA sits at FP + 8: an FP walker
				      * reads the right return address from the record */
	uint64_t saved_mask;         /* bit r: DWARF register r (< TR_NREGS) saved at CFA + saved_off[r] */
	int32_t saved_off[TR_NREGS];
};

#endif
