/* jitdump linter, the rules found on real producers (tests/corpus,
 * docs/found-in-real-jits.md): loads perf gets no unwinding information
 * for (JD028 some of them, JD029 all of them), and a header whose flags are
 * not flags at all but uninitialized bytes (LLVM 19's JITLoaderPerf). */
#include "unwinders/lint/lint_int.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Does the code hold `movabs $0x0,%r` (REX.W B8+r, eight zero bytes)
 * anywhere?  The cheap filter before capstone reads the load. */
static bool has_movabs_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 10 <= n; i++)
		if ((p[i] == 0x48 || p[i] == 0x49) && p[i + 1] >= 0xb8 && p[i + 1] <= 0xbf && !memcmp(p + i + 2, "\0\0\0\0\0\0\0\0", 8))
			return true;
	return false;
}

/* x86_64: the calls and jumps through a register that last got the absolute
 * address 0 from a `movabs $0x0` (capstone, with the registers each
 * instruction writes; a call clobbers the caller-saved ones); their offsets
 * into w, the first one's text into first. */
static size_t x86_calls_zero(const uint8_t *code, size_t n, uint64_t addr, struct lint_where *w, char *first,
			     size_t flen)
{
	csh h;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return 0;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *in = cs_malloc(h);
	static const x86_reg caller_saved[] = { X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RSI, X86_REG_RDI,
						X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11 };
	uint64_t zero_at[X86_REG_ENDING] = { 0 };   /* 1 + the movabs's offset, 0: not zero */
	const uint8_t *p = code;
	size_t left = n, hits = 0;
	uint64_t pc = addr;
	while (in && left && cs_disasm_iter(h, &p, &left, &pc, in)) {   /* each step consumes bytes: bounded by n */
		const cs_x86 *x = &in->detail->x86;
		uint64_t off = in->address - addr;
		bool br = in->id == X86_INS_CALL || in->id == X86_INS_JMP;
		if (br && x->op_count == 1 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg < X86_REG_ENDING && zero_at[x->operands[0].reg]) {
			if (!hits++)
				snprintf(first, flen, "movabs $0x0,%%%s at +0x%" PRIx64 "; %s *%%%s",
					 cs_reg_name(h, x->operands[0].reg), zero_at[x->operands[0].reg] - 1,
					 in->id == X86_INS_CALL ? "call" : "jmp", cs_reg_name(h, x->operands[0].reg));
			if (w->npc < LINT_MAX_PCS)
				w->pc[w->npc++] = off;
		}
		cs_regs rr, ww;
		uint8_t nr = 0, nw = 0;
		if (cs_regs_access(h, in, rr, &nr, ww, &nw) == CS_ERR_OK)
			for (unsigned k = 0; k < nw; k++)
				if (ww[k] < X86_REG_ENDING)
					zero_at[ww[k]] = 0;
		if (in->id == X86_INS_CALL)
			for (size_t k = 0; k < sizeof(caller_saved) / sizeof(caller_saved[0]); k++)
				zero_at[caller_saved[k]] = 0;
		if (in->id == X86_INS_MOVABS && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[1].type == X86_OP_IMM && x->operands[1].imm == 0 && x->operands[0].reg < X86_REG_ENDING)
			zero_at[x->operands[0].reg] = off + 1;
	}
	cs_free(in, 1);
	cs_close(&h);
	return hits;
}

/* arm64: `bl .` (94000000: imm26 0, a branch-and-link to itself, the
 * R_AARCH64_CALL26 relocation not applied) at each 4-byte boundary. */
static size_t a64_bl_self(const uint8_t *code, size_t n, struct lint_where *w, char *first, size_t flen)
{
	size_t hits = 0;
	for (size_t i = 0; i + 4 <= n; i += 4)
		if (!code[i] && !code[i + 1] && !code[i + 2] && code[i + 3] == 0x94) {
			if (!hits++)
				snprintf(first, flen, "bl . (94000000)");
			if (w->npc < LINT_MAX_PCS)
				w->pc[w->npc++] = i;
		}
	return hits;
}

/* The code of a load calls address 0 (JD082): LLVM's MCJIT writes its dump
 * before it relocates the code.  One finding per load naming every place. */
static void unrelocated(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	if (!l->code || !l->code_size)
		return;
	struct lint_where w = { .load = r->off };
	char first[128] = "";
	size_t hits = c->mach == EM_X86_64 && has_movabs_zero(l->code, l->code_size)
			      ? x86_calls_zero(l->code, l->code_size, l->code_addr, &w, first, sizeof(first))
		      : c->mach == EM_AARCH64 ? a64_bl_self(l->code, l->code_size, &w, first, sizeof(first)) : 0;
	if (hits)
		lint_report_at(c, LR_CODE_UNRELOCATED, r->off, &w, "the CODE_LOAD at 0x%" PRIx64 " calls address 0 at +0x%"
			       PRIx64 " (%s), %zu call%s so: its code was dumped before the JIT relocated it, so perf's "
			       "jitted .so shows a call to 0 where the running code calls its target", r->off, w.pc[0],
			       first, hits, hits == 1 ? "" : "s");
}

/* one CODE_LOAD walked: did perf hand it an UNWINDING_INFO?  and is its
 * code the code that ran? */
void lint_prod_on_load(struct lint_ctx *c, const struct jdr_rec *r, bool has_unwind)
{
	struct lint_prod *p = &c->prod;
	unrelocated(c, r);
	if (has_unwind) {
		p->loads_unw++;
		return;
	}
	if (!p->loads_bare++) {
		p->first_bare_off = r->off;
		const char *n = r->u.load.name ? r->u.load.name : "";
		snprintf(p->first_bare_name, sizeof(p->first_bare_name), "%s", n);
	}
}

void lint_prod_finish(struct lint_ctx *c)
{
	const struct lint_prod *p = &c->prod;
	static const struct lint_where every = { .whole = true };
	/* unwinding info perf hands to no load or the wrong one is JD030/JD031's: they name the cause */
	if (!p->loads_bare || c->sum->per_rule[LR_UNWIND_AFTER_LOAD] || c->sum->per_rule[LR_UNWIND_NO_LOAD])
		return;
	if (!p->loads_unw) {
		lint_report_at(c, LR_NO_UNWIND_INFO, 0, &every, "none of the %" PRIu64 " CODE_LOADs has "
			       "UNWINDING_INFO: perf's jitted .so files have no .eh_frame, so perf --call-graph dwarf "
			       "ends every chain at its first JIT frame", p->loads_bare);
		return;
	}
	struct lint_where w = { .load = p->first_bare_off, .whole = true };
	lint_report_at(c, LR_LOAD_NO_UNWIND, p->first_bare_off, &w, "%" PRIu64 " of the %" PRIu64
		       " CODE_LOADs have no UNWINDING_INFO while the other %" PRIu64 " have, the first '%.90s' "
		       "at 0x%" PRIx64 ": their jitted .so files have no .eh_frame, so perf --call-graph dwarf "
		       "ends a chain at their frames", p->loads_bare,
		       p->loads_bare + p->loads_unw, p->loads_unw, p->first_bare_name, p->first_bare_off);
}

/* Header flags that are not flags: more than the one defined bit set and
 * every byte printable (a path, as LLVM 19's JITLoaderPerf leaves them: its
 * header is not zeroed).  Writes a note for JD004 into buf. */
void lint_prod_flags_note(uint64_t flags, char *buf, size_t len)
{
	buf[0] = 0;
	unsigned printable = 0;
	char text[9] = "";
	for (int i = 0; i < 8; i++) {
		unsigned char b = (unsigned char)(flags >> (8 * i));
		printable += b >= 0x20 && b < 0x7f;
		text[i] = b >= 0x20 && b < 0x7f ? (char)b : '.';
	}
	if (printable >= 6)
		snprintf(buf, len, " (the bytes read \"%s\": text, not flags; the header was not "
			 "initialized, as LLVM 19's JITLoaderPerf leaves it)", text);
}
