/* fuzz-cfi's classification of a run, its minimizer and the case it writes
 * (docs/fuzzing.md "fuzz-cfi"); the run itself is fuzzcfi.c. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libunwind.h>
#include <elfutils/libdwfl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/fuzz/fuzzcfi.h"
#include "harness/case/say.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/model/files.h"
#include "unwinders/view.h"

#include "harness/fuzz/fuzzcfi_int.h"
#include "juerr.h"

double fz_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool fz_past_deadline(const struct fz_ctx *x)
{
	return x->deadline > 0 && fz_now() >= x->deadline;
}

void fz_clean_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char p[512];
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	closedir(d);
}

/* One case, alone, through the batch capture (a child of its own, the
 * samples in memory) and the replay: the minimizer's and the final runs.
 * 0; -errno the case did not run (err); -2 the text is no valid case (a
 * fuzz-cfi bug).  The evaluation captures many cases per child (eval_chunk). */
int fz_run_text(struct fz_ctx *x, const char *text, const struct hx_opts *o, struct hx_case_res *res,
		struct ju_err *err)
{
	struct hx_case *c = calloc(1, sizeof(*c));
	if (!c) {
		return ju_errf(err, ENOMEM, 0, "out of memory");
	}
	int rc = -EINVAL;
	if (hx_case_parse(c, "fuzz-cfi.case", text, strlen(text), err->msg, sizeof(err->msg))) {
		hx_case_free(c);
		free(c);
		return -2;
	}
	struct hx_batch_case one = { .c = c, .path = "fuzz-cfi.case", .dumpdir = x->dir };
	struct hx_samples s;
	/* a child of its own: its pid differs from the last run's */
	uw_libdw_forget();
	if (!hx_capture_samples(&one, 1, &s, NULL, err)) {
		struct hx_opts oo = *o;
		oo.jitted_dir = x->dir;
		oo.parsed = o->observe ? NULL : c;     /* parsed as the replay would */
		if (s.ngroups != 1)
			ju_errf(err, EINVAL, 0, "fuzz-cfi.case: %zu case groups captured", s.ngroups);
		else if (!hx_replay_group(&s.groups[0], s.elf_mach, &oo, res, err->msg, sizeof(err->msg)))
			rc = 0;
		hx_samples_free(&s);
	}
	fz_clean_dir(x->dir);
	hx_case_free(c);
	free(c);
	return rc;
}

/* ---- classification ---- */

static bool is_dwarf(const struct hx_uw_res *u)
{
	return u->uw && u->uw->ref == UW_REF_ORACLE;
}

/* frames that count: a zero return address ends a chain (the judge's rule) */
static int chain_len(const struct uw_result *r)
{
	int n = r->n;
	while (n > 0 && !r->addr[n - 1])
		n--;
	return n;
}

/* Two chains down to the anchor's return address (truth's last frame): do
 * they name different frames at one depth?  (One stopping sooner is the
 * other finding, not-ok, or perf's dump size.) */
static bool contradict(const struct hx_sample_res *sr, const struct uw_result *a, const struct uw_result *b)
{
	uint64_t anchor = sr->nt ? sr->truth[sr->nt - 1] : 0;
	int na = chain_len(a), nb = chain_len(b);
	for (int i = 0; i < na && i < nb; i++) {
		if (a->addr[i] != b->addr[i])
			return true;
		if (a->addr[i] == anchor)
			return false;
	}
	return false;
}

/* Under CFI that departs from the truth, what the CFI says reaches up to the
 * oracle's first frame off the truth; past it every reader reads junk.  Does
 * u read the same frames as the oracle up to there? */
static bool reads_as_oracle(const struct hx_uw_res *u, const struct hx_uw_res *o)
{
	int no = chain_len(&o->r), nu = chain_len(&u->r);
	int lim = o->j.diverge_got >= 0 && o->j.diverge_got + 1 < no ? o->j.diverge_got + 1 : no;
	return u->faithful || hx_chain_prefix_eq(u->r.addr, nu, o->r.addr, no, lim);
}

__attribute__((format(printf, 2, 3)))
static void add_sig(struct fz_class *k, const char *fmt, ...)
{
	char s[FZ_SIG_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	for (int i = 0; i < k->nsig; i++)
		if (!strcmp(k->sig[i], s))
			return;
	if (k->nsig < FZ_MAX_SIG)
		snprintf(k->sig[k->nsig++], FZ_SIG_LEN, "%s", s);
}

/* An unwinder's stop reason without its addresses and numbers (so one cause
 * is one signature): "unw_step at X: bad register number (-N)". */
static void why_key(const struct uw_result *r, char *buf, size_t len)
{
	const char *w = r->why[0] ? r->why : uw_stop_name(r->stop);
	size_t o = 0;
	for (size_t i = 0; w[i] && o + 1 < len;) {
		if (w[i] == '0' && w[i + 1] == 'x') {
			buf[o++] = 'X';
			for (i += 2; isxdigit((unsigned char)w[i]); i++)
				;
		} else if (isdigit((unsigned char)w[i])) {
			buf[o++] = 'N';
			while (isdigit((unsigned char)w[i]))
				i++;
		} else {
			buf[o++] = w[i++];
		}
	}
	buf[o] = 0;
}

static const struct hx_uw_res *oracle_of(const struct hx_sample_res *sr)
{
	for (int u = 0; u < sr->nuw; u++)
		if (sr->uw[u].uw && sr->uw[u].uw->ref == UW_REF_TRUTH)
			return &sr->uw[u];
	return NULL;
}

/* The findings of one sample (docs/fuzzing.md "fuzz-cfi": what counts). */
static void classify_sample(bool mutate, const struct hx_sample_res *sr, struct fz_class *k)
{
	const struct hx_uw_res *o = oracle_of(sr);
	bool consistent = !o || o->consistent, own = false;
	if (!consistent) {
		k->any_inconsistent = true;
		if (!mutate)
			add_sig(k, "inconsistent:oracle");
	}
	for (int u = 0; u < sr->nuw; u++) {
		const struct hx_uw_res *ur = &sr->uw[u];
		char why[48];
		why_key(&ur->r, why, sizeof(why));
		if (is_dwarf(ur)) {
			if (consistent && ur->j.v != HX_OK && !(ur->has_faithful && ur->faithful)) {
				add_sig(k, "not-ok:%s:%s", ur->name, why);
				own = true;
			} else if (consistent && ur->j.v == HX_OK && ur->fallback) {
				add_sig(k, "fallback:%s", ur->name);
				own = true;
			} else if (!consistent && o && !reads_as_oracle(ur, o)) {
				add_sig(k, "unfaithful:%s:%s", ur->name, why);
			}
		} else if (ur->uw && ur->uw->ref == UW_REF_FP && ur->has_faithful && !ur->faithful) {
			add_sig(k, "unfaithful:%s", ur->name);
		}
	}
	if (own || !consistent)
		return;    /* a DWARF unwinder's own finding here says more than the disagreement */
	for (int a = 0; a < sr->nuw; a++)
		for (int b = a + 1; b < sr->nuw; b++)
			if (is_dwarf(&sr->uw[a]) && is_dwarf(&sr->uw[b]) &&
			    contradict(sr, &sr->uw[a].r, &sr->uw[b].r))
				add_sig(k, "disagree:%s/%s", sr->uw[a].name, sr->uw[b].name);
}

void fz_classify(const struct fz_ctx *x, const struct hx_case_res *r, struct fz_class *k)
{
	memset(k, 0, sizeof(*k));
	if (r->problem[0])
		snprintf(k->problem, sizeof(k->problem), "%s", r->problem);
	for (size_t i = 0; i < r->nsamples; i++)
		classify_sample(x->o.mutate, &r->samples[i], k);
}

static bool has_sig(const struct fz_class *k, const char *sig)
{
	for (int i = 0; i < k->nsig; i++)
		if (!strcmp(k->sig[i], sig))
			return true;
	return false;
}

/* The samples (their `where`) that show sig, comma-separated, each with the
 * verdict of the unwinder sig names. */
static void sig_wheres(const struct fz_ctx *x, const struct hx_case_res *r, const char *sig, char *buf, size_t len)
{
	char who[40] = "";
	sscanf(sig, "%*[^:]:%39[^:/]", who);
	size_t off = 0;
	int n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < r->nsamples && off < len; i++) {
		const struct hx_sample_res *sr = &r->samples[i];
		struct fz_class k = { .nsig = 0 };
		classify_sample(x->o.mutate, sr, &k);
		if (!has_sig(&k, sig))
			continue;
		if (n++ == 8) {
			off += (size_t)snprintf(buf + off, len - off, ", ...");
			break;
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", sr->where);
		for (int u = 0; u < sr->nuw && off < len; u++)
			if (!strcmp(sr->uw[u].name, who) && sr->uw[u].uw && sr->uw[u].uw->ref != UW_REF_TRUTH)
				off += (size_t)snprintf(buf + off, len - off, " (%s%s)", hx_verdict_name(sr->uw[u].j.v),
							sr->uw[u].fallback ? " fallback" : "");
	}
}

/* ---- building and testing a generated case ---- */

char *fz_text_buf(struct fz_ctx *x)
{
	return x->scr->text;
}

/* Runs g (a placeholder [expect]) through the fuzz unwinders. 0, or -errno
 * (it does not build or run; err says why), -2 (not a valid case). */
static int run_gen(struct fz_ctx *x, struct hx_fz_gen *g, struct hx_case_res *res, struct fz_class *k,
		   uint64_t *features, struct ju_err *err)
{
	char *text = fz_text_buf(x);
	memset(res, 0, sizeof(*res));
	if (hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, features, err))
		return -EINVAL;
	int rc = fz_run_text(x, text, &x->fuzz_uw, res, err);
	if (rc)
		return rc;
	fz_classify(x, res, k);
	return 0;
}

static bool sig_is_inconsistency(const char *sig)
{
	return !strncmp(sig, "inconsistent:", 13);
}

/* Does candidate g still show sig (and, generating, stay consistent elsewhere)? */
static bool still_found(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, int *runs)
{
	struct ju_err err;
	char why[160];
	if (hx_fz_valid(g, why, sizeof(why)))
		return false;
	struct hx_case_res res;
	struct fz_class k;
	(*runs)++;
	if (run_gen(x, g, &res, &k, NULL, &err)) {
		hx_case_res_free(&res);
		return false;
	}
	bool found = has_sig(&k, sig) && !k.problem[0] &&
		     (x->o.mutate || sig_is_inconsistency(sig) || !k.any_inconsistent);
	hx_case_res_free(&res);
	if (getenv("JU_FUZZ_DEBUG"))
		ju_say(JU_SAY_DEBUG, "fuzz-cfi", "case %llu, run %d: %zu ops, %zu deletions: %s",
			(unsigned long long)g->index, *runs, g->nops, g->ndel, found ? "still found" : "gone");
	return found;
}

/* ---- minimization ---- */

struct min_state {
	struct fz_ctx *x;
	const char *sig;
	int runs, budget;
};

static bool budget_left(const struct min_state *m)
{
	return m->runs < m->budget && !fz_past_deadline(m->x) && (!m->x->task_deadline || fz_now() < m->x->task_deadline);
}

/* b undoes what a did (removing both keeps the stack balanced) */
static bool inverse_of(const struct tr_op *a, const struct tr_op *b)
{
	switch (a->kind) {
	case TR_OP_PUSH_FP:
		return b->kind == TR_OP_POP_FP || b->kind == TR_OP_LEAVE || b->kind == TR_OP_SET_FP;
	case TR_OP_SAVE_REG:
		return b->kind == TR_OP_RESTORE_REG && b->n == a->n;
	case TR_OP_ALLOC:
		return b->kind == TR_OP_FREE && b->n == a->n;
	default:
		return false;
	}
}

/* g without the ops marked in drop; a dropped jump takes its skipped block
 * along, a dropped op its row of choices and the deletions in its row.
 * false when the mutated instruction's row goes. */
static bool without(const struct hx_fz_gen *g, const bool *drop, struct hx_fz_gen *out)
{
	int16_t map[HX_FZ_MAX_OPS];
	*out = *g;
	out->nops = 0;
	memset(out->tape.n, 0, sizeof(out->tape.n));
	bool jump_dropped = false;
	for (size_t i = 0; i < g->nops; i++) {
		if (g->place[i] != HX_FZ_DEAD)
			jump_dropped = g->place[i] == HX_FZ_JUMP && drop[i];
		map[i] = -1;
		if (drop[i] || (g->place[i] == HX_FZ_DEAD && jump_dropped))
			continue;
		map[i] = (int16_t)out->nops;
		out->ops[out->nops] = g->ops[i];
		out->place[out->nops] = g->place[i];
		memcpy(out->tape.v[out->nops], g->tape.v[i], sizeof(g->tape.v[0]));
		out->tape.n[out->nops++] = g->tape.n[i];
	}
	out->ndel = 0;
	for (size_t d = 0; d < g->ndel; d++)
		if (g->del[d].row >= 0 && (size_t)g->del[d].row < g->nops && map[g->del[d].row] >= 0)
			out->del[out->ndel++] = (struct hx_fz_ref){ map[g->del[d].row], g->del[d].k };
	if (g->mut.kind != HX_FZ_MUT_NONE && g->mut.placed && g->mut.at.row >= 0) {
		if ((size_t)g->mut.at.row >= g->nops || map[g->mut.at.row] < 0)
			return false;
		out->mut.at.row = map[g->mut.at.row];
	}
	return true;
}

/* two frees in a row as one (so an alloc and its frees can go as a pair) */
static bool merge_frees(struct min_state *m, struct hx_fz_gen *g)
{
	struct hx_fz_gen *c = &m->x->scr->merge;
	bool any = false;
	for (size_t i = 0; i + 1 < g->nops && budget_left(m);) {
		bool drop[HX_FZ_MAX_OPS] = { false };
		drop[i + 1] = true;
		if (g->ops[i].kind != TR_OP_FREE || g->ops[i + 1].kind != TR_OP_FREE || g->place[i] != g->place[i + 1] ||
		    !without(g, drop, c)) {
			i++;
			continue;
		}
		c->ops[i].n = g->ops[i].n + g->ops[i + 1].n;
		if (still_found(m->x, c, m->sig, &m->runs)) {
			*g = *c;
			any = true;
		} else {
			i++;
		}
	}
	return any;
}

/* fewest ops: each op alone, then with every later op that undoes it */
static bool min_ops(struct min_state *m, struct hx_fz_gen *g)
{
	struct hx_fz_gen *c = &m->x->scr->ops;
	bool any = merge_frees(m, g);
	for (size_t i = 0; i < g->nops && budget_left(m);) {
		bool took = false;
		for (int pass = 0; pass < 2 && !took && budget_left(m); pass++) {
			bool drop[HX_FZ_MAX_OPS] = { false };
			drop[i] = true;
			int extra = 0;
			for (size_t j = i + 1; pass == 1 && j < g->nops; j++)
				if (inverse_of(&g->ops[i], &g->ops[j]))
					extra += drop[j] = true;
			if (pass == 1 && !extra)
				continue;
			if (without(g, drop, c) && c->nops && still_found(m->x, c, m->sig, &m->runs)) {
				*g = *c;
				took = any = true;
			}
		}
		if (!took)
			i++;
	}
	return any;
}

/* the unwinding options and the depth back to their defaults, one at a time */
static bool min_unwind(struct min_state *m, struct hx_fz_gen *g)
{
	struct hx_fz_gen *c = &m->x->scr->unw;
	struct tr_unwind_opts d;
	tr_unwind_opts_default(&d);
	bool any = false;
	for (int f = 0; f < 9 && budget_left(m); f++) {
		*c = *g;
		struct tr_unwind_opts *u = &c->unw;
		switch (f) {
		case 0: c->depth = 1; break;
		case 1: memcpy(u->cie_aug, d.cie_aug, sizeof(u->cie_aug)); u->lsda_enc = d.lsda_enc; break;
		case 2: u->cie_version = d.cie_version; break;
		case 3: u->fde_enc = d.fde_enc; break;
		case 4: u->lsda_enc = d.lsda_enc; break;
		case 5: u->hdr = d.hdr; break;
		case 6: u->table_enc = d.table_enc; u->hdr_table = d.hdr_table; break;
		case 7: u->terminator = d.terminator; break;
		default: u->eh_unaligned = d.eh_unaligned; break;
		}
		if (!memcmp(&c->unw, &g->unw, sizeof(c->unw)) && c->depth == g->depth)
			continue;
		if (still_found(m->x, c, m->sig, &m->runs)) {
			*g = *c;
			any = true;
		}
	}
	return any;
}

/* the plainest encoding: choices zeroed, all rows first, then halves of the
 * rows, then each row, then each choice */
static bool min_tape(struct min_state *m, struct hx_fz_gen *g)
{
	struct hx_fz_gen *c = &m->x->scr->tape;
	bool any = false;
	size_t rows = g->nops;
	for (size_t block = rows; block >= 1 && budget_left(m); block /= 2) {
		for (size_t s = 0; s < rows && budget_left(m); s += block) {
			*c = *g;
			bool nz = false;
			for (size_t r = s; r < s + block && r < rows; r++)
				for (size_t k = 0; k < HX_FZ_ROW_CHOICES; k++) {
					nz |= c->tape.v[r][k] != 0;
					c->tape.v[r][k] = 0;
				}
			if (nz && still_found(m->x, c, m->sig, &m->runs)) {
				*g = *c;
				any = true;
			}
		}
		if (block == 1)
			break;
	}
	for (size_t r = 0; r < rows && budget_left(m); r++)
		for (size_t k = 0; k < g->tape.n[r] && budget_left(m); k++) {
			if (!g->tape.v[r][k])
				continue;
			*c = *g;
			c->tape.v[r][k] = 0;
			if (still_found(m->x, c, m->sig, &m->runs)) {
				*g = *c;
				any = true;
			}
		}
	return any;
}

/* fewest CFA instructions (mutants, and inconsistencies): blocks of them left
 * out, halves first, then single ones */
static bool min_insns(struct min_state *m, struct hx_fz_gen *g)
{
	struct hx_fz_gen *c = &m->x->scr->insns;
	struct hx_fz_prog *p = &m->x->scr->insns_prog;
	struct ju_err err;
	bool any = false;
	if (hx_fz_program(g, true, p, &err))
		return false;
	size_t all = p->n;
	for (size_t block = all; block >= 1 && budget_left(m); block /= 2) {
		for (size_t s = 0; s < all && budget_left(m); s += block) {
			*c = *g;
			for (size_t k = s; k < s + block && k < all && c->ndel < HX_FZ_MAX_DEL; k++) {
				bool gone = false;
				for (size_t d = 0; d < c->ndel; d++)
					gone |= c->del[d].row == p->insn[k].ref.row && c->del[d].k == p->insn[k].ref.k;
				if (!gone)
					c->del[c->ndel++] = p->insn[k].ref;
			}
			if (c->ndel > g->ndel && still_found(m->x, c, m->sig, &m->runs)) {
				*g = *c;
				any = true;
			}
		}
		if (block == 1)
			break;
	}
	return any;
}


void fz_minimize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr)
{
	struct hx_fz_prog *p = &x->scr->min_prog;
	struct min_state m = { x, sig, 0, x->o.min_runs };
	struct ju_err err;
	p->n = 0;
	hx_fz_program(g, false, p, &err);
	mr->ops0 = (uint32_t)g->nops;
	mr->insns0 = (uint32_t)p->n;
	g->tape.fresh = false;     /* past the tape's end: the plain choice */
	if (!still_found(x, g, sig, &m.runs)) {
		mr->status = 1;
		snprintf(mr->note, sizeof(mr->note), "not reproduced by a second run");
		mr->runs = (uint32_t)m.runs;
		return;
	}
	for (int round = 0; round < 8 && budget_left(&m); round++) {
		bool changed = min_ops(&m, g);
		changed |= min_unwind(&m, g);
		changed |= min_tape(&m, g);
		/* generating, a left-out instruction makes an inconsistency of its own */
		if (x->o.mutate)
			changed |= min_insns(&m, g);
		if (!changed)
			break;
	}
	p->n = 0;
	hx_fz_program(g, false, p, &err);
	mr->ops1 = (uint32_t)g->nops;
	mr->insns1 = (uint32_t)p->n;
	mr->runs = (uint32_t)m.runs;
	if (!budget_left(&m))
		snprintf(mr->note, sizeof(mr->note), "minimization stopped by its budget (%d runs or --time)", x->o.min_runs);
}

/* ---- the written case ---- */

/* A sample's verdict as an [expect] word. */
static void verdict_word(const struct hx_uw_res *ur, char *buf, size_t len)
{
	if (ur->uw && ur->uw->ref == UW_REF_TRUTH)
		snprintf(buf, len, "%s", ur->consistent ? "consistent" : "inconsistent");
	else
		snprintf(buf, len, "%s%s", hx_verdict_name(ur->j.v), ur->fallback ? " fallback" : "");
}

/* One unwinder's [expect] line from what it did: its most frequent verdict,
 * the others as exceptions.  0, or -1 when it does not fit a case line. */
static int expect_line(const struct hx_case_res *r, const char *name, int depth, char *buf, size_t len)
{
	char words[8][24];
	int count[8] = { 0 }, nw = 0;
	for (size_t i = 0; i < r->nsamples; i++)
		for (int u = 0; u < r->samples[i].nuw; u++) {
			if (strcmp(r->samples[i].uw[u].name, name))
				continue;
			char w[24];
			verdict_word(&r->samples[i].uw[u], w, sizeof(w));
			int k = 0;
			while (k < nw && strcmp(words[k], w))
				k++;
			if (k == nw && nw == 8)
				return -EINVAL;
			if (k == nw)
				snprintf(words[nw++], sizeof(words[0]), "%s", w);
			count[k]++;
		}
	if (!nw)
		return -EINVAL;
	int def = 0;
	for (int k = 1; k < nw; k++)
		if (count[k] > count[def])
			def = k;
	const struct uw_unwinder *uw = hx_column_by_name(name);
	size_t off = (size_t)snprintf(buf, len, "%s%s = %s", uw && uw->probe ? "?" : "", name, words[def]);
	for (int k = 0; k < nw && off < len; k++) {
		if (k == def)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "; %s at ", words[k]);
		int items = 0;
		for (size_t i = 0; i < r->nsamples && off < len; i++)
			for (int u = 0; u < r->samples[i].nuw; u++) {
				char w[24];
				const struct hx_sample_res *sr = &r->samples[i];
				if (strcmp(sr->uw[u].name, name))
					continue;
				verdict_word(&sr->uw[u], w, sizeof(w));
				if (strcmp(w, words[k]))
					continue;
				if (items == HX_MAX_ITEMS)
					return -EINVAL;
				if (depth == 1 && sr->offset >= 0)
					off += (size_t)snprintf(buf + off, len - off, "%s%d", items ? "," : "", sr->offset);
				else
					off += (size_t)snprintf(buf + off, len - off, "%s%s", items ? "," : "", sr->where);
				items++;
			}
	}
	if (off + 2 >= len || nw > HX_MAX_EXC)
		return -EINVAL;
	snprintf(buf + off, len - off, "\n");
	return 0;
}

int fz_observed_expect(const struct fz_ctx *x, const struct hx_case_res *r, int depth, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int u = 0; u < x->final_uw.nuw; u++) {
		if (expect_line(r, x->final_uw.unwinders[u], depth, buf + off, len - off))
			return -EINVAL;
		off += strlen(buf + off);
	}
	return 0;
}

void fz_lib_versions(char *buf, size_t len)
{
	const char *dw = dwfl_version(NULL);
	snprintf(buf, len, "libunwind %d.%d.%d, elfutils %s", UNW_VERSION_MAJOR, UNW_VERSION_MINOR,
		 UNW_VERSION_EXTRA, dw ? dw : "?");
}

/* The case's about: what was found where, under which libraries, minimized how far. */
static void describe(const struct fz_ctx *x, const struct hx_fz_gen *g, const char *sig, const char *wheres,
		     const struct min_result *mr, char *buf, size_t len)
{
	char kind[24] = "", a[40] = "", b[40] = "", libs[96];
	const struct uw_unwinder *ua;
	sscanf(sig, "%23[^:]:%39[^:/]%*[:/]%39s", kind, a, b);
	fz_lib_versions(libs, sizeof(libs));
	size_t off = (size_t)snprintf(buf, len, "Found by jitunwind fuzz-cfi (seed %llu, case %llu%s; %s): ",
				      (unsigned long long)g->seed, (unsigned long long)g->index,
				      x->o.mutate ? ", --mutate" : "", libs);
	if (!strcmp(kind, "not-ok"))
		off += (size_t)snprintf(buf + off, len - off, "%s does not find the true chain at %s, where the emitted CFI is consistent with the truth.", a, wheres);
	else if (!strcmp(kind, "fallback"))
		off += (size_t)snprintf(buf + off, len - off, "%s finds the chain at %s only by its fallback, although the emitted CFI is consistent with the truth.", a, wheres);
	else if (!strcmp(kind, "disagree"))
		off += (size_t)snprintf(buf + off, len - off, "%s and %s give different chains at %s, where the emitted CFI is consistent with the truth.", a, b, wheres);
	else if (!strcmp(kind, "unfaithful") && (ua = hx_column_by_name(a)) && ua->ref == UW_REF_FP)
		off += (size_t)snprintf(buf + off, len - off, "fp's chain at %s is not what the frame-pointer convention predicts from the truth rows (the faithful check of fp).", wheres);
	else if (!strcmp(kind, "unfaithful"))
		off += (size_t)snprintf(buf + off, len - off, "%s does not read the emitted CFI as the oracle does at %s (up to the first frame where the CFI departs from the truth).", a, wheres);
	else
		off += (size_t)snprintf(buf + off, len - off, "the emitted CFI is inconsistent with the truth at %s although the generator meant to encode the truth rows: a bug of jitunwind's generator, encoder or oracle%s.",
					wheres, g->plant ? " (here JU_FUZZ_PLANT's deliberately wrong CFA offset: the negative control)" : "");
	const char *why = strchr(sig, ':') ? strchr(strchr(sig, ':') + 1, ':') : NULL;
	if (why && off < len && (!strcmp(kind, "not-ok") || !strcmp(kind, "unfaithful")))
		off += (size_t)snprintf(buf + off, len - off, " Its stop: %s.", why + 1);
	if (off < len)
		snprintf(buf + off, len - off, " Minimized from %u ops and %u CFA instructions to %u and %u.",
			 mr->ops0, mr->insns0, mr->ops1, mr->insns1);
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

/* The reproducer's name: a hash of its [code], [unwind] and [sample]. */
void fz_case_name(const char *text, char *name, size_t len)
{
	const char *a = strstr(text, "\n[code]"), *b = strstr(text, "\n[expect]");
	if (!a || !b || b < a)
		a = b = text;
	snprintf(name, len, "fuzz-%012llx", (unsigned long long)(fnv1a(a, (size_t)(b - a)) & 0xffffffffffffull));
}

/* Runs g as `jitunwind run` would, writes its observed [expect] and checks the
 * result passes a second run.  0 (text set), or -1 with mr->status/note set. */
int fz_finalize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr,
		char *text, size_t cap)
{
	char *expect = x->scr->expect, *about = x->scr->about, *wheres = x->scr->wheres, *name = x->scr->name;
	struct hx_case_res res;
	struct ju_err err;
	memset(&res, 0, sizeof(res));
	if (hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, cap, NULL, &err) ||
	    fz_run_text(x, text, &x->final_uw, &res, &err)) {
		hx_case_res_free(&res);
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "final run: %s", err.msg);
		return -EINVAL;
	}
	int rc = fz_observed_expect(x, &res, g->depth, expect, sizeof(x->scr->expect));
	sig_wheres(x, &res, sig, wheres, sizeof(x->scr->wheres));
	hx_case_res_free(&res);
	if (rc) {
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "the observed verdicts do not fit an [expect] section");
		return -EINVAL;
	}
	describe(x, g, sig, wheres[0] ? wheres : "no sample of the final run", mr, about, sizeof(x->scr->about));
	fz_case_name(text, name, sizeof(x->scr->name));
	if (hx_fz_case_text(g, name, about, expect, text, cap, NULL, &err)) {
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "%s", err.msg);
		return -EINVAL;
	}
	memset(&res, 0, sizeof(res));
	rc = fz_run_text(x, text, &x->final_uw, &res, &err);
	if (rc || !res.pass) {
		mr->status = 2;
		snprintf(mr->note, sizeof(mr->note), "a second run does not meet the observed [expect]%s%s",
			 rc ? ": " : "", rc ? err.msg : "");
	}
	hx_case_res_free(&res);
	return 0;
}

