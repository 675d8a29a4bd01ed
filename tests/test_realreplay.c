/* `jitunwind replay FILE.data` on a perf.data jitunwind writes itself
 * (record --perf-data, on this build's arch), checked against the samples
 * file the same run wrote: every sample counted, the JIT ones found from
 * the functions' own addresses; exit codes; malformed files (exit 2, file
 * and offset). */
#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/capture/samples.h"
#include "unwinders/uwarch.h"

#include "tests/hostarch.h"
#include "tests/sh.h"

#define RR_CASES (host_cases()->dir)
#define RR_ONE (host_cases()->cpython)


static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static long json_num(const char *j, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(j, k);
	ck_assert_msg(p, "no %s in the JSON", key);
	return strtol(p + strlen(k), NULL, 10);
}

/* sum of one column's outcome over every pc of the JSON */
static long json_outcome(const char *j, const char *col, const char *out)
{
	char k[64];
	long sum = 0;
	snprintf(k, sizeof(k), "\"%s\":{", col);
	for (const char *p = strstr(j, k); p; p = strstr(p + 1, k)) {
		char o[64];
		snprintf(o, sizeof(o), "\"%s\":", out);
		const char *q = strstr(p, o), *end = strchr(p, '}');
		if (q && end && q < end)
			sum += strtol(q + strlen(o), NULL, 10);
	}
	return sum;
}

static const char *bin(void)
{
	const char *b = getenv("JU_BIN");
	return b ? b : "./jitunwind";
}

static char tmp[64];

/* The recording of two cases, their jitdumps in dumpdir (NULL: tmp). */
static void record_dumps(const char *dumpdir)
{
	snprintf(tmp, sizeof(tmp), "/tmp/jutest-rr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --perf-data %s/p.data %s/%s %s/nested-depth3.case "
			    ">%s/log 2>&1", bin(), tmp, dumpdir ? dumpdir : tmp, tmp, RR_CASES, RR_ONE, RR_CASES, tmp),
			 0);
}

static void record(void)
{
	record_dumps(NULL);
}

/* Removes the jitdumps of the recording in tmp, the perf maps the JIT side
 * wrote and the jitted .so files perf inject wrote next to them (record_dumps with a directory of its own). */
static void remove_dumps(void)
{
	char path[160], err[256];
	snprintf(path, sizeof(path), "%s/s.bin", tmp);
	struct hx_samples s;
	if (hx_samples_read(&s, path, err, sizeof(err)))
		return;
	for (size_t g = 0; g < s.ngroups; g++) {
		const char *d = s.groups[g].dump_path, *b = d ? strrchr(d, '/') : NULL;
		int pid = 0;
		if (!b || sscanf(b, "/jit-%d.dump", &pid) != 1 || pid <= 0)
			continue;
		sh("rm -f %s %.*s/perf-%d.map %.*s/jitted-%d-*.so", d, (int)(b - d), d, pid, (int)(b - d), d, pid);
	}
	hx_samples_free(&s);
}

START_TEST(replays_own_recording)
{
	record();
	char path[128], err[512];
	snprintf(path, sizeof(path), "%s/s.bin", tmp);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, path, err, sizeof(err)) == 0, "%s", err);
	long want = 0, jit = 0, under = 0;
	for (size_t g = 0; g < s.ngroups; g++)
		for (size_t i = 0; i < s.groups[g].nsamples; i++) {
			const struct hx_sample *x = &s.groups[g].samples[i];
			want++;
			/* the truth chain: the pc, then return addresses */
			for (uint32_t t = 0; t < x->ntruth; t++) {
				uint64_t a = x->truth[t] - (t ? 1 : 0);
				bool in = false;
				for (uint32_t f = 0; f < s.groups[g].nfuncs; f++)
					in |= a >= s.groups[g].funcs[f].addr && a < s.groups[g].funcs[f].addr + s.groups[g].funcs[f].size;
				if (in) {
					*(t ? &under : &jit) += 1;
					break;
				}
			}
		}
	hx_samples_free(&s);
	ck_assert_int_gt(jit, 0);
	int rc = sh("%s replay --json %s/r.json %s/p.data >%s/out 2>&1", bin(), tmp, tmp, tmp);
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	const char *j = slurp(path);
	ck_assert_msg(j, "no JSON (exit %d)", rc);
	char want_arch[64];
	snprintf(want_arch, sizeof(want_arch), "\"arch\":\"%s\"", host_facts()->name);
	ck_assert_ptr_nonnull(strstr(j, want_arch));
	ck_assert_int_eq(json_num(j, "samples"), want);
	ck_assert_int_eq(json_num(j, "jit_samples"), jit);
	/* a pc in C under a trampoline frame (the truth says so) */
	ck_assert_int_eq(json_num(j, "under_jit_samples"), under);
	/* per pc, every JIT sample once in every column */
	const char *cols[] = { "fp", "libunwind", "libdw", "oracle" };
	for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
		ck_assert_int_eq(json_outcome(j, cols[c], "full") + json_outcome(j, cols[c], "truncated") +
				 json_outcome(j, cols[c], "fallback") + json_outcome(j, cols[c], "name-lost"), jit + under);
	/* the run of these cases finds every oracle chain consistent with the
	 * truth into the C caller: the replay must reach it from every JIT pc */
	ck_assert_int_eq(json_outcome(j, "oracle", "full"), jit + under);
	/* 1 exactly when some chains differ */
	ck_assert_int_eq(rc, json_num(j, "diverging") ? 1 : 0);
	/* one column cannot disagree with itself: 0 */
	ck_assert_int_eq(sh("%s replay --unwinders oracle %s/p.data >/dev/null 2>&1", bin(), tmp), 0);
	sh("rm -rf %s", tmp);
}
END_TEST

/* a file cut short, a byte-swapped magic, a data section past the end and a
 * missing --jitdump: exit 2, the file named, the offset given */
START_TEST(malformed)
{
	record();
	char log[128];
	snprintf(log, sizeof(log), "%s/err", tmp);
	static const char *const want[] = { "offset 0x", "offset 0x0", "offset 0x" };
	const char *e;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int mk = i == 0 ? sh("head -c 100 %s/p.data > %s/b.data", tmp, tmp)
		       : i == 1 ? sh("cp %s/p.data %s/b.data && printf 2ELIFREP | dd of=%s/b.data conv=notrunc 2>/dev/null",
				     tmp, tmp, tmp)
		       : sh("f=%s/p.data; head -c $(($(stat -c %%s $f) - 3000)) $f > %s/b.data", tmp, tmp);
		ck_assert_int_eq(mk, 0);
		int rc = sh("%s replay %s/b.data >/dev/null 2>%s", bin(), tmp, log);
		e = slurp(log);
		ck_assert_msg(rc == 2, "case %zu: exit %d: %s", i, rc, e);
		ck_assert_msg(strstr(e, "b.data") && strstr(e, want[i]), "case %zu: %s", i, e);
	}
	/* a zero header (what perf inject leaves when it refuses a dump) and a
	 * text file, with and without a FILE.data option: what the file is not */
	ck_assert_int_eq(sh("head -c 4096 /dev/zero > %s/z.data && echo hello world > %s/t.data", tmp, tmp), 0);
	static const char *const notpd[][2] = { { "z.data", "" }, { "z.data", "--symfs / " }, { "t.data", "" },
						{ "t.data", "--no-perf " } };
	for (size_t i = 0; i < sizeof(notpd) / sizeof(notpd[0]); i++) {
		int rc = sh("%s replay %s%s/%s >/dev/null 2>%s", bin(), notpd[i][1], tmp, notpd[i][0], log);
		e = slurp(log);
		ck_assert_msg(rc == 2 && strstr(e, notpd[i][0]) && strstr(e, "not a perf.data file (") &&
			      !strstr(e, "unrecognized"), "%s%s: exit %d: %s", notpd[i][1], notpd[i][0], rc, e);
	}
	ck_assert_ptr_nonnull(strstr(slurp(log), "magic \"hello"));
	ck_assert_int_eq(sh("%s replay %s/z.data >/dev/null 2>%s", bin(), tmp, log), 2);
	ck_assert_ptr_nonnull(strstr(slurp(log), "zero header"));
	ck_assert_int_eq(sh("%s replay --jitdump %s/none.dump %s/p.data >/dev/null 2>%s", bin(), tmp, tmp, log), 2);
	ck_assert_ptr_nonnull(strstr(slurp(log), "none.dump"));
	ck_assert_int_eq(sh("%s replay --unwinders nosuch %s/p.data >/dev/null 2>/dev/null", bin(), tmp), 2);
	/* a perf map (read under --symfs) that is not "START SIZE NAME": its file and line */
	ck_assert_int_eq(sh("cd %s && d=$(ls jit-*.dump | head -1) && pid=${d#jit-} && pid=${pid%%.dump} && "
			    "mkdir -p sym/tmp && printf '1000 10 ok\\nzz not hex\\n' > sym/tmp/perf-$pid.map && "
			    "%s replay --no-perf --symfs %s/sym --jitdump $d p.data >/dev/null 2>%s", tmp, bin(), tmp, log), 2);
	e = slurp(log);
	ck_assert_msg(strstr(e, "perf-") && strstr(e, ".map: line 2"), "%s", e);
	sh("rm -rf %s", tmp);
}
END_TEST

/* A dump whose header perf refuses (LLVM 19's uninitialized flags): perf
 * inject -j exits non-zero on it, so the user's perf sees the recording
 * without it; found through the recording, the replay does the same and says
 * so (0 dumps, no JIT sample); named with --jitdump, it is an error. */
START_TEST(dump_perf_refuses)
{
	record();
	/* flags "/usr/llv" + ARCH_TIMESTAMP's bit, as LLVM 19 leaves them */
	ck_assert_int_eq(sh("cd %s && for d in jit-*.dump; do printf '\\003\\001us/llv' | "
			    "dd of=$d bs=1 seek=32 conv=notrunc 2>/dev/null; done && "
			    "[ \"$(od -An -tx1 -j32 -N8 $(ls jit-*.dump | head -1) | tr -d ' ')\" = 030175732f6c6c76 ]", tmp), 0);
	char log[128], path[128];
	snprintf(log, sizeof(log), "%s/err", tmp);
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("%s replay --no-perf --json %s %s/p.data >/dev/null 2>%s", bin(), path, tmp, log);
	const char *e = slurp(log);
	ck_assert_msg(rc == 0 || rc == 1, "exit %d: %s", rc, e);
	ck_assert_msg(strstr(e, "unknown header flags") && strstr(e, "perf inject -j refuses this dump"), "%s", e);
	const char *j = slurp(path);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_num(j, "jit_samples"), 0);
	ck_assert_int_gt(json_num(j, "samples"), 0);
	ck_assert_int_eq(sh("cd %s && d=$(ls jit-*.dump | head -1) && %s replay --no-perf --jitdump $d p.data "
			    ">/dev/null 2>%s", tmp, bin(), log), 2);
	ck_assert_ptr_nonnull(strstr(slurp(log), "unknown header flags"));
	/* real perf refuses it too */
	if (sh("perf version >/dev/null 2>&1") == 0)
		ck_assert_int_ne(sh("cd %s && HOME=%s perf inject -j -i p.data -o p.jit.data >/dev/null 2>&1", tmp, tmp), 0);
	remove_dumps();
	sh("rm -rf %s", tmp);
}
END_TEST

static bool have_perf(void)
{
	return sh("perf version >/dev/null 2>&1") == 0;
}

static double json_frac(const char *j, const char *a, const char *b)
{
	long x = json_num(j, a), y = json_num(j, b);
	ck_assert_int_gt(y, 0);
	return (double)x / (double)y;
}

/* The perf column: real perf over the same perf.data (injected by replay,
 * then an injected file), placed by address, agrees with the emulation of
 * that perf build; a wrong emulation (the v6.1 profile for a perf that is
 * not) drops the agreement; a perf that cannot run is an error when named,
 * a visible skip when not. */
/* A recording whose jitdumps moved after it was made: replay names the
 * recorded path and the two ways to point at the new one; --jitdump FILE
 * replays it (the samples all there), and perf, which reads the dump at its
 * recorded path, is a visible skip of its column with the same fix. */
START_TEST(moved_dump)
{
	char d[96], e[96], log[128], path[128];
	snprintf(d, sizeof(d), "/tmp/jutest-rr-mv-%d", (int)getpid());
	ck_assert_int_eq(sh("rm -rf %s %s-e && mkdir %s", d, d, d), 0);
	record_dumps(d);
	snprintf(e, sizeof(e), "%s-e", d);
	ck_assert_int_eq(rename(d, e), 0);
	snprintf(log, sizeof(log), "%s/err", tmp);
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	ck_assert_int_eq(sh("%s replay %s/p.data >/dev/null 2>%s", bin(), tmp, log), 2);
	const char *m = slurp(log);
	ck_assert_msg(m && strstr(m, d) && strstr(m, "cannot open") && strstr(m, "--jitdump FILE") &&
		      strstr(m, "--symfs"), "%s", m ? m : "(no stderr)");
	int rc = sh("%s replay --json %s $(for f in %s/jit-*.dump; do echo --jitdump $f; done) %s/p.data >/dev/null 2>%s",
		    bin(), path, e, tmp, log);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d: %s", rc, slurp(log));
	ck_assert_int_gt(json_num(j, "samples"), 0);
	if (have_perf())
		ck_assert_msg(strstr(slurp(log), "skip: the perf column") && strstr(slurp(log), "--symfs"), "%s",
			      slurp(log));
	sh("rm -rf %s %s", e, tmp);
}
END_TEST

START_TEST(perf_column)
{
#if defined(__aarch64__)
	if (sh("uname -m | grep -q aarch64")) {
		fprintf(stderr, "realreplay perf_column: skipped: this machine's perf does not unwind arm64 recordings\n");
		return;
	}
#endif
	if (!have_perf()) {
		fprintf(stderr, "realreplay perf_column: skipped: no working perf on this machine\n");
		return;
	}
	/* the dumps in /tmp: perf >= 6.8's libdw path (sid's perf 7) takes jitted
	 * .so files for JIT code only as /tmp/jitted-*, so elsewhere its chains
	 * of JIT samples are empty and none would be compared */
	record_dumps("/tmp");
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("%s replay --json %s %s/p.data >%s/out 2>&1", bin(), path, tmp, tmp);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_ptr_nonnull(strstr(j, "\"perf\":{"));
	ck_assert_ptr_nonnull(strstr(j, "\"injected_here\":true"));
	long samples = json_num(j, "samples"), compared = json_num(j, "compared");
	ck_assert_int_eq(compared + json_num(j, "missing") + json_num(j, "unplaced"), samples - json_num(j, "no_regs"));
	ck_assert_int_eq(json_num(j, "missing"), 0);
	ck_assert_int_eq(json_num(j, "unplaced"), 0);
	double good = json_frac(j, "agree", "compared");
	ck_assert_msg(good >= 0.99, "agreement %.3f", good);
	long jit = json_num(j, "jit_compared");
	ck_assert_int_gt(jit, 0);
	/* negative control: an emulation of another perf generation */
	rc = sh("%s replay --perf-profile v6.1 --json %s %s/p.data >%s/out 2>&1", bin(), path, tmp, tmp);
	j = slurp(path);
	ck_assert_msg(j, "exit %d", rc);
	double bad = json_frac(j, "agree", "compared");
	ck_assert_msg(bad < good && json_num(j, "jit_agree") < jit, "v6.1 emulation still agrees: %.3f", bad);
	/* an injected file: the dump found from the jitted maps, the same samples */
	ck_assert_int_eq(sh("cd %s && HOME=%s perf inject -j -i p.data -o p.jit.data >/dev/null 2>&1", tmp, tmp), 0);
	rc = sh("%s replay --json %s %s/p.jit.data >%s/out 2>&1", bin(), path, tmp, tmp);
	j = slurp(path);
	ck_assert_msg(j, "exit %d", rc);
	ck_assert_int_eq(json_num(j, "samples"), samples);
	ck_assert_int_gt(json_num(j, "injected_maps"), 0);
	ck_assert_ptr_nonnull(strstr(j, "\"injected_here\":false"));
	ck_assert_msg(json_frac(j, "agree", "compared") >= 0.99, "injected file: agreement %.3f",
		      json_frac(j, "agree", "compared"));
	/* a named perf that cannot run: exit 2 with its name; none found: a visible skip */
	char log[128];
	snprintf(log, sizeof(log), "%s/err", tmp);
	ck_assert_int_eq(sh("%s replay --perf /nonexistent/perf %s/p.data >/dev/null 2>%s", bin(), tmp, log), 2);
	ck_assert_ptr_nonnull(strstr(slurp(log), "/nonexistent/perf"));
	rc = sh("PATH=/nonexistent %s replay --json %s %s/p.data >/dev/null 2>%s", bin(), path, tmp, log);
	ck_assert_msg(rc == 0 || rc == 1, "exit %d", rc);
	ck_assert_ptr_nonnull(strstr(slurp(log), "skip: the perf column"));
	ck_assert_ptr_null(strstr(slurp(path), "\"perf\":{"));
	remove_dumps();
	sh("rm -rf %s", tmp);
}
END_TEST

/* A process that execs: perf keeps the first image's maps (a COMM exec
 * flushes none; munmap is not recorded) and maps the libraries again under
 * the same pid, so a file offset perf printed is in two maps of one file.
 * The newest is the live image: placed there, real perf agrees with the
 * emulation (placed through the first image, 11 % of this recording did). */
START_TEST(exec_history)
{
	if (!have_perf() || sh("python3 -c pass >/dev/null 2>&1")) {
		fprintf(stderr, "realreplay exec_history: skipped: no working perf or no python3 on this machine\n");
		return;
	}
	if (runs_under_other_arch()) {
		fprintf(stderr, "realreplay exec_history: skipped: the recording is this machine's arch, the build another's (qemu-user)\n");
		return;
	}
	if (sh("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'")) {
		fprintf(stderr, "realreplay exec_history: skipped: this perf is not built with libunwind (the test compares "
				"perf with the libunwind emulation; perf 7.2's libdw: open)\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(strcpy(tmp, "/tmp/rrexXXXXXX")));
	if (sh("cd %s && perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf -o e.data -- sh -c "
	       "'exec python3 -c \"\nfor k in range(8000000): k * k\n\"' >/dev/null 2>&1", tmp)) {
		fprintf(stderr, "realreplay exec_history: skipped: perf record cannot record here "
				"(perf_event_paranoid, or no cpu-clock)\n");
		sh("rm -rf %s", tmp);
		return;
	}
	/* the recording has the exec and the same library mapped twice */
	ck_assert_int_eq(sh("cd %s && perf script -i e.data --show-task-events 2>/dev/null | grep -q 'COMM exec: python3'"
			    " && [ $(perf script -i e.data --show-mmap-events 2>/dev/null | grep -c 'r-xp .*/libc.so') -ge 2 ]",
			    tmp), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("%s replay --unwinders libunwind,perf --json %s %s/e.data >/dev/null 2>&1", bin(), path, tmp);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_int_gt(json_num(j, "compared"), 500);
	ck_assert_int_eq(json_num(j, "unplaced"), 0);
	/* placed through the first image, 11 % agreed; through the newest by seq,
	 * 93.5-99.3 % in runs here.  The rest: a file offset is placed through the
	 * newest map in time (a perf.data is in time order per ring-buffer flush
	 * only); perf's libunwind takes a library's base from the lowest of its
	 * maps in the tree, the old image's included, so a sample is replayed in
	 * the tree of its own time when a file of its chain is mapped at two
	 * bases, with no view budget for a process without a jitdump; a return
	 * address of 1 is no frame in perf's output (ip - 1 == 0).  With all
	 * three: 100 % in each of 5 runs here, and 0.9989 in one CI run: a vDSO,
 * a signal frame or a garbage frame in the kernel's range, each rare (5 of 39
 * recordings), each now kept and two of them tested below (39 of 39 at 100 %) */
	double good = json_frac(j, "agree", "compared");
	ck_assert_msg(good >= 0.999, "agreement %.4f", good);
	sh("rm -rf %s", tmp);
}
END_TEST

/* [vdso] frames: perf reads the vDSO from its build-id cache, where perf record
 * put it (HEADER_BUILD_ID names it); the emulation takes the same file and the
 * perf column's private cache gets a copy.  A C loop over clock_gettime has
 * most samples in the vDSO: with the cache, perf's chains go on past it (read
 * with this machine's own perf script and HOME: independent of the replay) and
 * the emulation agrees; with the emulation's vDSO left out, where the first
 * build of this rule had it from this process instead, 4 % agreed.  perf >= 7
 * records no HEADER_BUILD_ID (build-ids ride in MMAP2 events, none for the
 * vDSO) and reads its own vDSO: so does the replay (4 % without, sid's 7.2). */
START_TEST(vdso_frames)
{
	if (!have_perf() || runs_under_other_arch() || sh("cc --version >/dev/null 2>&1")) {
		fprintf(stderr, "realreplay vdso_frames: skipped: no working perf or cc on this machine, or a qemu-user build\n");
		return;
	}
	const char *col = sh("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'") ? "libdw" : "libunwind";
	ck_assert_ptr_nonnull(mkdtemp(strcpy(tmp, "/tmp/rrvdXXXXXX")));
	ck_assert_int_eq(sh("cd %s && printf '%%s\\n' '#include <time.h>' "
			    "'__attribute__((noinline)) long f(long n) { struct timespec t; long s = 0;' "
			    "'  for (long i = 0; i < n; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; } return s; }' "
			    "'int main(void) { return f(20000000) == 42; }' >v.c && cc -O1 -g -fno-omit-frame-pointer "
			    "v.c -o v", tmp), 0);
	if (sh("cd %s && HOME=%s perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf -o v.data ./v >/dev/null 2>&1",
	       tmp, tmp)) {
		fprintf(stderr, "realreplay vdso_frames: skipped: perf record cannot record here\n");
		sh("rm -rf %s", tmp);
		return;
	}
	/* perf itself, with the cache it wrote: chains through [vdso] that go on */
	ck_assert_int_eq(sh("cd %s && [ $(HOME=%s perf script -i v.data -F ip,dso 2>/dev/null | "
			    "awk '/\\[vdso\\]/ { v = 1; next } v && NF { n++ } { v = 0 } END { print n + 0 }') -ge 100 ]",
			    tmp, tmp), 0);
	/* does the recording name the vDSO's build-id (perf < 7)? perf's own reading */
	bool named = !sh("cd %s && HOME=%s perf buildid-list -i v.data 2>/dev/null | grep -q '\\[vdso\\]$'", tmp, tmp);
	char path[128], out[160];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	snprintf(out, sizeof(out), "%s/out", tmp);
	int rc = sh("cd %s && HOME=%s %s replay --unwinders %s,perf --json %s v.data >out 2>&1", tmp, tmp, bin(), col, path);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	if (named) {
		ck_assert_ptr_nonnull(strstr(j, "\"vdso\":{\"build_id\":\""));
		ck_assert_ptr_nonnull(strstr(j, "/.debug/[vdso]/"));
	} else {
		ck_assert_ptr_nonnull(strstr(j, "\"vdso\":{\"build_id\":null,\"file\":\"own\"}"));
	}
	ck_assert_int_gt(json_num(j, "compared"), 200);
	double good = json_frac(j, "agree", "compared");
	ck_assert_msg(good >= 0.999, "agreement with the %s vDSO %.4f", named ? "cached" : "own", good);
	/* the vDSO is the kernel's code, a DSO to perf: no JIT code unseen there */
	ck_assert_int_eq(json_num(j, "anon_exec_samples"), 0);
	ck_assert_int_eq(json_num(j, "unseen_jit_samples"), 0);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, slurp(out));
	/* under --symfs (even /) perf < 7 reads no vDSO: neither does the emulation
	 * (perf 7 reads its own there too: the own vDSO is kept) */
	rc = sh("cd %s && HOME=%s %s replay --symfs / --unwinders %s,perf --json %s v.data >out 2>&1", tmp, tmp,
		bin(), col, path);
	j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_ptr_nonnull(strstr(j, named ? "\"file\":null" : "\"file\":\"own\""));
	ck_assert_msg(json_frac(j, "agree", "compared") >= 0.999, "agreement under --symfs / %.4f",
		      json_frac(j, "agree", "compared"));
	/* no cache: perf < 7 and the emulation both stop at [vdso], and agree on that */
	rc = sh("cd %s && HOME=%s/none %s replay --unwinders %s,perf --json %s v.data >out 2>&1", tmp, tmp, bin(), col,
		path);
	j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_ptr_nonnull(strstr(j, named ? "\"file\":null" : "\"file\":\"own\""));
	ck_assert_msg(json_frac(j, "agree", "compared") >= 0.999, "agreement without a cache %.4f",
		      json_frac(j, "agree", "compared"));
	sh("rm -rf %s", tmp);
}
END_TEST

/* A signal frame: perf prints the frame its unwinder steps to through
 * __restore_rt (the interrupted pc) as it is, every other frame as its return
 * address less one.  A C program whose SIGALRM handler spins: with that frame
 * compared as a return address, 775 of 902 samples agreed here (every sample
 * in the handler differed at the interrupted pc). */
START_TEST(signal_frames)
{
	if (!have_perf() || runs_under_other_arch() || sh("cc --version >/dev/null 2>&1")) {
		fprintf(stderr, "realreplay signal_frames: skipped: no working perf or cc on this machine, or a qemu-user build\n");
		return;
	}
	if (sh("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'")) {
		fprintf(stderr, "realreplay signal_frames: skipped: this perf is not built with libunwind\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(strcpy(tmp, "/tmp/rrsgXXXXXX")));
	/* a timer period prime to perf's (a 1000 us one fell in step with the
	 * 500 us sampling: 0 to 343 samples in the handler); about 40 % of the
	 * time in the handler, some 195 of 1040 samples through its frame here.
	 * The handler stops the timer at its 400th run: on a CPU where its spin
	 * outlasts the period (1.7 ms on a fresh CI machine) each return met the
	 * next signal pending, main never ran again and the test hung */
	ck_assert_int_eq(sh("cd %s && printf '%%s\\n' '#include <signal.h>' '#include <sys/time.h>' "
			    "'volatile long s; volatile int c;' "
			    "'__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) s += i; }' "
			    "'static void h(int sig) { (void)sig; spin(800000); if (++c >= 400) {' "
			    "'  struct itimerval z = { { 0, 0 }, { 0, 0 } }; setitimer(ITIMER_REAL, &z, 0); } }' "
			    "'int main(void) { struct sigaction a = { .sa_handler = h }; sigaction(SIGALRM, &a, 0);' "
			    "'  struct itimerval t = { { 0, 1301 }, { 0, 1301 } }; setitimer(ITIMER_REAL, &t, 0);' "
			    "'  while (c < 400) spin(1000); return 0; }' >s.c && cc -O1 -g s.c -o s",
			    tmp), 0);
	if (sh("cd %s && perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf -o s.data ./s >/dev/null 2>&1", tmp)) {
		fprintf(stderr, "realreplay signal_frames: skipped: perf record cannot record here\n");
		sh("rm -rf %s", tmp);
		return;
	}
	/* perf unwound through the handler's signal frame into the loop it
	 * interrupted: two spin frames in one chain (the handler's and the loop's;
	 * names in between vary: perf 6.12 with gcc 14 calls h "unsigned char",
	 * libc's restorer is [unknown] or __restore_rt) */
	ck_assert_int_eq(sh("cd %s && [ $(perf script -i s.data -F ip,sym 2>/dev/null | "
			    "awk '!NF { c += n >= 2; n = 0; next } $2 == \"spin\" { n++ } END { print c + (n >= 2) }') "
			    "-ge 30 ]", tmp), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("cd %s && %s replay --unwinders libunwind,perf --json %s s.data >out 2>&1", tmp, bin(), path);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_int_gt(json_num(j, "compared"), 200);
	double good = json_frac(j, "agree", "compared");
	ck_assert_msg(good >= 0.999, "agreement through signal frames %.4f", good);
	sh("rm -rf %s", tmp);
}
END_TEST

/* Code reused at one address (issue 34, tools/jit-reuse.c): A (a frame record)
 * runs at X, then B (no frame record, its call where A's was) is written over
 * X with its own UNWINDING_INFO and CODE_LOAD and runs.  perf's libunwind
 * keeps one address space per process with its global cache, so B's pcs
 * unwind with A's rules: driver, B's caller, is lost (perf 5.10, 6.1, 6.12
 * measured).  The replay keeps that state in sample order: agreement >= 99.9 %
 * with B over A (50 % when every sample rebuilt perf's state) and with B alone
 * (the control, where perf finds driver). */
static int reuse_chains(const char *data, const char *sym, bool with_driver)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "perf script -i %s -F ip,sym 2>/dev/null | awk 'BEGIN { RS = \"\" } "
		 "$0 ~ /[0-9a-f]+ %s\\n/ { n += %s(/ driver\\n/) } END { print n + 0 }'", data, sym,
		 with_driver ? "" : "!");
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

START_TEST(code_reuse)
{
	const char *jr = getenv("JU_JIT_REUSE");
	if (!have_perf() || runs_under_other_arch() || !jr || access(jr, X_OK)) {
		fprintf(stderr, "realreplay code_reuse: skipped: no working perf, a qemu-user build, or no "
				"JU_JIT_REUSE (make unit sets it)\n");
		return;
	}
	if (sh("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'")) {
		fprintf(stderr, "realreplay code_reuse: skipped: this perf is not built with libunwind\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(strcpy(tmp, "/tmp/rrcrXXXXXX")));
	static const char *const modes[] = { "reuse", "alone" };
	for (int m = 0; m < 2; m++) {
		if (sh("cd %s && mkdir %s && perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf -o %s.data "
		       "%s %s/%s %s 300 >/dev/null 2>&1 && perf inject -j -i %s.data -o %s.jit.data",
		       tmp, modes[m], modes[m], jr, tmp, modes[m], modes[m], modes[m], modes[m])) {
			fprintf(stderr, "realreplay code_reuse: skipped: perf record cannot record here\n");
			sh("rm -rf %s", tmp);
			return;
		}
		/* what perf does: B's chains lose driver over A, keep it alone */
		char data[128];
		snprintf(data, sizeof(data), "%s/%s.jit.data", tmp, modes[m]);
		int lost = reuse_chains(data, "B", false), kept = reuse_chains(data, "B", true);
		ck_assert_msg(kept >= 0 && lost >= 0 && kept + lost >= 100, "%s: %d chains through B", modes[m],
			      kept + lost);
		if (m == 0)
			ck_assert_msg(lost >= 0.9 * (kept + lost), "perf kept B's caller over A: %d of %d chains",
				      kept, kept + lost);
		else
			ck_assert_msg(kept == kept + lost, "perf lost B's caller alone: %d of %d", lost, kept + lost);
		char path[128];
		snprintf(path, sizeof(path), "%s/%s.json", tmp, modes[m]);
		int rc = sh("cd %s && %s replay --unwinders libunwind,perf --json %s %s.data >%s.out 2>&1", tmp, bin(),
			    path, modes[m], modes[m]);
		const char *j = slurp(path);
		ck_assert_msg(j && (rc == 0 || rc == 1), "%s: exit %d", modes[m], rc);
		double good = json_frac(j, "agree", "compared");
		ck_assert_msg(good >= 0.999, "%s: agreement with perf %.4f", modes[m], good);
		/* the report names the samples A's rules unwound: every chain perf
		 * lost, and no more than pass through B (A's rules at B's first
		 * instruction are B's too: flagged, not lost) */
		long early = json_num(j, "earlier_load_rules");
		if (m == 0)
			ck_assert_msg(early >= lost && early <= kept + lost,
				      "%ld samples with A's rules, perf lost %d of %d", early, lost, kept + lost);
		else
			ck_assert_msg(early == 0, "alone: %ld samples with an earlier load's rules", early);
	}
	sh("rm -rf %s", tmp);
}
END_TEST

/* The vDSO is one DSO to perf, mapped anew by each exec, and perf's libunwind
 * takes its base from the lowest [vdso] map in the thread's tree.  The first
 * image runs without address randomization (its vDSO at the top), then execs
 * itself with it: the second image's vDSO is lower, so a view of the whole
 * recording has another vDSO base than perf had for the first image's samples.
 * With [vdso] left out of the rebased files, 238 of 240 and 209 of 214 samples
 * agreed in two recordings here. */
START_TEST(vdso_rebased)
{
	if (!have_perf() || runs_under_other_arch() || sh("cc --version >/dev/null 2>&1 && setarch -R true")) {
		fprintf(stderr, "realreplay vdso_rebased: skipped: no working perf, cc or setarch -R on this machine, "
				"or a qemu-user build\n");
		return;
	}
	if (sh("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'")) {
		fprintf(stderr, "realreplay vdso_rebased: skipped: this perf is not built with libunwind\n");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(strcpy(tmp, "/tmp/rrvrXXXXXX")));
	ck_assert_int_eq(sh("cd %s && printf '%%s\\n' '#include <sys/personality.h>' '#include <time.h>' '#include <unistd.h>' "
			    "'__attribute__((noinline)) long f(long n) { struct timespec t; long s = 0;' "
			    "'  for (long i = 0; i < n; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; } return s; }' "
			    "'int main(int argc, char **argv) { f(5000000); if (argc > 1) return 0;' "
			    "'  personality(personality(0xffffffff) & ~ADDR_NO_RANDOMIZE);' "
			    "'  execl(argv[0], argv[0], \"2\", (char *)0); return 1; }' >y.c && cc -O1 -g y.c -o y",
			    tmp), 0);
	if (sh("cd %s && HOME=%s setarch -R perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf -o y.data ./y "
	       ">/dev/null 2>&1", tmp, tmp)) {
		fprintf(stderr, "realreplay vdso_rebased: skipped: perf record cannot record here\n");
		sh("rm -rf %s", tmp);
		return;
	}
	/* two [vdso] maps, the second lower (both 12 hex digits: sort compares them) */
	ck_assert_int_eq(sh("cd %s && perf script -i y.data --show-mmap-events 2>/dev/null | "
			    "sed -n 's/.*MMAP.*\\[0x\\([0-9a-f]*\\)(.*r-xp \\[vdso\\].*/\\1/p' >bases && "
			    "[ $(wc -l <bases) -eq 2 ] && [ \"$(sort bases | head -1)\" = \"$(tail -1 bases)\" ] && "
			    "[ \"$(head -1 bases)\" != \"$(tail -1 bases)\" ]", tmp), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("cd %s && HOME=%s %s replay --unwinders libunwind,perf --json %s y.data >out 2>&1", tmp, tmp, bin(), path);
	const char *j = slurp(path);
	ck_assert_msg(j && (rc == 0 || rc == 1), "exit %d", rc);
	ck_assert_int_gt(json_num(j, "compared"), 100);
	double good = json_frac(j, "agree", "compared");
	ck_assert_msg(good >= 0.999, "agreement across two vDSO bases %.4f", good);
	sh("rm -rf %s", tmp);
}
END_TEST

/* replay --lint: the cases whose DWARF chains lose the trampoline's caller
 * (wrong CFA rows, UNWINDING_INFO after its load, a dump outside /tmp for
 * perf's libdw) have every loss explained by a finding naming it; with
 * those rules left out of the pairing (negative control) none is. */
START_TEST(lint_pairs)
{
	snprintf(tmp, sizeof(tmp), "/tmp/jutest-rr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	char cases[256] = "";
	char list[128];
	snprintf(list, sizeof(list), "%s", host_cases()->losses);
	for (char *sv, *c = strtok_r(list, " ", &sv); c; c = strtok_r(NULL, " ", &sv))
		snprintf(cases + strlen(cases), sizeof(cases) - strlen(cases), "%s/%s ", RR_CASES, c);
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --perf-data %s/p.data %s >%s/log 2>&1", bin(), tmp,
			    tmp, tmp, cases, tmp), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("%s replay --no-perf --lint --json %s %s/p.data >%s/out 2>&1", bin(), path, tmp, tmp);
	const char *j = slurp(path);
	ck_assert_msg(j, "exit %d", rc);
	long losses = json_num(j, "losses");
	ck_assert_int_gt(losses, 0);
	ck_assert_msg(json_num(j, "unexplained") == 0, "%s", slurp(path));
	/* the rules that explained them */
	char ignore[256] = "";
	for (const char *p = strstr(j, "\"rule\":\""); p; p = strstr(p + 1, "\"rule\":\"")) {
		char id[8];
		snprintf(id, sizeof(id), "%.5s", p + 8);
		if (!strstr(ignore, id))
			snprintf(ignore + strlen(ignore), sizeof(ignore) - strlen(ignore), "%s%s", ignore[0] ? "," : "", id);
	}
	ck_assert_msg(ignore[0], "no rule named in %s", j);
	rc = sh("%s replay --no-perf --lint --lint-ignore %s --json %s %s/p.data >%s/out 2>&1", bin(), ignore, path,
		tmp, tmp);
	j = slurp(path);
	ck_assert_msg(j, "exit %d", rc);
	ck_assert_int_eq(json_num(j, "losses"), losses);
	ck_assert_int_eq(json_num(j, "unexplained"), losses);
	ck_assert_int_eq(sh("%s replay --no-perf --lint --lint-ignore JD999 %s/p.data >/dev/null 2>&1", bin(), tmp), 2);
	sh("rm -rf %s", tmp);
}
END_TEST

/* Stop reasons whole: a 64-byte stack copy ends libdw's chains with "read
 * of 0x... outside the stack copy and perf's maps ended the chain" (over
 * 119 characters with its stop name, once cut there mid-word); every such
 * stop in the JSON ends as libdw's message ends, and the text prints it as
 * the JSON has it. The dump under /tmp/jitted- so perf's libdw is given
 * its unwinding info (perf >= 6.8). */
START_TEST(stops_whole)
{
	if (!strstr(host_facts()->name, "x86_64"))
		return;   /* libdw is a default column on x86_64 only */
	snprintf(tmp, sizeof(tmp), "/tmp/jitted-jutest-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --stack-size 64 --perf-data %s/p.data "
			    "%s/nested-depth3.case >%s/log 2>&1", bin(), tmp, tmp, tmp, RR_CASES, tmp), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	int rc = sh("%s replay --no-perf --unwinders fp,libdw --json %s %s/p.data >%s/out 2>&1", bin(), path, tmp, tmp);
	static char j[1 << 20];
	const char *jj = slurp(path);
	ck_assert_msg(jj, "exit %d", rc);
	snprintf(j, sizeof(j), "%s", jj);
	snprintf(path, sizeof(path), "%s/out", tmp);
	const char *text = slurp(path);
	ck_assert_ptr_nonnull(text);
	const char *key = "\"libdw\":\"outside-snapshot: unwinding 0x";
	int n = 0;
	for (const char *p = strstr(j, key); p; p = strstr(p + 1, key)) {
		const char *v = p + strlen("\"libdw\":\""), *e = strchr(v, '"');
		ck_assert_ptr_nonnull(e);
		char stop[512];
		snprintf(stop, sizeof(stop), "%.*s", (int)(e - v), v);
		unsigned long long a, b;
		int used = 0;
		ck_assert_msg(sscanf(stop, "outside-snapshot: unwinding 0x%llx: read of 0x%llx outside the stack copy "
				  "and perf's maps%n", &a, &b, &used) == 2 && used > 0, "stop cut: %s", stop);
		ck_assert_msg(!strcmp(stop + used, "") || !strcmp(stop + used, " ended the chain"), "stop cut: %s", stop);
		ck_assert_int_gt(strlen(stop), 119);
		char line[600];
		snprintf(line, sizeof(line), "libdw stops (first sample): %s\n", stop);
		ck_assert_msg(strstr(text, line), "the text lacks \"%s\"", line);
		n++;
	}
	ck_assert_msg(n > 0, "no libdw stop outside the stack copy in %s", j);
	sh("rm -rf %s", tmp);
}
END_TEST

Suite *suite_realreplay(void);
Suite *suite_realreplay(void)
{
	Suite *s = suite_create("realreplay");
	TCase *tc = tcase_create("perfdata");
	/* a guard against a hang, not a speed test: signal_frames (a perf
	 * record and its replay) took over 240 s once on a machine busy with
	 * two other builds */
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, replays_own_recording);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, perf_column);
	tcase_add_test(tc, moved_dump);
	tcase_add_test(tc, lint_pairs);
	tcase_add_test(tc, exec_history);
	tcase_add_test(tc, signal_frames);
	tcase_add_test(tc, vdso_rebased);
	tcase_add_test(tc, code_reuse);
	tcase_add_test(tc, dump_perf_refuses);
	tcase_add_test(tc, vdso_frames);
	tcase_add_test(tc, stops_whole);
	suite_add_tcase(s, tc);
	return s;
}
