/* arm64's "LR plus single step" (facts section 5), as perf does it with
 * --call-graph fp: the kernel's frame-pointer chain, plus the leaf frame's
 * caller from a best-effort DWARF unwind of at most 2 frames given the
 * registers perf records in FP mode (LR, PC faked from the chain, SP = 0)
 * and no stack memory (tools/perf/util/arm64-frame-pointer-unwind-support.c
 * get_leaf_frame_caller_aarch64), spliced as machine.c
 * thread__resolve_callchain_sample does.  Two engines, as perf may be built
 * with either: `lr-step` over libunwind, `lr-step-dw` over libdw. */
#include "unwinders/lrstep.h"
#include "unwinders/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "juerr.h"

enum { LR_MAX_STACK = 2 };   /* unwind__get_entries(..., max_stack = 2) */

struct lr_state {
	const struct uw_unwinder *eng;
	void *est;
	char why[160];               /* why the engine is missing */
};

void uw_lrstep_leaf_sample(const struct uw_sample *s, uint64_t fp_pc, struct uw_sample *out)
{
	const struct uw_arch *a = s->arch;
	memset(out, 0, sizeof(*out));
	out->arch = a;
	out->abi = s->abi;
	/* arch__add_leaf_frame_record_opts: sample_regs_user = LR only */
	if (a->perf_lr < 0 || !(s->mask >> a->perf_lr & 1))
		return;
	out->mask = UINT64_C(1) << a->perf_lr;
	out->regs[a->perf_lr] = s->regs[a->perf_lr];
	/* PC from callchain->ips[usr_idx + 1]; SP = 0 (cache_mask in perf) */
	out->mask |= UINT64_C(1) << a->perf_ip | UINT64_C(1) << a->perf_sp;
	out->regs[a->perf_ip] = fp_pc;
	out->regs[a->perf_sp] = 0;
	out->stack_addr = 0;
	out->stack = NULL;
	out->stack_size = 0;   /* FP mode copies no stack */
	/* perf's memory of the process, as that fp-mode run keeps it */
	out->lu_proc = s->lu_proc ? s->lu_proc ^ UW_PROC_FP_RUN : 0;
	out->dwfl_proc = s->dwfl_proc ? s->dwfl_proc ^ UW_PROC_FP_RUN : 0;
}

uint64_t uw_lrstep_leaf(const struct uw_result *dw, char *why, size_t whylen)
{
	if (dw->n >= LR_MAX_STACK) {
		/* entry 1 in callee order, already ip - 1 as perf returns it */
		return dw->addr[1] - 1;
	}
	snprintf(why, whylen, "no leaf caller: %d entr%s (%s%s%s)", dw->n, dw->n == 1 ? "y" : "ies",
		 uw_stop_name(dw->stop), dw->why[0] ? ": " : "", dw->why);
	return 0;
}

void uw_lrstep_splice(const struct uw_result *fp, uint64_t leaf, uint32_t leaf_flags,
		      struct uw_result *r)
{
	r->n = 0;
	r->stop = fp->stop;
	/* the splice point is the FP chain's second user entry: with no frame
	 * record (x29 = 0 or misaligned) perf never reaches it */
	for (int i = 0; i < fp->n && r->n < UW_MAX_FRAMES; i++) {
		if (i == 1 && leaf && leaf != fp->addr[1] && r->n < UW_MAX_FRAMES) {
			r->addr[r->n] = leaf + 1;   /* report frames with ip - 1 undone */
			r->flags[r->n++] = leaf_flags;
		}
		if (r->n < UW_MAX_FRAMES) {
			r->addr[r->n] = fp->addr[i];
			r->flags[r->n++] = fp->flags[i];
		}
	}
}

int uw_lrstep_unwind_with(const struct uw_unwinder *eng, void *est, const struct uw_view *v,
			  const struct uw_sample *s, struct uw_result *r)
{
	struct uw_result fp, dw;
	uw_fp.unwind(NULL, v, s, &fp);
	r->why[0] = 0;
	if (!eng || !eng->unwind) {
		r->n = 0;
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "no DWARF engine for the leaf step");
		return 0;
	}
	struct uw_sample leaf_s;
	uw_lrstep_leaf_sample(s, fp.n ? fp.addr[0] : uw_reg(s, s->arch->perf_ip), &leaf_s);
	memset(&dw, 0, sizeof(dw));
	if (leaf_s.mask) {
		eng->unwind(est, v, &leaf_s, &dw);
	} else {
		dw.n = 0;
		dw.stop = UW_STOP_ERROR;
		snprintf(dw.why, sizeof(dw.why), "no LR in the sample (not arm64)");
	}
	/* an engine that cannot run is not a stack-less step that failed */
	if (dw.n == 0 && dw.stop == UW_STOP_ERROR) {
		r->n = 0;
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "%s: %s", eng->name, dw.why);
		return 0;
	}
	char why[sizeof(r->why)] = "";
	uint64_t leaf = uw_lrstep_leaf(&dw, why, sizeof(why));
	uw_lrstep_splice(&fp, leaf, leaf && dw.n > 1 ? dw.flags[1] : 0, r);
	if (why[0])
		snprintf(r->why, sizeof(r->why), "%s", why);
	else if (fp.why[0])
		snprintf(r->why, sizeof(r->why), "%s", fp.why);
	return 0;
}

static int lr_open(const char *engine, const struct uw_view *v, void **state, struct ju_err *err)
{
	struct lr_state *st = calloc(1, sizeof(*st));
	struct ju_err je;
	if (!st) {
		ju_errf(err, EINVAL, 0, "out of memory");
		return -ENOMEM;
	}
	st->eng = uw_unwinder_by_name(engine);
	if (!st->eng)
		snprintf(st->why, sizeof(st->why), "%s is not in this build", engine);
	else if (st->eng->open && st->eng->open(v, &st->est, &je)) {
		/* every sample then says why: an error verdict, never FP alone */
		snprintf(st->why, sizeof(st->why), "%s", je.msg);
		st->eng = NULL;
		st->est = NULL;
	}
	*state = st;
	return 0;
}

static int lr_open_lu(const struct uw_view *v, void **state, struct ju_err *err)
{
	return lr_open("libunwind", v, state, err);
}

static int lr_open_dw(const struct uw_view *v, void **state, struct ju_err *err)
{
	return lr_open("libdw", v, state, err);
}

static int lr_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	const struct lr_state *st = state;
	if (!st || !st->eng) {
		r->n = 0;
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "%s", st ? st->why : "not opened");
		return 0;
	}
	return uw_lrstep_unwind_with(st->eng, st->est, v, s, r);
}

static void lr_close(void *state)
{
	struct lr_state *st = state;
	if (!st)
		return;
	if (st->eng && st->eng->close && st->est)
		st->eng->close(st->est);
	free(st);
}

/* the step's engine's library */
static const char *lr_version_of(const char *engine)
{
	const struct uw_unwinder *e = uw_unwinder_by_name(engine);
	return e && e->lib_version ? e->lib_version() : NULL;
}

static const char *lr_version_lu(void)
{
	return lr_version_of("libunwind");
}

static const char *lr_version_dw(void)
{
	return lr_version_of("libdw");
}

/* perf's splice: by default only where perf does it (the arch table's list);
 * named explicitly (--unwinders) it replays anywhere */
const struct uw_unwinder uw_lrstep = {
	.name = "lr-step", .about = "arm64 --call-graph fp leaf record, DWARF step by libunwind",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_LR_SPLICE, .default_arches = uw_arches_lr_leaf,
	.open = lr_open_lu, .unwind = lr_unwind, .close = lr_close, .lib_version = lr_version_lu,
	.step_engine = "libunwind",
};
const struct uw_unwinder uw_lrstep_dw = {
	.name = "lr-step-dw", .about = "arm64 --call-graph fp leaf record, DWARF step by libdw",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_LR_SPLICE, .default_arches = uw_arches_lr_leaf,
	.open = lr_open_dw, .unwind = lr_unwind, .close = lr_close, .lib_version = lr_version_dw,
	.step_engine = "libdw",
};
