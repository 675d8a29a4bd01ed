/* trampolines/arena.c: W^X holds before and after every patch, patched code
 * runs, out-of-arena patches are refused, a direct store faults. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trampolines/tramp.h"

#include "tests/hostarch.h"
#include HX_CAPTURE_ARCH_H   /* HX_ARCH_DIRECT_PATCH: the capture patches through /proc/self/mem */

/* A tiny function per arch: returns 42; imm7 at off makes it return 7. */
struct tiny {
	const char *arch;
	uint8_t ret42[8];
	size_t n;
	uint8_t imm7[4];
	size_t nimm, off;
};
static const struct tiny tinies[] = {
	{ "x86_64", { 0xb8, 0x2a, 0x00, 0x00, 0x00,      /* mov $42,%eax */
		      0xc3 }, 6,                       /* ret */
	  { 0x07 }, 1, 1 },                            /* ... $7 ... */
	{ "aarch64", { 0x40, 0x05, 0x80, 0x52,           /* mov w0, #42 */
		       0xc0, 0x03, 0x5f, 0xd6 }, 8,    /* ret */
	  { 0xe0, 0x00, 0x80, 0x52 }, 4, 0 },          /* mov w0, #7 */
	{ "riscv64", { 0x13, 0x05, 0xa0, 0x02,           /* li a0, 42 */
		       0x67, 0x80, 0x00, 0x00 }, 8,    /* ret */
	  { 0x13, 0x05, 0x70, 0x00 }, 4, 0 },          /* li a0, 7 (riscv64 objdump reads all three so) */
};

/* the host's tiny function, or NULL (its test is then a visible skip) */
static const struct tiny *host_tiny(void)
{
	for (size_t i = 0; i < sizeof(tinies) / sizeof(tinies[0]); i++)
		if (!strcmp(tinies[i].arch, host_facts()->name))
			return &tinies[i];
	return NULL;
}

/* The permission field of the /proc/self/maps line covering addr, e.g. "r-xp". */
static void perms_of(const void *addr, char out[5])
{
	FILE *fp = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(fp);
	char line[1024];
	strcpy(out, "none");
	while (fgets(line, sizeof(line), fp)) {
		unsigned long lo, hi;
		char p[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && (uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			memcpy(out, p, 5);
			break;
		}
	}
	fclose(fp);
}

#define ASSERT_PERMS(addr, want) do { \
	char p_[5]; \
	perms_of((addr), p_); \
	ck_assert_msg(!strcmp(p_, (want)), "%p is %s, want %s", (void *)(addr), p_, (want)); \
} while (0)

START_TEST(test_alloc)
{
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 100), 0);
	ck_assert_uint_eq(a.size, a.page);
	ASSERT_PERMS(a.base, "r-xp");
	uint8_t *p, *q;
	ck_assert_int_eq(tr_arena_alloc(&a, 3, 1, &p), 0);
	ck_assert_ptr_eq(p, a.base);
	ck_assert_int_eq(tr_arena_alloc(&a, 8, 16, &q), 0);
	ck_assert_ptr_eq(q, a.base + 16);
	ck_assert_int_eq(tr_arena_alloc(&a, 8, 3, &q), -EINVAL);
	ck_assert_int_eq(tr_arena_alloc(&a, a.page, 1, &q), -ENOMEM);
	ck_assert_int_eq(tr_arena_alloc(&a, a.page - 24, 8, &q), 0);
	ck_assert_ptr_eq(q, a.base + 24);
	ck_assert_int_eq(tr_arena_alloc(&a, 1, 1, &q), -ENOMEM);
	tr_arena_fini(&a);
	ck_assert_ptr_null(a.base);
	ck_assert_int_eq(tr_arena_init(&a, 0), -EINVAL);
}
END_TEST

START_TEST(test_patch_bounds)
{
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 1), 0);
	uint8_t b[8] = { 0 }, local[8];
	ck_assert_int_eq(tr_patch(&a, a.base - 1, b, 1), -EINVAL);
	ck_assert_int_eq(tr_patch(&a, a.base + a.size - 2, b, 4), -EINVAL);
	ck_assert_int_eq(tr_patch(&a, a.base + a.size, b, 1), -EINVAL);
	ck_assert_int_eq(tr_patch(&a, local, b, sizeof(local)), -EINVAL);
	ck_assert_int_eq(tr_patch(&a, a.base, b, SIZE_MAX), -EINVAL);
	ck_assert_int_eq(tr_patch(&a, a.base + a.size, b, 0), 0);
	ck_assert_int_eq(tr_patch(&a, a.base + a.size - 4, b, 4), 0);
	tr_arena_fini(&a);
}
END_TEST

START_TEST(test_patch_pages)
{
	/* A patch across a page boundary changes both pages and leaves both r-x. */
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 2 * 4096 + 1), 0);
	ck_assert_uint_ge(a.size, 2 * a.page);
	static const uint8_t b[4] = { 1, 2, 3, 4 };
	uint8_t *at = a.base + a.page - 2;
	errno = 1234;
	ck_assert_int_eq(tr_patch(&a, at, b, 4), 0);
	ck_assert_int_eq(errno, 1234);                 /* a signal handler's errno survives */
	ck_assert_mem_eq(at, b, 4);
	ASSERT_PERMS(a.base, "r-xp");
	ASSERT_PERMS(a.base + a.page, "r-xp");
	tr_arena_fini(&a);
}
END_TEST

START_TEST(test_init_at)
{
	/* placed exactly where asked, and never over an existing mapping */
	struct tr_arena a, b;
	ck_assert_int_eq(tr_arena_init(&a, 3 * 4096), 0);
	uintptr_t at = (uintptr_t)a.base + a.page;
	tr_arena_fini(&a);
	ck_assert_int_eq(tr_arena_init_at(&a, 4096, at), 0);
	ck_assert_ptr_eq(a.base, (void *)at);
	ASSERT_PERMS(a.base, "r-xp");
	ck_assert_int_eq(tr_arena_init_at(&b, 4096, at), -EEXIST);
	ck_assert_ptr_null(b.base);
	ck_assert_int_eq(tr_arena_init_at(&b, 4096, at + 1), -EINVAL);
	ck_assert_int_eq(tr_arena_init_at(&b, 4096, 0), -EINVAL);
	tr_arena_fini(&a);
}
END_TEST

START_TEST(test_run_patched)
{
	const struct tiny *t = host_tiny();
	ck_assert_msg(t, "no tiny function for %s", host_facts()->name);
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 4096), 0);
	uint8_t *p;
	ck_assert_int_eq(tr_arena_alloc(&a, t->n, 16, &p), 0);
	ck_assert_int_eq(tr_patch(&a, p, t->ret42, t->n), 0);
	ASSERT_PERMS(p, "r-xp");
	int (*fn)(void) = (int (*)(void))(uintptr_t)p;
	ck_assert_int_eq(fn(), 42);
	ck_assert_int_eq(tr_patch(&a, p + t->off, t->imm7, t->nimm), 0);
	ASSERT_PERMS(p, "r-xp");
	ck_assert_int_eq(fn(), 7);
	tr_arena_fini(&a);
}
END_TEST

#if HX_ARCH_DIRECT_PATCH
/* tr_arena_direct (where the capture uses it: x86_64): patches go through
 * /proc/self/mem, the pages are r-x before, during and after, and the patched
 * code runs.  A kernel that refuses forced writes is a visible skip. */
START_TEST(test_direct_patch)
{
	const struct tiny *t = host_tiny();
	ck_assert_msg(t, "no tiny function for %s", host_facts()->name);
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 2 * 4096), 0);
	ck_assert(!a.direct);
	int rc = tr_arena_direct(&a);
	if (rc) {
		printf("arena: forced writes through /proc/self/mem refused (%s): direct patch test skipped\n",
		       strerror(-rc));
		tr_arena_fini(&a);
		return;
	}
	ck_assert(a.direct);
	uint8_t *p;
	ck_assert_int_eq(tr_arena_alloc(&a, t->n, 16, &p), 0);
	errno = 1234;
	ck_assert_int_eq(tr_patch(&a, p, t->ret42, t->n), 0);
	ck_assert_int_eq(errno, 1234);
	ck_assert(a.direct);                           /* still direct: no fallback happened */
	ASSERT_PERMS(p, "r-xp");
	int (*fn)(void) = (int (*)(void))(uintptr_t)p;
	ck_assert_int_eq(fn(), 42);
	ck_assert_int_eq(tr_patch(&a, p + t->off, t->imm7, t->nimm), 0);
	ck_assert_int_eq(fn(), 7);
	/* across a page boundary, one pwrite */
	static const uint8_t b[4] = { 1, 2, 3, 4 };
	ck_assert_int_eq(tr_patch(&a, a.base + a.page - 2, b, 4), 0);
	ck_assert_mem_eq(a.base + a.page - 2, b, 4);
	ASSERT_PERMS(a.base + a.page, "r-xp");
	ck_assert_int_eq(tr_patch(&a, a.base + a.size - 1, b, 2), -EINVAL);   /* bounds as before */
	tr_arena_fini(&a);
	ck_assert(!a.direct);
	ck_assert_int_eq(a.mem_fd, -1);
}
END_TEST

/* A forced write refused after the switch (the control: a read-only file
 * stands for a kernel that says no) falls back to mprotect: the patch still
 * lands, and the arena stays on mprotect from then on. */
START_TEST(test_direct_fallback)
{
	const struct tiny *t = host_tiny();
	ck_assert_msg(t, "no tiny function for %s", host_facts()->name);
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 4096), 0);
	if (tr_arena_direct(&a)) {
		printf("arena: forced writes refused: fallback test skipped\n");
		tr_arena_fini(&a);
		return;
	}
	close(a.mem_fd);
	a.mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(a.mem_fd, 0);
	uint8_t *p;
	ck_assert_int_eq(tr_arena_alloc(&a, t->n, 16, &p), 0);
	ck_assert_int_eq(tr_patch(&a, p, t->ret42, t->n), 0);
	ck_assert(!a.direct);
	ck_assert_int_eq(a.mem_fd, -1);
	ASSERT_PERMS(p, "r-xp");
	ck_assert_int_eq(((int (*)(void))(uintptr_t)p)(), 42);
	tr_arena_fini(&a);
}
END_TEST
#endif

static sigjmp_buf fault_jmp;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(fault_jmp, 1);
}

/* Whether a plain store of one byte at addr faults (SIGSEGV caught). */
static bool store_faults(uint8_t *addr)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, &old), 0);
	volatile bool faulted = false;
	if (sigsetjmp(fault_jmp, 1) == 0)
		*(volatile uint8_t *)addr = 0x90;
	else
		faulted = true;
	sigaction(SIGSEGV, &old, NULL);
	return faulted;
}

START_TEST(test_store_faults)
{
	/* W^X: a plain store into the arena faults (the test runs in Check's fork). */
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 4096), 0);
	ck_assert_msg(store_faults(a.base), "a store into the arena did not fault");
	tr_arena_fini(&a);
}
END_TEST

#if HX_ARCH_DIRECT_PATCH
/* W^X with direct patches: the arena is never writable, so a plain store
 * still faults after tr_arena_direct and a patch. */
START_TEST(test_direct_store_faults)
{
	struct tr_arena a;
	ck_assert_int_eq(tr_arena_init(&a, 4096), 0);
	if (tr_arena_direct(&a)) {
		tr_arena_fini(&a);
		return;
	}
	static const uint8_t b[1] = { 0xc3 };
	ck_assert_int_eq(tr_patch(&a, a.base, b, 1), 0);
	ck_assert_msg(store_faults(a.base), "a store into a direct-patched arena did not fault");
	ck_assert_uint_eq(a.base[0], 0xc3);
	tr_arena_fini(&a);
}
END_TEST
#endif

Suite *suite_arena(void)
{
	Suite *s = suite_create("arena");
	TCase *tc = tcase_create("arena");
	tcase_add_test(tc, test_alloc);
	tcase_add_test(tc, test_patch_bounds);
	tcase_add_test(tc, test_patch_pages);
	tcase_add_test(tc, test_init_at);
	if (host_tiny())
		tcase_add_test(tc, test_run_patched);
	else
		printf("arena: no tiny function for %s (tests/test_arena.c), run test skipped\n", host_facts()->name);
	tcase_add_test(tc, test_store_faults);
#if HX_ARCH_DIRECT_PATCH
	tcase_add_test(tc, test_direct_patch);
	tcase_add_test(tc, test_direct_fallback);
	tcase_add_test(tc, test_direct_store_faults);
#endif
	suite_add_tcase(s, tc);
	return s;
}
