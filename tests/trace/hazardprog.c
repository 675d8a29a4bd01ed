/* Small JITs that do what real ones do to a tracer (tests/trace/trace_test.py):
 *   hazardprog MODE DIR N OUT
 * MODE: late     B is announced at the start; A, which calls B, is announced from
 *                inside its own first call (HotSpot's JVMTI agent writes a method's
 *                CODE_LOAD after it ran): while A is being announced, the tracer's
 *                return-address breakpoint of B's activation sits inside A
 *       patch    f (mov $1,%eax; ret) and g (mov $2,%eax; ret) announced; after two
 *                calls f's entry is patched in place into jmp g (HotSpot does this to a
 *                compiled method's entry), then the dump is closed (CODE_CLOSE: the
 *                tracer takes its breakpoints out) and f is called again: it must give 2
 *       unlocked B's CODE_LOAD goes through a fully buffered FILE with fwrite_unlocked
 *                (perf's JVMTI agent writes its dump so)
 *       half     B is announced and called N times, then half a CODE_LOAD is written
 *                (a JIT killed mid-write) and the program exits
 *       halfkill the same, then the program dies of SIGKILL (a process that dies mid-trace)
 *       fork     B is announced and called, then the program forks: the child calls B N
 *                times (the tracer's entry breakpoint is in its copy of the code) and exits
 *                0; the parent exits 0 when the child did
 *       int3     f starts with an int3 of its own (int3; mov $1,%eax; ret) that its SIGTRAP
 *                handler counts: a breakpoint byte the tracer did not plant
 *       vfork    B is announced and called, then the program vforks and the child execs
 *                /bin/true (the child shares the memory holding the tracer's breakpoints
 *                until its exec); then B is called N times more: exit 0 when the child
 *                exited 0 and B gave its sum
 *       copy     B is announced and called N times, then its live bytes are copied to a
 *                new address (V8 copies InterpreterEntryTrampoline per function so), the
 *                copy announced as copy::C and called N times: the tracer's breakpoint
 *                bytes in B went with it
 * OUT gets "sum S" (and for patch "patched R1 R2"); exit 0 when the code gave
 * what it was written to give, 3 when it did not (the tracer corrupted it). */
#include "trampolines/tramp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t (*callee_fn)(uint64_t);
typedef uint64_t (*jit_fn)(uint64_t a, uint64_t b, void *next, callee_fn callee);
typedef uint32_t (*ret_fn)(void);

static const uint8_t b_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0xff, 0xd1,             /* call *%rcx */
	0x5d,                   /* pop %rbp */
	0xc3,                   /* ret */
};
static const uint8_t a_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0xff, 0xd2,             /* call *%rdx: B */
	0x5d,                   /* pop %rbp */
	0xc3,                   /* ret */
};
static const uint8_t f_code[] = {
	0xb8, 0x01, 0x00, 0x00, 0x00,   /* mov $1,%eax */
	0xc3,                           /* ret */
};
static const uint8_t g_code[] = {
	0xb8, 0x02, 0x00, 0x00, 0x00,   /* mov $2,%eax */
	0xc3,                           /* ret */
};
static const uint8_t int3_code[] = {
	0xcc,                           /* int3: the program's own */
	0xb8, 0x01, 0x00, 0x00, 0x00,   /* mov $1,%eax */
	0xc3,                           /* ret */
};
#define A_AT 0x40
#define G_AT 0x40

static uint8_t *code;
static struct jdw w;
static bool announced;

static int die(const char *what)
{
	fprintf(stderr, "hazardprog: %s\n", what);
	return 1;
}

static uint64_t plain_callee(uint64_t a) { return a + 1; }

/* late: A's CODE_LOAD from inside A's first activation (A -> B -> here) */
static uint64_t announce_callee(uint64_t a)
{
	if (!announced) {
		announced = true;
		if (jdw_code_load(&w, "late::A", (uint64_t)(uintptr_t)(code + A_AT), code + A_AT, sizeof(a_code), NULL))
			exit(die("cannot write A's CODE_LOAD"));
	}
	return a + 1;
}

static int run_late(int n, FILE *out)
{
	if (jdw_code_load(&w, "late::B", (uint64_t)(uintptr_t)code, code, sizeof(b_code), NULL))
		return die("cannot write B's CODE_LOAD");
	jit_fn a = (jit_fn)(uintptr_t)(code + A_AT);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += a((uint64_t)i, 0, code, announce_callee);
	fprintf(out, "sum %llu\n", (unsigned long long)sum);
	return sum == (uint64_t)n * (uint64_t)(n + 1) / 2 ? 0 : 3;
}

/* patch: f's entry rewritten in place as jmp g, W^X (RW, copy, RX) */
static int run_patch(int n, FILE *out)
{
	if (jdw_code_load(&w, "patch::f", (uint64_t)(uintptr_t)code, code, sizeof(f_code), NULL) ||
	    jdw_code_load(&w, "patch::g", (uint64_t)(uintptr_t)(code + G_AT), code + G_AT, sizeof(g_code), NULL))
		return die("cannot write the CODE_LOADs");
	ret_fn f = (ret_fn)(uintptr_t)code;
	uint32_t before = 0, after = 0, closed = 0;
	for (int i = 0; i < n; i++)
		before += f();
	int32_t rel = (int32_t)(G_AT - 5);
	uint8_t jmp[5] = { 0xe9 };      /* jmp rel32: to g */
	memcpy(jmp + 1, &rel, 4);
	if (mprotect(code, 4096, PROT_READ | PROT_WRITE))
		return die("mprotect RW");
	memcpy(code, jmp, sizeof(jmp));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return die("mprotect RX");
	after = f();
	if (jdw_close(&w))
		return die("cannot close the jitdump");
	closed = f();
	fprintf(out, "patched %u %u %u\n", before, after, closed);
	return before == (uint32_t)n && after == 2 && closed == 2 ? 0 : 3;
}

static volatile sig_atomic_t own_traps;
static void on_trap(int sig) { (void)sig; own_traps++; }

/* int3: f's own int3 reaches its handler once per call */
static int run_int3(int n, FILE *out)
{
	if (jdw_code_load(&w, "int3::f", (uint64_t)(uintptr_t)code, code, sizeof(int3_code), NULL))
		return die("cannot write f's CODE_LOAD");
	signal(SIGTRAP, on_trap);
	ret_fn f = (ret_fn)(uintptr_t)code;
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += f();
	fprintf(out, "traps %d sum %u\n", (int)own_traps, sum);
	return own_traps == n && sum == (uint32_t)n ? 0 : 3;
}

/* unlocked: B's CODE_LOAD by hand (the spec's layout) through fwrite_unlocked */
static int load_unlocked(void)
{
	static char buf[1 << 16];
	FILE *f = fdopen(dup(w.fd), "a");
	if (!f || setvbuf(f, buf, _IOFBF, sizeof(buf)))
		return -1;
	static const char name[] = "late::B";
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	struct {
		uint32_t id, total;
		uint64_t stamp;
		uint32_t pid, tid;
		uint64_t vma, addr, size, index;
	} __attribute__((packed)) r = { 0, (uint32_t)(sizeof(r) + sizeof(name) + sizeof(b_code)),
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, (uint32_t)getpid(), (uint32_t)getpid(),
		(uint64_t)(uintptr_t)code, (uint64_t)(uintptr_t)code, sizeof(b_code), 0 };
	bool ok = fwrite_unlocked(&r, sizeof(r), 1, f) == 1 && fwrite_unlocked(name, sizeof(name), 1, f) == 1 &&
		  fwrite_unlocked(b_code, sizeof(b_code), 1, f) == 1;
	return ok ? 0 : -1;             /* the FILE stays open: its buffer goes out at exit */
}

/* fork: B's entry breakpoint is in the child's copy of memory */
static int run_fork(int n, FILE *out)
{
	if (jdw_code_load(&w, "fork::B", (uint64_t)(uintptr_t)code, code, sizeof(b_code), NULL))
		return die("cannot write B's CODE_LOAD");
	jit_fn b = (jit_fn)(uintptr_t)code;
	uint64_t sum = b(0, 0, NULL, plain_callee);
	fflush(out);
	pid_t child = fork();
	if (child < 0)
		return die("fork");
	if (child == 0) {
		for (int i = 0; i < n; i++)
			sum += b((uint64_t)i, 0, NULL, plain_callee);
		_exit(sum == 1 + (uint64_t)n * (uint64_t)(n + 1) / 2 ? 0 : 3);
	}
	int st;
	if (waitpid(child, &st, 0) != child)
		return die("waitpid");
	fprintf(out, "child %s %d\n", WIFEXITED(st) ? "exited" : "killed by signal",
		WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 3;
}

/* vfork: the child borrows the parent's memory (breakpoints and all) to exec */
static int run_vfork(int n, FILE *out)
{
	if (jdw_code_load(&w, "vfork::B", (uint64_t)(uintptr_t)code, code, sizeof(b_code), NULL))
		return die("cannot write B's CODE_LOAD");
	jit_fn b = (jit_fn)(uintptr_t)code;
	uint64_t sum = b(0, 0, NULL, plain_callee);
	fflush(out);
	pid_t child = vfork();
	if (child < 0)
		return die("vfork");
	if (child == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(child, &st, 0) != child)
		return die("waitpid");
	for (int i = 0; i < n; i++)
		sum += b((uint64_t)i, 0, NULL, plain_callee);
	fprintf(out, "child %s %d sum %llu\n", WIFEXITED(st) ? "exited" : "killed by signal",
		WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), (unsigned long long)sum);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && sum == 1 + (uint64_t)n * (uint64_t)(n + 1) / 2 ? 0 : 3;
}

/* copy: C made from B's bytes as the process has them, W^X */
#define C_AT 0x80
static int run_copy(int n, FILE *out)
{
	if (jdw_code_load(&w, "late::B", (uint64_t)(uintptr_t)code, code, sizeof(b_code), NULL))
		return die("cannot write B's CODE_LOAD");
	jit_fn b = (jit_fn)(uintptr_t)code, c = (jit_fn)(uintptr_t)(code + C_AT);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += b((uint64_t)i, 0, NULL, plain_callee);
	if (mprotect(code, 4096, PROT_READ | PROT_WRITE))
		return die("mprotect RW");
	memcpy(code + C_AT, code, sizeof(b_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return die("mprotect RX");
	if (jdw_code_load(&w, "copy::C", (uint64_t)(uintptr_t)c, code + C_AT, sizeof(b_code), NULL))
		return die("cannot write C's CODE_LOAD");
	for (int i = 0; i < n; i++)
		sum += c((uint64_t)i, 0, NULL, plain_callee);
	fprintf(out, "sum %llu\n", (unsigned long long)sum);
	return sum == (uint64_t)n * (uint64_t)(n + 1) ? 0 : 3;
}

/* half: a CODE_LOAD's first 40 bytes of the 72 + name + code its prefix promises */
static int write_half(void)
{
	uint8_t r[40] = { 0 };
	uint32_t total = 100;
	memcpy(r + 4, &total, 4);
	return write(w.fd, r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : -1;
}

static int run_b(const char *mode, int n, FILE *out)
{
	bool unlocked = !strcmp(mode, "unlocked");
	if (unlocked ? load_unlocked()
		     : jdw_code_load(&w, "late::B", (uint64_t)(uintptr_t)code, code, sizeof(b_code), NULL))
		return die("cannot write B's CODE_LOAD");
	jit_fn b = (jit_fn)(uintptr_t)code;
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += b((uint64_t)i, 0, NULL, plain_callee);
	fprintf(out, "sum %llu\n", (unsigned long long)sum);
	if (!strncmp(mode, "half", 4) && write_half())
		return die("cannot write the half record");
	if (!strcmp(mode, "halfkill"))
		raise(SIGKILL);
	return sum == (uint64_t)n * (uint64_t)(n + 1) / 2 ? 0 : 3;
}

int main(int argc, char **argv)
{
	if (argc != 5)
		return fprintf(stderr, "usage: hazardprog late|patch|unlocked|half|halfkill|int3|fork|vfork|copy DIR N OUT\n"), 2;
	const char *mode = argv[1];
	int n = atoi(argv[3]);
	FILE *out = fopen(argv[4], "w");
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!out || code == MAP_FAILED)
		return die("cannot open OUT or map the code");
	bool patch = !strcmp(mode, "patch"), int3 = !strcmp(mode, "int3");
	memcpy(code, patch ? f_code : b_code, patch ? sizeof(f_code) : sizeof(b_code));
	if (int3)
		memcpy(code, int3_code, sizeof(int3_code));
	memcpy(code + A_AT, patch ? g_code : a_code, patch ? sizeof(g_code) : sizeof(a_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return die("mprotect RX");
	if (jdw_open(&w, argv[2], tr_arch_host()->facts->elf_mach))
		return die("cannot open the jitdump");
	int rc = !strcmp(mode, "late") ? run_late(n, out) : patch ? run_patch(n, out)
		 : int3 ? run_int3(n, out) : !strcmp(mode, "fork") ? run_fork(n, out) : !strcmp(mode, "copy") ? run_copy(n, out)
		 : !strcmp(mode, "vfork") ? run_vfork(n, out)
		 : run_b(mode, n, out);
	if (!strcmp(mode, "late") || !strcmp(mode, "copy"))
		jdw_close(&w);          /* patch closed it; unlocked's FILE and half's record come last */
	if (fclose(out))
		return 1;
	return rc;
}
