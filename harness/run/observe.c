/* run --observe: what each unwinder did, as the [expect] block that would
 * make the case pass (in the case format) and in plain words per perf
 * configuration; --write puts the block into the case file, keeping every
 * other line (comments included). */
#include "harness/run/observe.h"
#include "harness/run/session.h"
#include "harness/case/cfarow.h"
#include "trampolines/arch.h"
#include "unwinders/unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cfg {
	char profile[16];
	int stack_size;
};

/* the (profile, dump size) pairs the case was replayed under, in order */
static int configs(const struct hx_case_res *r, struct cfg *cf, int max)
{
	int n = 0;
	for (size_t s = 0; s < r->nsamples; s++) {
		const struct hx_sample_res *sr = &r->samples[s];
		int k;
		for (k = 0; k < n; k++)
			if (!strcmp(cf[k].profile, sr->profile) && cf[k].stack_size == sr->stack_size)
				break;
		if (k == n && n < max) {
			snprintf(cf[n].profile, sizeof(cf[n].profile), "%s", sr->profile);
			cf[n++].stack_size = sr->stack_size;
		}
	}
	return n;
}

static bool in_cfg(const struct hx_sample_res *sr, const struct cfg *cf)
{
	return !strcmp(sr->profile, cf->profile) && sr->stack_size == cf->stack_size;
}

/* the verdict as [expect] spells it: "ok", "skipped fallback", "consistent" */
void hx_expect_word(const struct hx_uw_res *r, char *w, size_t n)
{
	if (r->uw && r->uw->ref == UW_REF_TRUTH)
		snprintf(w, n, "%s", r->consistent ? "consistent" : "inconsistent");
	else
		snprintf(w, n, "%s%s", hx_verdict_name(r->j.v), r->fallback ? " fallback" : "");
}

/* one generated function sampled: bare offsets say it; else "tramp2+0x3" */
static bool one_function(const struct hx_case_res *r)
{
	const char *first = NULL;
	size_t flen = 0;
	for (size_t s = 0; s < r->nsamples; s++) {
		const struct hx_sample_res *sr = &r->samples[s];
		if (sr->offset < 0)
			continue;
		const char *plus = strchr(sr->where, '+');
		size_t len = plus ? (size_t)(plus - sr->where) : strlen(sr->where);
		if (!first) {
			first = sr->where;
			flen = len;
		} else if (len != flen || strncmp(first, sr->where, len)) {
			return false;
		}
	}
	return true;
}

static void where_item(const struct hx_sample_res *sr, bool bare, char *w, size_t n)
{
	const char *gen = strstr(sr->where, "@g");   /* a generation of the code: "@g2" */
	if (!gen)
		gen = "";
	if (sr->offset < 0)
		snprintf(w, n, "callee%s", gen);
	else if (bare)
		snprintf(w, n, "%d%s", sr->offset, gen);
	else
		snprintf(w, n, "%s", sr->where);
}

#define OBS_WORDS 16

/* "ok; truncated at 7; error at callee" for unwinder u under one config */
static void expect_value(const struct hx_case_res *r, int u, const struct cfg *cf, bool bare,
			 char *out, size_t n)
{
	char words[OBS_WORDS][32];
	int count[OBS_WORDS] = { 0 }, nw = 0;
	for (size_t s = 0; s < r->nsamples; s++) {
		const struct hx_sample_res *sr = &r->samples[s];
		if (!in_cfg(sr, cf) || u >= sr->nuw)
			continue;
		char w[32];
		hx_expect_word(&sr->uw[u], w, sizeof(w));
		int k;
		for (k = 0; k < nw; k++)
			if (!strcmp(words[k], w))
				break;
		if (k == nw && nw < OBS_WORDS)
			snprintf(words[nw++], sizeof(words[0]), "%s", w);
		if (k < OBS_WORDS)
			count[k]++;
	}
	int def = 0;
	for (int k = 1; k < nw; k++)
		if (count[k] > count[def])
			def = k;
	size_t len = (size_t)snprintf(out, n, "%s", nw ? words[def] : "ok");
	for (int k = 0; k < nw && len < n; k++) {
		if (k == def)
			continue;
		len += (size_t)snprintf(out + len, n - len, "; %s at ", words[k]);
		bool first = true;
		for (size_t s = 0; s < r->nsamples && len < n; s++) {
			const struct hx_sample_res *sr = &r->samples[s];
			char w[32], item[48];
			if (!in_cfg(sr, cf) || u >= sr->nuw)
				continue;
			hx_expect_word(&sr->uw[u], w, sizeof(w));
			if (strcmp(w, words[k]))
				continue;
			where_item(sr, bare, item, sizeof(item));
			len += (size_t)snprintf(out + len, n - len, "%s%s", first ? "" : ",", item);
			first = false;
		}
	}
}

/* "?" where the case format wants an optional key: an unwinder with a probe
 * (perf: only where the machine has it) or one this arch leaves out by default */
static const char *key_mark(const char *unwinder)
{
	const struct uw_unwinder *u = hx_column_by_name(unwinder);
	const struct tr_arch *a = tr_arch_host();
	if (!u || !a)
		return "";
	return u->probe || !uw_unwinder_default_on(u, a->facts->name) ? "?" : "";
}

int hx_observe_block(const struct hx_case_res *r, const struct hx_opts *o, char *buf, size_t n)
{
	struct cfg cf[12];
	int nc = configs(r, cf, 12);
	bool bare = one_function(r);
	bool profiles_vary = false, sizes_vary = false;
	for (int k = 1; k < nc; k++) {
		profiles_vary |= strcmp(cf[k].profile, cf[0].profile) != 0;
		sizes_vary |= cf[k].stack_size != cf[0].stack_size;
	}
	size_t len = (size_t)snprintf(buf, n, "[expect]\n");
	for (int u = 0; u < o->nuw && len < n; u++) {
		char base[1024], v[1024];
		expect_value(r, u, &cf[0], bare, base, sizeof(base));
		const char *mark = key_mark(o->unwinders[u]);
		len += (size_t)snprintf(buf + len, n - len, "%s%s = %s\n", mark, o->unwinders[u], base);
		for (int k = 1; k < nc && len < n; k++) {
			expect_value(r, u, &cf[k], bare, v, sizeof(v));
			if (!strcmp(v, base))
				continue;
			char key[96];
			if (profiles_vary && sizes_vary)
				snprintf(key, sizeof(key), "%s@%s@%d", o->unwinders[u], cf[k].profile, cf[k].stack_size);
			else if (profiles_vary)
				snprintf(key, sizeof(key), "%s@%s", o->unwinders[u], cf[k].profile);
			else
				snprintf(key, sizeof(key), "%s@%d", o->unwinders[u], cf[k].stack_size);
			len += (size_t)snprintf(buf + len, n - len, "%s%s = %s\n", mark, key, v);
		}
	}
	return len < n ? 0 : -ENOSPC;
}

/* "at tramp+0x7 (ret): truncated; the chain stops: outside-snapshot, ...; first true frame missed: #2 0x.. (hx_anchor)" */
static void one_miss(FILE *out, const struct hx_case *c, const struct hx_sample_res *sr,
		     const struct hx_uw_res *r, const struct uw_arch *arch)
{
	char why[512];
	bool fb = r->fallback && r->r.fallback_why[0];
	hx_term_regnames(arch, fb ? r->r.fallback_why : r->r.why, why, sizeof(why));
	bool oracle = r->uw && r->uw->ref == UW_REF_TRUTH;
	fprintf(out, "    at %s (%s): %s", sr->where, sr->insn, oracle ? "inconsistent" : hx_verdict_name(r->j.v));
	if (fb)
		fprintf(out, ", a frame found without the emitted CFI: %s", why);
	else if (!r->uw || !r->uw->quiet_why)
		fprintf(out, "; the chain stops: %s%s%s", uw_stop_name(r->r.stop), why[0] ? ", " : "", why);
	if (r->r.earlier_why[0])
		fprintf(out, "; rules of an earlier load: %s", r->r.earlier_why);
	char row[200], diff[256] = "";
	if (c && arch && (!r->uw || r->uw->sees == UW_SEES_DUMP || r->uw->ref == UW_REF_TRUTH)) {
		/* the CFI's users: say where the emitted row and the code disagree */
		hx_true_row_text(c, sr->where, sr->offset, arch, row, sizeof(row));
		hx_row_diff_text(sr->cfa_row, row, diff, sizeof(diff));
	}
	if (diff[0])
		fprintf(out, "; the emitted CFI row is %s where the code's is %s (%s)", sr->cfa_row, row, diff);
	int t = r->j.diverge_truth;
	if (t >= 0 && t < sr->nt)
		fprintf(out, "; first true frame missed: #%d 0x%llx%s%s%s", t,
			(unsigned long long)sr->truth[t], sr->tsym[t][0] ? " (" : "", sr->tsym[t],
			sr->tsym[t][0] ? ")" : "");
	fprintf(out, "\n");
}

/* "perf (libunwind, current, stack 8192) unwinds through this code at 5 of 6 sample points" */
static void words_for(FILE *out, const struct hx_case *c, const struct hx_case_res *r, int u, const char *name,
		      const struct cfg *cf, const struct uw_arch *arch)
{
	int total = 0, ok = 0, fb = 0, shown = 0;
	bool oracle = false;
	for (size_t s = 0; s < r->nsamples; s++) {
		const struct hx_sample_res *sr = &r->samples[s];
		if (!in_cfg(sr, cf) || u >= sr->nuw)
			continue;
		const struct hx_uw_res *ur = &sr->uw[u];
		oracle = ur->uw && ur->uw->ref == UW_REF_TRUTH;
		total++;
		ok += ur->j.v == HX_OK && !ur->fallback;
		fb += ur->j.v == HX_OK && ur->fallback;
	}
	if (oracle)
		fprintf(out, "  the emitted CFI, followed exactly (oracle), gives the true chain at %d of %d sample points",
			ok, total);
	else
		fprintf(out, "  perf (%s, %s, stack %d) unwinds through this code at %d of %d sample points", name,
			cf->profile, cf->stack_size, ok, total);
	if (fb)
		fprintf(out, ", and at %d more only by a fallback (frame pointers, not the emitted CFI)", fb);
	fprintf(out, "%s\n", ok == total ? "." : ":");
	for (size_t s = 0; s < r->nsamples; s++) {
		const struct hx_sample_res *sr = &r->samples[s];
		if (!in_cfg(sr, cf) || u >= sr->nuw || (sr->uw[u].j.v == HX_OK && !sr->uw[u].fallback))
			continue;
		if (++shown > 6) {
			fprintf(out, "    ... (%d more; jitunwind explain CASE WHERE tells one)\n", total - ok - 6);
			break;
		}
		one_miss(out, c, sr, &sr->uw[u], arch);
	}
}

void hx_observe_words(FILE *out, const struct hx_case *c, const struct hx_case_res *r, const struct hx_opts *o,
		      const char *arch)
{
	struct cfg cf[12];
	int nc = configs(r, cf, 12);
	const struct uw_arch *a = uw_arch_by_name(arch);
	for (int k = 0; k < nc; k++)
		for (int u = 0; u < o->nuw; u++)
			words_for(out, c, r, u, o->unwinders[u], &cf[k], a);
}

static bool is_section(const char *line, size_t len)
{
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	return len && *line == '[';
}

static bool is_expect(const char *line, size_t len)
{
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	return len >= 8 && !strncmp(line, "[expect]", 8);
}

/* the next line of text[0..n) from *pos: its start and length */
static const char *next_line(const char *text, size_t n, size_t *pos, size_t *len)
{
	const char *ls = text + *pos;
	const char *nl = memchr(ls, '\n', n - *pos);
	*len = nl ? (size_t)(nl - ls) : n - *pos;
	*pos += *len + (nl ? 1 : 0);
	return ls;
}

static bool is_comment(const char *line, size_t len)
{
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	return len && *line == '#';
}

/* text with its [expect] section replaced by block (which starts with
 * "[expect]\n"): the section's whole-line comments stay, right under the
 * header; every line outside it stays; no section: the block is appended */
static void rewrite(FILE *w, const char *text, size_t n, const char *block)
{
	size_t pos = 0, len;
	bool seen = false, in_expect = false;
	const char *keys = strchr(block, '\n') ? strchr(block, '\n') + 1 : block;
	while (pos < n) {
		const char *ls = next_line(text, n, &pos, &len);
		if (is_section(ls, len)) {
			if (in_expect)
				fprintf(w, "%s\n", keys);       /* then the next section */
			in_expect = is_expect(ls, len);
			if (in_expect) {
				seen = true;
				fprintf(w, "[expect]\n");
				continue;
			}
		}
		if (!in_expect || is_comment(ls, len))
			fprintf(w, "%.*s\n", (int)len, ls);
	}
	if (in_expect)
		fputs(keys, w);
	else if (!seen)
		fprintf(w, "%s%s", n && text[n - 1] != '\n' ? "\n\n" : "\n", block);
}

int hx_observe_write(const char *path, const char *block, struct ju_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return ju_errf(err, errno, 0, "%s: %s", path, strerror(errno));
	enum { MAXB = 1 << 20 };
	char *text = malloc(MAXB);
	size_t n = text ? fread(text, 1, MAXB, f) : 0;
	fclose(f);
	if (!text || n == MAXB) {
		int rc = ju_errf(err, text ? EFBIG : ENOMEM, 0, "%s: %s", path,
				 text ? "too large to rewrite" : "out of memory");
		free(text);
		return rc;
	}
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.observe-tmp", path);
	FILE *w = fopen(tmp, "wb");
	if (!w) {
		int rc = ju_errf(err, errno, 0, "%s: %s", tmp, strerror(errno));
		free(text);
		return rc;
	}
	rewrite(w, text, n, block);
	free(text);
	/* a new file, renamed over the case: never a half-written case */
	if (fclose(w) || rename(tmp, path)) {
		int rc = ju_errf(err, errno, 0, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return rc;
	}
	return 0;
}

int hx_observe_run(FILE *out, const struct hx_case_res *res, size_t n, const struct hx_opts *o,
		   const char *arch, bool write, struct ju_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *r = &res[i];
		fprintf(out, "%s== %s (%s)\n", i ? "\n" : "", r->name, r->file);
		if (r->skipped) {
			fprintf(out, "  skip: %s\n", r->problem);
			continue;
		}
		/* a missing expectation is what observe is for; any other problem stops it */
		if (r->problem[0] && !strstr(r->problem, "has no expectation")) {
			fprintf(out, "  cannot observe: %s\n", r->problem);
			continue;
		}
		char block[8192];
		if (hx_observe_block(r, o, block, sizeof(block)))
			return ju_errf(err, ENOSPC, 0, "%s: the [expect] block does not fit", r->file);
		fprintf(out, "%s\n", block);
		/* the case again, for its truth rows (NULL when the file is gone: a replay) */
		struct hx_case *c = calloc(1, sizeof(*c));
		struct ju_err cerr;
		if (c && hx_case_load_ex(c, r->file, HX_CASE_NO_EXPECT, &cerr)) {
			hx_case_free(c);
			free(c);
			c = NULL;
		}
		hx_observe_words(out, c, r, o, arch);
		if (c)
			hx_case_free(c);
		free(c);
		if (write) {
			int rc = hx_observe_write(r->file, block, err);
			if (rc)
				return rc;
			fprintf(out, "  written to %s\n", r->file);
		}
	}
	return 0;
}
