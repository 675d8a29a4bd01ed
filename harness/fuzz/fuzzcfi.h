/* jitunwind fuzz-cfi (docs/fuzzing.md "fuzz-cfi"): random trampolines from stack ops,
 * their CFI encoded in randomly chosen but valid ways (or corrupted in one
 * element), run through the capture and every unwinder; a sample where the
 * CFI is consistent but a DWARF unwinder is not ok, or where the DWARF
 * unwinders disagree, is minimized and written as a case file.
 *
 * The generated sample is the project's own model: struct tr_op ops (the
 * [code] of a case), struct tr_unwind_opts (its [unwind]) and the truth rows
 * tr_emit derives; only the CFA program's encoding choices are new here, kept
 * as a tape of choices so that the minimizer can simplify them. */
#ifndef HX_FUZZCFI_H
#define HX_FUZZCFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/outcome.h"
#include "harness/case/case.h"
#include "trampolines/tramp.h"
#include "juerr.h"

#define HX_FZ_MAX_OPS 48
#define HX_FZ_TAPE_MAX 1024
#define HX_FZ_MAX_INSNS 256
#define HX_FZ_MAX_DEL 32

/* splitmix64: the one random source; a case is drawn from (seed, index) */
struct hx_fz_rng {
	uint64_t s;
};
uint64_t hx_fz_next(struct hx_fz_rng *r);
uint32_t hx_fz_below(struct hx_fz_rng *r, uint32_t n);
void hx_fz_seed(struct hx_fz_rng *r, uint64_t seed, uint64_t index, uint64_t stream);

/* The encoder's choices, one row of them per op (removing an op removes its
 * choices and no other op's): replayed, then drawn (fresh) or 0, the simplest
 * form, past what was drawn when the minimizer replays. */
#define HX_FZ_ROW_CHOICES 40
struct hx_fz_tape {
	uint32_t v[HX_FZ_MAX_OPS][HX_FZ_ROW_CHOICES];
	uint8_t n[HX_FZ_MAX_OPS];
	size_t row, pos;
	bool fresh;
	struct hx_fz_rng rng;
};
void hx_fz_tape_at(struct hx_fz_tape *t, size_t row);
uint32_t hx_fz_choose(struct hx_fz_tape *t, uint32_t n);
/* true once in n draws; false (the plain encoding) where the tape says 0 */
bool hx_fz_rare(struct hx_fz_tape *t, uint32_t n);

/* An encoded instruction by the op whose row it states and its place there. */
struct hx_fz_ref {
	int16_t row;
	uint16_t k;
};

/* An op's place in the layout: executed, or in the block a forward jump
 * skips (an early exit laid out before the landing pad that runs). */
enum hx_fz_place { HX_FZ_LIVE, HX_FZ_JUMP, HX_FZ_DEAD };

/* Mutations (--mutate): one element of the encoded program corrupted. */
enum hx_fz_mut_kind {
	HX_FZ_MUT_NONE, HX_FZ_MUT_OPERAND, HX_FZ_MUT_DELETE, HX_FZ_MUT_DUP, HX_FZ_MUT_SWAP,
	HX_FZ_MUT_BYTE, HX_FZ_MUT_INSERT, HX_FZ_MUT_TRUNCATE, HX_FZ_MUT__COUNT
};
struct hx_fz_mut {
	enum hx_fz_mut_kind kind;
	uint32_t pick, a, b;        /* the instruction (pick % count), kind-specific values */
	bool placed;                /* at: the instruction picked, kept through the minimizer */
	struct hx_fz_ref at;
};

struct hx_fz_gen {
	const struct tr_arch *arch;
	struct tr_op ops[HX_FZ_MAX_OPS];       /* dead ops as the op they encode */
	uint8_t place[HX_FZ_MAX_OPS];          /* enum hx_fz_place */
	size_t nops;
	int depth;
	struct tr_unwind_opts unw;             /* cfi and prog are the encoder's */
	struct hx_fz_tape tape;
	struct hx_fz_ref del[HX_FZ_MAX_DEL];   /* encoded instructions left out (minimizer) */
	size_t ndel;
	struct hx_fz_mut mut;
	bool plant;                            /* JU_FUZZ_PLANT=cfa: a wrong CFA offset (negative control) */
	uint64_t seed, index;
};

/* Features a case exercises (coverage counters of a run). */
enum hx_fz_feature {
	FZF_ADV, FZF_ADV1, FZF_ADV2, FZF_ADV4, FZF_ADV_SPLIT,
	FZF_DEF_CFA, FZF_DEF_CFA_SF, FZF_DEF_CFA_REG, FZF_DEF_CFA_OFF, FZF_DEF_CFA_OFF_SF,
	FZF_CFA_EXPR_BREG, FZF_CFA_EXPR_BREGX, FZF_CFA_EXPR_UCONST, FZF_CFA_EXPR_CONST, FZF_CFA_EXPR_MINUS,
	FZF_OFFSET, FZF_OFFSET_EXT, FZF_OFFSET_EXT_SF, FZF_EXPR_RULE, FZF_EXPR_RULE_BREG,
	FZF_RESTORE, FZF_RESTORE_EXT, FZF_SAME_VALUE, FZF_REMEMBER, FZF_RESTORE_STATE,
	FZF_VAL_OFFSET, FZF_VAL_OFFSET_SF, FZF_VAL_EXPR, FZF_NOP_PAD, FZF_ARGS_SIZE, FZF_RESTATE,
	FZF_FP, FZF_SET_FP, FZF_LEAVE, FZF_SAVE_REG, FZF_BIG_ALLOC, FZF_NO_CALL, FZF_DEAD_RET,
	FZF_DEAD_TAIL, FZF_PAD_RESTORE_STATE, FZF_DEPTH2, FZF_CIE_V3, FZF_TERMINATOR,
	FZF_LSDA, FZF_OTHER_REG, FZF_MUTATED,
	FZF__COUNT
};
const char *hx_fz_feature_name(enum hx_fz_feature f);

/* One encoded CFA instruction, for the program and its comment. */
struct hx_fz_insn {
	uint8_t bytes[24];
	uint8_t len;
	struct hx_fz_ref ref;
	char text[64];
};

struct hx_fz_prog {
	struct hx_fz_insn insn[HX_FZ_MAX_INSNS];
	size_t n;
	uint64_t features;                     /* bit per enum hx_fz_feature */
};

/* fuzzcfi_gen.c: a random sample for (seed, index); its ops are valid
 * (hx_fz_valid), its unwinding options random but writable. */
void hx_fz_generate(struct hx_fz_gen *g, const struct tr_arch *arch, uint64_t seed, uint64_t index,
		    bool mutate);
/* Can the ops run: balanced stack at every exit, registers restored from
 * their own slots, a call only where the ABI allows it.  0, or -EINVAL with why. */
int hx_fz_valid(const struct hx_fz_gen *g, char *why, size_t len);
/* The [code] ops: dead ops as raw bytes with no stack effect, the jump over
 * them as raw bytes.  0, or -errno with err filled. */
int hx_fz_exec_ops(const struct hx_fz_gen *g, struct tr_op *out, size_t *n, struct ju_err *err);
/* The rows the CFI describes: the truth where code runs, the dead block's own
 * rows where it does not (their state flows from the jump).  0, or -errno. */
int hx_fz_cfi_rows(const struct hx_fz_gen *g, const struct tr_func *truth, struct tr_row *rows,
		   bool *dead, struct ju_err *err);

/* fuzzcfi_enc.c: the FDE's CFA program for those rows, choices from g->tape,
 * g->del left out, g->mut applied.  0, or -errno with err filled. */
int hx_fz_encode(struct hx_fz_gen *g, const struct tr_func *truth, struct hx_fz_prog *p,
		 struct ju_err *err);
void hx_fz_mutate_pick(struct hx_fz_gen *g, struct hx_fz_rng *r, size_t ninsns);

/* fuzzcfi_text.c: the case text of g (ops, unwinding options, the program as
 * bytes with its instructions in a comment), [expect] from expect_text (or a
 * placeholder).  0, or -errno with err filled. */
int hx_fz_case_text(struct hx_fz_gen *g, const char *name, const char *about, const char *expect_text,
		    char *buf, size_t cap, uint64_t *features, struct ju_err *err);
/* g's program; plain: without the minimizer's deletions and the mutation. */
int hx_fz_program(struct hx_fz_gen *g, bool plain, struct hx_fz_prog *p, struct ju_err *err);
/* A DW_EH_PE_* encoding as a case file writes it ("pcrel|sdata4", "omit"). */
const char *hx_fz_enc_name(uint8_t enc, char *buf, size_t len);
/* The op as a [code] line (register names of g's arch). */
void hx_fz_op_line(const struct tr_arch *a, const struct tr_op *op, char *buf, size_t len);

/* The settings of one fuzz-cfi run (the CLI fills them: harness/cli/fuzzcmd.c). */
struct fz_opts {
	uint64_t seed;
	double time_s;             /* 0: no limit */
	uint64_t ncases;           /* 0: until the time is up */
	int jobs;
	const char *out;
	bool mutate;
	int min_runs;              /* runs a minimization may spend */
	int per_sig;               /* findings minimized per signature */
	long long print_index;     /* --print I, else -1 */
	const char *arches;        /* --arch LIST, NULL: this machine's */
};

/* Fuzz every arch of o->arches (another arch: its own build, run with argv,
 * the command line, and this arch's share of the time).  0 with out->kind
 * clean (nothing found), findings (written) or cannot-run (nothing could
 * run); a negative errno on bad input or a failed worker. */
int hx_fuzzcfi_run(const struct fz_opts *o, int argc, char **argv, struct hx_cmd_outcome *out);

#endif
