/* The tracer's step over a kept breakpoint (hx_cap_host.trace.step_emulate,
 * harness/capture/arch/x86_64.c) against the CPU: each instruction it does
 * is run once by a real PTRACE_SINGLESTEP and once by the hook, from the same
 * registers and stack in a traced child; every register, the flags and the
 * stack words around SP must come out equal.  An instruction it does not do
 * and a push whose stack cannot be written are refused (-ENOTSUP) with the
 * thread's registers untouched. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/capture/capture.h"

#ifdef __x86_64__
#include <sys/user.h>

static pid_t child;
static uint8_t *code;           /* shared with the child (mapped before the fork) */
static uint64_t stack_top;      /* a page of the child's own stack, below its SP */

static void setup(void)
{
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(code, MAP_FAILED);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert(WIFSTOPPED(st));
	struct user_regs_struct r;
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, child, NULL, &r), 0);
	stack_top = (r.rsp - 8192) & ~(uint64_t)15;
}

static void teardown(void)
{
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	munmap(code, 4096);
}

/* the start state: every register a value of its own, SP in the child's
 * stack, the words round it a pattern, rip at the instruction */
static void start(struct user_regs_struct *r, const uint8_t *insn, size_t n)
{
	memset(code, 0xcc, 64);
	memcpy(code, insn, n);
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, child, NULL, r), 0);
	unsigned long long *g[] = { &r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi, &r->rbp,
				    &r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		*g[i] = 0x1111111111111111ull * (i + 1) + 0x0102;
	r->rsp = stack_top;
	r->rip = (uint64_t)(uintptr_t)code;
	r->eflags = 0x246;
	ck_assert_int_eq(ptrace(PTRACE_SETREGS, child, NULL, r), 0);
	for (int w = -4; w <= 4; w++)
		ck_assert_int_eq(ptrace(PTRACE_POKEDATA, child, (void *)(uintptr_t)(stack_top + 8 * w),
					(void *)(uintptr_t)(0xa5a5000000000000ull + (uint64_t)(w + 8))), 0);
}

static void state(struct user_regs_struct *r, uint64_t words[9])
{
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, child, NULL, r), 0);
	for (int w = -4; w <= 4; w++) {
		errno = 0;
		words[w + 4] = (uint64_t)ptrace(PTRACE_PEEKDATA, child, (void *)(uintptr_t)(stack_top + 8 * w), NULL);
		ck_assert_int_eq(errno, 0);
	}
}

static const struct { const char *what; uint8_t b[4]; size_t n; } done[] = {
	{ "push %rax", { 0x50 }, 1 }, { "push %rcx", { 0x51 }, 1 }, { "push %rdx", { 0x52 }, 1 },
	{ "push %rbx", { 0x53 }, 1 }, { "push %rsp", { 0x54 }, 1 }, { "push %rbp", { 0x55 }, 1 },
	{ "push %rsi", { 0x56 }, 1 }, { "push %rdi", { 0x57 }, 1 }, { "push %r8", { 0x41, 0x50 }, 2 },
	{ "push %r9", { 0x41, 0x51 }, 2 }, { "push %r12", { 0x41, 0x54 }, 2 }, { "push %r15", { 0x41, 0x57 }, 2 },
	{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4 }, { "nop", { 0x90 }, 1 },
	{ "mov %rsp,%rbp (89)", { 0x48, 0x89, 0xe5 }, 3 }, { "mov %rsp,%rbp (8b)", { 0x48, 0x8b, 0xec }, 3 },
};

START_TEST(emulation_is_the_cpu)
{
	int (*emu)(pid_t, uint64_t, const uint8_t *, size_t) = hx_cap_host.trace.step_emulate;
	ck_assert_ptr_nonnull(emu);
	for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); i++) {
		struct user_regs_struct r0, cpu, mine;
		uint64_t wc[9], wm[9];
		int st;
		start(&r0, done[i].b, done[i].n);
		ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, child, NULL, NULL), 0);
		ck_assert_int_eq(waitpid(child, &st, 0), child);
		ck_assert_msg(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "%s: the CPU's step did not trap", done[i].what);
		state(&cpu, wc);
		start(&r0, done[i].b, done[i].n);
		ck_assert_msg(emu(child, r0.rip, done[i].b, done[i].n) == 0, "%s: refused", done[i].what);
		state(&mine, wm);
		cpu.eflags &= ~0x10100ull;      /* TF and RF: the step's own */
		mine.eflags &= ~0x10100ull;
		ck_assert_msg(cpu.rip == r0.rip + done[i].n, "%s: the CPU's step went to %llx", done[i].what, cpu.rip);
		ck_assert_msg(!memcmp(&cpu, &mine, sizeof(cpu)), "%s: registers differ from the CPU's (rip %llx/%llx "
			      "rsp %llx/%llx rbp %llx/%llx)", done[i].what, cpu.rip, mine.rip, cpu.rsp, mine.rsp,
			      cpu.rbp, mine.rbp);
		ck_assert_msg(!memcmp(wc, wm, sizeof(wc)), "%s: the stack differs from the CPU's", done[i].what);
	}
}
END_TEST

/* not its instructions (sub sets the flags; a 16-bit push; a call), and a
 * push onto no stack: refused, the registers as they were */
START_TEST(refused_leaves_the_thread)
{
	int (*emu)(pid_t, uint64_t, const uint8_t *, size_t) = hx_cap_host.trace.step_emulate;
	static const uint8_t other[][5] = { { 0x48, 0x83, 0xec, 0x08 }, { 0x66, 0x55 }, { 0xe8, 0, 0, 0, 0 },
					    { 0x40, 0x55 }, { 0x48, 0x89, 0xe6 } };
	struct user_regs_struct r0, r1;
	uint64_t w0[9], w1[9];
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		start(&r0, other[i], 5);
		state(&r0, w0);
		ck_assert_int_eq(emu(child, r0.rip, other[i], 5), -ENOTSUP);
		state(&r1, w1);
		ck_assert(!memcmp(&r0, &r1, sizeof(r0)) && !memcmp(w0, w1, sizeof(w0)));
	}
	static const uint8_t push_rbp[] = { 0x55 };
	start(&r0, push_rbp, 1);
	r0.rsp = 0x1008;                /* below it, no mapping */
	ck_assert_int_eq(ptrace(PTRACE_SETREGS, child, NULL, &r0), 0);
	ck_assert_int_eq(emu(child, r0.rip, push_rbp, 1), -ENOTSUP);
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, child, NULL, &r1), 0);
	ck_assert(!memcmp(&r0, &r1, sizeof(r0)));
	/* a thread that is not stopped (not ours): its error, not -ENOTSUP */
	ck_assert_int_eq(emu(getpid(), r0.rip, push_rbp, 1), -ESRCH);
}
END_TEST
#else
/* no hook elsewhere: the tracer steps with the byte lifted */
START_TEST(no_hook_here)
{
	ck_assert_ptr_null(hx_cap_host.trace.step_emulate);
}
END_TEST
#endif

Suite *suite_stepemu(void);
Suite *suite_stepemu(void)
{
	Suite *s = suite_create("stepemu");
	TCase *tc = tcase_create("stepemu");
#ifdef __x86_64__
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, emulation_is_the_cpu);
	tcase_add_test(tc, refused_leaves_the_thread);
#else
	tcase_add_test(tc, no_hook_here);
#endif
	suite_add_tcase(s, tc);
	return s;
}
