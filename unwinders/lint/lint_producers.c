/* jitdump linter, the rules found on real producers (tests/corpus,
 * docs/found-in-real-jits.md): loads perf gets no unwinding information
 * for (JD028 some of them, JD029 all of them), and a header whose flags are
 * not flags at all but uninitialized bytes (LLVM 19's JITLoaderPerf). */
#include "unwinders/lint/lint_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/decode.h"
#include "unwinders/uwarch.h"

/* The code of a load calls address 0 (JD082): LLVM's MCJIT writes its dump
 * before it relocates the code.  One finding per load naming every place. */
static void unrelocated(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	if (!l->code || !l->code_size)
		return;
	const struct uw_arch *ua = c->mach <= UINT16_MAX ? uw_arch_by_mach((uint16_t)c->mach) : NULL;
	if (!ua || !ua->decoder || !ua->decoder->calls_zero)
		return;
	struct lint_where w = { .load = r->off };
	char first[128] = "";
	size_t hits = ua->decoder->calls_zero(l->code, l->code_size, l->code_addr, w.pc, LINT_MAX_PCS, &w.npc, first,
					      sizeof(first));
	if (hits)
		lint_report_at(c, LR_CODE_UNRELOCATED, r->off, &w, "the CODE_LOAD at 0x%" PRIx64 " calls address 0 at +0x%"
			       PRIx64 " (%s), %zu call%s so: its code was dumped before the JIT relocated it, so perf's "
			       "jitted .so shows a call to 0 where the running code calls its target", r->off, w.pc[0],
			       first, hits, hits == 1 ? "" : "s");
}

/* the kernel's PID_MAX_LIMIT on 64-bit (include/linux/threads.h: 4 << 20):
 * no thread id is above it */
#define LINT_PID_MAX_LIMIT (4u << 20)

/* one CODE_LOAD walked: did perf hand it an UNWINDING_INFO?  and is its
 * code the code that ran? */
void lint_prod_on_load(struct lint_ctx *c, const struct jdr_rec *r, bool has_unwind)
{
	struct lint_prod *p = &c->prod;
	unrelocated(c, r);
	if (r->u.load.tid >= LINT_PID_MAX_LIMIT && !p->tid_bad++) {
		p->first_tid_off = r->off;
		p->first_tid = r->u.load.tid;
	}
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
	if (p->tid_bad)
		lint_report(c, LR_RECORD_TID, p->first_tid_off + JD_LOAD_TID, "%" PRIu64 " of the %" PRIu64 " CODE_LOADs have "
			    "a tid at or above the kernel's pid limit %u, the first %" PRIu32 " (0x%" PRIx32 ") at 0x%" PRIx64
			    ": no thread id (Erlang writes the low 32 bits of its pthread_t); perf files the code under the "
			    "record's pid all the same", p->tid_bad, p->loads_bare + p->loads_unw, LINT_PID_MAX_LIMIT,
			    p->first_tid, p->first_tid, p->first_tid_off);
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
