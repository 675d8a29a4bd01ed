/* tests/lint_g_perf.py's JIT: three x86_64 functions written to an executable
 * page and to a jitdump (no unwinding info), each called from its own C caller
 * and calling spin(); argv[1] picks the one that runs (noframe, framed,
 * clobber), so perf record -g shows which callers the kernel's frame-pointer
 * walk keeps below each. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static uint64_t junk[4] = { 0x1111, 0x2222, 0x3333, 0x4444 };
__attribute__((noinline)) void spin(void) { for (unsigned long i = 0; i < 100000000ul; i++) sink += i; }
typedef void (*jfn)(void (*)(void), void *);
__attribute__((noinline)) void call_noframe(jfn f) { f(spin, junk); sink++; }
__attribute__((noinline)) void call_framed(jfn f) { f(spin, junk); sink++; }
__attribute__((noinline)) void call_clobber(jfn f) { f(spin, junk); sink++; }
static uint64_t ts(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void w32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void w64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void load(FILE *f, const char *name, uint64_t addr, const uint8_t *code, size_t n, uint64_t idx)
{
	size_t nl = strlen(name) + 1;
	w32(f, 0); w32(f, (uint32_t)(56 + nl + n)); w64(f, ts());
	w32(f, getpid()); w32(f, getpid()); w64(f, addr); w64(f, addr); w64(f, n); w64(f, idx);
	fwrite(name, nl, 1, f); fwrite(code, n, 1, f);
}
int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "";
	/* sub $8,%rsp; call *%rdi; add $8,%rsp; ret */
	static const uint8_t nofr[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd7, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
	/* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
	static const uint8_t fr[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
	/* push %rbp; mov %rsi,%rbp; call *%rdi; pop %rbp; ret */
	static const uint8_t cl[] = { 0x55, 0x48, 0x89, 0xf5, 0xff, 0xd7, 0x5d, 0xc3 };
	uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(m, nofr, sizeof(nofr)); memcpy(m + 0x40, fr, sizeof(fr)); memcpy(m + 0x80, cl, sizeof(cl));
	char path[64]; snprintf(path, sizeof(path), "jit-%d.dump", getpid());
	FILE *f = fopen(path, "w+");
	w32(f, 0x4A695444); w32(f, 1); w32(f, 40); w32(f, 62); w32(f, 0); w32(f, getpid()); w64(f, ts()); w64(f, 0);
	load(f, "jit_noframe", (uint64_t)m, nofr, sizeof(nofr), 0);
	load(f, "jit_framed", (uint64_t)(m + 0x40), fr, sizeof(fr), 1);
	load(f, "jit_clobber", (uint64_t)(m + 0x80), cl, sizeof(cl), 2);
	fflush(f);
	void *mk = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0);
	(void)mk;
	if (!strcmp(which, "noframe"))
		call_noframe((jfn)m);
	else if (!strcmp(which, "framed"))
		call_framed((jfn)(m + 0x40));
	else if (!strcmp(which, "clobber"))
		call_clobber((jfn)(m + 0x80));
	else
		return 2;
	fclose(f);
	return 0;
}
