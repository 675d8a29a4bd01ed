/* trace's terminal report: one row per JIT function (its jitdump symbol),
 * boundaries sampled / in the load, the boundaries never executed, findings. */
#include "harness/trace/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *end_text(const struct hx_trace_result *r, char *buf, size_t n)
{
	switch (r->end) {
	case HX_TRACE_EXITED: snprintf(buf, n, "exited with status %d", r->end_status); break;
	case HX_TRACE_SIGNALED: snprintf(buf, n, "killed by signal %d", r->end_status); break;
	case HX_TRACE_EXEC: snprintf(buf, n, "exec'd mid-trace (detached)"); break;
	case HX_TRACE_TIMEOUT: snprintf(buf, n, "ended at --time"); break;
	case HX_TRACE_INTERRUPTED: snprintf(buf, n, "ended by an interrupt of the tracer (SIGINT or SIGTERM): killed"); break;
	case HX_TRACE_DETACHED: snprintf(buf, n, "detached, running on (--pid: --time or an interrupt)"); break;
	}
	return buf;
}

static void load_row(FILE *f, const struct hx_trace_load *l)
{
	size_t hit = 0;
	for (size_t j = 0; j < l->nbps; j++)
		hit += l->bps[j].hits > 0;
	/* the name last: a JIT's symbols run long (CPython's carry the file) */
	char patch[64] = "";
	if (l->patches)
		snprintf(patch, sizeof(patch), "  patched by the JIT at +0x%" PRIx64 "%s", l->first_patch,
			 l->patches > 1 ? " and more" : "");
	fprintf(f, "  0x%-14" PRIx64 " %7zu/%-7zu %s%s%s%s%s\n", l->addr, hit, l->nbps, l->name,
		l->salted ? "  salted in the dump" : l->code_differs ? "  code differs from the dump" : "",
		l->undecodable ? "  not all decodable" : "", l->closed ? "  moved/closed" : "", patch);
	size_t foreign = 0;
	uint64_t first = 0;
	for (size_t j = 0; j < l->nbps; j++)
		if (l->bps[j].foreign && !foreign++)
			first = l->bps[j].addr - l->addr;
	if (foreign)
		fprintf(f, "    not sampled: %zu boundaries hold a breakpoint instruction of the program's own (the "
			"first at +0x%" PRIx64 ")\n", foreign, first);
	if (hit + foreign == l->nbps)
		return;
	fprintf(f, "    never executed:");
	size_t shown = 0;
	for (size_t j = 0; j < l->nbps && shown < 32; j++)
		if (!l->bps[j].hits && !l->bps[j].foreign) {
			fprintf(f, " +0x%" PRIx64, l->bps[j].addr - l->addr);
			shown++;
		}
	fprintf(f, "%s\n", hit + foreign + shown < l->nbps ? " ..." : "");
}

/* which path took the samples: --hw-breakpoints, or int3 alone */
static void hw_line(FILE *f, const struct hx_trace_result *r)
{
	if (r->hw_slots)
		fprintf(f, "  sampling: hardware breakpoints (%u per thread) took %" PRIu64 " samples, int3 stops %" PRIu64
			"; %" PRIu64 " hits dropped (boundary done, moved or an entry), %" PRIu64 " ring overflows, %" PRIu64
			" moves refused\n", r->hw_slots, r->hw_samples, r->samples - r->hw_samples, r->hw_dropped, r->hw_lost,
			r->hw_errors);
	else if (r->hw_note[0])
		fprintf(f, "  sampling: int3 stops only (hardware breakpoints not used: %s)\n", r->hw_note);
}

void hx_trace_report(FILE *f, const struct hx_trace_result *r)
{
	char buf[128];
	fprintf(f, "trace: pid %d %s; jitdump %s (%" PRIu64 " bytes, %" PRIu64 " records)\n",
		(int)r->pid, end_text(r, buf, sizeof(buf)), r->jitdump[0] ? r->jitdump : "(none)", r->jd_read,
		r->nrecs);
	fprintf(f, "  %zu loads, %" PRIu64 " samples, %" PRIu64 " threads, %" PRIu64 " traps not ours, %" PRIu64
		" execs followed before any JIT code\n", r->nloads, r->samples, r->threads_seen, r->foreign_traps,
		r->execs);
	hw_line(f, r);
	fprintf(f, "truth by execution: %" PRIu64 " activations, %" PRIu64 " native unwinds that failed at an "
		"entry\n", r->activations, r->native_fail);
	fprintf(f, "  %" PRIu64 " entries by a jump ([sp] follows no call: no activation), %" PRIu64
		" activations ended by a tail jump\n", r->not_called, r->tail_jumps);
	if (r->steps_emulated || r->steps_lifted)
		fprintf(f, "  steps over a kept breakpoint: %" PRIu64 " done by the tracer (the int3 stayed), %" PRIu64
			" single steps with the byte lifted (a thread running past it then is not seen)\n",
			r->steps_emulated, r->steps_lifted);
	fprintf(f, "  %" PRIu64 " samples with truth unknown (no activation of their function: judged for "
		"agreement with real perf's chain where its column runs)\n", r->unknown);
	fprintf(f, "  %" PRIu64 " samples whose truth goes on past the stack copy (judged up to its end)\n", r->cut);
	if (r->undecodable)
		fprintf(f, "  %" PRIu64 " loads whose bytes are not all code (capstone stops in them): no breakpoint of ours "
			"in them, neither their boundaries nor their entries (findings)\n", r->undecodable);
	if (r->copies)
		fprintf(f, "  %" PRIu64 " loads the JIT copied from code of its own holding the tracer's breakpoints: "
			"the originals put back (findings)\n", r->copies);
	if (r->salted)
		fprintf(f, "  %" PRIu64 " loads whose jitdump copy differs from memory only in its last %d code bytes (a "
			"salt, not the code: the code as in memory decoded and judged)\n", r->salted, HX_TRACE_SALT);
	if (r->jit_end)
		fprintf(f, "  %" PRIu64 " samples whose truth ends at a return address into JIT code no activation "
			"accounts for (an interpreter, a stub: its callers unknown; judged up to that frame)\n", r->jit_end);
	if (r->late_acts)
		fprintf(f, "  %" PRIu64 " activations running through code announced after it ran (a late CODE_LOAD): "
			"their samples have no truth\n", r->late_acts);
	if (r->forks)
		fprintf(f, "  %" PRIu64 " children forked: the tracer's breakpoints taken out of their memory, each run on "
			"untraced\n", r->forks);
	if (r->patches)
		fprintf(f, "  %" PRIu64 " instructions the JIT rewrote under a breakpoint: left as it wrote them "
			"(findings: the rows' \"patched\")\n", r->patches);
	if (r->jd_half)
		fprintf(f, "  the jitdump ends in a record not wholly written at offset 0x%" PRIx64 " (%" PRIu64
			" bytes): read and judged up to there\n", r->jd_end, r->jd_read - r->jd_end);
	if (r->loads_traced < r->nloads)
		fprintf(f, "  %" PRIu64 " of the %zu loads sampled at their boundaries (--only, --max-loads, "
			"--max-samples); the others' entries kept for the truth\n", r->loads_traced, r->nloads);
	if (r->nloads && !r->samples && !r->activations && (r->end == HX_TRACE_EXITED || r->end == HX_TRACE_SIGNALED))
		fprintf(f, "  late dump: none of the %zu loads was entered after its CODE_LOAD was read (0 samples): the "
			"jitdump grew only after its code ran, at exit when a stdio buffer nothing flushed held it "
			"(--no-flush, --pid, or a writer the flush shim does not cover)\n", r->nloads);
	if (r->capped)
		fprintf(f, "  sampling stopped at %zu samples (--max-samples): the coverage below is up to then\n",
			r->nsmp);
	if (!r->loads_traced)
		return;
	fprintf(f, "  %-16s %-15s %s\n", "address", "sampled/bounds", "function (jitdump symbol)");
	for (size_t i = 0; i < r->nloads; i++)
		if (r->loads[i].traced)
			load_row(f, &r->loads[i]);
}

/* one line per sample: tid, pc, sp, bp, cx and the first stack words (perf
 * register ids 8, 7, 6, 2: the x86_64 layout the samples carry) */
int hx_trace_samples_text(FILE *f, const struct hx_trace_result *r)
{
	for (size_t i = 0; i < r->nsmp; i++) {
		const struct hx_trace_sample *s = &r->smp[i];
		fprintf(f, "sample tid=%" PRIu64 " pc=0x%" PRIx64 " sp=0x%" PRIx64 " bp=0x%" PRIx64
			" cx=0x%" PRIx64 " stack=%zu", s->tid, s->pc, s->sp, s->regs[6], s->regs[2],
			s->stack_len);
		for (size_t j = 0; j < 2 && (j + 1) * 8 <= s->stack_len; j++) {
			uint64_t w;
			memcpy(&w, s->stack + j * 8, 8);
			fprintf(f, " w%zu=0x%" PRIx64, j, w);
		}
		const char *stk = s->maps ? strstr(s->maps, "[stack]") : NULL;
		fprintf(f, " maps=%s", stk ? "yes" : "no");
		while (stk && stk > s->maps && stk[-1] != '\n')
			stk--;          /* the [stack] line's start: where the maps say the stack begins */
		if (stk)
			fprintf(f, " stack_vma=0x%" PRIx64, (uint64_t)strtoull(stk, NULL, 16));
		if (s->truth_known && s->ncopy < s->ntruth)
			fprintf(f, " copy_ends_after=%d", s->ncopy);
		if (s->jit_end)
			fprintf(f, " truth_ends_in_jit=1");
		if (s->hw)
			fprintf(f, " hw=1");    /* the kernel's hardware breakpoint took it */
		fprintf(f, " truth=");
		if (!s->truth_known)
			fprintf(f, "unknown");
		for (int t = 0; t < s->ntruth; t++)
			fprintf(f, "%s0x%" PRIx64, t ? "," : "", s->truth[t]);
		fprintf(f, "\n");
	}
	return ferror(f) ? -EIO : 0;
}
