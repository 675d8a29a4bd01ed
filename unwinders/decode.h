/* Instruction decoders for the code-vs-CFI checks (objtool's decode -> check
 * split): one file per arch turns an instruction into arch-neutral stack
 * effects, and one interpreter (uw_eff_apply) turns effects into CFA state.
 * The decoders know the length of every instruction and the stack effects of
 * those that move sp or fp, save or restore a register or write one; an
 * instruction a decoder cannot decode (invalid, truncated, or outside its
 * tables) stops the check there with a finding (JD081) naming the bytes, so
 * CFI is never blamed for an instruction that was misread, and a check that
 * cannot finish never passes silently.
 *
 * The effect vocabulary mirrors the JIT side's (trampolines/op.h, enum
 * tr_eff_kind: SP_ADD, FP_FROM_SP, SP_FROM_FP, RET/JUMP as END) instead of
 * including it, on purpose: a decoder of any producer's code must also say
 * what the JIT side never emits (a stack register clobbered, the frame
 * pointer popped back to the caller's, an instruction it does not know), and
 * the JIT side's effects are the truth the profiler side is checked against,
 * so the two are written apart like the jitdump writer and reader. */
#ifndef UW_DECODE_H
#define UW_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "arches.h"

enum uw_eff_kind {
	UW_EFF_SP_ADD,      /* sp += n (tr: TR_EFF_SP_ADD) */
	UW_EFF_FP_ADD,      /* fp += n */
	UW_EFF_FP_FROM_SP,  /* fp = sp + n (tr: TR_EFF_FP_FROM_SP) */
	UW_EFF_SP_FROM_FP,  /* sp = fp + n (tr: TR_EFF_SP_FROM_FP) */
	UW_EFF_SP_UNKNOWN,  /* sp written with something the check does not follow */
	UW_EFF_FP_UNKNOWN,  /* fp written likewise */
	UW_EFF_FP_RESTORE,  /* fp loaded with the caller's value (pop %rbp, ldp x29) */
	UW_EFF_STORE,       /* register reg stored at sp + n (tr: the save half of TR_EFF_SAVE) */
	UW_EFF_RESTORE,     /* register reg loaded back with the value it had at entry */
	UW_EFF_LOAD,        /* register reg loaded from sp + n: the return address when that is
			     * its slot (x86_64's `pop %r10` at the return address), else RESTORE */
	UW_EFF_CLOBBER,     /* register reg overwritten (bl/blr write x30) */
	UW_EFF_CONST,       /* register reg = n, known to the next instruction only (lui t0) */
	UW_EFF_SP_ADD_REG,  /* sp += n * reg, where the instruction before set reg (UW_EFF_CONST);
			     * else sp is lost (a frame too big for an immediate: lui t0, N;
			     * sub sp, sp, t0) */
};

struct uw_eff {
	enum uw_eff_kind kind;
	unsigned reg;             /* DWARF number: STORE, RESTORE, CLOBBER */
	int64_t n;
};

#define UW_MAX_EFF 6
#define UW_NREGS 32               /* DWARF registers whose saves the interpreter follows */

/* One decoded instruction: its effects in the order they happen. */
struct uw_insn {
	bool end;                 /* no fall-through (ret, jmp, trap): tr's RET/JUMP */
	bool data;                /* the bytes look like data, not code (the arch's padding or zero fill) */
	bool fp_base;             /* a memory operand addressed from the frame pointer (lint's -g check) */
	bool call;                /* a call (lint's -g check; set by the x86_64 decoder only) */
	bool jump;                /* a direct jump or conditional jump to the next instruction + rel (likewise) */
	int64_t rel;
	unsigned neff;
	struct uw_eff eff[UW_MAX_EFF];
};
/* Append an effect (dropped beyond UW_MAX_EFF: no decoder emits that many). */
void uw_insn_add(struct uw_insn *x, enum uw_eff_kind k, int64_t n);
/* The same for an effect on one register (STORE, RESTORE, CLOBBER). */
void uw_insn_reg(struct uw_insn *x, enum uw_eff_kind k, unsigned reg, int64_t n);

/* An arch's decoder and the DWARF facts the check needs (filled from
 * arches.def by UW_DECODER_FACTS); the arch table (uwarch.c) points at it. */
struct uw_decoder {
	unsigned sp, fp, ra;      /* DWARF numbers of sp, the frame pointer, the return address column */
	int64_t entry_cfa;        /* CFA - sp at function entry */
	bool ra_at_cfa;           /* the return address always sits at CFA + ra_cfa_off (x86_64) */
	int64_t ra_cfa_off;
	unsigned max_insn;        /* the longest instruction, in bytes (what a finding shows of one not decoded) */
	/* instruction length, 0 if unknown or truncated; x filled */
	size_t (*decode)(const uint8_t *p, size_t n, struct uw_insn *x);
	const char *(*reg_name)(unsigned dwarf);
	/* lint's JD082: the offsets into code (at most max into off) of calls to
	 * address 0 a relocation would have set (the code dumped before it was
	 * relocated), the first one's instructions as text into first; the count.
	 * NULL: the arch has no such check. */
	size_t (*calls_zero)(const uint8_t *code, size_t n, uint64_t addr, uint64_t *off, unsigned max,
			     unsigned *noff, char *first, size_t flen);
};
/* The facts of arch n (its name in arches.def), for a decoder's initializer. */
#define UW_DECODER_FACTS(n) \
	.sp = AF_##n##_sp, .fp = AF_##n##_fp, .ra = AF_##n##_ra, .entry_cfa = AF_##n##_cfa, \
	.ra_at_cfa = AF_##n##_ra_at_cfa, .ra_cfa_off = AF_##n##_ra_cfa_off
/* DWARF register r of f by the one name table; "r?" past it. */
static inline const char *uw_decoder_reg(const struct arch_facts *f, unsigned r)
{
	return r < f->ndw_names ? f->dw_names[r] : "r?";
}
/* uw_decoder_<name> in decode_<name>.c, for an arch that has one */
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) \
	extern const struct uw_decoder uw_decoder_##n;
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
/* The decoder for an ELF machine (the arch table's), or NULL. */
const struct uw_decoder *uw_decoder_for(uint32_t elf_mach);

/* CFA state along the code: CFA - sp and CFA - fp where known; where the
 * entry values of the registers are (for the register-rule checks).
 * fp_entry/fp_popped: the frame pointer holds the caller's value (not set
 * yet / restored).  regs_known: the saves were followed from the function's
 * entry (false after a resync from a CFI row).  ra_at: where the return
 * address is, followed for an arch that keeps it at the CFA (x86_64) from
 * the slot its caller put it in. */
enum uw_ra_at { UW_RA_UNKNOWN, UW_RA_SLOT, UW_RA_REG };
struct uw_cfa_state {
	bool sp_known, fp_known, fp_popped, fp_entry, regs_known;
	int64_t sp_d, fp_d;
	uint32_t stored;          /* bit r: r's entry value was stored at CFA + slot[r] */
	uint32_t clobbered;       /* bit r: r no longer holds its entry value (not fp: see fp_entry) */
	uint32_t lost;            /* bit r: a store the check could not place (sp unknown) */
	int64_t slot[UW_NREGS];
	enum uw_ra_at ra_at;      /* where the code keeps the return address, when followed */
	int64_t ra_slot;          /* UW_RA_SLOT: at CFA + ra_slot */
	unsigned ra_reg;          /* UW_RA_REG: in this register (DWARF) */
	bool konst_ok;            /* the instruction just interpreted set konst_reg = konst */
	unsigned konst_reg;
	int64_t konst;
};
/* The state at a function's entry under decoder dc: CFA = sp + its
 * entry_cfa, every register its caller's, the return address where the
 * call put it (followed where the arch keeps it at the CFA). */
void uw_cfa_entry(struct uw_cfa_state *s, const struct uw_decoder *dc);
/* The one interpreter of effects. */
void uw_eff_apply(struct uw_cfa_state *s, const struct uw_insn *x);

#endif
