/* `jitunwind fuzz-cfi`: generate, run, classify, minimize, write (README
 * "fuzz-cfi").  Cases are drawn from (seed, index) and examined in batches:
 * the workers evaluate a batch, the parent picks in index order which
 * findings to minimize, the workers minimize them, the parent writes the
 * results in task order.  So a run with --cases N writes the same files
 * whatever --jobs is. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
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
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/model/files.h"
#include "unwinders/view.h"

#define FZ_MAX_SIG 8
#define FZ_SIG_LEN 64
#define FZ_TEXT_MAX (48 << 10)
#define FZ_MAX_SIGS_RUN 256    /* distinct signatures one run tracks */
#define FZ_MAX_TASKS 1024      /* minimizations one run queues */
#define FZ_CHUNK 256            /* generated cases one capture child takes (batch capture) */
#define FZ_BATCH_CHUNKS 16      /* chunks per batch: the workers live for one batch */
#define FZ_EVAL_SHARE 0.6      /* of --time: evaluating; the rest: minimizing what was found */

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
	const char *arches;
};

struct fz_ctx {
	struct fz_opts o;
	const struct tr_arch *arch;
	char dir[256];             /* this process's scratch directory (capture files) */
	struct hx_opts fuzz_uw;    /* the arch's unwinders, every machine's */
	char fuzz_names[256];
	struct hx_opts final_uw;   /* what `jitunwind run` selects here (the perf column where perf works) */
	char final_names[256];
	double t0, deadline;
	bool plant;
	uint64_t batch0;           /* the batch being evaluated starts at this index */
	volatile size_t *next_chunk; /* shared with the workers: the batch's next chunk to take */
	const struct task *tasks;  /* the minimizations */
	size_t ntasks;
	double task_deadline;      /* a worker's share of the time for its current task (0: none) */
};

struct task {
	uint64_t index;
	char sig[64];
};

/* What one case's run says. */
struct fz_class {
	char sig[FZ_MAX_SIG][FZ_SIG_LEN];
	int nsig;
	bool any_inconsistent;
	char problem[200];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool past_deadline(const struct fz_ctx *x)
{
	return x->deadline > 0 && now() >= x->deadline;
}

static void clean_dir(const char *dir)
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
 * 0; -1 the case did not run (err); -2 the text is no valid case (a
 * fuzz-cfi bug).  The evaluation captures many cases per child (eval_chunk). */
static int run_text(struct fz_ctx *x, const char *text, const struct hx_opts *o, struct hx_case_res *res,
		    char *err, size_t errlen)
{
	struct hx_case *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = -1;
	if (hx_case_parse(c, "fuzz-cfi.case", text, strlen(text), err, errlen)) {
		hx_case_free(c);
		free(c);
		return -2;
	}
	struct hx_batch_case one = { .c = c, .path = "fuzz-cfi.case", .dumpdir = x->dir };
	struct hx_samples s;
	/* a child of its own: its pid differs from the last run's */
	uw_libdw_forget();
	if (!hx_capture_samples(&one, 1, &s, NULL, err, errlen)) {
		struct hx_opts oo = *o;
		oo.jitted_dir = x->dir;
		oo.parsed = o->observe ? NULL : c;     /* parsed as the replay would */
		if (s.ngroups != 1)
			snprintf(err, errlen, "fuzz-cfi.case: %zu case groups captured", s.ngroups);
		else if (!hx_replay_group(&s.groups[0], s.elf_mach, &oo, res, err, errlen))
			rc = 0;
		hx_samples_free(&s);
	}
	clean_dir(x->dir);
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

/* The findings of one sample (README "fuzz-cfi": what counts). */
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

static void classify(const struct fz_ctx *x, const struct hx_case_res *r, struct fz_class *k)
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

static char *text_buf(void)
{
	static char buf[FZ_TEXT_MAX];
	return buf;
}

/* Runs g (a placeholder [expect]) through the fuzz unwinders. 0, or -1
 * (it does not build or run; err says why), -2 (not a valid case). */
static int run_gen(struct fz_ctx *x, struct hx_fz_gen *g, struct hx_case_res *res, struct fz_class *k,
		   uint64_t *features, char *err, size_t errlen)
{
	char *text = text_buf();
	memset(res, 0, sizeof(*res));
	if (hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, features, err, errlen))
		return -1;
	int rc = run_text(x, text, &x->fuzz_uw, res, err, errlen);
	if (rc)
		return rc;
	classify(x, res, k);
	return 0;
}

static bool sig_is_inconsistency(const char *sig)
{
	return !strncmp(sig, "inconsistent:", 13);
}

/* Does candidate g still show sig (and, generating, stay consistent elsewhere)? */
static bool still_found(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, int *runs)
{
	char why[160], err[512];
	if (hx_fz_valid(g, why, sizeof(why)))
		return false;
	struct hx_case_res res;
	struct fz_class k;
	(*runs)++;
	if (run_gen(x, g, &res, &k, NULL, err, sizeof(err))) {
		hx_case_res_free(&res);
		return false;
	}
	bool found = has_sig(&k, sig) && !k.problem[0] &&
		     (x->o.mutate || sig_is_inconsistency(sig) || !k.any_inconsistent);
	hx_case_res_free(&res);
	if (getenv("JU_FUZZ_DEBUG"))
		fprintf(stderr, "fuzz-cfi: case %llu, run %d: %zu ops, %zu deletions: %s\n",
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
	return m->runs < m->budget && !past_deadline(m->x) && (!m->x->task_deadline || now() < m->x->task_deadline);
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
	static struct hx_fz_gen c;
	bool any = false;
	for (size_t i = 0; i + 1 < g->nops && budget_left(m);) {
		bool drop[HX_FZ_MAX_OPS] = { false };
		drop[i + 1] = true;
		if (g->ops[i].kind != TR_OP_FREE || g->ops[i + 1].kind != TR_OP_FREE || g->place[i] != g->place[i + 1] ||
		    !without(g, drop, &c)) {
			i++;
			continue;
		}
		c.ops[i].n = g->ops[i].n + g->ops[i + 1].n;
		if (still_found(m->x, &c, m->sig, &m->runs)) {
			*g = c;
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
	static struct hx_fz_gen c;
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
			if (without(g, drop, &c) && c.nops && still_found(m->x, &c, m->sig, &m->runs)) {
				*g = c;
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
	static struct hx_fz_gen c;
	struct tr_unwind_opts d;
	tr_unwind_opts_default(&d);
	bool any = false;
	for (int f = 0; f < 9 && budget_left(m); f++) {
		c = *g;
		struct tr_unwind_opts *u = &c.unw;
		switch (f) {
		case 0: c.depth = 1; break;
		case 1: memcpy(u->cie_aug, d.cie_aug, sizeof(u->cie_aug)); u->lsda_enc = d.lsda_enc; break;
		case 2: u->cie_version = d.cie_version; break;
		case 3: u->fde_enc = d.fde_enc; break;
		case 4: u->lsda_enc = d.lsda_enc; break;
		case 5: u->hdr = d.hdr; break;
		case 6: u->table_enc = d.table_enc; u->hdr_table = d.hdr_table; break;
		case 7: u->terminator = d.terminator; break;
		default: u->eh_unaligned = d.eh_unaligned; break;
		}
		if (!memcmp(&c.unw, &g->unw, sizeof(c.unw)) && c.depth == g->depth)
			continue;
		if (still_found(m->x, &c, m->sig, &m->runs)) {
			*g = c;
			any = true;
		}
	}
	return any;
}

/* the plainest encoding: choices zeroed, all rows first, then halves of the
 * rows, then each row, then each choice */
static bool min_tape(struct min_state *m, struct hx_fz_gen *g)
{
	static struct hx_fz_gen c;
	bool any = false;
	size_t rows = g->nops;
	for (size_t block = rows; block >= 1 && budget_left(m); block /= 2) {
		for (size_t s = 0; s < rows && budget_left(m); s += block) {
			c = *g;
			bool nz = false;
			for (size_t r = s; r < s + block && r < rows; r++)
				for (size_t k = 0; k < HX_FZ_ROW_CHOICES; k++) {
					nz |= c.tape.v[r][k] != 0;
					c.tape.v[r][k] = 0;
				}
			if (nz && still_found(m->x, &c, m->sig, &m->runs)) {
				*g = c;
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
			c = *g;
			c.tape.v[r][k] = 0;
			if (still_found(m->x, &c, m->sig, &m->runs)) {
				*g = c;
				any = true;
			}
		}
	return any;
}

/* fewest CFA instructions (mutants, and inconsistencies): blocks of them left
 * out, halves first, then single ones */
static bool min_insns(struct min_state *m, struct hx_fz_gen *g)
{
	static struct hx_fz_gen c;
	static struct hx_fz_prog p;
	char err[256];
	bool any = false;
	if (hx_fz_program(g, true, &p, err, sizeof(err)))
		return false;
	size_t all = p.n;
	for (size_t block = all; block >= 1 && budget_left(m); block /= 2) {
		for (size_t s = 0; s < all && budget_left(m); s += block) {
			c = *g;
			for (size_t k = s; k < s + block && k < all && c.ndel < HX_FZ_MAX_DEL; k++) {
				bool gone = false;
				for (size_t d = 0; d < c.ndel; d++)
					gone |= c.del[d].row == p.insn[k].ref.row && c.del[d].k == p.insn[k].ref.k;
				if (!gone)
					c.del[c.ndel++] = p.insn[k].ref;
			}
			if (c.ndel > g->ndel && still_found(m->x, &c, m->sig, &m->runs)) {
				*g = c;
				any = true;
			}
		}
		if (block == 1)
			break;
	}
	return any;
}

struct min_result {
	uint32_t runs, status;            /* status: 0 written, 1 not reproduced, 2 unstable, 3 failed */
	uint32_t ops0, ops1, insns0, insns1;
	char note[256];
};

static void minimize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr)
{
	static struct hx_fz_prog p;
	struct min_state m = { x, sig, 0, x->o.min_runs };
	char err[256];
	p.n = 0;
	hx_fz_program(g, false, &p, err, sizeof(err));
	mr->ops0 = (uint32_t)g->nops;
	mr->insns0 = (uint32_t)p.n;
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
	p.n = 0;
	hx_fz_program(g, false, &p, err, sizeof(err));
	mr->ops1 = (uint32_t)g->nops;
	mr->insns1 = (uint32_t)p.n;
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
				return -1;
			if (k == nw)
				snprintf(words[nw++], sizeof(words[0]), "%s", w);
			count[k]++;
		}
	if (!nw)
		return -1;
	int def = 0;
	for (int k = 1; k < nw; k++)
		if (count[k] > count[def])
			def = k;
	const struct uw_unwinder *uw = uw_unwinder_by_name(name);
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
					return -1;
				if (depth == 1 && sr->offset >= 0)
					off += (size_t)snprintf(buf + off, len - off, "%s%d", items ? "," : "", sr->offset);
				else
					off += (size_t)snprintf(buf + off, len - off, "%s%s", items ? "," : "", sr->where);
				items++;
			}
	}
	if (off + 2 >= len || nw > HX_MAX_EXC)
		return -1;
	snprintf(buf + off, len - off, "\n");
	return 0;
}

static int observed_expect(const struct fz_ctx *x, const struct hx_case_res *r, int depth, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int u = 0; u < x->final_uw.nuw; u++) {
		if (expect_line(r, x->final_uw.unwinders[u], depth, buf + off, len - off))
			return -1;
		off += strlen(buf + off);
	}
	return 0;
}

static void lib_versions(char *buf, size_t len)
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
	lib_versions(libs, sizeof(libs));
	size_t off = (size_t)snprintf(buf, len, "Found by jitunwind fuzz-cfi (seed %llu, case %llu%s; %s): ",
				      (unsigned long long)g->seed, (unsigned long long)g->index,
				      x->o.mutate ? ", --mutate" : "", libs);
	if (!strcmp(kind, "not-ok"))
		off += (size_t)snprintf(buf + off, len - off, "%s does not find the true chain at %s, where the emitted CFI is consistent with the truth.", a, wheres);
	else if (!strcmp(kind, "fallback"))
		off += (size_t)snprintf(buf + off, len - off, "%s finds the chain at %s only by its fallback, although the emitted CFI is consistent with the truth.", a, wheres);
	else if (!strcmp(kind, "disagree"))
		off += (size_t)snprintf(buf + off, len - off, "%s and %s give different chains at %s, where the emitted CFI is consistent with the truth.", a, b, wheres);
	else if (!strcmp(kind, "unfaithful") && (ua = uw_unwinder_by_name(a)) && ua->ref == UW_REF_FP)
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
static void case_name(const char *text, char *name, size_t len)
{
	const char *a = strstr(text, "\n[code]"), *b = strstr(text, "\n[expect]");
	if (!a || !b || b < a)
		a = b = text;
	snprintf(name, len, "fuzz-%012llx", (unsigned long long)(fnv1a(a, (size_t)(b - a)) & 0xffffffffffffull));
}

/* Runs g as `jitunwind run` would, writes its observed [expect] and checks the
 * result passes a second run.  0 (text set), or -1 with mr->status/note set. */
static int finalize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr,
		    char *text, size_t cap)
{
	static char expect[16 << 10], about[1000], wheres[400], name[32];
	struct hx_case_res res;
	char err[512];
	memset(&res, 0, sizeof(res));
	if (hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, cap, NULL, err, sizeof(err)) ||
	    run_text(x, text, &x->final_uw, &res, err, sizeof(err))) {
		hx_case_res_free(&res);
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "final run: %s", err);
		return -1;
	}
	int rc = observed_expect(x, &res, g->depth, expect, sizeof(expect));
	sig_wheres(x, &res, sig, wheres, sizeof(wheres));
	hx_case_res_free(&res);
	if (rc) {
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "the observed verdicts do not fit an [expect] section");
		return -1;
	}
	describe(x, g, sig, wheres[0] ? wheres : "no sample of the final run", mr, about, sizeof(about));
	case_name(text, name, sizeof(name));
	if (hx_fz_case_text(g, name, about, expect, text, cap, NULL, err, sizeof(err))) {
		mr->status = 3;
		snprintf(mr->note, sizeof(mr->note), "%s", err);
		return -1;
	}
	memset(&res, 0, sizeof(res));
	rc = run_text(x, text, &x->final_uw, &res, err, sizeof(err));
	if (rc || !res.pass) {
		mr->status = 2;
		snprintf(mr->note, sizeof(mr->note), "a second run does not meet the observed [expect]%s%s",
			 rc ? ": " : "", rc ? err : "");
	}
	hx_case_res_free(&res);
	return 0;
}

/* ---- workers: batches of evaluations, then of minimizations ---- */

/* Where an evaluation's time goes, in seconds (README "fuzz-cfi": rate) */
struct fz_times {
	double gen;                /* drawing the case and writing its text */
	double parse;              /* the text through the case parser */
	double capture;            /* its share of its batch's capture (wall of the worker) */
	double capture_cpu;        /* its share of the capture child's CPU */
	double classify;
	struct hx_replay_times rp; /* the replay, by phase and unwinder */
};

struct eval_rec {
	uint64_t index, features;
	struct fz_times t;
	uint32_t nsamples, nsig, flags, pad;
	char aug[8];
	uint8_t fde_enc, pad2[7];
	char sig[FZ_MAX_SIG][FZ_SIG_LEN];
	char problem[200];
};
#define EF_INCONSISTENT 1u    /* the emitted CFI differs from the truth at some sample */
#define EF_ERROR 2u           /* the case did not build or run */

struct min_rec {
	uint64_t index;
	uint32_t task, pad;
	char sig[FZ_SIG_LEN];
	char name[32];
	struct min_result mr;
	uint32_t textlen;
};

static void generate(const struct fz_ctx *x, uint64_t index, struct hx_fz_gen *g)
{
	hx_fz_generate(g, x->arch, x->o.seed, index, x->o.mutate);
	g->plant = x->plant;
}

static void eval_error(struct eval_rec *rec, const char *what, const char *err)
{
	rec->flags |= EF_ERROR;
	snprintf(rec->problem, sizeof(rec->problem), "%s%s", what, err);
}

/* One replayed case's findings into its record. */
static void eval_take(struct fz_ctx *x, struct eval_rec *rec, const struct hx_case_res *res)
{
	struct fz_class k;
	double t0 = now();
	classify(x, res, &k);
	rec->t.classify += now() - t0;
	rec->nsamples = (uint32_t)res->nsamples;
	rec->nsig = (uint32_t)k.nsig;
	memcpy(rec->sig, k.sig, sizeof(rec->sig));
	rec->flags |= k.any_inconsistent ? EF_INCONSISTENT : 0;
	if (k.problem[0])
		eval_error(rec, "", k.problem);
}

/* A worker's batch slot: one generated case, parsed, with its jitdump directory. */
struct fz_slot {
	struct hx_case c;
	bool parsed;
	char label[48];
	char dir[300];
};

/* Draws and parses case idx into slot (its record says what went wrong):
 * true when it is ready for the capture. */
static bool eval_prepare(struct fz_ctx *x, uint64_t idx, struct fz_slot *sl, size_t k, struct eval_rec *rec)
{
	static struct hx_fz_gen g;
	char err[512], *text = text_buf();
	memset(rec, 0, sizeof(*rec));
	rec->index = idx;
	double t0 = now();
	generate(x, idx, &g);
	snprintf(rec->aug, sizeof(rec->aug), "%s", g.unw.cie_aug);
	rec->fde_enc = strchr(g.unw.cie_aug, 'R') ? g.unw.fde_enc : 0;
	int rc = hx_fz_case_text(&g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, &rec->features,
				 err, sizeof(err));
	double t1 = now();
	rec->t.gen = t1 - t0;
	if (rc) {
		eval_error(rec, "", err);
		return false;
	}
	snprintf(sl->label, sizeof(sl->label), "fuzz-cfi-%llu.case", (unsigned long long)idx);
	if (hx_case_parse(&sl->c, sl->label, text, strlen(text), err, sizeof(err))) {
		hx_case_free(&sl->c);
		eval_error(rec, "not a valid case: ", err);
		return false;
	}
	rec->t.parse = now() - t1;
	sl->parsed = true;
	snprintf(sl->dir, sizeof(sl->dir), "%s/c%zu", x->dir, k);
	if (mkdir(sl->dir, 0700) && errno != EEXIST) {
		eval_error(rec, sl->dir, ": cannot create");
		return false;
	}
	return true;
}

/* CPU seconds of the waited-for children (the capture children) */
static double children_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Evaluates cases idx[0..n): all of them captured by one child (the batch
 * capture: a crash ends only its case), then each replayed through the fuzz
 * unwinders and classified; writes their records in order. */
static void eval_chunk(struct fz_ctx *x, const uint64_t *idx, size_t n, FILE *out)
{
	/* The worker's parsed cases, kept from one chunk to the next: 256 of
	 * them are 107 MB, whose pages are dear to meet afresh on this kind of VM
	 * (a calloc per chunk cleared them all; a mapping per chunk faulted them
	 * in again).  A parse never relies on what a slot held before
	 * (hx_case_parse sets every field it reads). */
	static struct fz_slot *slots;
	if (!slots) {
		void *m = mmap(NULL, FZ_CHUNK * sizeof(*slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		slots = m == MAP_FAILED ? NULL : m;
	}
	struct eval_rec *recs = calloc(n, sizeof(*recs));
	struct hx_batch_case *b = calloc(n, sizeof(*b));
	size_t *of = calloc(n, sizeof(*of)), nb = 0;
	char err[512];
	if (!recs || !slots || !b || !of || n > FZ_CHUNK)
		_exit(3);                   /* the parent reports a failed worker */
	for (size_t k = 0; k < n; k++) {
		slots[k].parsed = false;
		slots[k].dir[0] = 0;
	}
	for (size_t k = 0; k < n; k++)
		if (eval_prepare(x, idx[k], &slots[k], k, &recs[k])) {
			b[nb] = (struct hx_batch_case){ &slots[k].c, slots[k].label, slots[k].dir };
			of[nb++] = k;
		}
	struct hx_samples s;
	memset(&s, 0, sizeof(s));
	double t0 = now(), c0 = children_cpu();
	int crc = nb ? hx_capture_samples(b, nb, &s, NULL, err, sizeof(err)) : 0;
	double tc = (now() - t0) / (double)(nb ? nb : 1), cc = (children_cpu() - c0) / (double)(nb ? nb : 1);
	size_t m = 0;
	for (size_t j = 0; !crc && j < s.ngroups; j++) {
		const struct hx_group *gr = &s.groups[j];
		while (m < nb && (!gr->case_path || strcmp(gr->case_path, b[m].path)))
			eval_error(&recs[of[m++]], "", "the batch capture has no group for it");
		if (m == nb)
			break;
		struct eval_rec *rec = &recs[of[m]];
		struct hx_opts o = x->fuzz_uw;
		struct hx_case_res res;
		o.times = &rec->t.rp;
		/* parsed as the replay would parse it (flags 0): not again */
		o.parsed = o.observe ? NULL : &slots[of[m]].c;
		o.jitted_dir = slots[of[m++]].dir;
		if (hx_replay_group(gr, s.elf_mach, &o, &res, err, sizeof(err)))
			eval_error(rec, "", err);
		else
			eval_take(x, rec, &res);
		hx_case_res_free(&res);
	}
	for (; m < nb; m++)
		eval_error(&recs[of[m]], "", crc ? err : "the batch capture has no group for it");
	for (size_t j = 0; j < nb; j++) {
		recs[of[j]].t.capture = tc;
		recs[of[j]].t.capture_cpu = cc;
	}
	if (!crc)
		hx_samples_free(&s);
	fwrite(recs, sizeof(*recs), n, out);
	for (size_t k = 0; k < n; k++) {
		if (slots[k].parsed)
			hx_case_free(&slots[k].c);
		if (slots[k].dir[0]) {
			clean_dir(slots[k].dir);
			rmdir(slots[k].dir);
		}
	}
	free(recs);
	free(b);
	free(of);
}

static void min_one(struct fz_ctx *x, const struct task *t, uint32_t task, FILE *out)
{
	static struct hx_fz_gen g;
	struct min_rec rec;
	char *text = malloc(FZ_TEXT_MAX);
	memset(&rec, 0, sizeof(rec));
	rec.index = t->index;
	rec.task = task;
	snprintf(rec.sig, sizeof(rec.sig), "%s", t->sig);
	generate(x, t->index, &g);
	char err[256];
	uint64_t f;
	/* fill the tape as the evaluation did */
	if (!text || hx_fz_case_text(&g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, &f, err, sizeof(err))) {
		rec.mr.status = 3;
		snprintf(rec.mr.note, sizeof(rec.mr.note), "%s", text ? err : "out of memory");
	} else {
		minimize(x, &g, t->sig, &rec.mr);
		if (!rec.mr.status && !finalize(x, &g, t->sig, &rec.mr, text, FZ_TEXT_MAX)) {
			rec.textlen = (uint32_t)strlen(text);
			case_name(text, rec.name, sizeof(rec.name));
		}
	}
	fwrite(&rec, sizeof(rec), 1, out);
	if (rec.textlen)
		fwrite(text, 1, rec.textlen, out);
	free(text);
}

/* Forks `jobs` workers; worker w runs fn on items w, w + jobs, ... writing to
 * dir/w.res.  0, or -1 when a worker could not start or died. */
static int fan_out(struct fz_ctx *x, size_t nitems, void (*fn)(struct fz_ctx *, size_t, size_t, FILE *),
		   const char *tag)
{
	pid_t pids[64];
	int jobs = x->o.jobs;
	fflush(NULL);
	for (int w = 0; w < jobs; w++) {
		pids[w] = fork();
		if (pids[w] < 0)
			return -1;
		if (pids[w])
			continue;
		char p[320];
		snprintf(p, sizeof(p), "%s/%s%d.res", x->dir, tag, w);
		FILE *out = fopen(p, "wb");
		snprintf(x->dir + strlen(x->dir), sizeof(x->dir) - strlen(x->dir), "/w%d", w);
		if (!out || mkdir(x->dir, 0700))
			_exit(3);
		uw_files_child();          /* the worker's own file cache */
		fn(x, (size_t)w, nitems, out);
		fclose(out);
		clean_dir(x->dir);
		rmdir(x->dir);
		_exit(0);
	}
	int bad = 0;
	for (int w = 0; w < jobs; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad ? -1 : 0;
}

/* ---- the run: batches, statistics, files ---- */

struct sig_stat {
	char sig[FZ_SIG_LEN];
	uint64_t cases, first;
	int tasks;
	char file[96];
	struct min_result mr;
};

struct fz_stats {
	uint64_t cases, samples, errors, inconsistent;
	double eval_secs, eval_cpu;    /* wall; CPU of the workers and their capture children */
	double min_cpu;                /* the minimizations' CPU (workers and children) */
	uint64_t min_runs;
	struct fz_times t;             /* summed over the cases */
	size_t tasks;
	uint64_t feature[FZF__COUNT];
	struct { char aug[8]; uint64_t n; } aug[32];
	int naug;
	struct { uint8_t enc; uint64_t n; } enc[16];
	int nenc;
	struct sig_stat sig[FZ_MAX_SIGS_RUN];
	int nsig;
	uint64_t first_error_index;
	char first_error[200];
	int written, unstable, lost;
};

/* A worker takes the batch's chunks in turn, FZ_CHUNK cases each (one
 * capture child), from a counter the workers share, until the batch or the
 * time is over: a worker that is done early takes more, none waits for the
 * slowest's share; what a case gives does not depend on which worker ran it
 * (the records are put in index order after the batch). */
static void eval_items(struct fz_ctx *x, size_t w, size_t nitems, FILE *out)
{
	(void)w;
	uint64_t idx[FZ_CHUNK];
	while (!past_deadline(x)) {
		size_t start = __atomic_fetch_add(x->next_chunk, 1, __ATOMIC_RELAXED) * FZ_CHUNK;
		if (start >= nitems)
			break;
		size_t n = nitems - start < FZ_CHUNK ? nitems - start : FZ_CHUNK;
		for (size_t i = 0; i < n; i++)
			idx[i] = x->batch0 + start + i;
		eval_chunk(x, idx, n, out);
	}
}

/* A worker's tasks are i, i + jobs, ...: each gets an equal share of the time left. */
static void min_items(struct fz_ctx *x, size_t w, size_t nitems, FILE *out)
{
	for (size_t i = w; i < nitems; i += (size_t)x->o.jobs) {
		size_t mine_left = (x->ntasks - i + (size_t)x->o.jobs - 1) / (size_t)x->o.jobs;
		x->task_deadline = x->deadline > 0 ? now() + (x->deadline - now()) / (double)mine_left : 0;
		min_one(x, &x->tasks[i], (uint32_t)i, out);
	}
}

static struct sig_stat *sig_entry(struct fz_stats *st, const char *sig)
{
	for (int i = 0; i < st->nsig; i++)
		if (!strcmp(st->sig[i].sig, sig))
			return &st->sig[i];
	if (st->nsig == FZ_MAX_SIGS_RUN)
		return NULL;
	struct sig_stat *s = &st->sig[st->nsig++];
	memset(s, 0, sizeof(*s));
	snprintf(s->sig, sizeof(s->sig), "%s", sig);
	return s;
}

static void count_encodings(struct fz_stats *st, const struct eval_rec *r)
{
	int i = 0;
	while (i < st->naug && strcmp(st->aug[i].aug, r->aug))
		i++;
	if (i == st->naug && st->naug < 32)
		snprintf(st->aug[st->naug++].aug, sizeof(st->aug[0].aug), "%s", r->aug);
	if (i < 32)
		st->aug[i].n++;
	for (i = 0; i < st->nenc && st->enc[i].enc != r->fde_enc; i++)
		;
	if (i == st->nenc && st->nenc < 16)
		st->enc[st->nenc++].enc = r->fde_enc;
	if (i < 16)
		st->enc[i].n++;
}

/* Accounts one evaluation; queues its new signatures for minimization. */
static void account(struct fz_ctx *x, struct fz_stats *st, const struct eval_rec *r, struct task *tasks, size_t *nt)
{
	st->cases++;
	st->samples += r->nsamples;
	st->t.gen += r->t.gen;
	st->t.parse += r->t.parse;
	st->t.capture += r->t.capture;
	st->t.capture_cpu += r->t.capture_cpu;
	st->t.classify += r->t.classify;
	st->t.rp.load += r->t.rp.load;
	st->t.rp.pv += r->t.rp.pv;
	st->t.rp.oracle += r->t.rp.oracle;
	st->t.rp.total += r->t.rp.total;
	for (int u = 0; u < HX_MAX_UW; u++) {
		st->t.rp.open[u] += r->t.rp.open[u];
		st->t.rp.unwind[u] += r->t.rp.unwind[u];
	}
	for (int f = 0; f < FZF__COUNT; f++)
		st->feature[f] += r->features >> f & 1;
	count_encodings(st, r);
	st->inconsistent += (r->flags & EF_INCONSISTENT) != 0;
	if (r->flags & EF_ERROR) {
		if (!st->errors++) {
			st->first_error_index = r->index;
			snprintf(st->first_error, sizeof(st->first_error), "%s", r->problem);
		}
		return;
	}
	for (uint32_t k = 0; k < r->nsig && k < FZ_MAX_SIG; k++) {
		struct sig_stat *s = sig_entry(st, r->sig[k]);
		if (!s)
			continue;
		if (!s->cases++)
			s->first = r->index;
		if (s->tasks < x->o.per_sig && *nt < FZ_MAX_TASKS) {
			s->tasks++;
			tasks[*nt].index = r->index;
			snprintf(tasks[(*nt)++].sig, sizeof(tasks[0].sig), "%s", r->sig[k]);
		}
	}
}

static void *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

static int cmp_eval(const void *a, const void *b)
{
	uint64_t x = ((const struct eval_rec *)a)->index, y = ((const struct eval_rec *)b)->index;
	return x < y ? -1 : x > y;
}

/* Evaluates one batch; the tasks it yields, in index order. */
static int eval_batch(struct fz_ctx *x, struct fz_stats *st, size_t n, struct task *tasks, size_t *nt)
{
	static struct eval_rec recs[FZ_CHUNK * FZ_BATCH_CHUNKS];
	size_t nrec = 0;
	*x->next_chunk = 0;
	if (fan_out(x, n, eval_items, "e"))
		return -1;
	for (int w = 0; w < x->o.jobs; w++) {
		char p[320];
		size_t len = 0;
		snprintf(p, sizeof(p), "%s/e%d.res", x->dir, w);
		struct eval_rec *r = read_all(p, &len);
		for (size_t i = 0; r && i < len / sizeof(*r) && nrec < FZ_CHUNK * FZ_BATCH_CHUNKS; i++)
			recs[nrec++] = r[i];
		free(r);
		unlink(p);
	}
	qsort(recs, nrec, sizeof(recs[0]), cmp_eval);
	for (size_t i = 0; i < nrec; i++)
		account(x, st, &recs[i], tasks, nt);
	return 0;
}

static int write_case(const struct fz_ctx *x, const char *sub, const char *name, const char *text, size_t len,
		      char *path, size_t plen)
{
	char dir[640];
	snprintf(dir, sizeof(dir), "%s/%s%s", x->o.out, x->arch->name, sub);
	mkdir(x->o.out, 0755);
	char adir[640];
	snprintf(adir, sizeof(adir), "%s/%s", x->o.out, x->arch->name);
	mkdir(adir, 0755);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, plen, "%s/%s.case", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	size_t w = fwrite(text, 1, len, f);
	return fclose(f) || w != len ? -1 : 0;
}

/* One minimization's outcome into the statistics and, with a case, a file
 * (the first task of a name wins: later ones of the same reproducer are counted). */
static void take_result(struct fz_ctx *x, struct fz_stats *st, const struct min_rec *rec, const char *text,
			char (*names)[32], size_t *nnames)
{
	struct sig_stat *s = sig_entry(st, rec->sig);
	char path[800] = "";
	st->min_runs += rec->mr.runs;
	bool dup = false;
	for (size_t i = 0; i < *nnames && rec->textlen; i++)
		dup |= !strcmp(names[i], rec->name);
	if (rec->textlen && !dup) {
		if (*nnames < 4096)
			snprintf(names[(*nnames)++], 32, "%s", rec->name);
		if (write_case(x, rec->mr.status == 2 ? "/unstable" : "", rec->name, text, rec->textlen, path,
			       sizeof(path))) {
			st->lost++;
			path[0] = 0;
		} else {
			rec->mr.status == 2 ? st->unstable++ : st->written++;
		}
	} else if (!rec->textlen) {
		st->lost++;
	}
	if (s && !s->file[0]) {
		s->mr = rec->mr;
		if (path[0] || dup)
			snprintf(s->file, sizeof(s->file), "%s", path[0] ? path : rec->name);
	}
}

/* Minimizes the batch's tasks; takes the results in task order. */
static int min_batch(struct fz_ctx *x, struct fz_stats *st, const struct task *tasks, size_t nt)
{
	static char names[4096][32];
	static size_t nnames;
	x->tasks = tasks;
	x->ntasks = nt;
	if (fan_out(x, nt, min_items, "m"))
		return -1;
	char *bufs[64] = { NULL };
	size_t lens[64] = { 0 };
	const char **texts = calloc(nt ? nt : 1, sizeof(*texts));
	struct min_rec *recs = calloc(nt ? nt : 1, sizeof(*recs));
	bool *have = calloc(nt ? nt : 1, sizeof(*have));
	for (int w = 0; w < x->o.jobs && texts && recs && have; w++) {
		char p[320];
		snprintf(p, sizeof(p), "%s/m%d.res", x->dir, w);
		bufs[w] = read_all(p, &lens[w]);
		unlink(p);
		for (size_t off = 0; bufs[w] && off + sizeof(struct min_rec) <= lens[w];) {
			struct min_rec rec;
			memcpy(&rec, bufs[w] + off, sizeof(rec));
			off += sizeof(rec);
			if (rec.textlen > lens[w] - off || rec.task >= nt)
				break;
			recs[rec.task] = rec;
			texts[rec.task] = bufs[w] + off;
			have[rec.task] = true;
			off += rec.textlen;
		}
	}
	for (size_t t = 0; t < nt && texts && recs && have; t++)
		if (have[t])
			take_result(x, st, &recs[t], texts[t], names, &nnames);
	for (int w = 0; w < x->o.jobs; w++)
		free(bufs[w]);
	free(texts);
	free(recs);
	free(have);
	return 0;
}

/* Where the evaluation's time went, per case (README "fuzz-cfi": rate). */
static void summary_times(const struct fz_ctx *x, const struct fz_stats *st, FILE *f)
{
	double n = st->cases ? (double)st->cases : 1, ms = 1e3 / n;
	const struct hx_replay_times *r = &st->t.rp;
	double rest = r->total - r->load - r->pv - r->oracle;
	fprintf(f, "time per case (ms, each worker's clock): generate %.3f, parse %.3f, capture %.3f (its child's CPU %.3f), "
		"replay %.3f [case and process view %.3f, perf's view %.3f, oracle %.3f", st->t.gen * ms, st->t.parse * ms,
		st->t.capture * ms, st->t.capture_cpu * ms, r->total * ms, r->load * ms, r->pv * ms, r->oracle * ms);
	for (int u = 0; u < x->fuzz_uw.nuw && u < HX_MAX_UW; u++) {
		fprintf(f, ", %s %.3f (state %.3f)", x->fuzz_uw.unwinders[u], r->unwind[u] * ms, r->open[u] * ms);
		rest -= r->unwind[u] + r->open[u];
	}
	fprintf(f, ", judging and symbols %.3f], classify %.3f\n", rest * ms, st->t.classify * ms);
	if (st->tasks)
		fprintf(f, "minimization: %llu runs (a capture child each) in %.1f s CPU: %.1f ms CPU per run\n",
			(unsigned long long)st->min_runs, st->min_cpu,
			st->min_runs ? st->min_cpu * 1e3 / (double)st->min_runs : 0);
}

static void summary(const struct fz_ctx *x, const struct fz_stats *st, FILE *f)
{
	double secs = now() - x->t0;
	char libs[96], e[32];
	lib_versions(libs, sizeof(libs));
	double es = st->eval_secs > 0 ? st->eval_secs : secs;
	fprintf(f, "fuzz-cfi %s: seed %llu%s, %llu cases, %llu samples evaluated in %.1f s: %.2f cases/s, %.1f samples/s "
		"(%.1f s CPU: %.1f cases per CPU second); %zu minimization(s) in %.1f s (--jobs %d; up to %d cases per "
		"capture child; %s)\n", x->arch->name,
		(unsigned long long)x->o.seed, x->o.mutate ? ", --mutate" : "", (unsigned long long)st->cases,
		(unsigned long long)st->samples, es, es > 0 ? (double)st->cases / es : 0,
		es > 0 ? (double)st->samples / es : 0, st->eval_cpu, st->eval_cpu > 0 ? (double)st->cases / st->eval_cpu : 0,
		st->tasks, secs - es, x->o.jobs, FZ_CHUNK, libs);
	summary_times(x, st, f);
	fprintf(f, "unwinders: %s\n", x->fuzz_names);
	if (x->o.mutate)
		fprintf(f, "mutants the oracle saw (the CFI differs from the truth at a sample): %llu of %llu\n",
			(unsigned long long)st->inconsistent, (unsigned long long)st->cases);
	fprintf(f, "findings: %d signature(s); %d case(s) written, %d unstable, %d not written\n", st->nsig,
		st->written, st->unstable, st->lost);
	for (int i = 0; i < st->nsig; i++) {
		const struct sig_stat *s = &st->sig[i];
		fprintf(f, "  %-34s %6llu case(s), first %llu", s->sig, (unsigned long long)s->cases,
			(unsigned long long)s->first);
		if (s->file[0])
			fprintf(f, " -> %s (%u ops, %u CFA instructions; from %u and %u in %u runs)", s->file,
				s->mr.ops1, s->mr.insns1, s->mr.ops0, s->mr.insns0, s->mr.runs);
		if (s->mr.note[0])
			fprintf(f, " [%s]", s->mr.note);
		fprintf(f, "\n");
	}
	if (st->errors)
		fprintf(f, "cases that did not build or run: %llu (first: case %llu: %s)\n",
			(unsigned long long)st->errors, (unsigned long long)st->first_error_index, st->first_error);
	fprintf(f, "coverage (cases using each):");
	for (int i = 0; i < FZF__COUNT; i++)
		fprintf(f, "%s %s %llu", i ? "," : "", hx_fz_feature_name((enum hx_fz_feature)i),
			(unsigned long long)st->feature[i]);
	fprintf(f, "\nCIE augmentations:");
	for (int i = 0; i < st->naug; i++)
		fprintf(f, " %s %llu", st->aug[i].aug[0] ? st->aug[i].aug : "none", (unsigned long long)st->aug[i].n);
	fprintf(f, "\nFDE pointer encodings:");
	for (int i = 0; i < st->nenc; i++)
		fprintf(f, " %s %llu", hx_fz_enc_name(st->enc[i].enc, e, sizeof(e)), (unsigned long long)st->enc[i].n);
	fprintf(f, "\n");
}

/* Evaluates batches until --cases or the evaluation's share of --time, then
 * minimizes what it found, in index order, in the time left. */
static int fuzz_arch(struct fz_ctx *x)
{
	struct fz_stats *st = calloc(1, sizeof(*st));
	struct task *tasks = calloc(FZ_MAX_TASKS, sizeof(*tasks));
	int rc = 0;
	size_t per = FZ_CHUNK * FZ_BATCH_CHUNKS, nt = 0;
	double end = x->deadline, c0 = children_cpu();
	if (end > 0)
		x->deadline = x->t0 + (end - x->t0) * FZ_EVAL_SHARE;
	for (uint64_t start = 0; st && tasks && !past_deadline(x); start += per) {
		if (x->o.ncases && start >= x->o.ncases)
			break;
		size_t n = per;
		if (x->o.ncases && start + n > x->o.ncases)
			n = (size_t)(x->o.ncases - start);
		x->batch0 = start;
		if (eval_batch(x, st, n, tasks, &nt)) {
			rc = 2;
			break;
		}
	}
	x->deadline = end;
	if (st) {
		st->eval_secs = now() - x->t0;
		st->eval_cpu = children_cpu() - c0;
		st->tasks = nt;
	}
	c0 = children_cpu();
	if (!rc && st && tasks && nt && min_batch(x, st, tasks, nt))
		rc = 2;
	if (st)
		st->min_cpu = children_cpu() - c0;
	if (rc == 2)
		fprintf(stderr, "jitunwind fuzz-cfi: a worker failed (fork, or it died)\n");
	if (!st || !tasks) {
		fprintf(stderr, "jitunwind fuzz-cfi: out of memory\n");
		rc = 2;
	} else {
		summary(x, st, stdout);
		char p[700];
		snprintf(p, sizeof(p), "%s/%s", x->o.out, x->arch->name);
		mkdir(x->o.out, 0755);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%s/summary.txt", x->o.out, x->arch->name);
		FILE *f = fopen(p, "w");
		if (f) {
			summary(x, st, f);
			fclose(f);
		}
		if (!rc && (st->written || st->unstable || st->lost || st->errors))
			rc = 1;
		if (!rc && !st->cases)
			rc = 77;
	}
	free(st);
	free(tasks);
	return rc;
}

/* --print I: case I as a file, with the verdicts this machine gives it. */
static int print_case(struct fz_ctx *x, uint64_t index)
{
	static struct hx_fz_gen g;
	static char expect[16 << 10], about[600], name[32];
	char *text = text_buf(), err[512], libs[96];
	struct hx_case_res res;
	memset(&res, 0, sizeof(res));
	generate(x, index, &g);
	if (hx_fz_case_text(&g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, NULL, err, sizeof(err)) ||
	    run_text(x, text, &x->final_uw, &res, err, sizeof(err))) {
		hx_case_res_free(&res);
		fprintf(stderr, "jitunwind fuzz-cfi: case %llu: %s\n", (unsigned long long)index, err);
		return 1;
	}
	int rc = observed_expect(x, &res, g.depth, expect, sizeof(expect));
	hx_case_res_free(&res);
	lib_versions(libs, sizeof(libs));
	snprintf(about, sizeof(about), "Generated by jitunwind fuzz-cfi --seed %llu --print %llu%s (%s); [expect] as observed.",
		 (unsigned long long)x->o.seed, (unsigned long long)index, x->o.mutate ? " --mutate" : "", libs);
	case_name(text, name, sizeof(name));
	if (rc || hx_fz_case_text(&g, name, about, expect, text, FZ_TEXT_MAX, NULL, err, sizeof(err))) {
		fprintf(stderr, "jitunwind fuzz-cfi: case %llu: %s\n", (unsigned long long)index,
			rc ? "the observed verdicts do not fit an [expect] section" : err);
		return 1;
	}
	fputs(text, stdout);
	return 0;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jitunwind fuzz-cfi [--seed N] [--time S] [--cases N] [--jobs N] [--out DIR]\n"
		"                          [--arch LIST] [--mutate] [--minimize-runs N] [--per-signature N]\n"
		"                          [--print I]\n"
		"  Generate trampolines from random stack ops, encode their CFI in random valid forms\n"
		"  (--mutate: then corrupt one element), run each case through the capture and every\n"
		"  unwinder; write each finding, minimized, as DIR/<arch>/fuzz-<hash>.case with the\n"
		"  verdicts observed as its [expect], and DIR/<arch>/summary.txt.\n"
		"  --seed N           the cases drawn (default 1): the same seed gives the same cases\n"
		"  --time S           stop after S seconds (default 60 when --cases is not given)\n"
		"  --cases N          stop after N cases (with the same seed: the same files, any --jobs)\n"
		"  --jobs N           worker processes (default: one per CPU online, at most 16)\n"
		"  --out DIR          where cases go (default fuzz-cfi-out)\n"
		"  --arch LIST        x86_64, aarch64 or both (default: this machine's); another arch runs\n"
		"                     its cross build under qemu-user (build/<arch>/jitunwind, qemu-<arch>)\n"
		"  --mutate           corrupt one element of each encoded program\n"
		"  --minimize-runs N  runs one minimization may spend (default 120)\n"
		"  --per-signature N  findings minimized per signature (default 3)\n"
		"  --print I          print case I as a case file with this machine's verdicts, and stop\n"
		"exit: 0 nothing found, 1 findings written, 2 bad usage, 77 nothing could run\n");
}

static int parse_num(const char *opt, const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "jitunwind fuzz-cfi: %s %s: expected a number up to %llu\n", opt, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct fz_opts *o)
{
	static const struct option lo[] = {
		{ "seed", required_argument, 0, 's' }, { "time", required_argument, 0, 't' },
		{ "cases", required_argument, 0, 'c' }, { "jobs", required_argument, 0, 'j' },
		{ "out", required_argument, 0, 'o' }, { "arch", required_argument, 0, 'a' },
		{ "mutate", no_argument, 0, 'm' }, { "minimize-runs", required_argument, 0, 'r' },
		{ "per-signature", required_argument, 0, 'k' }, { "print", required_argument, 0, 'p' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	/* one worker per CPU: a seed's files are the same for any --jobs */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*o = (struct fz_opts){ .seed = 1, .jobs = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus, .out = "fuzz-cfi-out",
			       .min_runs = 120, .per_sig = 3, .print_index = -1 };
	unsigned long long v;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': if (parse_num("--seed", optarg, UINT64_MAX, &v)) return 2; o->seed = v; break;
		case 't': if (parse_num("--time", optarg, 86400 * 7, &v)) return 2; o->time_s = (double)v; break;
		case 'c': if (parse_num("--cases", optarg, 1ull << 40, &v)) return 2; o->ncases = v; break;
		case 'j': if (parse_num("--jobs", optarg, 16, &v) || !v) return 2; o->jobs = (int)v; break;
		case 'r': if (parse_num("--minimize-runs", optarg, 100000, &v)) return 2; o->min_runs = (int)v; break;
		case 'k': if (parse_num("--per-signature", optarg, 64, &v)) return 2; o->per_sig = (int)v; break;
		case 'p': if (parse_num("--print", optarg, 1ull << 40, &v)) return 2; o->print_index = (long long)v; break;
		case 'o': o->out = optarg; break;
		case 'a': o->arches = optarg; break;
		case 'm': o->mutate = true; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "jitunwind fuzz-cfi: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o->time_s && !o->ncases)
		o->time_s = 60;
	return 0;
}

static void set_unwinders(struct hx_opts *o, char *names, size_t len, const char *arch, bool machine)
{
	memset(o, 0, sizeof(*o));
	if (machine)
		uw_unwinder_defaults(arch, names, len);
	else
		uw_unwinder_list(arch, names, len);
	static char copy[2][256];
	static int which;
	char *buf = copy[which++ & 1];
	snprintf(buf, sizeof(copy[0]), "%s", names);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && o->nuw < HX_MAX_UW; t = strtok_r(NULL, ",", &save))
		o->unwinders[o->nuw++] = t;
}

/* Another arch: its own build under its runner, with this run's options
 * (--arch and --time last: getopt keeps the last).  Its exit code. */
static int delegate(const char *arch, int argc, char **argv, double secs)
{
	char self[4096], bin[4400], runner[64], tbuf[32];
	const char *env_bin = getenv("JU_FUZZ_CROSS_BIN"), *env_run = getenv("JU_FUZZ_CROSS_RUNNER");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(bin, sizeof(bin), "%s", env_bin ? env_bin : "");
	if (!env_bin)
		snprintf(bin, sizeof(bin), "%s/build/%s/jitunwind", self, arch);
	snprintf(runner, sizeof(runner), "%s", env_run ? env_run : "");
	if (!env_run)
		snprintf(runner, sizeof(runner), "qemu-%s", arch);
	if (access(bin, X_OK)) {
		printf("jitunwind: skip: fuzz-cfi --arch %s: no %s build at %s (make ARCH=%s)\n", arch, arch, bin, arch);
		return 77;
	}
	char **av = calloc((size_t)argc + 8, sizeof(*av));
	int k = 0;
	if (!av)
		return 2;
	if (runner[0])
		av[k++] = runner;
	av[k++] = bin;
	av[k++] = "fuzz-cfi";
	for (int i = 1; i < argc; i++)
		av[k++] = argv[i];
	av[k++] = "--arch";
	av[k++] = (char *)arch;
	if (secs > 0) {
		snprintf(tbuf, sizeof(tbuf), "%.0f", secs < 1 ? 1 : secs);
		av[k++] = "--time";
		av[k++] = tbuf;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(av[0], av);
		fprintf(stderr, "jitunwind fuzz-cfi: cannot run %s: %s\n", av[0], strerror(errno));
		_exit(77);
	}
	free(av);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 2;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

/* The scratch directory (jitdumps, perf maps, jitted .so files: several
 * files per case): $TMPDIR, else /dev/shm where it is a writable directory
 * mounted with exec (tmpfs: creating and removing files there costs a
 * fraction of a disk file system's; containers mount it noexec, and the
 * jitdump's marker mapping is PROT_EXEC, as perf needs it), else /tmp.
 * 0, or -1 (errno). */
static int scratch_dir(char *dir, size_t len)
{
	const char *t = getenv("TMPDIR");
	struct statvfs fs;
	if (!t || !t[0]) {
		bool shm = !access("/dev/shm", W_OK | X_OK) && !statvfs("/dev/shm", &fs) && !(fs.f_flag & ST_NOEXEC);
		t = shm ? "/dev/shm" : "/tmp";
	}
	snprintf(dir, len, "%s/jitunwind-fuzz-XXXXXX", t);
	return mkdtemp(dir) ? 0 : -1;
}

static int run_here(struct fz_opts *o, const struct tr_arch *arch)
{
	static struct fz_ctx x;
	memset(&x, 0, sizeof(x));
	x.o = *o;
	x.arch = arch;
	const char *plant = getenv("JU_FUZZ_PLANT");
	x.plant = plant && !strcmp(plant, "cfa");
	set_unwinders(&x.fuzz_uw, x.fuzz_names, sizeof(x.fuzz_names), arch->name, false);
	set_unwinders(&x.final_uw, x.final_names, sizeof(x.final_names), arch->name, true);
	if (scratch_dir(x.dir, sizeof(x.dir))) {
		fprintf(stderr, "jitunwind fuzz-cfi: mkdtemp %s: %s\n", x.dir, strerror(errno));
		return 2;
	}
	x.next_chunk = mmap(NULL, sizeof(*x.next_chunk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (x.next_chunk == MAP_FAILED) {
		fprintf(stderr, "jitunwind fuzz-cfi: mmap: %s\n", strerror(errno));
		rmdir(x.dir);
		return 2;
	}
	x.t0 = now();
	x.deadline = o->time_s > 0 ? x.t0 + o->time_s : 0;
	int rc = o->print_index >= 0 ? print_case(&x, (uint64_t)o->print_index) : fuzz_arch(&x);
	munmap((void *)x.next_chunk, sizeof(*x.next_chunk));
	clean_dir(x.dir);
	rmdir(x.dir);
	return rc;
}

int hx_fuzzcfi_main(int argc, char **argv)
{
	struct fz_opts o;
	int rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	const struct tr_arch *host = tr_arch_host();
	char list[64];
	snprintf(list, sizeof(list), "%s", o.arches ? o.arches : host ? host->name : "");
	const char *arches[4];
	int n = 0;
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < 4; t = strtok_r(NULL, ",", &save)) {
		const struct tr_arch *a = tr_arch_by_name(t);
		if (!a || strcmp(a->name, t)) {
			char names[128];
			tr_arch_names(names, sizeof(names));
			fprintf(stderr, "jitunwind fuzz-cfi: --arch %s: expected one of %s\n", t, names);
			return 2;
		}
		arches[n++] = a->name;
	}
	if (!n) {
		fprintf(stderr, "jitunwind fuzz-cfi: no arch to fuzz\n");
		return 2;
	}
	/* every arch gets its share of the time; the worst exit code wins (77 only when all skipped) */
	int worst = -1;
	bool all_skip = true;
	for (int i = 0; i < n; i++) {
		const struct tr_arch *a = tr_arch_by_name(arches[i]);
		struct fz_opts oi = o;
		oi.time_s = o.time_s / n;
		rc = a == host ? run_here(&oi, a) : delegate(arches[i], argc, argv, oi.time_s);
		all_skip &= rc == 77;
		if (rc != 77 && rc > worst)
			worst = rc;
	}
	return all_skip ? 77 : worst < 0 ? 0 : worst;
}
