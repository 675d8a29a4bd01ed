/* Truth by execution: an entry breakpoint on each JIT function pushes, per
 * activation, its return address and SP onto the thread's shadow stack; a
 * breakpoint at that return address (and any later trap whose SP is past the
 * activation's) pops it.  At the entry the native frames beyond it are
 * unwound once, by libdw over all of the process's memory (compiler CFI, not
 * perf's stack copy), from the caller's state as it will be on return.  A
 * sample's truth: its pc, the return addresses of the live activations, the
 * native frames between and beyond them. */
#include "arches.h"
#include "harness/trace/trace_int.h"

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tr_dw {
	Dwfl *dwfl;
	bool attached;
	struct tr_state *t;
	pid_t tid;              /* the thread being unwound */
	bool given;             /* next_thread gave it */
	uint64_t dw[32];
	int ndw;
	uint64_t *out, *out_sp;
	int nout;
	bool failed;            /* this Dwfl could not be built: no native frames */
	bool past_main;         /* the frame before was main's: this one is the last */
	void *frame_reg;        /* dwfl_frame_reg, or NULL (libdw older than 0.188) */
	/* what dw_frame needs of a pc's symbol (DW_NAME_*), by pc, for this Dwfl's
	 * modules (cleared when it is rebuilt): libdw's address-to-symbol lookup
	 * walks the symbol table, and node's native frames repeat at every entry
	 * (it took most of a node trace's time) */
	struct { uint64_t pc; uint8_t cls; } names[4096];
};

enum { DW_NAME_NONE = 1, DW_NAME_RUNTIME, DW_NAME_MAIN };

long tr_load_at(const struct tr_state *t, uint64_t addr)
{
	for (size_t i = 0; i < t->res->nloads; i++) {
		const struct hx_trace_load *l = &t->res->loads[i];
		if (addr >= l->addr && addr < l->addr + l->size)
			return (long)i;
	}
	return -ENOENT;
}

static void ra_unref(struct tr_state *t, uint64_t ra)
{
	struct tr_site *k = tr_site_find(t, ra);
	if (k && k->refs) {
		k->refs--;
		tr_site_sync(t, k);
	}
}

static struct tr_thread *thread_of(struct tr_state *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntids; i++)
		if (t->tids[i].tid == tid)
			return &t->tids[i];
	return NULL;
}

void tr_act_thread_gone(struct tr_state *t, struct tr_thread *th)
{
	while (th->nacts)
		ra_unref(t, th->acts[--th->nacts].ra);
	free(th->acts);
	th->acts = NULL;
	th->capacts = 0;
}

/* libdw's view of the stopped thread: its memory through /proc/PID/mem, its
 * registers as given (the caller's state on return) */
static pid_t dw_next_thread(Dwfl *d, void *arg, void **thread_argp)
{
	(void)d;
	struct tr_dw *w = arg;
	if (w->given)
		return 0;
	w->given = true;
	*thread_argp = w;
	return w->tid;
}

static bool dw_memory_read(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)d;
	struct tr_dw *w = arg;
	uint64_t v;
	if (tr_mem_read(w->t, addr, &v, sizeof(v)))
		return false;
	*result = v;
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct tr_dw *w = arg;
	Dwarf_Word regs[32];
	for (int i = 0; i < w->ndw; i++)
		regs[i] = w->dw[i];
	return dwfl_thread_state_registers(thread, 0, (unsigned)w->ndw, regs);
}

static const Dwfl_Thread_Callbacks dw_thread_cbs = {
	.next_thread = dw_next_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

static char *dw_debuginfo_path;
static const Dwfl_Callbacks dw_cbs = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &dw_debuginfo_path,
};

static void dw_end(struct tr_dw *w)
{
	if (w->dwfl)
		dwfl_end(w->dwfl);
	w->dwfl = NULL;
	w->attached = false;
}

/* (re)build the Dwfl over the process's modules as mapped now */
static int dw_begin(struct tr_state *t)
{
	if (!t->dw && !(t->dw = calloc(1, sizeof(*t->dw))))
		return -ENOMEM;
	struct tr_dw *w = t->dw;
	dw_end(w);
	memset(w->names, 0, sizeof(w->names));
	w->t = t;
	w->frame_reg = dlsym(RTLD_DEFAULT, "dwfl_frame_reg");
	w->dwfl = dwfl_begin(&dw_cbs);
	if (!w->dwfl)
		return -ENOMEM;
	if (dwfl_linux_proc_report(w->dwfl, t->pid) != 0 || dwfl_report_end(w->dwfl, NULL, NULL) != 0) {
		dw_end(w);
		return -EIO;
	}
	w->attached = dwfl_attach_state(w->dwfl, NULL, t->pid, &dw_thread_cbs, w);
	if (!w->attached) {
		dw_end(w);
		return -EIO;
	}
	return 0;
}

/* libdw's dwfl_frame_reg (elfutils 0.188 and later), looked up at run time:
 * a reference at link time would keep the binary from loading with an older
 * libdw (tools/perf-gens runs it on Debian 11's 0.183).  Without it a native
 * frame's SP is unknown and the truth is not cut at the stack copy there. */
typedef int (*frame_reg_fn)(Dwfl_Frame *, unsigned, Dwarf_Word *);

/* the symbol at pc as dw_frame reads it: the C runtime's start, main, or other */
static uint8_t name_class(struct tr_dw *w, uint64_t pc)
{
	size_t h = (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 52) & 4095;
	if (w->names[h].cls && w->names[h].pc == pc)
		return w->names[h].cls;
	Dwfl_Module *m = dwfl_addrmodule(w->dwfl, pc);
	const char *name = m ? dwfl_module_addrname(m, pc) : NULL;
	uint8_t cls = !name ? DW_NAME_NONE
		      : !strncmp(name, "__libc_start", 12) || !strcmp(name, "_start") ? DW_NAME_RUNTIME
		      : !strcmp(name, "main") ? DW_NAME_MAIN : DW_NAME_NONE;
	w->names[h].pc = pc;
	w->names[h].cls = cls;
	return cls;
}

/* The native chain ends at the frame that called `main` (the C runtime's
 * __libc_start_call_main: main's own record and CFI reach it, so a wrong
 * register rule in JIT code called from main shows as the frames perf loses
 * there; the runtime's frames above it are built without frame pointers,
 * and not every unwinder fed by perf's copy reaches them) or at the first
 * frame in JIT code (the next activation's business). */
static int dw_frame(Dwfl_Frame *f, void *arg)
{
	struct tr_dw *w = arg;
	Dwarf_Addr pc;
	bool act;
	if (!dwfl_frame_pc(f, &pc, &act) || w->nout >= HX_TRACE_MAX_TRUTH)
		return DWARF_CB_ABORT;
	uint8_t cls = name_class(w, pc - 1);
	Dwarf_Word sp;
	frame_reg_fn reg = (frame_reg_fn)w->frame_reg;
	w->out_sp[w->nout] = reg && reg(f, (unsigned)arch_facts_host()->dw_sp, &sp) == 0 ? sp : 0;
	w->out[w->nout++] = pc;
	if (tr_load_at(w->t, pc - 1) >= 0)
		return DWARF_CB_ABORT;
	/* main's caller (a stripped program's main has no name: its caller is
	 * the first frame in the C runtime) ends the chain */
	if (cls == DW_NAME_RUNTIME || w->past_main)
		return DWARF_CB_ABORT;
	w->past_main = cls == DW_NAME_MAIN;
	return DWARF_CB_OK;
}

/* the native frames from the caller's state on return (dw[]), into out[] */
static int native_chain(struct tr_state *t, pid_t tid, const uint64_t *dw, int ndw, uint64_t *out,
			uint64_t *out_sp)
{
	if ((!t->dw || !t->dw->attached) && dw_begin(t))
		return 0;
	struct tr_dw *w = t->dw;
	/* a return address outside every module: new code mapped since */
	if (!dwfl_addrmodule(w->dwfl, dw[16]) && tr_load_at(t, dw[16]) < 0 && dw_begin(t))
		return 0;
	w->tid = tid;
	w->given = false;
	memcpy(w->dw, dw, sizeof(uint64_t) * (size_t)ndw);
	w->ndw = ndw;
	w->out = out;
	w->out_sp = out_sp;
	w->nout = 0;
	w->past_main = false;
	dwfl_getthread_frames(w->dwfl, tid, dw_frame, w);
	return w->nout;
}

/* does ra follow a call?  The bytes before it as the program has them (a
 * breakpoint's byte put back), decoded from each start that would end at
 * ra: a value at [sp] that follows no call is not a return address (the
 * function was entered by a jump, mid-frame), and no breakpoint goes there */
static bool ra_after_call(struct tr_state *t, uint64_t ra)
{
	struct tr_site *k = tr_site_find(t, ra);
	if (k && k->ra_ok)
		return true;
	unsigned max = t->arch->call_max;
	uint8_t buf[16];
	if (!t->arch->call_mnemonic || !max || max > sizeof(buf) || ra < max || tr_mem_read(t, ra - max, buf, max))
		return false;
	tr_site_unplant(t, ra - max, buf, max);
	csh cs = (csh)t->cs;
	if (!cs) {
		if (cs_open(t->cs_arch, t->cs_mode, &cs) != CS_ERR_OK)
			return false;
		t->cs = (size_t)cs;
	}
	size_t plen = strlen(t->arch->call_mnemonic);
	for (unsigned n = 1; n <= max; n++) {
		cs_insn *insn;
		size_t got = cs_disasm(cs, buf + max - n, n, ra - n, 1, &insn);
		bool call = got == 1 && insn->size == n && !strncmp(insn->mnemonic, t->arch->call_mnemonic, plen);
		if (got)
			cs_free(insn, got);
		if (call)
			return true;
	}
	return false;
}

/* the live activation a returns where the one entered now does, and its
 * own slot no longer holds that address: its frame is gone, the return
 * address moved below the callee's arguments.  (Recursion through one call
 * site also returns to one address, but the caller's slot still holds it.)
 * Where the arch keeps the return address in a register at entry, no slot
 * tells: not taken as moved. */
static bool ra_moved(struct tr_state *t, const struct tr_act *a, uint64_t ra)
{
	const struct arch_facts *af = arch_facts_host();
	uint64_t v;
	if (a->ra != ra || !af->ra_at_cfa)
		return false;
	return tr_mem_read(t, a->sp, &v, sizeof(v)) || v != ra;
}

static int push_act(struct tr_state *t, struct tr_thread *th, size_t load, const struct hx_trace_sample *s,
		    pid_t tid)
{
	if (th->nacts == th->capacts) {
		size_t nc = th->capacts ? th->capacts * 2 : 16;
		struct tr_act *p = realloc(th->acts, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		th->acts = p;
		th->capacts = nc;
	}
	uint64_t dw[32], ra;
	int ndw;
	if (t->arch->entry_state(s->regs, s->sp, s->stack, s->stack_len, &ra, dw, &ndw))
		return 0;               /* no stack to read the return address from: no activation */
	if (!ra_after_call(t, ra)) {
		t->res->not_called++;
		return 0;
	}
	/* a tail call: entered at the SP of the live activation (its function
	 * jumped here, its frame gone), or with its return address moved below
	 * arguments pushed for the callee (V8's InterpreterPushArgsThenCall pops
	 * the return address, pushes the arguments, pushes it back and jumps:
	 * the old slot holds an argument now) */
	while (th->nacts && (th->acts[th->nacts - 1].sp <= s->sp || ra_moved(t, &th->acts[th->nacts - 1], ra))) {
		ra_unref(t, th->acts[--th->nacts].ra);
		t->res->tail_jumps++;
	}
	struct tr_site *k;
	int e = tr_site_get(t, ra, &k);
	if (e)
		return e == -EEXIST || e == -EIO ? 0 : e;   /* no breakpoint of ours can go there: no activation */
	k->ra_ok = true;
	k->refs++;
	struct tr_act *a = &th->acts[th->nacts];
	a->ra = ra;
	a->sp = s->sp;
	a->load = load;
	a->late = false;
	a->nchain = native_chain(t, tid, dw, ndw, a->chain, a->chain_sp);
	if (a->nchain == 0) {
		a->chain[0] = a->ra;    /* the return address at least (executed, not unwound) */
		a->chain_sp[0] = dw[arch_facts_host()->dw_sp];
		a->nchain = 1;
		t->res->native_fail++;
	}
	th->nacts++;
	t->res->activations++;
	return tr_bp_sync(t, a->ra);
}

int tr_act_on_trap(struct tr_state *t, pid_t tid, uint64_t addr, const struct hx_trace_sample *s)
{
	struct tr_thread *th = thread_of(t, tid);
	if (!th)
		return 0;
	/* activations whose frame SP has left: returned (the trap at its return
	 * address), or unwound past by a longjmp or an exception (a trap outside
	 * its function).  Inside its own code SP may rise above the entry's while
	 * the function still runs: V8's return sequence pops the return address
	 * into r10, drops the arguments, pushes it back and returns */
	long in = tr_load_at(t, addr);
	while (th->nacts && s->sp > th->acts[th->nacts - 1].sp &&
	       (addr == th->acts[th->nacts - 1].ra || in < 0 || (size_t)in != th->acts[th->nacts - 1].load))
		ra_unref(t, th->acts[--th->nacts].ra);
	struct tr_site *k = tr_site_find(t, addr);
	if (!k || !k->entry)
		return 0;
	long load = tr_load_at(t, addr);
	return load < 0 ? 0 : push_act(t, th, (size_t)load, s, tid);
}

/* pc, then per live activation (innermost first) its native chain up to the
 * frame in the next outer activation's code; unknown without an activation
 * in pc's function */
void tr_act_truth(struct tr_state *t, pid_t tid, struct hx_trace_sample *s)
{
	struct tr_thread *th = thread_of(t, tid);
	long load = tr_load_at(t, s->pc);
	s->ntruth = 0;
	s->truth_known = false;
	s->jit_end = false;
	s->load = load < 0 ? 0 : (size_t)load;
	if (!th || !th->nacts || load < 0 || th->acts[th->nacts - 1].load != (size_t)load)
		return;
	int n = 0, ncopy = -1;
	uint64_t end = s->sp + s->stack_len;
	const struct arch_facts *af = arch_facts_host();
	int64_t slot = af->ra_at_cfa ? af->ra_cfa_off : -8;   /* LR arches: saved below, at least 8 */
	s->truth[n++] = s->pc;
	for (size_t i = th->nacts; i-- > 0 && n < HX_TRACE_MAX_TRUTH;) {
		const struct tr_act *a = &th->acts[i];
		if (a->late)
			return;               /* unwound through code not announced yet */
		int f;
		for (f = 0; f < a->nchain && n < HX_TRACE_MAX_TRUTH; f++) {
			/* its return address's slot, from the SP once the frame is
			 * returned to: past the copy's end no unwinder reads it, nor
			 * in the copy's last word, which perf's libunwind path never
			 * reads (its access_mem's `>= end`) */
			if (ncopy < 0 && a->chain_sp[f] && a->chain_sp[f] + (uint64_t)slot + 16 > end)
				ncopy = n;
			s->truth[n++] = a->chain[f];
		}
		long in = tr_load_at(t, a->chain[a->nchain - 1] - 1);
		if (in < 0)
			break;                /* the native chain ended outside JIT code */
		if (!i || th->acts[i - 1].load != (size_t)in) {
			/* JIT code no activation of ours accounts for (HotSpot's
			 * interpreter or a stub, code entered by a jump): the return
			 * address into it was executed, what called it is not
			 * known; judged up to that frame */
			s->jit_end = true;
			t->res->jit_end++;
			break;
		}
	}
	s->ntruth = n;
	s->ncopy = ncopy < 0 ? n : ncopy;
	s->truth_known = true;
	t->res->cut += s->ncopy < n;
}

void tr_act_free(struct tr_state *t)
{
	for (size_t i = 0; i < t->ntids; i++)
		free(t->tids[i].acts);
	free(t->sites);
	if (t->dw) {
		dw_end(t->dw);
		free(t->dw);
	}
	if (t->cs) {
		csh cs = (csh)t->cs;
		cs_close(&cs);
	}
}

void tr_act_late(struct tr_state *t, size_t li)
{
	const struct hx_trace_load *l = &t->res->loads[li];
	for (size_t i = 0; i < t->ntids; i++)
		for (size_t j = 0; j < t->tids[i].nacts; j++) {
			struct tr_act *a = &t->tids[i].acts[j];
			bool through = false;
			/* chain[f] (f below the last) was unwound through by libdw */
			for (int f = 0; f + 1 < a->nchain && !through; f++)
				through = a->chain[f] - 1 >= l->addr && a->chain[f] - 1 < l->addr + l->size;
			if (through && !a->late) {
				a->late = true;
				t->res->late_acts++;
			}
		}
}
