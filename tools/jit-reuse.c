/* A JIT that reuses one address (issue 34): function A (a frame record) is
 * written at X with its unwinding info, announced (UNWINDING_INFO +
 * CODE_LOAD), run; then B (no frame record, the call at A's call offset) is
 * written over X, announced anew, run.  main -> driver -> X -> target.
 *   jit-reuse DUMPDIR reuse|alone|move MS
 * reuse: A then B, MS milliseconds each; alone: B only (the control);
 * move: B at X, then its code copied to X + 0x1000 and announced with a
 * JIT_CODE_MOVE (no new UNWINDING_INFO), run there: MS milliseconds each;
 * DUMPDIR/addrs gets "X Y T": the two addresses and the move's
 * CLOCK_MONOTONIC time in ns (perf's clock under -k 1).
 * Built on the project's JIT side (trampolines/): emitter, unwinding data
 * and jitdump writer.  Exit 0, or 1 with a message. */
#include "trampolines/tramp.h"
#include "trampolines/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*tramp_fn)(void *, void *, void *, void (*)(void));

static const char *const gen_a[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret", NULL };
/* B: no frame record, its call at A's call offset; the first of these forms
 * this arch's emitter takes with the call there (one per arch: each names its
 * own registers) */
static const char *const gen_b[][8] = {
	{ "alloc 0x18", "call_target", "free 0x18", "ret", NULL },
	{ "save_reg x30", "alloc 16", "call_target", "free 16", "restore_reg x30", "ret", NULL },
	{ "save_reg ra", "alloc 16", "nop", "call_target", "free 16", "restore_reg ra", "ret", NULL },
};

static struct tr_func fn;
static struct tr_unwind unw;
static struct tr_arena arena;
static struct jdw dump;
static volatile unsigned long spins;

__attribute__((noinline)) static void target(void)
{
	for (int i = 0; i < 2000; i++)
		spins++;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void driver(uint8_t *x, double ms)
{
	double end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 100; i++)
			((tramp_fn)(uintptr_t)x)(NULL, NULL, NULL, target);
	__asm__ volatile("" ::: "memory");
}

/* ops (NULL-terminated) emitted into fn; the offset of its call, or -1 with
 * the message in err. */
static long emit(const char *const *ops, struct ju_err *err)
{
	struct tr_op o[16];
	size_t n = 0;
	memset(o, 0, sizeof(o));
	for (; ops[n] && n < 16; n++)
		if (tr_op_parse(ops[n], &o[n], err))
			return -1;
	if (tr_emit(tr_arch_host(), o, n, &fn, err))
		return -1;
	for (size_t i = 0; i < fn.nrows; i++)
		if (fn.rows[i].is_call)
			return (long)fn.rows[i].offset;
	ju_errf(err, EINVAL, 0, "no call");
	return -1;
}

/* Writes the generation in fn and its unwinding data at x and announces it. */
static int load(const char *name, uint8_t *x)
{
	struct ju_err err;
	struct tr_unwind_opts uo;
	tr_unwind_opts_default(&uo);
	uint64_t addr = (uint64_t)(uintptr_t)x;
	if (tr_unwind_build(&fn, &uo, addr, &unw, &err))
		return fprintf(stderr, "jit-reuse: %s\n", err.msg), -1;
	static uint8_t img[8192];
	memset(img, 0, sizeof(img));
	memcpy(img, fn.code, fn.code_size);
	memcpy(img + unw.eh_off, unw.data, unw.size);
	if (tr_patch(&arena, x, img, unw.eh_off + unw.size) ||
	    jdw_unwinding_info(&dump, unw.data, unw.size, unw.hdr_size, unw.mapped_size) ||
	    jdw_code_load(&dump, name, addr, fn.code, fn.code_size, NULL))
		return fprintf(stderr, "jit-reuse: cannot install %s\n", name), -1;
	return 0;
}

#define MOVE_BY 0x1000

/* B's code (fn), announced at x, copied to x + MOVE_BY: the move as a JIT
 * writes it (the code alone; perf keeps the load's file for its CFI). */
static int move(const char *dir, uint8_t *x)
{
	uint8_t *y = x + MOVE_BY;
	char path[4096];
	snprintf(path, sizeof(path), "%s/addrs", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return fprintf(stderr, "jit-reuse: cannot write %s\n", path), -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(f, "%lx %lx %lld\n", (unsigned long)(uintptr_t)x, (unsigned long)(uintptr_t)y,
		(long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	fclose(f);
	if (tr_patch(&arena, y, fn.code, fn.code_size) ||
	    jdw_code_move(&dump, (uint64_t)(uintptr_t)x, (uint64_t)(uintptr_t)y, fn.code_size, dump.next_index - 1))
		return fprintf(stderr, "jit-reuse: cannot move B\n"), -1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[2], "reuse") && strcmp(argv[2], "alone") && strcmp(argv[2], "move")))
		return fprintf(stderr, "usage: jit-reuse DUMPDIR reuse|alone|move MS\n"), 1;
	double ms = atof(argv[3]);
	uint8_t *x;
	if (jdw_open(&dump, argv[1], tr_arch_host()->facts->elf_mach) || tr_arena_init(&arena, 65536) ||
	    tr_arena_alloc(&arena, 8192, 64, &x))
		return fprintf(stderr, "jit-reuse: cannot set up the dump or the arena\n"), 1;
	struct ju_err err;
	long call_a = emit(gen_a, &err);
	if (call_a < 0)
		return fprintf(stderr, "jit-reuse: A: %s\n", err.msg), 1;
	if (!strcmp(argv[2], "reuse")) {
		if (load("A", x))
			return 1;
		driver(x, ms);
	}
	size_t b = 0;
	while (b < sizeof(gen_b) / sizeof(gen_b[0]) && emit(gen_b[b], &err) != call_a)
		b++;
	if (b == sizeof(gen_b) / sizeof(gen_b[0]))
		return fprintf(stderr, "jit-reuse: no form of B has its call at A's offset %ld\n", call_a), 1;
	if (load("B", x))
		return 1;
	driver(x, ms);
	if (!strcmp(argv[2], "move")) {
		if (move(argv[1], x))
			return 1;
		driver(x + MOVE_BY, ms);
	}
	jdw_close(&dump);
	printf("%lu\n", spins);
	return 0;
}
