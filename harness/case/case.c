/* Case file parser: INI-like sections, strict, file:line in every error. */
#include "harness/case/case.h"
#include "harness/case/casegen.h"
#include "harness/case/columns.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"

#include <ctype.h>
#include <dirent.h>
#include <dwarf.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const verdicts[] = { "ok", "truncated", "skipped", "wrong", "duplicate",
					"error", "consistent", "inconsistent", NULL };

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
		return -EINVAL;
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
			return -EINVAL;
		v |= names[i].v;
		parts++;
	}
	if (!parts)
		return -EINVAL;
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
			return -EINVAL;
		if (n >= cap)
			return -ERANGE;
		char b[3] = { s[0], s[1], 0 };
		out[n++] = (uint8_t)strtoul(b, NULL, 16);
		s += 2;
	}
	*len = n;
	return 0;
}

/* An offset of an 'at' list, bare or after FUNCTION+: decimal ("7") or hex
 * with 0x ("0x7"), one number either way.  0, -EINVAL not a number, -EDOM a
 * leading 0 (octal to strtoll, decimal to a reader: refused as ambiguous). */
static int parse_offset(const char *s, long long *out)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *d = hex ? s + 2 : s;
	size_t n = strspn(d, hex ? "0123456789abcdefABCDEF" : "0123456789");
	if (!n || d[n] || n > 8)
		return -EINVAL;
	if (!hex && n > 1 && d[0] == '0')
		return -EDOM;
	*out = strtoll(d, NULL, hex ? 16 : 10);
	return 0;
}

#define OFFSET_FORMS "decimal (7) or 0x hex (0x7)"

static int offset_fail(const char *t, int rc, const char *path, int line, struct ju_err *err)
{
	if (rc == -EDOM)
		return ju_err_line(err, EINVAL, path, line,
			           "'%s': a leading 0 is ambiguous (octal or decimal?): write the offset as " OFFSET_FORMS, t);
	return ju_err_line(err, EINVAL, path, line, "'%s': expected an offset, " OFFSET_FORMS, t);
}

/* "tramp2+0x3" / "tramp+7" / "leaf+0x4" / "callee" into w's function and offset */
static int parse_where(char *t, struct hx_where *w, const char *path, int line, struct ju_err *err)
{
	/* cut short it could lose its '+0xOFF' (found by fuzz/fuzz_case.c) */
	if (strlen(t) >= sizeof(w->where))
		return ju_err_line(err, EINVAL, path, line, "'%.40s%s' is longer than %zu characters",
			           t, strlen(t) > 40 ? "..." : "", sizeof(w->where) - 1);
	snprintf(w->where, sizeof(w->where), "%s", t);
	w->inner = false;
	if (!strcmp(t, "callee")) {
		w->fn = HX_FN_CALLEE;
		w->offset = -1;
		return 0;
	}
	char *plus = strchr(t, '+');
	*plus = 0;
	w->fn = hx_case_fn_id(t);
	*plus = '+';
	long long off;
	int rc = parse_offset(plus + 1, &off);
	if (rc)
		return offset_fail(t, rc, path, line, err);
	if (off > 65535)
		return ju_err_line(err, EINVAL, path, line, "'%s': offset %lld out of range", t, off);
	w->offset = (int)off;
	return 0;
}

/* "A-B": every offset from A to B */
static int parse_range(char *t, char *dash, struct hx_exc *e, const char *path, int line,
		       struct ju_err *err)
{
	long long a, b;
	*dash = 0;
	int ra = parse_offset(trim(t), &a), rb = parse_offset(trim(dash + 1), &b);
	if (ra == -EDOM || rb == -EDOM)
		return offset_fail(ra == -EDOM ? t : dash + 1, -EDOM, path, line, err);
	if (ra || rb || b < a || b - a > HX_MAX_ITEMS)
		return ju_err_line(err, EINVAL, path, line, "bad offset range '%s-%s' (expected A-B, A <= B, each " OFFSET_FORMS ")",
			           t, dash + 1);
	for (long long o = a; o <= b; o++) {
		if (e->nitems >= HX_MAX_ITEMS)
			return ju_err_line(err, EINVAL, path, line, "more than %d items in an 'at' list", HX_MAX_ITEMS);
		struct hx_where *w = &e->items[e->nitems++];
		w->offset = (int)o;
		w->fn = HX_FN_ANY;
		/* a range's ends are sample points; bytes between may be inside instructions */
		w->inner = o != a && o != b;
		w->where[0] = 0;
	}
	return 0;
}

/* "0,1,7" / "2-5" / "callee" / "tramp2+0x3" */
static int parse_items(char *list, struct hx_exc *e, const char *path, int line,
		       struct ju_err *err)
{
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		t = trim(t);
		int gen, first = e->nitems;
		if (hx_gen_suffix(t, &gen))
			return ju_err_line(err, EINVAL, path, line, "'%s': expected a generation after '@g' (1..%d)", t, HX_MAX_GENS);
		char *dash = strchr(t, '-');
		if (dash && dash != t && !strchr(t, '+')) {
			int prc = parse_range(t, dash, e, path, line, err);
			if (prc)
				return prc;
			for (int k = first; k < e->nitems; k++)
				e->items[k].gen = gen;
			continue;
		}
		if (e->nitems >= HX_MAX_ITEMS)
			return ju_err_line(err, EINVAL, path, line, "more than %d items in an 'at' list", HX_MAX_ITEMS);
		struct hx_where *w = &e->items[e->nitems];
		long long a;
		int rc = isdigit((unsigned char)t[0]) ? parse_offset(t, &a) : -EINVAL;
		if (isdigit((unsigned char)t[0])) {
			if (rc)
				return offset_fail(t, rc, path, line, err);
			if (a > 65535)
				return ju_err_line(err, EINVAL, path, line, "offset %lld out of range", a);
			w->offset = (int)a;
			w->fn = HX_FN_ANY;
			w->where[0] = 0;
			w->inner = false;
		} else if (!strcmp(t, "callee") || (!strncmp(t, "tramp", 5) && strchr(t, '+')) ||
			   (!strncmp(t, "leaf", 4) && strchr(t, '+'))) {
			int prc = parse_where(t, w, path, line, err);
			if (prc)
				return prc;
		} else {
			return ju_err_line(err, EINVAL, path, line,
				           "'%s' is not an offset, a range, 'callee' or 'trampN+0xOFF'", t);
		}
		w->gen = gen;
		e->nitems++;
	}
	return 0;
}

#define KEY_FORMS "UNWINDER, UNWINDER@PROFILE, UNWINDER@SIZE or UNWINDER@PROFILE@SIZE, then optionally @VERSION+, '?' in front if optional"

/* "1.8" -> 1008; -EINVAL if not MAJOR.MINOR */
static int version_code(const char *s, size_t n)
{
	unsigned maj, min;
	int used = 0;
	char buf[24];
	if (!s || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (sscanf(buf, "%3u.%3u%n", &maj, &min, &used) != 2 || (size_t)used != n)
		return -EINVAL;
	return (int)(maj * 1000 + min);
}

int hx_case_version_code(const char *v)
{
	if (!v)
		return -EINVAL;
	/* "1.6" or "0.188", and "1.8.1" compares as 1.8 */
	const char *dot = strchr(v, '.');
	const char *end = dot ? dot + 1 + strspn(dot + 1, "0123456789") : v;
	return version_code(v, (size_t)(end - v));
}

/* "@1.8+" at the end of a key: from that version of the unwinder's library on */
static int parse_key_version(struct hx_case *c, struct hx_expect *x, char *buf, const char *key, int line,
			     struct ju_err *err)
{
	char *last = strrchr(buf, '@');
	size_t n = last ? strlen(last + 1) : 0;
	if (!last || !n || last[n] != '+')
		return 0;
	unsigned maj, min;
	int used = 0;
	/* "@perf7.0+": the version of the perf that runs */
	x->by_perf = sscanf(last + 1, "perf%3u.%3u+%n", &maj, &min, &used) == 2 && (size_t)used == n;
	int v = x->by_perf ? (int)(maj * 1000 + min) : version_code(last + 1, n - 1);
	if (v < 0)
		return ju_err_line(err, EINVAL, c->path, line, "'%s': '%s' is no library version (expected MAJOR.MINOR+, e.g. 1.8+, or perfMAJOR.MINOR+)",
			           key, last + 1);
	*last = 0;
	x->min_version = v;
	return 0;
}

/* "?libdw@v6.1@8192": every part must name something that exists */
static int parse_key(struct hx_case *c, struct hx_expect *x, const char *key, int line,
		     struct ju_err *err)
{
	x->optional = key[0] == '?';
	key += x->optional;
	if (strlen(key) >= sizeof(x->unwinder) || !key[0] || key[0] == '@' ||
	    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-.@x+") != strlen(key))
		return ju_err_line(err, EINVAL, c->path, line, "expectation key '%s': expected " KEY_FORMS, key);
	snprintf(x->unwinder, sizeof(x->unwinder), "%s", key);
	char buf[48];
	snprintf(buf, sizeof(buf), "%s", key);
	int prc = parse_key_version(c, x, buf, key, line, err);
	if (prc)
		return prc;
	snprintf(x->base, sizeof(x->base), "%s", buf);
	char *parts[4] = { buf };
	int np = 1;
	for (char *p = strchr(buf, '@'); p && np < 4; p = strchr(p + 1, '@')) {
		*p = 0;
		parts[np++] = p + 1;
	}
	if (np > 3 || (np > 1 && !parts[np - 1][0]))
		return ju_err_line(err, EINVAL, c->path, line, "expectation key '%s': expected " KEY_FORMS, key);
	char names[256];
	if (!hx_case_column(parts[0])) {
		hx_case_column_list(NULL, names, sizeof(names));
		return ju_err_line(err, EINVAL, c->path, line, "no unwinder '%s' (expected one of %s)", parts[0], names);
	}
	snprintf(x->uw, sizeof(x->uw), "%s", parts[0]);
	if (x->min_version && !x->by_perf && !hx_case_column(parts[0])->lib_version)
		return ju_err_line(err, EINVAL, c->path, line, "'%s': %s unwinds with no library a version could key", key, parts[0]);
	x->profile = -1;
	for (int i = 1; i < np; i++) {
		long long v;
		enum pv_profile pp;
		if (!parse_int(parts[i], &v)) {
			if (v < 8 || v > 65528 || v % 8)
				return ju_err_line(err, EINVAL, c->path, line,
					           "'%s': invalid stack size %lld (perf's dump size is a multiple of 8 in 8..65528)", key, v);
			x->stack_size = (int)v;
		} else if (i == 1 && np >= 2 && !pv_profile_parse(parts[i], &pp)) {
			x->profile = (int)pp;
		} else {
			return ju_err_line(err, EINVAL, c->path, line,
				           "'%s': no perf profile '%s' (expected %s, then an optional stack size)",
				           key, parts[i], pv_profile_choices());
		}
	}
	if (np == 3 && (x->profile < 0 || !x->stack_size))
		return ju_err_line(err, EINVAL, c->path, line, "expectation key '%s': expected UNWINDER@PROFILE@SIZE", key);
	return 0;
}

/* "ok; skipped at 0,1,7; wrong at callee" */
static int parse_expect(struct hx_case *c, const char *key, char *val, int line,
			struct ju_err *err)
{
	if (c->nexpect >= HX_MAX_EXPECT)
		return ju_err_line(err, EINVAL, c->path, line, "more than %d expectations", HX_MAX_EXPECT);
	struct hx_expect *x = &c->expect[c->nexpect];
	/* the header only: an exception is cleared when it is used (20 KB of
	 * them per expectation, mostly never) */
	memset(x, 0, offsetof(struct hx_expect, exc));
	x->nexc = 0;
	x->line = 0;
	int prc = parse_key(c, x, key, line, err);
	if (prc)
		return prc;
	for (int i = 0; i < c->nexpect; i++)
		if (!strcmp(c->expect[i].unwinder, x->unwinder))
			return ju_err_line(err, EINVAL, c->path, line, "second expectation for '%s' (first on line %d)",
				           x->unwinder, c->expect[i].line);
	x->line = line;
	int part = 0;
	for (char *save = NULL, *t = strtok_r(val, ";", &save); t; t = strtok_r(NULL, ";", &save), part++) {
		t = trim(t);
		char *at = strstr(t, " at ");
		if (part == 0) {
			if (at)
				return ju_err_line(err, EINVAL, c->path, line,
					           "the first part of '%s' must be a plain verdict, then '; VERDICT at LIST'", key);
			if (!valid_verdict(t))
				return ju_err_line(err, EINVAL, c->path, line,
					           "unknown verdict '%s' (expected ok, truncated, skipped, wrong, duplicate, error, consistent or inconsistent, optionally followed by 'fallback')", t);
			snprintf(x->verdict, sizeof(x->verdict), "%s", t);
			continue;
		}
		if (!at)
			return ju_err_line(err, EINVAL, c->path, line, "expected 'VERDICT at LIST', got '%s'", t);
		if (x->nexc >= HX_MAX_EXC)
			return ju_err_line(err, EINVAL, c->path, line, "more than %d exceptions", HX_MAX_EXC);
		*at = 0;
		char *v = trim(t);
		if (!valid_verdict(v))
			return ju_err_line(err, EINVAL, c->path, line, "unknown verdict '%s'", v);
		struct hx_exc *e = &x->exc[x->nexc++];
		e->nitems = 0;
		snprintf(e->verdict, sizeof(e->verdict), "%s", v);
		prc = parse_items(at + 4, e, c->path, line, err);
		if (prc)
			return prc;
	}
	if (!x->verdict[0])
		return ju_err_line(err, EINVAL, c->path, line, "empty expectation for '%s'", key);
	c->nexpect++;
	return 0;
}

static int parse_unwind(struct hx_case *c, const char *key, char *val, int line,
			struct ju_err *err)
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
				return ju_err_line(err, EINVAL, c->path, line, rc == -ERANGE ? "CFA program longer than %zu bytes"
					           : "cfi = bytes: expected hex bytes like '41 0e 10'", sizeof(o->prog));
		} else
			return ju_err_line(err, EINVAL, c->path, line,
				           "cfi: expected derived, directives, none or 'bytes <hex>', got '%s'", val);
	} else if (!strcmp(key, "cie")) {
		if (!strcmp(val, "none"))
			o->cie_aug[0] = 0;
		else if (strspn(val, "zRPLS") == strlen(val) && strlen(val) < sizeof(o->cie_aug) && val[0])
			snprintf(o->cie_aug, sizeof(o->cie_aug), "%s", val);
		else
			return ju_err_line(err, EINVAL, c->path, line, "cie: expected an augmentation like zR, zPLR, zLR, zRS or none");
	} else if (!strcmp(key, "cie_version")) {
		long long v;
		if (parse_int(val, &v) || (v != 1 && v != 3))
			return ju_err_line(err, EINVAL, c->path, line, "cie_version: expected 1 or 3");
		o->cie_version = (int)v;
	} else if (!strcmp(key, "fde_enc")) {
		if (parse_enc(val, &o->fde_enc))
			return ju_err_line(err, EINVAL, c->path, line, "fde_enc: expected DW_EH_PE names like pcrel|sdata4, got '%s'", val);
	} else if (!strcmp(key, "lsda_enc")) {
		/* with 'L' in cie: every FDE's augmentation data then holds a null LSDA pointer of this encoding */
		if (parse_enc(val, &o->lsda_enc) || (o->lsda_enc != DW_EH_PE_omit && (o->lsda_enc & 0x0f) == DW_EH_PE_uleb128))
			return ju_err_line(err, EINVAL, c->path, line, "lsda_enc: expected omit or a fixed-size encoding like udata4 or pcrel|sdata4, got '%s'", val);
	} else if (!strcmp(key, "table_enc")) {
		if (parse_enc(val, &o->table_enc))
			return ju_err_line(err, EINVAL, c->path, line, "table_enc: expected names like datarel|sdata4 or omit");
		o->hdr_table = o->table_enc != DW_EH_PE_omit;
	} else if (!strcmp(key, "hdr")) {
		if (!strcmp(val, "after"))
			o->hdr = TR_HDR_AFTER;
		else if (!strcmp(val, "before"))
			o->hdr = TR_HDR_BEFORE;
		else if (!strcmp(val, "none"))
			o->hdr = TR_HDR_NONE;
		else
			return ju_err_line(err, EINVAL, c->path, line, "hdr: expected after, before or none");
	} else if (!strcmp(key, "mapped")) {
		long long v;
		if (!strcmp(val, "auto"))
			o->mapped = -1;
		else if (!parse_int(val, &v) && v >= 0 && v < (1ll << 32))
			o->mapped = v;
		else
			return ju_err_line(err, EINVAL, c->path, line, "mapped: expected auto or a byte count");
	} else if (!strcmp(key, "terminator")) {
		if (strcmp(val, "yes") && strcmp(val, "no"))
			return ju_err_line(err, EINVAL, c->path, line, "terminator: expected yes or no");
		o->terminator = !strcmp(val, "yes");
	} else if (!strcmp(key, "order")) {
		if (strcmp(val, "before-load") && strcmp(val, "after-load"))
			return ju_err_line(err, EINVAL, c->path, line, "order: expected before-load (as perf needs) or after-load");
		c->unwind_after_load = !strcmp(val, "after-load");
	} else if (!strcmp(key, "eh_frame")) {
		if (strcmp(val, "aligned") && strcmp(val, "unaligned"))
			return ju_err_line(err, EINVAL, c->path, line, "eh_frame: expected aligned or unaligned");
		o->eh_unaligned = !strcmp(val, "unaligned");
	} else {
		return ju_err_line(err, EINVAL, c->path, line,
			           "unknown [unwind] key '%s' (expected cfi, cie, cie_version, fde_enc, lsda_enc, hdr, table_enc, mapped, terminator, eh_frame, order)", key);
	}
	return 0;
}

/* The generated code an expectation's offsets must land in: the instruction
 * starts of the trampoline and of the [leaf]. */
struct code_map {
	struct tr_func *tramp, *leaf;
};

static bool is_boundary(const struct tr_func *f, long long off)
{
	for (size_t r = 0; f && r < f->nrows; r++)
		if (f->rows[r].offset == off)
			return true;
	return false;
}

/* "tramp: 0,1,4,9" for a message */
static void list_starts(const char *name, const struct tr_func *f, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "%s: ", name);
	for (size_t r = 0; r < f->nrows && off < len; r++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", r ? "," : "", f->rows[r].offset);
}

static int bad_offset(const struct hx_case *c, const struct code_map *m, int line, const char *what,
		      const struct tr_func *f, long long off, struct ju_err *err)
{
	char t[512], l[512] = "";
	list_starts("tramp", m->tramp, t, sizeof(t));
	if (m->leaf)
		list_starts("; leaf", m->leaf, l, sizeof(l));
	bool past = f ? off >= (long long)f->code_size
		      : off >= (long long)m->tramp->code_size && (!m->leaf || off >= (long long)m->leaf->code_size);
	return ju_err_line(err, EINVAL, c->path, line, "'%s': offset %lld is %s (instructions start at %s%s)", what, off,
		           past ? "past the code" : "inside an instruction", t, l);
}

/* One 'at' item: an offset of any generated function, 'callee', trampK+0xN or leaf+0xN. */
static int check_item(const struct hx_case *c, const struct code_map *m, const struct hx_where *w,
		      int line, struct ju_err *err)
{
	if (!w->where[0]) {
		if (w->inner)
			return 0;
		if (!c->every_insn)
			return ju_err_line(err, EINVAL, c->path, line, "offset %d: the case samples no instruction (at = every-insn)", w->offset);
		if (!is_boundary(m->tramp, w->offset) && !is_boundary(m->leaf, w->offset)) {
			char what[16];
			snprintf(what, sizeof(what), "%d", w->offset);
			return bad_offset(c, m, line, what, NULL, w->offset, err);
		}
		return 0;
	}
	if (w->fn == HX_FN_CALLEE)
		return c->in_callee ? 0 : ju_err_line(err, EINVAL, c->path, line,
						      "'callee': the case does not sample the C target (at = in-callee)");
	const struct tr_func *f = m->tramp;
	if (w->fn == HX_FN_LEAF) {
		if (!m->leaf)
			return ju_err_line(err, EINVAL, c->path, line, "'%s': the case has no [leaf]", w->where);
		f = m->leaf;
	} else if (w->fn < 0 || w->fn >= c->depth) {
		return ju_err_line(err, EINVAL, c->path, line, "'%s': no function '%.*s' (depth %d: tramp%s%s)", w->where,
			           (int)strcspn(w->where, "+"), w->where, c->depth, c->depth > 1 ? " .. tramp" : "",
			           c->depth > 1 ? "N" : "");
	}
	if (!c->every_insn)
		return ju_err_line(err, EINVAL, c->path, line, "'%s': the case samples no instruction (at = every-insn)", w->where);
	if (!is_boundary(f, w->offset))
		return bad_offset(c, m, line, w->where, f, w->offset, err);
	return 0;
}

static bool in_list(const int *v, int n, int dflt, int want)
{
	if (!n)
		return want == dflt;
	for (int i = 0; i < n; i++)
		if (v[i] == want)
			return true;
	return false;
}

static int check_verdict(const struct hx_case *c, const struct uw_unwinder *u, const char *v, int line,
			 struct ju_err *err)
{
	bool judged = !strcmp(v, "consistent") || !strcmp(v, "inconsistent");
	if (judged && u->ref != UW_REF_TRUTH)
		return ju_err_line(err, EINVAL, c->path, line,
			           "%s: '%s' judges the emitted info, which only the oracle does (expected ok, truncated, skipped, wrong, duplicate or error)",
			           u->name, v);
	return 0;
}

/* An expectation's key against the case's arch, profiles and sizes. */
static int check_key(const struct hx_case *c, const struct hx_expect *x, struct ju_err *err)
{
	const struct uw_unwinder *u = hx_case_column(x->uw);
	if (x->optional)
		return 0;
	if (u->probe)
		return ju_err_line(err, EINVAL, c->path, x->line,
			           "%s runs only where this machine has it (real perf); write '?%s'", x->uw, x->unwinder);
	if (!uw_unwinder_default_on(u, c->arch)) {
		char names[256];
		hx_case_column_list(c->arch, names, sizeof(names));
		return ju_err_line(err, EINVAL, c->path, x->line,
			           "%s does not run on %s by default (there: %s); write '?%s' to keep it for --unwinders",
			           x->uw, c->arch, names, x->unwinder);
	}
	if (x->profile >= 0 && !in_list(c->profiles, c->nprofiles, PV_CURRENT, x->profile))
		return ju_err_line(err, EINVAL, c->path, x->line,
			           "'%s': the case never replays under profile %s (add it to [sample] profiles, or write '?%s')",
			           x->unwinder, pv_profile_name((enum pv_profile)x->profile), x->unwinder);
	if (x->stack_size && !in_list(c->stack_sizes, c->nstack_sizes, 8192, x->stack_size))
		return ju_err_line(err, EINVAL, c->path, x->line,
			           "'%s': the case never replays with stack size %d (add it to [sample] stack_size, or write '?%s')",
			           x->unwinder, x->stack_size, x->unwinder);
	return 0;
}

/* Every expectation names something this case runs: unwinder, profile,
 * size, verdict and every sample point. */
static int check_expects(const struct hx_case *c, struct ju_err *err)
{
	struct code_map m = { 0 };
	const struct tr_arch *a = tr_arch_by_name(c->arch);
	struct ju_err eerr;
	int rc = 0;
	m.tramp = calloc(1, sizeof(*m.tramp));
	m.leaf = c->has_leaf ? calloc(1, sizeof(*m.leaf)) : NULL;
	if (!m.tramp || (c->has_leaf && !m.leaf)) {
		rc = ju_err_line(err, ENOMEM, c->path, 0, "out of memory");
		goto out;
	}
	/* code the generator cannot encode is the capture's error to report */
	bool code_ok = a && !tr_emit(a, c->ops, c->nops, m.tramp, &eerr) &&
		       (!m.leaf || !tr_emit(a, c->leaf_ops, c->nleaf, m.leaf, &eerr));
	for (int i = 0; i < c->nexpect && !rc; i++) {
		const struct hx_expect *x = &c->expect[i];
		const struct uw_unwinder *u = hx_case_column(x->uw);
		rc = check_key(c, x, err);
		if (!rc)
			rc = check_verdict(c, u, x->verdict, x->line, err);
		for (int e = 0; e < x->nexc && !rc; e++) {
			rc = check_verdict(c, u, x->exc[e].verdict, x->line, err);
			for (int k = 0; k < x->exc[e].nitems && !rc && code_ok; k++)
				if (x->exc[e].items[k].gen < 2)   /* a later generation's: hx_gen_check */
					rc = check_item(c, &m, &x->exc[e].items[k], x->line, err);
		}
	}
out:
	free(m.tramp);
	free(m.leaf);
	return rc;
}

/* The parser's state across lines. */
enum sec { S_NONE, S_CASE, S_CODE, S_UNWIND, S_SAMPLE, S_EXPECT, S_LEAF, S_GEN, S_COUNT };

struct pstate {
	struct hx_case *c;
	enum sec sec;
	bool seen[S_COUNT];
	int leaf_line, expect_line;
	int gi;                  /* in S_GEN: the generation's index in c->gens */
	bool have_at;
	bool expect_optional;    /* run --observe: no [expect] yet */
	struct ju_err *err;
};

/* key = value in [case] and [sample]: adding a key is one table line */
struct key_parser {
	const char *key;
	int (*parse)(struct pstate *ps, char *val, int line);
};

#define PFAIL(ps, line, ...) ju_err_line((ps)->err, EINVAL, (ps)->c->path, line, __VA_ARGS__)

static int case_name(struct pstate *ps, char *val, int line)
{
	struct hx_case *c = ps->c;
	if (strlen(val) >= sizeof(c->name) || !*val ||
	    strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(val))
		return PFAIL(ps, line, "name: expected 1-63 characters of [A-Za-z0-9._-]");
	snprintf(c->name, sizeof(c->name), "%s", val);
	return 0;
}

static int case_arch(struct pstate *ps, char *val, int line)
{
	const struct tr_arch *a = tr_arch_by_name(val);
	if (!a || strcmp(a->facts->name, val)) {
		char names[128];
		tr_arch_names(names, sizeof(names));
		return PFAIL(ps, line, "arch: expected one of %s, got '%s'", names, val);
	}
	snprintf(ps->c->arch, sizeof(ps->c->arch), "%s", val);
	return 0;
}

static int case_about(struct pstate *ps, char *val, int line)
{
	(void)line;
	snprintf(ps->c->about, sizeof(ps->c->about), "%s", val);
	return 0;
}

static int sample_at(struct pstate *ps, char *val, int line)
{
	char tmp[256];
	ps->have_at = true;
	snprintf(tmp, sizeof(tmp), "%s", val);
	for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		t = trim(t);
		if (!strcmp(t, "every-insn"))
			ps->c->every_insn = true;
		else if (!strcmp(t, "in-callee"))
			ps->c->in_callee = true;
		else
			return PFAIL(ps, line, "at: expected every-insn and/or in-callee, got '%s'", t);
	}
	return 0;
}

static int sample_profiles(struct pstate *ps, char *val, int line)
{
	struct hx_case *c = ps->c;
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s", val);
	c->nprofiles = 0;
	for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		enum pv_profile pp;
		if (pv_profile_parse(trim(t), &pp) || c->nprofiles >= 3)
			return PFAIL(ps, line, "profiles: expected up to 3 of %s", pv_profile_choices());
		c->profiles[c->nprofiles++] = (int)pp;
	}
	return 0;
}

static int sample_stride(struct pstate *ps, char *val, int line)
{
	long long v;
	if (parse_int(val, &v) || v < 1 || v > (1 << 20))
		return PFAIL(ps, line, "stride: expected a byte count between trampolines");
	ps->c->stride = (int)v;
	return 0;
}

static int sample_stack_size(struct pstate *ps, char *val, int line)
{
	struct hx_case *c = ps->c;
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s", val);
	c->nstack_sizes = 0;
	for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (parse_int(trim(t), &v) || v < 8 || v > 65528 || v % 8 || c->nstack_sizes >= 4)
			return PFAIL(ps, line, "stack_size: expected up to 4 sizes, multiples of 8 in 8..65528 (perf's limits)");
		c->stack_sizes[c->nstack_sizes++] = (int)v;
	}
	return 0;
}

static int sample_depth(struct pstate *ps, char *val, int line)
{
	long long d;
	if (parse_int(val, &d) || d < 1 || d > HX_MAX_DEPTH)
		return PFAIL(ps, line, "depth: expected 1..%d", HX_MAX_DEPTH);
	ps->c->depth = (int)d;
	return 0;
}

static int sample_host(struct pstate *ps, char *val, int line)
{
	if ((ps->c->host = hx_host_parse(val)) < 0)
		return PFAIL(ps, line, "host: expected one of %s, got '%s'", hx_host_names, val);
	return 0;
}

static const struct key_parser case_keys[] = {
	{ "name", case_name }, { "arch", case_arch }, { "about", case_about }, { NULL, NULL },
};

static const struct key_parser sample_keys[] = {
	{ "at", sample_at }, { "depth", sample_depth }, { "stack_size", sample_stack_size },
	{ "stride", sample_stride }, { "profiles", sample_profiles }, { "host", sample_host },
	{ NULL, NULL },
};

static int parse_key_table(struct pstate *ps, const struct key_parser *t, const char *sec, char *key,
			   char *val, int line)
{
	char known[128];
	size_t off = 0;
	for (int i = 0; t[i].key; i++) {
		if (!strcmp(key, t[i].key))
			return t[i].parse(ps, val, line);
		off += (size_t)snprintf(known + off, sizeof(known) > off ? sizeof(known) - off : 0, "%s%s",
					i ? ", " : "", t[i].key);
	}
	return PFAIL(ps, line, "unknown %s key '%s' (expected %s)", sec, key, known);
}

/* "[section]" */
static int parse_section(struct pstate *ps, const char *s, int line)
{
	static const char *const names[S_COUNT] = { "", "[case]", "[code]", "[unwind]", "[sample]", "[expect]",
						    "[leaf]", "" };
	int i, rc = hx_gen_section(ps->c, s, line, &ps->gi, ps->err);
	if (rc <= 0) {
		ps->sec = S_GEN;
		return rc;
	}
	for (i = 1; i < S_COUNT; i++)
		if (!strcmp(s, names[i]))
			break;
	if (i == S_COUNT)
		return PFAIL(ps, line, "unknown section '%s' (expected [case], [code], [code 2].., [leaf], [unwind], [sample], [expect])", s);
	if (ps->seen[i])
		return PFAIL(ps, line, "section %s appears twice", s);
	ps->seen[i] = true;
	ps->sec = (enum sec)i;
	if (ps->sec == S_LEAF) {
		ps->c->has_leaf = true;
		ps->leaf_line = line;
	}
	if (ps->sec == S_EXPECT)
		ps->expect_line = line;
	return 0;
}

/* one op of [code] or [leaf] */
static int parse_op(struct pstate *ps, const char *s, int line)
{
	struct hx_case *c = ps->c;
	bool leaf = ps->sec == S_LEAF;
	size_t *n = leaf ? &c->nleaf : &c->nops;
	if (*n >= HX_MAX_OPS)
		return PFAIL(ps, line, leaf ? "more than %d ops in [leaf]" : "more than %d ops", HX_MAX_OPS);
	struct tr_op *op = leaf ? &c->leaf_ops[*n] : &c->ops[*n];
	struct ju_err operr;
	if (tr_op_parse(s, op, &operr))
		return PFAIL(ps, line, "%s", operr.msg);
	if (leaf && (op->kind == TR_OP_CALL_TARGET || op->kind == TR_OP_TAIL_JUMP ||
		     (op->kind == TR_OP_RAW && (op->effect == TR_OP_CALL_TARGET || op->effect == TR_OP_TAIL_JUMP))))
		return PFAIL(ps, line, "a [leaf] returns to the trampoline: %s is not allowed in it", tr_op_name(op->kind));
	if (leaf && op->kind == TR_OP_CFI)
		return PFAIL(ps, line, "a [leaf]'s CFI is derived from its ops: no .cfi_* lines");
	op->line = line;
	(*n)++;
	return 0;
}

/* One line with its comment stripped and trimmed. */
static int parse_line(struct pstate *ps, char *s, int line)
{
	if (*s == '[')
		return parse_section(ps, s, line);
	if (ps->sec == S_NONE)
		return PFAIL(ps, line, "text before the first section (expected [case])");
	if (ps->sec == S_CODE || ps->sec == S_LEAF)
		return parse_op(ps, s, line);
	if (ps->sec == S_GEN)
		return hx_gen_line(ps->c, ps->gi, s, line, ps->err);
	char *eq = strchr(s, '=');
	if (!eq)
		return PFAIL(ps, line, "expected 'key = value', got '%s'", s);
	*eq = 0;
	char *key = trim(s), *val = trim(eq + 1);
	if (!*key)
		return PFAIL(ps, line, "missing key before '='");
	switch (ps->sec) {
	case S_CASE:
		return parse_key_table(ps, case_keys, "[case]", key, val, line);
	case S_UNWIND:
		return parse_unwind(ps->c, key, val, line, ps->err);
	case S_SAMPLE:
		return parse_key_table(ps, sample_keys, "[sample]", key, val, line);
	case S_EXPECT:
		return parse_expect(ps->c, key, val, line, ps->err);
	default:
		return 0;
	}
}

int hx_case_expect_line(struct hx_case *c, const char *text, int line, struct ju_err *err)
{
	char buf[1024];
	struct pstate ps = { .c = c, .sec = S_EXPECT, .err = err };
	if (strlen(text) >= sizeof(buf) || strchr(text, '['))
		return ju_err_line(err, EINVAL, c->path, line, "expected one [expect] line, under %zu characters", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", text);
	return parse_line(&ps, trim(buf), line);     /* an [expect] line, as in a case */
}

/* What the whole file must have, once every line is read. */
static int check_case(struct pstate *ps, int line)
{
	struct hx_case *c = ps->c;
	if (!c->name[0])
		return PFAIL(ps, line, "missing 'name' in [case]");
	if (!c->arch[0])
		return PFAIL(ps, line, "missing 'arch' in [case]");
	if (!c->about[0])
		return PFAIL(ps, line, "missing 'about' in [case]: say why the expectations are what they are");
	if (!c->nops)
		return PFAIL(ps, line, "missing [code] or no ops in it");
	if (!ps->have_at)
		c->every_insn = c->in_callee = true;
	if (c->has_leaf) {
		if (!c->nleaf)
			return PFAIL(ps, ps->leaf_line, "[leaf] has no ops");
		if (c->in_callee)
			return PFAIL(ps, ps->leaf_line,
				     "a [leaf] replaces the C target: sample it with 'at = every-insn' (no in-callee)");
		if (c->depth != 1)
			return PFAIL(ps, ps->leaf_line, "a [leaf] needs depth = 1");
		if (c->host != HX_HOST_FP)
			return PFAIL(ps, ps->leaf_line, "a [leaf] replaces the host's C target: it needs host = fp");
	}
	if (!ps->seen[S_EXPECT] && !ps->expect_optional)
		return PFAIL(ps, line, "missing [expect]");
	if (!c->nexpect && !ps->expect_optional) {
		char names[256];
		hx_case_column_list(c->arch, names, sizeof(names));
		return PFAIL(ps, ps->expect_line,
			     "[expect] is empty: give each unwinder that runs on %s a verdict (%s), e.g. 'fp = ok'",
			     c->arch, names);
	}
	if (c->unw.cfi == TR_CFI_DIRECTIVES) {
		bool any = false;
		for (size_t i = 0; i < c->nops; i++)
			any |= c->ops[i].kind == TR_OP_CFI;
		if (!any)
			return PFAIL(ps, line, "cfi = directives but [code] has no .cfi_* lines");
	}
	int rc = check_expects(c, ps->err);
	if (!rc)
		rc = hx_gen_check(c, ps->err);
	if (rc)
		return rc;
	return hx_case_compile(c, ps->err);
}

/* Zero a case but for its three big arrays (420 KB, mostly never used):
 * tr_op_parse and parse_expect clear each element they fill, and nothing
 * reads past nops, nleaf or nexpect.  A run loads every case and the runner
 * parses each again: zeroing them all cost more than the rest of the parse. */
void hx_case_clear(struct hx_case *c)
{
	_Static_assert(offsetof(struct hx_case, ops) < offsetof(struct hx_case, gens) &&
		       offsetof(struct hx_case, gens) < offsetof(struct hx_case, nops) &&
		       offsetof(struct hx_case, nops) < offsetof(struct hx_case, leaf_ops) &&
		       offsetof(struct hx_case, leaf_ops) < offsetof(struct hx_case, nleaf) &&
		       offsetof(struct hx_case, nleaf) < offsetof(struct hx_case, expect) &&
		       offsetof(struct hx_case, expect) < offsetof(struct hx_case, nexpect),
		       "case_clear's ranges follow struct hx_case's field order");
	uint8_t *p = (uint8_t *)c;
	memset(p, 0, offsetof(struct hx_case, ops));
	memset(p + offsetof(struct hx_case, nops), 0, offsetof(struct hx_case, leaf_ops) - offsetof(struct hx_case, nops));
	memset(p + offsetof(struct hx_case, nleaf), 0, offsetof(struct hx_case, expect) - offsetof(struct hx_case, nleaf));
	memset(p + offsetof(struct hx_case, nexpect), 0, sizeof(*c) - offsetof(struct hx_case, nexpect));
}

int hx_case_parse(struct hx_case *c, const char *path, const char *text, size_t len,
		  char *err, size_t errlen)
{
	struct ju_err je;
	int rc = hx_case_parse_ex(c, path, text, len, 0, &je);
	if (rc)
		snprintf(err, errlen, "%s", je.msg);
	return rc;
}

int hx_case_parse_ex(struct hx_case *c, const char *path, const char *text, size_t len,
		     unsigned flags, struct ju_err *err)
{
	hx_case_clear(c);
	snprintf(c->path, sizeof(c->path), "%s", path);
	tr_unwind_opts_default(&c->unw);
	c->depth = 1;
	c->text = malloc(len + 1);
	if (!c->text)
		return ju_err_line(err, ENOMEM, path, 0, "out of memory");
	memcpy(c->text, text, len);
	c->text[len] = 0;
	c->text_len = len;
	if (memchr(text, 0, len))
		return ju_err_line(err, EINVAL, path, 1, "NUL byte in a case file");
	struct pstate ps = { .c = c, .sec = S_NONE, .err = err,
			     .expect_optional = flags & HX_CASE_NO_EXPECT };
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
			return ju_err_line(err, EINVAL, path, line, "line longer than %zu bytes", sizeof(buf) - 1);
		memcpy(buf, ls, ll);
		buf[ll] = 0;
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = 0;
		char *s = trim(buf);
		int rc = *s ? parse_line(&ps, s, line) : 0;
		if (rc)
			return rc;
	}
	return check_case(&ps, line);
}
