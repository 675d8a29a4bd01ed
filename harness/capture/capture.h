/* Capture: run cases in a forked child and write their samples, maps,
 * functions and truth (samples.h records).
 *
 * Batch capture, for the runner and for fuzzers that generate cases in
 * memory: hx_capture_batch forks one child that captures every case in turn
 * (a fork per batch, not per case: a fork and a fresh jitdump per case cost
 * milliseconds, a sample a few microseconds).  Each case writes one group:
 * CASE, DUMP, FUNC..., MAPS, SAMPLE..., END.  A case that crashes ends only
 * its child: its group ends with CRASH (signal, pc, function and offset) or
 * ERROR (setup error, the 10 s alarm, a signal the handler could not catch),
 * and the batch goes on with the next case in a new child.  Every case sees
 * the address space a fresh child would: between two cases a child unmaps the
 * arena and maps the next one at the same place, or keeps it when the next
 * case's is as big (the same maps line; every byte written before is written
 * again), and the jitdump's marker is unmapped before the maps are written.
 *
 * Each case needs its own dumpdir: the cases of one child share its pid, and
 * perf finds a dump only as jit-<pid>.dump (its perf-<pid>.map goes beside).
 * With the kernel sampler on (run->kcfg->nsamples > 0) each case gets its own
 * child, since the sampler is opened per child.
 *
 * A fuzzer's loop:
 *     struct hx_case c[N];          // hx_case_parse(&c[i], "gen-i", text, len, ...)
 *     struct hx_batch_case b[N];    // { &c[i], "gen-i", dir_i } (dir_i exists, one per case)
 *     struct hx_samples s;
 *     if (hx_capture_samples(b, N, &s, NULL, err, sizeof(err)) == 0) {   // one child
 *             // s.groups[j]: one per case that started, in order; case_path names it
 *             hx_replay_group(&s.groups[j], s.elf_mach, &opts, &res, ...);  // runner.h
 *             hx_samples_free(&s);
 *     }
 * hx_capture_* return a negative errno only when the harness itself fails (fork, pipe,
 * memory); what a case did is in its group. */
#ifndef HX_CAPTURE_H
#define HX_CAPTURE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>
#include "harness/case/case.h"
#include "harness/capture/ksampler.h"
#include "harness/capture/samples.h"
#include "trampolines/tramp.h"

struct hx_batch_case {
	const struct hx_case *c;      /* parsed: hx_case_load (a file) or hx_case_parse (memory) */
	const char *path;             /* what its CASE record names: the file, or any label */
	const char *dumpdir;          /* an existing directory of its own for jit-<pid>.dump */
};
struct hx_batch_run {
	/* in: cases per child; 0: all in one.  1: a process per case, each with
	 * its own pid as separate programs have (record: a perf.data of the run
	 * then has one process per case, and the dumps can share a directory) */
	unsigned per_child;
	/* in, optional: called in the parent about every 50 ms while a child
	 * captures, with the index of the case it is on (a progress line).  The
	 * parent then polls for the child's end instead of blocking on it. */
	void (*progress)(void *arg, size_t k);
	void *progress_arg;
	/* in, optional: spin points and the kernel sampler (ksampler.h); NULL: off */
	const struct hx_kcfg *kcfg;
	/* out */
	unsigned children;            /* children forked */
	unsigned ended;               /* children a case ended early (crash, error, alarm) */
};
/* Capture cases[0..n) into out_fd (a samples file whose header the caller
 * wrote); run may be NULL (all in one child).  0, or a negative errno with err set when
 * the harness failed. */
/* Bytes to allocate in a capture child above its first case so that every
 * run has the same stack addresses where the arch needs it (0: none). */
size_t hx_stack_pad(uint64_t frame);

int hx_capture_batch(const struct hx_batch_case *cases, size_t n, int out_fd,
		     struct hx_batch_run *run, struct ju_err *err);
/* The same into memory (a memfd), parsed into *out (hx_samples_free).
 * Where hx_capture_keeps_samples(), the memfd and its mapping are kept for
 * the next call while no struct hx_samples holds them (a batch's records
 * overwrite the last batch's pages: none allocated or mapped anew). */
bool hx_capture_keeps_samples(void);
int hx_capture_samples(const struct hx_batch_case *cases, size_t n, struct hx_samples *out,
		       struct hx_batch_run *run, struct ju_err *err);
/* Jitdump directories for cases[0..n) (their c set): root itself when no
 * two of them share a child (one case, or per_child 1), else
 * root/<case name>, created.  0, or a negative errno with err set; hx_batch_dirs_free
 * frees the names. */
int hx_batch_dirs(struct hx_batch_case *cases, size_t n, const char *root, unsigned per_child,
		  struct ju_err *err);
void hx_batch_dirs_free(struct hx_batch_case *cases, size_t n);
/* The same into a new samples file (header included). */
int hx_capture_to_file(const struct hx_batch_case *cases, size_t n, const char *out_path,
		       struct hx_batch_run *run, struct ju_err *err);
/* One case into a new samples file. */
int hx_capture_one(const struct hx_case *c, const char *case_path, const char *dumpdir,
		   const char *out_path, struct ju_err *err);

/* In the child: one case.  Returns 0 when the case ran to its end; on setup
 * errors writes an ERROR record and returns -1.  Crashes are written as
 * CRASH records by the signal handler, which then _exit()s. */
int hx_capture_case(const struct hx_case *c, const char *case_path, const char *dumpdir, int out_fd);

/* The harness's arch record: one, the host's, in harness/capture/arch/<arch>.c
 * (ucontext and ptrace layouts exist only for the arch the code runs on).
 * The facts both sides share (perf's register mask, the breakpoint's bytes,
 * where the pc is at its trap) are arches.def's, through tr->facts; capstone's
 * settings are the profiler side's record's (unwinders/uwarch.h). */
struct cs_insn;
/* The tracer's part (harness/trace/ uses it through hx_cap_host.trace). */
struct hx_trace_arch {
	bool supported;         /* false: no tracer for this arch in this build */
	/* a return address follows a call: its mnemonic's start as capstone
	 * writes it, and the longest such instruction */
	const char *call_mnemonic;
	unsigned call_max;
	/* read the registers of tid by perf register id (regs[64] zeroed first)
	 * and perf's register ABI; 0 or -errno */
	int (*ptrace_regs)(pid_t tid, uint64_t *abi, uint64_t regs[64]);
	int (*set_pc)(pid_t tid, uint64_t pc);
	int (*get_pc)(pid_t tid, uint64_t *pc);
	/* at a function's entry (regs, sp and the stack copy from sp taken
	 * there): its return address, and the caller's state once it returns as
	 * DWARF registers dw[0..*ndw-1] (pc = the return address); 0, or -EINVAL
	 * if the stack copy lacks it */
	int (*entry_state)(const uint64_t regs[64], uint64_t sp, const uint8_t *stack, size_t stack_len,
			   uint64_t *ra, uint64_t *dw, int *ndw);
	/* --write-cases: may the instruction (decoded with capstone's detail)
	 * run as it is in a case's harness: no branch, no memory access but
	 * lea's and nop's, sp, fp and pc not written (NULL: none may) */
	bool (*inert)(const struct cs_insn *in);
	/* --write-cases: the register (capstone's id) a call goes through when
	 * a case's harness gives the target there at entry, 0 when it is not such
	 * a call (NULL: none is) */
	int (*call_reg)(const struct cs_insn *in);
	/* does the instruction write any part of capstone register reg */
	bool (*writes_reg)(const struct cs_insn *in, int reg);
	const char *call_regs;  /* those registers, for messages */
	bool (*call_rel)(const struct cs_insn *in);   /* a direct call (call rel32) */
	int target_reg;         /* call_target's register (capstone's id): a direct call's thunk jumps through it */
	unsigned hw_bp_len;     /* a hardware execute breakpoint's bp_len (0: the tracer uses none) */
	/* do the bytes at a pc begin an instruction that enters the kernel
	 * (stepped over, it makes no syscall stop); NULL: any may */
	bool (*syscall_insn)(const uint8_t *code, size_t n);
	/* do the instruction code (n bytes readable; a breakpoint site's own,
	 * the program's bytes) at pc for the stopped thread tid as the CPU would,
	 * its registers and the memory it writes, pc then past it: the site's
	 * breakpoint stays in memory while other threads run.  0 done;
	 * -ENOTSUP an instruction it does not do, or its memory write refused
	 * (the thread steps over it for real); another -errno the thread's
	 * registers unusable.  NULL: none */
	int (*step_emulate)(pid_t tid, uint64_t pc, const uint8_t *code, size_t n);
};
struct hx_cap_arch {
	const struct tr_arch *tr;  /* the JIT side's arch: name, facts (breakpoint, perf mask) */
	/* ucontext -> perf's user register layout (abi, sample mask, by perf id) */
	void (*regs)(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64]);
	uint64_t (*pc)(const ucontext_t *uc);
	uint64_t (*sp)(const ucontext_t *uc);
	/* Resume at the breakpoint's address (restored bytes) */
	void (*resume_at)(ucontext_t *uc, uint64_t addr);
	/* After the callee's own trap instruction: where execution continues. */
	void (*skip_trap)(ucontext_t *uc);
	/* A jump to itself (x86_64 `jmp .`, arm64 `b .`): a spin point's bytes */
	const uint8_t *spin;
	size_t spin_len;
	/* Tests only (spin.c's negative control): flip a bit of a callee-saved
	 * register, one no code at a spin point may see changed */
	void (*tamper)(ucontext_t *uc);
	struct hx_trace_arch trace;
};
extern const struct hx_cap_arch hx_cap_host;
/* Address of the breakpoint instruction whose trap left the pc at pc (arches.def). */
static inline uint64_t hx_trap_addr(uint64_t pc)
{
	return pc - hx_cap_host.tr->facts->bkpt_pc_off;
}

/* stubs_<arch>.S: hx_call(ctx, tramp, slot, target) stores its own return
 * address in *slot, then calls tramp(ctx, ..., target) with target as the
 * 4th argument (CPython's trampoline signature). */
void hx_call(void *ctx, void *tramp, uint64_t *slot, void *target);
extern const char hx_call_ret[];

/* Spin points (harness/capture/spin.c; docs/unwinders.md "Spin points"): after a breakpoint's
 * sample the child spins at that pc with the sample point's exact state until
 * released (SIGUSR1: from the parent's kernel sampler, or the child's own
 * timer), and checks then that registers and stack are unchanged. */
#define HX_SPIN_SIG SIGUSR1
struct hx_spin_msg {              /* child -> parent, one write (< PIPE_BUF) */
	uint64_t pc;
	uint32_t func, offset, ntruth, pad;
	uint64_t truth[64];
	uint8_t fpflag[64];
};
/* In the child, before hx_capture_case: spin at every sample point; req_fd >= 0:
 * tell the parent there and wait for its HX_SPIN_SIG, else release by timer. */
void hx_spin_configure(bool on, int req_fd, int tamper);
bool hx_spin_enabled(void);
/* Installs the release handler (after sigaltstack).  0 or -errno. */
int hx_spin_install(struct tr_arena *a, void (*check)(ucontext_t *uc));
/* From the trap handler: spin at addr (arena code, patched with the spin
 * bytes; NULL: the code there already spins) once the handler returns; the
 * release goes on at resume.  Async-signal-safe; 0 or -errno. */
int hx_spin_begin(uint8_t *addr, uint64_t resume, const struct hx_spin_msg *m);
/* Compares two SAMPLE payloads (breakpoint vs spin); 0 if equal, else 1 and
 * what differs in msg. */
int hx_spin_diff(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, char *msg, size_t ml);

#endif
