/* The code checks' decoders (unwinders/decode_<arch>.c) and their one effect
 * interpreter, judged by the JIT side: code the JIT's encoders emit
 * (trampolines/<arch>.c) comes with truth rows (CFA - sp, CFA - fp at every
 * instruction boundary) that the JIT side derived from its own ops.  The
 * decoders read only the bytes; the two effect vocabularies are written
 * apart on purpose (decode.h), so a decoder bug shows up here as a
 * disagreement with the truth. */
#include <capstone/capstone.h>
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "trampolines/tramp.h"
#include "unwinders/decode.h"

struct seq {
	const char *arch;
	const char *ops[12];
};

static const struct seq seqs[] = {
	{ "x86_64", { "push_fp", "set_fp", "alloc 32", "save_reg %rbx", "call_target", "restore_reg %rbx",
		      "free 32", "pop_fp", "ret" } },
	{ "x86_64", { "endbr64", "push_fp", "set_fp", "alloc 0x1000", "nop", "call_target", "leave", "ret" } },
	{ "x86_64", { "save_reg %rbx", "save_reg %r12", "alloc 8", "call_target", "free 8", "restore_reg %r12",
		      "restore_reg %rbx", "ret" } },
	/* the return address popped into r10 and pushed back (V8's argument-dropping return) */
	{ "x86_64", { "push_fp", "set_fp", "save_reg %rbx", "call_target", "restore_reg %rbx", "pop_fp",
		      "raw 41 5a ; restore_reg r10", "raw 41 52 ; save_reg r10", "ret" } },
	{ "aarch64", { "push_fp", "set_fp", "alloc 0x1000", "call_target", "free 0x1000", "pop_fp", "ret" } },
	{ "aarch64", { "paciasp", "push_fp", "set_fp", "save_reg x19", "call_target", "restore_reg x19",
		       "pop_fp", "autiasp", "ret" } },
	{ "aarch64", { "bti", "save_reg x30", "alloc 32", "call_target", "free 32", "restore_reg x30", "ret" } },
	{ "riscv64", { "push_fp", "set_fp", "alloc 0x1000", "call_target", "free 0x1000", "pop_fp", "ret" } },
	{ "riscv64", { "save_reg ra", "alloc 32", "save_reg s1", "call_target", "restore_reg s1", "free 32",
		       "restore_reg ra", "ret" } },
};

static struct tr_func fn;

static void emit(const struct seq *s)
{
	const struct tr_arch *a = !strcmp(s->arch, "x86_64") ? &tr_arch_x86_64 :
				  !strcmp(s->arch, "aarch64") ? &tr_arch_aarch64 : &tr_arch_riscv64;
	struct tr_op ops[12];
	struct ju_err err;
	size_t n = 0;
	for (; n < 12 && s->ops[n]; n++) {
		memset(&ops[n], 0, sizeof(ops[n]));
		ck_assert_msg(tr_op_parse(s->ops[n], &ops[n], &err) == 0, "%s: %s", s->ops[n], err.msg);
	}
	ck_assert_msg(tr_emit(a, ops, n, &fn, &err) == 0, "%s", err.msg);
}

/* Walk fn's code from entry with the decoder; count boundaries where the
 * interpreted state disagrees with rows (or the decoder does not know an
 * instruction, or loses sp). */
static unsigned disagreements(const struct uw_decoder *dc, const struct tr_row *rows, size_t nrows,
			      char *why, size_t whylen)
{
	struct uw_cfa_state st;
	uw_cfa_entry(&st, dc);
	unsigned bad = 0;
	for (size_t i = 0; i < nrows; i++) {
		const struct tr_row *r = &rows[i];
		if (!st.sp_known || st.sp_d != r->sp_off || (r->fp_set && st.fp_known && st.fp_d != r->fp_off)) {
			if (!bad++)
				snprintf(why, whylen, "+0x%x %s: decoded CFA-sp %lld (%s), CFA-fp %lld (%s); truth CFA-sp %lld "
					 "CFA-fp %lld", r->offset, r->insn, (long long)st.sp_d, st.sp_known ? "known" : "lost",
					 (long long)st.fp_d, st.fp_known ? "known" : "lost",
					 (long long)r->sp_off, r->fp_set ? (long long)r->fp_off : -1LL);
			continue;
		}
		/* every register the truth says is saved was stored by the code, at that slot
		 * (the interpreter may know more: a restored register's slot stays) */
		for (unsigned reg = 0; reg < UW_NREGS; reg++) {
			if (!(r->saved_mask >> reg & 1) || reg == dc->ra)
				continue;
			if (!(st.stored >> reg & 1) || st.slot[reg] != r->saved_off[reg]) {
				if (!bad++)
					snprintf(why, whylen, "+0x%x %s: r%u saved at cfa%+d in the truth, decoded %s at cfa%+lld",
						 r->offset, r->insn, reg, r->saved_off[reg],
						 st.stored >> reg & 1 ? "stored" : "not stored", (long long)st.slot[reg]);
			}
		}
		/* the return address: on the stack where the truth has it, else in its register */
		if (!dc->ra_at_cfa && r->ra_where == TR_RA_AT_CFA &&
		    (!(st.stored >> dc->ra & 1) || st.slot[dc->ra] != r->ra_off) && !bad++)
			snprintf(why, whylen, "+0x%x %s: the return address at cfa%+lld in the truth, decoded %s",
				 r->offset, r->insn, (long long)r->ra_off, st.stored >> dc->ra & 1 ? "elsewhere" : "not stored");
		/* x86_64: the slot at the CFA, or the register the code moved it into */
		bool ra_ok = r->ra_where == TR_RA_AT_CFA ? st.ra_at == UW_RA_SLOT && st.ra_slot == r->ra_off
							 : st.ra_at == UW_RA_REG && st.ra_reg == (unsigned)r->ra_reg;
		if (dc->ra_at_cfa && !ra_ok && !bad++)
			snprintf(why, whylen, "+0x%x %s: the return address %s r%d in the truth, decoded %s (r%u, cfa%+lld)",
				 r->offset, r->insn, r->ra_where == TR_RA_AT_CFA ? "at the CFA slot, not" : "in",
				 r->ra_reg, st.ra_at == UW_RA_SLOT ? "at a slot" : st.ra_at == UW_RA_REG ? "in a register" : "unknown",
				 st.ra_reg, (long long)st.ra_slot);
		struct uw_insn x;
		size_t len = dc->decode(fn.code + r->offset, fn.code_size - r->offset, &x);
		if (len != r->len) {
			if (!bad++)
				snprintf(why, whylen, "+0x%x %s: decoded length %zu, encoded %u", r->offset, r->insn, len, r->len);
			break;
		}
		uw_eff_apply(&st, &x);
		if (x.end)
			break;
	}
	return bad;
}

START_TEST(decoder_matches_truth)
{
	const struct seq *s = &seqs[_i];
	emit(s);
	const struct uw_decoder *dc = uw_decoder_for(fn.arch->facts->elf_mach);
	ck_assert_ptr_nonnull(dc);
	char why[256] = "";
	ck_assert_msg(disagreements(dc, fn.rows, fn.nrows, why, sizeof(why)) == 0, "%s %s: %s", s->arch, s->ops[0], why);
}
END_TEST

/* Negative control: the comparison catches a wrong stack height. */
START_TEST(decoder_wrong_truth_caught)
{
	const struct seq *s = &seqs[_i];
	emit(s);
	const struct uw_decoder *dc = uw_decoder_for(fn.arch->facts->elf_mach);
	static struct tr_row rows[TR_MAX_INSNS];
	memcpy(rows, fn.rows, fn.nrows * sizeof(rows[0]));
	rows[fn.nrows > 2 ? 2 : fn.nrows - 1].sp_off += 8;
	char why[256];
	ck_assert_uint_gt(disagreements(dc, rows, fn.nrows, why, sizeof(why)), 0);
	/* and a save the code did not make where the truth says it did */
	memcpy(rows, fn.rows, fn.nrows * sizeof(rows[0]));
	size_t k = 0;
	while (k < fn.nrows && !rows[k].saved_mask)
		k++;
	ck_assert_msg(k < fn.nrows, "%s %s: no saved register in the truth", s->arch, s->ops[0]);
	for (unsigned reg = 0; reg < 64; reg++)
		if (rows[k].saved_mask >> reg & 1)
			rows[k].saved_off[reg] -= 8;
	rows[k].ra_off -= 8;              /* the return address, where it is a saved register (arm64) */
	ck_assert_uint_gt(disagreements(dc, rows, fn.nrows, why, sizeof(why)), 0);
	/* and, where the truth has the return address in a register, the truth moved
	 * back onto the stack there (the decoder must have followed the pop) */
	memcpy(rows, fn.rows, fn.nrows * sizeof(rows[0]));
	for (k = 0; k < fn.nrows && rows[k].ra_where != TR_RA_IN_REG; k++)
		;
	if (k < fn.nrows && fn.arch->facts->ra_at_cfa) {
		rows[k].ra_where = TR_RA_AT_CFA;
		ck_assert_uint_gt(disagreements(dc, rows, fn.nrows, why, sizeof(why)), 0);
	}
}
END_TEST

START_TEST(decoder_table)
{
	ck_assert_ptr_eq(uw_decoder_for(EM_X86_64), &uw_decoder_x86_64);
	ck_assert_ptr_eq(uw_decoder_for(EM_AARCH64), &uw_decoder_aarch64);
	ck_assert_ptr_eq(uw_decoder_for(EM_RISCV), &uw_decoder_riscv64);
	/* an invalid instruction stops the check: 06 (push %es, not in 64-bit mode), an arm64 word of zeros */
	struct uw_insn x;
	static const uint8_t junk[] = { 0x06, 0xff, 0xff, 0xff };
	ck_assert_uint_eq(uw_decoder_x86_64.decode(junk, sizeof(junk), &x), 0);
	static const uint8_t zero[4] = { 0 };
	ck_assert_uint_eq(uw_decoder_aarch64.decode(zero, sizeof(zero), &x), 0);
}
END_TEST

/* Does the decoder say sp (fp) changes?  Effects on the stack registers. */
static void x86_sp_fp(const struct uw_insn *x, bool *sp, bool *fp)
{
	*sp = *fp = false;
	for (unsigned k = 0; k < x->neff; k++) {
		enum uw_eff_kind e = x->eff[k].kind;
		*sp |= e == UW_EFF_SP_ADD || e == UW_EFF_SP_FROM_FP || e == UW_EFF_SP_UNKNOWN;
		*fp |= e == UW_EFF_FP_ADD || e == UW_EFF_FP_FROM_SP || e == UW_EFF_FP_UNKNOWN || e == UW_EFF_FP_RESTORE ||
		       ((e == UW_EFF_RESTORE || e == UW_EFF_LOAD) && x->eff[k].reg == 6);
	}
}

/* V8's argument-dropping return, `pop %r10; lea (%rsp,%rcx,8),%rsp; push %r10;
 * ret`, from the function's entry: the return address followed into r10 and
 * back; sp lost at the lea (a run-time count) and known again at the push,
 * whose word is the return address's slot.  Negative control: pushing another
 * register there leaves sp lost and the return address in r10. */
START_TEST(decoder_ra_through_register)
{
	static const uint8_t v8[] = { 0x41, 0x5a, 0x48, 0x8d, 0x24, 0xcc, 0x41, 0x52, 0xc3 };
	static const uint8_t other[] = { 0x41, 0x5a, 0x48, 0x8d, 0x24, 0xcc, 0x53, 0xc3 };
	const struct uw_decoder *dc = &uw_decoder_x86_64;
	for (int k = 0; k < 2; k++) {
		const uint8_t *code = k ? other : v8;
		size_t n = k ? sizeof(other) : sizeof(v8), pc = 0;
		struct uw_cfa_state st;
		uw_cfa_entry(&st, dc);
		ck_assert(st.ra_at == UW_RA_SLOT && st.ra_slot == -8 && st.sp_d == 8);
		struct uw_insn x;
		for (int i = 0; i < 3; i++) {
			size_t len = dc->decode(code + pc, n - pc, &x);
			ck_assert_uint_gt(len, 0);
			uw_eff_apply(&st, &x);
			pc += len;
			if (i == 0)   /* pop %r10 */
				ck_assert_msg(st.ra_at == UW_RA_REG && st.ra_reg == 10 && st.sp_known && st.sp_d == 0,
					      "after pop: ra_at %d r%u sp %d%+lld", st.ra_at, st.ra_reg, st.sp_known,
					      (long long)st.sp_d);
			if (i == 1)   /* the lea */
				ck_assert(!st.sp_known && st.ra_at == UW_RA_REG);
		}
		if (!k)
			ck_assert_msg(st.ra_at == UW_RA_SLOT && st.sp_known && st.sp_d == 8, "after push %%r10: ra_at %d sp %d%+lld",
				      st.ra_at, st.sp_known, (long long)st.sp_d);
		else
			ck_assert_msg(st.ra_at == UW_RA_REG && !st.sp_known, "after push %%rbx: ra_at %d sp %d", st.ra_at,
				      st.sp_known);
	}
}
END_TEST

/* capstone's: the registers it says the instruction writes, explicitly or not */
static void cs_sp_fp(csh h, const cs_insn *in, bool *sp, bool *fp)
{
	cs_regs rr, ww;
	uint8_t nr, nw;
	*sp = *fp = false;
	ck_assert_int_eq(cs_regs_access(h, in, rr, &nr, ww, &nw), CS_ERR_OK);
	for (unsigned k = 0; k < nw; k++) {
		*sp |= ww[k] == X86_REG_RSP || ww[k] == X86_REG_ESP || ww[k] == X86_REG_SP || ww[k] == X86_REG_SPL;
		*fp |= ww[k] == X86_REG_RBP || ww[k] == X86_REG_EBP || ww[k] == X86_REG_BP || ww[k] == X86_REG_BPL;
	}
}

/* The x86_64 decoder against capstone on instructions real JIT code holds
 * (tests/golden/decode/v8-node20-x86_64.txt: node 20's V8): the same length,
 * and sp and fp written exactly where capstone says the instruction writes
 * them (a call and a return move rsp and put it back, or end the path: the
 * decoder gives them no stack effect). */
START_TEST(decoder_matches_capstone)
{
	FILE *f = fopen("tests/golden/decode/v8-node20-x86_64.txt", "r");
	ck_assert_ptr_nonnull(f);
	csh h;
	ck_assert_int_eq(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *in = cs_malloc(h);
	char line[512];
	unsigned n = 0, bad = 0, stack = 0;
	char first[600] = "";
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		uint8_t b[16];
		size_t len = 0;
		for (const char *p = line; len < sizeof(b) && p[0] != ' ' && sscanf(p, "%2hhx", &b[len]) == 1; p += 2)
			len++;
		const uint8_t *p = b;
		size_t left = len;
		uint64_t a = 0x1000;
		ck_assert_msg(cs_disasm_iter(h, &p, &left, &a, in) && in->size == len, "capstone: %s", line);
		struct uw_insn x;
		size_t ours = uw_decoder_x86_64.decode(b, len, &x);
		bool sp, fp, csp, cfp;
		x86_sp_fp(&x, &sp, &fp);
		cs_sp_fp(h, in, &csp, &cfp);
		if (cs_insn_group(h, in, CS_GRP_CALL) || cs_insn_group(h, in, CS_GRP_RET))
			csp = sp;
		n++;
		stack += csp || cfp;
		if (ours != len || sp != csp || fp != cfp) {
			if (!bad++)
				snprintf(first, sizeof(first), "%.200s: decoded length %zu, sp %d fp %d; capstone %u, sp %d fp %d",
					 line, ours, sp, fp, in->size, csp, cfp);
		}
	}
	fclose(f);
	cs_free(in, 1);
	cs_close(&h);
	ck_assert_uint_ge(n, 1000);
	ck_assert_uint_ge(stack, 100);
	ck_assert_msg(bad == 0, "%u of %u instructions differ, the first %s", bad, n, first);
}
END_TEST

Suite *suite_decode(void);
Suite *suite_decode(void)
{
	Suite *s = suite_create("decode");
	TCase *t = tcase_create("decode");
	int n = (int)(sizeof(seqs) / sizeof(seqs[0]));
	tcase_add_loop_test(t, decoder_matches_truth, 0, n);
	tcase_add_loop_test(t, decoder_wrong_truth_caught, 0, n);
	tcase_add_test(t, decoder_table);
	tcase_add_test(t, decoder_ra_through_register);
	tcase_add_test(t, decoder_matches_capstone);
	suite_add_tcase(s, t);
	return s;
}
