/* The reports end to end: the terminal matrix's width, colours, symbols and
 * vocabulary; --version; JUnit against an XSD (xmllint), TAP through perl's
 * TAP::Parser, the HTML heatmap rendered by headless chromium. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char bin[1024];
static char tmp[256];

#include "tests/hostarch.h"

#define REP_CASES (host_cases()->dir)
/* the controls name their unwinders: the perf column runs only where perf does */
#define CFI4 "fp,libunwind,libdw,oracle"

static void setup(void)
{
	const char *b = getenv("JU_BIN");
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/jurep-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* run a shell command, capture stdout (+ stderr), return the exit code */
static int sh(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, outlen - 1, p);
	out[n] = 0;
	char drain[4096];
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void __attribute__((unused)) write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static char out[1 << 18];

START_TEST(matrix_fits_columns)
{
	/* the whole case set at 100 and 80 columns (one run each, side by side):
	 * the table form, no line wider, each cell counting the samples of the
	 * case's first profile and stack size in the same run's JSON, grouped
	 * why lines naming as many cases as they say (tests/term_check.py) */
	/* the matrix is stdout; stderr's notes (a perf column skipped, with the
	 * command that failed) are not the table */
	int rc = sh(out, sizeof(out), "(COLUMNS=100 %s run --json %s/r100.json %s >%s/o100.txt 2>%s/e100.txt & "
		    "COLUMNS=80 %s run --json %s/r80.json %s >%s/o80.txt 2>%s/e80.txt; a=$?; wait $!; b=$?; "
		    "echo exit $a $b; cat %s/e100.txt %s/e80.txt; [ $a = 0 ] && [ $b = 0 ])", bin, tmp, REP_CASES, tmp,
		    tmp, bin, tmp, REP_CASES, tmp, tmp, tmp, tmp);
	ck_assert_msg(rc == 0, "run: %s", out);
	for (int cols = 100; cols >= host_cases()->min_cols; cols -= 20) {
		rc = sh(out, sizeof(out), "python3 tests/term_check.py %s/o%d.txt %s/r%d.json %d", tmp, cols, tmp, cols, cols);
		ck_assert_msg(rc == 0, "at %d columns: %s", cols, out);
		ck_assert_msg(strstr(out, " 0 problem(s)"), "%s", out);
	}
	ck_assert_int_eq(sh(out, sizeof(out), "grep -c 'cells count samples:' %s/o100.txt", tmp), 0);
	/* controls: a cell counting one sample more, a line one wider, the one
	 * line per unwinder of a 40-column terminal and a why line naming one case
	 * fewer than it says are each caught */
	ck_assert_int_ne(sh(out, sizeof(out), "sed '2s/ok\\([0-9]\\)/ok1\\1/' %s/o100.txt >%s/bad.txt && "
			    "python3 tests/term_check.py %s/bad.txt %s/r100.json 100", tmp, tmp, tmp, tmp), 0);
	ck_assert_msg(strstr(out, "the cell counts"), "%s", out);
	ck_assert_int_ne(sh(out, sizeof(out), "python3 tests/term_check.py %s/o100.txt %s/r100.json 99", tmp, tmp), 0);
	ck_assert_int_ne(sh(out, sizeof(out), "sed -E '/^  \\S+ at \\S+ in [0-9]+ cases: /{n;s/^    [^,]+, /    /}' "
			    "%s/o100.txt >%s/bad.txt && python3 tests/term_check.py %s/bad.txt %s/r100.json 100",
			    tmp, tmp, tmp, tmp), 0);
	ck_assert_msg(strstr(out, "names"), "%s", out);
	ck_assert_int_ne(sh(out, sizeof(out), "COLUMNS=40 %s run %s/big-frame.case >%s/o40.txt; "
			    "python3 tests/term_check.py %s/o40.txt %s/r100.json 1000", bin, REP_CASES, tmp, tmp, tmp), 0);
	ck_assert_msg(strstr(out, "not the table form"), "%s", out);
}
END_TEST

#if defined(__x86_64__)
START_TEST(colour_only_on_tty)
{
	char c[512];
	snprintf(c, sizeof(c), "%s run %s/cpython-3.13-fp-bytes.case", bin, "cases/x86_64");
	/* a pipe: no escape codes */
	sh(out, sizeof(out), "%s", c);
	ck_assert_msg(!strchr(out, '\033'), "escape codes on a pipe: %s", out);
	if (system("command -v script >/dev/null 2>&1")) {
		printf("colour_only_on_tty: SKIP the tty half: script(1) (bsdutils) is missing\n");
		return;
	}
	/* a tty (script(1)): colours, unless NO_COLOR is set */
	sh(out, sizeof(out), "env -u NO_COLOR TERM=xterm script -qec '%s' /dev/null", c);
	ck_assert_msg(strstr(out, "\033[32mmet"), "no colour on a tty: %s", out);
	sh(out, sizeof(out), "NO_COLOR=1 TERM=xterm script -qec '%s' /dev/null", c);
	ck_assert_msg(!strchr(out, '\033'), "NO_COLOR ignored: %s", out);
	/* the progress line: on a tty, only once a run passes a second, never on a
	 * pipe.  JU_SPIN_MS keeps each callee case 300 ms at its trap, so the run
	 * passes a second however fast the capture is (and the line shows while
	 * the batch captures) */
	ck_assert_msg(!strstr(out, "[1/"), "progress on a short run: %s", out);
	sh(out, sizeof(out), "JU_SPIN_MS=300 script -qec '%s run --unwinders fp cases/x86_64/c*.case >/dev/null' /dev/null",
	   bin);
	ck_assert_msg(strstr(out, "\r\033[K["), "no progress line on a tty: %s", out);
	sh(out, sizeof(out), "JU_SPIN_MS=300 %s run --unwinders fp cases/x86_64/c*.case 2>&1 >/dev/null", bin);
	ck_assert_msg(!strchr(out, '\r'), "progress on a pipe: %s", out);
}
END_TEST
#endif

START_TEST(help_explains_words)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --help", bin), 0);
	static const char *const words[] = {
		"met", "truncated", "skipped", "wrong", "duplicate", "error", "consistent", "fallback",
		"unfaithful", "name-lost", "!N", "end ", "no-unwind-info", "outside-snapshot",
		"bad-unwind-info", "max-frames", "no-progress", "unwinder-error", "r6 (bp)",
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		ck_assert_msg(strstr(out, words[i]), "run --help does not explain '%s'", words[i]);
}
END_TEST

START_TEST(version_matches_json)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s --version", bin), 0);
	char ver[64] = "";
	ck_assert_int_eq(sscanf(out, "jitunwind %63s", ver), 1);
	char j[512];
	snprintf(j, sizeof(j), "%s/r.json", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --json %s %s/%s", bin, j, REP_CASES, host_cases()->cpython), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "head -c 200 %s", j), 0);
	char want[128];
	snprintf(want, sizeof(want), "\"schema\":1,\"version\":\"%s\"", ver);
	ck_assert_msg(strstr(out, want), "want %s in %s", want, out);
}
END_TEST

#if defined(__x86_64__)
START_TEST(failure_names_symbols)
{
	/* a case whose CFA is off by 8 but claims ok: the first divergent frame is
	 * printed with perf's symbol next to each address */
	char p[512];
	snprintf(p, sizeof(p), "%s/liar8.case", tmp);
	write_file(p, "[case]\nname = liar8\narch = x86_64\nabout = CFA off by 8, claims ok\n"
		      "[code]\npush_fp\n.cfi_def_cfa_offset 24\n.cfi_offset %rbp, -16\nset_fp\n"
		      ".cfi_def_cfa_register %rbp\ncall_target\npop_fp\n.cfi_def_cfa %rsp, 8\nret\n"
		      "[unwind]\ncfi = directives\n[sample]\nat = every-insn\n"
		      "[expect]\nfp = ok; skipped at 0,1,7\nlibunwind = ok\nlibdw = ok\n"
		      "oracle = inconsistent; consistent at 0,7\n");
	ck_assert_int_eq(sh(out, sizeof(out), "NO_COLOR=1 %s run --unwinders fp,libunwind,libdw,oracle %s", bin, p), 1);
	ck_assert_msg(strstr(out, "FAIL liar8"), "output: %s", out);
	ck_assert_msg(strstr(out, "MISSED"), "output: %s", out);
	const char *t = strstr(out, ", truth 0x");
	ck_assert_msg(t, "no truth address: %s", out);
	t += strlen(", truth 0x");
	while (strchr("0123456789abcdef", *t))
		t++;
	ck_assert_msg(!strncmp(t, " (hx_", 5), "no symbol after the truth address: %.80s", t);
}
END_TEST
#endif

/* one full run of the case set writing every report (the reporters' tests share it) */
static char rep_dir[256];

static void run_all_reports(void)
{
	snprintf(rep_dir, sizeof(rep_dir), "%s", tmp);
	int rc = sh(out, sizeof(out), "%s run --json %s/r.json --junit %s/r.xml --html %s/r.html %s",
		    bin, tmp, tmp, tmp, REP_CASES);
	size_t n = strlen(out);
	if (rc != 0) {
		/* keep the reports of a failed run for a look (the fixture removes tmp) */
		char keep[512];
		snprintf(keep, sizeof(keep), "rm -rf /tmp/ju-report-failed && cp -r %s /tmp/ju-report-failed", tmp);
		if (system(keep) != 0)
			fprintf(stderr, "could not keep %s\n", tmp);
	}
	ck_assert_msg(rc == 0, "run exited %d (reports kept in /tmp/ju-report-failed): %.2500s ...%s", rc, out,
		      out + (n > 1500 ? n - 1500 : 0));
}

/* how many times needle occurs in the file */
static int count_in(const char *path, const char *needle)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "grep -o -- '%s' %s | wc -l", needle, path);
	sh(out, sizeof(out), "%s", buf);
	return atoi(out);
}

static void junit_checks(void)
{
	if (system("command -v xmllint >/dev/null 2>&1")) {
		printf("junit_validates: SKIP: xmllint (libxml2-utils) is missing\n");
		return;
	}
	ck_assert_msg(sh(out, sizeof(out), "xmllint --noout --schema tests/junit.xsd %s/r.xml", tmp) == 0,
		      "%s", out);
	/* a testcase per case and unwinder: as many as the JSON has (case, unwinder) pairs */
	char j[512], x[512];
	snprintf(j, sizeof(j), "%s/r.json", tmp);
	snprintf(x, sizeof(x), "%s/r.xml", tmp);
	int suites = count_in(x, "<testsuite ");
	int cases = count_in(j, "{\"name\":");
	ck_assert_int_eq(suites, cases);
	ck_assert_int_eq(sh(out, sizeof(out), "python3 -c 'import json,sys; r=json.load(open(\"%s\")); "
			    "print(sum(len(c[\"samples\"][0][\"unwinders\"]) for c in r[\"cases\"] if c[\"samples\"]))'", j), 0);
	ck_assert_int_eq(count_in(x, "<testcase "), atoi(out));
	ck_assert_int_eq(count_in(x, "<failure "), 0);
	/* control: the schema refuses a testcase without its name */
	ck_assert_int_eq(sh(out, sizeof(out), "sed '0,/<testcase classname=\"[^\"]*\" name=\"[^\"]*\"/s//<testcase/' %s "
			    "> %s/bad.xml && xmllint --noout --schema tests/junit.xsd %s/bad.xml", x, tmp, tmp) != 0, 1);
	ck_assert_msg(strstr(out, "'name' is required"), "%s", out);
}

static void html_checks(void)
{
	if (system("command -v chromium >/dev/null 2>&1")) {
		printf("html_renders: SKIP: chromium is missing (tools/install-deps installs it)\n");
		return;
	}
	/* no network: nothing in the file names a URL to fetch (links within the page only) */
	char h[512];
	snprintf(h, sizeof(h), "%s/r.html", tmp);
	ck_assert_int_eq(count_in(h, "src=\\|href=.[a-z/]\\|href=[a-z]\\|@import\\|url("), 0);
	/* the first case's first sample under the second unwinder opened, the
	 * filter "with a chain that is not ok" set, as the URL asks */
	const char *cell = "0:0:1";
	int rc = sh(out, sizeof(out), "timeout 120 chromium --headless --no-sandbox --disable-gpu "
		    "--disable-background-networking --disable-component-update --no-first-run "
		    "--user-data-dir=%s/chr --dump-dom 'file://%s/%s/r.html#cell=%s&f=nonok' 2>/dev/null >%s/dom.html",
		    tmp, tmp[0] == '/' ? "" : getenv("PWD"), tmp, cell, tmp);
	ck_assert_msg(rc == 0, "chromium: %s", out);
	rc = sh(out, sizeof(out), "python3 tests/html_dom_check.py %s/r.json %s/dom.html %s nonok", tmp, tmp, cell);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, " 0 problem(s)"));
	/* controls: the file as written (before its script ran) has no cells; a
	 * cell whose verdict is changed, an overview cell whose worst verdict is,
	 * the story moved to another case, a legend swatch out of its item and
	 * the other filter's expectation are each caught */
	ck_assert_int_ne(sh(out, sizeof(out), "python3 tests/html_dom_check.py %s/r.json %s/r.html %s", tmp, tmp, cell), 0);
	static const struct {
		const char *sed, *says;
	} bad[] = {
		{ "s/data-verdict=\"skipped\"/data-verdict=\"ok\"/", "cell says ok, JSON skipped" },
		{ "0,/data-worst=\"ok\"/s//data-worst=\"error\"/", "overview " },
		{ "s/<div id=\"detail\"/<\\/div><div class=\"case\" data-case=\"elsewhere\"><div id=\"detail\"/", "story: beside" },
		{ "0,/<span class=\"li\">/s///", "legend:" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_ne(sh(out, sizeof(out), "sed '%s' %s/dom.html >%s/bad.html && "
				    "python3 tests/html_dom_check.py %s/r.json %s/bad.html %s nonok",
				    bad[i].sed, tmp, tmp, tmp, tmp, cell), 0);
		ck_assert_msg(strstr(out, bad[i].says), "%s: %s", bad[i].sed, out);
	}
	ck_assert_int_ne(sh(out, sizeof(out), "python3 tests/html_dom_check.py %s/r.json %s/dom.html %s missed",
			    tmp, tmp, cell), 0);
	ck_assert_msg(strstr(out, "filter missed:"), "%s", out);
}

/* one run of the case set writes JSON, JUnit and HTML; each is read back */
START_TEST(junit_and_html)
{
	run_all_reports();
	junit_checks();
	html_checks();
}
END_TEST

START_TEST(tap_parses)
{
	if (system("perl -MTAP::Parser -e1 >/dev/null 2>&1")) {
		printf("tap_parses: SKIP: perl's TAP::Parser is missing\n");
		return;
	}
	static const char parse[] =
		"perl -MTAP::Parser -e '$p = TAP::Parser->new({ source => $ARGV[0] }); while ($p->next) {} "
		"printf \"plan=%s good=%d run=%d failed=%d skipped=%d\\n\", $p->plan, $p->is_good_plan, "
		"scalar $p->tests_run, scalar $p->failed, scalar $p->skipped'";
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --tap %s >%s/r.tap", bin, REP_CASES, tmp), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s %s/r.tap", parse, tmp), 0);
	int good = 0, run = 0, failed = -1;
	char *p = strstr(out, "good=");
	ck_assert_msg(p && sscanf(p, "good=%d run=%d failed=%d", &good, &run, &failed) == 3, "%s", out);
	ck_assert_msg(good == 1 && run > 0 && failed == 0, "%s", out);
	/* prove reads it the same way */
	ck_assert_msg(sh(out, sizeof(out), "prove --exec cat %s/r.tap", tmp) == 0, "%s", out);
#if defined(__x86_64__)
	/* control: a case that misses its [expect] is a "not ok" TAP counts */
	char c[512];
	snprintf(c, sizeof(c), "%s/liar.case", tmp);
	write_file(c, "[case]\nname = liar\narch = x86_64\nabout = CFA off by 8, claims consistent\n"
		      "[code]\npush_fp\n.cfi_def_cfa_offset 24\n.cfi_offset %rbp, -16\nset_fp\n"
		      ".cfi_def_cfa_register %rbp\ncall_target\npop_fp\n.cfi_def_cfa %rsp, 8\nret\n"
		      "[unwind]\ncfi = directives\n[sample]\nat = every-insn\n"
		      "[expect]\nfp = ok; skipped at 0,1,7\nlibunwind = ok\nlibdw = ok\noracle = consistent\n");
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders %s --tap %s >%s/bad.tap", bin, CFI4, c, tmp), 1);
	ck_assert_int_eq(sh(out, sizeof(out), "%s %s/bad.tap", parse, tmp), 0);
	ck_assert_msg(strstr(out, "good=1 run=4 failed=3"), "%s", out);
	ck_assert_int_ne(sh(out, sizeof(out), "prove --exec cat %s/bad.tap", tmp), 0);
	/* and JUnit says the same: 3 failures, still valid */
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders %s --junit %s/bad.xml %s", bin, CFI4, tmp, c), 1);
	snprintf(c, sizeof(c), "%s/bad.xml", tmp);
	ck_assert_int_eq(count_in(c, "<failure "), 3);
	if (!system("command -v xmllint >/dev/null 2>&1"))
		ck_assert_msg(sh(out, sizeof(out), "xmllint --noout --schema tests/junit.xsd %s", c) == 0, "%s", out);
#endif
}
END_TEST

/* observe --write on every case of the arch with its [expect] keys removed:
 * the cases pass again with the same expectation everywhere (the script's
 * own control: a flipped verdict fails) */
START_TEST(observe_roundtrip)
{
	int rc = sh(out, sizeof(out), "python3 tests/observe_roundtrip.py '%s' %s %s", bin, REP_CASES, tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, " 0 problem(s)"), "%s", out);
	/* without --observe a case with no [expect] is still refused */
	char p[512];
	snprintf(p, sizeof(p), "%s/observe", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "for f in %s/*.case; do sed '/^\\[expect\\]/,$d' $f > %s/noexp.case; break; done; "
			    "%s run %s/noexp.case", p, tmp, bin, tmp), 2);
	ck_assert_msg(strstr(out, "missing [expect]"), "%s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --observe %s/noexp.case", bin, tmp), 0);
	ck_assert_msg(strstr(out, "[expect]\n") && strstr(out, "sample points"), "%s", out);
}
END_TEST

#if defined(__x86_64__)
/* explain at CPython's ret: the emitted row (from the case's FDE bytes) still
 * saves bp, the generator's truth row does not; every unwinder's story */
START_TEST(explain_ret)
{
	const char *c = "cases/x86_64/cpython-3.13-fp-bytes.case";
	ck_assert_int_eq(sh(out, sizeof(out), "%s explain %s 7", bin, c), 0);
	static const char *const want[] = {
		"at tramp+0x7, perf current, stack 8192", "instruction: ret", "bp=0x", "sp=0x",
		"emitted CFI row: CFA=sp+8 bp=[CFA-16] ra=[CFA-8]", "true row:        CFA=sp+8 ra=[CFA-8]",
		"emitted only: bp=[CFA-16]", "\nfp: skipped", "\nlibunwind: truncated", "\nlibdw: truncated",
		"\noracle: truncated (inconsistent)", "CFA register r6 (bp) unknown",
		"first divergent frame: #2", "(hx_anchor)",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(out, want[i]), "no '%s' in:\n%s", want[i], out);
	/* tramp+0x7 names the same point */
	ck_assert_int_eq(sh(out, sizeof(out), "%s explain %s tramp+0x7 | grep -c '^== '", bin, c), 0);
	ck_assert_int_eq(atoi(out), 1);
	/* control: where the rows agree (the call) no difference is claimed */
	ck_assert_int_eq(sh(out, sizeof(out), "%s explain %s 4", bin, c), 0);
	ck_assert_msg(strstr(out, "true row:        CFA=bp+16") && !strstr(out, "rows differ"), "%s", out);
	/* bad input: a point with no sample lists the points, exit 2 */
	ck_assert_int_eq(sh(out, sizeof(out), "%s explain %s 3", bin, c), 2);
	ck_assert_msg(strstr(out, "no sample at '3' (sample points: tramp+0x0"), "%s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s explain %s", bin, c), 2);
	/* observe says the same in its plain words: at the ret the rows disagree on bp */
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders %s --observe %s", bin, CFI4, c), 0);
	ck_assert_msg(strstr(out, "perf (libunwind, current, stack 8192) unwinds through this code at 5 of 6 sample points:\n"
			      "    at tramp+0x7 (ret): truncated; the chain stops: outside-snapshot"), "%s", out);
	ck_assert_msg(strstr(out, "where the code's is CFA=sp+8 ra=[CFA-8] (emitted only: bp=[CFA-16])"), "%s", out);
	/* and only there: the one sample the rows differ at is named once per CFI user (libunwind, libdw, oracle) */
	int n = 0;
	for (const char *p = out; (p = strstr(p, "emitted only:")); p++)
		n++;
	ck_assert_int_eq(n, 3);
}
END_TEST
#endif

/* make install into a staging DESTDIR: the binary, every arch's cases and
 * the man page; the staged binary run from / finds the installed cases (a
 * lone copy of it, with no share/ beside it, does not: the control) */
START_TEST(install_finds_cases)
{
	if (strchr(bin, ' ')) {
		printf("install_finds_cases: SKIP: the binary runs under an emulator (%s)\n", bin);
		return;
	}
	int rc = sh(out, sizeof(out), "make --no-print-directory install DESTDIR=%s/stage PREFIX=/usr", tmp);
	ck_assert_msg(rc == 0, "%s", out);
	char st[512];
	snprintf(st, sizeof(st), "%s/stage/usr", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "test -x %s/bin/jitunwind && test -f %s/share/man/man1/jitunwind.1", st, st), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "ls %s/share/jitunwind/cases/%s | wc -l; ls %s | wc -l", st,
			    host_facts()->name, REP_CASES), 0);
	int a = 0, b = 0;
	ck_assert_int_eq(sscanf(out, "%d %d", &a, &b), 2);
	ck_assert_int_eq(a, b);
	ck_assert_int_gt(a, 0);
	/* the man page renders without a warning (groff is not in the roots' packages) */
	if (system("command -v groff >/dev/null 2>&1")) {
		printf("install_finds_cases: SKIP the man page's rendering: groff is missing\n");
	} else {
		ck_assert_int_eq(sh(out, sizeof(out), "groff -man -Tutf8 -ww -z %s/share/man/man1/jitunwind.1", st), 0);
		ck_assert_msg(!out[0], "groff: %s", out);
	}
	ck_assert_int_eq(sh(out, sizeof(out), "cd / && %s/bin/jitunwind list | wc -l", st), 0);
	ck_assert_int_eq(atoi(out), a);
	ck_assert_int_eq(sh(out, sizeof(out), "mkdir %s/lone && cp %s/bin/jitunwind %s/lone/ && cd / && %s/lone/jitunwind list",
			    tmp, st, tmp, tmp), 2);
}
END_TEST

#if defined(__aarch64__)
/* The signed return addresses (lr-step's second frame at every sample of a
 * PAC case) of a run with a short and with a 3000-byte environment: the
 * capture starts at a fixed depth below the stack's top, so they are equal;
 * JU_STACK_PAD=0 (the control) leaves SP where the environment puts it, and
 * the signatures, whose modifier SP is, differ. */
static void signed_ras(char *dst, size_t n, const char *env)
{
	char j[512];
	snprintf(j, sizeof(j), "%s/pac.json", tmp);
	/* 1 allowed for the control: an unpadded run may leave the case's [expect] */
	int rc = sh(out, sizeof(out), "env %s %s run --json %s cases/aarch64/hybrid-pac-nofp-leaf-none.case", env, bin, j);
	ck_assert_msg(rc == 0 || (rc == 1 && strstr(env, "JU_STACK_PAD=0")), "run exited %d: %s", rc, out);
	ck_assert_int_eq(sh(out, sizeof(out), "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); "
			    "print(\" \".join(s[\"unwinders\"][\"lr-step\"][\"frames\"][1] for s in r[\"cases\"][0][\"samples\"]))' %s", j), 0);
	ck_assert_msg(strstr(out, "0x"), "no frames: %s", out);
	snprintf(dst, n, "%s", out);
}

/* Whether two lists of signed return addresses name the same addresses once the PAC
 * field (the bits above the 48-bit VA) is stripped: only then can their signatures be
 * compared for the stack pointer's part in them. */
static bool same_addresses(const char *a, const char *b)
{
	for (int i = 0; i < 4096; i++) {
		char *ea, *eb;
		unsigned long long x = strtoull(a, &ea, 16), y = strtoull(b, &eb, 16);
		if (ea == a || eb == b)
			return ea == a && eb == b;
		if ((x & 0xffffffffffffULL) != (y & 0xffffffffffffULL))
			return false;
		a = ea;
		b = eb;
	}
	return false;
}

START_TEST(pac_same_in_any_env)
{
	static char a[8192], b[8192];
	/* the keys are seeded under qemu-user (QEMU_RAND_SEED); on arm64 hardware the kernel
	 * gives every process keys of its own, so two runs never sign alike */
	if (!strstr(bin, "qemu-")) {
		printf("pac_same_in_any_env: SKIP: not under qemu-user (on hardware each process has its own PAC keys)\n");
		return;
	}
	char big[3100];
	memset(big, 'x', 3000);
	big[3000] = 0;
	char env[3200];
	snprintf(env, sizeof(env), "JU_PAD_TEST=%s", big);
	signed_ras(a, sizeof(a), "JU_PAD_TEST=x");
	signed_ras(b, sizeof(b), env);
	/* qemu-user 10 (Debian 13) places the binary by the environment's size even with the
	 * address space not randomized: a signature follows the address signed, so the stack
	 * pointer's part cannot be seen apart there */
	if (!same_addresses(a, b)) {
		printf("pac_same_in_any_env: SKIP: this qemu-user loads the binary at an address that follows the "
		       "environment's size (%.40s... vs %.40s...)\n", a, b);
		return;
	}
	ck_assert_msg(!strcmp(a, b), "the signatures follow the environment:\n%s\n%s", a, b);
	signed_ras(a, sizeof(a), "JU_STACK_PAD=0 JU_PAD_TEST=x");
	snprintf(env, sizeof(env), "JU_STACK_PAD=0 JU_PAD_TEST=%s", big);
	signed_ras(b, sizeof(b), env);
	ck_assert_msg(strcmp(a, b), "the control: without the pad the signatures did not move:\n%s", a);
}
END_TEST
#endif

Suite *suite_report(void);
Suite *suite_report(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("terminal");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, matrix_fits_columns);
	tcase_add_test(tc, help_explains_words);
	tcase_add_test(tc, version_matches_json);
	tcase_add_test(tc, junit_and_html);
	tcase_add_test(tc, tap_parses);
	tcase_add_test(tc, observe_roundtrip);
	tcase_add_test(tc, install_finds_cases);
#if defined(__aarch64__)
	tcase_add_test(tc, pac_same_in_any_env);
#endif
#if defined(__x86_64__)
	tcase_add_test(tc, colour_only_on_tty);
	tcase_add_test(tc, failure_names_symbols);
	tcase_add_test(tc, explain_ret);
#endif
	suite_add_tcase(s, tc);
	return s;
}
