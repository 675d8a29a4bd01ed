/* Batch capture (capture.h): the parent's side.  One forked child captures
 * the cases in order; a case that crashes, fails its setup or hangs ends only
 * its child, and the next case goes on in a new one. */
#include "harness/capture/capture.h"
#include HX_CAPTURE_ARCH_H   /* HX_ARCH_DONTFORK */
#include "harness/capture/ksampler.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/model/files.h"
#include "juerr.h"

#include <alloca.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The child's progress, in a page it shares with the parent. */
struct batch_shared {
	volatile size_t cur;      /* the case the child is on (or has finished last) */
};

/* The largest dump a case replays with, as perf --call-graph dwarf,N: what
 * the kernel sampler asks for. */
static uint32_t stack_user(const struct hx_case *c)
{
	uint32_t su = 8192;
	for (int i = 0; i < c->nstack_sizes; i++)
		if ((uint32_t)c->stack_sizes[i] > su)
			su = (uint32_t)c->stack_sizes[i];
	return su;
}

/* The child ended early: a signal (the alarm of a case that never returns,
 * a crash the handler could not catch) is written into the group of the case
 * it was on; the crash handler and setup errors wrote their own record. */
static void child_ended(int st, int out_fd)
{
	if (!WIFSIGNALED(st))
		return;
	char m[160];
	snprintf(m, sizeof(m), "child killed by signal %d (%s)%s", WTERMSIG(st), strsignal(WTERMSIG(st)),
		 WTERMSIG(st) == SIGALRM ? ": the case did not finish in 10 s" : "");
	hx_rec_write(out_fd, HX_REC_ERROR, m, strlen(m) + 1, NULL, 0);
}

/* Wait for the child, telling run->progress which case it is on meanwhile
 * (polled: only a progress line asks for it, so a plain run never sleeps).
 * Out of line: batch_run's frame is above every capture's anchor. */
static __attribute__((noinline)) void child_reap(pid_t pid, int *st, const struct hx_batch_run *run,
						 const struct batch_shared *sh)
{
	if (!run->progress) {
		while (waitpid(pid, st, 0) < 0 && errno == EINTR)
			;
		return;
	}
	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		run->progress(run->progress_arg, sh->cur);
		nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	}
}

/* The run's spin and sampler settings (none given: both off). */
static const struct hx_kcfg *run_kcfg(const struct hx_batch_run *run)
{
	static const struct hx_kcfg off = HX_KCFG_INIT;
	return run->kcfg ? run->kcfg : &off;
}

/* Parent side of one child: serve its spin points (kernel samples), wait.
 * 0, or a negative errno with err set. */
static int child_wait(pid_t pid, const struct hx_case *c, int req[2], int out_fd, int *st,
		      const struct hx_batch_run *run, const struct batch_shared *sh, struct ju_err *err)
{
	int src = 0;
	if (req[0] >= 0) {
		close(req[1]);
		if (run->progress)
			run->progress(run->progress_arg, sh->cur);
		src = hx_ksample_serve(pid, stack_user(c), run_kcfg(run), req[0], out_fd, err);
		close(req[0]);
	}
	child_reap(pid, st, run, sh);
	return src < 0 ? src : src ? -EIO : 0;
}

/* The child stays on the CPU it starts on: its breakpoints change code
 * protection (mprotect) twice per sample, and each change flushes the TLB of
 * every CPU the process has run on, by interrupt.  One CPU: no interrupts.
 * Nothing a sample records depends on the CPU. */
static void stay_on_cpu(void)
{
	int c = sched_getcpu();
	cpu_set_t set;
	CPU_ZERO(&set);
	if (c >= 0) {
		CPU_SET(c, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
}

/* fork, with the kernel sampler's request pipe when it is on.  The child
 * gets 0 and req[1]; a negative errno with err set on failure. */
static pid_t child_fork(int req[2], const struct hx_kcfg *k, struct ju_err *err)
{
	req[0] = req[1] = -1;
	if (k->nsamples > 0 && pipe2(req, O_CLOEXEC))
		return ju_errf(err, errno, 0, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int rc = ju_errf(err, errno, 0, "fork: %s", strerror(errno));
		if (req[0] >= 0) {
			close(req[0]);
			close(req[1]);
		}
		return rc;
	}
	if (pid == 0) {
		uw_files_child();   /* the maps perf is told of hold only the case's */
		if (req[0] >= 0)
			close(req[0]);
		hx_spin_configure(k->spin || k->nsamples > 0, req[1], k->spin_tamper);
		stay_on_cpu();
	}
	return pid;
}

/* The fork loop.  Always inlined: the public function that runs it is the
 * frame above hx_capture_case in the child, whichever entry the caller used,
 * so a capture's stack has the same frames above the anchor for every
 * caller at the same depth (the unwinders walk them; the goldens list them,
 * and where perf's 8 KB dump ends among them: keep this frame small, as
 * hx_capture_case's is sized on purpose, HX_ABOVE_ANCHOR in capture.c). */
static inline __attribute__((always_inline)) int batch_run(const struct hx_batch_case *cases, size_t n,
							   int out_fd, struct hx_batch_run *run,
							   struct ju_err *err)
{
	struct hx_batch_run none = { 0 };
	if (!run)
		run = &none;
	run->children = run->ended = 0;
	struct batch_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return ju_errf(err, errno, 0, "mmap: %s", strerror(errno));
	int rc = 0;
	for (size_t next = 0; next < n && !rc;) {
		/* the kernel sampler is opened per child, with the case's dump size */
		size_t end = run_kcfg(run)->nsamples > 0 ? next + 1 : n;
		if (run->per_child && end - next > run->per_child)
			end = next + run->per_child;
		int req[2], st = 0;
		sh->cur = next;
		pid_t pid = child_fork(req, run_kcfg(run), err);
		if (pid < 0) {
			rc = (int)pid;
			break;
		}
		if (pid == 0) {
			/* the same stack addresses in every environment (hx_stack_pad) */
			size_t pad = hx_stack_pad((uint64_t)(uintptr_t)__builtin_frame_address(0));
			if (pad) {
				uint8_t *p = alloca(pad);
				memset(p, 0, pad);
				__asm__ volatile("" : : "r"(p) : "memory");
			}
			for (size_t k = next; k < end; k++) {
				sh->cur = k;
				if (hx_capture_case(cases[k].c, cases[k].path, cases[k].dumpdir, out_fd))
					_exit(1);
			}
			_exit(0);
		}
		run->children++;
		rc = child_wait(pid, cases[next].c, req, out_fd, &st, run, sh, err);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			next = end;
			continue;
		}
		child_ended(st, out_fd);
		run->ended++;
		next = sh->cur + 1;
	}
	munmap(sh, sizeof(*sh));
	return rc;
}

int hx_capture_batch(const struct hx_batch_case *cases, size_t n, int out_fd,
		     struct hx_batch_run *run, struct ju_err *err)
{
	return batch_run(cases, n, out_fd, run, err);
}

/* A memfd with the samples header; a negative errno with err set. */
static int samples_memfd(struct ju_err *err)
{
	int fd = memfd_create("jitunwind-samples", MFD_CLOEXEC);
	if (fd < 0)
		return ju_errf(err, errno, 0, "memfd_create: %s", strerror(errno));
	const struct tr_arch *host = tr_arch_host();
	int rc = hx_samples_write_header(fd, host ? host->facts->elf_mach : 0);
	if (rc) {
		close(fd);
		return ju_errf(err, -rc, 0, "samples header: %s", strerror(-rc));
	}
	return fd;
}

/* The samples memfd a process keeps from one hx_capture_samples to the
 * next, and its mapping.  A batch's records overwrite the last batch's from
 * offset 16 on (the header stays), so the kernel allocates no new page for
 * them and the parent's mapping of those pages stays valid: on this kind of
 * VM a page met for the first time (allocated, or mapped anew) costs several
 * times its copy.  The parse reads only [0, what this batch wrote): bytes
 * past it are never looked at.  Per process: a forked worker makes its own
 * (two processes writing one memfd would mix their records). */
static struct {
	pid_t pid;
	int fd;                      /* -1: none yet */
	uint8_t *map;                /* PROT_READ, MAP_SHARED, not inherited by a fork */
	size_t maplen;
	bool busy;                   /* a struct hx_samples points into map */
} kept = { .fd = -1 };

static void kept_release(void)
{
	kept.busy = false;
}

/* The kept memfd, positioned for a batch's first record; a negative errno
 * (err set) or KEPT_BUSY (another struct hx_samples holds it: the caller
 * makes its own). */
#define KEPT_BUSY INT32_MIN
static __attribute__((noinline)) int kept_memfd(struct ju_err *err)
{
	if (kept.pid != getpid()) {
		if (kept.fd >= 0)
			close(kept.fd);           /* the parent's: its mapping was not inherited */
		kept.fd = -1;
		kept.map = NULL;
		kept.maplen = 0;
		kept.busy = false;
		kept.pid = getpid();
	}
	if (kept.busy || !hx_capture_keeps_samples())
		return KEPT_BUSY;
	if (kept.fd < 0) {
		int fd = samples_memfd(err);
		if (fd < 0)
			return fd;
		kept.fd = fd;
	}
	if (lseek(kept.fd, 16, SEEK_SET) != 16)
		return ju_errf(err, errno, 0, "seeking the samples memfd: %s", strerror(errno));
	return kept.fd;
}

/* The kept memfd's first size bytes, mapped (kept across calls) and parsed
 * into *out.  0, or a negative errno with err set. */
static __attribute__((noinline)) int kept_parse(size_t size, struct hx_samples *out, struct ju_err *err)
{
	if (size > kept.maplen) {
		size_t len = ((size + size / 2) + 0xfffff) & ~(size_t)0xfffff;
		if (kept.map)
			munmap(kept.map, kept.maplen);
		kept.map = NULL;
		kept.maplen = 0;
		void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, kept.fd, 0);
		if (m == MAP_FAILED)
			return ju_errf(err, errno, 0, "mapping the samples: %s", strerror(errno));
		madvise(m, len, MADV_DONTFORK);   /* capture children list only their own maps */
		kept.map = m;
		kept.maplen = len;
	}
	/* the parser does not write into the records (the mapping is read-only) */
	int rc = hx_samples_parse(out, kept.map, size, "(captured samples)", err->msg, sizeof(err->msg));
	kept.busy = true;
	out->release = kept_release;
	if (rc) {
		hx_samples_free(out);
		return rc < 0 ? rc : -EINVAL;
	}
	return 0;
}

/* The memfd's samples, mapped (no copy) and parsed into *out; closes fd.
 * 0, or a negative errno with err set. */
static int samples_parse_fd(int fd, struct hx_samples *out, struct ju_err *err)
{
	off_t size = lseek(fd, 0, SEEK_END);
	void *data = size > 0 ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	int e = errno;
	close(fd);
	if (data == MAP_FAILED)
		return ju_errf(err, e, 0, "mapping the samples: %s", strerror(e));
	madvise(data, (size_t)size, MADV_DONTFORK);   /* a later capture's child lists only its own maps */
	int rc = hx_samples_parse(out, data, (size_t)size, "(captured samples)", err->msg, sizeof(err->msg));
	out->mapped = true;
	if (rc) {
		hx_samples_free(out);
		return rc < 0 ? rc : -EINVAL;
	}
	return 0;
}

bool hx_capture_keeps_samples(void)
{
	const char *fresh = getenv("JU_SAMPLES_FRESH");   /* "1": a memfd per capture, as before */
	return HX_ARCH_DONTFORK && !(fresh && !strcmp(fresh, "1"));
}

int hx_capture_samples(const struct hx_batch_case *cases, size_t n, struct hx_samples *out,
		       struct hx_batch_run *run, struct ju_err *err)
{
	memset(out, 0, sizeof(*out));
	int fd = kept_memfd(err);
	bool fresh = fd == KEPT_BUSY;
	if (fresh)
		fd = samples_memfd(err);
	if (fd < 0)
		return fd;
	int rc = batch_run(cases, n, fd, run, err);
	if (rc) {
		if (fresh)
			close(fd);
		return rc;
	}
	if (fresh)
		return samples_parse_fd(fd, out, err);
	off_t size = lseek(fd, 0, SEEK_CUR);
	if (size < 16)
		return ju_errf(err, errno, 0, "the samples memfd's offset: %s", strerror(errno));
	return kept_parse((size_t)size, out, err);
}

int hx_capture_to_file(const struct hx_batch_case *cases, size_t n, const char *out_path,
		       struct hx_batch_run *run, struct ju_err *err)
{
	int fd = open(out_path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return ju_errf(err, errno, 0, "%s: %s", out_path, strerror(errno));
	const struct tr_arch *host = tr_arch_host();
	int rc = hx_samples_write_header(fd, host ? host->facts->elf_mach : 0);
	if (rc) {
		close(fd);
		return ju_errf(err, rc < 0 ? -rc : EIO, 0, "%s: write failed", out_path);
	}
	rc = batch_run(cases, n, fd, run, err);
	if (close(fd) && !rc)
		rc = ju_errf(err, errno, 0, "%s: %s", out_path, strerror(errno));
	return rc;
}

int hx_capture_one(const struct hx_case *c, const char *case_path, const char *dumpdir,
		   const char *out_path, struct ju_err *err)
{
	struct hx_batch_case one = { .c = c, .path = case_path, .dumpdir = dumpdir };
	return hx_capture_to_file(&one, 1, out_path, NULL, err);
}

int hx_batch_dirs(struct hx_batch_case *b, size_t n, const char *root, unsigned per_child,
		  struct ju_err *err)
{
	bool shared = n > 1 && per_child != 1;
	for (size_t i = 0; i < n; i++)
		b[i].dumpdir = NULL;
	for (size_t i = 0; i < n; i++) {
		char d[4352];
		if (!shared)
			snprintf(d, sizeof(d), "%s", root);
		else
			snprintf(d, sizeof(d), "%s/%s", root, b[i].c->name);
		if (shared && mkdir(d, 0755) < 0 && errno != EEXIST) {
			int rc = ju_errf(err, errno, 0, "%s: %s", d, strerror(errno));
			hx_batch_dirs_free(b, n);
			return rc;
		}
		if (!(b[i].dumpdir = strdup(d))) {
			hx_batch_dirs_free(b, n);
			return ju_errf(err, ENOMEM, 0, "out of memory");
		}
	}
	return 0;
}

void hx_batch_dirs_free(struct hx_batch_case *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)(uintptr_t)b[i].dumpdir);
		b[i].dumpdir = NULL;
	}
}
