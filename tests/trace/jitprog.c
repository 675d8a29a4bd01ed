/* A small real JIT for `jitunwind trace`'s tests: it emits a CPython-shaped
 * trampoline (push rbp; mov rsp,rbp; call *rcx; pop rbp; ret) into an
 * executable page, writes its jitdump (with the marker mapping perf and the
 * tracer look for) through the project's JIT-side writer, and calls C through
 * it N times.  What it knows of each call (the trampoline's address and the
 * return address its callee sees) goes to OUT, for the test to compare with
 * what the tracer saw.
 *   jitprog DIR N OUT [MODE]
 * MODE: nodump  no jitdump at all
 *       salt    the dump's copy of the code has its last byte changed (as CPython does)
 *       trap    the program raises its own SIGTRAP (its handler counts it)
 *       thread  the calls run in a second thread too
 *       exec    after the calls it execs /bin/true
 *       movedra the trampoline calls a second load that moves its return address below
 *               two pushed words and jumps to a third (V8's InterpreterPushArgsThenCall):
 *               tramp -> movra (the return address moved 16 bytes down, its slot
 *               overwritten, SP never above the entry's; jmp *%r8) -> tramp2
 *               (push %rbp; mov %rsp,%rbp; call *%r9; pop %rbp; ret $16) -> callee
 *       popret  the trampoline returns by pop %r10; push %r10; ret (V8's return
 *               sequence, arguments dropped between): SP above the entry's while it runs
 *       popswap popret whose return address moves on from r10 to r11 (mov %r10,%r11;
 *               xor %r10d,%r10d; push %r11; ret): a case written from it would keep
 *               the return address in r10 (the case's ops follow only pops and
 *               pushes), so write-cases must refuse it
 *       regcall the trampoline calls through %r8 (push %rbp; mov %rsp,%rbp; call *%r8;
 *               pop %rbp; ret), the callee its fifth argument: --write-cases writes it
 *               as `raw 41 ff d0 ; call_target`
 *       relcall the trampoline calls a thunk (jmp *%rcx) 0xc0 into the page with call rel32:
 *               --write-cases writes it as `call_target rel32`
 *       grow    each call 32 KiB deeper in the stack than the one before (alloca): the
 *               stack's mapping grows by faults, with no syscall
 *       slow    2 ms between calls, so `trace --pid` can attach to it running; at the
 *               end "code_intact 1" when the code is byte for byte what it wrote
 *               (no breakpoint left behind by a detach)
 *       stdio   the CODE_LOAD goes through a fully buffered FILE (fwrite), as CPython,
 *               V8 and QEMU write theirs: it reaches the file only at exit, unless
 *               something flushes each fwrite (trace's LD_PRELOAD shim) */
#include "trampolines/tramp.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t (*tramp_fn)(uint64_t a, uint64_t b, uint64_t c, uint64_t (*callee)(uint64_t));

static const uint8_t tramp_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0xff, 0xd1,             /* call *%rcx */
	0x5d,                   /* pop %rbp */
	0xc3,                   /* ret */
};

static const uint8_t movra_code[] = {
	0x48, 0x83, 0xec, 0x10,             /* sub $16,%rsp (SP never above the entry's) */
	0x4c, 0x8b, 0x5c, 0x24, 0x10,       /* mov 16(%rsp),%r11: the return address into tramp */
	0x4c, 0x89, 0x54, 0x24, 0x10,       /* mov %r10,16(%rsp): its old slot now holds a word */
	0x4c, 0x89, 0x54, 0x24, 0x08,       /* mov %r10,8(%rsp): two words, the callee's "arguments" */
	0x4c, 0x89, 0x1c, 0x24,             /* mov %r11,(%rsp): the return address below them */
	0x41, 0xff, 0xe0,                   /* jmp *%r8 */
};
static const uint8_t tramp2_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0x41, 0xff, 0xd1,       /* call *%r9 */
	0x5d,                   /* pop %rbp */
	0xc2, 0x10, 0x00,       /* ret $16: the two words go too */
};
#define MOVRA_AT 0x40
#define TRAMP2_AT 0x80
typedef uint64_t (*tramp6_fn)(uint64_t a, uint64_t b, uint64_t c, void *rcx, void *r8, uint64_t (*r9)(uint64_t));
static bool movedra;

static const uint8_t regcall_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
	0x41, 0xff, 0xd0,       /* call *%r8 */
	0x5d,                   /* pop %rbp */
	0xc3,                   /* ret */
};
static bool regcall;
#define THUNK_AT 0xc0
static const uint8_t thunk_code[] = { 0xff, 0xe1 };   /* jmp *%rcx */

static const uint8_t popret_tail[] = {
	0x41, 0x5a,             /* pop %r10: the return address in a register, SP above the entry's */
	0x41, 0x52,             /* push %r10 */
	0xc3,                   /* ret */
};

static const uint8_t popswap_tail[] = {
	0x41, 0x5a,             /* pop %r10 */
	0x4d, 0x89, 0xd3,       /* mov %r10,%r11 */
	0x45, 0x31, 0xd2,       /* xor %r10d,%r10d */
	0x41, 0x53,             /* push %r11 */
	0xc3,                   /* ret */
};

static FILE *out;
static volatile sig_atomic_t own_traps;

static void on_trap(int sig) { (void)sig; own_traps++; }

__attribute__((noinline)) static uint64_t callee(uint64_t a)
{
	fprintf(out, "callee_ret 0x%llx\n", (unsigned long long)(uintptr_t)__builtin_return_address(0));
	/* the trampoline's own return address: its record (push rbp; mov rsp,rbp)
	 * is the one this frame's saved rbp points at */
	uint64_t *tfp = *(uint64_t **)__builtin_frame_address(0);
	fprintf(out, "tramp_ra 0x%llx\n", (unsigned long long)tfp[1]);
	return a + 1;
}

static uint8_t *code;
static size_t tramp_len;
static int ncalls;
static bool slow, grow;

static uint64_t calls(void)
{
	tramp_fn f = (tramp_fn)(uintptr_t)code;
	tramp6_fn f6 = (tramp6_fn)(uintptr_t)code;
	uint64_t sum = 0;
	for (int i = 0; i < ncalls; i++) {
		if (grow) {
			volatile char *deeper = alloca(32768);     /* freed when calls returns */
			deeper[0] = 1;
		}
		sum += movedra ? f6((uint64_t)i, 0, 0, code + MOVRA_AT, code + TRAMP2_AT, callee)
		       : regcall ? f6((uint64_t)i, 0, 0, NULL, (void *)callee, NULL)
				 : f((uint64_t)i, 0, 0, callee);
		if (slow)
			nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	return sum;
}

static void *thread_main(void *arg) { (void)arg; calls(); return NULL; }

static FILE *stdio_dump;

/* the CODE_LOAD record by hand (the jitdump specification's layout), through
 * a FILE with a buffer larger than the record */
static int load_by_stdio(struct jdw *w, const char *name, const uint8_t *bytes, size_t n)
{
	static char buf[1 << 16];
	if (!(stdio_dump = fdopen(dup(w->fd), "a")) || setvbuf(stdio_dump, buf, _IOFBF, sizeof(buf)))
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	struct {
		uint32_t id, total;
		uint64_t stamp;
		uint32_t pid, tid;
		uint64_t vma, addr, size, index;
	} __attribute__((packed)) r = { 0, (uint32_t)(sizeof(r) + strlen(name) + 1 + n),
		(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, (uint32_t)getpid(), (uint32_t)getpid(),
		(uint64_t)(uintptr_t)code, (uint64_t)(uintptr_t)code, n, 0 };
	return fwrite(&r, sizeof(r), 1, stdio_dump) == 1 && fwrite(name, strlen(name) + 1, 1, stdio_dump) == 1 &&
	       fwrite(bytes, n, 1, stdio_dump) == 1 ? 0 : -1;
}

static int write_dump(struct jdw *w, const char *dir, const char *mode)
{
	uint8_t copy[64];
	memcpy(copy, code, tramp_len);
	if (!strcmp(mode, "salt"))
		copy[tramp_len - 1] ^= 0x5a;
	bool by_stdio = !strcmp(mode, "stdio");
	if (jdw_open(w, dir, tr_arch_host()->facts->elf_mach) ||
	    (by_stdio ? load_by_stdio(w, "py::tramp:jitprog", copy, tramp_len)
		      : jdw_code_load(w, "py::tramp:jitprog", (uint64_t)(uintptr_t)code, copy, tramp_len, NULL))) {
		fprintf(stderr, "jitprog: cannot write the jitdump in %s\n", dir);
		return -1;
	}
	if (movedra && (jdw_code_load(w, "py::movra:jitprog", (uint64_t)(uintptr_t)(code + MOVRA_AT), code + MOVRA_AT,
				      sizeof(movra_code), NULL) ||
			jdw_code_load(w, "py::tramp2:jitprog", (uint64_t)(uintptr_t)(code + TRAMP2_AT),
				      code + TRAMP2_AT, sizeof(tramp2_code), NULL))) {
		fprintf(stderr, "jitprog: cannot write the jitdump in %s\n", dir);
		return -1;
	}
	return 0;
}

/* the mode's code into the page (still writable); tramp_len set */
static void place_code(const char *mode)
{
	memcpy(code, tramp_code, sizeof(tramp_code));
	size_t code_len = sizeof(tramp_code);
	if (!strcmp(mode, "popret")) {
		memcpy(code + sizeof(tramp_code) - 1, popret_tail, sizeof(popret_tail));
		code_len = sizeof(tramp_code) - 1 + sizeof(popret_tail);
	} else if (!strcmp(mode, "popswap")) {
		memcpy(code + sizeof(tramp_code) - 1, popswap_tail, sizeof(popswap_tail));
		code_len = sizeof(tramp_code) - 1 + sizeof(popswap_tail);
	}
	regcall = !strcmp(mode, "regcall");
	if (regcall) {
		memcpy(code, regcall_code, sizeof(regcall_code));
		code_len = sizeof(regcall_code);
	}
	if (!strcmp(mode, "relcall")) {
		/* call *%rcx (2 bytes) becomes call rel32 (5): e8, THUNK_AT - 9 */
		int32_t rel = THUNK_AT - 9;
		code[4] = 0xe8;
		memcpy(code + 5, &rel, 4);
		code[9] = 0x5d;
		code[10] = 0xc3;
		code_len = 11;
		memcpy(code + THUNK_AT, thunk_code, sizeof(thunk_code));
	}
	tramp_len = code_len;
	if (movedra) {
		memcpy(code + MOVRA_AT, movra_code, sizeof(movra_code));
		memcpy(code + TRAMP2_AT, tramp2_code, sizeof(tramp2_code));
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: jitprog DIR N OUT [nodump]\n");
		return 2;
	}
	ncalls = atoi(argv[2]);
	const char *mode = argc > 4 ? argv[4] : "";
	bool dump = strcmp(mode, "nodump") != 0;
	out = fopen(argv[3], "w");
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!out || code == MAP_FAILED) {
		perror("jitprog");
		return 1;
	}
	movedra = !strcmp(mode, "movedra");
	slow = !strcmp(mode, "slow");
	grow = !strcmp(mode, "grow");
	place_code(mode);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	struct jdw w;
	if (dump && write_dump(&w, argv[1], mode))
		return 1;
	fprintf(out, "tramp 0x%llx %zu\n", (unsigned long long)(uintptr_t)code, tramp_len);
	fprintf(out, "callee 0x%llx\n", (unsigned long long)(uintptr_t)callee);
	if (movedra)
		fprintf(out, "tramp2 0x%llx\n", (unsigned long long)(uintptr_t)(code + TRAMP2_AT));
	fflush(out);
	if (!strcmp(mode, "trap")) {
		signal(SIGTRAP, on_trap);
		raise(SIGTRAP);
		fprintf(out, "own_traps %d\n", (int)own_traps);
	}
	pthread_t th;
	bool threaded = !strcmp(mode, "thread") && !pthread_create(&th, NULL, thread_main, NULL);
	uint64_t sum = calls();
	if (threaded)
		pthread_join(th, NULL);
	fprintf(out, "sum %llu\n", (unsigned long long)sum);
	if (slow)
		fprintf(out, "code_intact %d\n", !memcmp(code, tramp_code, sizeof(tramp_code)));
	fclose(out);
	if (stdio_dump && fclose(stdio_dump))
		return 1;
	if (dump)
		jdw_close(&w);
	if (!strcmp(mode, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 1;
	}
	return 0;
}
