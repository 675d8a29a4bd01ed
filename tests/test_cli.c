/* The CLI end to end: exit codes, messages naming file and line/offset,
 * record/replay round trip, a lying case caught, malformed inputs. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char bin[1024];
static char tmp[256];

/* the host arch's cases (the aarch64 build runs natively or under qemu-aarch64) */
#include "tests/hostarch.h"

#define CLI_CASES (host_cases()->dir)
/* cases/<arch>/<name> of the host's arch */
static const char *cli_case(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", CLI_CASES, name);
	return buf;
}
#define CLI_CASE cli_case((char[256]){ 0 }, 256, host_cases()->cpython)
#define CLI_LEFTOVER_CASE cli_case((char[256]){ 0 }, 256, host_cases()->leftover)

static void setup(void)
{
	const char *b = getenv("JU_BIN");
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/jutest-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* run a shell command, capture stdout+stderr, return the exit code */
static int sh(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[4096];
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

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static char out[1 << 16];

START_TEST(help_and_usage)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s --help", bin), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --help", bin), 0);
	ck_assert_ptr_nonnull(strstr(out, "--unwinders"));
	/* the help lists every unwinder of the registry, with its default arches */
	ck_assert_msg(strstr(out, "lr-step-dw") && strstr(out, "(default on aarch64)") && strstr(out, "libdw "),
		      "output: %s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s frobnicate", bin), 2);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders nope", bin), 2);
	ck_assert_ptr_nonnull(strstr(out, "unknown unwinder 'nope'"));
	ck_assert_int_eq(sh(out, sizeof(out), "%s record %s", bin, CLI_CASES), 2);
	/* an empty list: a message, not a silent exit 2 */
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders '' %s", bin, CLI_CASE), 2);
	ck_assert_msg(strstr(out, "--unwinders: '' names no unwinder (known: fp,"), "output: %s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders fp,fp %s", bin, CLI_CASE), 2);
	ck_assert_msg(strstr(out, "names 'fp' twice"), "output: %s", out);
}
END_TEST

/* two cases with one name would share a samples file: exit 2 naming both */
START_TEST(duplicate_case_names_exit2)
{
	char a[512], b[512];
	snprintf(a, sizeof(a), "%s/a.case", tmp);
	snprintf(b, sizeof(b), "%s/b.case", tmp);
	static const char *const text = "[case]\nname = same\narch = x86_64\nabout = x\n[code]\nret\n"
					"[sample]\nat = every-insn\n[expect]\nfp = ok\nlibunwind = ok\nlibdw = ok\noracle = consistent\n";
	write_file(a, text);
	write_file(b, text);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run %s", bin, tmp), 2);
	char want[1200];
	snprintf(want, sizeof(want), "%s and %s both name their case 'same'", a, b);
	ck_assert_msg(strstr(out, want), "output: %s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s list %s", bin, tmp), 2);
	ck_assert_msg(strstr(out, want), "output: %s", out);
	/* a second name makes the run valid again: the check is on the name */
	write_file(b, "[case]\nname = other\narch = x86_64\nabout = x\n[code]\nret\n"
		      "[sample]\nat = every-insn\n[expect]\nfp = ok\n");
	ck_assert_int_eq(sh(out, sizeof(out), "%s list %s", bin, tmp), 0);
}
END_TEST

/* a bad expectation stops the run before anything is captured */
START_TEST(bad_expectation_exit2)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/badx.case", tmp);
	write_file(p, "[case]\nname = badx\narch = x86_64\nabout = x\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
		      "[sample]\nat = every-insn\n[expect]\nfp = ok\nlibdwarf = ok\n");
	ck_assert_int_eq(sh(out, sizeof(out), "%s run %s", bin, p), 2);
	char want[700];
	snprintf(want, sizeof(want), "%s:15: no unwinder 'libdwarf'", p);
	ck_assert_msg(strstr(out, want), "output: %s", out);
}
END_TEST

START_TEST(malformed_case_exit2)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/bad.case", tmp);
	write_file(p, "[case]\nname = bad\narch = x86_64\nabout = x\n[code]\npush_fp\nfrobnicate\n");
	ck_assert_int_eq(sh(out, sizeof(out), "%s run %s", bin, p), 2);
	char want[600];
	snprintf(want, sizeof(want), "%s:7: unknown op 'frobnicate'", p);
	ck_assert_msg(strstr(out, want), "output: %s", out);
}
END_TEST

#if defined(__x86_64__)   /* the liar's code and CFI are x86_64's */
/* A case whose CFI is wrong but whose [expect] claims all is well: run exits 1
 * and names the offset and the instruction. */
START_TEST(lying_case_fails)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/liar.case", tmp);
	write_file(p, "[case]\nname = liar\narch = x86_64\nabout = CFI off by 8, expectations claim consistent\n"
		      "[code]\npush_fp\n.cfi_def_cfa_offset 24\n.cfi_offset %rbp, -16\nset_fp\n.cfi_def_cfa_register %rbp\n"
		      "call_target\npop_fp\n.cfi_def_cfa %rsp, 8\nret\n"
		      "[unwind]\ncfi = directives\n[sample]\nat = every-insn\n"
		      "[expect]\nfp = ok; skipped at 0,1,7\noracle = consistent\n");
	ck_assert_int_eq(sh(out, sizeof(out), "%s run %s", bin, p), 1);
	ck_assert_msg(strstr(out, "FAIL liar"), "output: %s", out);
	ck_assert_msg(strstr(out, "tramp+0x1 (mov %rsp,%rbp) oracle: expected consistent, got inconsistent"),
		      "output: %s", out);
}
END_TEST
#endif

START_TEST(record_replay_roundtrip)
{
	char s[512], j1[512], j2[512];
	snprintf(s, sizeof(s), "%s/s.bin", tmp);
	snprintf(j1, sizeof(j1), "%s/run.json", tmp);
	snprintf(j2, sizeof(j2), "%s/replay.json", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s record -o %s --jitdump-dir %s/dumps %s",
			    bin, s, tmp, CLI_CASE), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay --json %s %s", bin, j2, s), 0);
	ck_assert_msg(strstr(out, "1 passed, 0 failed"), "output: %s", out);
	/* truncating the samples file: exit 2 naming the file and an offset */
	struct stat st;
	ck_assert_int_eq(stat(s, &st), 0);
	ck_assert_int_eq(truncate(s, st.st_size - 100), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 2);
	ck_assert_msg(strstr(out, s) && strstr(out, "offset 0x"), "output: %s", out);
	/* garbage: exit 2 with the expected magic named */
	write_file(s, "hello");
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 2);
	ck_assert_msg(strstr(out, "JUSAMPLE"), "output: %s", out);
}
END_TEST

/* malformed jitdumps behind a samples file: exit 2, file + offset, no crash */
START_TEST(malformed_jitdump_exit2)
{
	char s[512], dir[512];
	snprintf(s, sizeof(s), "%s/s.bin", tmp);
	snprintf(dir, sizeof(dir), "%s/dumps", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s record -o %s --jitdump-dir %s %s",
			    bin, s, dir, CLI_CASE), 0);
	char dump[600];
	ck_assert_int_eq(sh(dump, sizeof(dump), "ls %s/jit-*.dump | head -1 | tr -d '\\n'", dir), 0);
	struct stat st;
	ck_assert_int_eq(stat(dump, &st), 0);
	/* (1) truncated in the middle of the last record */
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cp %s %s.orig", dump, dump);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(truncate(dump, st.st_size - 3), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 2);
	ck_assert_msg(strstr(out, dump) && strstr(out, "offset 0x"), "output: %s", out);
	/* (2) first record's total_size past the end of the file */
	snprintf(cmd, sizeof(cmd), "cp %s.orig %s && printf '\\377\\377\\377\\177' | dd of=%s bs=1 seek=44 conv=notrunc status=none",
		 dump, dump, dump);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 2);
	ck_assert_msg(strstr(out, "runs past the end"), "output: %s", out);
	/* (3) bad magic */
	snprintf(cmd, sizeof(cmd), "cp %s.orig %s && printf 'XXXX' | dd of=%s bs=1 seek=0 conv=notrunc status=none",
		 dump, dump, dump);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 2);
	ck_assert_msg(strstr(out, "bad magic"), "output: %s", out);
}
END_TEST

#if defined(__x86_64__)
static char json[1 << 20];

static void read_json(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = 0;
	fclose(f);
}

/* Ubuntu's 5.x perf: the trampoline's name is lost; current perf names it */
START_TEST(profile_names)
{
	char j[512];
	snprintf(j, sizeof(j), "%s/p.json", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --perf-profile 5.x-0x40 --json %s cases/x86_64/cpython-3.13-fp.case",
			    bin, j), 0);
	read_json(j);
	ck_assert_msg(strstr(json, "\"profile\":\"5.x-0x40\""), "%.300s", json);
	ck_assert_msg(strstr(json, "\"symbols\":[null,"), "no lost name in %.300s", json);
	ck_assert_msg(strstr(json, "\"name_lost\":true"), "no name_lost");
	ck_assert_msg(!strstr(json, "\"symbols\":[\"tramp\""), "tramp named under 5.x-0x40");
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --perf-profile current --json %s cases/x86_64/cpython-3.13-fp.case",
			    bin, j), 0);
	read_json(j);
	ck_assert_msg(strstr(json, "\"symbols\":[\"tramp\""), "tramp not named under current");
	ck_assert_msg(!strstr(json, "\"name_lost\":true"), "a name lost under current");
}
END_TEST

/* perf >= 6.8's libdw path uses jitted unwinding info only under /tmp/jitted-:
 * with the dump taken to be elsewhere, libdw loses the JIT frames */
START_TEST(perf_dump_dir_matters)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --unwinders libdw cases/x86_64/cpython-3.12-nofp.case", bin), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --perf-dump-dir /var/tmp --unwinders libdw cases/x86_64/cpython-3.12-nofp.case",
			    bin), 1);
	ck_assert_msg(strstr(out, "libdw: expected ok, got error"), "%s", out);
}
END_TEST

/* stack-deep: the verdicts differ between perf's default dump and the maximum */
START_TEST(stack_sizes_differ)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --stack-size 8192 --unwinders libunwind cases/x86_64/stack-deep.case", bin), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --stack-size 65528 --unwinders libunwind cases/x86_64/stack-deep.case", bin), 0);
	ck_assert_msg(strstr(out, "ok5"), "%s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --stack-size 1001 cases/x86_64/stack-deep.case", bin), 2);
}
END_TEST
#endif

#if defined(__x86_64__)
/* A CIE pointer out of range inside the unwinding info is the JIT's bug, not
 * bad input: the jitdump still reads, so replay judges it (exit 1, the case
 * fails) and names the jitdump offset and the problem; never a crash. */
START_TEST(bad_cie_pointer_judged)
{
	char s[512], dir[512], dump[600], cmd[1400];
	snprintf(s, sizeof(s), "%s/s.bin", tmp);
	snprintf(dir, sizeof(dir), "%s/dumps", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s record -o %s --jitdump-dir %s cases/x86_64/cpython-3.12-nofp.case",
			    bin, s, dir), 0);
	ck_assert_int_eq(sh(dump, sizeof(dump), "ls %s/jit-*.dump | head -1 | tr -d '\\n'", dir), 0);
	/* header 40 + UNWINDING_INFO fixed 40 = .eh_frame at 0x50; the CIE is 24
	 * bytes, so the FDE's CIE pointer sits at 0x50 + 0x1c */
	snprintf(cmd, sizeof(cmd), "printf '\\377\\377\\377\\177' | dd of=%s bs=1 seek=%d conv=notrunc status=none",
		 dump, 0x50 + 0x1c);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s replay %s", bin, s), 1);
	ck_assert_msg(strstr(out, "CIE pointer") && strstr(out, "jitdump+0x28"), "output: %s", out);
}
END_TEST
#endif

/* A verdict never depends on leftover stack bytes: eh-frame-unaligned's wrong
 * CFI makes libunwind and libdw read a slot the trampoline allocates but never
 * writes.  Planted leftovers (zeros, or words pointing into the stack as Debian
 * 13's glibc leaves them) must give the same verdicts, and the case must pass. */
START_TEST(leftover_stack_irrelevant)
{
	static char first[1 << 16];
	ck_assert_int_eq(sh(first, sizeof(first), "JU_STACK_LEFTOVER=zero %s run %s", bin, CLI_LEFTOVER_CASE), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "JU_STACK_LEFTOVER=self %s run %s", bin, CLI_LEFTOVER_CASE), 0);
	/* the verdict counts per unwinder: the table's first two lines */
	char *a = strchr(strchr(first, '\n') + 1, '\n'), *b = strchr(strchr(out, '\n') + 1, '\n');
	ck_assert(a && b);
	*a = *b = 0;
	ck_assert_str_eq(first, out);
}
END_TEST

/* Breakpoints restored through /proc/self/mem or by tr_patch's mprotect pair
 * (JU_PATCH=mprotect): the same verdict counts for every unwinder of every
 * case, and the same skip reasons (the run's time, this run's randomized
 * addresses and pids left out, and where the text wraps: the goldens compare frames). */
START_TEST(patch_ways_agree)
{
	static char direct[1 << 17];
	/* whitespace squeezed: a why line wraps where its randomized address's
	 * width puts the break (a flake in the trixie-arm64 leg) */
	const char *strip = " | sed -E 's/\\([0-9.]* s\\)//; s/0x[0-9a-f]{6,}//g; s/jitted-[0-9]+-[0-9]+/jitted/g'"
			    " | tr -s '[:space:]' ' '";
	ck_assert_int_eq(sh(direct, sizeof(direct), "%s run --unwinders fp,libunwind,libdw,oracle %s%s", bin, CLI_CASES, strip), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "JU_PATCH=mprotect %s run --unwinders fp,libunwind,libdw,oracle %s%s", bin, CLI_CASES, strip), 0);
	ck_assert_msg(strstr(direct, "passed") && strlen(direct) > 1000, "output: %s", direct);
	size_t i = 0;
	while (direct[i] && direct[i] == out[i])
		i++;
	ck_assert_msg(!direct[i] && !out[i], "the two ways part at byte %zu: \"%.80s\" vs \"%.80s\"", i,
		      direct + i, out + i);
}
END_TEST

START_TEST(list_cases)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s list cases/x86_64", bin), 0);
	ck_assert_ptr_nonnull(strstr(out, "cpython-3.13-fp "));
	ck_assert_ptr_nonnull(strstr(out, "neg-rows-shifted"));
	ck_assert_int_eq(sh(out, sizeof(out), "%s list cases/aarch64", bin), 0);
	ck_assert_ptr_nonnull(strstr(out, "jit-leaf-frameless"));
}
END_TEST

#if defined(__x86_64__)
/* The perf column: a --perf that names no program fails the run (exit 2,
 * tests/perf_skip_test.py has the rest); a perf that prints no chain (a
 * fake standing for a broken perf) fails the case (negative control: the
 * column cannot pass without real chains). */
START_TEST(perf_column_skip_and_broken)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --perf %s/no-such-perf %s", bin, tmp, CLI_CASE), 2);
	ck_assert_msg(strstr(out, "--perf:") && strstr(out, "no-such-perf"), "output: %s", out);
	char fake[512], text[1024];
	snprintf(fake, sizeof(fake), "%s/fakeperf", tmp);
	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "case \"$*\" in *version*) printf 'perf version 6.1.0\\n  libunwind: [ on  ]\\n'; exit 0;; esac\n"
		 "case \"$*\" in *inject*) touch %s/injected; exit 0;; esac\n"
		 "exit 0\n", tmp);
	write_file(fake, text);
	ck_assert_int_eq(chmod(fake, 0755), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --perf %s --unwinders libunwind,perf %s", bin, fake, CLI_CASE), 1);
	ck_assert_msg(strstr(out, "perf printed no chain"), "output: %s", out);
	char inj[512];
	snprintf(inj, sizeof(inj), "%s/injected", tmp);
	ck_assert_int_eq(access(inj, F_OK), 0);
}
END_TEST
#endif

Suite *suite_cli(void);
Suite *suite_cli(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_and_usage);
	tcase_add_test(tc, malformed_case_exit2);
	tcase_add_test(tc, duplicate_case_names_exit2);
	tcase_add_test(tc, bad_expectation_exit2);
#if defined(__x86_64__)
	tcase_add_test(tc, lying_case_fails);
#endif
	tcase_add_test(tc, record_replay_roundtrip);
	tcase_add_test(tc, malformed_jitdump_exit2);
	tcase_add_test(tc, patch_ways_agree);
	tcase_add_test(tc, list_cases);
	tcase_add_test(tc, leftover_stack_irrelevant);
#if defined(__x86_64__)
	tcase_add_test(tc, profile_names);
	tcase_add_test(tc, bad_cie_pointer_judged);
	tcase_add_test(tc, stack_sizes_differ);
	tcase_add_test(tc, perf_dump_dir_matters);
#if defined(__x86_64__)
	tcase_add_test(tc, perf_column_skip_and_broken);
#endif
#endif
	suite_add_tcase(s, tc);
	return s;
}
