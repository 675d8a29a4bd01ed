/* Case file parser: INI-like sections, strict, file:line in every error. */
#include "case.h"
#include "host.h"
#include "unwinders/perfview.h"

#include <ctype.h>
#include <dirent.h>
#include <dwarf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HX_CASE_MAX_BYTES (1 << 20)

static const char *const verdicts[] = { "ok", "truncated", "skipped", "wrong", "duplicate",
					"error", "consistent", "inconsistent", NULL };

static int cfail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s:%d: ", path, line);
	if (n < 0 || (size_t)n >= errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

/* "ok", "ok fallback" ('fallback': the chain was found without the emitted CFI) */
static bool valid_verdict(const char *v)
{
	char w[32];
	snprintf(w, sizeof(w), "%s", v);
	char *sp = strchr(w, ' ');
	if (sp) {
		*sp = 0;
		if (strcmp(trim(sp + 1), "fallback"))
			return false;
	}
	for (int i = 0; verdicts[i]; i++)
		if (!strcmp(w, verdicts[i]))
			return i < 6 || !sp;
	return false;
}

static int parse_int(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || end == s || *trim(end))
		return -1;
	*out = v;
	return 0;
}

/* "pcrel|sdata4" -> DW_EH_PE_* */
static int parse_enc(const char *s, uint8_t *out)
{
	static const struct { const char *n; uint8_t v; } names[] = {
		{ "absptr", DW_EH_PE_absptr }, { "uleb128", DW_EH_PE_uleb128 },
		{ "udata2", DW_EH_PE_udata2 }, { "udata4", DW_EH_PE_udata4 },
		{ "udata8", DW_EH_PE_udata8 }, { "sleb128", DW_EH_PE_sleb128 },
		{ "sdata2", DW_EH_PE_sdata2 }, { "sdata4", DW_EH_PE_sdata4 },
		{ "sdata8", DW_EH_PE_sdata8 }, { "pcrel", DW_EH_PE_pcrel },
		{ "textrel", DW_EH_PE_textrel }, { "datarel", DW_EH_PE_datarel },
		{ "omit", DW_EH_PE_omit },
	};
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", s);
	uint8_t v = 0;
	int parts = 0;
	for (char *save = NULL, *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
		t = trim(t);
		size_t i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(t, names[i].n))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -1;
		v |= names[i].v;
		parts++;
	}
	if (!parts)
		return -1;
	*out = v;
	return 0;
}

static int parse_hex_bytes(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = 0;
	while (*s) {
		while (isspace((unsigned char)*s) || *s == ',')
			s++;
		if (!*s)
			break;
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
			s += 2;
		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]))
			return -1;
		if (n >= cap)
			return -2;
		char b[3] = { s[0], s[1], 0 };
		out[n++] = (uint8_t)strtoul(b, NULL, 16);
		s += 2;
	}
	*len = n;
	return 0;
}

/* "0,1,7" / "2-5" / "callee" / "tramp2+0x3" */
static int parse_items(char *list, struct hx_exc *e, const char *path, int line,
		       char *err, size_t errlen)
{
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		t = trim(t);
		long long a, b;
		char *dash = strchr(t, '-');
		if (dash && dash != t && !strchr(t, '+')) {
			*dash = 0;
			if (parse_int(t, &a) || parse_int(dash + 1, &b) || a < 0 || b < a || b - a > HX_MAX_ITEMS)
				return cfail(err, errlen, path, line, "bad offset range '%s-%s'", t, dash + 1);
			for (long long o = a; o <= b; o++) {
				if (e->nitems >= HX_MAX_ITEMS)
					return cfail(err, errlen, path, line, "more than %d items in an 'at' list", HX_MAX_ITEMS);
				e->items[e->nitems].offset = (int)o;
				e->items[e->nitems++].where[0] = 0;
			}
			continue;
		}
		if (e->nitems >= HX_MAX_ITEMS)
			return cfail(err, errlen, path, line, "more than %d items in an 'at' list", HX_MAX_ITEMS);
		struct hx_where *w = &e->items[e->nitems];
		if (!parse_int(t, &a)) {
			if (a < 0 || a > 65535)
				return cfail(err, errlen, path, line, "offset %lld out of range", a);
			w->offset = (int)a;
			w->where[0] = 0;
		} else if (!strcmp(t, "callee") || (!strncmp(t, "tramp", 5) && strchr(t, '+')) ||
			   (!strncmp(t, "leaf", 4) && strchr(t, '+'))) {
			w->offset = -1;
			snprintf(w->where, sizeof(w->where), "%s", t);
		} else {
			return cfail(err, errlen, path, line,
				     "'%s' is not an offset, a range, 'callee' or 'trampN+0xOFF'", t);
		}
		e->nitems++;
	}
	return 0;
}

/* "ok; skipped at 0,1,7; wrong at callee" */
static int parse_expect(struct hx_case *c, const char *key, char *val, int line,
			char *err, size_t errlen)
{
	if (c->nexpect >= HX_MAX_EXPECT)
		return cfail(err, errlen, c->path, line, "more than %d expectations", HX_MAX_EXPECT);
	for (int i = 0; i < c->nexpect; i++)
		if (!strcmp(c->expect[i].unwinder, key))
			return cfail(err, errlen, c->path, line, "second expectation for '%s' (first on line %d)",
				     key, c->expect[i].line);
	if (strlen(key) >= sizeof(c->expect[0].unwinder) ||
	    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-.@x") != strlen(key) || key[0] == '@')
		return cfail(err, errlen, c->path, line,
			     "expectation key '%s': expected UNWINDER, UNWINDER@PROFILE, UNWINDER@SIZE or UNWINDER@PROFILE@SIZE", key);
	struct hx_expect *x = &c->expect[c->nexpect];
	memset(x, 0, sizeof(*x));
	snprintf(x->unwinder, sizeof(x->unwinder), "%s", key);
	x->line = line;
	int part = 0;
	for (char *save = NULL, *t = strtok_r(val, ";", &save); t; t = strtok_r(NULL, ";", &save), part++) {
		t = trim(t);
		char *at = strstr(t, " at ");
		if (part == 0) {
			if (at)
				return cfail(err, errlen, c->path, line,
					     "the first part of '%s' must be a plain verdict, then '; VERDICT at LIST'", key);
			if (!valid_verdict(t))
				return cfail(err, errlen, c->path, line,
					     "unknown verdict '%s' (expected ok, truncated, skipped, wrong, duplicate, error, consistent or inconsistent, optionally followed by 'fallback')", t);
			snprintf(x->verdict, sizeof(x->verdict), "%s", t);
			continue;
		}
		if (!at)
			return cfail(err, errlen, c->path, line, "expected 'VERDICT at LIST', got '%s'", t);
		if (x->nexc >= HX_MAX_EXC)
			return cfail(err, errlen, c->path, line, "more than %d exceptions", HX_MAX_EXC);
		*at = 0;
		char *v = trim(t);
		if (!valid_verdict(v))
			return cfail(err, errlen, c->path, line, "unknown verdict '%s'", v);
		struct hx_exc *e = &x->exc[x->nexc++];
		snprintf(e->verdict, sizeof(e->verdict), "%s", v);
		if (parse_items(at + 4, e, c->path, line, err, errlen))
			return -1;
	}
	if (!x->verdict[0])
		return cfail(err, errlen, c->path, line, "empty expectation for '%s'", key);
	c->nexpect++;
	return 0;
}

static int parse_unwind(struct hx_case *c, const char *key, char *val, int line,
			char *err, size_t errlen)
{
	struct tr_unwind_opts *o = &c->unw;
	if (!strcmp(key, "cfi")) {
		if (!strcmp(val, "derived"))
			o->cfi = TR_CFI_DERIVED;
		else if (!strcmp(val, "directives"))
			o->cfi = TR_CFI_DIRECTIVES;
		else if (!strcmp(val, "none"))
			o->cfi = TR_CFI_NONE;
		else if (!strncmp(val, "bytes", 5) && (val[5] == ' ' || val[5] == '\t')) {
			o->cfi = TR_CFI_BYTES;
			int rc = parse_hex_bytes(val + 6, o->prog, sizeof(o->prog), &o->prog_len);
			if (rc)
				return cfail(err, errlen, c->path, line, rc == -2 ? "CFA program longer than %zu bytes"
					     : "cfi = bytes: expected hex bytes like '41 0e 10'", sizeof(o->prog));
		} else
			return cfail(err, errlen, c->path, line,
				     "cfi: expected derived, directives, none or 'bytes <hex>', got '%s'", val);
	} else if (!strcmp(key, "cie")) {
		if (!strcmp(val, "none"))
			o->cie_aug[0] = 0;
		else if (strspn(val, "zRPLS") == strlen(val) && strlen(val) < sizeof(o->cie_aug) && val[0])
			snprintf(o->cie_aug, sizeof(o->cie_aug), "%s", val);
		else
			return cfail(err, errlen, c->path, line, "cie: expected an augmentation like zR, zPLR, zLR, zRS or none");
	} else if (!strcmp(key, "cie_version")) {
		long long v;
		if (parse_int(val, &v) || (v != 1 && v != 3))
			return cfail(err, errlen, c->path, line, "cie_version: expected 1 or 3");
		o->cie_version = (int)v;
	} else if (!strcmp(key, "fde_enc")) {
		if (parse_enc(val, &o->fde_enc))
			return cfail(err, errlen, c->path, line, "fde_enc: expected DW_EH_PE names like pcrel|sdata4, got '%s'", val);
	} else if (!strcmp(key, "table_enc")) {
		if (parse_enc(val, &o->table_enc))
			return cfail(err, errlen, c->path, line, "table_enc: expected names like datarel|sdata4 or omit");
		o->hdr_table = o->table_enc != DW_EH_PE_omit;
	} else if (!strcmp(key, "hdr")) {
		if (!strcmp(val, "after"))
			o->hdr = TR_HDR_AFTER;
		else if (!strcmp(val, "before"))
			o->hdr = TR_HDR_BEFORE;
		else if (!strcmp(val, "none"))
			o->hdr = TR_HDR_NONE;
		else
			return cfail(err, errlen, c->path, line, "hdr: expected after, before or none");
	} else if (!strcmp(key, "mapped")) {
		long long v;
		if (!strcmp(val, "auto"))
			o->mapped = -1;
		else if (!parse_int(val, &v) && v >= 0 && v < (1ll << 32))
			o->mapped = v;
		else
			return cfail(err, errlen, c->path, line, "mapped: expected auto or a byte count");
	} else if (!strcmp(key, "terminator")) {
		if (strcmp(val, "yes") && strcmp(val, "no"))
			return cfail(err, errlen, c->path, line, "terminator: expected yes or no");
		o->terminator = !strcmp(val, "yes");
	} else if (!strcmp(key, "order")) {
		if (strcmp(val, "before-load") && strcmp(val, "after-load"))
			return cfail(err, errlen, c->path, line, "order: expected before-load (as perf needs) or after-load");
		c->unwind_after_load = !strcmp(val, "after-load");
	} else if (!strcmp(key, "eh_frame")) {
		if (strcmp(val, "aligned") && strcmp(val, "unaligned"))
			return cfail(err, errlen, c->path, line, "eh_frame: expected aligned or unaligned");
		o->eh_unaligned = !strcmp(val, "unaligned");
	} else {
		return cfail(err, errlen, c->path, line,
			     "unknown [unwind] key '%s' (expected cfi, cie, cie_version, fde_enc, hdr, table_enc, mapped, terminator, eh_frame, order)", key);
	}
	return 0;
}

int hx_case_parse(struct hx_case *c, const char *path, const char *text, size_t len,
		  char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	tr_unwind_opts_default(&c->unw);
	c->depth = 1;
	c->text = malloc(len + 1);
	if (!c->text)
		return cfail(err, errlen, path, 0, "out of memory");
	memcpy(c->text, text, len);
	c->text[len] = 0;
	c->text_len = len;
	if (memchr(text, 0, len))
		return cfail(err, errlen, path, 1, "NUL byte in a case file");
	enum { S_NONE, S_CASE, S_CODE, S_UNWIND, S_SAMPLE, S_EXPECT, S_LEAF } sec = S_NONE;
	bool seen[7] = { 0 };
	int leaf_line = 0;
	bool have_at = false;
	int line = 0;
	size_t pos = 0;
	while (pos < len) {
		const char *ls = text + pos;
		const char *nl = memchr(ls, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - ls) : len - pos;
		pos += ll + (nl ? 1 : 0);
		line++;
		char buf[1024];
		if (ll >= sizeof(buf))
			return cfail(err, errlen, path, line, "line longer than %zu bytes", sizeof(buf) - 1);
		memcpy(buf, ls, ll);
		buf[ll] = 0;
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = 0;
		char *s = trim(buf);
		if (!*s)
			continue;
		if (*s == '[') {
			static const char *const names[] = { "", "[case]", "[code]", "[unwind]", "[sample]", "[expect]",
							     "[leaf]" };
			int i;
			for (i = 1; i < 7; i++)
				if (!strcmp(s, names[i]))
					break;
			if (i == 7)
				return cfail(err, errlen, path, line,
					     "unknown section '%s' (expected [case], [code], [leaf], [unwind], [sample], [expect])", s);
			if (seen[i])
				return cfail(err, errlen, path, line, "section %s appears twice", s);
			seen[i] = true;
			sec = i;
			if (sec == S_LEAF) {
				c->has_leaf = true;
				leaf_line = line;
			}
			continue;
		}
		if (sec == S_NONE)
			return cfail(err, errlen, path, line, "text before the first section (expected [case])");
		if (sec == S_CODE) {
			if (c->nops >= HX_MAX_OPS)
				return cfail(err, errlen, path, line, "more than %d ops", HX_MAX_OPS);
			char operr[256];
			if (tr_op_parse(s, &c->ops[c->nops], operr, sizeof(operr)))
				return cfail(err, errlen, path, line, "%s", operr);
			c->ops[c->nops++].line = line;
			continue;
		}
		if (sec == S_LEAF) {
			if (c->nleaf >= HX_MAX_OPS)
				return cfail(err, errlen, path, line, "more than %d ops in [leaf]", HX_MAX_OPS);
			char operr[256];
			struct tr_op *op = &c->leaf_ops[c->nleaf];
			if (tr_op_parse(s, op, operr, sizeof(operr)))
				return cfail(err, errlen, path, line, "%s", operr);
			if (op->kind == TR_OP_CALL_TARGET || op->kind == TR_OP_TAIL_JUMP ||
			    (op->kind == TR_OP_RAW && (op->effect == TR_OP_CALL_TARGET || op->effect == TR_OP_TAIL_JUMP)))
				return cfail(err, errlen, path, line,
					     "a [leaf] returns to the trampoline: %s is not allowed in it", tr_op_name(op->kind));
			if (op->kind == TR_OP_CFI)
				return cfail(err, errlen, path, line, "a [leaf]'s CFI is derived from its ops: no .cfi_* lines");
			c->leaf_ops[c->nleaf++].line = line;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq)
			return cfail(err, errlen, path, line, "expected 'key = value', got '%s'", s);
		*eq = 0;
		char *key = trim(s), *val = trim(eq + 1);
		if (!*key)
			return cfail(err, errlen, path, line, "missing key before '='");
		switch (sec) {
		case S_CASE:
			if (!strcmp(key, "name")) {
				if (strlen(val) >= sizeof(c->name) || !*val || strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(val))
					return cfail(err, errlen, path, line, "name: expected 1-63 characters of [A-Za-z0-9._-]");
				snprintf(c->name, sizeof(c->name), "%s", val);
			} else if (!strcmp(key, "arch")) {
				if (strcmp(val, "x86_64") && strcmp(val, "aarch64"))
					return cfail(err, errlen, path, line, "arch: expected x86_64 or aarch64, got '%s'", val);
				snprintf(c->arch, sizeof(c->arch), "%s", val);
			} else if (!strcmp(key, "about")) {
				snprintf(c->about, sizeof(c->about), "%s", val);
			} else
				return cfail(err, errlen, path, line, "unknown [case] key '%s' (expected name, arch, about)", key);
			break;
		case S_UNWIND:
			if (parse_unwind(c, key, val, line, err, errlen))
				return -1;
			break;
		case S_SAMPLE:
			if (!strcmp(key, "at")) {
				have_at = true;
				char tmp[256];
				snprintf(tmp, sizeof(tmp), "%s", val);
				for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
					t = trim(t);
					if (!strcmp(t, "every-insn"))
						c->every_insn = true;
					else if (!strcmp(t, "in-callee"))
						c->in_callee = true;
					else
						return cfail(err, errlen, path, line, "at: expected every-insn and/or in-callee, got '%s'", t);
				}
			} else if (!strcmp(key, "profiles")) {
				char tmp[256];
				snprintf(tmp, sizeof(tmp), "%s", val);
				c->nprofiles = 0;
				for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
					enum pv_profile pp;
					if (pv_profile_parse(trim(t), &pp) || c->nprofiles >= 3)
						return cfail(err, errlen, path, line, "profiles: expected up to 3 of current, v6.1, 5.x-0x40");
					c->profiles[c->nprofiles++] = (int)pp;
				}
			} else if (!strcmp(key, "stride")) {
				long long v;
				if (parse_int(val, &v) || v < 1 || v > (1 << 20))
					return cfail(err, errlen, path, line, "stride: expected a byte count between trampolines");
				c->stride = (int)v;
			} else if (!strcmp(key, "stack_size")) {
				char tmp[256];
				snprintf(tmp, sizeof(tmp), "%s", val);
				c->nstack_sizes = 0;
				for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
					long long v;
					if (parse_int(trim(t), &v) || v < 8 || v > 65528 || v % 8 || c->nstack_sizes >= 4)
						return cfail(err, errlen, path, line,
							     "stack_size: expected up to 4 sizes, multiples of 8 in 8..65528 (perf's limits)");
					c->stack_sizes[c->nstack_sizes++] = (int)v;
				}
			} else if (!strcmp(key, "host")) {
				if ((c->host = hx_host_parse(val)) < 0)
					return cfail(err, errlen, path, line, "host: expected one of %s, got '%s'", hx_host_names, val);
			} else if (!strcmp(key, "depth")) {
				long long d;
				if (parse_int(val, &d) || d < 1 || d > HX_MAX_DEPTH)
					return cfail(err, errlen, path, line, "depth: expected 1..%d", HX_MAX_DEPTH);
				c->depth = (int)d;
			} else
				return cfail(err, errlen, path, line, "unknown [sample] key '%s' (expected at, depth, host, stack_size, stride, profiles)", key);
			break;
		case S_EXPECT:
			if (parse_expect(c, key, val, line, err, errlen))
				return -1;
			break;
		default:
			break;
		}
	}
	if (!c->name[0])
		return cfail(err, errlen, path, line, "missing 'name' in [case]");
	if (!c->arch[0])
		return cfail(err, errlen, path, line, "missing 'arch' in [case]");
	if (!c->about[0])
		return cfail(err, errlen, path, line, "missing 'about' in [case]: say why the expectations are what they are");
	if (!c->nops)
		return cfail(err, errlen, path, line, "missing [code] or no ops in it");
	if (!have_at)
		c->every_insn = c->in_callee = true;
	if (c->has_leaf) {
		if (!c->nleaf)
			return cfail(err, errlen, path, leaf_line, "[leaf] has no ops");
		if (c->in_callee)
			return cfail(err, errlen, path, leaf_line,
				     "a [leaf] replaces the C target: sample it with 'at = every-insn' (no in-callee)");
		if (c->depth != 1)
			return cfail(err, errlen, path, leaf_line, "a [leaf] needs depth = 1");
		if (c->host != HX_HOST_FP)
			return cfail(err, errlen, path, leaf_line, "a [leaf] replaces the host's C target: it needs host = fp");
	}
	if (!c->nexpect)
		return cfail(err, errlen, path, line, "missing [expect]");
	if (c->unw.cfi == TR_CFI_DIRECTIVES) {
		bool any = false;
		for (size_t i = 0; i < c->nops; i++)
			any |= c->ops[i].kind == TR_OP_CFI;
		if (!any)
			return cfail(err, errlen, path, line, "cfi = directives but [code] has no .cfi_* lines");
	}
	return 0;
}

int hx_case_load(struct hx_case *c, const char *path, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	char *buf = malloc(HX_CASE_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	size_t n = fread(buf, 1, HX_CASE_MAX_BYTES + 1, f);
	fclose(f);
	if (n > HX_CASE_MAX_BYTES) {
		free(buf);
		snprintf(err, errlen, "%s: larger than %d bytes", path, HX_CASE_MAX_BYTES);
		return -1;
	}
	int rc = hx_case_parse(c, path, buf, n, err, errlen);
	free(buf);
	return rc;
}

void hx_case_free(struct hx_case *c)
{
	free(c->text);
	c->text = NULL;
}

static bool item_matches(const struct hx_where *w, const char *where, int offset)
{
	if (w->where[0])
		return !strcmp(w->where, where);
	return offset >= 0 && w->offset == offset;
}

static const struct hx_expect *find_expect(const struct hx_case *c, const char *unwinder,
					   const char *profile, int stack_size)
{
	char keys[4][64];
	snprintf(keys[0], sizeof(keys[0]), "%s@%s@%d", unwinder, profile ? profile : "", stack_size);
	snprintf(keys[1], sizeof(keys[1]), "%s@%s", unwinder, profile ? profile : "");
	snprintf(keys[2], sizeof(keys[2]), "%s@%d", unwinder, stack_size);
	snprintf(keys[3], sizeof(keys[3]), "%s", unwinder);
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < c->nexpect; i++)
			if (!strcmp(c->expect[i].unwinder, keys[k]))
				return &c->expect[i];
	return NULL;
}

bool hx_case_has_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			int stack_size)
{
	return find_expect(c, unwinder, profile, stack_size) != NULL;
}

const char *hx_case_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			   int stack_size, const char *where, int offset)
{
	const struct hx_expect *x = find_expect(c, unwinder, profile, stack_size);
	if (!x)
		return NULL;
	/* the last matching exception wins, like a later line overriding */
	const char *v = x->verdict;
	for (int e = 0; e < x->nexc; e++)
		for (int k = 0; k < x->exc[e].nitems; k++)
			if (item_matches(&x->exc[e].items[k], where, offset))
				v = x->exc[e].verdict;
	return v;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_path(char ***out, int *n, int *cap, const char *p)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		char **q = realloc(*out, (size_t)*cap * sizeof(char *));
		if (!q)
			return -1;
		*out = q;
	}
	(*out)[(*n)++] = strdup(p);
	return 0;
}

int hx_case_glob(const char *const *paths, int npaths, char ***out, int *n,
		 char *err, size_t errlen)
{
	int cap = 0;
	*out = NULL;
	*n = 0;
	for (int i = 0; i < npaths; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (push_path(out, n, &cap, paths[i]))
				return -1;
			continue;
		}
		DIR *d = opendir(paths[i]);
		if (!d) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
		int first = *n;
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (l < 6 || strcmp(de->d_name + l - 5, ".case"))
				continue;
			char p[2048];
			snprintf(p, sizeof(p), "%s/%s", paths[i], de->d_name);
			if (push_path(out, n, &cap, p)) {
				closedir(d);
				return -1;
			}
		}
		closedir(d);
		qsort(*out + first, (size_t)(*n - first), sizeof(char *), cmpstr);
	}
	return 0;
}
