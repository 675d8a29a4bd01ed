/* `jitunwind dump`'s output functions (harness/cli/dumpcmd.c, hx_dump_mem)
 * on the golden dumps real perf read (tests/golden/perfview), each line
 * checked against binutils reading the jitted .so perf inject -j wrote from
 * the same dump: the CFA rows against readelf --debug-dump=frames-interp,
 * the instructions' bytes against objdump -d, perf's view line against
 * readelf -lSW.  A dump cut inside a record stops with that record named. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/hostarch.h"
#include "harness/report/dump.h"
#include "unwinders/model/jitdump.h"

#define GOLD "tests/golden/perfview/"

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f, "%s: run the tests from the repository root", path);
	static char buf[1 << 16];
	*n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return buf;
}

/* hx_dump_mem's text for one golden dump (caller frees) */
static char *dump_text(const char *path, int *rc)
{
	size_t n;
	const char *d = slurp(path, &n);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	ck_assert_ptr_nonnull(f);
	*rc = hx_dump_mem(f, path, (const uint8_t *)d, n, false, PV_CURRENT, true);
	fclose(f);
	return out;
}

/* tool ('readelf -lSW', ...) on file: its stdout (caller frees) */
static char *run(const char *tool, const char *file)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s '%s' 2>/dev/null", tool, file);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = 0;
	ck_assert_int_eq(pclose(p), 0);
	return strdup(buf);
}

static bool have_binutils(void)
{
	if (system("readelf --version >/dev/null 2>&1") || system("objdump --version >/dev/null 2>&1")) {
		printf("dumpcmd: readelf/objdump not installed, dump output not cross-checked\n");
		return false;
	}
	return true;
}

/* the .so of the golden 28006 (CPython's trampoline: push, mov, call, pop, ret) */
#define PID "28006"

/* dump's rows ("[lo, hi)  cfa=rsp+8 ...") against readelf's interpreted
 * table (LOC in the .so, CFA column), lo shifted by code_addr - .text */
START_TEST(rows_match_readelf)
{
	if (!have_binutils())
		return;
	int rc;
	char *t = dump_text(GOLD "jit-" PID ".dump", &rc);
	ck_assert_int_eq(rc, 0);
	char *re = run("readelf --debug-dump=frames-interp", GOLD "jitted-" PID "-0.so");
	const char *fde = strstr(re, "FDE");
	ck_assert_ptr_nonnull(fde);
	const char *rows = strstr(t, "rows:");
	ck_assert_ptr_nonnull(rows);
	unsigned long long code = 0;
	const char *ca = strstr(t, "code_addr 0x");
	ck_assert_int_eq(sscanf(ca, "code_addr 0x%llx", &code), 1);
	int nrow = 0;
	const char *line = strchr(fde, '\n') + 1;
	line = strchr(line, '\n') + 1;                                   /* LOC CFA ... header */
	const char *r = strchr(rows, '\n') + 1;
	for (;;) {
		unsigned long long loc, lo, hi;
		char cfa[32], dcfa[32];
		if (sscanf(line, "%llx %31s", &loc, cfa) != 2)
			break;
		/* dump's rows end first where a newer readelf adds lines after the
		 * table (binutils 2.44, Debian 13: the section's missing terminator) */
		if (sscanf(r, " [0x%llx, 0x%llx) cfa=%31s", &lo, &hi, dcfa) != 3)
			break;
		ck_assert_uint_eq(lo, loc - 0x80 + code);
		ck_assert_str_eq(dcfa, cfa);
		nrow++;
		line = strchr(line, '\n') + 1;
		r = strchr(r, '\n') + 1;
	}
	ck_assert_int_eq(nrow, 4);
	free(re);
	free(t);
}
END_TEST

/* each instruction line's offset and bytes against objdump -d of the .so */
START_TEST(code_matches_objdump)
{
	if (!have_binutils())
		return;
	/* a .so of another arch than this machine's: binutils built for this
	 * one only (an arm64 container) may not disassemble it; a visible skip
	 * then, a failure on the .so's own arch */
	size_t sn;
	const uint8_t *so = (const uint8_t *)slurp(GOLD "jitted-" PID "-0.so", &sn);
	ck_assert_uint_gt(sn, 20);
	unsigned mach = so[18] | so[19] << 8;
	if (mach != host_facts()->elf_mach &&
	    system("objdump -d '" GOLD "jitted-" PID "-0.so' >/dev/null 2>&1")) {
		printf("dumpcmd: this machine's objdump does not disassemble ELF machine %u: code not cross-checked\n", mach);
		return;
	}
	int rc;
	char *t = dump_text(GOLD "jit-" PID ".dump", &rc);
	char *od = run("objdump -d", GOLD "jitted-" PID "-0.so");
	const char *o = strstr(od, "<tramp>:");
	ck_assert_ptr_nonnull(o);
	o = strchr(o, '\n') + 1;
	const char *d = strstr(t, "code: file");
	ck_assert_ptr_nonnull(d);
	d = strchr(d, '\n') + 1;
	int n = 0;
	for (;;) {
		unsigned off, doff;
		unsigned long long addr;
		char ob[64] = "", db[64] = "";
		if (sscanf(o, " %x:\t%63[0-9a-f ]", &off, ob) != 2)
			break;
		ck_assert_msg(sscanf(d, " 0x%llx +0x%x %63[0-9a-f ]", &addr, &doff, db) == 3, "dump: %.80s", d);
		ck_assert_uint_eq(doff, off - 0x80);
		/* the hex bytes: dump pads them with spaces before the mnemonic
		 * (which may start with hex letters: "callq") */
		char *gap = strstr(db, "  ");
		if (gap)
			*gap = 0;
		for (char *e = ob + strlen(ob); e > ob && e[-1] == ' '; *--e = 0) {}
		for (char *e = db + strlen(db); e > db && e[-1] == ' '; *--e = 0) {}
		ck_assert_str_eq(db, ob);
		n++;
		o = strchr(o, '\n') + 1;
		d = strchr(d, '\n') + 1;
	}
	ck_assert_int_eq(n, 5);
	free(od);
	free(t);
}
END_TEST

/* "perf's view (current): ... .text 0x80 (8 bytes) .eh_frame 0x88 (56)
 * .eh_frame_hdr 0xc0 (20)" and the PT_LOAD, against readelf -lSW */
START_TEST(view_line_matches_readelf)
{
	if (!have_binutils())
		return;
	static const char *const pids[] = { "28006", "28007", "28013" };
	for (size_t i = 0; i < 3; i++) {
		char dump[128], so[128];
		snprintf(dump, sizeof(dump), GOLD "jit-%s.dump", pids[i]);
		snprintf(so, sizeof(so), GOLD "jitted-%s-0.so", pids[i]);
		int rc;
		char *t = dump_text(dump, &rc);
		char *re = run("readelf -lSW", so);
		const char *v = strstr(t, "perf's view (current):");
		ck_assert_ptr_nonnull(v);
		unsigned long long ta, tn, ea, en, ha, hn, po, pv, ps;
		ck_assert_int_eq(sscanf(strstr(v, ".text "), ".text 0x%llx (%llu bytes)", &ta, &tn), 2);
		ck_assert_int_eq(sscanf(strstr(v, ".eh_frame "), ".eh_frame 0x%llx (%llu)", &ea, &en), 2);
		ck_assert_int_eq(sscanf(strstr(v, ".eh_frame_hdr "), ".eh_frame_hdr 0x%llx (%llu)", &ha, &hn), 2);
		ck_assert_int_eq(sscanf(strstr(v, "PT_LOAD"), "PT_LOAD offset 0x%llx vaddr 0x%llx size 0x%llx", &po, &pv, &ps), 3);
		char want[128];
		snprintf(want, sizeof(want), ".text             PROGBITS        %016llx %06llx %06llx", ta, ta, tn);
		ck_assert_msg(strstr(re, want), "%s: no '%s' in readelf:\n%s", so, want, re);
		snprintf(want, sizeof(want), ".eh_frame         PROGBITS        %016llx %06llx %06llx", ea, ea, en);
		ck_assert_msg(strstr(re, want), "%s: no '%s'", so, want);
		snprintf(want, sizeof(want), ".eh_frame_hdr     PROGBITS        %016llx %06llx %06llx", ha, ha, hn);
		ck_assert_msg(strstr(re, want), "%s: no '%s'", so, want);
		snprintf(want, sizeof(want), "LOAD           0x%06llx 0x%016llx 0x%016llx 0x%06llx", po, pv, pv, ps);
		ck_assert_msg(strstr(re, want), "%s: no '%s'", so, want);
		free(re);
		free(t);
	}
}
END_TEST

/* negative control: the dump cut inside its CODE_LOAD stops there, named */
START_TEST(cut_dump_names_the_record)
{
	size_t n;
	const char *d = slurp(GOLD "jit-" PID ".dump", &n);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int rc = hx_dump_mem(f, "cut.dump", (const uint8_t *)d, 0xa0 + 20, false, PV_CURRENT, false);
	fclose(f);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "stopped (JD010") && strstr(out, "record id 0 of total_size 72 runs past the end"), "%s", out);
	ck_assert_msg(!strstr(out, "CODE_CLOSE"), "%s", out);
	free(out);
	f = open_memstream(&out, &len);
	ck_assert_ptr_nonnull(f);
	rc = hx_dump_mem(f, "x.dump", (const uint8_t *)"JiTD", 4, false, PV_CURRENT, false);   /* not a jitdump */
	fclose(f);
	ck_assert_int_eq(rc, 2);
	free(out);
}
END_TEST

Suite *suite_dumpcmd(void);
Suite *suite_dumpcmd(void)
{
	Suite *s = suite_create("dumpcmd");
	TCase *tc = tcase_create("dumpcmd");
	tcase_add_test(tc, rows_match_readelf);
	tcase_add_test(tc, code_matches_objdump);
	tcase_add_test(tc, view_line_matches_readelf);
	tcase_add_test(tc, cut_dump_names_the_record);
	suite_add_tcase(s, tc);
	return s;
}
