/* perf.data writer and reader (unwinders/perfdata).  The writer's bytes are
 * checked against the kernel's own struct layouts (<linux/perf_event.h>), the
 * reader against the writer on every ABI size, and the reader against
 * malformed files: each is rejected with the file name and the offset of the
 * bad field, never a read outside the buffer (the buffers are exact-size heap
 * copies, so make check-asan catches a stray byte).  The CLI test has
 * `record --perf-data` write a file that this reader, and real perf when it
 * is installed, read back with one sample per sample point. */
#include <check.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/capture/samples.h"
#include "tests/hostarch.h"
#include "unwinders/uwarch.h"
#include "harness/run/toperf.h"
#include "unwinders/model/perfdata.h"
#include "juerr.h"
#include "tests/sh.h"

#define X86_MASK 0xff0fffull
#define STACK 64

static const uint32_t abi_sizes[] = { PD_ATTR_SIZE_VER6, PD_ATTR_SIZE_VER7, PD_ATTR_SIZE_VER8 };

static uint8_t stack_bytes[STACK];
static const uint64_t chain_ips[] = { 0xfffffffffffffe00ull, 0x1234 };
static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* A small recording: COMM, MMAP2 by inode, MMAP2 by build-id, two samples
 * (the second with a short stack), FINISHED_ROUND, the features. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* HEADER_CPUID of the next build(); NULL: none, as for x86_64 and arm64 samples */
static const char *build_cpuid;

static void build(struct pd_writer *w, uint32_t attr_size)
{
	struct pd_writer_opts o = {
		.attr_size = attr_size,
		.sample_type = PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CALLCHAIN |
			       PD_SAMPLE_REGS_USER | PD_SAMPLE_STACK_USER,
		.regs_mask = X86_MASK, .stack_size = STACK,
	};
	ck_assert_int_eq(pd_writer_init(w, &o), 0);
	for (int i = 0; i < STACK; i++)
		stack_bytes[i] = (uint8_t)(0x40 + i);
	pd_w_comm(w, 100, 101, "jitunwind", 1000);
	struct pd_mmap2 m = { .pid = 100, .tid = 101, .start = 0x400000, .len = 0x3000, .pgoff = 0x1000,
			      .maj = 8, .min = 1, .ino = 4242, .ino_generation = 7, .prot = 5, .flags = 2,
			      .misc = PD_MISC_USER, .filename = "/usr/bin/thing", .time = 1001 };
	pd_w_mmap2(w, &m);
	struct pd_mmap2 mb = m;
	mb.has_build_id = true;
	memcpy(mb.build_id, bid, 20);
	mb.build_id_size = 20;
	mb.filename = "/tmp/jit-100.dump";
	mb.start = 0x7f0000000000;
	mb.time = 1002;
	pd_w_mmap2(w, &mb);
	pd_w_build_id(w, "/usr/bin/thing", bid, 20);
	struct pd_sample s = { .ip = 0x401234, .pid = 100, .tid = 101, .time = 2000, .nr = 2, .ips_w = chain_ips,
			       .abi = 2, .mask = X86_MASK, .stack = stack_bytes, .dyn_size = STACK };
	for (int r = 0; r < 24; r++)
		s.regs[r] = 0x1000 + (uint64_t)r;
	pd_w_sample(w, &s);
	s.time = 3000;
	s.dyn_size = 24;            /* the stack ended before the dump size: the rest is zeros */
	s.nr = 0;
	pd_w_sample(w, &s);
	pd_w_finished_round(w);
	struct pd_features ft = { .arch = "x86_64", .osrelease = "6.1.0-test", .hostname = "h",
				  .version = "jitunwind", .nr_cpus = 2, .cpuid = build_cpuid };
	struct ju_err err;
	ck_assert_msg(pd_w_finish(w, &ft, NULL, &err) == 0, "%s", err.msg);
}

static uint8_t *copy(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(c);
	memcpy(c, p, n);
	return c;
}

/* parse and walk every event: 0, or the first error */
static int read_all(const uint8_t *p, size_t n, struct ju_err *err, size_t *nev)
{
	uint8_t *c = copy(p, n);
	struct pd_file f;
	int rc = pd_parse_mem(&f, c, n, "t.data", err);
	struct pd_iter it = { 0 };
	struct pd_event ev;
	*nev = 0;
	if (!rc)
		while ((rc = pd_next(&f, &it, &ev, err)) == 1)
			(*nev)++;
	free(c);
	return rc;
}

/* HEADER_CPUID, written where the arch table asks for it (riscv64's perf
 * 6.12 crashes on a file without one under qemu-user): our reader and, where
 * it is installed, real perf's header dump read the same string back */
START_TEST(cpuid_feature)
{
	struct pd_writer w;
	build_cpuid = "0x0-0x0-0x0";
	build(&w, abi_sizes[0]);
	build_cpuid = NULL;
	uint8_t *c = copy(w.b.p, w.b.len);
	struct pd_file f;
	struct ju_err err;
	ck_assert_msg(pd_parse_mem(&f, c, w.b.len, "t.data", &err) == 0, "%s", err.msg);
	const char *s;
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_CPUID, &s, &err), 0);
	ck_assert_str_eq(s, "0x0-0x0-0x0");
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_ARCH, &s, &err), 0);
	ck_assert_str_eq(s, "x86_64");
	char tmp[64] = "/tmp/jutest-cpuid-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	char path[96];
	snprintf(path, sizeof(path), "%s/c.data", tmp);
	FILE *o = fopen(path, "wb");
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(fwrite(w.b.p, 1, w.b.len, o), w.b.len);
	fclose(o);
	if (sh("perf version >/dev/null 2>&1") == 0)
		ck_assert_int_eq(sh("HOME=%s perf report --header-only -i %s 2>/dev/null | grep -q '^# cpuid : 0x0-0x0-0x0$'",
				    tmp, path), 0);
	else
		printf("cpuid_feature: perf not installed: real perf's header dump not checked\n");
	sh("rm -rf '%s'", tmp);
	free(c);
	pd_writer_free(&w);
}
END_TEST

START_TEST(attr_matches_kernel_layout)
{
	struct pd_writer w;
	build(&w, abi_sizes[_i]);
	const uint8_t *p = w.b.p;
	/* the kernel's struct, as the independent reader of the header and attr */
	uint64_t attrs_off, attr_size;
	memcpy(&attr_size, p + 16, 8);
	memcpy(&attrs_off, p + 24, 8);
	ck_assert_uint_eq(attr_size, abi_sizes[_i] + 16);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	memcpy(&a, p + attrs_off, abi_sizes[_i] < sizeof(a) ? abi_sizes[_i] : sizeof(a));
	ck_assert_uint_eq(a.size, abi_sizes[_i]);
	ck_assert_uint_eq(a.type, PERF_TYPE_SOFTWARE);
	ck_assert_uint_eq(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			  PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	ck_assert_uint_eq(a.sample_regs_user, X86_MASK);
	ck_assert_uint_eq(a.sample_stack_user, STACK);
	ck_assert_int_eq(a.clockid, 1);
	ck_assert(a.use_clockid && a.sample_id_all && a.mmap2 && a.mmap_data && a.comm && a.exclude_kernel);
	ck_assert(a.exclude_callchain_user && !a.freq);
	ck_assert_uint_eq(a.sample_period, 1);
	ck_assert_uint_eq(a.sample_max_stack, 127);
	/* the first record is the COMM, its header as the kernel lays it out */
	uint64_t data_off;
	memcpy(&data_off, p + 40, 8);
	struct perf_event_header h;
	memcpy(&h, p + data_off, sizeof(h));
	ck_assert_uint_eq(h.type, PERF_RECORD_COMM);
	ck_assert_uint_eq(h.size, 8 + 8 + 16 + 16);   /* pid/tid, "jitunwind\0" padded, sample_id */
	pd_writer_free(&w);
}
END_TEST

/* A 65528-byte dump does not fit a record (16-bit size): the kernel shrinks it
 * to USHRT_MAX - header - 8, rounded up to 8 (perf_sample_ustack_size), and
 * so does the writer; the header counted here from the sample layout. */
START_TEST(big_dump_shrinks_as_the_kernel)
{
	static uint8_t big[65528];
	struct pd_writer_opts o = {
		.attr_size = PD_ATTR_SIZE_VER7,
		.sample_type = PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CALLCHAIN |
			       PD_SAMPLE_REGS_USER | PD_SAMPLE_STACK_USER,
		.regs_mask = X86_MASK, .stack_size = 65528,
	};
	struct pd_writer w;
	ck_assert_int_eq(pd_writer_init(&w, &o), 0);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	struct pd_sample s = { .ip = 0x401234, .pid = 1, .tid = 1, .time = 10, .abi = 2, .mask = X86_MASK,
			       .stack = big, .dyn_size = sizeof(big) };
	pd_w_sample(&w, &s);
	struct pd_features ft = { .arch = "x86_64", .osrelease = "r", .hostname = "h", .version = "v", .nr_cpus = 1 };
	struct ju_err err;
	ck_assert_msg(pd_w_finish(&w, &ft, NULL, &err) == 0, "%s", err.msg);
	/* header 8, ip, pid/tid, time, callchain nr (0 entries), abi + 20 registers */
	uint64_t hs = 8 + 8 + 8 + 8 + 8 + 8 + 20 * 8 + 2 * 8;
	uint64_t want = (65535 - hs - 8 + 7) & ~7ull;
	uint8_t *c = copy(w.b.p, w.b.len);
	struct pd_file f;
	ck_assert_msg(pd_parse_mem(&f, c, w.b.len, "t.data", &err) == 0, "%s", err.msg);
	struct pd_iter it = { 0 };
	struct pd_event ev;
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
	ck_assert_uint_eq(ev.type, PD_REC_SAMPLE);
	ck_assert_uint_eq(ev.sample.stack_size, want);
	ck_assert_uint_eq(ev.sample.dyn_size, want);
	ck_assert_mem_eq(ev.sample.stack, big, want);
	ck_assert_uint_le(hs + want, 65535);
	free(c);
	pd_writer_free(&w);
}
END_TEST

/* Sample k of build(): its fields, registers and stack as written. */
static void check_built_sample(const struct pd_sample *x, int k)
{
	ck_assert_uint_eq(x->ip, 0x401234);
	ck_assert_uint_eq(x->pid, 100);
	ck_assert_uint_eq(x->tid, 101);
	ck_assert_uint_eq(x->time, k ? 3000 : 2000);
	ck_assert_uint_eq(x->nr, k ? 0 : 2);
	if (!k) {
		ck_assert_uint_eq(pd_u64(x->ips), chain_ips[0]);
		ck_assert_uint_eq(pd_u64(x->ips + 8), chain_ips[1]);
	}
	ck_assert_uint_eq(x->abi, 2);
	ck_assert_uint_eq(x->mask, X86_MASK);
	for (int r = 0; r < 24; r++)
		ck_assert_uint_eq(x->regs[r], X86_MASK >> r & 1 ? 0x1000 + (uint64_t)r : 0);
	ck_assert_uint_eq(x->stack_size, STACK);
	ck_assert_uint_eq(x->dyn_size, k ? 24 : STACK);
	ck_assert_mem_eq(x->stack, stack_bytes, x->dyn_size);
	if (k)
		for (int i = 24; i < STACK; i++)
			ck_assert_uint_eq(x->stack[i], 0);
}

START_TEST(round_trip)
{
	struct pd_writer w;
	build(&w, abi_sizes[_i]);
	uint8_t *c = copy(w.b.p, w.b.len);
	struct pd_file f;
	struct ju_err err;
	ck_assert_msg(pd_parse_mem(&f, c, w.b.len, "t.data", &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(f.nattrs, 1);
	ck_assert_uint_eq(f.attrs[0].size, abi_sizes[_i]);
	ck_assert_uint_eq(f.attrs[0].sample_regs_user, X86_MASK);
	ck_assert(pd_attr_flag(&f.attrs[0], PD_ATTR_USE_CLOCKID));
	const char *s;
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_ARCH, &s, &err), 0);
	ck_assert_str_eq(s, "x86_64");
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_OSRELEASE, &s, &err), 0);
	ck_assert_str_eq(s, "6.1.0-test");
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_CMDLINE, &s, &err), -ENOENT);
	ck_assert_int_eq(pd_feat_string(&f, PD_FEAT_CPUID, &s, &err), -ENOENT);
	struct pd_build_id b;
	uint16_t misc;
	ck_assert_int_eq(pd_feat_build_id(&f, 0, &b, &misc, &err), 1);
	ck_assert_str_eq(b.path, "/usr/bin/thing");
	ck_assert_uint_eq(b.size, 20);
	ck_assert_mem_eq(b.id, bid, 20);
	ck_assert_int_eq(pd_feat_build_id(&f, 1, &b, &misc, &err), 0);

	struct pd_iter it = { 0 };
	struct pd_event ev;
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
	ck_assert_uint_eq(ev.type, PD_REC_COMM);
	ck_assert_str_eq(ev.comm, "jitunwind");
	ck_assert_uint_eq(ev.pid, 100);
	ck_assert_uint_eq(ev.tid, 101);
	ck_assert_uint_eq(ev.time, 1000);
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
	ck_assert_uint_eq(ev.type, PD_REC_MMAP2);
	ck_assert(!ev.mmap.has_build_id);
	ck_assert_uint_eq(ev.mmap.start, 0x400000);
	ck_assert_uint_eq(ev.mmap.len, 0x3000);
	ck_assert_uint_eq(ev.mmap.pgoff, 0x1000);
	ck_assert_uint_eq(ev.mmap.maj, 8);
	ck_assert_uint_eq(ev.mmap.min, 1);
	ck_assert_uint_eq(ev.mmap.ino, 4242);
	ck_assert_uint_eq(ev.mmap.ino_generation, 7);
	ck_assert_uint_eq(ev.mmap.prot, 5);
	ck_assert_uint_eq(ev.mmap.flags, 2);
	ck_assert_str_eq(ev.mmap.filename, "/usr/bin/thing");
	ck_assert_uint_eq(ev.time, 1001);
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
	ck_assert(ev.mmap.has_build_id);
	ck_assert_uint_eq(ev.mmap.build_id_size, 20);
	ck_assert_mem_eq(ev.mmap.build_id, bid, 20);
	ck_assert_str_eq(ev.mmap.filename, "/tmp/jit-100.dump");
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
		ck_assert_uint_eq(ev.type, PD_REC_SAMPLE);
		check_built_sample(&ev.sample, k);
	}
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 1);
	ck_assert_uint_eq(ev.type, PD_REC_FINISHED_ROUND);
	ck_assert_int_eq(pd_next(&f, &it, &ev, &err), 0);
	free(c);
	pd_writer_free(&w);
}
END_TEST

START_TEST(writer_refuses)
{
	struct pd_writer w;
	struct pd_writer_opts o = { .attr_size = 100, .sample_type = PD_SAMPLE_IP, .stack_size = 8 };
	ck_assert_int_eq(pd_writer_init(&w, &o), -EINVAL);
	pd_writer_free(&w);
	o.attr_size = PD_ATTR_SIZE_VER7;
	o.stack_size = 12;                     /* the kernel wants a multiple of 8 */
	ck_assert_int_eq(pd_writer_init(&w, &o), -EINVAL);
	pd_writer_free(&w);
	o.stack_size = 8;
	o.sample_type |= PD_SAMPLE_RAW;        /* a field this writer cannot fill */
	ck_assert_int_eq(pd_writer_init(&w, &o), -EINVAL);
	pd_writer_free(&w);
}
END_TEST

/* Offsets inside the test recording, found by walking it (not hard-coded). */
struct layout { size_t attrs, data, comm, mmap2, sample, end; };

static void find_layout(const struct pd_writer *w, struct layout *l)
{
	const uint8_t *p = w->b.p;
	l->attrs = (size_t)pd_u64(p + 24);
	l->data = (size_t)pd_u64(p + 40);
	l->end = l->data + (size_t)pd_u64(p + 48);
	l->comm = l->data;
	size_t at = l->data;
	l->mmap2 = l->sample = 0;
	while (at < l->end) {
		uint32_t type = p[at] | p[at + 1] << 8;
		if (type == PD_REC_MMAP2 && !l->mmap2)
			l->mmap2 = at;
		if (type == PD_REC_SAMPLE && !l->sample)
			l->sample = at;
		at += (size_t)(p[at + 6] | p[at + 7] << 8);
	}
}

enum where { W_ZERO, W_ATTRS, W_DATA, W_MMAP2, W_SAMPLE };
static const struct bad {
	const char *what;
	enum where base;
	size_t off;            /* from base */
	uint64_t val;
	int width;             /* 0: truncate the file at base + off */
	long err_off;          /* expected offset in the message, from base (-1: any) */
	const char *msg;
} bad[] = {
	{ "truncated header", W_ZERO, 50, 0, 0, -1, "truncated header" },
	{ "foreign endian", W_ZERO, 0, 0x50455246494c4532ull, 8, 0, "byte-swapped" },
	{ "header size", W_ZERO, 8, 96, 8, 8, "header size 96" },
	{ "attr size lie (attr bigger than the header's stride)", W_ATTRS, 4, PD_ATTR_SIZE_VER8 + 8, 4, 4, "but the header says" },
	{ "attr_size not a multiple of 8", W_ZERO, 16, 139, 8, 16, "attr_size 139" },
	{ "attrs section past the end", W_ZERO, 24, 1u << 30, 8, 24, "attrs section" },
	{ "data section past the end", W_ZERO, 48, 1u << 30, 8, 40, "data section" },
	{ "record size 0", W_DATA, 6, 0, 2, 6, "record size 0" },
	{ "record size past the end", W_MMAP2, 6, 0xfff8, 2, 6, "runs past the end" },
	{ "sample stack size past the record", W_SAMPLE, 8 + 8 + 8 + 8 + 8 + 16 + 8 + 8 * 20, 0x10000, 8,
	  8 + 8 + 8 + 8 + 8 + 16 + 8 + 8 * 20, "user stack of 65536 bytes" },
	{ "callchain longer than the record", W_SAMPLE, 8 + 8 + 8 + 8, 1u << 28, 8, 8 + 8 + 8 + 8, "callchain of" },
	{ "MMAP2 name without NUL", W_MMAP2, 6, 72 + 8, 2, 72, "NUL-terminated" },
	{ "sample shorter than its fields", W_SAMPLE, 6, 32, 2, 0, "shorter than its sample_type" },
	{ "stack dyn_size larger than its size", W_SAMPLE, 8 + 8 + 8 + 8 + 8 + 16 + 8 + 8 * 20 + 8 + STACK, 4096, 8,
	  8 + 8 + 8 + 8 + 8 + 16 + 8 + 8 * 20 + 8 + STACK, "dyn_size 4096" },
};

START_TEST(malformed)
{
	const struct bad *b = &bad[_i];
	struct pd_writer w;
	build(&w, PD_ATTR_SIZE_VER7);
	struct layout l;
	find_layout(&w, &l);
	size_t base = b->base == W_ZERO ? 0 : b->base == W_ATTRS ? l.attrs : b->base == W_DATA ? l.data :
		      b->base == W_MMAP2 ? l.mmap2 : l.sample;
	size_t n = w.b.len;
	if (b->width)
		for (int i = 0; i < b->width; i++)
			w.b.p[base + b->off + (size_t)i] = (uint8_t)(b->val >> (8 * i));
	else
		n = base + b->off;
	struct ju_err err = { 0 };
	size_t nev;
	int rc = read_all(w.b.p, n, &err, &nev);
	ck_assert_msg(rc < 0, "%s: accepted (%zu events)", b->what, nev);
	ck_assert_msg(strstr(err.msg, "t.data: offset 0x"), "%s: '%s'", b->what, err.msg);
	ck_assert_msg(strstr(err.msg, b->msg), "%s: '%s'", b->what, err.msg);
	if (b->err_off >= 0) {
		char want[64];
		snprintf(want, sizeof(want), "offset 0x%zx:", base + (size_t)b->err_off);
		ck_assert_msg(strstr(err.msg, want), "%s: expected %s in '%s'", b->what, want, err.msg);
	}
	pd_writer_free(&w);
}
END_TEST

/* Every truncation of a good file is an error with an offset, never a crash;
 * every single-byte change either parses or fails the same way. */
START_TEST(every_truncation_and_byte)
{
	struct pd_writer w;
	build(&w, PD_ATTR_SIZE_VER7);
	struct ju_err err;
	size_t nev;
	ck_assert_int_eq(read_all(w.b.p, w.b.len, &err, &nev), 0);
	ck_assert_uint_eq(nev, 6);
	for (size_t n = 0; n < w.b.len; n++) {
		err.msg[0] = 0;
		ck_assert_msg(read_all(w.b.p, n, &err, &nev) < 0, "truncated to %zu bytes: accepted", n);
		ck_assert_msg(strstr(err.msg, "offset 0x"), "truncated to %zu: '%s'", n, err.msg);
	}
	for (size_t i = 0; i < w.b.len; i += 3) {
		uint8_t keep = w.b.p[i];
		w.b.p[i] ^= 0xff;
		err.msg[0] = 0;
		if (read_all(w.b.p, w.b.len, &err, &nev) < 0)
			ck_assert_msg(strstr(err.msg, "offset 0x"), "byte %zu flipped: '%s'", i, err.msg);
		w.b.p[i] = keep;
	}
	pd_writer_free(&w);
}
END_TEST

/* ---- record --perf-data (the CLI) ---- */


/* Real perf reads what record --perf-data wrote (report -D), injects it, and the
 * reader reads perf's rewrite; a perf older than 6.3 refuses the 6.3 attr. */
static void perf_reads(const char *bin, const char *tmp, const char *c, const char *one, size_t want,
		       size_t s_loads)
{
	struct ju_err err;
	char path[128];
	struct pd_file f;
	struct pd_iter it;
	struct pd_event ev;
	int rc;
	/* no complaint, except, for an arm64 file read by an x86_64 perf, that this
	 * perf build cannot unwind arm64 (proof that it took the arch from HEADER_ARCH) */
	ck_assert_int_eq(sh("HOME=%s perf --buildid-dir %s/bid report -D -i %s/p.data >%s/D 2>%s/D.err && "
			    "! grep -v 'unwind: target platform=arm64 is not supported' %s/D.err | grep -q . && "
			    "test $(grep -c PERF_RECORD_SAMPLE %s/D) -eq %zu",
			    tmp, tmp, tmp, tmp, tmp, tmp, tmp, want), 0);
	/* the reader on a file perf itself wrote: perf inject -j copies every sample and
	 * adds an MMAP2 per jitted load; in dwarf mode it rewrites nothing else */
	ck_assert_int_eq(sh("HOME=%s perf --buildid-dir %s/bid inject -j -i %s/p.data -o %s/pj.data 2>%s/inj.err",
			    tmp, tmp, tmp, tmp, tmp), 0);
	snprintf(path, sizeof(path), "%s/pj.data", tmp);
	ck_assert_msg(pd_open(&f, path, &err) == 0, "%s", err.msg);
	size_t jitted = 0, ns = 0;
	memset(&it, 0, sizeof(it));
	while ((rc = pd_next(&f, &it, &ev, &err)) == 1) {
		if (ev.type == PD_REC_MMAP2 && strstr(ev.mmap.filename, "/jitted-"))
			jitted++;
		if (ev.type == PD_REC_SAMPLE) {
			ck_assert_uint_eq(ev.sample.abi, 2);
			ck_assert_uint_eq(ev.sample.stack_size, 4096);
			ns++;
		}
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_uint_eq(ns, want);
	ck_assert_uint_ge(jitted, s_loads);
	pd_close(&f);
	/* the attr size is what decides whether a perf can read the file: a perf older
	 * than 6.3 refuses the 6.3 layout and reads the 5.10 one */
	int maj = 0, min = 0;
	FILE *v = popen("perf version 2>/dev/null", "r");
	if (v && fscanf(v, "perf version %d.%d", &maj, &min) != 2)
		maj = 0;
	if (v)
		pclose(v);
	if (maj && (maj < 6 || (maj == 6 && min < 3))) {
		for (int k = 0; k < 2; k++) {
			const char *abi = k ? "6.3" : "5.10";
			ck_assert_int_eq(sh("%s record -o %s/s2.bin --jitdump-dir %s --perf-data %s/p2.data --perf-data-abi %s "
					    "%s/%s >%s/log2 2>&1", bin, tmp, tmp, tmp, abi, c, one, tmp), 0);
			int rc2 = sh("HOME=%s perf --buildid-dir %s/bid report -D -i %s/p2.data >/dev/null 2>%s/D2.err",
				     tmp, tmp, tmp, tmp);
			if (k)
				ck_assert_int_eq(sh("grep -q 'incompatible file format' %s/D2.err", tmp), 0);
			ck_assert_msg(k ? rc2 != 0 : rc2 == 0, "perf %d.%d, attr of perf %s: report -D exit %d", maj, min, abi, rc2);
		}
	}
}

START_TEST(record_perf_data)
{
	const char *b = getenv("JU_BIN");
	char bin[512], tmp[64] = "/tmp/jutest-pd-XXXXXX";
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	const char *c = host_cases()->dir, *one = host_cases()->cpython;
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --perf-data %s/p.data --stack-size 4096 "
			    "%s/%s %s/nested-depth3.case >%s/log 2>&1",
			    bin, tmp, tmp, tmp, c, one, c, tmp), 0);
	struct ju_err err;
	char path[128];
	snprintf(path, sizeof(path), "%s/s.bin", tmp);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, path, err.msg, sizeof(err.msg)) == 0, "%s", err.msg);
	size_t want = 0, s_loads = 0;
	for (size_t g = 0; g < s.ngroups; g++) {
		want += s.groups[g].nsamples;
		s_loads += s.groups[g].nfuncs;
	}
	snprintf(path, sizeof(path), "%s/p.data", tmp);
	struct pd_file f;
	ck_assert_msg(pd_open(&f, path, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(f.attrs[0].sample_stack_user, 4096);
	struct pd_iter it = { 0 };
	struct pd_event ev;
	size_t nsamples = 0, markers = 0, comms = 0;
	uint64_t last = 0;
	int rc;
	while ((rc = pd_next(&f, &it, &ev, &err)) == 1) {
		if (ev.type == PD_REC_COMM)
			comms++;
		if (ev.type == PD_REC_MMAP2 && strstr(ev.mmap.filename, "/jit-") && strstr(ev.mmap.filename, ".dump")) {
			markers++;
			ck_assert_msg(access(ev.mmap.filename, R_OK) == 0, "marker %s: no dump there", ev.mmap.filename);
		}
		if (ev.type == PD_REC_SAMPLE) {
			/* in time order, and the pc is the one the samples file has */
			ck_assert_uint_gt(ev.sample.time, last);
			last = ev.sample.time;
			ck_assert_uint_eq(ev.sample.mask, f.attrs[0].sample_regs_user);
			ck_assert_uint_le(ev.sample.dyn_size, 4096);
			nsamples++;
		}
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_uint_eq(nsamples, want);
	ck_assert_uint_eq(markers, s.ngroups);
	ck_assert_uint_eq(comms, s.ngroups);
	pd_close(&f);
	/* the independent reader: real perf, when it is here (a visible skip otherwise) */
	if (sh("command -v perf >/dev/null 2>&1") == 0)
		perf_reads(bin, tmp, c, one, want, s_loads);
	else
		printf("record_perf_data: perf not installed: real perf's reading not checked\n");
	hx_samples_free(&s);
	/* a bad --perf-data-abi is a usage error */
	ck_assert_int_eq(sh("%s record -o %s/x --perf-data %s/y --perf-data-abi 4.0 %s >/dev/null 2>&1", bin, tmp, tmp, c), 2);
	sh("rm -rf '%s'", tmp);
}
END_TEST

/* The reader on a file `perf record --call-graph dwarf` wrote itself (its
 * sample_type, ids, features and perf's own record types): it must see the
 * events perf report -D counts.  Skipped, visibly, where perf cannot record. */
/* --call-graph fp as perf records it on arm64 (the perf-fp column): no stack,
 * LR alone in the user registers, the kernel's user callchain after
 * PERF_CONTEXT_USER starting at the pc; at the callee (the C target keeps a
 * frame record) it holds the return address into the trampoline, the
 * truth's second frame.  Other arches have no LR: refused with the reason. */
START_TEST(fp_mode_writer)
{
	const char *b = getenv("JU_BIN");
	char bin[512], tmp[64] = "/tmp/jutest-fp-XXXXXX";
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	const char *c = host_cases()->dir;
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s %s/nested-depth3.case >%s/log 2>&1",
			    bin, tmp, tmp, c, tmp), 0);
	struct ju_err err;
	char in[128], out[128];
	snprintf(in, sizeof(in), "%s/s.bin", tmp);
	snprintf(out, sizeof(out), "%s/fp.data", tmp);
	struct hx_toperf_opts o = { .callchain_fp = 1 };
	int rc = hx_toperf_write(in, out, &o, &err);
	if (host_facts()->dw_lr < 0) {
		ck_assert_int_eq(rc, -EINVAL);
		ck_assert_msg(strstr(err.msg, "has no link register"), "%s", err.msg);
		sh("rm -rf %s", tmp);
		return;
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, in, err.msg, sizeof(err.msg)) == 0, "%s", err.msg);
	struct pd_file f;
	ck_assert_msg(pd_open(&f, out, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(f.attrs[0].sample_type & PD_SAMPLE_STACK_USER, 0);
	ck_assert_uint_eq(f.attrs[0].sample_regs_user, 1ull << uw_arch_host()->perf_lr);   /* arm64 30, riscv64 1 */
	ck_assert(!pd_attr_flag(&f.attrs[0], PD_ATTR_EXCLUDE_CALLCHAIN_USER));
	struct pd_iter it = { 0 };
	struct pd_event ev;
	size_t k = 0, callee = 0;
	while ((rc = pd_next(&f, &it, &ev, &err)) == 1) {
		if (ev.type != PD_REC_SAMPLE)
			continue;
		const struct hx_sample *hs = &s.groups[0].samples[k++];
		ck_assert_uint_ge(ev.sample.nr, 2);
		ck_assert_uint_eq(pd_u64(ev.sample.ips), 0xfffffffffffffe00ull);
		const struct uw_arch *ua = uw_arch_host();      /* arm64: pc 32, lr 30; riscv64: pc 0, ra 1 */
		ck_assert_uint_eq(pd_u64(ev.sample.ips + 8), hs->regs[ua->perf_ip]);
		ck_assert_uint_eq(ev.sample.mask, 1ull << ua->perf_lr);
		ck_assert_uint_eq(ev.sample.regs[ua->perf_lr], hs->regs[ua->perf_lr]);
		if (hs->func == HX_FUNC_CALLEE && hs->ntruth > 1) {      /* the C target */
			bool has = false;
			for (uint64_t i = 2; i < ev.sample.nr; i++)
				has |= pd_u64(ev.sample.ips + 8 * i) == hs->truth[1];
			ck_assert_msg(has, "callee sample: the kernel chain lacks the trampoline's return address");
			callee++;
		}
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_uint_eq(k, s.groups[0].nsamples);
	ck_assert_uint_ge(callee, 1);
	pd_close(&f);
	hx_samples_free(&s);
	sh("rm -rf %s", tmp);
}
END_TEST

START_TEST(reads_perf_record)
{
	struct ju_err err;
	char tmp[64] = "/tmp/jutest-pdr-XXXXXX", path[128];
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	if (sh("command -v perf >/dev/null 2>&1") ||
	    sh("HOME=%s perf record -q -k 1 -e cpu-clock -F 2000 --call-graph dwarf,1024 -o %s/r.data -- "
	       "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' >%s/rec.log 2>&1", tmp, tmp, tmp)) {
		printf("reads_perf_record: skipped: perf missing or perf record refused here\n");
		sh("rm -rf '%s'", tmp);
		return;
	}
	int want = -1;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "HOME=%s perf --buildid-dir %s/bid report -D -i %s/r.data 2>/dev/null | "
		 "awk '/Aggregated stats/ { a = 1 } a && $1 == \"SAMPLE\" { print $3; exit }'", tmp, tmp, tmp);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(fscanf(p, "%d", &want), 1);
	pclose(p);
	snprintf(path, sizeof(path), "%s/r.data", tmp);
	struct pd_file f;
	ck_assert_msg(pd_open(&f, path, &err) == 0, "%s", err.msg);
	ck_assert(f.attrs[0].sample_type & PD_SAMPLE_STACK_USER);
	struct pd_iter it = { 0 };
	struct pd_event ev;
	int rc, n = 0, stacks = 0;
	while ((rc = pd_next(&f, &it, &ev, &err)) == 1)
		if (ev.type == PD_REC_SAMPLE) {
			n++;
			stacks += ev.sample.stack_size == 1024;
			ck_assert_uint_eq(ev.sample.mask, f.attrs[0].sample_regs_user);
		}
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_int_eq(n, want);
	ck_assert_int_gt(stacks, 0);
	pd_close(&f);
	sh("rm -rf '%s'", tmp);
}
END_TEST

Suite *suite_perfdata(void);
Suite *suite_perfdata(void)
{
	Suite *s = suite_create("perfdata");
	TCase *tc = tcase_create("format");
	size_t nabi = sizeof(abi_sizes) / sizeof(abi_sizes[0]);
	tcase_add_loop_test(tc, attr_matches_kernel_layout, 0, (int)nabi);
	tcase_add_loop_test(tc, round_trip, 0, (int)nabi);
	tcase_add_test(tc, writer_refuses);
	tcase_add_test(tc, cpuid_feature);
	tcase_add_test(tc, big_dump_shrinks_as_the_kernel);
	tcase_add_loop_test(tc, malformed, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, every_truncation_and_byte);
	suite_add_tcase(s, tc);
	TCase *cli = tcase_create("record");
	tcase_set_timeout(cli, 120);
	tcase_add_test(cli, record_perf_data);
	tcase_add_test(cli, reads_perf_record);
	tcase_add_test(cli, fp_mode_writer);
	suite_add_tcase(s, cli);
	return s;
}
