/* The project's own generated trampolines run as a real program, for
 * `jitunwind trace`'s independent check of its truth by execution.  It reads
 * a shipped case's [code] (each op through the JIT side's tr_op_parse), its
 * [unwind] cfi and its [sample] depth, generates the code and its unwinding
 * information with the JIT side (tr_emit, tr_unwind_build), installs one copy
 * per level in the W^X arena (named tramp, tramp2, ... as `run` names them),
 * writes the jitdump with the JIT-side writer and calls C through the levels
 * N times: main -> calls -> tramp -> level(1) -> tramp2 -> ... -> level(depth).
 * Linked only against libju_trampolines.
 *
 * What the generator knows goes to OUT, for the test to compare with what the
 * tracer saw: each level's address, its rows (offset, CFA register and offset,
 * CFA - SP, where the return address is from the CFA), and the return address
 * of each trampoline, read in the C function it calls at the address the
 * generator's row at the call says (that function's CFA + CFA - SP + ra_off),
 * never by walking frames.
 *   caseprog CASE DIR N OUT [plant|main]
 * plant: level 1's FDE gets a wrong byte: its first DW_CFA_def_cfa_offset
 * operand is 8 more than the generator derived (the negative control).
 * main: main calls level 1's trampoline itself (main -> tramp -> level(1)
 * ...), as a JIT entered straight from main: a wrong register rule there
 * loses main's callers, which only a truth past main sees.
 * OUT also gets main's own return address (into the C runtime). */
#include "trampolines/tramp.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXDEPTH 8

static struct tr_func fn;
static struct tr_op ops[TR_MAX_INSNS * 2];
static size_t nops;
static struct tr_unwind_opts uo;
static int depth = 1;
static uint8_t *tramp[MAXDEPTH + 1];
static FILE *out;
static struct jdw w;           /* static: main's frame stays small (its record in perf's copy) */
static struct tr_arena arena;

typedef uint64_t (*tramp_fn)(uint64_t a, uint64_t b, uint64_t c, uint64_t (*callee)(uint64_t));

static int bad(const char *path, int line, const char *what)
{
	fprintf(stderr, "caseprog: %s:%d: %s\n", path, line, what);
	return 2;
}

/* [unwind]: cfi as the case says; the other keys only at their defaults */
static int unwind_key(const char *k, const char *v, char *err, size_t n)
{
	static const char *const dflt[][2] = { { "cie", "zR" }, { "fde_enc", "pcrel|sdata4" },
		{ "hdr", "after" }, { "table_enc", "datarel|sdata4" }, { "mapped", "auto" } };
	if (!strcmp(k, "cfi")) {
		if (!strcmp(v, "derived") || !strcmp(v, "directives")) {
			uo.cfi = v[0] == 'd' && v[1] == 'e' ? TR_CFI_DERIVED : TR_CFI_DIRECTIVES;
			return 0;
		}
		if (strncmp(v, "bytes ", 6)) {
			snprintf(err, n, "cfi '%s': this program takes derived, directives or bytes", v);
			return -1;
		}
		uo.cfi = TR_CFI_BYTES;
		char *e;
		for (const char *p = v + 6; *p && uo.prog_len < sizeof(uo.prog); p = e) {
			unsigned long b = strtoul(p, &e, 16);
			if (e == p || b > 0xff) {
				snprintf(err, n, "cfi = bytes: expected hex bytes at '%s'", p);
				return -1;
			}
			uo.prog[uo.prog_len++] = (uint8_t)b;
			while (*e == ' ')
				e++;
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
		if (!strcmp(k, dflt[i][0]) && !strcmp(v, dflt[i][1]))
			return 0;
	snprintf(err, n, "[unwind] %s = %s: this program takes only the defaults of keys other than cfi", k, v);
	return -1;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t l = strlen(s);
	while (l && (s[l - 1] == '\n' || s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
		s[--l] = 0;
	return s;
}

/* one line of section sec */
static int case_line(const char *sec, char *s, int line, char *err, size_t n)
{
	if (!strcmp(sec, "code")) {
		if (nops == sizeof(ops) / sizeof(ops[0])) {
			snprintf(err, n, "too many ops");
			return -1;
		}
		memset(&ops[nops], 0, sizeof(ops[0]));
		ops[nops].line = line;
		struct ju_err je;
		if (tr_op_parse(s, &ops[nops++], &je))
			return snprintf(err, n, "%s", je.msg), -1;
		return 0;
	}
	char *eq = strchr(s, '=');
	if (!eq || (strcmp(sec, "unwind") && strcmp(sec, "sample")))
		return 0;
	*eq = 0;
	char *k = trim(s), *v = trim(eq + 1);
	if (!strcmp(sec, "unwind"))
		return unwind_key(k, v, err, n);
	if (!strcmp(k, "depth") && ((depth = atoi(v)) < 1 || depth > MAXDEPTH)) {
		snprintf(err, n, "depth %s: 1..%d here", v, MAXDEPTH);
		return -1;
	}
	if (!strcmp(k, "host") || !strcmp(k, "stride")) {
		snprintf(err, n, "[sample] %s: not built into this program", k);
		return -1;
	}
	return 0;
}

static int read_case(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return bad(path, 0, strerror(errno));
	struct ju_err err;
	char buf[1024], sec[32] = "";
	int line = 0, rc = 0;
	tr_unwind_opts_default(&uo);
	while (!rc && fgets(buf, sizeof(buf), f) && line < 100000) {
		char *s = trim(buf);
		line++;
		if (!*s || *s == '#')
			continue;
		if (*s == '[') {
			snprintf(sec, sizeof(sec), "%.*s", (int)strcspn(s + 1, "]"), s + 1);
			if (!strcmp(sec, "leaf"))
				rc = bad(path, line, "[leaf] is not built into this program");
			continue;
		}
		if (case_line(sec, s, line, err.msg, sizeof(err.msg)))
			rc = bad(path, line, err.msg);
	}
	fclose(f);
	if (!rc && tr_emit(tr_arch_host(), ops, nops, &fn, &err))
		rc = bad(path, 0, err.msg);
	if (!rc && fn.ret_off < 0)
		rc = bad(path, 0, "[code] has no call_target");
	if (!rc && fn.rel32_off >= 0)
		rc = bad(path, 0, "call_target rel32: caseprog places no thunk for a direct call");
	return rc;
}

/* the derived FDE program with its first def_cfa_offset operand 8 more */
static int plant(const struct tr_func *f, struct tr_unwind_opts *o)
{
	struct ju_err err;
	if (tr_cfi_derive(f, o->prog, sizeof(o->prog), &o->prog_len, &err))
		return -1;
	o->cfi = TR_CFI_BYTES;
	for (size_t i = 0; i + 1 < o->prog_len; i++) {
		uint8_t op = o->prog[i];
		if (op == 0x0e && o->prog[i + 1] < 0x78) {       /* DW_CFA_def_cfa_offset, 1-byte ULEB */
			fprintf(out, "planted %zu 0x%x 0x%x\n", i + 1, o->prog[i + 1], o->prog[i + 1] + 8);
			o->prog[i + 1] += 8;
			return 0;
		}
		/* skip operands of the ops a derived program has */
		if ((op & 0xc0) == 0x80 || op == 0x0d || op == 0x0e)   /* offset, def_cfa_register, def_cfa_offset */
			i++;
		else if (op == 0x0c)                                   /* def_cfa reg off */
			i += 2;
		else if (op == 0x02)                                   /* advance_loc1 */
			i++;
	}
	return -1;
}

static int install(int k, bool planted)
{
	struct tr_unwind_opts o = uo;
	if (planted && plant(&fn, &o)) {
		fprintf(stderr, "caseprog: no def_cfa_offset to plant a wrong byte in\n");
		return 1;
	}
	static struct tr_unwind u;
	struct ju_err err;
	char name[32];
	uint8_t *at;
	if (tr_arena_alloc(&arena, 4096, 64, &at))
		return 1;
	uint64_t addr = (uint64_t)(uintptr_t)at;
	if (tr_unwind_build(&fn, &o, addr, &u, &err)) {
		fprintf(stderr, "caseprog: %s\n", err.msg);
		return 1;
	}
	if (tr_patch(&arena, at, fn.code, fn.code_size) || tr_patch(&arena, at + u.eh_off, u.data, u.size))
		return 1;
	snprintf(name, sizeof(name), k == 1 ? "tramp" : "tramp%d", k);
	if ((u.size && jdw_unwinding_info(&w, u.data, u.size, u.hdr_size, u.mapped_size)) ||
	    jdw_code_load(&w, name, addr, fn.code, fn.code_size, NULL))
		return 1;
	tramp[k] = at;
	fprintf(out, "tramp %d %s 0x%llx %zu ret_off %lld\n", k, name, (unsigned long long)addr,
		fn.code_size, (long long)fn.ret_off);
	return 0;
}

/* the C function level k's trampoline calls: the trampoline's return
 * address where the generator's row at the call puts it, then level k+1 */
__attribute__((noinline)) static uint64_t level(uint64_t k)
{
	const struct tr_row *r = NULL;
	for (size_t i = 0; i < fn.nrows; i++)
		if (fn.rows[i].is_call)
			r = &fn.rows[i];
	uint8_t *cfa = __builtin_dwarf_cfa();         /* SP before the call: SP at the call row */
	uint64_t ra;
	memcpy(&ra, cfa + r->sp_off + r->ra_off, 8);
	fprintf(out, "level %llu ret 0x%llx tramp_ra 0x%llx\n", (unsigned long long)k,
		(unsigned long long)(uintptr_t)__builtin_return_address(0), (unsigned long long)ra);
	if ((int)k < depth)
		return ((tramp_fn)(uintptr_t)tramp[k + 1])(k + 1, 0, 0, level) + 1;
	return 1;
}

__attribute__((noinline)) static uint64_t calls(int n)
{
	fprintf(out, "calls_ret 0x%llx\n", (unsigned long long)(uintptr_t)__builtin_return_address(0));
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += ((tramp_fn)(uintptr_t)tramp[1])(1, 0, 0, level);
	return sum;
}

static void rows(void)
{
	for (size_t i = 0; i < fn.nrows; i++) {
		const struct tr_row *r = &fn.rows[i];
		fprintf(out, "row %u cfa_reg %d cfa_off %lld sp_off %lld ra %s %lld\n", r->offset, r->cfa_reg,
			(long long)r->cfa_off, (long long)r->sp_off, r->ra_where == TR_RA_AT_CFA ? "cfa" : "reg",
			(long long)(r->ra_where == TR_RA_AT_CFA ? r->ra_off : r->ra_reg));
	}
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: caseprog CASE DIR N OUT [plant|main]\n");
		return 2;
	}
	int rc = read_case(argv[1]);
	if (rc)
		return rc;
	if (!(out = fopen(argv[4], "w"))) {
		perror(argv[4]);
		return 1;
	}
	bool planted = argc > 5 && !strcmp(argv[5], "plant");
	if (tr_arena_init(&arena, 4096 * (size_t)(depth + 1)) ||
	    jdw_open(&w, argv[2], tr_arch_host()->facts->elf_mach)) {
		fprintf(stderr, "caseprog: cannot set up the arena or the jitdump in %s\n", argv[2]);
		return 1;
	}
	rows();
	for (int k = 1; k <= depth; k++)
		if (install(k, planted && k == 1)) {
			fprintf(stderr, "caseprog: cannot install level %d\n", k);
			return 1;
		}
	fprintf(out, "main_ret 0x%llx\n", (unsigned long long)(uintptr_t)__builtin_return_address(0));
	fflush(out);
	uint64_t sum = 0;
	if (argc > 5 && !strcmp(argv[5], "main"))
		for (int i = 0; i < atoi(argv[3]); i++)
			sum += ((tramp_fn)(uintptr_t)tramp[1])(1, 0, 0, level);
	else
		sum = calls(atoi(argv[3]));
	fprintf(out, "sum %llu\n", (unsigned long long)sum);
	fclose(out);
	jdw_close(&w);
	return 0;
}
