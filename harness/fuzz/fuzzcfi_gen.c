/* fuzz-cfi: random trampolines as stack ops (struct tr_op), checked by a
 * small stack simulation before they ever run, and their layout as the
 * [code] of a case (a skipped early exit becomes raw bytes without effect). */
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fuzz/fuzzcfi.h"
#include "harness/case/say.h"
#include "juerr.h"

uint64_t hx_fz_next(struct hx_fz_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t hx_fz_below(struct hx_fz_rng *r, uint32_t n)
{
	return n ? (uint32_t)(hx_fz_next(r) % n) : 0;
}

void hx_fz_seed(struct hx_fz_rng *r, uint64_t seed, uint64_t index, uint64_t stream)
{
	r->s = seed * 0x2545f4914f6cdd1dull ^ (index + 1) * 0x9e3779b97f4a7c15ull ^ stream << 56;
	hx_fz_next(r);
}

/* The tape holds effective choices (0 = the simplest form), so the minimizer
 * can tell which entries made the encoding differ from the plain one. */
void hx_fz_tape_at(struct hx_fz_tape *t, size_t row)
{
	t->row = row < HX_FZ_MAX_OPS ? row : HX_FZ_MAX_OPS - 1;
	t->pos = 0;
}

static uint32_t draw(struct hx_fz_tape *t, uint32_t fresh_value_below, bool rare)
{
	uint32_t v = 0;
	if (t->pos < t->n[t->row]) {
		v = t->v[t->row][t->pos];
	} else if (t->fresh && t->pos < HX_FZ_ROW_CHOICES) {
		uint32_t r = hx_fz_below(&t->rng, fresh_value_below ? fresh_value_below : 1);
		v = rare ? r == 0 : r;
		t->v[t->row][t->pos] = v;
		t->n[t->row] = (uint8_t)(t->pos + 1);
	}
	t->pos++;
	return v;
}

uint32_t hx_fz_choose(struct hx_fz_tape *t, uint32_t n)
{
	uint32_t v = draw(t, n, false);
	return n ? v % n : 0;
}

bool hx_fz_rare(struct hx_fz_tape *t, uint32_t n)
{
	return draw(t, n, true) != 0;
}

/* ---- the stack simulation (what may run) ---- */

enum slot_kind { SL_FP, SL_REG, SL_ALLOC };
struct slot {
	uint8_t kind;
	int reg;
	int64_t size;
};
struct sim {
	struct slot s[HX_FZ_MAX_OPS];
	int n;
	int64_t pushed;         /* bytes below the entry SP */
	bool fp_set, called;
};

static int64_t unit_of(const struct tr_arch *a)
{
	return a->fuzz.slot;
}

static bool has_slot(const struct sim *s, int kind, int reg)
{
	for (int i = 0; i < s->n; i++)
		if (s->s[i].kind == kind && (kind != SL_REG || s->s[i].reg == reg))
			return true;
	return false;
}

static void push_slot(struct sim *s, int kind, int reg, int64_t size)
{
	if (s->n < HX_FZ_MAX_OPS)
		s->s[s->n++] = (struct slot){ (uint8_t)kind, reg, size };
	s->pushed += size;
}

/* an sp adjustment the arch's encoder takes (arm64: a 12-bit immediate, shifted or not) */
static bool imm_ok(const struct tr_arch *a, int64_t n)
{
	return !a->fuzz.sp_imm_ok || a->fuzz.sp_imm_ok(n);
}

/* the stack at a call meets the arch's alignment */
static bool call_aligned(const struct tr_arch *a, const struct sim *s)
{
	return !a->fuzz.call_align || !((a->facts->entry_cfa_off + s->pushed) % a->fuzz.call_align);
}

/* the return address survives a call: on the stack since entry, or saved
 * (the frame record or a slot of the link register) */
static bool ra_kept(const struct tr_arch *a, const struct sim *s)
{
	return a->facts->ra_at_cfa || has_slot(s, SL_FP, 0) || has_slot(s, SL_REG, a->facts->dw_ra);
}

/* x86 `leave`: only allocations between SP and the frame record, so no
 * register slot is dropped while the CFI still says where it is */
static bool leave_ok(const struct sim *s)
{
	if (!s->fp_set)
		return false;
	for (int i = s->n - 1; i >= 0; i--) {
		if (s->s[i].kind == SL_FP)
			return true;
		if (s->s[i].kind != SL_ALLOC)
			return false;
	}
	return false;
}

/* One op applied to the simulation; NULL, or why it cannot run here. */
/* The control transfers: the one call and the exits. */
static const char *sim_transfer(struct sim *s, const struct tr_arch *a, const struct tr_op *op, bool dead)
{
	if (op->kind == TR_OP_CALL_TARGET) {
		if (dead || s->called)
			return "one call_target, on the path that runs";
		if (!call_aligned(a, s))
			return "call with a misaligned stack";
		if (!ra_kept(a, s))
			return "call with the return address in the link register only";
		s->called = true;
		return NULL;
	}
	if (s->n || s->fp_set)
		return "exit with a frame still on the stack";
	if (op->kind == TR_OP_TAIL_JUMP && !dead)
		return "a tail jump that runs (the capture needs the trampoline to return)";
	return NULL;
}

static const char *sim_op(struct sim *s, const struct tr_arch *a, const struct tr_op *op, bool dead)
{
	struct slot *top = s->n ? &s->s[s->n - 1] : NULL;
	int64_t u = unit_of(a);
	switch (op->kind) {
	case TR_OP_PUSH_FP:
		if (has_slot(s, SL_FP, 0))
			return "a second push_fp";
		push_slot(s, SL_FP, 0, u);
		return NULL;
	case TR_OP_SET_FP:
		if (s->fp_set || !top || top->kind != SL_FP)
			return "set_fp needs the frame record on top and FP not yet set";
		s->fp_set = true;
		return NULL;
	case TR_OP_ALLOC:
		if (op->n <= 0 || op->n % u || s->pushed + op->n > 0x8000 || !imm_ok(a, op->n))
			return "alloc size";
		push_slot(s, SL_ALLOC, 0, op->n);
		return NULL;
	case TR_OP_FREE:
		if (!top || top->kind != SL_ALLOC || op->n <= 0 || op->n > top->size || op->n % u ||
		    !imm_ok(a, op->n) || !imm_ok(a, top->size - op->n))
			return "free without that much allocated on top";
		top->size -= op->n;
		s->pushed -= op->n;
		if (!top->size)
			s->n--;
		return NULL;
	case TR_OP_SAVE_REG:
		if (has_slot(s, SL_REG, (int)op->n) || op->n == a->facts->dw_sp || op->n == a->facts->dw_fp ||
		    op->n == a->fuzz.call_reg)
			return "save_reg of a register saved twice, SP, FP or the target register";
		push_slot(s, SL_REG, (int)op->n, u);
		return NULL;
	case TR_OP_RESTORE_REG:
		if (!top || top->kind != SL_REG || top->reg != op->n)
			return "restore_reg of a register not saved on top";
		s->n--;
		s->pushed -= u;
		return NULL;
	case TR_OP_POP_FP:
		if (!top || top->kind != SL_FP)
			return "pop_fp without the frame record on top";
		s->n--;
		s->pushed -= u;
		s->fp_set = false;
		return NULL;
	case TR_OP_LEAVE:
		if (!a->fuzz.has_leave || !leave_ok(s))
			return "leave needs FP set and only allocations above the record";
		while (s->s[s->n - 1].kind != SL_FP)
			s->pushed -= s->s[--s->n].size;
		s->n--;
		s->pushed -= u;
		s->fp_set = false;
		return NULL;
	case TR_OP_CALL_TARGET:
	case TR_OP_RET:
	case TR_OP_TAIL_JUMP:
		return sim_transfer(s, a, op, dead);
	case TR_OP_NOP:
		return NULL;
	case TR_OP_ENDBR64:
	case TR_OP_BTI:
		return op->kind == a->fuzz.landing ? NULL : "a landing pad of another arch";
	default:
		return "op the fuzzer does not generate";
	}
}

int hx_fz_valid(const struct hx_fz_gen *g, char *why, size_t len)
{
	struct sim live = { .n = 0 }, dead;
	bool in_dead = false, ended = false, jumped = false;
	for (size_t i = 0; i < g->nops; i++) {
		const struct tr_op *op = &g->ops[i];
		const char *w = NULL;
		if (g->place[i] == HX_FZ_JUMP) {
			if (jumped || in_dead || ended || i + 1 >= g->nops || g->place[i + 1] != HX_FZ_DEAD)
				w = "one jump, followed by the block it skips";
			dead = live;
			in_dead = jumped = true;
		} else if (g->place[i] == HX_FZ_DEAD) {
			if (!in_dead)
				w = "dead op outside the skipped block";
			else if (!(w = sim_op(&dead, g->arch, op, true)) &&
				 (op->kind == TR_OP_RET || op->kind == TR_OP_TAIL_JUMP))
				in_dead = false;
			else if (!w && i + 1 < g->nops && g->place[i + 1] != HX_FZ_DEAD)
				w = "the skipped block does not end in ret or tail_jump";
		} else {
			if (in_dead || ended)
				w = in_dead ? "the skipped block does not end in ret or tail_jump" : "op after ret";
			else if (!(w = sim_op(&live, g->arch, op, false)) && op->kind == TR_OP_RET)
				ended = true;
			if (!w && (op->kind == TR_OP_ENDBR64 || op->kind == TR_OP_BTI) && i)
				w = "endbr64/bti only first";
		}
		if (w) {
			snprintf(why, len, "op %zu (%s): %s", i + 1, tr_op_name(op->kind), w);
			return -EINVAL;
		}
	}
	if (!ended) {
		snprintf(why, len, "the code does not end in ret");
		return -EINVAL;
	}
	if (g->depth > 1 && !live.called) {
		snprintf(why, len, "depth %d without a call_target", g->depth);
		return -EINVAL;
	}
	return 0;
}

/* ---- generation ---- */

static void add(struct hx_fz_gen *g, enum tr_op_kind k, int64_t n, enum hx_fz_place p)
{
	if (g->nops >= HX_FZ_MAX_OPS)
		return;
	memset(&g->ops[g->nops], 0, sizeof(g->ops[0]));
	g->ops[g->nops].kind = k;
	g->ops[g->nops].n = n;
	g->ops[g->nops].effect = TR_OP_NOP;
	g->place[g->nops++] = (uint8_t)p;
}

/* applies and appends (the generator keeps its own simulation in step) */
static void emit(struct hx_fz_gen *g, struct sim *s, enum tr_op_kind k, int64_t n, enum hx_fz_place p)
{
	struct tr_op op = { .kind = k, .n = n };
	if (g->nops < HX_FZ_MAX_OPS - 2 && !sim_op(s, g->arch, &op, p == HX_FZ_DEAD))
		add(g, k, n, p);
}

static int64_t rand_size(struct hx_fz_rng *r, const struct tr_arch *a, int64_t room)
{
	int64_t u = unit_of(a), n;
	uint32_t k = hx_fz_below(r, 10);
	if (k < 6)
		n = u * (1 + hx_fz_below(r, 4));
	else if (k < 9)
		n = u * (5 + hx_fz_below(r, 60));
	else
		n = 0x1000 + a->fuzz.big_step * hx_fz_below(r, a->fuzz.big_count);
	return n <= room ? n : u;
}

static int rand_reg(struct hx_fz_rng *r, const struct tr_arch *a)
{
	return a->fuzz.save_regs[hx_fz_below(r, (uint32_t)a->fuzz.nsave_regs)];
}

static void gen_prologue(struct hx_fz_gen *g, struct sim *s, struct hx_fz_rng *r)
{
	const struct tr_arch *a = g->arch;
	if (!hx_fz_below(r, 4))
		emit(g, s, a->fuzz.landing, 0, HX_FZ_LIVE);
	if (hx_fz_below(r, 2)) {
		emit(g, s, TR_OP_PUSH_FP, 0, HX_FZ_LIVE);
		if (hx_fz_below(r, 3))
			emit(g, s, TR_OP_SET_FP, 0, HX_FZ_LIVE);
	}
	for (uint32_t k = hx_fz_below(r, 5); k > 0; k--) {
		switch (hx_fz_below(r, 6)) {
		case 0: case 1:
			emit(g, s, TR_OP_SAVE_REG, rand_reg(r, a), HX_FZ_LIVE);
			break;
		case 2: case 3:
			emit(g, s, TR_OP_ALLOC, rand_size(r, a, 0x6000 - s->pushed), HX_FZ_LIVE);
			break;
		case 4:
			emit(g, s, TR_OP_PUSH_FP, 0, HX_FZ_LIVE);
			emit(g, s, TR_OP_SET_FP, 0, HX_FZ_LIVE);
			break;
		default:
			emit(g, s, TR_OP_NOP, 0, HX_FZ_LIVE);
		}
	}
}

/* Makes the call possible (arm64: the return address saved; x86_64: the
 * stack 16-aligned), then calls. */
static void gen_call(struct hx_fz_gen *g, struct sim *s, struct hx_fz_rng *r)
{
	const struct tr_arch *a = g->arch;
	if (!ra_kept(a, s)) {
		if (hx_fz_below(r, 2))
			emit(g, s, TR_OP_PUSH_FP, 0, HX_FZ_LIVE);
		else
			emit(g, s, TR_OP_SAVE_REG, a->facts->dw_ra, HX_FZ_LIVE);
	}
	if (!call_aligned(a, s))
		emit(g, s, TR_OP_ALLOC, a->fuzz.call_align - (a->facts->entry_cfa_off + s->pushed) % a->fuzz.call_align,
		     HX_FZ_LIVE);
	emit(g, s, TR_OP_CALL_TARGET, 0, HX_FZ_LIVE);
}

/* Undoes every slot (LIFO), in a random style, then exits. */
static void gen_teardown(struct hx_fz_gen *g, struct sim *s, struct hx_fz_rng *r, enum hx_fz_place p,
			 enum tr_op_kind exit_op)
{
	int64_t u = unit_of(g->arch);
	for (int guard = 0; s->n && guard < 2 * HX_FZ_MAX_OPS; guard++) {
		struct slot *t = &s->s[s->n - 1];
		size_t before = g->nops;
		if (g->arch->fuzz.has_leave && leave_ok(s) && !hx_fz_below(r, 3)) {
			emit(g, s, TR_OP_LEAVE, 0, p);
		} else if (t->kind == SL_ALLOC) {
			int64_t n = t->size;
			if (n > u && !hx_fz_below(r, 4)) {
				int64_t part = u * (1 + hx_fz_below(r, (uint32_t)(n / u - 1)));
				if (imm_ok(g->arch, part) && imm_ok(g->arch, n - part))
					n = part;
			}
			emit(g, s, TR_OP_FREE, n, p);
		} else if (t->kind == SL_REG) {
			emit(g, s, TR_OP_RESTORE_REG, t->reg, p);
		} else {
			emit(g, s, TR_OP_POP_FP, 0, p);
		}
		if (g->nops == before)   /* out of room: the generator gives up on this shape */
			break;
	}
	emit(g, s, exit_op, 0, p);
}

/* Between the call and the epilogue: short-lived allocations and saves. */
static void gen_middle(struct hx_fz_gen *g, struct sim *s, struct hx_fz_rng *r)
{
	for (uint32_t k = hx_fz_below(r, 3); k > 0; k--) {
		switch (hx_fz_below(r, 3)) {
		case 0: {
			int64_t n = rand_size(r, g->arch, 0x6000 - s->pushed);
			emit(g, s, TR_OP_ALLOC, n, HX_FZ_LIVE);
			if (hx_fz_below(r, 2))
				emit(g, s, TR_OP_NOP, 0, HX_FZ_LIVE);
			emit(g, s, TR_OP_FREE, n, HX_FZ_LIVE);
			break;
		}
		case 1: {
			int reg = rand_reg(r, g->arch);
			size_t before = g->nops;
			emit(g, s, TR_OP_SAVE_REG, reg, HX_FZ_LIVE);
			if (g->nops > before)
				emit(g, s, TR_OP_RESTORE_REG, reg, HX_FZ_LIVE);
			break;
		}
		default:
			emit(g, s, TR_OP_NOP, 0, HX_FZ_LIVE);
		}
	}
}

/* The CIE and FDE encodings perf can consume.  Left out on purpose, each
 * already a case of its own: FDE addresses that are not pc-relative (no 'R',
 * absptr, udata8: fde-absptr-udata8, libdw cannot place them in the jitted
 * ELF), a header before .eh_frame (hdr-before), none or no search table
 * (hdr-no-table), a datarel|sdata8 table (hdr-table-sdata8), .eh_frame not at
 * ALIGN_8 (eh-frame-unaligned): perf's layout, not the CFI's encoding. */
static void gen_unwind(struct hx_fz_gen *g, struct hx_fz_rng *r)
{
	static const char *const augs[] = { "zR", "zR", "zPLR", "zLR", "zRS", "zRLP", "zPR", "zRL", "zSR",
					     "zLPRS" };
	static const uint8_t fde_encs[] = {
		DW_EH_PE_pcrel | DW_EH_PE_sdata4, DW_EH_PE_pcrel | DW_EH_PE_sdata4,
		DW_EH_PE_pcrel | DW_EH_PE_sdata8, DW_EH_PE_pcrel | DW_EH_PE_sdata2,
	};
	static const uint8_t lsda_encs[] = { DW_EH_PE_omit, DW_EH_PE_omit, DW_EH_PE_absptr,
					     DW_EH_PE_udata4, DW_EH_PE_pcrel | DW_EH_PE_sdata4,
					     DW_EH_PE_udata2 };
	struct tr_unwind_opts *o = &g->unw;
	tr_unwind_opts_default(o);
	o->cfi = TR_CFI_BYTES;
	if (hx_fz_below(r, 2)) {
		snprintf(o->cie_aug, sizeof(o->cie_aug), "%s", augs[hx_fz_below(r, sizeof(augs) / sizeof(augs[0]))]);
		o->fde_enc = fde_encs[hx_fz_below(r, sizeof(fde_encs))];
		if (strchr(o->cie_aug, 'L'))
			o->lsda_enc = lsda_encs[hx_fz_below(r, sizeof(lsda_encs))];
	}
	if (!hx_fz_below(r, 4))
		o->cie_version = 3;
	o->terminator = !hx_fz_below(r, 4);
}

void hx_fz_generate(struct hx_fz_gen *g, const struct tr_arch *arch, uint64_t seed, uint64_t index,
		    bool mutate)
{
	memset(g, 0, sizeof(*g));
	g->arch = arch;
	g->seed = seed;
	g->index = index;
	g->depth = 1;
	struct hx_fz_rng r;
	hx_fz_seed(&r, seed, index, 1);
	hx_fz_seed(&g->tape.rng, seed, index, 2);
	g->tape.fresh = true;
	struct sim s = { .n = 0 };
	gen_prologue(g, &s, &r);
	if (hx_fz_below(&r, 8)) {
		gen_call(g, &s, &r);
		if (!hx_fz_below(&r, 5))
			g->depth = 2;
	}
	gen_middle(g, &s, &r);
	if (!hx_fz_below(&r, 3)) {
		/* an early exit the code jumps over, then the landing pad that runs */
		add(g, TR_OP_RAW, 0, HX_FZ_JUMP);
		struct sim d = s;
		gen_teardown(g, &d, &r, HX_FZ_DEAD, hx_fz_below(&r, 2) ? TR_OP_RET : TR_OP_TAIL_JUMP);
		if (!hx_fz_below(&r, 2))
			emit(g, &s, TR_OP_NOP, 0, HX_FZ_LIVE);
	}
	gen_teardown(g, &s, &r, HX_FZ_LIVE, TR_OP_RET);
	gen_unwind(g, &r);
	if (mutate) {
		g->mut.kind = (enum hx_fz_mut_kind)(1 + hx_fz_below(&r, HX_FZ_MUT__COUNT - 1));
		g->mut.pick = (uint32_t)hx_fz_next(&r);
		g->mut.a = (uint32_t)hx_fz_next(&r);
		g->mut.b = (uint32_t)hx_fz_next(&r);
	}
	char why[128];
	if (hx_fz_valid(g, why, sizeof(why))) {
		if (getenv("JU_FUZZ_DEBUG"))
			ju_say(JU_SAY_DEBUG, "fuzz-cfi", "%s case %llu: generated ops invalid (%s): the plainest case instead",
				arch->facts->name, (unsigned long long)index, why);
		/* the generator's own simulation failed to keep up: the simplest trampoline */
		g->nops = 0;
		add(g, TR_OP_RET, 0, HX_FZ_LIVE);
		g->depth = 1;
	}
}

/* ---- layout ---- */

static int encoded(const struct tr_arch *a, const struct tr_op *op, uint8_t *buf, size_t cap,
		   struct ju_err *err)
{
	char text[48];
	struct tr_eff eff[TR_MAX_EFF];
	int neff;
	return a->encode(op, buf, cap, text, sizeof(text), eff, &neff, err);
}

static void raw_op(struct tr_op *o, const uint8_t *b, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->kind = TR_OP_RAW;
	o->effect = TR_OP_NOP;
	memcpy(o->raw, b, n);
	o->raw_len = n;
}

int hx_fz_exec_ops(const struct hx_fz_gen *g, struct tr_op *out, size_t *n, struct ju_err *err)
{
	*n = 0;
	for (size_t i = 0; i < g->nops; i++) {
		uint8_t b[TR_RAW_MAX];
		int len;
		if (g->place[i] == HX_FZ_LIVE) {
			out[(*n)++] = g->ops[i];
			continue;
		}
		if (g->place[i] == HX_FZ_DEAD) {
			if ((len = encoded(g->arch, &g->ops[i], b, sizeof(b), err)) < 0)
				return -EINVAL;
			raw_op(&out[(*n)++], b, (size_t)len);
			continue;
		}
		size_t skip = 0;
		for (size_t j = i + 1; j < g->nops && g->place[j] == HX_FZ_DEAD; j++) {
			if ((len = encoded(g->arch, &g->ops[j], b, sizeof(b), err)) < 0)
				return -EINVAL;
			skip += (size_t)len;
		}
		raw_op(&out[(*n)++], b, g->arch->jump_over(skip, b));
	}
	return 0;
}

/* the rows of the dead ops up to last, from ops and f (work space) */
static int dead_rows(const struct hx_fz_gen *g, const struct tr_func *truth, size_t last, struct tr_op *ops,
		     struct tr_func *fp, struct tr_row *rows, bool *dead, struct ju_err *err)
{
	size_t n = 0;
	if (hx_fz_exec_ops(g, ops, &n, err))
		return -EINVAL;
	for (size_t i = 0; i <= last; i++)
		if (g->place[i] == HX_FZ_DEAD)
			ops[i] = g->ops[i];
	int rc = tr_emit(g->arch, ops, last + 1, fp, err);
	if (rc)
		return rc;
	for (size_t i = 0; i <= last && i < truth->nrows; i++) {
		if (g->place[i] != HX_FZ_DEAD)
			continue;
		if (fp->rows[i].offset != truth->rows[i].offset) {
			ju_errf(err, EINVAL, 0, "internal: dead op %zu at 0x%x, in the code at 0x%x", i,
				 fp->rows[i].offset, truth->rows[i].offset);
		}
		rows[i] = fp->rows[i];
		dead[i] = true;
	}
	return 0;
}

int hx_fz_cfi_rows(const struct hx_fz_gen *g, const struct tr_func *truth, struct tr_row *rows,
		   bool *dead, struct ju_err *err)
{
	size_t last = 0;
	bool any = false;
	for (size_t i = 0; i < g->nops; i++)
		if (g->place[i] == HX_FZ_DEAD) {
			last = i;
			any = true;
		}
	for (size_t i = 0; i < truth->nrows; i++) {
		rows[i] = truth->rows[i];
		dead[i] = false;
	}
	if (!any)
		return 0;
	/* the skipped block's own rows: the prefix up to its end, dead ops real */
	struct { struct tr_op ops[HX_FZ_MAX_OPS]; struct tr_func f; } *w = calloc(1, sizeof(*w));
	if (!w) {
		return ju_errf(err, ENOMEM, 0, "out of memory");
	}
	int rc = dead_rows(g, truth, last, w->ops, &w->f, rows, dead, err);
	free(w);
	return rc;
}
