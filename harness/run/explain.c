/* jitunwind explain CASE WHERE: one sample's whole story.  The case is
 * captured and replayed as `run` does; for the sample point WHERE it prints
 * the instruction, the registers perf recorded, the emitted CFI's row and
 * the true one (from the generator's truth rows), and each unwinder's chain
 * next to the true chain, with perf's symbols, its stop reason and the first
 * divergent frame. */
#include "harness/run/scratch.h"
#include "harness/run/explain.h"
#include "harness/case/cfarow.h"
#include "harness/capture/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "7", "0x7", "tramp+0x7", "callee" against a sample */
static bool where_matches(const struct hx_sample_res *sr, const char *where)
{
	if (!strcmp(where, sr->where))
		return true;
	char *end;
	long v = strtol(where, &end, 0);
	return !*end && end != where && sr->offset >= 0 && v == sr->offset && !strncmp(sr->where, "tramp+", 6);
}

static void regs(FILE *out, const struct hx_sample *s, const struct uw_arch *a)
{
	int k = 0;
	fprintf(out, "registers (perf's user regs):");
	for (int i = 0; i < UW_PERF_REGS; i++) {
		if (!(s->mask & (1ull << i)) || !a->perf_reg_names[i])
			continue;
		fprintf(out, "%s%s=0x%llx", k++ % 4 ? "  " : "\n  ", a->perf_reg_names[i],
			(unsigned long long)s->regs[i]);
	}
	fprintf(out, "\n");
}

static void frame(FILE *out, const uint64_t *a, int n, const char (*sym)[HX_SYM_LEN], int nsym, int k, bool pad)
{
	char b[80] = "";
	if (k < n)
		snprintf(b, sizeof(b), "0x%llx%s%s%s", (unsigned long long)a[k], k < nsym && sym[k][0] ? " (" : "",
			 k < nsym ? sym[k] : "", k < nsym && sym[k][0] ? ")" : "");
	fprintf(out, pad ? "  %-44s" : "  %s", b);
}

static void one_unwinder(FILE *out, const struct hx_sample_res *sr, const struct hx_uw_res *r,
			 const struct uw_arch *a)
{
	char why[512];
	bool oracle = r->uw && r->uw->ref == UW_REF_TRUTH;
	fprintf(out, "\n%s: %s%s", r->name, hx_verdict_name(r->j.v), r->fallback ? " fallback" : "");
	if (oracle)
		fprintf(out, " (%s)", r->consistent ? "consistent" : "inconsistent");
	if (r->expected[0])
		fprintf(out, "; [expect] says %s: %s", r->expected, r->match ? "met" : "MISSED");
	hx_term_regnames(a, r->r.why, why, sizeof(why));
	fprintf(out, "\n  stop: %s%s%s\n", uw_stop_name(r->r.stop), why[0] ? ", " : "", why);
	if (r->fallback && r->r.fallback_why[0]) {
		hx_term_regnames(a, r->r.fallback_why, why, sizeof(why));
		fprintf(out, "  fallback: %s\n", why);
	}
	if (r->r.earlier_why[0])
		fprintf(out, "  rules of an earlier load: %s\n", r->r.earlier_why);
	if (r->j.diverge_got >= 0)
		fprintf(out, "  first divergent frame: #%d (compared with truth #%d)\n", r->j.diverge_got,
			r->j.diverge_truth);
	int rows = sr->nt > r->r.n ? sr->nt : r->r.n;
	fprintf(out, "  #   %-44s  %s\n", "truth", r->name);
	for (int k = 0; k < rows; k++) {
		fprintf(out, "  %-2d%s", k, k == r->j.diverge_got ? "*" : " ");
		frame(out, sr->truth, sr->nt, (const char (*)[HX_SYM_LEN])sr->tsym, sr->nt, k, true);
		frame(out, r->r.addr, r->r.n, (const char (*)[HX_SYM_LEN])r->sym, oracle ? 0 : r->nsym, k, false);
		fprintf(out, "\n");
	}
}

static int story(FILE *out, const struct hx_case *c, const struct hx_group *g, const struct hx_case_res *res,
		 const char *where, const struct uw_arch *a)
{
	int shown = 0;
	for (size_t i = 0; i < res->nsamples; i++) {
		const struct hx_sample_res *sr = &res->samples[i];
		if (!where_matches(sr, where))
			continue;
		char row[200];
		fprintf(out, "%s== %s at %s, perf %s, stack %d\n", shown++ ? "\n" : "", res->name, sr->where,
			sr->profile, sr->stack_size);
		fprintf(out, "instruction: %s   pc 0x%llx\n", sr->insn, (unsigned long long)sr->pc);
		if (sr->src < g->nsamples)
			regs(out, &g->samples[sr->src], a);
		fprintf(out, "emitted CFI row: %s\n", sr->cfa_row);
		hx_true_row_text(c, sr->where, sr->offset, a, row, sizeof(row));
		fprintf(out, "true row:        %s\n", row);
		char diff[256];
		hx_row_diff_text(sr->cfa_row, row, diff, sizeof(diff));
		if (diff[0])
			fprintf(out, "  the rows differ; %s\n", diff);
		for (int u = 0; u < sr->nuw; u++)
			one_unwinder(out, sr, &sr->uw[u], a);
	}
	return shown;
}

/* capture + replay into res; 0, or a negative errno with err */
static int capture_replay(const struct hx_case *c, const char *path, const struct hx_opts *o, const char *dir,
			  struct hx_samples *s, struct hx_case_res *res, struct ju_err *err)
{
	char sp[4352];
	snprintf(sp, sizeof(sp), "%s/explain.samples", dir);
	struct hx_batch_case one = { c, path, dir };
	struct hx_batch_run run = { .kcfg = &o->kcfg };
	int rc = hx_capture_to_file(&one, 1, sp, &run, err);
	if (rc)
		return rc;
	if (hx_samples_read(s, sp, err->msg, sizeof(err->msg)))
		return -EINVAL;
	if (s->ngroups != 1)
		return ju_errf(err, EINVAL, 0, "%s: expected one case group, found %zu", sp, s->ngroups);
	return hx_replay_group(&s->groups[0], s->elf_mach, o, res, err->msg, sizeof(err->msg)) ? -EINVAL : 0;
}

int hx_explain(FILE *out, const struct hx_opts *opts, const char *path, const char *where, char *err,
	       size_t errlen)
{
	struct hx_opts o = *opts;
	o.observe = true;    /* a case without [expect] can be explained */
	struct hx_case *c = calloc(1, sizeof(*c));
	struct ju_err je;
	if (!c || hx_case_load_ex(c, path, HX_CASE_NO_EXPECT, &je)) {
		if (c)
			snprintf(err, errlen, "%s", je.msg);
		free(c);
		return -EINVAL;
	}
	const struct tr_arch *host = tr_arch_host();
	if (!host || strcmp(c->arch, host->facts->name)) {
		snprintf(err, errlen, "%s: case arch %s cannot run on this host", path, c->arch);
		hx_case_free(c);
		free(c);
		return -ENOTSUP;
	}
	char dir[256];
	if (hx_scratch_mkdtemp(dir, sizeof(dir), "explain", &je)) {
		snprintf(err, errlen, "%s", je.msg);
		hx_case_free(c);
		free(c);
		return -EIO;
	}
	struct hx_samples s = { 0 };
	struct hx_case_res res = { 0 };
	int rc = capture_replay(c, path, &o, dir, &s, &res, &je) ? -EINVAL : 0;
	if (rc)
		snprintf(err, errlen, "%s", je.msg);
	if (!rc && !story(out, c, &s.groups[0], &res, where, uw_arch_by_name(c->arch))) {
		size_t len = (size_t)snprintf(err, errlen, "%s: no sample at '%s' (sample points:", path, where);
		for (size_t i = 0; i < res.nsamples && len < errlen; i++)
			if (!i || strcmp(res.samples[i].where, res.samples[i - 1].where))
				len += (size_t)snprintf(err + len, errlen - len, " %s", res.samples[i].where);
		if (len < errlen)
			snprintf(err + len, errlen - len, ")");
		rc = -ENOENT;
	}
	hx_case_res_free(&res);
	if (s.data)
		hx_samples_free(&s);
	hx_scratch_remove(dir);
	hx_case_free(c);
	free(c);
	return rc;
}
