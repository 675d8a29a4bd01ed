/* lint's `perf record -g` check (JD084-JD086): each load's code as the
 * kernel's frame-pointer walk (perf_callchain_user; facts section 4) meets it.
 * The walk takes the sampled pc, then reads a record {caller's fp, return
 * address} at fp + next_off / ra_off (uw_arch.fp) and goes on from the fp it
 * read.  So at each instruction boundary of a function the frame pointer
 * holds one of three things: the caller's value (the walk reads the caller's
 * record, whose return address is the caller's caller's: this function's
 * caller is skipped), the address of this function's own record (the walk is
 * right), or anything else (the walk reads garbage).  The code is followed
 * from the load's first byte with the arch's decoder and the one interpreter
 * of effects (decode.h), as the code check does, without the CFI rows. */
#include "unwinders/lint/lint_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/decode.h"
#include "unwinders/uwarch.h"

enum fp_what { FS_CALLER, FS_FRAME, FS_OTHER, FS_UNKNOWN };

/* one rule's boundaries in one load (the first LINT_MAX_PCS kept) */
struct fp_hits {
	uint64_t n;
	struct lint_where w;
	uint64_t first;           /* JD085: the first instruction that wrote fp so; JD086: the first window's end */
	bool late, early;         /* JD086: a prologue window, an epilogue window */
};

/* a window where the caller's fp is live: its boundaries, and whether the
 * code did other work in it (beyond building or tearing down the frame) */
struct fp_win {
	bool open, work, epi;
	unsigned n;
	uint64_t pc[LINT_MAX_PCS];
	uint64_t more;            /* boundaries past the LINT_MAX_PCS kept */
};

/* a forward jump taken while the caller's fp is live: the code at its target,
 * when nothing falls through to it, starts in the jump's state */
#define FP_TARGETS 16
struct fp_target {
	uint64_t at;
	struct uw_cfa_state st;
	bool bad_fp, work, epi;
};

struct fp_walk {
	const struct uw_decoder *dc;
	const struct uw_fp_layout *L;
	struct uw_cfa_state st, body;
	bool have_body, built, unsure, bad_fp, bad_save, after_end, calls;
	bool foreign;             /* the code tears down a frame it did not build (a callee built it) */
	uint64_t bad_at;          /* where fp was last written with a non-frame value */
	uint64_t entry;           /* the offset of the function's first instruction */
	struct fp_win win;
	struct fp_hits other, window;
	bool fell;                /* the last instruction does not fall through (x->end) */
	unsigned ntargets;
	struct fp_target targets[FP_TARGETS];
};

static void fp_win_open(struct fp_win *w, bool work, bool epi)
{
	w->open = true;
	w->work = work;
	w->epi = epi;
	w->n = 0;
	w->more = 0;
}

static void fp_mark(struct fp_hits *h, uint64_t off)
{
	h->n++;
	if (h->w.npc < LINT_MAX_PCS)
		h->w.pc[h->w.npc++] = off;
}

/* Does fp point at a record {the caller's fp, the return address}? */
static bool fp_record(const struct fp_walk *k)
{
	const struct uw_cfa_state *s = &k->st;
	const struct uw_decoder *dc = k->dc;
	if (!s->fp_known || !s->regs_known || k->bad_save || dc->fp >= UW_NREGS || !(s->stored & 1u << dc->fp))
		return false;
	int64_t at_fp = k->L->next_off - s->fp_d, at_ra = k->L->ra_off - s->fp_d;
	if (s->slot[dc->fp] != at_fp)
		return false;
	if (dc->ra_at_cfa)
		return s->ra_at == UW_RA_SLOT && s->ra_slot == at_ra;
	return dc->ra < UW_NREGS && s->stored & 1u << dc->ra && s->slot[dc->ra] == at_ra;
}

static enum fp_what fp_what(const struct fp_walk *k)
{
	if (k->bad_fp)
		return FS_OTHER;
	if (k->st.fp_entry || k->st.fp_popped)
		return FS_CALLER;
	if (fp_record(k))
		return FS_FRAME;
	return k->unsure ? FS_UNKNOWN : FS_OTHER;
}

/* A window closes: its boundaries go to JD086 when the code did other work
 * in it, as a frame built or torn down as the instructions next to the
 * record's own (push, mov; pop, ret) leave only the walk's unavoidable gaps. */
static void fp_win_close(struct fp_walk *k, uint64_t end)
{
	struct fp_win *w = &k->win;
	if (w->open && w->work) {
		if (!k->window.n)
			k->window.first = end;
		for (unsigned i = 0; i < w->n; i++)
			fp_mark(&k->window, w->pc[i]);
		k->window.n += w->more;
		if (w->epi)
			k->window.early = true;
		else
			k->window.late = true;
	}
	w->open = w->work = w->epi = false;
	w->n = 0;
	w->more = 0;
}

/* Does the instruction at off do more than build or tear down a frame?  The
 * return or jump that ends a window does not, nor an instruction without
 * effects at the function's entry (a landing pad: endbr64); any other
 * instruction does, a compare and a branch too (V8's `pop %rbp; cmp; jg`). */
static bool fp_work(const struct fp_walk *k, const struct uw_insn *x, uint64_t off)
{
	if (x->end || (!x->neff && off == k->entry))
		return false;
	if (!x->neff)
		return true;
	for (unsigned i = 0; i < x->neff; i++) {
		enum uw_eff_kind e = x->eff[i].kind;
		if (!(e == UW_EFF_SP_ADD || e == UW_EFF_STORE || e == UW_EFF_FP_FROM_SP || e == UW_EFF_FP_RESTORE))
			return true;
	}
	return false;
}

/* Before the interpreter runs x: what x does to fp that the interpreter
 * does not tell apart (a load of fp from a slot other than its save, a save
 * of a value that is not the caller's, fp set from an sp not followed). */
static void fp_pre(struct fp_walk *k, const struct uw_insn *x, enum fp_what was, uint64_t off)
{
	const struct uw_decoder *dc = k->dc;
	const struct uw_cfa_state *s = &k->st;
	int64_t d = s->sp_d;
	if (x->fp_base && s->fp_entry)
		k->foreign = true;   /* the caller's fp used as a base: set by code lint does not see (QEMU's env) */
	bool restore = false, from_slot = false, slot_ok = false, set = false;
	for (unsigned i = 0; i < x->neff; i++) {
		const struct uw_eff *e = &x->eff[i];
		if (e->kind == UW_EFF_SP_ADD)
			d -= e->n;
		else if (e->kind == UW_EFF_SP_FROM_FP && s->fp_entry)
			k->foreign = true;
		else if (e->kind == UW_EFF_STORE && e->reg == dc->fp && !(s->stored & 1u << dc->fp) && was != FS_CALLER)
			k->bad_save = true;
		else if (e->kind == UW_EFF_FP_RESTORE)
			restore = true;
		else if ((e->kind == UW_EFF_LOAD || e->kind == UW_EFF_RESTORE) && e->reg == dc->fp) {
			from_slot = true;
			slot_ok = s->sp_known && s->stored & 1u << dc->fp && s->slot[dc->fp] == e->n - d;
		} else if (e->kind == UW_EFF_FP_FROM_SP || e->kind == UW_EFF_FP_ADD || e->kind == UW_EFF_FP_UNKNOWN) {
			set = true;
			k->unsure = e->kind == UW_EFF_FP_FROM_SP && !s->sp_known;
		}
	}
	if (restore && s->fp_entry && (!from_slot || !(s->stored & 1u << dc->fp)))
		k->foreign = true;   /* a pop of a record this code never pushed (V8's baseline code) */
	if (restore)
		/* the caller's fp back: from its save slot, or by leave/ldp from the record fp pointed at */
		k->bad_fp = from_slot ? !slot_ok : was != FS_FRAME;
	else if (set)
		k->bad_fp = false;
	if ((restore && k->bad_fp) || (set && !k->unsure))
		k->bad_at = off;
	if (restore)
		k->unsure = false;
}

/* The boundary at off, in state what. */
static void fp_boundary(struct fp_walk *k, enum fp_what what, uint64_t off)
{
	struct fp_win *w = &k->win;
	if (what == FS_FRAME) {
		fp_win_close(k, off);
		k->built = true;
		if (!k->have_body) {
			k->body = k->st;
			k->have_body = true;
		}
	} else if (what == FS_OTHER) {
		if (!k->other.n)
			k->other.first = k->bad_at;
		fp_mark(&k->other, off);
	} else if (what == FS_CALLER && w->open) {
		if (w->n < LINT_MAX_PCS)
			w->pc[w->n++] = off;
		else
			w->more++;
	}
}

/* A forward jump in a window: its target's state (the first FP_TARGETS kept). */
static void fp_jump(struct fp_walk *k, const struct uw_insn *x, uint64_t next)
{
	if (!x->jump || x->rel <= 0 || !k->win.open || k->ntargets >= FP_TARGETS)
		return;
	k->targets[k->ntargets++] = (struct fp_target){ .at = next + (uint64_t)x->rel, .st = k->st,
							 .bad_fp = k->bad_fp, .work = k->win.work, .epi = k->win.epi };
}

/* The code at pc follows a return or jump: if a jump in a window goes here,
 * it runs in that jump's state, in that window (V8's `pop %rbp; cmp; jg` to
 * `pop %r10; lea; push %r10; ret`). */
static void fp_landing(struct fp_walk *k, uint64_t pc)
{
	for (unsigned i = 0; i < k->ntargets; i++) {
		const struct fp_target *t = &k->targets[i];
		if (t->at != pc)
			continue;
		k->st = t->st;
		k->bad_fp = t->bad_fp;
		k->bad_save = k->unsure = k->after_end = false;
		fp_win_open(&k->win, t->work, t->epi);
		return;
	}
}

/* One instruction interpreted after its boundary was judged; windows open
 * at the entry (fp_walk_load) and where the frame is torn down. */
static enum fp_what fp_step(struct fp_walk *k, const struct uw_insn *x, enum fp_what was, uint64_t off,
			    uint64_t next)
{
	fp_pre(k, x, was, off);
	k->calls |= x->call;
	if (k->win.open)
		k->win.work |= fp_work(k, x, off);
	uw_eff_apply(&k->st, x);
	fp_jump(k, x, next);
	k->fell = x->end;
	enum fp_what now = fp_what(k);
	if (now == FS_CALLER && was == FS_FRAME && !k->win.open)
		fp_win_open(&k->win, false, true);
	if (x->end) {
		/* a return or jump ends the window with its own boundary; code after
		 * it is taken as reached by a jump from the body, with the body's
		 * frame (fp-relative); where sp is there is not known */
		fp_win_close(k, off);
		k->after_end = true;
		if (k->have_body) {
			k->st = k->body;
			k->st.sp_known = false;
			k->bad_fp = k->bad_save = k->unsure = false;
		}
	}
	return now;
}

/* What fp_say reports of one walk: kept per load, and in the memo for the
 * next load with the same code (small: the walk's own state is not kept). */
struct fp_result {
	bool foreign, built, calls, done, unknown;
	struct fp_hits other, window;
};

/* lint_fp_check's memo: the result of the walk over the last load's code (at
 * code_off in the map), and the walk's scratch state, reused (a walk is
 * some kilobytes: zeroing and copying it per load was most of lint's -g
 * cost on a dump of many small loads) */
struct fp_memo {
	uint64_t load_off, code_off, size;
	struct fp_result res;
	struct fp_walk k;
};

/* a walk at a load's start: only the fields read before written are set
 * (targets, the window's pcs and the body are written before they are read) */
static void fp_walk_init(struct fp_walk *k, const struct uw_decoder *dc, const struct uw_fp_layout *L)
{
	k->dc = dc;
	k->L = L;
	k->have_body = k->built = k->unsure = k->bad_fp = k->bad_save = k->after_end = k->calls = false;
	k->foreign = k->fell = false;
	k->bad_at = k->entry = 0;
	k->ntargets = 0;
	k->win.open = k->win.work = k->win.epi = false;
	k->win.n = 0;
	k->win.more = 0;
	memset(&k->other, 0, sizeof(k->other));
	memset(&k->window, 0, sizeof(k->window));
}

/* After a return or jump, the first instruction that does something: a save
 * of fp starts another function (a load that holds several), from its entry. */
static void fp_after_end(struct fp_walk *k, const struct uw_insn *x, uint64_t off)
{
	k->after_end = false;
	bool entry = false;
	for (unsigned i = 0; i < x->neff && !entry; i++)
		entry = x->eff[i].kind == UW_EFF_STORE && x->eff[i].reg == k->dc->fp;
	if (entry) {
		k->entry = off;
		uw_cfa_entry(&k->st, k->dc);
		k->bad_fp = k->bad_save = k->unsure = false;
	}
	if ((entry || !k->have_body) && !k->win.open)
		fp_win_open(&k->win, false, false);
}

/* Follow the load's code from its first byte; how far the decoder went. */
static uint64_t fp_follow(struct fp_walk *k, const uint8_t *code, uint64_t size, bool *seen_unknown)
{
	uw_cfa_entry(&k->st, k->dc);
	fp_win_open(&k->win, false, false);
	uint64_t pc = 0;
	enum fp_what now = FS_UNKNOWN;
	bool fresh = false;       /* now is fp_what of the state as it stands */
	for (unsigned i = 0; i < LINT_MAX_INSNS && pc < size; i++) {
		struct uw_insn x;
		size_t len = k->dc->decode(code + pc, (size_t)(size - pc), &x);
		if (!len || x.data)
			break;            /* not code (or not decoded): the rest is not judged */
		if (k->fell) {
			fp_landing(k, pc);
			fresh = false;
		}
		if (k->after_end && x.neff) {
			fp_after_end(k, &x, pc);
			fresh = false;
		}
		enum fp_what was = fresh ? now : fp_what(k);
		*seen_unknown |= was == FS_UNKNOWN;
		fp_boundary(k, was, pc);
		if (!x.neff && !x.call && !x.end && !x.jump && !x.fp_base) {
			/* no effect (a nop, register arithmetic): the state stays as it
			 * is, the window sees work (fp_work), a constant dies (uw_eff_apply) */
			if (k->win.open && pc != k->entry)
				k->win.work = true;
			k->st.konst_ok = false;
			now = was;
			fresh = true;
		} else {
			now = fp_step(k, &x, was, pc, pc + len);
			fresh = !x.end;   /* a return or jump resets the state after its now */
		}
		pc += len;
	}
	return pc;
}

/* "at +0x1, +0x4, ..." of a rule's boundaries */
static void fp_list(const struct fp_hits *h, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < h->w.npc && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s+0x%" PRIx64, i ? ", " : "", h->w.pc[i]);
	if (h->n > h->w.npc && o < n)
		snprintf(buf + o, n - o, ", ...");
}

static void fp_say(struct lint_ctx *c, const struct jdr_rec *r, const struct uw_decoder *dc, struct fp_result *k)
{
	const char *fp = dc->reg_name(dc->fp);
	bool done = k->done, unknown = k->unknown;
	char list[200];
	if (k->foreign)
		return;   /* its frame is built where lint does not follow: nothing it says holds */
	if (done && !unknown && !k->built && !k->other.n && k->calls) {
		struct lint_where w = { .load = r->off, .whole = true };
		lint_report_at(c, LR_FP_NO_FRAME, r->off, &w, "the CODE_LOAD at 0x%" PRIx64 ": it calls, and no "
			       "instruction makes %s point at a frame record {the caller's %s, the return address}, so at every sample in it or in a "
			       "function it calls the kernel's walk (perf record -g) reads the record of the code that called "
			       "(or jumped to) it, and that caller is missing from the chain", r->off, fp, fp);
	}
	if (k->other.n) {
		fp_list(&k->other, list, sizeof(list));
		k->other.w.load = r->off;
		lint_report_at(c, LR_FP_CLOBBERED, r->off, &k->other.w, "the CODE_LOAD at 0x%" PRIx64 ": the "
			       "instruction at +0x%" PRIx64 " writes %s with something other than the address of this "
			       "function's frame record, so at %" PRIu64 " instruction boundar%s (%s) and in every function "
			       "called from there the kernel's walk (perf record -g) reads its next frames from whatever %s "
			       "holds", r->off, k->other.first, fp, k->other.n, k->other.n == 1 ? "y" : "ies", list, fp);
	}
	if (k->window.n && k->built) {
		fp_list(&k->window, list, sizeof(list));
		k->window.w.load = r->off;
		lint_report_at(c, LR_FP_WINDOW, r->off, &k->window.w, "the CODE_LOAD at 0x%" PRIx64 ": the frame "
			       "record is %s: %s still holds the caller's value at %" PRIu64 " instruction boundar%s where "
			       "the code does more than build or tear down the frame (%s), and the kernel's walk (perf record "
			       "-g) skips this function's caller at each", r->off,
			       k->window.late && k->window.early ? "built late and torn down early" :
			       k->window.late ? "built late" : "torn down early", fp, k->window.n,
			       k->window.n == 1 ? "y" : "ies", list);
	}
}

/* The arches where a sample's chain under -g is the kernel's walk alone:
 * not where the first return address is the live link register (first_ra_live),
 * nor where perf adds the leaf's caller from it (arm64's get_leaf_frame_caller). */
static bool fp_judged(const struct uw_arch *ua)
{
	if (!ua || !ua->decoder || ua->fp.first_ra_live)
		return false;
	for (const char *const *a = uw_arches_lr_leaf; *a; a++)
		if (!strcmp(*a, ua->facts->name))
			return false;
	return true;
}

void lint_fp_check(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	const struct uw_arch *ua = c->mach <= UINT16_MAX ? uw_arch_by_mach((uint16_t)c->mach) : NULL;
	if (!l->code || !l->code_size || !fp_judged(ua))
		return;
	/* the walk is a function of the code bytes: the last one's result is
	 * kept for a load whose bytes are the same (a JIT's copied trampolines;
	 * off with the code check's memo, JU_LINT_MEMO=0) */
	struct fp_memo *m = c->fp_memo;
	if (!m && !c->cm_off)
		m = c->fp_memo = calloc(1, sizeof(*m));
	struct fp_result res;
	if (m && m->size == l->code_size && m->load_off &&
	    !memcmp(c->data + m->code_off, l->code, (size_t)l->code_size)) {
		res = m->res;
		fp_say(c, r, ua->decoder, &res);
		return;
	}
	struct fp_walk scratch;   /* without a memo (JU_LINT_MEMO=0) */
	struct fp_walk *k = m ? &m->k : &scratch;
	fp_walk_init(k, ua->decoder, &ua->fp);
	bool unknown = false;
	uint64_t end = fp_follow(k, l->code, l->code_size, &unknown);
	fp_win_close(k, end);
	res = (struct fp_result){ .foreign = k->foreign, .built = k->built, .calls = k->calls,
				  .done = end == l->code_size, .unknown = unknown, .other = k->other, .window = k->window };
	if (m) {
		m->load_off = r->off;
		m->code_off = (uint64_t)(l->code - c->data);
		m->size = l->code_size;
		m->res = res;
	}
	fp_say(c, r, ua->decoder, &res);
}
