/* The JIT of tools/perf-mapcut: later loads over earlier ones, as a JIT
 * reusing code space makes them.  new_middle is loaded inside old_middle,
 * new_head over old_head's head; ctrl stands alone.  Each old one (and ctrl)
 * jumps over the bytes a later load may take and calls spin() from offset
 * 0x84, past the later load's mapping: perf unwinds spin -> old_* through
 * whatever its map tree kept of the older load there.
 *   perf-mapcut-jit DIR   (the jitdump goes to DIR) */
#include "trampolines/tramp.h"
#include "trampolines/op.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void spin(void)
{
	volatile unsigned long sink = 0;
	for (unsigned long i = 0; i < 200000000ul; i++)
		sink += i;
}

__attribute__((noinline)) static void enter(void *fn)
{
	void (*t)(void) = spin;
	asm volatile("mov %1, %%rcx\n\tcall *%0" :: "r"(fn), "r"(t)
		     : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
}

static void die(const char *m) { fprintf(stderr, "jitov: %s\n", m); exit(2); }

static void build(const char *const *lines, size_t n, struct tr_func *f)
{
	struct tr_op ops[256];
	struct ju_err err;
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		if (tr_op_parse(lines[i], &ops[i], &err))
			die(err.msg);
	}
	if (tr_emit(&tr_arch_x86_64, ops, n, f, &err))
		die(err.msg);
}

/* emit f at addr: unwinding info, code load, the bytes */
static void load(struct jdw *w, struct tr_arena *a, const struct tr_func *f, uint8_t *at, const char *name)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	struct ju_err err;
	tr_unwind_opts_default(&o);
	if (tr_unwind_build(f, &o, (uint64_t)(uintptr_t)at, &u, &err))
		die(err.msg);
	if (jdw_unwinding_info(w, u.data, u.size, u.hdr_size, u.mapped_size) ||
	    jdw_code_load(w, name, (uint64_t)(uintptr_t)at, f->code, f->code_size, NULL) ||
	    tr_patch(a, at, f->code, f->code_size))
		die("jitdump/patch");
}

int main(int argc, char **argv)
{
	const char *old_ops[200];
	size_t n = 0;
	old_ops[n++] = "push_fp";
	old_ops[n++] = "set_fp";
	old_ops[n++] = "raw eb 7e ; nop";   /* jmp over 126 bytes a later load may take */
	for (int i = 0; i < 126; i++)
		old_ops[n++] = "nop";
	old_ops[n++] = "call_target";
	old_ops[n++] = "pop_fp";
	old_ops[n++] = "ret";
	static const char *new_ops[] = { "nop", "ret" };
	struct tr_func *old = calloc(1, sizeof(*old)), *nw = calloc(1, sizeof(*nw));
	if (!old || !nw)
		die("out of memory");
	build(old_ops, n, old);
	build(new_ops, 2, nw);
	struct tr_arena a;
	struct jdw w;
	if (tr_arena_init(&a, 1 << 16) || jdw_open(&w, argc > 1 ? argv[1] : "/tmp", 62))
		die("arena/jitdump");
	uint8_t *r1, *r2, *r3;
	if (tr_arena_alloc(&a, 1024, 64, &r1) || tr_arena_alloc(&a, 1024, 64, &r2) ||
	    tr_arena_alloc(&a, 1024, 64, &r3))
		die("alloc");
	load(&w, &a, old, r1, "old_middle");
	load(&w, &a, nw, r1 + 16, "new_middle");     /* inside old_middle's jumped-over bytes */
	load(&w, &a, old, r2 + 64, "old_head");
	load(&w, &a, nw, r2 + 48, "new_head");       /* from before old_head over its head */
	load(&w, &a, old, r3, "ctrl");
	enter(r1);
	enter(r2 + 64);
	enter(r3);
	jdw_close(&w);
	return 0;
}
