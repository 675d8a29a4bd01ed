/* Reading real perf (harness/run/perfrun.c): `perf script` text in the
 * format perf 6.1 prints (a DSO frame as its file offset) and 6.12 prints
 * (its address), placed by hand-computed arithmetic from the MMAP2 lines;
 * a frame no mapping of its time holds is left out and named; real perf
 * script over a captured case (toperf) gives every sample's pc; the probe
 * reads what `perf version --build-options` says (where perf is installed;
 * a visible skip otherwise). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/capture/capture.h"
#include "harness/run/perfrun.h"
#include "harness/run/toperf.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/uwarch.h"
#include "tests/hostarch.h"

static const char text61[] =
	"100  1.000000001: PERF_RECORD_MMAP2 100/100: [0x400000(0x2000) @ 0x1000 fe:00 1 0]: r-xp /bin/x\n"
	"100  1.000000002: \n"
	"\t            1800 (/bin/x)\n"                  /* 6.1: offset 0x1800 -> 0x400000 + 0x800 */
	"\t          401f00 (/bin/x)\n"                  /* 6.12: an address inside the map */
	"\t    7f0000000010 ([unknown])\n"
	"\t            1234 (/bin/y)\n"                  /* no mapping of /bin/y: left out */
	"\n"
	"100  1.000000003: PERF_RECORD_MMAP2 100/100: [0x500000(0x1000) @ 0 fe:00 2 0]: r-xp /bin/z\n"
	"100  1.000000004: \n"
	"\t             10 (/bin/z)\n"
	"\n";

START_TEST(frames_placed_by_hand)
{
	struct hx_ps ps;
	memset(&ps, 0, sizeof(ps));
	char *t = strdup(text61);
	ck_assert_int_eq(hx_ps_parse(&ps, t), 0);
	ck_assert_uint_eq(ps.nmaps, 2);
	ck_assert_uint_eq(ps.n, 2);
	const struct hx_ps_sample *s = &ps.s[0];
	ck_assert_uint_eq(s->pid, 100);
	ck_assert_uint_eq(s->time, 1000000002ull);
	ck_assert_int_eq(s->n, 3);
	ck_assert_uint_eq(s->addr[0], 0x400800);
	ck_assert_uint_eq(s->addr[1], 0x401f00);
	ck_assert_uint_eq(s->addr[2], 0x7f0000000010ull);
	ck_assert(s->unplaced);
	ck_assert_msg(strstr(ps.why, "no mapping of /bin/y holds offset 0x1234"), "%s", ps.why);
	ck_assert_int_eq(ps.s[1].n, 1);
	ck_assert_uint_eq(ps.s[1].addr[0], 0x500010);
	ck_assert(!ps.s[1].unplaced);
	hx_ps_free(&ps);
	free(t);
}
END_TEST

/* a mapping perf reports after the sample does not place its frames */
START_TEST(later_mapping_not_used)
{
	static const char late[] =
		"7  2.000000000: \n"
		"\t             10 (/bin/z)\n"
		"\n"
		"7  3.000000000: PERF_RECORD_MMAP2 7/7: [0x500000(0x1000) @ 0 fe:00 2 0]: r-xp /bin/z\n";
	struct hx_ps ps;
	memset(&ps, 0, sizeof(ps));
	char *t = strdup(late);
	ck_assert_int_eq(hx_ps_parse(&ps, t), 0);
	ck_assert_uint_eq(ps.n, 1);
	ck_assert_int_eq(ps.s[0].n, 0);
	ck_assert(ps.s[0].unplaced);
	hx_ps_free(&ps);
	free(t);
}
END_TEST

/* A non-PIE executable mapped at 0x400000: its file offsets are addresses of
 * its own mappings too (node: offset 0xc494db, address 0x10494db).  The way
 * this perf prints is voted by the frames only one reading fits, here a
 * jitted .so's (an offset past its pgoff, or its address). */
static const char et_exec[] =
	"9  1.000000001: PERF_RECORD_MMAP2 9/9: [0x400000(0x4000000) @ 0 fe:00 3 0]: r-xp /usr/bin/node\n"
	"9  1.000000002: PERF_RECORD_MMAP2 9/9: [0x7f0000001000(0x100) @ 0x80 00:00 0 0]: r-xp /tmp/jitted-9-1.so\n"
	"9  1.000000003: \n"
	"\t             %s (/tmp/jitted-9-1.so)\n"
	"\t          c494db (/usr/bin/node)\n"
	"\n";

static uint64_t et_exec_frame(const char *jit)
{
	char text[1024];
	snprintf(text, sizeof(text), et_exec, jit);
	struct hx_ps ps;
	ck_assert_int_eq(hx_ps_parse(&ps, text), 0);
	ck_assert_uint_eq(ps.n, 1);
	ck_assert_int_eq(ps.s[0].n, 2);
	uint64_t a = ps.s[0].addr[1];
	hx_ps_free(&ps);
	return a;
}

START_TEST(non_pie_offsets_voted)
{
	/* the jitted frame printed as a file offset (perf 6.1): node's too */
	ck_assert_uint_eq(et_exec_frame("c0"), 0x10494dbull);
	/* printed as an address (perf 6.12 and later): node's as printed */
	ck_assert_uint_eq(et_exec_frame("7f0000001040"), 0xc494dbull);
}
END_TEST

static bool have_perf(void)
{
	if (system("perf version >/dev/null 2>&1")) {
		printf("perfrun: perf not installed, real perf checks skipped\n");
		return false;
	}
	return true;
}

/* hx_perf_probe against the shell's reading of perf version --build-options */
START_TEST(probe_reads_build_options)
{
	if (!have_perf())
		return;
	hx_perf_set_cmd("perf");
	const struct hx_perf_build *b = NULL;
	char why[256] = "";
	int rc = hx_perf_probe(&b, why, sizeof(why));
	FILE *p = popen("perf version --build-options 2>/dev/null", "r");
	ck_assert_ptr_nonnull(p);
	char line[256], ver[64] = "";
	bool lu = false, dw = false;
	while (fgets(line, sizeof(line), p)) {
		sscanf(line, "perf version %63s", ver);
		if (strstr(line, "libunwind:") && strstr(line, "[ on"))
			lu = true;
		if (strstr(line, "libdw-dwarf-unwind:") && strstr(line, "[ on"))
			dw = true;
	}
	pclose(p);
	if (!lu && !dw) {
		ck_assert_int_eq(rc, -1);
		return;
	}
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert_msg(!strncmp(ver, b->version, strlen(b->version)), "perf says %s, probe %s", ver, b->version);
	ck_assert_int_eq(b->major, atoi(ver));
	ck_assert_str_eq(b->engine, lu ? "libunwind" : "libdw");
}
END_TEST

/* real perf script over a captured case written as perf.data */
START_TEST(perf_script_of_a_capture)
{
	if (!have_perf())
		return;
	if (runs_under_other_arch()) {
		printf("perfrun: perf_script_of_a_capture skipped: perf on this machine reads another arch than this build's capture (qemu-user)\n");
		return;
	}
	if (system("perf version --build-options 2>/dev/null | grep -Eq 'libunwind: *\\[ *on'")) {
		printf("perfrun: perf_script_of_a_capture skipped: this perf is not built with libunwind "
		       "(perf 7.2 placed none of the capture's frames: open)\n");
		return;
	}
	char dir[] = "/tmp/juperfrun-XXXXXX", sp[128], data[128], out[128], err[512], text[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sp, sizeof(sp), "%s/t.samples", dir);
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(out, sizeof(out), "%s/script.txt", dir);
	snprintf(text, sizeof(text), "[case]\nname=t\narch=%s\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\n"
		 "ret\n[sample]\nat=every-insn\ndepth=1\n[expect]\nfp=ok\n", host_facts()->name);
	struct hx_case c;
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	struct ju_err je;
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, sp, &je) == 0, "%s", je.msg);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, sp, err, sizeof(err)) == 0, "%s", err);
	struct hx_toperf_opts o = { .attr_size = PD_ATTR_SIZE_VER7 };
	ck_assert_msg(hx_toperf_write(sp, data, &o, &je) == 0, "%s", je.msg);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' -F pid,time,ip,dso --ns --show-mmap-events >'%s' 2>/dev/null",
		 data, out);
	ck_assert_int_eq(system(cmd), 0);
	size_t n;
	char *t = hx_slurp(out, &n);
	ck_assert_ptr_nonnull(t);
	struct hx_ps ps;
	memset(&ps, 0, sizeof(ps));
	ck_assert_int_eq(hx_ps_parse(&ps, t), 0);
	ck_assert_uint_eq(ps.n, s.groups[0].nsamples);
	const struct uw_arch *arch = uw_arch_host();
	/* without perf inject -j perf names the JIT code's anonymous map
	 * perf-PID.map, which no MMAP2 names: those frames are left out and
	 * said; any frame placed first is the sample's pc */
	size_t placed = 0;
	for (size_t i = 0; i < ps.n; i++) {
		ck_assert_uint_eq(ps.s[i].time > 0, 1);
		if (ps.s[i].n && !ps.s[i].unplaced) {
			ck_assert_uint_eq(ps.s[i].addr[0], s.groups[0].samples[i].regs[arch->perf_ip]);
			placed++;
		}
	}
	ck_assert_msg(placed == ps.n || strstr(ps.why, ".map holds offset"), "%zu of %zu placed; %s", placed, ps.n, ps.why);
	if (!placed) {
		/* the first left-out frame is the first sample's pc, as perf printed it */
		char want[64];
		snprintf(want, sizeof(want), "sample 0 (pid %u): ", ps.s[0].pid);
		ck_assert_msg(strstr(ps.why, want), "%s", ps.why);
		snprintf(want, sizeof(want), "holds offset 0x%llx", (unsigned long long)s.groups[0].samples[0].regs[arch->perf_ip]);
		ck_assert_msg(strstr(ps.why, want), "%s, expected '%s'", ps.why, want);
	}
	hx_ps_free(&ps);
	free(t);
	hx_samples_free(&s);
	hx_case_free(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *suite_perfrun(void);
Suite *suite_perfrun(void)
{
	Suite *s = suite_create("perfrun");
	TCase *tc = tcase_create("perfrun");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, frames_placed_by_hand);
	tcase_add_test(tc, non_pie_offsets_voted);
	tcase_add_test(tc, later_mapping_not_used);
	tcase_add_test(tc, probe_reads_build_options);
	tcase_add_test(tc, perf_script_of_a_capture);
	suite_add_tcase(s, tc);
	return s;
}
