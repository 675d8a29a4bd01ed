/* One struct of hooks per architecture (elfutils backends style). */
#ifndef TR_ARCH_H
#define TR_ARCH_H

#include "trampolines/op.h"

struct tr_arch {
	const char *name;        /* "x86_64", "aarch64" */
	uint16_t elf_mach;       /* EM_X86_64, EM_AARCH64 */
	int dw_sp, dw_fp, dw_ra; /* DWARF numbers: x86_64 7, 6, 16; arm64 31, 29, 30 */
	unsigned code_align;     /* CIE code alignment factor */
	int data_align;          /* CIE data alignment factor */
	int64_t entry_cfa_off;   /* CFA = SP + this at function entry (x86_64 8, arm64 0) */
	enum tr_ra_where entry_ra_where;
	int64_t entry_ra_off;    /* x86_64: RA at CFA-8 */
	int entry_ra_reg;        /* arm64: x30 */
	/* Encode one op into buf; writes the assembly text and the stack effects.
	 * Returns the number of bytes, or -1 with a message in err. */
	int (*encode)(const struct tr_op *op, uint8_t *buf, size_t cap,
		      char *text, size_t textcap,
		      struct tr_eff eff[TR_MAX_EFF], int *neff,
		      char *err, size_t errlen);
	/* Parse a register name as GNU as writes it in .cfi directives ("%rbp", "x29")
	 * into its DWARF number; -1 if unknown. */
	int (*dwarf_reg)(const char *name);
	/* The breakpoint instruction the capture patches in (int3, brk #0). */
	const uint8_t *bkpt;
	size_t bkpt_len;
};

extern const struct tr_arch tr_arch_x86_64;
extern const struct tr_arch tr_arch_aarch64;
const struct tr_arch *tr_arch_by_name(const char *name);
const struct tr_arch *tr_arch_host(void);
/* "x86_64, aarch64": every arch the generator encodes, for messages */
void tr_arch_names(char *buf, size_t len);

#endif
