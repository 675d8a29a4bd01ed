/* The kernel sampler's record path (harness/capture/ksampler.c,
 * hx_ksample_record): a PERF_RECORD_SAMPLE body laid out by hand from
 * perf_event.h's documented order (ip, pid/tid, time, callchain, regs_user,
 * stack_user) becomes a kernel SAMPLE payload laid out as samples.h
 * documents it, checked byte by byte here; bodies that are not the spin
 * point's are passed over, and malformed ones (a truncated stack copy, a
 * callchain longer than the record, dyn_size past the copy) are refused
 * with the offset of the field at fault. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/capture/capture.h"
#include "harness/capture/ksampler.h"
#include "harness/capture/samples.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/uwarch.h"

#define PC 0x7f0000001234ull
#define SP 0x7ffc00001000ull
#define RING_OFF 0x5000ull           /* where the body sits in the ring's stream */

static uint8_t body[8192], out[HX_KS_OUT_MAX];
static const struct uw_arch *arch;
static struct pd_attr attr;
static struct hx_spin_msg msg;

static void w64(size_t *o, uint64_t v) { memcpy(body + *o, &v, 8); *o += 8; }

static uint64_t reg_value(int bit) { return 0x1000u + (uint64_t)bit; }

/* The body as the kernel writes it for ksampler's sample_type; the byte
 * offsets of the callchain's nr and of the stack's size in *nr_at, *size_at. */
static size_t build(uint64_t ip, uint32_t pid, uint64_t stack_size, uint64_t dyn, size_t *nr_at, size_t *size_at)
{
	size_t o = 0;
	memset(body, 0, sizeof(body));
	w64(&o, ip);
	uint32_t pt[2] = { pid, pid + 1 };
	memcpy(body + o, pt, 8);
	o += 8;
	w64(&o, 123456789);                                   /* time */
	*nr_at = o;
	w64(&o, 4);                                           /* callchain: USER marker + 3 */
	w64(&o, (uint64_t)PERF_CONTEXT_USER);
	w64(&o, PC);
	w64(&o, 0x7f0000005000ull);
	w64(&o, 0x7f0000006000ull);
	w64(&o, PERF_SAMPLE_REGS_ABI_64);
	for (int bit = 0; bit < 64; bit++)
		if (arch->facts->perf_mask >> bit & 1)
			w64(&o, bit == arch->perf_sp ? SP : reg_value(bit));
	*size_at = o;
	w64(&o, stack_size);
	for (uint64_t i = 0; i < stack_size; i++)
		body[o + i] = (uint8_t)(0xa0 + i);
	o += stack_size;
	w64(&o, dyn);
	return o;
}

static void setup(void)
{
	arch = uw_arch_host();
	ck_assert_ptr_nonnull(arch);
	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			   PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	attr.sample_regs_user = arch->facts->perf_mask;
	attr.sample_stack_user = 64;
	memset(&msg, 0, sizeof(msg));
	msg.pc = PC;
	msg.func = 2;
	msg.offset = 0x14;
	msg.ntruth = 3;
	msg.truth[0] = PC;
	msg.truth[1] = 0x7f0000005000ull;
	msg.truth[2] = 0x7f0000006000ull;
	msg.fpflag[0] = HX_FP_REPORTED;
	msg.fpflag[1] = HX_FP_SKIPPED;
	msg.fpflag[2] = HX_FP_NOT_RA;
}

static uint64_t at64(size_t o) { uint64_t v; memcpy(&v, out + o, 8); return v; }
static uint32_t at32(size_t o) { uint32_t v; memcpy(&v, out + o, 4); return v; }

/* samples.h's SAMPLE layout, kernel flavour, at hand-computed offsets */
START_TEST(payload_layout)
{
	size_t nr_at, size_at, len = 0;
	pid_t me = getpid();
	size_t n = build(PC, (uint32_t)me, 64, 44, &nr_at, &size_at);
	char err[256] = "";
	ck_assert_int_eq(hx_ksample_record(&attr, arch, body, n, RING_OFF, me, &msg, out, &len, err, sizeof(err)), 1);
	uint32_t nregs = (uint32_t)__builtin_popcountll(arch->facts->perf_mask);
	ck_assert_uint_eq(at32(0), 2);
	ck_assert_uint_eq(at32(4), 0x14);
	ck_assert_uint_eq(at64(8), PERF_SAMPLE_REGS_ABI_64);
	ck_assert_uint_eq(at64(16), arch->facts->perf_mask);
	ck_assert_uint_eq(at32(24), nregs);
	ck_assert_uint_eq(at32(28), 3);
	ck_assert_uint_eq(at64(32), SP);                      /* stack_addr: the sample's sp */
	ck_assert_uint_eq(at64(40), 44);                      /* stack_size: dyn_size, not the 64 asked */
	size_t o = 48;
	for (int bit = 0; bit < 64; bit++)
		if (arch->facts->perf_mask >> bit & 1) {
			ck_assert_uint_eq(at64(o), bit == arch->perf_sp ? SP : reg_value(bit));
			o += 8;
		}
	for (unsigned i = 0; i < 3; i++, o += 8)
		ck_assert_uint_eq(at64(o), msg.truth[i]);
	ck_assert_uint_eq(out[o], HX_FP_REPORTED);
	ck_assert_uint_eq(out[o + 1], HX_FP_SKIPPED);
	ck_assert_uint_eq(out[o + 2], HX_FP_NOT_RA);
	for (unsigned i = 3; i < 8; i++)
		ck_assert_uint_eq(out[o + i], 0);
	o += 8;
	for (unsigned i = 0; i < 44; i++)
		ck_assert_uint_eq(out[o + i], 0xa0 + i);
	for (unsigned i = 44; i < 48; i++)                    /* the stack padded to 8 */
		ck_assert_uint_eq(out[o + i], 0);
	o += 48;
	ck_assert_uint_eq(at64(o), 3);                        /* PERF_CONTEXT_USER left out */
	ck_assert_uint_eq(at64(o + 8), PC);
	ck_assert_uint_eq(at64(o + 16), 0x7f0000005000ull);
	ck_assert_uint_eq(at64(o + 24), 0x7f0000006000ull);
	ck_assert_uint_eq(len, o + 32);
}
END_TEST

/* ... and the samples reader takes it back as a kernel sample */
START_TEST(payload_reads_back)
{
	size_t nr_at, size_at, len = 0;
	pid_t me = getpid();
	size_t n = build(PC, (uint32_t)me, 64, 64, &nr_at, &size_at);
	char err[256] = "";
	ck_assert_int_eq(hx_ksample_record(&attr, arch, body, n, RING_OFF, me, &msg, out, &len, err, sizeof(err)), 1);
	char path[] = "/tmp/ju-ks-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hx_samples_write_header(fd, arch->facts->elf_mach), 0);
	ck_assert_int_eq(hx_rec_write(fd, HX_REC_CASE, "k.case", 7, "[case]\n", 7), 0);
	ck_assert_int_eq(hx_rec_write_flags(fd, HX_REC_SAMPLE, HX_REC_F_KERNEL, out, len, NULL, 0), 0);
	ck_assert_int_eq(hx_rec_write(fd, HX_REC_END, NULL, 0, NULL, 0), 0);
	close(fd);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, path, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	ck_assert_uint_eq(s.ngroups, 1);
	ck_assert_uint_eq(s.groups[0].nsamples, 1);
	const struct hx_sample *x = &s.groups[0].samples[0];
	ck_assert(x->kernel);
	ck_assert_uint_eq(x->nchain, 3);
	ck_assert_uint_eq(x->chain[2], 0x7f0000006000ull);
	ck_assert_uint_eq(x->stack_size, 64);
	ck_assert_uint_eq(x->stack[63], 0xa0 + 63);
	ck_assert_uint_eq(x->regs[arch->perf_sp], SP);
	hx_samples_free(&s);
}
END_TEST

/* not this point's: another pc, another task, no user registers */
START_TEST(other_samples_passed_over)
{
	size_t nr_at, size_at, len = 0;
	pid_t me = getpid();
	char err[256] = "";
	size_t n = build(PC + 4, (uint32_t)me, 64, 64, &nr_at, &size_at);
	ck_assert_int_eq(hx_ksample_record(&attr, arch, body, n, RING_OFF, me, &msg, out, &len, err, sizeof(err)), 0);
	n = build(PC, (uint32_t)me + 1, 64, 64, &nr_at, &size_at);
	ck_assert_int_eq(hx_ksample_record(&attr, arch, body, n, RING_OFF, me, &msg, out, &len, err, sizeof(err)), 0);
	/* abi 0: the kernel writes no registers after it */
	n = build(PC, (uint32_t)me, 0, 0, &nr_at, &size_at);
	size_t abi_at = nr_at + 8 * 5;
	memset(body + abi_at, 0, 8);
	memmove(body + abi_at + 8, body + size_at, 8);       /* size 0: no data, no dyn_size */
	n = abi_at + 16;
	ck_assert_int_eq(hx_ksample_record(&attr, arch, body, n, RING_OFF, me, &msg, out, &len, err, sizeof(err)), 0);
	ck_assert_uint_eq(len, 0);
}
END_TEST

static void expect_refused(size_t n, uint64_t field_at, const char *what)
{
	char err[256] = "", want[64];
	size_t len = 0;
	int rc = hx_ksample_record(&attr, arch, body, n, RING_OFF, getpid(), &msg, out, &len, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "offset 0x%llx:", (unsigned long long)(RING_OFF + field_at));
	ck_assert_msg(strstr(err, want) && strstr(err, what), "expected '%s' ... '%s', got: %s", want, what, err);
	ck_assert_uint_eq(len, 0);
}

/* the stack copy cut short: the size field claims more than the record holds */
START_TEST(truncated_stack_refused)
{
	size_t nr_at, size_at;
	size_t n = build(PC, (uint32_t)getpid(), 64, 64, &nr_at, &size_at);
	expect_refused(n - 8 - 16, size_at, "user stack of 64 bytes");
}
END_TEST

START_TEST(corrupt_callchain_refused)
{
	size_t nr_at, size_at;
	size_t n = build(PC, (uint32_t)getpid(), 64, 64, &nr_at, &size_at);
	uint64_t huge = 1u << 20;
	memcpy(body + nr_at, &huge, 8);
	expect_refused(n, nr_at, "callchain of 1048576 entries");
}
END_TEST

START_TEST(dyn_size_past_copy_refused)
{
	size_t nr_at, size_at;
	size_t n = build(PC, (uint32_t)getpid(), 64, 72, &nr_at, &size_at);
	expect_refused(n, size_at + 8 + 64, "dyn_size 72 larger than its size 64");
}
END_TEST

/* a body cut inside the registers: the whole record named */
START_TEST(short_regs_refused)
{
	size_t nr_at, size_at;
	build(PC, (uint32_t)getpid(), 64, 64, &nr_at, &size_at);
	char err[256] = "";
	size_t len = 0;
	int rc = hx_ksample_record(&attr, arch, body, nr_at + 8 * 6 + 4, RING_OFF, getpid(), &msg, out, &len, err,
				   sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_msg(strstr(err, "offset 0x4ff8:") && strstr(err, "shorter than its sample_type"), "%s", err);
}
END_TEST

Suite *suite_ksampler(void);
Suite *suite_ksampler(void)
{
	Suite *s = suite_create("ksampler");
	TCase *tc = tcase_create("record");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, payload_layout);
	tcase_add_test(tc, payload_reads_back);
	tcase_add_test(tc, other_samples_passed_over);
	tcase_add_test(tc, truncated_stack_refused);
	tcase_add_test(tc, corrupt_callchain_refused);
	tcase_add_test(tc, dyn_size_past_copy_refused);
	tcase_add_test(tc, short_regs_refused);
	suite_add_tcase(s, tc);
	return s;
}
