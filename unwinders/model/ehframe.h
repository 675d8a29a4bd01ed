/* .eh_frame / .eh_frame_hdr parser and CFI interpreter: the oracle's core.
 * Everything here reads untrusted bytes: every length is checked, every loop
 * is bounded, and an error names the byte offset and what was expected. */
#ifndef UW_EHFRAME_H
#define UW_EHFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "juerr.h"   /* struct ju_err: offset inside the section being parsed */

#define EHF_NREGS 97          /* DWARF columns tracked (x86_64 0..16, arm64 0..96) */
#define EHF_STACK_MAX 16      /* remember_state depth */
#define EHF_EXPR_STEPS_MAX 256


/* Where the section sits, for pcrel/datarel/textrel resolution. */
struct ehf_bases {
	uint64_t section;         /* address of the first byte of the .eh_frame data */
	uint64_t text;            /* DW_EH_PE_textrel base */
	uint64_t data;            /* DW_EH_PE_datarel base (for .eh_frame: GOT, rarely used; 0) */
	int ptr_size;             /* 8 */
};

struct ehf_cie {
	uint64_t offset;          /* of the length field, in the section */
	uint8_t version;
	char aug[16];
	uint64_t code_align;
	int64_t data_align;
	unsigned ra_reg;
	uint8_t fde_enc;          /* from 'R', default DW_EH_PE_absptr */
	uint8_t lsda_enc;         /* from 'L', DW_EH_PE_omit if absent */
	bool has_aug_data;        /* 'z' */
	bool signal;              /* 'S' */
	uint64_t personality;     /* from 'P' */
	const uint8_t *insns;
	size_t insns_len;
	uint64_t insns_off;       /* offset of insns in the section */
};

struct ehf_fde {
	uint64_t offset;          /* of the length field */
	uint64_t pc_begin, pc_end;
	const struct ehf_cie *cie;
	const uint8_t *insns;
	size_t insns_len;
	uint64_t insns_off;
	struct ehf_bases bases;   /* copy of the table's, to decode DW_CFA_set_loc */
};

struct ehf_table {
	const uint8_t *data;      /* not owned */
	size_t size;
	struct ehf_bases bases;
	struct ehf_cie *cies;
	size_t ncies;
	struct ehf_fde *fdes;     /* sorted by pc_begin */
	size_t nfdes;
	bool terminated;          /* a zero-length terminator was found */
};

/* Parse a whole .eh_frame.  Returns 0, or a negative errno with err filled
 * (-EINVAL malformed, -ENOMEM). The table keeps
 * pointers into data, which must outlive it. */
int ehf_parse(struct ehf_table *t, const uint8_t *data, size_t size,
	      const struct ehf_bases *bases, struct ju_err *err);
void ehf_table_free(struct ehf_table *t);
const struct ehf_fde *ehf_find_fde(const struct ehf_table *t, uint64_t pc);

/* Decode one pointer with a DW_EH_PE_* encoding at data[*pos]; pos advances.
 * pcrel is relative to bases->section + *pos (before reading). */
int ehf_read_encoded(const uint8_t *data, size_t size, size_t *pos, uint8_t enc,
		     const struct ehf_bases *bases, uint64_t *out, struct ju_err *err);

/* .eh_frame_hdr */
struct ehf_hdr {
	uint8_t version, eh_frame_ptr_enc, fde_count_enc, table_enc;
	uint64_t eh_frame_ptr;    /* resolved address of .eh_frame */
	uint64_t fde_count;       /* 0 when omitted */
	bool has_table;
	uint64_t table_off;       /* offset of the table inside the header data */
	size_t entry_size;        /* 2 * size of table_enc's value */
};
/* hdr_addr: the address of the header's first byte (pcrel base; datarel base
 * for the table).  Validates that the table fits. */
int ehf_parse_hdr(const uint8_t *data, size_t size, uint64_t hdr_addr,
		  struct ehf_hdr *h, struct ju_err *err);
/* Binary search of the header table: 0 with the FDE address for pc, -ENOENT
 * when pc is before the first entry, -EINVAL for a malformed table. */
int ehf_hdr_lookup(const uint8_t *data, size_t size, uint64_t hdr_addr,
		   const struct ehf_hdr *h, uint64_t pc, uint64_t *fde_addr,
		   struct ju_err *err);

/* Register rules (DWARF 6.4.1). */
enum ehf_rule_kind {
	EHF_UNDEF = 0, EHF_SAME, EHF_OFFSET, EHF_VAL_OFFSET, EHF_REGISTER,
	EHF_EXPRESSION, EHF_VAL_EXPRESSION, EHF_INITIAL /* not set by the program: arch default */
};
struct ehf_rule {
	uint8_t kind;
	uint16_t reg;
	int64_t off;
	const uint8_t *expr;
	size_t expr_len;
};
enum ehf_cfa_kind { EHF_CFA_REG_OFF, EHF_CFA_EXPR };
struct ehf_row {
	uint64_t loc;             /* first pc of the row */
	uint64_t end;             /* first pc after the row */
	uint8_t cfa_kind;
	uint16_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	size_t cfa_expr_len;
	struct ehf_rule reg[EHF_NREGS];
	bool ra_signed;           /* DW_CFA_AARCH64_negate_ra_state toggled an odd number of times */
	uint16_t max_reg;         /* the highest register an instruction so far named (CIE's too;
				   * restore_state keeps it): readers with a smaller table fail */
	bool cfa_defined;         /* false until a def_cfa* op ran: cfa_reg/cfa_off mean nothing */
};

/* Run the CIE's then the FDE's program up to pc (pc_begin <= pc < pc_end);
 * out is the row in force at pc.  Rejects unknown opcodes with a clear error. */
int ehf_row_at(const struct ehf_fde *fde, uint64_t pc, struct ehf_row *out,
	       struct ju_err *err);

/* Every row of an FDE in order (for dumps and tests); calls cb for each
 * non-empty row.  A nonzero return from cb stops the walk and is returned. */
int ehf_rows(const struct ehf_fde *fde,
	     int (*cb)(const struct ehf_row *row, void *arg), void *arg,
	     struct ju_err *err);

/* A row as one line of text, the one formatter of every report: the CFA
 * rule, then each register's rule the program set, in register order.  The
 * style says how (run's sample details "CFA=sp+16 bp=[CFA-16] ra=[CFA-8]",
 * replay "cfa=bp+16 bp=[cfa-16] ip=[cfa-8]", dump "cfa=rsp+16 rbp=cfa-16"). */
struct ehf_row_fmt {
	const char *cfa;            /* how the CFA is written: "CFA", "cfa" */
	const char *cfa_undefined;  /* the whole text of a row with no CFA rule yet */
	const char *undef;          /* an undefined register's rule */
	/* the name of DWARF register dw; one made up in tmp when it has none */
	const char *(*name)(const void *ctx, unsigned dw, char *tmp, size_t n);
	const void *ctx;
	unsigned nregs;             /* columns printed: 0 .. nregs - 1 (at most EHF_NREGS) */
	bool brackets;              /* offset(N) as "[CFA-16]", else "CFA-16" */
	bool val_paren;             /* val_offset(N) as "val(CFA+8)", else "CFA+8" */
	bool expr_len;              /* expressions with their size: "expr(3 bytes)" */
	bool same;                  /* same_value rules too ("rbx=same") */
	bool ra_signed;             /* " ra_signed" after a row whose return address is signed */
};
/* The text's length (snprintf's: it may exceed n, the text is cut to n). */
size_t ehf_row_text(const struct ehf_row *row, const struct ehf_row_fmt *f, char *buf, size_t n);

/* DWARF expression evaluation (the subset CFI uses: DW_OP_breg*, lit*, const*,
 * plus, plus_uconst, minus, deref, dup, drop, swap, and, or, ...).
 * push_cfa: push the CFA first (register-rule expressions). */
struct ehf_expr_ctx {
	int (*read_reg)(void *arg, unsigned dwreg, uint64_t *val);
	int (*read_mem)(void *arg, uint64_t addr, uint64_t *val);
	void *arg;
};
int ehf_eval_expr(const uint8_t *expr, size_t len, const struct ehf_expr_ctx *ctx,
		  bool push_cfa, uint64_t cfa, uint64_t *out, struct ju_err *err);

/* .cfi_* text of one CFA instruction at data[*pos] (for dumps); pos advances. */
int ehf_disasm_insn(const uint8_t *data, size_t size, size_t *pos,
		    const struct ehf_cie *cie, char *out, size_t outlen,
		    struct ju_err *err);

#endif
