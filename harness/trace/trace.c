/* The ptrace loop of `jitunwind trace`: start CMD under PTRACE_TRACEME (or seize
 * a running process's threads, --pid), follow
 * every thread (PTRACE_O_TRACECLONE), stop at every syscall so the jitdump is
 * read as soon as the process writes it (before the code it describes runs),
 * take a sample at each planted breakpoint and let the thread go on.  Every
 * wait is bounded by --time; the tracee is always ended (EXITKILL, or killed at
 * the deadline) or detached (after an exec, and an attached process at the
 * deadline or an interrupt, with its breakpoints gone). */
#include "harness/trace/trace_int.h"
#include "unwinders/uwarch.h"

#include <dirent.h>
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TR_OPTS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | \
		 PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD)

/* tid's entry, added if new */
static struct tr_thread *tid_get(struct tr_state *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntids; i++)
		if (t->tids[i].tid == tid)
			return &t->tids[i];
	if (t->ntids == t->captids) {
		size_t nc = t->captids ? t->captids * 2 : 16;
		struct tr_thread *p = realloc(t->tids, nc * sizeof(*p));
		if (!p)
			return NULL;
		t->tids = p;
		t->captids = nc;
	}
	t->tids[t->ntids] = (struct tr_thread){ .tid = tid };
	t->res->threads_seen++;
	tr_hw_thread_new(t, tid);       /* before it runs: it watches what the others watch */
	return &t->tids[t->ntids++];
}

static bool tid_known(const struct tr_state *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntids; i++)
		if (t->tids[i].tid == tid)
			return true;
	return false;
}

static void tid_del(struct tr_state *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntids; i++)
		if (t->tids[i].tid == tid) {
			tr_hw_thread_gone(t, tid);
			tr_act_thread_gone(t, &t->tids[i]);
			t->tids[i] = t->tids[--t->ntids];
			return;
		}
}

/* LD_PRELOAD with the flush shim first (the process's own preloads kept after it) */
static void preload(const char *so)
{
	const char *old = getenv("LD_PRELOAD");
	char buf[8192];
	snprintf(buf, sizeof(buf), "%s%s%s", so, old && *old ? ":" : "", old && *old ? old : "");
	setenv("LD_PRELOAD", buf, 1);
	/* a JIT built with AddressSanitizer refuses any library loaded before
	 * its runtime unless told the order does not matter (the shim
	 * allocates nothing) */
	old = getenv("ASAN_OPTIONS");
	snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0", old && *old ? old : "", old && *old ? ":" : "");
	setenv("ASAN_OPTIONS", buf, 1);
}

/* the child: ptrace(TRACEME), exec; a failure goes up the pipe as {stage, errno} */
static void child(int wfd, char **argv, const char *so)
{
	int msg[2] = { 0, 0 };
	if (so)
		preload(so);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
		msg[1] = errno;
	} else {
		raise(SIGSTOP);
		execvp(argv[0], argv);
		msg[0] = 1;
		msg[1] = errno;
	}
	if (write(wfd, msg, sizeof(msg)) < 0)
		_exit(127);
	_exit(127);
}

static int start(struct tr_state *t)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(p[1], t->cfg->argv, t->cfg->no_flush ? NULL : t->cfg->flush_so);
	close(p[1]);
	t->pid = t->res->pid = pid;
	struct tr_thread *th = tid_get(t, pid);
	if (th)
		th->started = true;
	int st;
	if (waitpid(pid, &st, __WALL) < 0 || !WIFSTOPPED(st)) {
		/* TRACEME failed: the child wrote why and exited */
		int msg[2] = { 0, EPERM };
		if (read(p[0], msg, sizeof(msg)) < 0)
			msg[1] = errno;
		close(p[0]);
		snprintf(t->res->why, sizeof(t->res->why), "ptrace refused: PTRACE_TRACEME: %s "
			 "(kernel.yama.ptrace_scope, a seccomp filter or a container without CAP_SYS_PTRACE)",
			 strerror(msg[1]));
		return -EPERM;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)TR_OPTS);
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	int msg[2];
	ssize_t r = read(p[0], msg, sizeof(msg));  /* EOF: the exec succeeded */
	close(p[0]);
	if (r == (ssize_t)sizeof(msg)) {
		waitpid(pid, &st, __WALL);
		snprintf(t->res->why, sizeof(t->res->why), "cannot run '%s': %s",
			 t->cfg->argv[0], strerror(msg[1]));
		return -msg[1];
	}
	return 0;
}

/* --pid: seize every thread of the process (new ones while it runs are seized
 * too: rounds until none is new, bounded) and interrupt each, so the loop
 * gets a stop to resume it from with syscall stops (the jitdump polled) */
static int attach(struct tr_state *t)
{
	pid_t pid = t->cfg->pid;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	t->pid = t->res->pid = pid;
	t->attached = t->execd = true;
	for (int round = 0; round < 64; round++) {
		DIR *d = opendir(path);
		if (!d) {
			snprintf(t->res->why, sizeof(t->res->why), "no process %d (%s: %s)", (int)pid, path, strerror(errno));
			return round ? 0 : -ENOENT;
		}
		bool added = false;
		struct dirent *de;
		for (int k = 0; k < 65536 && (de = readdir(d)); k++) {
			pid_t tid = (pid_t)atoi(de->d_name);
			bool known = false;
			for (size_t i = 0; i < t->ntids && !known; i++)
				known = t->tids[i].tid == tid;
			if (tid <= 0 || known)
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)(TR_OPTS & ~PTRACE_O_EXITKILL)) < 0) {
				if (errno == ESRCH)
					continue;       /* gone meanwhile */
				int e = errno;
				closedir(d);
				snprintf(t->res->why, sizeof(t->res->why), "ptrace refused: PTRACE_SEIZE of %d: %s "
					 "(kernel.yama.ptrace_scope, not root, or traced already)", (int)tid, strerror(e));
				return -EPERM;
			}
			if (!tid_get(t, tid))
				return closedir(d), -ENOMEM;
			ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
			added = true;
		}
		closedir(d);
		if (!added)
			return 0;
	}
	return 0;
}

/* an attached thread's last stop before PTRACE_DETACH: a trap of one of our
 * breakpoints that raced the removal is undone (pc back on the instruction),
 * any other signal is the process's and goes with the detach */
static void detach_one(struct tr_state *t, pid_t tid, int st)
{
	int sig = WSTOPSIG(st), ev = st >> 16, give = 0;
	siginfo_t si;
	uint64_t pc;
	if (sig == SIGTRAP && ev == 0 && !ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) && si.si_code == SI_KERNEL &&
	    !t->arch->get_pc(tid, &pc)) {
		uint64_t at = hx_trap_addr(pc);
		struct tr_site *k = tr_site_find(t, at);
		if (k && !k->lost)          /* a lost site's trap is the JIT's own */
			t->arch->set_pc(tid, at);
		else
			give = SIGTRAP;
	} else if (ev == 0 && sig != (SIGTRAP | 0x80) && sig != SIGTRAP) {
		give = sig;                 /* a signal being delivered */
	}
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)give);
}

/* --pid at the end: breakpoints out, every thread stopped and detached; the
 * process runs on.  stopped: a thread the loop holds stopped (status st), or 0 */
static void end_detach(struct tr_state *t, pid_t stopped, int st)
{
	tr_hw_end(t);
	tr_bp_remove_all(t);
	size_t left = t->ntids;
	for (size_t i = 0; i < t->ntids; i++)
		if (t->tids[i].tid != stopped)
			ptrace(PTRACE_INTERRUPT, t->tids[i].tid, NULL, NULL);
	if (stopped > 0) {
		detach_one(t, stopped, st);
		left--;
	}
	/* each interrupted thread stops once (or exits); bounded by the deadline's
	 * 100 ms ticks (EINTR), about 5 s */
	for (int ticks = 0; left > 0 && ticks < 50;) {
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno != EINTR)
				break;
			ticks++;
			continue;
		}
		if (WIFSTOPPED(st))
			detach_one(t, tid, st);
		left--;
	}
	t->res->end = HX_TRACE_DETACHED;
}

static volatile sig_atomic_t stop_req;
static void on_stop_req(int sig) { (void)sig; stop_req = 1; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_maps(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap);
	ssize_t r;
	while (buf && (r = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)r;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	close(fd);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* the maps texts kept, at most (memory: node changes its maps between most samples) */
#define TR_MAPS_MAX (2ull << 30)

struct hx_trace_sample *tr_sample_new(struct tr_state *t)
{
	struct hx_trace_result *res = t->res;
	if (res->nsmp == res->capsmp) {
		size_t nc = res->capsmp ? res->capsmp * 2 : 256;
		struct hx_trace_sample *p = realloc(res->smp, nc * sizeof(*p));
		if (!p)
			return NULL;
		res->smp = p;
		res->capsmp = nc;
	}
	struct hx_trace_sample *s = &res->smp[res->nsmp];
	memset(s, 0, sizeof(*s));
	return s;
}

/* /proc/PID/statm as it reads now (its first field the process's size:
 * a stack grown by a fault changes it, with no syscall); 0 or -1 */
static int statm_now(struct tr_state *t, char *buf, size_t n)
{
	if (t->statm_fd < 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/statm", (int)t->pid);
		t->statm_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	ssize_t r = t->statm_fd < 0 ? -1 : pread(t->statm_fd, buf, n - 1, 0);
	if (r <= 0)
		return -EIO;
	buf[r] = 0;
	return 0;
}

/* the maps text now: the last one kept while nothing that changes it
 * happened since it was read (NULL: read it) */
static char *maps_cached(struct tr_state *t)
{
	struct hx_trace_result *res = t->res;
	char st[sizeof(t->statm)];
	bool quiet = res->nmaps_pool && t->maps_gen == t->maps_read_gen;
	for (size_t i = 0; quiet && i < t->ntids; i++)
		quiet = t->tids[i].out_of_sys;
	if (statm_now(t, st, sizeof(st)))
		st[0] = 0;
	quiet = quiet && st[0] && !strcmp(st, t->statm);
	snprintf(t->statm, sizeof(t->statm), "%s", st);
	t->maps_read_gen = t->maps_gen;
	return quiet ? res->maps_pool[res->nmaps_pool - 1] : NULL;
}

int tr_sample_commit(struct tr_state *t, struct hx_trace_sample *s)
{
	struct hx_trace_result *res = t->res;
	s->nloads_seen = res->nloads;   /* the loads read before it was taken: no stop between */
	if ((s->maps = maps_cached(t))) {
		res->nsmp++;
		res->samples++;
		return 0;
	}
	s->maps = read_maps(t->pid);
	/* the maps text of the last sample when unchanged: a JIT of thousands
	 * of loads has maps of hundreds of KB, a copy per sample ran a node
	 * trace out of memory */
	if (s->maps && res->nmaps_pool && !strcmp(res->maps_pool[res->nmaps_pool - 1], s->maps)) {
		free(s->maps);
		s->maps = res->maps_pool[res->nmaps_pool - 1];
	} else if (s->maps) {
		if (res->nmaps_pool == res->capmaps_pool) {
			size_t nc = res->capmaps_pool ? res->capmaps_pool * 2 : 16;
			char **p = realloc(res->maps_pool, nc * sizeof(*p));
			if (!p) {
				free(s->maps);
				free(s->stack);
				s->maps = NULL;
				s->stack = NULL;
				return -ENOMEM;
			}
			res->maps_pool = p;
			res->capmaps_pool = nc;
		}
		res->maps_pool[res->nmaps_pool++] = s->maps;
		res->maps_bytes += strlen(s->maps);
	}
	res->nsmp++;
	res->samples++;
	return 0;
}

/* the registers of tid as perf's sample carries them (mask arches.def's) */
static int sample_regs(struct tr_state *t, pid_t tid, struct hx_trace_sample *s)
{
	const struct uw_arch *ua = uw_arch_host();
	int e = t->arch->ptrace_regs(tid, &s->abi, s->regs);
	if (e)
		return e;
	s->mask = ua->facts->perf_mask;
	s->pc = s->regs[ua->perf_ip];
	s->sp = s->regs[ua->perf_sp];
	return 0;
}

/* a sample exactly as perf would take it: registers, the stack from SP, the maps */
static int take_sample(struct tr_state *t, pid_t tid, uint64_t addr)
{
	struct hx_trace_sample *s = tr_sample_new(t);
	if (!s)
		return -ENOMEM;
	int e = sample_regs(t, tid, s);
	if (e)
		return e;
	s->pc = addr;               /* where the thread stopped: the boundary */
	s->regs[uw_arch_host()->perf_ip] = addr;
	s->tid = (uint64_t)tid;
	s->stack = malloc(t->cfg->stack_size);
	size_t got = 0;
	/* perf copies what is mapped: fewer bytes near the stack's top */
	for (size_t chunk = t->cfg->stack_size; s->stack && chunk >= 64; chunk /= 2)
		if (!tr_mem_read(t, s->sp, s->stack, chunk)) {
			got = chunk;
			break;
		}
	s->stack_len = got;
	return tr_sample_commit(t, s);
}

void tr_sample_cap(struct tr_state *t)
{
	bool full = t->cfg->max_samples && t->res->nsmp >= t->cfg->max_samples;
	if (t->res->capped)
		return;
	if (!full && t->res->maps_bytes > TR_MAPS_MAX) {
		/* a JIT whose maps change between most samples (node: a new
		 * code page at a time) keeps a maps text of hundreds of KB each */
		fprintf(t->cfg->log, "trace: the maps texts kept reached %" PRIu64 " MiB (the process's maps "
			"changed between most samples): sampling stopped as at --max-samples\n",
			t->res->maps_bytes >> 20);
		full = true;
	}
	if (full) {
		/* memory is bounded: each sample keeps its stack copy, and a
		 * JIT whose maps change often a maps text each */
		t->res->capped = true;
		tr_bp_remove_all(t);
		fprintf(t->cfg->log, "trace: sampling stopped at %zu samples (--max-samples %zu): every "
			"breakpoint removed; the process runs on untraced\n", t->res->nsmp, t->cfg->max_samples);
	}
}

/* tid past the instruction at addr without its breakpoint lifted: the
 * arch does the instruction (step_emulate).  Lifted for a real step, the
 * byte is the program's while other threads run, and a thread that enters
 * there meanwhile is not seen: an entry missed so leaves its samples
 * without a truth.  0 done, -ENOTSUP not done here (no hook, another
 * instruction, the bytes not ours), another -errno the thread's failure. */
static int step_emulated(struct tr_state *t, pid_t tid, uint64_t addr)
{
	struct tr_site *k = tr_site_find(t, addr);
	uint8_t c[16];
	size_t n = sizeof(c);
	if (!t->arch->step_emulate || !k || k->lost || !k->in_mem || t->step_lift)
		return -ENOTSUP;
	while (n >= 4 && tr_mem_read(t, addr, c, n))
		n /= 2;                 /* the code's page may end before 16 bytes */
	if (n < 4 || n < t->bp_len || memcmp(c, t->bp, t->bp_len))
		return -ENOTSUP;
	memcpy(c, k->orig, t->bp_len);
	int e = t->arch->step_emulate(tid, addr, c, n);
	if (!e)
		t->res->steps_emulated++;
	return e;
}

/* step tid over the instruction at addr (its own byte back for the step),
 * then put the breakpoint back */
static int step_replant(struct tr_state *t, pid_t tid, uint64_t addr)
{
	struct tr_site *k = tr_site_find(t, addr);
	int e = k ? tr_site_lift(t, k) : 0;
	if (e || !k || k->lost)
		return e;
	uint8_t insn[16];
	if (!t->arch->syscall_insn || tr_mem_read(t, addr, insn, sizeof(insn)) ||
	    t->arch->syscall_insn(insn, sizeof(insn)))
		t->maps_gen++;      /* a syscall stepped over makes no syscall stop */
	if (ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL) < 0)
		return -errno;
	int st;
	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;       /* the deadline's tick: the step ends first */
			return -errno;
		}
		if (!WIFSTOPPED(st))
			return -ESRCH;       /* gone while stepping */
		if (WSTOPSIG(st) == SIGTRAP)
			break;
		/* another signal arrived first: deliver it and step again */
		ptrace(PTRACE_SINGLESTEP, tid, NULL, (void *)(long)WSTOPSIG(st));
	}
	return tr_bp_sync(t, addr);
}

/* the registers at a trap, and the word at SP (the return address at an entry) */
static int trap_regs(struct tr_state *t, pid_t tid, uint64_t at, struct hx_trace_sample *s, uint8_t *word)
{
	memset(s, 0, sizeof(*s));
	int e = sample_regs(t, tid, s);
	if (e)
		return e;
	s->pc = at;
	s->tid = (uint64_t)tid;
	if (!tr_mem_read(t, s->sp, word, 8)) {
		s->stack = word;
		s->stack_len = 8;
	}
	return 0;
}

/* a SIGTRAP stop: ours (sample, restore, go on) or the process's own (1).
 * Ours is a breakpoint trap (SI_KERNEL) one byte past a boundary, a load's
 * entry or a live activation's return address.  A boundary's byte may
 * already be restored when two threads trapped on it at once: the later one
 * is a hit too, its pc is stepped back the same way. */
/* a SIGTRAP the tracer did not cause, passed on to the program: said (the
 * first few), with where it stopped */
static int foreign_trap(struct tr_state *t, pid_t tid, uint64_t pc, int code, const char *why)
{
	if (t->res->foreign_traps >= 3)
		return 1;
	long li = tr_load_at(t, pc ? pc - 1 : 0);
	char where[320] = "outside the loads";
	if (li >= 0)
		snprintf(where, sizeof(where), "%.256s+0x%" PRIx64, t->res->loads[li].name,
			 pc - 1 - t->res->loads[li].addr);
	fprintf(t->cfg->log, "trace: thread %d: a SIGTRAP not the tracer's (si_code %d, pc 0x%" PRIx64 ", after %s): "
		"%s; passed on to the program\n", (int)tid, code, pc, where, why);
	return 1;
}

static int on_trap(struct tr_state *t, pid_t tid)
{
	uint64_t pc = 0;
	siginfo_t si;
	if (t->arch->get_pc(tid, &pc) || ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
		return foreign_trap(t, tid, pc, -1, "its registers or siginfo unreadable");
	if (si.si_code != SI_KERNEL)
		return foreign_trap(t, tid, pc, si.si_code, "not a breakpoint instruction's (a kill, a step)");
	uint64_t at = hx_trap_addr(pc);
	struct hx_trace_load *l;
	struct hx_trace_bp *b = tr_bp_find(t, at, &l);
	struct tr_site *k = tr_site_find(t, at);
	if (!k || k->lost)              /* no byte of ours there: the program's own trap */
		return foreign_trap(t, tid, pc, si.si_code, k ? "a site of ours whose byte was lost"
				    : "no breakpoint of ours at that address");
	/* a boundary's hit; one whose byte another thread's hit already put
	 * back is a hit too (not while a user still keeps it); one a hardware
	 * breakpoint watches is the ring's */
	bool sample = b && !b->hw && (b->planted || !tr_bp_wanted(t, at)) && !t->res->capped;
	if (k->entry)
		tr_hw_entry(t, tr_load_at(t, at));   /* its boundaries the hardware's next */
	uint8_t word[8];
	struct hx_trace_sample regs;
	int e = trap_regs(t, tid, at, &regs, word);
	if (!e)
		e = tr_act_on_trap(t, tid, at, &regs);
	/* a hardware hit of this very execution (the int3 and the event both
	 * there while the slots moved, another thread running) took it */
	if (!e && sample && tr_hw_fresh(t, tid, at, regs.sp))
		sample = false;
	if (!e && sample && !(e = take_sample(t, tid, at))) {
		tr_act_truth(t, tid, &t->res->smp[t->res->nsmp - 1]);
		t->res->unknown += !t->res->smp[t->res->nsmp - 1].truth_known;
		if (++b->hits >= t->cfg->hits)
			e = tr_bp_remove(t, b);
		if (!e)
			tr_sample_cap(t);
	}
	if (e)
		return e;
	if (tr_bp_wanted(t, at) && (e = step_emulated(t, tid, at)) != -ENOTSUP)
		return e;
	if ((e = t->arch->set_pc(tid, at)))
		return e;
	tr_hw_resume_at(t, tid, at);   /* a hit there next is this execution's again */
	if (tr_bp_wanted(t, at)) {
		t->res->steps_lifted++;
		return step_replant(t, tid, at);
	}
	return tr_bp_sync(t, at);
}

/* tid's thread group, from /proc/TID/status (0: gone) */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	pid_t tg = 0;
	for (int n = 0; f && n < 64 && fgets(line, sizeof(line), f); n++)
		if (!strncmp(line, "Tgid:", 5)) {
			tg = (pid_t)atoi(line + 5);
			break;
		}
	if (f)
		fclose(f);
	return tg;
}

/* a child the process forked (PTRACE_O_TRACEFORK: it stops first) carries the
 * tracer's breakpoints in its copy of memory: the originals go back there and
 * it runs on untraced, never dying of the tracer's bytes */
static void fork_child(struct tr_state *t, pid_t child)
{
	char mp[64];
	snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)child);
	int fd = open(mp, O_RDWR | O_CLOEXEC);
	int e = fd < 0 ? -errno : tr_sites_unplant_fd(t, fd);
	if (fd >= 0)
		close(fd);
	t->res->forks++;
	if (e)
		fprintf(t->cfg->log, "trace: forked child %d: the tracer's breakpoints could not be taken out of its "
			"memory (%s): it may die of SIGTRAP\n", (int)child, strerror(-e));
	ptrace(PTRACE_DETACH, child, NULL, NULL);
}

/* what a stop means, and the signal to resume tid with (-1: do not resume) */
/* a stop inside a syscall (sysstop: a syscall stop; else a clone, fork,
 * exec or exit event): the maps may change there; out of it only after an
 * exit stop */
static void sys_seen(struct tr_state *t, pid_t tid, bool sysstop)
{
	uint8_t info[128];
	struct tr_thread *th = tid_get(t, tid);
	if (th)
		th->out_of_sys = sysstop && ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), info) > 0 &&
				 info[0] == PTRACE_SYSCALL_INFO_EXIT;
	t->maps_gen++;
}

/* on_stop: the signal to resume with (0 none), TR_KEEP_STOPPED (not an error:
 * the thread stays stopped or was detached), or a -errno below it */
#define TR_KEEP_STOPPED (-1)

static int on_stop(struct tr_state *t, pid_t tid, int st, bool *done)
{
	int sig = WSTOPSIG(st), ev = st >> 16;
	if ((ev && ev != PTRACE_EVENT_STOP) || sig == (SIGTRAP | 0x80))
		sys_seen(t, tid, sig == (SIGTRAP | 0x80));
	if (sig == (SIGTRAP | 0x80)) {              /* a syscall stop */
		int e = tr_jd_poll(t);
		return e < 0 ? e : 0;
	}
	if (sig == SIGTRAP && ev == PTRACE_EVENT_CLONE) {
		unsigned long nt;
		if (!ptrace(PTRACE_GETEVENTMSG, tid, NULL, &nt))
			tid_get(t, (pid_t)nt);
		return 0;
	}
	if (sig == SIGTRAP && ev == PTRACE_EVENT_EXEC && !t->execd) {
		t->execd = true;                    /* CMD itself */
		return 0;
	}
	if (sig == SIGTRAP && ev == PTRACE_EVENT_EXEC && t->jdfd < 0 && !t->res->nloads) {
		/* no JIT code seen yet: CMD was a wrapper (env, a shell script,
		 * tools/in-root's loader) and this is the program it runs */
		char mp[64];
		snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)t->pid);
		int fd = open(mp, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		close(t->memfd);
		t->memfd = fd;      /* the old one reads the old image's memory */
		t->res->execs++;
		return 0;
	}
	if (sig == SIGTRAP && ev == PTRACE_EVENT_EXEC) {
		fprintf(t->cfg->log, "trace: pid %d exec'd mid-trace: its JIT code is gone; detached\n",
			(int)t->pid);
		t->res->end = HX_TRACE_EXEC;
		*done = true;
		return TR_KEEP_STOPPED;
	}
	if (sig == SIGTRAP && ev == PTRACE_EVENT_EXIT)
		return 0;
	if (ev == PTRACE_EVENT_STOP) {
		/* a seized thread: our interrupt or a new thread's first stop
		 * (resumed), or a group stop (SIGSTOP and the like: kept stopped) */
		struct tr_thread *th = tid_get(t, tid);
		if (th)
			th->started = true;
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
			return TR_KEEP_STOPPED;
		}
		return 0;
	}
	if (sig == SIGTRAP && (ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK))
		return 0;                           /* the child's own first stop handles it */
	pid_t tg;
	if (sig == SIGSTOP && ev == 0 && !tid_known(t, tid) && (tg = tgid_of(tid)) > 0 && tg != t->pid) {
		fork_child(t, tid);
		return TR_KEEP_STOPPED;          /* detached */
	}
	if (sig == SIGSTOP && ev == 0) {
		struct tr_thread *th = tid_get(t, tid);   /* a new thread's first stop is ours */
		if (th && !th->started) {
			th->started = true;
			return 0;
		}
		return sig;
	}
	if (sig == SIGTRAP && ev == 0) {
		int r = on_trap(t, tid);
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		t->res->foreign_traps++;
	}
	return sig;
}

/* the deadline: breakpoints out, the process ended */
static void end_at_deadline(struct tr_state *t)
{
	tr_hw_end(t);
	tr_bp_remove_all(t);
	kill(t->pid, SIGKILL);
	int st;
	pid_t tid;
	/* a killed thread still stops at PTRACE_EVENT_EXIT: let each go on to its end */
	while ((tid = waitpid(-1, &st, __WALL)) > 0 || (tid < 0 && errno == EINTR))
		if (tid > 0 && WIFSTOPPED(st))
			ptrace(PTRACE_CONT, tid, NULL, NULL);
	t->res->end = HX_TRACE_TIMEOUT;
}

static void on_alarm(int sig) { (void)sig; }

static void arm_deadline(const struct hx_trace_cfg *cfg)
{
	struct sigaction sa = { .sa_handler = on_alarm };   /* no SA_RESTART: waitpid gets EINTR */
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { .it_interval = { 0, 100000 } };
	double s = cfg->time_s;
	it.it_value.tv_sec = (time_t)s;
	it.it_value.tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6) + 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

static int loop(struct tr_state *t)
{
	double deadline = t->cfg->time_s > 0 ? now_s() + t->cfg->time_s : 0;
	if (deadline)
		arm_deadline(t->cfg);
	int e = 0;
	bool done = false;
	while (!done) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL);
		/* the hardware's hits since each thread's last stop, under the
		 * activations that stop left, before this stop changes them */
		tr_hw_drain(t);
		if ((deadline && now_s() >= deadline) || stop_req) {
			bool held = tid > 0 && WIFSTOPPED(st);
			if (held)
				tr_jd_poll(t);
			if (t->attached)
				end_detach(t, held ? tid : 0, st);
			else
				end_at_deadline(t);
			if (stop_req && !t->attached)
				t->res->end = HX_TRACE_INTERRUPTED;
			break;
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			tid_del(t, tid);
			if (tid == t->pid) {
				t->res->end = WIFEXITED(st) ? HX_TRACE_EXITED : HX_TRACE_SIGNALED;
				t->res->end_status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st);
			}
			continue;
		}
		int sig = on_stop(t, tid, st, &done);
		if (sig < TR_KEEP_STOPPED && t->attached) {
			e = sig;                  /* an attached process is never killed */
			end_detach(t, tid, st);
			break;
		}
		if (sig < TR_KEEP_STOPPED) {
			e = sig;
			end_at_deadline(t);
			t->res->end = HX_TRACE_SIGNALED;
			t->res->end_status = SIGKILL;
			break;
		}
		if (done) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			break;
		}
		tr_hw_place(t);
		if (sig == TR_KEEP_STOPPED)
			continue;                 /* kept stopped (a group stop) */
		ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)(sig > 0 ? sig : 0));
	}
	struct itimerval off = { 0 };
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	return e;
}

static int check_cfg(const struct hx_trace_cfg *cfg, struct hx_trace_result *res,
		     const struct hx_trace_arch *arch)
{
	if (!arch->supported) {
		snprintf(res->why, sizeof(res->why), "trace has no tracer for this arch yet (x86_64 only)");
		return -ENOSYS;
	}
	if (!cfg->pid && (!cfg->argv || !cfg->argv[0])) {
		snprintf(res->why, sizeof(res->why), "no command to trace");
		return -EINVAL;
	}
	return 0;
}

static void state_free(struct tr_state *t)
{
	if (t->memfd >= 0)
		close(t->memfd);
	if (t->statm_fd >= 0)
		close(t->statm_fd);
	if (t->jdfd >= 0)
		close(t->jdfd);
	free(t->jd);
	tr_hw_free(t);
	tr_act_free(t);
	free(t->tids);
	free(t->skh);
	free(t->bpc);
}

/* start or attach, open the memory, trace to the end; 0 or -errno (why set) */
static int trace_all(struct tr_state *t)
{
	int e = t->cfg->pid ? attach(t) : start(t);
	if (e) {
		if (t->attached)
			end_detach(t, 0, 0);
		return e;
	}
	char mp[64];
	snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)t->pid);
	t->memfd = open(mp, O_RDWR | O_CLOEXEC);
	if (t->memfd < 0) {
		e = -errno;
		snprintf(t->res->why, sizeof(t->res->why), "%s: %s", mp, strerror(-e));
		if (t->attached)
			end_detach(t, 0, 0);
		else
			end_at_deadline(t);
		return e;
	}
	tr_hw_begin(t);          /* refused or not asked for: int3 alone (said) */
	if (t->attached)
		tr_jd_poll(t);       /* its dump and loads so far, before it runs on */
	return loop(t);
}

int hx_trace_run(const struct hx_trace_cfg *cfg, struct hx_trace_result *res)
{
	memset(res, 0, sizeof(*res));
	struct tr_state t = { .cfg = cfg, .res = res, .arch = &hx_cap_host.trace, .memfd = -1, .jdfd = -1, .statm_fd = -1 };
	int e = check_cfg(cfg, res, t.arch);
	if (e)
		return e;
	const struct uw_arch *ua = uw_arch_host();
	t.bp = ua->facts->bkpt;
	t.bp_len = ua->facts->bkpt_len;
	t.step_lift = getenv("JU_TRACE_STEP_LIFT") != NULL;
	t.cs_arch = ua->cs_arch;
	t.cs_mode = ua->cs_mode;
	t.cs_syntax = ua->cs_att ? CS_OPT_SYNTAX_ATT : 0;
	/* an interrupt ends the trace as --time does (--pid: detached, never
	 * killed; -- CMD: the process ended), and the report is still written */
	struct sigaction old_int, old_term, sa = { .sa_handler = on_stop_req };   /* no SA_RESTART */
	stop_req = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	e = trace_all(&t);
	int fe = tr_jd_finish(&t);
	if (!e)
		e = fe;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (!e && t.jd_bad)
		e = -EBADMSG;   /* a walk error kept in why */
	if (!e && !res->jitdump[0]) {
		if (cfg->jitdump)
			snprintf(res->why, sizeof(res->why), "no jitdump appeared while pid %d was traced "
				 "(--jitdump %s: it could not be opened)", (int)t.pid, cfg->jitdump);
		else
			snprintf(res->why, sizeof(res->why), "no jitdump appeared while pid %d was traced "
				 "(no jit-%d.dump mapped; give --jitdump FILE if it writes one elsewhere)",
				 (int)t.pid, (int)t.pid);
		e = -ESRCH;
	}
	state_free(&t);
	return e;
}

void hx_trace_result_free(struct hx_trace_result *res)
{
	for (size_t i = 0; i < res->nloads; i++)
		free(res->loads[i].bps);
	free(res->loads);
	for (size_t i = 0; i < res->nsmp; i++) {
		free(res->smp[i].stack);
	}
	for (size_t i = 0; i < res->nmaps_pool; i++)
		free(res->maps_pool[i]);
	free(res->maps_pool);
	free(res->smp);
	free(res->jd_bytes);
	memset(res, 0, sizeof(*res));
}
