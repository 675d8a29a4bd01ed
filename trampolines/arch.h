/* One struct of hooks per architecture (elfutils backends style). */
#ifndef TR_ARCH_H
#define TR_ARCH_H

#include "juerr.h"
#include "arches.h"
#include "trampolines/op.h"

struct tr_arch {
	const struct arch_facts *facts;   /* name, ELF machine, DWARF sp/fp/ra, entry CFA (arches.def) */
	unsigned code_align;     /* CIE code alignment factor */
	int data_align;          /* CIE data alignment factor */
	/* Encode one op into buf; writes the assembly text and the stack effects.
	 * Returns the number of bytes, or -errno with err filled. */
	int (*encode)(const struct tr_op *op, uint8_t *buf, size_t cap,
		      char *text, size_t textcap,
		      struct tr_eff eff[TR_MAX_EFF], int *neff,
		      struct ju_err *err);
	/* Parse a register name as GNU as writes it in .cfi directives ("%rbp", "x29")
	 * into its DWARF number; -1 if unknown. */
	int (*dwarf_reg)(const char *name);
	/* Code that jumps over the skip bytes after it, written to b (at most 8
	 * bytes); its length. */
	size_t (*jump_over)(size_t skip, uint8_t *b);
	/* The frame record {caller's FP, return address} sits at FP + this
	 * (0 where it is at the FP; negative where the psABI puts it below). */
	int64_t fp_rec_off;
	/* What fuzz-cfi (harness/fuzzcfi_*.c) generates for the arch: */
	struct tr_fuzz_facts {
		int64_t slot;            /* bytes push_fp / save_reg take on the stack */
		unsigned call_align;     /* the stack at a call is a multiple of this (0: any) */
		int call_reg;            /* DWARF register call_target / tail_jump go through */
		enum tr_op_kind landing; /* the landing pad op (endbr64, bti) */
		bool has_leave;          /* the `leave` op */
		/* sp adjustments the encoder takes: n (NULL: any) */
		bool (*sp_imm_ok)(int64_t n);
		/* a big allocation: 0x1000 + big_step * (random below big_count) */
		int64_t big_step;
		uint32_t big_count;
		const int *save_regs;    /* save_reg's registers, callee-saved ones mostly */
		size_t nsave_regs;
		const int *other_regs;   /* DWARF numbers past the general registers (vector, flags) */
		size_t nother_regs;
	} fuzz;
};

/* tr_arch_<name>: one per ARCH line of arches.def, in trampolines/<name>.c */
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) \
	extern const struct tr_arch tr_arch_##n;
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
/* Where the return address is at a function's entry (arches.def's facts). */
static inline enum tr_ra_where tr_entry_ra_where(const struct tr_arch *a)
{
	return a->facts->ra_at_cfa ? TR_RA_AT_CFA : TR_RA_IN_REG;
}
const struct tr_arch *tr_arch_by_name(const char *name);
const struct tr_arch *tr_arch_host(void);
/* Every arch the generator encodes (arches.def's order); n set to the count. */
const struct tr_arch *const *tr_arches(size_t *n);
/* "x86_64, aarch64": every arch the generator encodes, for messages */
void tr_arch_names(char *buf, size_t len);

/* The encoder driver of the arches with fixed 4-byte little-endian words
 * (trampolines/emit.c): a raw op copies its bytes and encodes its declared
 * effect only for the text and the effects; any other op is the words the
 * arch's hook writes to w (at most maxw; returns their count, or -errno with err filled).
 * Returns the bytes written, or -errno with err filled. */
typedef int tr_words_fn(enum tr_op_kind kind, int64_t n, uint32_t *w, char *text, size_t textcap,
			struct tr_eff *eff, int *neff, struct ju_err *err);
int tr_encode_words(const struct tr_op *op, uint8_t *buf, size_t cap, char *text, size_t textcap,
		    struct tr_eff eff[TR_MAX_EFF], int *neff, struct ju_err *err,
		    tr_words_fn *words, int maxw);
/* A raw op's text: "raw 90 90 (push_fp)" (etext: its declared effect's text). */
void tr_raw_text(const struct tr_op *op, const char *etext, char *text, size_t textcap);

#endif
