/* jitdump linter, the rules found on real producers (tests/corpus,
 * docs/found-in-real-jits.md): loads perf gets no unwinding information
 * for (JD028 some of them, JD029 all of them), and a header whose flags are
 * not flags at all but uninitialized bytes (LLVM 19's JITLoaderPerf). */
#include "unwinders/lint/lint_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* one CODE_LOAD walked: did perf hand it an UNWINDING_INFO? */
void lint_prod_on_load(struct lint_ctx *c, const struct jdr_rec *r, bool has_unwind)
{
	struct lint_prod *p = &c->prod;
	if (has_unwind) {
		p->loads_unw++;
		return;
	}
	if (!p->loads_bare++) {
		p->first_bare_off = r->off;
		const char *n = r->u.load.name ? r->u.load.name : "";
		snprintf(p->first_bare_name, sizeof(p->first_bare_name), "%s", n);
	}
}

void lint_prod_finish(struct lint_ctx *c)
{
	const struct lint_prod *p = &c->prod;
	static const struct lint_where every = { .whole = true };
	/* unwinding info perf hands to no load or the wrong one is JD030/JD031's: they name the cause */
	if (!p->loads_bare || c->sum->per_rule[LR_UNWIND_AFTER_LOAD] || c->sum->per_rule[LR_UNWIND_NO_LOAD])
		return;
	if (!p->loads_unw) {
		lint_report_at(c, LR_NO_UNWIND_INFO, 0, &every, "none of the %" PRIu64 " CODE_LOADs has "
			       "UNWINDING_INFO: perf's jitted .so files have no .eh_frame, so perf --call-graph dwarf "
			       "ends every chain at its first JIT frame", p->loads_bare);
		return;
	}
	struct lint_where w = { .load = p->first_bare_off, .whole = true };
	lint_report_at(c, LR_LOAD_NO_UNWIND, p->first_bare_off, &w, "%" PRIu64 " of the %" PRIu64
		       " CODE_LOADs have no UNWINDING_INFO while the other %" PRIu64 " have, the first '%.90s' "
		       "at 0x%" PRIx64 ": their jitted .so files have no .eh_frame, so perf --call-graph dwarf "
		       "ends a chain at their frames", p->loads_bare,
		       p->loads_bare + p->loads_unw, p->loads_unw, p->first_bare_name, p->first_bare_off);
}

/* Header flags that are not flags: more than the one defined bit set and
 * every byte printable (a path, as LLVM 19's JITLoaderPerf leaves them: its
 * header is not zeroed).  Writes a note for JD004 into buf. */
void lint_prod_flags_note(uint64_t flags, char *buf, size_t len)
{
	buf[0] = 0;
	unsigned printable = 0;
	char text[9] = "";
	for (int i = 0; i < 8; i++) {
		unsigned char b = (unsigned char)(flags >> (8 * i));
		printable += b >= 0x20 && b < 0x7f;
		text[i] = b >= 0x20 && b < 0x7f ? (char)b : '.';
	}
	if (printable >= 6)
		snprintf(buf, len, " (the bytes read \"%s\": text, not flags; the header was not "
			 "initialized, as LLVM 19's JITLoaderPerf leaves it)", text);
}
