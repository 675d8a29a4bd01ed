/* Suite lint: the CLI and the harness's own dumps, dump's rows against the
 * oracle and the truth, and the row cache and code memo keeping findings
 * (tests/lint.h). */
#include "tests/lint.h"
#include "tests/hostarch.h"

/* ---- the CLI, and the harness's own dumps ---- */

static char bin[1024];
static char tmp[256];

static void cli_setup(void)
{
	lt_setup();
	const char *b = getenv("JU_BIN");
	char cwd[512];
	/* absolute: some commands run from the temp dir.  JU_BIN may carry a
	 * runner ("qemu-aarch64 /abs/jitunwind"): taken as it is */
	if (b && (b[0] == '/' || strchr(b, ' ')))
		snprintf(bin, sizeof(bin), "%s", b);
	else
		snprintf(bin, sizeof(bin), "%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", b ? b : "jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/julint-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void cli_teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static char *out;
#define OUTCAP (4u << 20)

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	if (!out)
		out = malloc(OUTCAP);
	ck_assert_ptr_nonnull(out);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, OUTCAP - 1, p);
	out[n] = 0;
	char drain[4096];
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_buf(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* dump decodes a dump with elf_mach 0 as the host's arch: the same lines as
 * with the host's machine in the header, and one line saying so (lint: the
 * same findings and exit 1, JD006 aside) */
START_TEST(cli_elf_mach_zero)
{
	const struct uw_arch *host = uw_arch_host();
	ck_assert_ptr_nonnull(host);
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	if (!host->decoder) {
		printf("cli_elf_mach_zero: skipped: lint has no %s decoder (JD006), so there is no code to decode "
		       "and no code finding to compare\n", host->facts->name);
		return;
	}
	if (host->facts->elf_mach == EM_X86_64)
		mk_v8(&b, true, &c);
	else if (host->facts->elf_mach == EM_RISCV)
		mk_cfa_rv(&b, true, &c);
	else
		mk_cfa_a64(&b, true, &c);
	char set[600], zero[600];
	snprintf(set, sizeof(set), "%s/set.dump", tmp);
	snprintf(zero, sizeof(zero), "%s/zero.dump", tmp);
	write_buf(set, b.p, b.n);
	memset(b.p + 12, 0, 4);
	write_buf(zero, b.p, b.n);
	free(b.p);
	ck_assert_int_eq(sh("%s dump %s", bin, zero), 0);
	ck_assert_msg(strstr(out, "elf_mach 0: read as ") && strstr(out, host->facts->name), "%s", out);
	ck_assert_int_eq(sh("cd %s && %s dump set.dump | grep -v '^set.dump:\\|header:' > a && "
			    "%s dump zero.dump | grep -v '^zero.dump:\\|header:\\|elf_mach 0:' > b && diff a b && "
			    "grep -c '^ *0x[0-9a-f]* +0x[0-9a-f]* ' a", tmp, bin, bin), 0);
	ck_assert_msg(atoi(out) >= 3, "too few instructions decoded: %s", out);
	ck_assert_int_eq(sh("cd %s && %s lint set.dump | grep ': error: \\|: warning: ' | sed 's/^set/X/' > a; "
			    "%s lint zero.dump | grep ': error: \\|: warning: ' | sed 's/^zero/X/' > b; diff a b && grep -c . a",
			    tmp, bin, bin), 0);
	ck_assert_msg(atoi(out) >= 1, "no error: %s", out);
	ck_assert_int_eq(sh("%s lint %s", bin, zero), 1);
}
END_TEST

START_TEST(cli_exit_codes)
{
	char clean[512], bad[512], junk[512], both[1100];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	snprintf(clean, sizeof(clean), "%s/jit-4242.dump", tmp);
	lt_base(&b);
	jb_close(&b);
	write_buf(clean, b.p, b.n);
	snprintf(bad, sizeof(bad), "%s/after.dump", tmp);
	mk_after(&b, true, &c);
	write_buf(bad, b.p, b.n);
	snprintf(junk, sizeof(junk), "%s/junk.dump", tmp);
	write_buf(junk, (const uint8_t *)"hello, this is not a jitdump at all....", 40);
	free(b.p);

	ck_assert_int_eq(sh("%s lint %s", bin, clean), 0);
	ck_assert_msg(strstr(out, "0 errors, 0 warnings, 0 infos"), "%s", out);
	ck_assert_int_eq(sh("%s lint %s", bin, bad), 1);
	ck_assert_msg(strstr(out, ": error: JD030 unwind-after-load: ") && strstr(out, "perf: perf attaches"), "%s", out);
	/* unreadable: exit 2, the message names the file and an offset */
	ck_assert_int_eq(sh("%s lint %s", bin, junk), 2);
	snprintf(both, sizeof(both), "%s: offset 0x0: bad magic", junk);
	ck_assert_msg(strstr(out, junk) && strstr(out, "offset 0x0") && strstr(out, "bad magic"), "%s", out);
	ck_assert_int_eq(sh("%s lint %s/missing.dump", bin, tmp), 2);
	ck_assert_msg(strstr(out, "missing.dump: offset 0x0: cannot open"), "%s", out);
	/* several files: the worst exit */
	ck_assert_int_eq(sh("%s lint %s %s", bin, clean, bad), 1);
	ck_assert_int_eq(sh("%s lint %s %s %s", bin, clean, bad, junk), 2);
	/* JSON: the finding with id, severity, offset, perf's sentence */
	ck_assert_int_eq(sh("%s lint --json %s %s", bin, clean, bad), 1);
	ck_assert_msg(strstr(out, "\"id\": \"JD030\", \"name\": \"unwind-after-load\", \"severity\": \"error\", \"offset\": "),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"exit\": 1 } }"), "%s", out);
	if (!access("/usr/bin/python3", X_OK)) {
		ck_assert_int_eq(sh("%s lint --json %s %s %s 2>/dev/null | python3 -m json.tool >/dev/null", bin, clean, bad, junk), 0);
		ck_assert_int_eq(sh("%s dump --json %s | python3 -m json.tool >/dev/null", bin, clean), 0);
		ck_assert_int_eq(sh("%s lint --rules --json | python3 -m json.tool >/dev/null", bin), 0);
	} else {
		printf("cli_exit_codes: python3 not installed, JSON syntax not checked\n");
	}
	ck_assert_int_eq(sh("%s dump %s", bin, junk), 2);
	ck_assert_msg(strstr(out, "offset 0x0") && strstr(out, "junk.dump"), "%s", out);
	ck_assert_int_eq(sh("%s lint --perf-profile nope %s", bin, clean), 2);
	ck_assert_int_eq(sh("%s lint", bin), 2);
}
END_TEST

/* `lint --rules` is a contract: ids never change meaning */
START_TEST(golden_rules)
{
	const char *path = "tests/golden/lint/rules.txt";
	ck_assert_int_eq(sh("%s lint --rules", bin), 0);
	if (getenv("JU_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(out, f);
		fclose(f);
	}
	ck_assert_int_eq(sh("%s lint --rules | diff -u %s -", bin, path), 0);
}
END_TEST

/* Errors first by default, file order with --sort offset; --min-severity
 * hides but still counts; the summary counts per rule; JSON names offsets. */
START_TEST(cli_order_and_filters)
{
	char p[512];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	mk_after2(&b, true, &c);
	snprintf(p, sizeof(p), "%s/order.dump", tmp);
	write_buf(p, b.p, b.n);
	free(b.p);
	ck_assert_int_eq(sh("%s lint %s", bin, p), 1);
	char *e = strstr(out, "error: JD030"), *i = strstr(out, "info: JD007");
	ck_assert_msg(e && i && e < i, "errors not first:\n%s", out);
	ck_assert_msg(strstr(out, "[JD007 file-name x1, JD030 unwind-after-load x1]"), "no per-rule counts:\n%s", out);
	ck_assert_int_eq(sh("%s lint --sort offset %s", bin, p), 1);
	e = strstr(out, "error: JD030");
	i = strstr(out, "info: JD007");
	ck_assert_msg(e && i && i < e, "--sort offset is not file order:\n%s", out);
	ck_assert_int_eq(sh("%s lint --min-severity error %s", bin, p), 1);
	ck_assert_msg(strstr(out, "error: JD030") && !strstr(out, "info: JD007") && strstr(out, "1 info"),
		      "--min-severity error:\n%s", out);
	ck_assert_int_eq(sh("%s lint --min-severity nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --sort nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --stack-size -1 %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --json %s", bin, p), 1);
	ck_assert_msg(strstr(out, "\"load\": 40, \"code_offsets\": \"all\"") && strstr(out, "\"rules\": { \"JD007\": 1, \"JD030\": 1 }"),
		      "JSON lacks the load or the rule counts:\n%s", out);	/* dump's filters: by name, by address, by record offset; the walk still
	 * gives each load what perf attaches to it */
	ck_assert_int_eq(sh("%s dump --no-code --name 'b*' %s", bin, p), 0);
	ck_assert_msg(strstr(out, "name \"big\"") && !strstr(out, "name \"tramp\"") &&
		      strstr(out, "unwinding info: the UNWINDING_INFO at"), "--name:\n%s", out);
	ck_assert_int_eq(sh("%s dump --no-code --at 0x%llx %s", bin, (unsigned long long)ADDR + 1, p), 0);
	ck_assert_msg(strstr(out, "name \"tramp\"") && !strstr(out, "name \"big\""), "--at:\n%s", out);
	ck_assert_int_eq(sh("%s dump --no-code --record 0x28 %s", bin, p), 0);
	ck_assert_msg(strstr(out, "0x000028  CODE_LOAD") && !strstr(out, "CODE_UNWINDING_INFO"), "--record:\n%s", out);
	ck_assert_int_eq(sh("%s dump --at 0x%llx %s", bin, (unsigned long long)ADDR + 0x9000, p), 0);
	ck_assert_msg(!strstr(out, "CODE_LOAD"), "--at outside every load shows one:\n%s", out);
	ck_assert_int_eq(sh("%s dump --at nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s dump --record -1 %s", bin, p), 2);
}
END_TEST

/* a crafted dump's text dump and lint output, byte for byte (regenerate with
 * JU_UPDATE_GOLDEN=1 and read the diff) */
START_TEST(golden_dump)
{
	char p[512], cwd[2048];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	mk_after2(&b, true, &c);
	jb_debug(&b, ADDR + 0x1000, 1, 1, ADDR + 0x1000);
	jb_move(&b, ADDR, ADDR + 0x8000, F->code_size, 0);
	jb_close(&b);
	snprintf(p, sizeof(p), "%s/crafted.dump", tmp);
	write_buf(p, b.p, b.n);
	free(b.p);
	static const char *const what[] = { "dump", "lint" };
	for (int k = 0; k < 2; k++) {
		char gold[2304];
		snprintf(gold, sizeof(gold), "%s/tests/golden/lint/crafted.%s.txt", cwd, what[k]);
		/* run from the temp dir: the printed path is just the file name */
		if (getenv("JU_UPDATE_GOLDEN"))
			sh("cd %s && %s %s crafted.dump > %s", tmp, bin, what[k], gold);
		int rc = sh("cd %s && %s %s crafted.dump | diff -u %s -", tmp, bin, what[k], gold);
		ck_assert_msg(rc == 0, "%s differs from %s:\n%s", what[k], gold, out);
	}
}
END_TEST

/* tools/jit-reuse.c's dumps (issue 34): B written over A at one address with
 * its own unwinding info is JD062, naming both loads; B alone is silent. */
START_TEST(reuse_dump)
{
	const char *jr = getenv("JU_JIT_REUSE");
	if (!jr || access(jr, X_OK) || runs_under_other_arch()) {
		fprintf(stderr, "lint reuse_dump: skipped: no JU_JIT_REUSE (make unit sets it) or a qemu-user build\n");
		return;
	}
	static const char *const modes[] = { "reuse", "alone" };
	for (int m = 0; m < 2; m++) {
		ck_assert_int_eq(sh("rm -rf %s/%s && mkdir %s/%s && %s %s/%s %s 5", tmp, modes[m], tmp, modes[m], jr, tmp,
				    modes[m], modes[m]), 0);
		sh("%s lint %s/%s/jit-*.dump", bin, tmp, modes[m]);
		if (m == 0)
			ck_assert_msg(strstr(out, "JD062 code-reused: CODE_LOAD 'B'") && strstr(out, "'B'+0x0..") &&
				      strstr(out, "the CODE_LOAD 'A' at file offset") && strstr(out, "'A'+0x0.."), "%s", out);
		else
			ck_assert_msg(!strstr(out, "JD062"), "alone: %s", out);
	}
}
END_TEST

struct expect_case {
	const char *name;
	const char *ids;         /* rule ids (warning and error) the case's dump must yield, sorted */
};

/* The harness's dumps lint clean, except those whose point is a broken dump,
 * and those where perf cannot use what the case writes (the case's replays say
 * so too: hdr-no-table and hdr-table-sdata8 fail libunwind, fde-absptr-udata8
 * fails libdw, and nested trampolines repeat the same code). */
static const struct expect_case expect_cases[] = {
	/* aarch64: CPython's own FDE (facts section 7) ends with a block naming x29
	 * after ldp restored it; with PAC its rows are also 4 bytes early */
	{ "cpython-aarch64-bytes", "JD052 JD057" },
	{ "cpython-aarch64-pac", "JD052 JD057" },
	{ "cpython-aarch64-pac-fixed", "" },
	{ "neg-ra-column", "JD052 JD057" },
	/* x86_64: CPython's FDE never restores rbp's rule after the pop */
	{ "cpython-3.13-fp-bytes", "JD057" },
	{ "cpython-3.14-perf-jit", "JD057" },
	/* V8 (node 20): the same after its return sequence's pop %rbp */
	{ "v8-node20-return-sequence", "JD057" },
	/* and its argument-dropping path: pop %r10 takes the return address while
	 * the CFI keeps CFA = rsp+8 and the return address at CFA-8 (JD052 at the
	 * lea, JD059 at the lea and the push: where real perf reads a wrong caller) */
	{ "v8-node20-argument-drop", "JD052 JD057 JD059" },
	{ "stack-deep", "JD080" },
	/* found by fuzz-cfi: a rule for xmm0 (libunwind's table ends at 16), and a
	 * frame whose return address is the last word of perf's stack copy */
	{ "fuzz-7b6a3d518b5b", "JD055" },
	{ "fuzz-023ff9cfabd7", "JD055" },
	{ "fuzz-074669363064", "JD080" },
	{ "eh-frame-unaligned", "JD045" },
	{ "fde-absptr-udata8", "JD054" },
	{ "hdr-before", "JD035" },
	{ "hdr-no-table", "JD042" },
	{ "hdr-table-sdata8", "JD041" },
	{ "mapped-zero", "JD049" },
	{ "neg-cfa-off-by-8", "JD052" },
	{ "neg-rows-shifted", "JD052 JD057" },
	{ "nested-depth3", "" },
	{ "stride-overlap", "JD051" },
	{ "unwind-after-load", "JD030" },
	/* the first generation's directives forget the CFA's offset on purpose
	 * (docs/case-format.md "Generations"); the second's are right */
	{ "gen-reuse-cfi-only", "JD052 JD062" },
	/* the second generation's load over the first's code with other CFI
	 * (JD062: perf keeps the first's state there); the same shape is silent */
	{ "gen-reuse-frame-shape", "JD062" },
	{ "gen-late-load", "JD062" },
	/* the hybrid cases run two levels of CPython's trampolines; with CPython's FDE, x86_64's never restores
	 * rbp's rule after the pop and aarch64's names x29/x30 after the ldp
	 * (JD057), and aarch64's rows are also checked against the code (JD052) */
	{ "hybrid", "" },
#if defined(__aarch64__)
#define HX_HYBRID_CFI "JD052 JD057"
	{ "hybrid-plain-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-leaf-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-nofp-leaf-cfi", HX_HYBRID_CFI },
#elif defined(__riscv)
	/* riscv64: the negative control's CFA 16 too high (and ra's rule with it);
	 * without CFI, perf's libdw has no frame-pointer fallback there (JD083) */
	{ "neg-ra-offset", "JD052 JD057 JD059" },
	{ "hybrid-plain-fp-none", "JD083" },
	{ "hybrid-plain-nofp-none", "JD083" },
	{ "hybrid-plain-nofp-leaf-none", "JD083" },
#else
#define HX_HYBRID_CFI "JD057"
	{ "hybrid-plain-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-leaf-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-nofp-leaf-cfi", HX_HYBRID_CFI },
#endif
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* run one case with its own dump directory; the path of its dump */
static bool case_dump(const char *casefile, const char *name, char *dump, size_t n)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
	int rc = sh("%s run --unwinders oracle --jitdump-dir %s %s", bin, dir, casefile);
	if (rc == 77)
		return false;
	ck_assert_msg(rc == 0 || rc == 1, "run %s: exit %d\n%s", casefile, rc, out);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	bool found = false;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "jit-", 4) && strstr(de->d_name, ".dump")) {
			snprintf(dump, n, "%s/%s", dir, de->d_name);
			found = true;
		}
	closedir(d);
	ck_assert_msg(found, "%s: no jit-<pid>.dump in %s", casefile, dir);
	return true;
}

START_TEST(harness_dumps)
{
	const struct tr_arch *host = tr_arch_host();
	char cdir[64];
	snprintf(cdir, sizeof(cdir), "cases/%s", host ? host->facts->name : "x86_64");
	DIR *d = opendir(cdir);
	if (!d) {
		printf("harness_dumps: no %s for this host: skipped\n", cdir);
		return;
	}
	char *names[256];
	size_t nn = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nn < 256) {
		size_t l = strlen(de->d_name);
		if (l > 5 && !strcmp(de->d_name + l - 5, ".case"))
			names[nn++] = strndup(de->d_name, l - 5);
	}
	closedir(d);
	qsort(names, nn, sizeof(names[0]), cmp_str);
	ck_assert_uint_gt(nn, 5);
	size_t checked = 0;
	for (size_t i = 0; i < nn; i++) {
		struct ju_err e2;
		char cf[512], dump[1024];
		snprintf(cf, sizeof(cf), "%s/%s.case", cdir, names[i]);
		if (!case_dump(cf, names[i], dump, sizeof(dump)))
			continue;
		struct lint_opts o = { PV_CURRENT, dump, 0, 8192, NULL };
		struct lint_summary s;
		memset(&lt_G, 0, sizeof(lt_G));
		ck_assert_msg(lint_file(dump, &o, lt_collect, &lt_G, &s, &e2) == 0, "%s", e2.msg);
		/* the warning and error ids, sorted and unique */
		const char *ids[64];
		size_t ni = 0;
		for (size_t k = 0; k < lt_G.n && ni < 64; k++) {
			/* the -g rules (JD084-JD086), on x86_64 only, are held to the fp
			 * columns of every case's samples by tests/lint_vs_run.py */
			if (lt_G.r[k]->sev == LINT_INFO || lt_G.r[k] == lint_rule_find("JD084") ||
			    lt_G.r[k] == lint_rule_find("JD085") || lt_G.r[k] == lint_rule_find("JD086"))
				continue;
			bool dup = false;
			for (size_t j = 0; j < ni; j++)
				dup |= !strcmp(ids[j], lt_G.r[k]->id);
			if (!dup)
				ids[ni++] = lt_G.r[k]->id;
		}
		qsort(ids, ni, sizeof(ids[0]), cmp_str);
		char got[512] = "";
		for (size_t k = 0; k < ni; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "", ids[k]);
		/* an entry covers its name and its variants (name-*); the longest wins */
		const char *want = "";
		size_t best = 0;
		for (size_t k = 0; k < sizeof(expect_cases) / sizeof(expect_cases[0]); k++) {
			size_t l = strlen(expect_cases[k].name);
			if (!strncmp(expect_cases[k].name, names[i], l) && (!names[i][l] || names[i][l] == '-') &&
			    l > best) {
				want = expect_cases[k].ids;
				best = l;
			}
		}
		char buf[16384];
		lt_show(buf, sizeof(buf));
		ck_assert_msg(!strcmp(got, want), "%s: expected {%s}, got {%s}:\n%s", names[i], want, got, buf);
		/* the exit code of the CLI agrees */
		int rc = sh("%s lint %s", bin, dump);
		ck_assert_int_eq(rc, lint_exit_code(&s));
		/* and dump decodes every record to the end */
		ck_assert_msg(sh("%s dump %s", bin, dump) == 0 && strstr(out, "end of file"), "%s", out);
		checked++;
		free(names[i]);
	}
	ck_assert_uint_gt(checked, 5);
}
END_TEST

/* ---- dump's rows against the oracle and the truth ---- */

static uint32_t rmach;   /* the dump's elf_mach, for register names */

static const char *rname(unsigned r, char *buf, size_t n)
{
	static const char *const x86[17] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
					     "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	/* the psABI's names, as GNU as and objdump write them */
	static const char *const rv[32] = { "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
					    "a1", "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
					    "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6" };
	if (rmach == EM_X86_64 && r < 17)
		return x86[r];
	if (rmach == EM_RISCV && r < 32)
		return rv[r];
	if (rmach == EM_AARCH64 && r <= 31)
		snprintf(buf, n, r == 31 ? "sp" : "x%u", r);
	else
		snprintf(buf, n, "r%u", r);
	return buf;
}

/* the oracle's row, formatted here independently of lintcmd.c */
static void fmt_row(const struct ehf_row *row, char *buf, size_t n)
{
	char r[16];
	size_t o;
	if (row->cfa_kind == EHF_CFA_EXPR)
		o = (size_t)snprintf(buf, n, "cfa=expr(%zu bytes)", row->cfa_expr_len);
	else
		o = (size_t)snprintf(buf, n, "cfa=%s%+" PRId64, rname(row->cfa_reg, r, sizeof(r)), row->cfa_off);
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_rule *ru = &row->reg[i];
		switch (ru->kind) {
		case EHF_INITIAL: continue;
		case EHF_OFFSET:
			o += (size_t)snprintf(buf + o, n - o, " %s=cfa%+" PRId64, rname(i, r, sizeof(r)), ru->off);
			break;
		case EHF_VAL_OFFSET:
			o += (size_t)snprintf(buf + o, n - o, " %s=val(cfa%+" PRId64 ")", rname(i, r, sizeof(r)), ru->off);
			break;
		case EHF_UNDEF:
			o += (size_t)snprintf(buf + o, n - o, " %s=undef", rname(i, r, sizeof(r)));
			break;
		case EHF_SAME:
			o += (size_t)snprintf(buf + o, n - o, " %s=same", rname(i, r, sizeof(r)));
			break;
		case EHF_REGISTER: {
			char r2[16];
			o += (size_t)snprintf(buf + o, n - o, " %s=%s", rname(i, r, sizeof(r)), rname(ru->reg, r2, sizeof(r2)));
			break;
		}
		default:
			o += (size_t)snprintf(buf + o, n - o, " %s=?", rname(i, r, sizeof(r)));
			break;
		}
	}
	if (row->ra_signed)
		snprintf(buf + o, n - o, " ra_signed");
}

/* Every pc of every FDE of the dump: the row dump printed covering it equals
 * ehf_row_at there; for derived CFI the CFA also equals the emitter's truth. */
static size_t rows_vs_oracle(const char *dump, const struct tr_func *truth)
{
	ck_assert_int_eq(sh("%s dump %s", bin, dump), 0);
	struct { uint64_t lo, hi; char text[512]; } *rows = calloc(4096, sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	size_t nr = 0;
	bool printed_error = strstr(out, "error: .eh_frame+0x") != NULL;
	for (char *line = out; line && *line && nr < 4096;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		unsigned long long lo, hi;
		int k = 0;
		if (sscanf(line, " [0x%llx, 0x%llx)  %n", &lo, &hi, &k) == 2 && k) {
			rows[nr].lo = lo;
			rows[nr].hi = hi;
			snprintf(rows[nr].text, sizeof(rows[nr].text), "%s", line + k);
			nr++;
		}
		line = nl ? nl + 1 : NULL;
	}
	struct jd_file f;
	struct ju_err je;
	ck_assert_msg(jd_open(&f, dump, &je) == 0, "%s", je.msg);
	rmach = f.elf_mach;
	size_t pcs = 0;
	for (size_t i = 0; i < f.nloads; i++) {
		const struct jd_load *l = &f.loads[i];
		if (!l->has_unwind)
			continue;
		struct ehf_table t;
		struct ehf_bases b = { l->code_addr + uw_jit_eh_off(l), 0, 0, 8 };
		struct ju_err ee;
		if (ehf_parse(&t, l->unwind, l->unwinding_size - l->eh_frame_hdr_size, &b, &ee)) {
			/* dump prints the error instead of rows (hdr-before) */
			ck_assert_msg(printed_error, "%s: no parse error printed", dump);
			continue;
		}
		for (size_t k = 0; k < t.nfdes; k++) {
			const struct ehf_fde *fd = &t.fdes[k];
			for (uint64_t pc = fd->pc_begin; pc < fd->pc_end; pc++) {
				struct ehf_row row;
				char want[512];
				ck_assert_int_eq(ehf_row_at(fd, pc, &row, &ee), 0);
				fmt_row(&row, want, sizeof(want));
				/* a pc two loads cover (a case's generations): each load's
				 * row is among those printed there */
				const char *got = NULL;
				for (size_t r = 0; r < nr && !(got && !strcmp(got, want)); r++)
					if (rows[r].lo <= pc && pc < rows[r].hi)
						got = rows[r].text;
				ck_assert_msg(got, "%s: no row printed for pc 0x%" PRIx64, dump, pc);
				ck_assert_msg(!strcmp(got, want), "%s pc 0x%" PRIx64 ": dump '%s', oracle '%s'", dump, pc, got,
					      want);
				/* the truth is the case's trampoline: not its leaf, if it has one */
				if (truth && l->code_size == truth->code_size &&
				    !memcmp(l->code, truth->code, truth->code_size) && pc - l->code_addr < truth->code_size) {
					/* the truth row of the instruction holding pc */
					const struct tr_row *tr = NULL;
					for (size_t q = 0; q < truth->nrows; q++)
						if (truth->rows[q].offset <= pc - l->code_addr)
							tr = &truth->rows[q];
					char cfa[64], r2[16];
					size_t cl = (size_t)snprintf(cfa, sizeof(cfa), "cfa=%s%+" PRId64, rname((unsigned)tr->cfa_reg,
								     r2, sizeof(r2)), tr->cfa_off);
					ck_assert_msg(!strncmp(got, cfa, cl) && (!got[cl] || got[cl] == ' '), "%s +%" PRIu64
						      " (%s): dump '%s', truth %s", dump, pc - l->code_addr, tr->insn, got, cfa);
				}
				pcs++;
			}
		}
		ehf_table_free(&t);
	}
	jd_close(&f);
	free(rows);
	return pcs;
}

/* every dump of this host's cases: the rows match the oracle at every pc;
 * where the case derives its CFI from the truth (and lays .eh_frame out as perf
 * does) the CFA matches the emitter's truth rows too */
START_TEST(dump_rows_match_oracle)
{
	const struct tr_arch *host = tr_arch_host();
	char cdir[64];
	snprintf(cdir, sizeof(cdir), "cases/%s", host ? host->facts->name : "x86_64");
	DIR *d = opendir(cdir);
	if (!d) {
		printf("dump_rows_match_oracle: no %s for this host: skipped\n", cdir);
		return;
	}
	struct dirent *de;
	size_t pcs = 0, truths = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l <= 5 || strcmp(de->d_name + l - 5, ".case"))
			continue;
		struct ju_err e2;
		char cf[512], name[256], dump[1024];
		snprintf(name, sizeof(name), "%.*s", (int)(l - 5), de->d_name);
		snprintf(cf, sizeof(cf), "%s/%s", cdir, de->d_name);
		if (!case_dump(cf, name, dump, sizeof(dump)))
			continue;
		struct hx_case hc;
		struct tr_func *truth = NULL;
		ck_assert_msg(hx_case_load(&hc, cf, &e2) == 0, "%s", e2.msg);
		if (hc.unw.cfi == TR_CFI_DERIVED && !hc.unw.eh_unaligned && host) {
			truth = calloc(1, sizeof(*truth));
			ck_assert_ptr_nonnull(truth);
			ck_assert_msg(tr_emit(host, hc.ops, hc.nops, truth, &e2) == 0, "%s", e2.msg);
			truths++;
		}
		hx_case_free(&hc);
		pcs += rows_vs_oracle(dump, truth);
		free(truth);
	}
	closedir(d);
	ck_assert_uint_gt(pcs, 100);
	ck_assert_uint_gt(truths, 2);
}
END_TEST

/* The code check keeps the rows of a CFA program and reuses them where the
 * same program bytes come again (unwinders/lint/lint_code.c): every load of a
 * dump where programs recur must get the findings it gets alone, in a walk
 * of its own.  The loads: the clean program, the same with a wrong CFA
 * offset (JD052), both again elsewhere, and the clean program under a CIE
 * whose data alignment is -4, not -8 (rbp's rule moves to cfa-8: JD058),
 * whose program bytes are those of the first load: a key without the
 * alignment would answer it with the first load's rows, and no finding. */
struct rc_load {
	bool bad, da4;
	uint64_t addr;
};

/* A frame-pointer function's CFA program as raw bytes (def_cfa_offset 16,
 * rbp at cfa-16, the CFA on rbp, back to rsp + 8), or (bad) the same with
 * def_cfa_offset 24 where 16 is right (JD052). */
static void prog_opts(struct tr_unwind_opts *o, bool bad)
{
	static const uint8_t good_prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07,
					     0x08, 0xc6 };
	lt_opts_clean(o);
	o->cfi = TR_CFI_BYTES;
	memcpy(o->prog, good_prog, sizeof(good_prog));
	o->prog_len = sizeof(good_prog);
	if (bad)
		o->prog[2] = 0x18;
}

static size_t rc_put(struct jb *b, const struct rc_load *l, uint64_t index)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	prog_opts(&o, l->bad);
	lt_unw(F, &o, l->addr, &u);
	if (l->da4) {
		/* the CIE: length, id, version, "zR", code_align 1, data_align -8 */
		ck_assert_msg(!memcmp(u.data + 9, "zR", 3) && u.data[12] == 0x01 && u.data[13] == 0x78,
			      "the CIE's layout changed: data_align is not at .eh_frame+13");
		u.data[13] = 0x7c;
	}
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	return jb_load(b, "tramp", l->addr, F->code, F->code_size, index);
}

/* "JD052 +0x1 +0x4 ..": the findings about the load at off, in order */
static void rc_about(uint64_t off, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < lt_G.n && o < cap; i++) {
		if (lt_G.where[i].load != off)
			continue;
		o += (size_t)snprintf(buf + o, cap - o, "%s", lt_G.r[i]->id);
		for (unsigned k = 0; k < lt_G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(buf + o, cap - o, " +0x%" PRIx64, lt_G.where[i].pc[k]);
		if (o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "; ");
	}
}

START_TEST(row_cache_keeps_findings)
{
	static const struct rc_load loads[] = {
		{ false, false, ADDR }, { true, false, ADDR + 0x10000 }, { false, false, ADDR + 0x20000 },
		{ true, false, ADDR + 0x30000 }, { false, true, ADDR + 0x40000 }, { false, false, ADDR + 0x50000 },
	};
	enum { N = sizeof(loads) / sizeof(loads[0]) };
	struct jb all = { 0 };
	size_t off[N];
	jb_std(&all);
	for (size_t i = 0; i < N; i++)
		off[i] = rc_put(&all, &loads[i], i);
	jb_close(&all);
	lt_lint_buf(all.p, all.n, PV_CURRENT, NULL);
	static char together[N][2048], alone[2048];
	for (size_t i = 0; i < N; i++)
		rc_about(off[i], together[i], sizeof(together[i]));
	for (size_t i = 0; i < N; i++) {
		struct jb one = { 0 };
		jb_std(&one);
		size_t o1 = rc_put(&one, &loads[i], i);
		jb_close(&one);
		lt_lint_buf(one.p, one.n, PV_CURRENT, NULL);
		rc_about(o1, alone, sizeof(alone));
		ck_assert_msg(!strcmp(together[i], alone), "load %zu: alone '%s', in the dump '%s'", i, alone,
			      together[i]);
		/* the controls: each variant is seen by a finding, the clean one by none */
		if (loads[i].bad)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else if (loads[i].da4)
			ck_assert_msg(strstr(alone, "JD058"), "load %zu: no JD058 alone: '%s'", i, alone);
		else
			ck_assert_msg(!alone[0], "load %zu: the clean program has findings: '%s'", i, alone);
		free(one.p);
	}
	free(all.p);
}
END_TEST

/* The code check's memo (unwinders/lint/lint_code.c) serves a load whose code
 * bytes repeat an earlier load's with the findings of an earlier check of
 * the same code, rows and geometry: the walk must report what it reports
 * with the memo off (JU_LINT_MEMO=0), finding for finding, and the memo must
 * have served some.  The controls: the same code under a program one byte
 * different (a wrong CFA offset, JD052) and a program under code one byte
 * different (push %rbx for push %rbp, JD058) and the same program with its
 * FDE one byte into the code (its rows meet other instructions:
 * JD052, in code of nops; the same nops and program with the FDE one byte
 * shorter at the start: JD046, JD052 at other offsets), each twice (the second copy's code was seen before, so the memo
 * is asked): each must get its own finding, the one it gets in a walk of its
 * own. */
struct cm_load {
	bool bad_cfi, bad_code, padded, shifted;   /* shifted: padded, and the FDE one byte in */
};

static size_t cm_put(struct jb *b, const struct cm_load *l, uint64_t addr, uint64_t index)
{
	static uint8_t code[256];
	ck_assert_uint_le(F->code_size, sizeof(code));
	memcpy(code, F->code, F->code_size);
	if (l->bad_code) {
		ck_assert_uint_eq(code[0], 0x55);   /* push %rbp */
		code[0] = 0x53;                     /* push %rbx */
	}
	struct tr_unwind_opts o;
	struct tr_unwind u;
	prog_opts(&o, l->bad_cfi);
	size_t n = F->code_size;
	if (!l->padded && !l->shifted) {
		lt_unw(F, &o, addr, &u);
	} else {
		/* code of nops only, one byte longer than F's, and an FDE one
		 * byte shorter: at its start, or one byte in (pc_begin and
		 * pc_range are sdata4 after the CIE and the FDE's length and CIE
		 * pointer): the same code bytes under the same rows either way */
		static struct tr_func g;
		g = *F;
		ck_assert_uint_lt(g.code_size, sizeof(g.code));
		g.code_size++;
		n++;
		memset(g.code, 0x90, g.code_size);
		memset(code, 0x90, n);
		lt_unw(&g, &o, addr, &u);
		uint32_t cie, pb, len;
		memcpy(&cie, u.data, 4);
		ck_assert_uint_lt(4 + cie + 16, u.size);
		memcpy(&pb, u.data + 4 + cie + 8, 4);
		memcpy(&len, u.data + 4 + cie + 12, 4);
		ck_assert_uint_eq(len, n);
		pb += l->shifted;
		len--;
		memcpy(u.data + 4 + cie + 8, &pb, 4);
		memcpy(u.data + 4 + cie + 12, &len, 4);
	}
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	return jb_load(b, "tramp", addr, code, n, index);
}

/* every finding of the last walk, one a line */
static void cm_all(char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < lt_G.n && o < cap; i++) {
		o += (size_t)snprintf(buf + o, cap - o, "0x%" PRIx64 " %s load 0x%" PRIx64 " %s", lt_G.off[i], lt_G.r[i]->id,
				      lt_G.where[i].load, lt_G.msg[i]);
		for (unsigned k = 0; k < lt_G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(buf + o, cap - o, " +0x%" PRIx64, lt_G.where[i].pc[k]);
		if (o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "\n");
	}
}

START_TEST(code_memo_keeps_findings)
{
	enum { N = 40 };
	static struct cm_load loads[N];
	for (size_t i = 0; i < N; i++)
		loads[i] = (struct cm_load){ i % 3 == 1, false, false, false };
	loads[20] = loads[21] = (struct cm_load){ false, true, false, false };
	loads[30] = loads[31] = (struct cm_load){ true, false, false, false };
	loads[33] = loads[34] = (struct cm_load){ false, false, true, false };
	loads[35] = loads[36] = (struct cm_load){ false, false, false, true };
	struct jb all = { 0 };
	size_t off[N];
	jb_std(&all);
	for (size_t i = 0; i < N; i++)
		off[i] = cm_put(&all, &loads[i], ADDR + i * 0x10000, i);
	jb_close(&all);
	static char with[64 * 1024], without[64 * 1024], alone[2048], there[2048];
	ck_assert_int_eq(setenv("JU_LINT_MEMO", "0", 1), 0);
	struct lint_summary s0 = lt_lint_buf(all.p, all.n, PV_CURRENT, NULL);
	cm_all(without, sizeof(without));
	ck_assert_int_eq(unsetenv("JU_LINT_MEMO"), 0);
	ck_assert_uint_eq(s0.memo_hits, 0);
	struct lint_summary s1 = lt_lint_buf(all.p, all.n, PV_CURRENT, NULL);
	cm_all(with, sizeof(with));
	ck_assert_msg(s1.memo_hits >= N / 2, "the memo served %" PRIu64 " of %d checks", s1.memo_hits, N);
	size_t d = 0;
	while (with[d] && with[d] == without[d])
		d++;
	while (d && with[d - 1] != '\n')
		d--;
	ck_assert_msg(!strcmp(with, without), "with the memo, from the first line that differs:\n%.600s\nwithout:\n%.600s",
		      with + d, without + d);
	ck_assert_msg(strstr(with, "JD052") && strlen(with) < sizeof(with) - 1, "%s", with);
	for (size_t i = 0; i < N; i++) {
		struct jb one = { 0 };
		jb_std(&one);
		size_t o1 = cm_put(&one, &loads[i], ADDR + i * 0x10000, i);
		jb_close(&one);
		lt_lint_buf(one.p, one.n, PV_CURRENT, NULL);
		rc_about(o1, alone, sizeof(alone));
		free(one.p);
		lt_lint_buf(all.p, all.n, PV_CURRENT, NULL);
		rc_about(off[i], there, sizeof(there));
		ck_assert_msg(!strcmp(there, alone), "load %zu: alone '%s', in the dump '%s'", i, alone, there);
		if (loads[i].shifted)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else if (loads[i].padded)
			ck_assert_msg(strstr(alone, "JD046") && strstr(alone, "JD052"), "load %zu: not JD046 alone: '%s'", i, alone);
		else if (loads[i].bad_code)
			ck_assert_msg(strstr(alone, "JD058"), "load %zu: no JD058 alone: '%s'", i, alone);
		else if (loads[i].bad_cfi)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else
			ck_assert_msg(!alone[0], "load %zu: the clean load has findings: '%s'", i, alone);
	}
	free(all.p);
}
END_TEST

void lint_add_cli(TCase *cli)
{
	tcase_add_checked_fixture(cli, cli_setup, cli_teardown);
	tcase_add_test(cli, cli_elf_mach_zero);
	tcase_add_test(cli, cli_exit_codes);
	tcase_add_test(cli, golden_rules);
	tcase_add_test(cli, cli_order_and_filters);
	tcase_add_test(cli, golden_dump);
	tcase_add_test(cli, reuse_dump);
	tcase_add_test(cli, harness_dumps);
	tcase_add_test(cli, dump_rows_match_oracle);
}

void lint_add_memo(TCase *rules)
{
	tcase_add_test(rules, row_cache_keeps_findings);
	tcase_add_test(rules, code_memo_keeps_findings);
}
