/* The code checks' decoders (unwinders/decode_<arch>.c) and their one effect
 * interpreter, judged by the JIT side: code the JIT's encoders emit
 * (trampolines/<arch>.c) comes with truth rows (CFA - sp, CFA - fp at every
 * instruction boundary) that the JIT side derived from its own ops.  The
 * decoders read only the bytes; the two effect vocabularies are written
 * apart on purpose (decode.h), so a decoder bug shows up here as a
 * disagreement with the truth. */
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
	{ "aarch64", { "push_fp", "set_fp", "alloc 0x1000", "call_target", "free 0x1000", "pop_fp", "ret" } },
	{ "aarch64", { "paciasp", "push_fp", "set_fp", "save_reg x19", "call_target", "restore_reg x19",
		       "pop_fp", "autiasp", "ret" } },
	{ "aarch64", { "bti", "save_reg x30", "alloc 32", "call_target", "free 32", "restore_reg x30", "ret" } },
};

static struct tr_func fn;

static void emit(const struct seq *s)
{
	const struct tr_arch *a = !strcmp(s->arch, "x86_64") ? &tr_arch_x86_64 : &tr_arch_aarch64;
	struct tr_op ops[12];
	char err[256];
	size_t n = 0;
	for (; n < 12 && s->ops[n]; n++) {
		memset(&ops[n], 0, sizeof(ops[n]));
		ck_assert_msg(tr_op_parse(s->ops[n], &ops[n], err, sizeof(err)) == 0, "%s: %s", s->ops[n], err);
	}
	ck_assert_msg(tr_emit(a, ops, n, &fn, err, sizeof(err)) == 0, "%s", err);
}

/* Walk fn's code from entry with the decoder; count boundaries where the
 * interpreted state disagrees with rows (or the decoder does not know an
 * instruction, or loses sp). */
static unsigned disagreements(const struct uw_decoder *dc, const struct tr_row *rows, size_t nrows,
			      char *why, size_t whylen)
{
	struct uw_cfa_state st;
	uw_cfa_entry(&st, dc->entry_cfa);
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
}
END_TEST

START_TEST(decoder_table)
{
	ck_assert_ptr_eq(uw_decoder_for(EM_X86_64), &uw_decoder_x86_64);
	ck_assert_ptr_eq(uw_decoder_for(EM_AARCH64), &uw_decoder_aarch64);
	ck_assert_ptr_null(uw_decoder_for(EM_RISCV));
	/* an unknown instruction stops the check: ud0-like junk, an arm64 word of zeros */
	struct uw_insn x;
	static const uint8_t junk[] = { 0x0f, 0xff, 0xff, 0xff };
	ck_assert_uint_eq(uw_decoder_x86_64.decode(junk, sizeof(junk), &x), 0);
	static const uint8_t zero[4] = { 0 };
	ck_assert_uint_eq(uw_decoder_aarch64.decode(zero, sizeof(zero), &x), 0);
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
	suite_add_tcase(s, t);
	return s;
}
