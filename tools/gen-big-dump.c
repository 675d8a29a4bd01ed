/* gen-big-dump OUT.dump [MB [same]]: a large jitdump for `make bench-lint`,
 * written the way the harness writes one: for every load an UNWINDING_INFO
 * (derived CFI, eh_frame then header, terminator) and a CODE_LOAD, each
 * function's code different (its frame size grows with the load's index),
 * spaced so perf's mappings never overlap.  With "same", every load is the
 * first one's code and CFI at its own address (a JIT that copies one
 * trampoline per function, as CPython's perf trampolines do): lint's code
 * check memo then serves all but the first two. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/tramp.h"
/* the spec's field offsets by name (a no-code part of the profiler's reader) */
#include "unwinders/model/jdwalk.h"

#define PID 1u
#define BASE 0x7f0000000000ull

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static int parse(const char *line, struct tr_op *op)
{
	struct ju_err err;
	memset(op, 0, sizeof(*op));
	if (tr_op_parse(line, op, &err)) {
		fprintf(stderr, "gen-big-dump: '%s': %s\n", line, err.msg);
		return -1;
	}
	return 0;
}

/* One function: its UNWINDING_INFO, then its CODE_LOAD; the bytes written. */
static uint64_t write_load(FILE *f, const struct tr_func *fn, const struct tr_unwind *u, uint64_t addr,
			   uint64_t i, uint64_t *ts)
{
	static const uint8_t zeros[8];
	/* CODE_UNWINDING_INFO */
	uint8_t r[JD_LOAD_FIXED];
	size_t upad = (8 - u->size % 8) % 8;
	put32(r + JD_REC_ID, JD_CODE_UNWINDING_INFO);
	put32(r + JD_REC_TOTAL_SIZE, (uint32_t)(JD_UNW_FIXED + u->size + upad));
	put64(r + JD_REC_TIMESTAMP, (*ts)++);
	put64(r + JD_UNW_UNWINDING_SIZE, u->size);
	put64(r + JD_UNW_EH_FRAME_HDR_SIZE, u->hdr_size);
	put64(r + JD_UNW_MAPPED_SIZE, u->mapped_size);
	fwrite(r, 1, JD_UNW_FIXED, f);
	fwrite(u->data, 1, u->size, f);
	fwrite(zeros, 1, upad, f);
	/* CODE_LOAD: name, NUL, padding, code */
	char name[48];
	int nl = snprintf(name, sizeof(name), "py::function_%llu:bench.py", (unsigned long long)i) + 1;
	size_t lpad = (8 - (JD_LOAD_FIXED + (size_t)nl + fn->code_size) % 8) % 8;
	uint32_t total = (uint32_t)(JD_LOAD_FIXED + (size_t)nl + lpad + fn->code_size);
	put32(r + JD_REC_ID, JD_CODE_LOAD);
	put32(r + JD_REC_TOTAL_SIZE, total);
	put64(r + JD_REC_TIMESTAMP, (*ts)++);
	put32(r + JD_LOAD_PID, PID);
	put32(r + JD_LOAD_TID, PID);
	put64(r + JD_LOAD_VMA, addr);
	put64(r + JD_LOAD_CODE_ADDR, addr);
	put64(r + JD_LOAD_CODE_SIZE, fn->code_size);
	put64(r + JD_LOAD_CODE_INDEX, i);
	fwrite(r, 1, JD_LOAD_FIXED, f);
	fwrite(name, 1, (size_t)nl, f);
	fwrite(zeros, 1, lpad, f);
	fwrite(fn->code, 1, fn->code_size, f);
	return JD_UNW_FIXED + u->size + upad + total;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "same"))) {
		fprintf(stderr, "usage: gen-big-dump OUT.dump [MB (default 128) [same]]\n");
		return 2;
	}
	bool same = argc == 4;
	long mb = argc > 2 ? strtol(argv[2], NULL, 10) : 128;
	if (mb < 1 || mb > 65536) {
		fprintf(stderr, "gen-big-dump: MB %s: expected 1..65536\n", argv[2]);
		return 2;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f) {
		fprintf(stderr, "gen-big-dump: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	static char buf[1 << 20];
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	const struct tr_arch *arch = &tr_arch_x86_64;
	uint8_t h[JD_HDR_SIZE] = { 0 };
	put32(h + JD_HDR_MAGIC, JD_MAGIC);
	put32(h + JD_HDR_VERSION, 1);
	put32(h + JD_HDR_TOTAL_SIZE, JD_HDR_SIZE);
	put32(h + JD_HDR_ELF_MACH, arch->facts->elf_mach);
	put32(h + JD_HDR_PID, PID);
	put64(h + JD_HDR_TIMESTAMP, 1);
	fwrite(h, 1, sizeof(h), f);

	static struct tr_func fn;
	static struct tr_unwind u;
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.terminator = true;
	uint64_t target = (uint64_t)mb << 20, size = sizeof(h), ts = 2, addr = BASE;
	uint64_t i;
	for (i = 0; size < target; i++) {
		uint64_t v = same ? 0 : i;   /* the variant */
		/* push_fp; set_fp; [save_reg]; alloc 16(i+1); nop x (i % 48); call_target; leave; ret */
		struct tr_op ops[64];
		size_t n = 0;
		struct ju_err err;
		char line[64];
		int bad = parse("push_fp", &ops[n++]) || parse("set_fp", &ops[n++]);
		if (v & 1)
			bad |= parse("save_reg %rbx", &ops[n++]);
		snprintf(line, sizeof(line), "alloc %llu", (unsigned long long)(16 * (v % 100000000 + 1)));
		bad |= parse(line, &ops[n++]);
		for (uint64_t k = 0; k < v % 48; k++)
			bad |= parse("nop", &ops[n++]);
		bad |= parse("call_target", &ops[n++]) || parse("leave", &ops[n++]) || parse("ret", &ops[n++]);
		if (bad)
			return 2;
		if (tr_emit(arch, ops, n, &fn, &err) ||
		    tr_unwind_build(&fn, &o, addr, &u, &err)) {
			fprintf(stderr, "gen-big-dump: load %llu: %s\n", (unsigned long long)i, err.msg);
			return 2;
		}
		size += write_load(f, &fn, &u, addr, i, &ts);
		/* perf maps ALIGN_8(code) + mapped_size: the next load starts after it */
		addr += ((u.eh_off + u.mapped_size + 63) & ~63ull);
	}
	uint8_t c[JD_REC_PREFIX];
	put32(c + JD_REC_ID, JD_CODE_CLOSE);
	put32(c + JD_REC_TOTAL_SIZE, JD_REC_PREFIX);
	put64(c + JD_REC_TIMESTAMP, ts);
	fwrite(c, 1, sizeof(c), f);
	if (fclose(f)) {
		fprintf(stderr, "gen-big-dump: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	printf("gen-big-dump: %s: %llu loads, %llu bytes\n", argv[1], (unsigned long long)i,
	       (unsigned long long)size + JD_REC_PREFIX);
	return 0;
}
