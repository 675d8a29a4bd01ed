/* unwinders/lint/lint.c and `jitunwind lint` / `jitunwind dump`: every rule fires
 * on a crafted dump that breaks it and stays quiet on the same dump fixed;
 * the harness's own dumps lint clean (the negative cases yield their rule
 * ids); dump's row tables match the oracle (ehf_row_at) and the emitter's
 * truth rows; perf's layout matches the jitted ELF perfview writes. */
#include "tests/lint.h"

static const struct rule_case {
	const char *id;
	mk_fn mk;
} rule_cases[] = {
	{ "JD001", mk_magic }, { "JD002", mk_version }, { "JD003", mk_hdrsize }, { "JD004", mk_flags },
	{ "JD005", mk_archts }, { "JD006", mk_mach }, { "JD007", mk_fname }, { "JD010", mk_truncated },
	{ "JD011", mk_recsize }, { "JD012", mk_unknown }, { "JD014", mk_afterclose }, { "JD015", mk_tsback },
	{ "JD016", mk_pid }, { "JD020", mk_name }, { "JD021", mk_codesize }, { "JD022", mk_trailing },
	{ "JD023", mk_empty }, { "JD024", mk_vma }, { "JD026", mk_dupindex },
	{ "JD027", mk_wrap }, { "JD030", mk_after }, { "JD030", mk_after2 }, { "JD031", mk_noload },
	{ "JD032", mk_overwritten }, { "JD033", mk_usize }, { "JD034", mk_hs0 }, { "JD035", mk_hdrfirst },
	{ "JD036", mk_hsbig }, { "JD037", mk_cie }, { "JD038", mk_noterm }, { "JD039", mk_term_misplaced },
	{ "JD040", mk_hdrver }, { "JD041", mk_tableenc }, { "JD042", mk_notable }, { "JD043", mk_table },
	{ "JD044", mk_ehptr }, { "JD045", mk_unaligned }, { "JD046", mk_gap }, { "JD047", mk_outside },
	{ "JD048", mk_nofde }, { "JD049", mk_ms0 }, { "JD050", mk_ms16 }, { "JD051", mk_overlap },
	{ "JD052", mk_cfa }, { "JD052", mk_cfa_a64 }, { "JD052", mk_cfa_rv }, { "JD059", mk_ra_rv }, { "JD053", mk_ra }, { "JD054", mk_absolute }, { "JD056", mk_unwempty },
	{ "JD060", mk_move_unknown }, { "JD061", mk_move_mismatch }, { "JD062", mk_reuse }, { "JD070", mk_dbg_after },
	{ "JD071", mk_dbg_noload }, { "JD072", mk_dbg_mismatch }, { "JD073", mk_dbg_entries },
	{ "JD074", mk_dbg_over }, { "JD075", mk_dbg_range }, { "JD090", mk_profile }, { "JD099", mk_limit },
	{ "JD057", mk_below_sp }, { "JD058", mk_saved_early }, { "JD059", mk_ra_code }, { "JD080", mk_deep },
	{ "JD076", mk_dbg_name }, { "JD076", mk_dbg_tail }, { "JD091", mk_dumpdir },
	{ "JD080", mk_deep_edge }, { "JD055", mk_past_libunwind }, { "JD081", mk_undecoded },
	{ "JD028", mk_nounw_some }, { "JD029", mk_nounw_all }, { "JD082", mk_unrelocated },
	{ "JD082", mk_unrelocated_a64 }, { "JD017", mk_tid }, { "JD083", mk_nofde_rv },
	{ "JD084", mk_fp_noframe }, { "JD085", mk_fp_clobbered }, { "JD086", mk_fp_window },
	{ "JD087", mk_salted },
};
#define NRULE_CASES (sizeof(rule_cases) / sizeof(rule_cases[0]))

void lt_setup(void)
{
	if (!F) {
		F = lt_emit(fp_ops, 5);
		F11 = lt_emit(nofp_ops, 4);
		FB = lt_emit(big_ops, 9);
		FA = lt_emit_for(&tr_arch_aarch64, fp_ops, 5);
	}
}

/* write the crafted dump where `make fuzz` collects its seeds */
static void seed(const struct jb *b, const char *id, bool bad)
{
	const char *dir = getenv("JU_LINT_SEEDS");
	if (!dir || b->n > (1u << 20))
		return;
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s-%s-%zu.dump", dir, id, bad ? "bad" : "good", b->n);
	FILE *f = fopen(p, "wb");
	if (f) {
		fwrite(b->p, 1, b->n, f);
		fclose(f);
	}
}

START_TEST(each_rule)
{
	const struct rule_case *rc = &rule_cases[_i];
	const struct lint_rule *r = lint_rule_find(rc->id);
	ck_assert_msg(r, "%s: no such rule", rc->id);
	char buf[16384];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		struct ctx c = { PV_CURRENT, NULL, 0 };
		rc->mk(&b, bad, &c);
		ck_assert_uint_le(c.cut, b.n);
		seed(&b, rc->id, bad);
		struct lint_summary s = lt_lint_buf(b.p, b.n - c.cut, c.prof, c.name);
		lt_show(buf, sizeof(buf));
		if (bad) {
			ck_assert_msg(lt_fired(rc->id), "%s %s: the crafted dump does not fire it; got:\n%s", rc->id, r->name, buf);
			/* the exit code follows the severity */
			int want = !strcmp(rc->id, "JD001") ? 2 : r->sev == LINT_ERROR ? 1 : -1;
			if (want >= 0)
				ck_assert_int_eq(lint_exit_code(&s), want);
		} else {
			ck_assert_msg(!lt_fired(rc->id), "%s %s: fires on the fixed dump:\n%s", rc->id, r->name, buf);
		}
		free(b.p);
	}
}
END_TEST

/* the reference dump (CPython's trampoline, eh_frame with terminator) has no
 * finding but JD084 about 'third', CPython 3.12's trampoline (no frame record) */
START_TEST(reference_is_clean)
{
	struct jb b = { 0 };
	lt_base(&b);
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_func(&b, FB, &o, "second", ADDR + 0x1000, 1);
	jb_debug(&b, ADDR + 0x2000, 2, 2, ADDR + 0x2000);
	jb_func(&b, F11, &o, "third", ADDR + 0x2000, 2);
	jb_move(&b, ADDR + 0x1000, ADDR + 0x8000, FB->code_size, 1);
	jb_close(&b);
	struct lint_summary s = lt_lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
	char buf[8192];
	lt_show(buf, sizeof(buf));
	ck_assert_msg(lt_G.n == 1 && !strcmp(lt_G.r[0]->id, "JD084") && strstr(lt_G.msg[0], "'third'"),
		      "findings on the reference dump:\n%s", buf);
	ck_assert_uint_eq(s.records, 9);
	ck_assert_uint_eq(s.loads, 3);
	ck_assert_int_eq(lint_exit_code(&s), 0);
	free(b.p);
}
END_TEST

/* Is code offset off named by an error or warning finding (its offsets, or
 * the whole load)? */
static bool named_at(uint64_t off)
{
	for (size_t i = 0; i < lt_G.n; i++) {
		const struct lint_where *w = &lt_G.where[i];
		if (lt_G.r[i]->sev == LINT_INFO || (!w->load && !w->whole))
			continue;
		if (w->whole)
			return true;
		for (unsigned k = 0; k < w->npc; k++)
			if (w->pc[k] == off)
				return true;
	}
	return false;
}

/* JD046 is about the bytes no FDE covers, not the whole load: the crafted
 * dump's load is the function and 8 int3 bytes, its FDE the function's with
 * a pc-relative pc_begin made for .eh_frame right behind the function; perf
 * puts .eh_frame behind the whole load, 8 bytes further, so the FDE covers
 * [8, 16) (`jitunwind dump` of the seed: pc [+0x8, +0x10)) and the finding
 * names [0, 8) as its one range (replay --lint pairs a lost frame with it only
 * there).  An instruction finding has no span. */
START_TEST(gap_names_its_bytes)
{
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	mk_gap(&b, true, &c);
	lt_lint_buf(b.p, b.n - c.cut, c.prof, c.name);
	int seen = 0;
	for (size_t i = 0; i < lt_G.n; i++) {
		const struct lint_where *w = &lt_G.where[i];
		if (strcmp(lt_G.r[i]->id, "JD046")) {
			for (unsigned k = 0; k < w->npc; k++)
				ck_assert_uint_eq(w->span[k], 0);
			continue;
		}
		seen++;
		ck_assert(w->load != 0 && !w->whole);
		ck_assert_uint_eq(w->npc, 1);
		ck_assert_uint_eq(w->pc[0], 0);
		ck_assert_uint_eq(w->span[0], F->code_size);
	}
	ck_assert_int_eq(seen, 1);
	free(b.p);
}
END_TEST

/* endbr64 in front of CPython's trampoline and an FDE that forgot it (its
 * rows 4 bytes early): every boundary after endbr64 is flagged, by offset;
 * the derived FDE (the negative control) has none. */
START_TEST(cet_forgot_every_boundary)
{
	static const char *const cet_ops[] = { "endbr64", "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08 };
	struct tr_func *f = lt_emit(cet_ops, 6);
	for (int bad = 1; bad >= 0; bad--) {
		struct tr_unwind_opts o;
		lt_opts_clean(&o);
		if (bad) {
			o.cfi = TR_CFI_BYTES;
			memcpy(o.prog, prog, sizeof(prog));
			o.prog_len = sizeof(prog);
		}
		struct jb b = { 0 };
		jb_std(&b);
		jb_func(&b, f, &o, "tramp", ADDR, 0);
		lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		char buf[8192];
		lt_show(buf, sizeof(buf));
		for (size_t i = 1; i < f->nrows; i++) {
			uint64_t off = f->rows[i].offset;
			if (bad)
				ck_assert_msg(named_at(off), "+0x%" PRIx64 " (%s) not named:\n%s", off, f->rows[i].insn, buf);
			else
				ck_assert_msg(!named_at(off), "+0x%" PRIx64 " named on the derived FDE:\n%s", off, buf);
		}
		ck_assert_uint_ge(f->nrows, 6);
	}
	free(f);
}
END_TEST

/* The offsets rule id names (its findings' pcs) as a list "+0x1c +0x20 ...". */
static void named_by(const char *id, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < lt_G.n; i++) {
		if (strcmp(lt_G.r[i]->id, id))
			continue;
		for (unsigned k = 0; k < lt_G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s+0x%" PRIx64, o ? " " : "", lt_G.where[i].pc[k]);
	}
}

/* node 20's optimized JS function epilogue (V8, --perf-prof-unwinding-info),
 * shortened: a8 01 (test $1,%al, its small-integer check) and an SSE load
 * before it; after `pop %rbp` the rows keep "rbp at cfa-16", 8 bytes below
 * SP, up to the end of the epilogue, and after `pop %r10` (the return
 * address) they keep CFA = rsp+8 where the code has CFA = rsp+0.  Rows of
 * the bad program (the CIE: rsp+8, rip at cfa-8):
 *   [0x1, 0x4) rsp+16 rbp@-16, [0x4, 0x1b) rbp+16, [0x1b, 0x1c) rsp+16,
 *   [0x1c, 0x2e) rsp+8 rbp@-16, [0x2e, ...) rbp+16.
 * The fixed program restores rbp's rule after the pop and says CFA = rsp+0
 * with the return address in r10 after `pop %r10` (after the lea the check
 * follows sp no more, until `push %r10` puts the return address back: its
 * slot places the CFA again, so the ret is checked too). */
void mk_v8(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t code[] = {
		0x55, 0x48, 0x89, 0xe5, 0x56, 0x57, 0x50,   /* push %rbp; mov %rsp,%rbp; push %rsi, %rdi, %rax */
		0x48, 0x8b, 0x45, 0x18,                     /* +0x7  mov 0x18(%rbp),%rax */
		0xa8, 0x01,                                 /* +0xb  test $1,%al */
		0x75, 0x1f,                                 /* +0xd  jne +0x2e */
		0xf2, 0x0f, 0x10, 0x45, 0xf0,               /* +0xf  movsd -0x10(%rbp),%xmm0 */
		0x48, 0x8b, 0x4d, 0xe8,                     /* +0x14 mov -0x18(%rbp),%rcx */
		0x48, 0x8b, 0xe5,                           /* +0x18 mov %rbp,%rsp */
		0x5d,                                       /* +0x1b pop %rbp */
		0x48, 0x83, 0xf9, 0x02,                     /* +0x1c cmp $2,%rcx */
		0x7f, 0x03,                                 /* +0x20 jg +0x25 */
		0xc2, 0x10, 0x00,                           /* +0x22 ret $0x10 */
		0x41, 0x5a,                                 /* +0x25 pop %r10 */
		0x48, 0x8d, 0x24, 0xcc,                     /* +0x27 lea (%rsp,%rcx,8),%rsp */
		0x41, 0x52,                                 /* +0x2b push %r10 */
		0xc3,                                       /* +0x2d ret */
		0x41, 0xff, 0x55, 0xc8,                     /* +0x2e call *-0x38(%r13) (deoptimize) */
	};
	static const uint8_t v8[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x57, 0x0d, 0x07, 0x41, 0x0e,
				      0x08, 0x52, 0x0c, 0x06, 0x10 };
	static const uint8_t fixed[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x57, 0x0d, 0x07, 0x41, 0x0e,
					 0x08, 0xc6, 0x4b, 0x0e, 0x00, 0x09, 0x10, 0x0a, 0x46, 0x0e, 0x08, 0x90, 0x01,
					 0x41, 0x0c, 0x06, 0x10, 0x86, 0x02 };
	jb_code_prog(b, code, sizeof(code), bad ? v8 : fixed, bad ? sizeof(v8) : sizeof(fixed));
}

START_TEST(v8_epilogue)
{
	char buf[8192], at[256];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		mk_v8(&b, bad, NULL);
		struct lint_summary s = lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		lt_show(buf, sizeof(buf));
		ck_assert_msg(!lt_fired("JD081"), "the decoder stopped:\n%s", buf);
		named_by("JD057", at, sizeof(at));
		ck_assert_msg(!strcmp(at, bad ? "+0x1c +0x20 +0x22 +0x25 +0x27 +0x2d" : ""), "JD057 at '%s':\n%s", at, buf);
		named_by("JD052", at, sizeof(at));
		ck_assert_msg(!strcmp(at, bad ? "+0x27" : ""), "JD052 at '%s':\n%s", at, buf);
		/* the return address in r10 from the pop to the push; the fixed
		 * program's DW_CFA_register rip, r10 there is no finding (JD053 once
		 * called any rule but cfa-8 wrong) */
		named_by("JD059", at, sizeof(at));
		ck_assert_msg(!strcmp(at, bad ? "+0x27 +0x2b" : ""), "JD059 at '%s':\n%s", at, buf);
		ck_assert_msg(!lt_fired("JD053"), "JD053 fired:\n%s", buf);
		if (bad) {
			ck_assert_int_eq(lint_exit_code(&s), 1);
			ck_assert_msg(strstr(buf, "at +0x1c rbp's rule says saved at cfa-16, 8 bytes below SP (CFA = sp+8)") &&
				      strstr(buf, "at +0x27 the CFI says CFA = rsp+8 but the instructions before it leave "
					     "CFA = rsp+0"), "%s", buf);
		}
	}
}
END_TEST

/* The findings of the last lint_buf but JD006, one a line: rule, offset, message. */
static void findings_but_mach(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < lt_G.n && o < cap; i++)
		if (strcmp(lt_G.r[i]->id, "JD006"))
			o += (size_t)snprintf(out + o, cap - o, "%s 0x%" PRIx64 " %s\n", lt_G.r[i]->id, lt_G.off[i], lt_G.msg[i]);
}

/* CPython 3.13.0 writes elf_mach 0; perf never reads it (genelf writes its
 * own machine): known-bad dumps of the host's arch with elf_mach zeroed get
 * the same findings and exit code as with the machine set, and one JD006
 * info saying the code was read as the host's. */
/* A machine of the arch table without lint's decoder (riscv64): JD006 says the
 * code check does not run; one with a decoder gets no JD006. */
START_TEST(elf_mach_without_decoder)
{
	static const uint32_t machs[] = { EM_RISCV, EM_AARCH64, EM_X86_64 };
	for (size_t i = 0; i < 3; i++) {
		struct jb b = { 0 };
		jb_hdr(&b, JD_MAGIC, 1, 40, machs[i], 0);
		jb_close(&b);
		lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		const struct uw_arch *a = uw_arch_by_mach((uint16_t)machs[i]);
		ck_assert_ptr_nonnull(a);
		bool want = !a->decoder;
		ck_assert_msg(lt_fired("JD006") == want, "elf_mach %u: JD006 %d", machs[i], !want);
		for (size_t k = 0; want && k < lt_G.n; k++)
			if (!strcmp(lt_G.r[k]->id, "JD006"))
				ck_assert_msg(strstr(lt_G.msg[k], "riscv64") && strstr(lt_G.msg[k], "code check") &&
					      strstr(lt_G.msg[k], "does not run"), "%s", lt_G.msg[k]);
	}
}
END_TEST

START_TEST(elf_mach_zero_is_the_host)
{
	static const mk_fn bad_dumps[] = { mk_cfa, mk_below_sp, mk_saved_early, mk_v8, mk_cfa_a64, mk_cfa_rv, mk_ra_rv,
					   mk_ra_code };
	const struct uw_arch *host = uw_arch_host();
	ck_assert_ptr_nonnull(host);
	if (!host->decoder) {
		/* every dump here is a code-check finding, which needs the arch's decoder */
		printf("elf_mach_zero_is_the_host: skipped: lint has no %s decoder (JD006), so no dump here has "
		       "findings of this arch\n", host->facts->name);
		return;
	}
	static char with[16384], zero[16384];
	unsigned compared = 0;
	for (size_t i = 0; i < sizeof(bad_dumps) / sizeof(bad_dumps[0]); i++) {
		struct jb b = { 0 };
		struct ctx c = { PV_CURRENT, NULL, 0 };
		bad_dumps[i](&b, true, &c);
		uint32_t mach;
		memcpy(&mach, b.p + 12, 4);
		if (mach != host->facts->elf_mach) {
			free(b.p);
			continue;                 /* another arch's dump: read as the host's, it is other code */
		}
		struct lint_summary s = lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		findings_but_mach(with, sizeof(with));
		ck_assert_msg(!lt_fired("JD006"), "JD006 with elf_mach %u:\n%s", mach, with);
		ck_assert_int_eq(lint_exit_code(&s), 1);
		memset(b.p + 12, 0, 4);
		struct lint_summary z = lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
		findings_but_mach(zero, sizeof(zero));
		ck_assert_msg(!strcmp(with, zero), "dump %zu: elf_mach %u gives\n%s\nelf_mach 0 gives\n%s", i, mach, with, zero);
		ck_assert_int_eq(lint_exit_code(&z), 1);
		size_t n006 = 0;
		for (size_t k = 0; k < lt_G.n; k++) {
			if (strcmp(lt_G.r[k]->id, "JD006"))
				continue;
			n006++;
			ck_assert_int_eq(lt_G.r[k]->sev, LINT_INFO);
			ck_assert_msg(strstr(lt_G.msg[k], "elf_mach 0") && strstr(lt_G.msg[k], host->facts->name), "%s", lt_G.msg[k]);
		}
		ck_assert_uint_eq(n006, 1);
		compared++;
		free(b.p);
	}
	ck_assert_uint_ge(compared, 2);
}
END_TEST

/* the jitted .so of a dump with elf_mach 0 gets the host's machine, as
 * perf's genelf writes the machine perf was built for */
START_TEST(jitted_elf_mach_zero)
{
	struct jd_load l = { .code_addr = ADDR, .vma = ADDR, .code_size = F11->code_size, .code_index = 3,
			     .name = "tramp", .code = F11->code };
	struct ju_err e2;
	char dir[] = "/tmp/julint-XXXXXX", path[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jitted-1-3.so", dir);
	const uint16_t machs[] = { 0, EM_X86_64, EM_AARCH64 };
	for (size_t i = 0; i < 3; i++) {
		ck_assert_msg(pv_write_jitted_elf(path, PV_CURRENT, &l, machs[i], &e2) == 0, "%s", e2.msg);
		elf_version(EV_CURRENT);
		int fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		Elf *e = elf_begin(fd, ELF_C_READ, NULL);
		GElf_Ehdr eh;
		ck_assert_ptr_nonnull(gelf_getehdr(e, &eh));
		ck_assert_uint_eq(eh.e_machine, machs[i] ? machs[i] : uw_arch_host()->facts->elf_mach);
		elf_end(e);
		close(fd);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

/* every table entry has a distinct id/name; ids are JDnnn; every rule is tested */
START_TEST(rule_table)
{
	for (size_t i = 0; i < LR__COUNT; i++) {
		const struct lint_rule *r = &lint_rules[i];
		ck_assert_msg(r->id && r->name && r->perf, "rule %zu incomplete", i);
		ck_assert_msg(strlen(r->id) == 5 && !strncmp(r->id, "JD", 2), "%s", r->id);
		ck_assert_msg(r->perf[strlen(r->perf) - 1] == '.', "%s: one sentence, ending in a period", r->id);
		for (size_t k = 0; k < i; k++) {
			ck_assert_str_ne(r->id, lint_rules[k].id);
			ck_assert_str_ne(r->name, lint_rules[k].name);
		}
		ck_assert_ptr_eq(lint_rule_find(r->id), r);
		ck_assert_ptr_eq(lint_rule_find(r->name), r);
		bool tested = false;
		for (size_t k = 0; k < NRULE_CASES; k++)
			tested |= !strcmp(rule_cases[k].id, r->id);
		ck_assert_msg(tested, "%s %s has no crafted dump", r->id, r->name);
	}
}
END_TEST

/* truncation at every length: never a read outside, always a clean answer */
START_TEST(every_truncation)
{
	struct jb b = { 0 };
	lt_base(&b);
	jb_debug(&b, ADDR + 0x1000, 1, 1, ADDR + 0x1000);
	struct tr_unwind_opts o;
	lt_opts_clean(&o);
	jb_func(&b, FB, &o, "second", ADDR + 0x1000, 1);
	jb_move(&b, ADDR, ADDR + 0x8000, F->code_size, 0);
	jb_close(&b);
	/* the record boundaries, where a cut leaves whole records */
	bool *edge = calloc(b.n + 1, 1);
	ck_assert_ptr_nonnull(edge);
	struct jdr_iter it;
	struct jdr_rec r;
	struct ju_err f;
	ck_assert_int_eq(jdr_init(&it, b.p, b.n, &f), 0);
	edge[it.off] = true;
	while (jdr_next(&it, &r, &f) > 0)
		edge[it.off] = true;
	ck_assert(edge[b.n]);
	for (size_t n = 0; n <= b.n; n++) {
		struct lint_summary s = lt_lint_buf(b.p, n, PV_CURRENT, NULL);
		if (n < 40) {
			ck_assert(s.unreadable);
			ck_assert_int_eq(lint_exit_code(&s), 2);
		} else {
			ck_assert_msg(lt_fired("JD010") == !edge[n], "cut at %zu", n);
		}
	}
	free(edge);
	free(b.p);
}
END_TEST

/* memory is bounded: the histories never grow past their caps */
START_TEST(bounded_history)
{
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	mk_limit(&b, true, &c);
	struct lint_summary s = lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
	ck_assert_uint_eq(s.loads, LINT_MAX_INDEX + 10);
	ck_assert(lt_fired("JD099"));
	/* the limit is no error; the one error is JD029 (the loads are bare by construction) */
	ck_assert_uint_eq(s.count[LINT_ERROR], 1);
	ck_assert_uint_eq(s.per_rule[LR_NO_UNWIND_INFO], 1);
	/* a duplicate of an index still remembered is caught after the wrap */
	jb_load(&b, "dup", ADDR + 0x100 * (LINT_MAX_INDEX + 20), (const uint8_t *)"\xc3", 1, 2 * (LINT_MAX_INDEX + 5));
	lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
	ck_assert(lt_fired("JD026"));
	free(b.p);
}
END_TEST

/* ---- perf's layout against the jitted ELF perfview writes (consistency of lint
 * and the view; layout_matches_real_perf below checks both against real perf) ---- */

START_TEST(layout_matches_perfview)
{
	enum pv_profile prof = (enum pv_profile)_i;
	struct tr_unwind_opts o;
	struct tr_unwind u;
	lt_opts_clean(&o);
	lt_unw(F11, &o, ADDR, &u);
	struct jd_load l = { .code_addr = ADDR, .vma = ADDR, .code_size = F11->code_size, .code_index = 3,
			     .name = "tramp", .code = F11->code, .has_unwind = true, .unwind = u.data,
			     .unwinding_size = u.size, .eh_frame_hdr_size = u.hdr_size, .mapped_size = u.mapped_size };
	struct jdr_unw lu = { u.size, u.hdr_size, u.mapped_size, u.data, u.size };
	struct pv_layout ly;
	lint_layout(prof, ADDR, F11->code_size, &lu, &ly);
	/* genelf's fixed facts, independent of pv_layout: .text at file offset
	 * 0x80 in every generation, .eh_frame at ALIGN_8 after it, the header on 4 */
	ck_assert_uint_eq(ly.text_off, 0x80);
	ck_assert_uint_eq(ly.eh_off, (0x80 + F11->code_size + 7) & ~7ull);
	ck_assert_uint_eq(ly.hdr_off % 4, 0);
	struct ju_err e2;
	char dir[] = "/tmp/julint-XXXXXX", path[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jitted-1-3.so", dir);
	ck_assert_msg(pv_write_jitted_elf(path, prof, &l, EM_X86_64, &e2) == 0, "%s", e2.msg);
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	size_t shstrndx;
	ck_assert_int_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	int seen = 0;
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		ck_assert_ptr_nonnull(gelf_getshdr(s, &sh));
		const char *n = elf_strptr(e, shstrndx, sh.sh_name);
		if (!strcmp(n, ".text")) {
			ck_assert_uint_eq(sh.sh_addr, ly.text_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.text_off);
			ck_assert_uint_eq(sh.sh_size, ly.text_size);
			seen |= 1;
		} else if (!strcmp(n, ".eh_frame")) {
			ck_assert_uint_eq(sh.sh_addr, ly.eh_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.eh_off);
			ck_assert_uint_eq(sh.sh_size, ly.eh_size);
			seen |= 2;
		} else if (!strcmp(n, ".eh_frame_hdr")) {
			ck_assert_uint_eq(sh.sh_addr, ly.hdr_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.hdr_off);
			ck_assert_uint_eq(sh.sh_size, ly.hdr_size);
			seen |= 4;
		}
	}
	ck_assert_int_eq(seen, 7);
	GElf_Phdr ph;
	ck_assert_ptr_nonnull(gelf_getphdr(e, 0, &ph));
	ck_assert_uint_eq(ph.p_offset, ly.load_offset);
	ck_assert_uint_eq(ph.p_vaddr, ly.load_vaddr);
	ck_assert_uint_eq(ph.p_filesz, ly.load_size);
	/* perf's read_unwind_spec_eh_frame from the file read back: (start - pgoff,
	 * or start alone in v6.1-v6.7) less the PT_LOAD's page; libdw's module
	 * start: the map start for /tmp/jitted-* (not in v6.1), else start - pgoff */
	uint64_t lu_want = (prof == PV_V61 ? ly.map_start : ly.map_start - ly.map_pgoff) - (ph.p_vaddr & ~4095ull);
	ck_assert_uint_eq(ly.lu_base, lu_want);
	ck_assert_uint_eq(ly.dw_base_tmp, prof == PV_V61 ? ADDR - pv_text_addr(prof) : ADDR);
	ck_assert_uint_eq(ly.dw_base_other, ADDR - pv_text_addr(prof));
	elf_end(e);
	close(fd);
	/* the MMAP2 perfview puts in its map tree for the same load */
	ck_assert_uint_eq(ly.map_pgoff, pv_text_addr(prof));
	ck_assert_uint_eq(ly.map_len, uw_jit_map_len(&l));
	ck_assert_uint_eq(ly.rt_eh - ly.rt_text, uw_jit_eh_off(&l));
	unlink(path);
	rmdir(dir);
}
END_TEST

/* readelf -lSW of one jitted ELF: its .text/.eh_frame/.eh_frame_hdr and its
 * one PT_LOAD, parsed from readelf's text (binutils, not libelf). */
static void readelf_layout(const char *so, struct pv_layout *got)
{
	char cmd[600], line[512];
	memset(got, 0, sizeof(*got));
	snprintf(cmd, sizeof(cmd), "readelf -lSW '%s' 2>&1", so);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	int nload = 0;
	while (fgets(line, sizeof(line), p)) {
		char name[64], type[32];
		unsigned long long a, o, n, va, pa, fs;
		const char *b = strchr(line, ']');
		if (b && sscanf(b + 1, " %63s %31s %llx %llx %llx", name, type, &a, &o, &n) == 5) {
			if (!strcmp(name, ".text"))
				got->text_addr = a, got->text_off = o, got->text_size = n;
			else if (!strcmp(name, ".eh_frame"))
				got->eh_addr = a, got->eh_off = o, got->eh_size = n, got->has_unwind = true;
			else if (!strcmp(name, ".eh_frame_hdr"))
				got->hdr_addr = a, got->hdr_off = o, got->hdr_size = n;
		} else if (sscanf(line, " LOAD %llx %llx %llx %llx", &o, &va, &pa, &fs) == 4) {
			got->load_offset = o, got->load_vaddr = va, got->load_size = fs;
			nload++;
		}
	}
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_msg(nload == 1, "%s: %d PT_LOAD headers in readelf -l, expected 1", so, nload);
}

/* pv_layout (as lint computes it) against the files real `perf inject -j`
 * wrote (tests/golden/perfview: perf 6.1.187, the current profile), read
 * by readelf: every section's address, offset and size and the PT_LOAD. */
START_TEST(layout_matches_real_perf)
{
	if (system("readelf --version >/dev/null 2>&1")) {
		printf("lint: readelf not installed, layout against real perf's files skipped\n");
		return;
	}
	const char *gold = "tests/golden/perfview/";
	int nfiles = 0;
	for (unsigned pid = 28006; pid <= 28013; pid++) {
		char path[256];
		snprintf(path, sizeof(path), "%sjit-%u.dump", gold, pid);
		struct jd_file jd;
		struct ju_err je;
		ck_assert_msg(jd_open(&jd, path, &je) == 0, "%s: %s (run the tests from the repository root)", path, je.msg);
		for (size_t i = 0; i < jd.nloads; i++) {
			const struct jd_load *l = &jd.loads[i];
			char so[256];
			snprintf(so, sizeof(so), "%sjitted-%u-%llu.so", gold, l->pid, (unsigned long long)l->code_index);
			if (access(so, R_OK))
				continue;
			struct jdr_unw lu = { l->unwinding_size, l->eh_frame_hdr_size, l->mapped_size, l->unwind,
					      l->unwinding_size };
			struct pv_layout ly, re;
			lint_layout(PV_CURRENT, l->code_addr, l->code_size, l->has_unwind ? &lu : NULL, &ly);
			readelf_layout(so, &re);
			const uint64_t want[] = { re.text_addr, re.text_off, re.text_size, re.load_offset, re.load_vaddr,
						  re.load_size, re.eh_addr, re.eh_off, re.eh_size, re.hdr_addr, re.hdr_off, re.hdr_size };
			const uint64_t have[] = { ly.text_addr, ly.text_off, ly.text_size, ly.load_offset, ly.load_vaddr,
						  ly.load_size, ly.eh_addr, ly.eh_off, ly.eh_size, ly.hdr_addr, ly.hdr_off, ly.hdr_size };
			ck_assert_int_eq(ly.has_unwind, re.has_unwind);
			for (size_t k = 0; k < (re.has_unwind ? 12u : 6u); k++)
				ck_assert_msg(have[k] == want[k], "%s: field %zu: pv_layout 0x%llx, readelf 0x%llx", so, k,
					      (unsigned long long)have[k], (unsigned long long)want[k]);
			nfiles++;
		}
		jd_close(&jd);
	}
	ck_assert_msg(nfiles >= 10, "only %d of perf's files in %s", nfiles, gold);
}
END_TEST

Suite *suite_lint(void);
Suite *suite_lint(void)
{
	Suite *s = suite_create("lint");
	TCase *tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, lt_setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, each_rule, 0, NRULE_CASES);
	tcase_add_test(tc, reference_is_clean);
	tcase_add_test(tc, rule_table);
	tcase_add_test(tc, cet_forgot_every_boundary);
	tcase_add_test(tc, gap_names_its_bytes);
	tcase_add_test(tc, v8_epilogue);
	tcase_add_test(tc, elf_mach_zero_is_the_host);
	tcase_add_test(tc, elf_mach_without_decoder);
	tcase_add_test(tc, jitted_elf_mach_zero);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, bounded_history);
	tcase_add_loop_test(tc, layout_matches_perfview, PV_CURRENT, PV_5X_0X40 + 1);
	tcase_add_test(tc, layout_matches_real_perf);
	lint_add_mk_tests(tc);
	lint_add_memo(tc);
	lint_add_fp_tests(tc);
	lint_add_salt_tests(tc);
	suite_add_tcase(s, tc);
	tc = tcase_create("cli");
	tcase_set_timeout(tc, 300);
	lint_add_cli(tc);
	suite_add_tcase(s, tc);
	return s;
}
