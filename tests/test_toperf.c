/* Samples to perf.data (harness/run/toperf.c): a captured case written
 * as perf.data is read back by real `perf script` (where perf is installed;
 * a visible skip otherwise): one sample per captured sample, at the
 * captured pc and pid.  The ABI names map to the kernel's documented
 * perf_event_attr sizes (linux/perf_event.h), and a damaged samples file is
 * refused with its name and offset. */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/capture/capture.h"
#include "harness/capture/samples.h"
#include "harness/run/toperf.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/uwarch.h"
#include "tests/hostarch.h"

static char dir[64], samples[128], data[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jutoperf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(samples, sizeof(samples), "%s/t.samples", dir);
	snprintf(data, sizeof(data), "%s/perf.data", dir);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void capture(struct hx_samples *s)
{
	static const char fmt[] = "[case]\nname=t\narch=%s\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
				  "[sample]\nat=every-insn\ndepth=2\n[expect]\nfp=ok\n";
	char text[512], err[512];
	snprintf(text, sizeof(text), fmt, host_facts()->name);
	struct hx_case c;
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	struct ju_err je;
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, samples, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, samples, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
	ck_assert_uint_gt(s->groups[0].nsamples, 3);
	hx_case_free(&c);
}

START_TEST(abi_sizes_are_the_kernels)
{
	uint32_t sz = 0;
	ck_assert_int_eq(hx_toperf_abi("5.10", &sz), 0);
	ck_assert_uint_eq(sz, PERF_ATTR_SIZE_VER6);
	ck_assert_int_eq(hx_toperf_abi("6.1", &sz), 0);
	ck_assert_uint_eq(sz, PERF_ATTR_SIZE_VER7);
	ck_assert_int_eq(hx_toperf_abi("6.3", &sz), 0);
	ck_assert_uint_eq(sz, PERF_ATTR_SIZE_VER7 + 8);     /* VER8: + config3 (perf_event.h, 6.3) */
	static const char *const bad[] = { "", "6", "6.2", "5.10x", "v6.1", "7.0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(hx_toperf_abi(bad[i], &sz) != 0, "'%s' taken", bad[i]);
}
END_TEST

/* perf script's ip and pid of every sample, in file order */
START_TEST(perf_script_reads_the_samples)
{
	struct hx_samples s;
	capture(&s);
	struct ju_err err;
	struct hx_toperf_opts o = { .attr_size = PD_ATTR_SIZE_VER7 };
	ck_assert_msg(hx_toperf_write(samples, data, &o, &err) == 0, "%s", err.msg);
	/* our own reader first: one SAMPLE record per captured sample */
	struct pd_file f;
	ck_assert_msg(pd_open(&f, data, &err) == 0, "%s", err.msg);
	const struct uw_arch *arch = uw_arch_host();
	struct pd_iter it = { 0 };
	struct pd_event ev;
	size_t k = 0;
	int rc;
	while ((rc = pd_next(&f, &it, &ev, &err)) == 1)
		if (ev.type == PD_REC_SAMPLE) {
			ck_assert_uint_lt(k, s.groups[0].nsamples);
			ck_assert_uint_eq(ev.sample.ip, s.groups[0].samples[k].regs[arch->perf_ip]);
			k++;
		}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_uint_eq(k, s.groups[0].nsamples);
	pd_close(&f);
	if (system("perf --version >/dev/null 2>&1")) {
		printf("toperf: perf not installed, perf script cross-check skipped\n");
		hx_samples_free(&s);
		return;
	}
	/* the capture child's pid: its jitdump is jit-<pid>.dump */
	const char *base = strrchr(s.groups[0].dump_path, '/');
	unsigned want_pid = 0;
	ck_assert_int_eq(sscanf(base ? base + 1 : s.groups[0].dump_path, "jit-%u.dump", &want_pid), 1);
	char cmd[400], line[256];
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' -G -F pid,ip 2>&1", data);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	k = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned pid;
		unsigned long long ip;
		if (sscanf(line, " %u %llx", &pid, &ip) != 2)
			continue;
		ck_assert_uint_eq(pid, want_pid);
		ck_assert_uint_lt(k, s.groups[0].nsamples);
		ck_assert_msg(ip == s.groups[0].samples[k].regs[arch->perf_ip], "sample %zu: perf %#llx, captured %#llx",
			      k, ip, (unsigned long long)s.groups[0].samples[k].regs[arch->perf_ip]);
		k++;
	}
	int st = pclose(p);
	ck_assert_msg(st == 0 && k == s.groups[0].nsamples, "perf script: status %d, %zu of %zu samples", st, k,
		      s.groups[0].nsamples);
	hx_samples_free(&s);
}
END_TEST

/* a samples file cut inside a record: refused with the file and the offset */
START_TEST(damaged_samples_refused)
{
	struct hx_samples s;
	capture(&s);
	hx_samples_free(&s);
	struct stat st;
	ck_assert_int_eq(stat(samples, &st), 0);
	ck_assert_int_eq(truncate(samples, st.st_size - 12), 0);
	struct ju_err je;
	const char *err = je.msg;
	struct hx_toperf_opts o = { .attr_size = PD_ATTR_SIZE_VER7 };
	ck_assert_int_ne(hx_toperf_write(samples, data, &o, &je), 0);
	ck_assert_msg(strstr(err, samples) && strstr(err, "offset 0x"), "%s", err);
	ck_assert_int_ne(access(data, F_OK), 0);
}
END_TEST

Suite *suite_toperf(void);
Suite *suite_toperf(void)
{
	Suite *s = suite_create("toperf");
	TCase *tc = tcase_create("toperf");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, abi_sizes_are_the_kernels);
	tcase_add_test(tc, perf_script_reads_the_samples);
	tcase_add_test(tc, damaged_samples_refused);
	suite_add_tcase(s, tc);
	return s;
}
