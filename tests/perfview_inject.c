/* perf's view (part of suite perfview, tests/test_perfview.c): the jitted ELF
 * byte-compared with files real `perf inject -j` wrote (tests/golden/perfview)
 * and, where perf works here, with a fresh perf record + perf inject run. */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfview.h"
#include "tests/perfview.h"

#define GOLDEN "tests/golden/perfview/"

static struct ju_err err;

/* Byte-compare ours with perf's file except the 20 build-id bytes (perf 6.1
 * without libcrypto fills them from /dev/urandom). */
static void compare_with_perf(const char *perfso, const char *ours)
{
	int fa = open(perfso, O_RDONLY), fb = open(ours, O_RDONLY);
	ck_assert_msg(fa >= 0 && fb >= 0, "open %s / %s", perfso, ours);
	static uint8_t a[1 << 16], b[1 << 16];
	ssize_t na = read(fa, a, sizeof(a)), nb = read(fb, b, sizeof(b));
	close(fa);
	close(fb);
	ck_assert_msg(na == nb, "%s: %zd bytes, ours %zd", perfso, na, nb);
	/* the note is the last section: its descriptor is 20 bytes at its end */
	Elf64_Ehdr eh;
	memcpy(&eh, a, sizeof(eh));
	Elf64_Shdr sh;
	memcpy(&sh, a + eh.e_shoff + (size_t)(eh.e_shnum - 1) * sizeof(sh), sizeof(sh));
	ck_assert_uint_eq(sh.sh_type, SHT_NOTE);
	size_t id = (size_t)(sh.sh_offset + sh.sh_size - 20);
	for (ssize_t i = 0; i < na; i++)
		ck_assert_msg((size_t)i - id < 20 || a[i] == b[i], "%s: byte 0x%zx differs: perf %02x ours %02x",
			      perfso, (size_t)i, a[i], b[i]);
	if (!pvt_have_tool("readelf"))
		return;
	char ra[16384], rb[16384];
	ck_assert_int_eq(pvt_run(ra, sizeof(ra), "readelf -hlSW '%s' 2>/dev/null", perfso), 0);
	ck_assert_int_eq(pvt_run(rb, sizeof(rb), "readelf -hlSW '%s' 2>/dev/null", ours), 0);
	ck_assert_str_eq(ra, rb);
}

/* For each golden dump, the jitted-<pid>-<n>.so perf 6.1.187 (Debian 12) wrote
 * from it (tests/golden/perfview/README). */
START_TEST(golden_perf_inject)
{
	DIR *dp = opendir(GOLDEN);
	ck_assert_msg(dp, "cannot open %s: run the tests from the repository root", GOLDEN);
	struct dirent *de;
	int ndumps = 0, nfiles = 0;
	char tmp[] = "/tmp/jupvg-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	while ((de = readdir(dp))) {
		unsigned pid;
		char tail[16];
		if (sscanf(de->d_name, "jit-%u.%15s", &pid, tail) != 2 || strcmp(tail, "dump"))
			continue;
		char path[512];
		snprintf(path, sizeof(path), GOLDEN "%s", de->d_name);
		struct jd_file jd;
		struct ju_err je;
		ck_assert_msg(jd_open(&jd, path, &je) == 0, "%s: %s", path, je.msg);
		for (size_t i = 0; i < jd.nloads; i++) {
			char perfso[512], ours[512];
			snprintf(perfso, sizeof(perfso), GOLDEN "jitted-%u-%llu.so", jd.loads[i].pid,
				 (unsigned long long)jd.loads[i].code_index);
			if (access(perfso, R_OK))
				continue;
			ck_assert_int_eq(pv_jitted_path(ours, sizeof(ours), tmp, &jd.loads[i]), 0);
			ck_assert_msg(pv_write_jitted_elf(ours, PV_CURRENT, &jd.loads[i], (uint16_t)jd.elf_mach,
							  &err) == 0, "%s", err.msg);
			compare_with_perf(perfso, ours);
			nfiles++;
		}
		jd_close(&jd);
		ndumps++;
	}
	closedir(dp);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(ndumps > 0 && nfiles > 0, "no golden dumps in " GOLDEN);
}
END_TEST

/* A fresh `perf record` + `perf inject -j` of real cases, where perf works. */
START_TEST(live_perf_inject)
{
	const char *bin = getenv("JU_BIN");
	if (!bin)
		bin = "./jitunwind";
	if (!pvt_have_tool("perf") || !pvt_have_tool("readelf")) {
		printf("perfview: perf or readelf not installed, live perf inject comparison skipped\n");
		return;
	}
	if (access(bin, X_OK)) {
		printf("perfview: %s not built, live perf inject comparison skipped\n", bin);
		return;
	}
	char out[65536];
	int st = pvt_run(out, sizeof(out), "tools/perf-inject-compare --bin '%s' 2>&1", bin);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("perfview: live perf inject comparison skipped: %s", out);
		return;
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tools/perf-inject-compare failed:\n%s", out);
	/* the script leaves perf's files in the directory it prints last */
	const char *d = strstr(out, "perf files in ");
	ck_assert_msg(d, "no directory in:\n%s", out);
	char dir[256];
	ck_assert_int_eq(sscanf(d, "perf files in %255s", dir), 1);
	DIR *dp = opendir(dir);
	ck_assert_ptr_nonnull(dp);
	struct dirent *de;
	int nfiles = 0;
	while ((de = readdir(dp))) {
		unsigned pid;
		char tail[16];
		if (sscanf(de->d_name, "jit-%u.%15s", &pid, tail) != 2 || strcmp(tail, "dump"))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct jd_file jd;
		struct ju_err je;
		ck_assert_msg(jd_open(&jd, path, &je) == 0, "%s: %s", path, je.msg);
		for (size_t i = 0; i < jd.nloads; i++) {
			char perfso[512], ours[512];
			ck_assert_int_eq(pv_jitted_path(perfso, sizeof(perfso), dir, &jd.loads[i]), 0);
			ck_assert_msg(access(perfso, R_OK) == 0, "perf wrote no %s", perfso);
			snprintf(ours, sizeof(ours), "%s.ours", perfso);
			ck_assert_msg(pv_write_jitted_elf(ours, PV_CURRENT, &jd.loads[i], (uint16_t)jd.elf_mach,
							  &err) == 0, "%s", err.msg);
			compare_with_perf(perfso, ours);
			nfiles++;
		}
		jd_close(&jd);
	}
	closedir(dp);
	ck_assert_int_gt(nfiles, 0);
	st = pvt_run(out, sizeof(out), "tools/perf-inject-compare --diff '%s' 2>&1", dir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "readelf differs:\n%s", out);
	printf("perfview: %d jitted ELF(s) equal to what perf inject -j wrote in %s\n", nfiles, dir);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

void perfview_add_inject(TCase *files, TCase *live)
{
	if (files)
		tcase_add_test(files, golden_perf_inject);
	if (live)
		tcase_add_test(live, live_perf_inject);
}
