/* The profiler side's one jitdump walk (unwinders/model/jdwalk.c) on bytes this
 * test lays out itself, field by field at the offsets of the jitdump
 * specification (tools/perf/Documentation/jitdump-specification.txt), written
 * here as numbers and not through jdwalk.h's names: a wrong offset in the walk
 * shows up as a wrong field.  Every error names the byte at fault. */
#include <errno.h>
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "unwinders/model/jdwalk.h"

struct db {
	uint8_t b[4096];
	size_t n;
};

static void put(struct db *d, size_t off, uint64_t v, int width)
{
	for (int i = 0; i < width; i++)
		d->b[off + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* header: magic, version, total_size, elf_mach, pad1, pid, timestamp, flags */
static void header(struct db *d, uint32_t magic, uint32_t total_size)
{
	memset(d, 0, sizeof(*d));
	put(d, 0, magic, 4);
	put(d, 4, 1, 4);
	put(d, 8, total_size, 4);
	put(d, 12, 62, 4);          /* EM_X86_64 */
	put(d, 20, 4242, 4);
	put(d, 24, 77, 8);
	d->n = total_size > 40 ? total_size : 40;
}

/* record prefix: id, total_size, timestamp; returns the record's offset */
static size_t prefix(struct db *d, uint32_t id, uint32_t size, uint64_t ts)
{
	size_t at = d->n;
	put(d, at, id, 4);
	put(d, at + 4, size, 4);
	put(d, at + 8, ts, 8);
	d->n += size;
	return at;
}

/* CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index at 16..56, name, code */
static size_t load(struct db *d, uint64_t addr, const char *name, const uint8_t *code, size_t len,
		   uint64_t index)
{
	size_t nl = strlen(name) + 1;
	size_t at = prefix(d, 0, (uint32_t)(56 + nl + len), 100 + index);
	put(d, at + 16, 4242, 4);
	put(d, at + 20, 4243, 4);
	put(d, at + 24, addr, 8);
	put(d, at + 32, addr, 8);
	put(d, at + 40, len, 8);
	put(d, at + 48, index, 8);
	memcpy(d->b + at + 56, name, nl);
	memcpy(d->b + at + 56 + nl, code, len);
	return at;
}

/* UNWINDING_INFO: unwinding_size, eh_frame_hdr_size, mapped_size at 16..40, data */
static size_t unwinding(struct db *d, uint64_t hdr_size, size_t data_len)
{
	size_t at = prefix(d, 4, (uint32_t)(40 + data_len), 50);
	put(d, at + 16, data_len, 8);
	put(d, at + 24, hdr_size, 8);
	put(d, at + 32, data_len, 8);
	memset(d->b + at + 40, 0xab, data_len);
	return at;
}

static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };

START_TEST(fields_at_spec_offsets)
{
	struct db d;
	header(&d, 0x4A695444u, 40);
	size_t l0 = load(&d, 0x7f0000001000ull, "tramp", code, sizeof(code), 3);
	size_t mv = prefix(&d, 1, 64, 200);
	put(&d, mv + 24, 0x7f0000001000ull, 8);
	put(&d, mv + 32, 0x7f0000001000ull, 8);
	put(&d, mv + 40, 0x7f0000002000ull, 8);
	put(&d, mv + 48, sizeof(code), 8);
	put(&d, mv + 56, 3, 8);
	size_t cl = prefix(&d, 3, 16, 300);

	struct jdr_iter it;
	struct ju_err e;
	struct jdr_rec r;
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
	ck_assert_uint_eq(it.hdr.elf_mach, 62);
	ck_assert_uint_eq(it.hdr.pid, 4242);
	ck_assert_uint_eq(it.hdr.timestamp, 77);

	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.off, l0);
	ck_assert_uint_eq(r.id, 0);
	ck_assert_uint_eq(r.timestamp, 103);
	ck_assert_uint_eq(r.u.load.pid, 4242);
	ck_assert_uint_eq(r.u.load.tid, 4243);
	ck_assert_uint_eq(r.u.load.code_addr, 0x7f0000001000ull);
	ck_assert_uint_eq(r.u.load.code_size, sizeof(code));
	ck_assert_uint_eq(r.u.load.code_index, 3);
	ck_assert_str_eq(r.u.load.name, "tramp");
	ck_assert_ptr_nonnull(r.u.load.code);
	ck_assert_int_eq(memcmp(r.u.load.code, code, sizeof(code)), 0);
	ck_assert_uint_eq(r.u.load.gap, 0);

	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.off, mv);
	ck_assert_uint_eq(r.id, 1);
	ck_assert_uint_eq(r.u.move.old_code_addr, 0x7f0000001000ull);
	ck_assert_uint_eq(r.u.move.new_code_addr, 0x7f0000002000ull);
	ck_assert_uint_eq(r.u.move.code_index, 3);

	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.off, cl);
	ck_assert_uint_eq(r.id, 3);
	ck_assert_int_eq(jdr_next(&it, &r, &e), 0);
	ck_assert_uint_eq(it.nrecs, 3);
}
END_TEST

/* perf takes a load's code as the record's LAST code_size bytes: padding
 * between the name and the code is a gap, not code */
START_TEST(code_is_the_records_tail)
{
	struct db d;
	header(&d, 0x4A695444u, 40);
	size_t at = load(&d, 0x1000, "f", code, sizeof(code), 1);
	/* grow the record by 4 bytes of padding after the name, code moved to the end */
	memmove(d.b + at + 56 + 2 + 4, d.b + at + 56 + 2, sizeof(code));
	memset(d.b + at + 56 + 2, 0x90, 4);
	put(&d, at + 4, 56 + 2 + 4 + sizeof(code), 4);
	d.n += 4;
	struct jdr_iter it;
	struct ju_err e;
	struct jdr_rec r;
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.u.load.gap, 4);
	ck_assert_int_eq(memcmp(r.u.load.code, code, sizeof(code)), 0);
}
END_TEST

/* Where perf stops, the walk stops, naming the byte at fault */
START_TEST(errors_name_the_offset)
{
	struct db d;
	struct jdr_iter it;
	struct ju_err e;
	struct jdr_rec r;
	char msg[256];

	header(&d, 0x4A695444u, 40);
	ck_assert_int_eq(jdr_init(&it, d.b, 39, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_SHORT_HEADER);
	snprintf(msg, sizeof(msg), "%s", e.msg);
	ck_assert_msg(strstr(msg, "39 bytes"), "%s", msg);

	header(&d, 0x4454694Au, 40);
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_SWAPPED);
	header(&d, 0x12345678u, 40);
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_BAD_MAGIC);
	ck_assert_uint_eq(e.offset, 0);

	/* total_size below the prefix, at the second record */
	header(&d, 0x4A695444u, 40);
	load(&d, 0x1000, "a", code, sizeof(code), 1);
	size_t bad = prefix(&d, 3, 16, 9);
	put(&d, bad + 4, 12, 4);
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_int_eq(jdr_next(&it, &r, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_SIZE_SMALL);
	ck_assert_uint_eq(e.offset, bad + 4);    /* the total_size field */
	ck_assert_msg(strstr(e.msg, "total_size 12 "), "%s", e.msg);

	/* a record running past the end of the file */
	header(&d, 0x4A695444u, 40);
	size_t l = load(&d, 0x1000, "a", code, sizeof(code), 1);
	ck_assert_int_eq(jdr_init(&it, d.b, d.n - 1, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_PAST_END);
	ck_assert_uint_eq(e.offset, l + 4);      /* the total_size field */
	snprintf(msg, sizeof(msg), "(%zu bytes left)", d.n - 1 - l);
	ck_assert_msg(strstr(e.msg, msg), "%s", e.msg);

	/* fewer than 16 bytes left for a prefix */
	header(&d, 0x4A695444u, 40);
	ck_assert_int_eq(jdr_init(&it, d.b, 40 + 15, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), -EINVAL);
	ck_assert_int_eq(e.kind, JDR_PREFIX_TRUNCATED);
	ck_assert_uint_eq(e.offset, 40);
	ck_assert_msg(strstr(e.msg, "15 bytes left"), "%s", e.msg);
}
END_TEST

/* records start at the header's total_size when it lies in (40, size] */
START_TEST(records_start_at_header_size)
{
	struct db d;
	header(&d, 0x4A695444u, 48);
	size_t at = load(&d, 0x1000, "a", code, sizeof(code), 1);
	ck_assert_uint_eq(at, 48);
	struct jdr_iter it;
	struct ju_err e;
	struct jdr_rec r;
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.off, 48);
	ck_assert_uint_eq(r.u.load.code_index, 1);
	/* a header size past the file: the records start at 40 */
	header(&d, 0x4A695444u, 40);
	load(&d, 0x1000, "a", code, sizeof(code), 1);
	put(&d, 8, 100000, 4);
	ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
	ck_assert_int_eq(jdr_next(&it, &r, &e), 1);
	ck_assert_uint_eq(r.off, 40);
}
END_TEST

/* perf's pending rules: UNWINDING_INFO goes to the next CODE_LOAD, and stays
 * for the loads after it only when its eh_frame_hdr_size is 0 */
START_TEST(pending_unwinding_info)
{
	for (int hdr = 0; hdr < 2; hdr++) {
		struct db d;
		header(&d, 0x4A695444u, 40);
		size_t u = unwinding(&d, hdr ? 20 : 0, 24);
		load(&d, 0x1000, "a", code, sizeof(code), 1);
		load(&d, 0x2000, "b", code, sizeof(code), 2);
		struct jdr_iter it;
		struct ju_err e;
		struct jdr_rec r;
		struct jdr_pending p = { 0 };
		ck_assert_int_eq(jdr_init(&it, d.b, d.n, &e), 0);
		const struct jdr_unw *got[2] = { NULL, NULL };
		uint64_t got_off[2] = { 0, 0 };
		int nl = 0;
		while (jdr_next(&it, &r, &e) == 1) {
			const struct jdr_unw *uw = NULL;
			const struct jdr_debug *dbg = NULL;
			uint64_t uo = 0, dofs = 0;
			jdr_pending_step(&p, &r, &uw, &uo, &dbg, &dofs);
			if (r.id == 0) {
				ck_assert_int_lt(nl, 2);
				got[nl] = uw;
				got_off[nl++] = uo;
				ck_assert_ptr_null(dbg);
			}
		}
		ck_assert_int_eq(nl, 2);
		ck_assert_ptr_nonnull(got[0]);
		ck_assert_uint_eq(got_off[0], u);
		ck_assert_uint_eq(got[0]->unwinding_size, 24);
		ck_assert_uint_eq(got[0]->eh_frame_hdr_size, hdr ? 20 : 0);
		if (hdr)
			ck_assert_ptr_null(got[1]);
		else
			ck_assert_msg(got[1] && got_off[1] == u,
				      "with eh_frame_hdr_size 0 perf keeps the info for the next load");
	}
}
END_TEST

Suite *suite_jdwalk(void)
{
	Suite *s = suite_create("jdwalk");
	TCase *tc = tcase_create("walk");
	tcase_add_test(tc, fields_at_spec_offsets);
	tcase_add_test(tc, code_is_the_records_tail);
	tcase_add_test(tc, errors_name_the_offset);
	tcase_add_test(tc, records_start_at_header_size);
	tcase_add_test(tc, pending_unwinding_info);
	suite_add_tcase(s, tc);
	return s;
}
