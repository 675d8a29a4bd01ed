/* JD062 code-reused: a CODE_LOAD whose code lies over the code of an earlier
 * load still live in perf's map tree, with other unwinding information (or
 * one of the two without).  perf's unwinders remember the earlier load there
 * (docs/perf-remembers.md, measured with perf 5.10.223, 6.1.192, 6.12.117
 * and 7.2.13 on tools/jit-reuse.c): the finding says what each generation
 * does, with both loads named by symbol and offset.  A load again with the
 * same unwinding information (the same code re-announced, or another body
 * of the same frame shape) is no finding: the rules perf kept are its own. */
#include "unwinders/lint/lint_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* the earlier load's name, read back from its record ("?" if unreadable) */
static void load_name(const struct lint_ctx *c, uint64_t off, char *buf, size_t n)
{
	struct jdr_iter it = { c->data, c->size, (size_t)off, c->hdr, 0 };
	struct jdr_rec o;
	struct ju_err e;
	snprintf(buf, n, "?");
	if (off < c->size && jdr_next(&it, &o, &e) > 0 && o.id == JD_CODE_LOAD && o.u.load.name)
		snprintf(buf, n, "%.60s", o.u.load.name);
}

void lint_reuse_check(struct lint_ctx *c, uint64_t rec_off, const struct inode *o, uint64_t start, uint64_t cend,
		      const char *name)
{
	if (c->reuse_said || !o->unw_known)
		return;
	if (o->has_unw == c->cur_has_unw && o->unw_hash == c->cur_unw_hash)
		return;
	c->reuse_said = true;
	char was[64];
	load_name(c, o->load_off, was, sizeof(was));
	uint64_t lo = start > o->code_start ? start : o->code_start, hi = cend < o->code_end ? cend : o->code_end;
	const char *how = !o->has_unw ? "unwinding information where the earlier had none" :
			  !c->cur_has_unw ? "no unwinding information where the earlier had some" :
					    "other unwinding information";
	lint_report(c, LR_CODE_REUSED, rec_off, "CODE_LOAD '%.60s' puts code at [0x%" PRIx64 ", 0x%" PRIx64 ") ('%.60s'+0x%"
		    PRIx64 "..+0x%" PRIx64 ") over the code of the CODE_LOAD '%s' at file offset 0x%" PRIx64 " ('%s'+0x%" PRIx64
		    "..+0x%" PRIx64 "), with %s.  perf 6.1 and 6.12 (libunwind, one address space per process, "
		    "UNW_CACHE_GLOBAL, flushed only at an exec) answer a pc there with the rules cached for '%s' once a "
		    "sample unwound through it; perf 7.x (libdw, one Dwfl per process, dropped only by maps__remove) "
		    "keeps '%s''s module at that base; perf 5.10 unwinds neither (its .eh_frame_hdr lookup is 0x40 off)",
		    name, lo, hi, name, lo - start, hi - start, was, o->load_off, was, lo - o->code_start,
		    hi - o->code_start, how, was, was);
}
