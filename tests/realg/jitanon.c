/* tests/replay_why.py's JIT: one x86_64 function that spins (a frame record,
 * then a counted loop) in an anonymous executable page, and its jitdump.
 * argv[1] "marked" maps the dump PROT_EXEC as perf needs to find it;
 * "unmarked" writes the same dump and never maps it, as a JIT that forgot
 * the marker does. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static uint64_t ts(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void w32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void w64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "";
	if (strcmp(which, "marked") && strcmp(which, "unmarked"))
		return 2;
	/* this JIT writes no perf map: one left in /tmp by an earlier process
	 * with this pid would be read as ours, by perf script and the replay */
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", getpid());
	unlink(map);
	/* push %rbp; mov %rsp,%rbp; mov $0x30000000,%ecx; 1: dec %rcx; jnz 1b; pop %rbp; ret */
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xb9, 0x00, 0x00, 0x00, 0x30,
					0x48, 0xff, 0xc9, 0x75, 0xfb, 0x5d, 0xc3 };
	uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	memcpy(m, code, sizeof(code));
	char path[64];
	snprintf(path, sizeof(path), "jit-%d.dump", getpid());
	FILE *f = fopen(path, "w+");
	if (!f)
		return 1;
	/* header: magic, version 1, size 40, EM_X86_64, pad, pid, timestamp, flags */
	w32(f, 0x4A695444); w32(f, 1); w32(f, 40); w32(f, 62); w32(f, 0); w32(f, getpid()); w64(f, ts()); w64(f, 0);
	/* JIT_CODE_LOAD: id 0, size, timestamp, pid, tid, vma, code_addr, code_size, index, name, code */
	const char *name = "jit_spin";
	size_t nl = strlen(name) + 1;
	w32(f, 0); w32(f, (uint32_t)(56 + nl + sizeof(code))); w64(f, ts());
	w32(f, getpid()); w32(f, getpid()); w64(f, (uint64_t)m); w64(f, (uint64_t)m); w64(f, sizeof(code)); w64(f, 0);
	fwrite(name, nl, 1, f); fwrite(code, sizeof(code), 1, f);
	fflush(f);
	if (!strcmp(which, "marked") && mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) == MAP_FAILED)
		return 1;
	((void (*)(void))m)();
	fclose(f);
	return 0;
}
