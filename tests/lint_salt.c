/* Code bytes that are not the code (JD087, unwinders/lint/lint_salt.c): a
 * dump made as CPython 3.15.2's -X perf_jit makes it (Debian sid; issue 36,
 * facts section 12): the trampoline `endbr64; push %rbp; mov %rsp,%rbp;
 * call *%rcx; pop %rbp; ret` with CPython 3.14's FDE (no rule puts rbp back
 * after the pop: at the ret, +0xb, rbp's rule is cfa-16 with CFA = rsp+8),
 * each load's last 8 code bytes XORed, as one little-endian word, with a salt
 * that goes up by one per load.  The model: the salt's base is not known
 * here, any value whose bytes are not zero will do; 0x5a17c0de9e3779b9. */
#include "tests/lint.h"

static const char *const cpython315_ops[] = { "endbr64", "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
/* advance 4, advance 1, def_cfa_offset 16, offset rbp cfa-16, advance 3, def_cfa_register rbp,
 * advance 3, def_cfa rsp+8: CPython 3.14's and 3.15's program, byte for byte */
static const uint8_t cpython314_fde[] = { 0x44, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08 };

static uint64_t first_load;          /* mk_cpython315's first CODE_LOAD */

/* nloads trampolines, salted (salt != 0) or as they are in memory */
static void mk_cpython315(struct jb *b, unsigned nloads, uint64_t salt)
{
	static struct tr_func *f;
	if (!f)
		f = lt_emit_for(&tr_arch_x86_64, cpython315_ops, 6);
	ck_assert_uint_eq(f->code_size, 12);
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, cpython314_fde, sizeof(cpython314_fde));
	o.prog_len = sizeof(cpython314_fde);
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, 0);
	for (unsigned i = 0; i < nloads; i++) {
		uint64_t addr = ADDR + 0x100 * i, w;
		uint8_t code[12];
		memcpy(code, f->code, 12);
		memcpy(&w, code + 4, 8);
		w ^= salt ? salt + i : 0;
		memcpy(code + 4, &w, 8);
		struct tr_unwind u;
		lt_unw(f, &o, addr, &u);
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
		char name[32];
		snprintf(name, sizeof(name), "py::f%u:<x.py>", i);
		uint64_t at = jb_load(b, name, addr, code, 12, i);
		if (!i)
			first_load = at;
	}
}

static size_t count(const char *id)
{
	size_t n = 0;
	for (size_t i = 0; i < lt_G.n; i++)
		n += !strcmp(lt_G.r[i]->id, id);
	return n;
}

/* salted: JD087 once, about the first load; every load's JD057 at +0xb from
 * the CFI alone; nothing from the salted bytes (which decode to other
 * instructions, across the rows at +0x5 and +0x8).  As in memory: no JD087,
 * JD057 at +0xb from the code check, the same verdict. */
START_TEST(salted_cpython315)
{
	char buf[16384];
	for (int salted = 1; salted >= 0; salted--) {
		struct jb b = { 0 };
		mk_cpython315(&b, 4, salted ? 0x5a17c0de9e3779b9ull : 0);
		lt_lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
		free(b.p);
		lt_show(buf, sizeof(buf));
		ck_assert_msg(count("JD087") == (salted ? 1u : 0u), "%s", buf);
		ck_assert_msg(count("JD057") == 4, "%s", buf);
		for (size_t i = 0; i < lt_G.n; i++) {
			const char *id = lt_G.r[i]->id;
			if (!strcmp(id, "JD057"))
				ck_assert_msg(lt_G.where[i].npc == 1 && lt_G.where[i].pc[0] == 0xb, "%s", buf);
			else if (!strcmp(id, "JD087"))
				ck_assert_msg(lt_G.where[i].whole && lt_G.where[i].load == first_load &&
					      strstr(lt_G.msg[i], "4 CODE_LOADs") && strstr(lt_G.msg[i], "'py::f0:<x.py>'"),
					      "%s", buf);
			else
				ck_assert_msg(!strcmp(id, "JD038"), "%s from the %s bytes:\n%s", id, salted ? "salted" : "", buf);
		}
	}
}
END_TEST

/* the same bytes but for the last 8 in loads whose rows start on the
 * instructions they decode to (an absolute jump stub's 8-byte target, a
 * salt that happens to decode well) are code: the pair alone is no finding */
START_TEST(salt_needs_rows_across_insns)
{
	struct jb b = { 0 };
	char buf[16384];
	/* salt 0x01 changes the push (55) to push %rsp (54): one byte, the rows stay on instructions */
	mk_cpython315(&b, 3, 0x01);
	lt_lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
	free(b.p);
	lt_show(buf, sizeof(buf));
	ck_assert_msg(count("JD087") == 0, "%s", buf);
}
END_TEST

void lint_add_salt_tests(TCase *rules)
{
	tcase_add_test(rules, salted_cpython315);
	tcase_add_test(rules, salt_needs_rows_across_insns);
}

void mk_salted(struct jb *b, bool bad, struct ctx *c)
{
	mk_cpython315(b, 3, bad ? 0x5a17c0de9e3779b9ull : 0);
}
