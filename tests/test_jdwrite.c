/* trampolines/jitdump.c: the dump as perf reads it (facts section 1).  The
 * whole file, with pid/tid/timestamps masked, is compared with a golden dump;
 * the structural rules perf depends on are asserted one by one. */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trampolines/tramp.h"

#define GOLDEN "tests/golden/trampolines/jitdump.txt"
#define CODE1 0x7f1000ull
#define CODE2 0x7f1080ull

static struct ju_err err;
static char base[64];   /* per tcase, made and removed by the parent (unchecked fixture) */
static char dir[128];   /* per test, inside base */

static struct tr_func *emit_lines(const char *const *lines, size_t n)
{
	struct tr_op ops[16];
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0, "%s", err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(&tr_arch_x86_64, ops, n, f, &err) == 0, "%s", err.msg);
	return f;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	ck_assert_msg(fp, "open %s: %s", path, strerror(errno));
	static uint8_t buf[65536];
	*len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	return buf;
}

static bool maps_has(const char *path, const char *perms)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(fp);
	char line[1024];
	bool found = false;
	while (fgets(line, sizeof(line), fp))
		if (strstr(line, path) && (!perms || strstr(line, perms)))
			found = true;
	fclose(fp);
	return found;
}

/* Hex dump with the run-dependent bytes shown as "--". */
static size_t dump_masked(char *out, size_t cap, const uint8_t *p, size_t n, const bool *mask)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 8 < cap; i++) {
		if (i && i % 16 == 0)
			o += (size_t)snprintf(out + o, cap - o, "\n");
		if (mask[i])
			o += (size_t)snprintf(out + o, cap - o, "%s--", i % 16 ? " " : "  ");
		else
			o += (size_t)snprintf(out + o, cap - o, "%s%02x", i % 16 ? " " : "  ", p[i]);
	}
	o += (size_t)snprintf(out + o, cap - o, "\n");
	return o;
}

static void base_setup(void)
{
	snprintf(base, sizeof(base), "/tmp/ju-jd-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
}

static void base_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "jdwrite: could not remove %s\n", base);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* The dump, pid/tid/timestamps masked, against GOLDEN (JU_UPDATE_GOLDEN=1 rewrites it). */
static void compare_golden(const uint8_t *d, size_t len, const bool *mask)
{
	static char text[262144];
	size_t o = 0;
	o += (size_t)snprintf(text + o, sizeof(text) - o, "header\n");
	o += dump_masked(text + o, sizeof(text) - o, d, 40, mask);
	for (size_t off = 40; off < len; off += rd32(d + off + 4)) {
		o += (size_t)snprintf(text + o, sizeof(text) - o, "record id %u size %u\n", rd32(d + off), rd32(d + off + 4));
		o += dump_masked(text + o, sizeof(text) - o, d + off, rd32(d + off + 4), mask + off);
	}
	if (getenv("JU_UPDATE_GOLDEN")) {
		FILE *g = fopen(GOLDEN, "w");
		ck_assert_ptr_nonnull(g);
		fputs(text, g);
		fclose(g);
		printf("jdwrite: wrote %s\n", GOLDEN);
	}
	size_t glen;
	const char *golden = (const char *)slurp(GOLDEN, &glen);
	ck_assert_msg(glen == o && !memcmp(golden, text, o), "jitdump differs from " GOLDEN ":\n%s", text);
}

/* perf map: "<addr hex> <size hex> <name>" per load */
static void check_perf_map(void)
{
	char mpath[4200];
	snprintf(mpath, sizeof(mpath), "%s/perf-%u.map", dir, (unsigned)getpid());
	size_t mlen;
	const char *map = (const char *)slurp(mpath, &mlen);
	static const char want_map[] = "7f1000 8 tramp\n7f1080 b py::trampoline2\n";
	ck_assert_uint_eq(mlen, strlen(want_map));
	ck_assert_mem_eq(map, want_map, mlen);
}

/* The dump's file header; returns its timestamp (records never go back before it). */
static uint64_t check_dump_header(const uint8_t *d, size_t len)
{
	ck_assert_uint_ge(len, 40);
	ck_assert_uint_eq(rd32(d), 0x4A695444);
	ck_assert_uint_eq(rd32(d + 4), 1);
	ck_assert_uint_eq(rd32(d + 8), 40);
	ck_assert_uint_eq(rd32(d + 12), EM_X86_64);
	ck_assert_uint_eq(rd32(d + 20), (uint32_t)getpid());
	ck_assert_uint_eq(rd64(d + 32), 0);
	return rd64(d + 24);
}

/* A JIT_CODE_LOAD record r of size bytes: code index k of func at addr, named name. */
static void check_code_load(const uint8_t *r, uint32_t size, uint64_t addr, const struct tr_func *func,
			    const char *name, size_t k)
{
	ck_assert_uint_eq(rd32(r + 16), (uint32_t)getpid());
	ck_assert_uint_eq(rd32(r + 20), (uint32_t)syscall(SYS_gettid));
	ck_assert_uint_eq(rd64(r + 24), addr);          /* vma */
	ck_assert_uint_eq(rd64(r + 32), addr);          /* code_addr */
	ck_assert_uint_eq(rd64(r + 40), func->code_size);
	ck_assert_uint_eq(rd64(r + 48), k);             /* code_index */
	ck_assert_str_eq((const char *)r + 56, name);
	/* perf takes the code as the last code_size bytes */
	ck_assert_mem_eq(r + size - func->code_size, func->code, func->code_size);
	for (size_t i = 56 + strlen(name); i < size - func->code_size; i++)
		ck_assert_uint_eq(r[i], 0);
}

/* The marker mapping perf records as the jitdump's MMAP: r-x in /proc/self/maps.
 * qemu-user 10 emulates that file from its own page table and, in some layouts (every run
 * under setarch -R here), leaves this file mapping out; under qemu no perf sees the mapping
 * anyway.  There the mapping is checked by what it maps: the header, read through it.
 * Natively the maps line is required. */
static void check_marker(const struct jdw *w)
{
	if (maps_has(w->path, "r-xp"))
		return;
	const char *jb = getenv("JU_BIN");
	ck_assert_msg(jb && strstr(jb, "qemu-"), "no r-x marker mapping of %s", w->path);
	ck_assert_ptr_nonnull(w->marker);
	ck_assert_uint_eq(rd32((const uint8_t *)w->marker), 0x4A695444);
	ck_assert_uint_eq(rd32((const uint8_t *)w->marker + 20), (uint32_t)getpid());
	printf("jdwrite: the marker mapping checked through itself: qemu-user's /proc/self/maps leaves it out\n");
}

START_TEST(test_dump)
{
	static const char *const fp[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
	static const char *const nofp[] = { "alloc 8", "call_target", "free 8", "ret" };
	struct tr_func *f1 = emit_lines(fp, 5), *f2 = emit_lines(nofp, 4);
	struct tr_unwind_opts uo;
	tr_unwind_opts_default(&uo);
	struct tr_unwind u1, u2;
	ck_assert_msg(tr_unwind_build(f1, &uo, CODE1, &u1, &err) == 0, "%s", err.msg);
	ck_assert_msg(tr_unwind_build(f2, &uo, CODE2, &u2, &err) == 0, "%s", err.msg);

	struct jdw w;
	int rc = jdw_open(&w, dir, EM_X86_64);
	ck_assert_msg(rc == 0, "jdw_open: %s", strerror(-rc));
	check_marker(&w);
	uint64_t i1 = 99, i2 = 99;
	ck_assert_int_eq(jdw_unwinding_info(&w, u1.data, u1.size, u1.hdr_size, u1.mapped_size), 0);
	ck_assert_int_eq(jdw_code_load(&w, "tramp", CODE1, f1->code, f1->code_size, &i1), 0);
	ck_assert_int_eq(jdw_unwinding_info(&w, u2.data, u2.size, u2.hdr_size, u2.mapped_size), 0);
	ck_assert_int_eq(jdw_code_load(&w, "py::trampoline2", CODE2, f2->code, f2->code_size, &i2), 0);
	ck_assert_uint_eq(i1, 0);
	ck_assert_uint_eq(i2, 1);
	char path[4096];
	snprintf(path, sizeof(path), "%s", w.path);
	ck_assert_int_eq(jdw_close(&w), 0);
	ck_assert_msg(!maps_has(path, NULL), "marker still mapped after jdw_close");

	size_t len;
	const uint8_t *d = slurp(path, &len);
	uint64_t last_ts = check_dump_header(d, len);

	static bool mask[65536];
	memset(mask, 0, sizeof(mask));
	memset(mask + 20, 1, 12);                      /* pid, timestamp */
	static const uint32_t want_ids[] = { 4, 0, 4, 0, 3 };
	const struct tr_func *funcs[] = { f1, f2 };
	const struct tr_unwind *unw[] = { &u1, &u2 };
	const uint64_t addrs[] = { CODE1, CODE2 };
	const char *names[] = { "tramp", "py::trampoline2" };
	size_t off = 40, nrec = 0;
	while (off < len) {
		ck_assert_uint_lt(nrec, 5);
		ck_assert_uint_le(off + 16, len);
		const uint8_t *r = d + off;
		uint32_t id = rd32(r), size = rd32(r + 4);
		ck_assert_msg(id == want_ids[nrec], "record %zu: id %u, want %u", nrec, id, want_ids[nrec]);
		ck_assert_msg(size % 8 == 0, "record %zu: size %u not a multiple of 8", nrec, size);
		ck_assert_uint_le(off + size, len);
		ck_assert_uint_ge(rd64(r + 8), last_ts);   /* CLOCK_MONOTONIC: never backwards */
		last_ts = rd64(r + 8);
		memset(mask + off + 8, 1, 8);
		size_t k = nrec / 2;
		if (id == 4) {
			ck_assert_uint_eq(rd64(r + 16), unw[k]->size);
			ck_assert_uint_eq(rd64(r + 24), unw[k]->hdr_size);
			ck_assert_uint_eq(rd64(r + 32), unw[k]->mapped_size);
			ck_assert_uint_eq(size, (40 + unw[k]->size + 7) / 8 * 8);
			ck_assert_mem_eq(r + 40, unw[k]->data, unw[k]->size);
			for (size_t i = 40 + unw[k]->size; i < size; i++)
				ck_assert_uint_eq(r[i], 0);
		} else if (id == 0) {
			check_code_load(r, size, addrs[k], funcs[k], names[k], k);
			memset(mask + off + 16, 1, 8);
		} else {
			ck_assert_uint_eq(size, 16);
		}
		off += size;
		nrec++;
	}
	ck_assert_uint_eq(nrec, 5);
	ck_assert_uint_eq(off, len);

	compare_golden(d, len, mask);
	check_perf_map();
	free(f1);
	free(f2);
}
END_TEST

START_TEST(test_errors)
{
	struct jdw w;
	char missing[256];
	snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
	ck_assert_int_eq(jdw_open(&w, missing, EM_X86_64), -ENOENT);

	ck_assert_int_eq(jdw_open(&w, dir, EM_AARCH64), 0);
	/* A full disk: every writer reports it. */
	int full = open("/dev/full", O_WRONLY);
	if (full < 0) {
		printf("jdwrite: /dev/full missing, write-error checks skipped\n");
	} else {
		int saved = w.fd;
		w.fd = full;
		static const uint8_t code[] = { 0xc3 };
		ck_assert_int_eq(jdw_code_load(&w, "x", 0x1000, code, 1, NULL), -ENOSPC);
		ck_assert_int_eq(jdw_unwinding_info(&w, code, 1, 0, 0), -ENOSPC);
		ck_assert_uint_eq(w.next_index, 0);    /* a failed load takes no index */
		w.fd = saved;
		close(full);
	}
	ck_assert_int_eq(jdw_unwinding_info(&w, (const uint8_t *)"", 0, 8, 0), -EINVAL);
	ck_assert_int_eq(jdw_close(&w), 0);
	size_t len;
	const uint8_t *d = slurp(w.path, &len);
	ck_assert_uint_eq(len, 40 + 16);               /* header + CODE_CLOSE */
	ck_assert_uint_eq(rd32(d + 12), EM_AARCH64);
	ck_assert_uint_eq(rd32(d + 40), 3);
	ck_assert_uint_eq(rd32(d + 44), 16);
	uint64_t t1 = jdw_timestamp(), t2 = jdw_timestamp();
	ck_assert_uint_ge(t2, t1);
}
END_TEST

Suite *suite_jdwrite(void)
{
	Suite *s = suite_create("jdwrite");
	TCase *tc = tcase_create("jdwrite");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_dump);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}
