/* Suite ehframe: .eh_frame_hdr lookups and errors (tests/ehframe.h). */
#include "tests/ehframe.h"

/* ---- .eh_frame_hdr ---- */

struct hdr_ent {
	uint64_t loc, fde;
};

static const struct hdr_ent hdr_tab[] = {
	{ 0x1000, 0x5000 }, { 0x1100, 0x5020 }, { 0x1200, 0x5040 },
};

/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, then the table. */
static size_t build_hdr(struct tb *t, uint8_t table_enc, uint64_t hdr_addr, uint64_t eh_addr,
			uint64_t count, const struct hdr_ent *e, size_t n)
{
	t->n = 0;
	tb_u8(t, 1);
	tb_u8(t, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	tb_u8(t, DW_EH_PE_udata4);
	tb_u8(t, table_enc);
	tb_le(t, eh_addr - (hdr_addr + 4), 4);
	tb_le(t, count, 4);
	int size = (table_enc & 0x0f) == DW_EH_PE_sdata8 || (table_enc & 0x0f) == DW_EH_PE_udata8
		   ? 8 : 4;
	for (size_t i = 0; i < n; i++) {
		tb_le(t, e[i].loc - hdr_addr, size);
		tb_le(t, e[i].fde - hdr_addr, size);
	}
	return t->n;
}

static const struct {
	uint8_t enc;
	uint64_t hdr_addr;        /* 0x6000: every entry is negative datarel */
} hdr_encs[] = {
	{ DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000 },
	{ DW_EH_PE_datarel | DW_EH_PE_sdata8, 0x6000 },
	{ DW_EH_PE_datarel | DW_EH_PE_udata4, 0x800 },
	{ DW_EH_PE_datarel | DW_EH_PE_udata8, 0x800 },
	{ DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x800 },
};

static const struct {
	uint64_t pc;
	int64_t fde;              /* -1: no entry */
} hdr_lookups[] = {
	{ 0xfff, -1 }, { 0, -1 }, { 0x1000, 0x5000 }, { 0x10ff, 0x5000 }, { 0x1100, 0x5020 },
	{ 0x11ff, 0x5020 }, { 0x1200, 0x5040 }, { UINT64_MAX, 0x5040 },
};

#define NLOOKUPS (int)(sizeof(hdr_lookups) / sizeof(hdr_lookups[0]))

START_TEST(test_hdr_lookup)
{
	int e = _i / NLOOKUPS, k = _i % NLOOKUPS;
	struct tb t;
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t ha = hdr_encs[e].hdr_addr;
	size_t n = build_hdr(&t, hdr_encs[e].enc, ha, 0x4000, 3, hdr_tab, 3);
	uint8_t *d = malloc(n);
	memcpy(d, t.b, n);
	ck_assert_msg(ehf_parse_hdr(d, n, ha, &h, &err) == 0, "%s", err.msg);
	ck_assert(h.has_table);
	ck_assert_uint_eq(h.eh_frame_ptr, 0x4000);
	ck_assert_uint_eq(h.fde_count, 3);
	ck_assert_uint_eq(h.table_off, 12);
	unsigned vf = hdr_encs[e].enc & 0x0f;
	ck_assert_uint_eq(h.entry_size, vf == DW_EH_PE_udata8 || vf == DW_EH_PE_sdata8 ? 16 : 8);
	uint64_t fde = 0;
	int rc = ehf_hdr_lookup(d, n, ha, &h, hdr_lookups[k].pc, &fde, &err);
	if (hdr_lookups[k].fde < 0) {
		ck_assert_int_eq(rc, -ENOENT);
		ck_assert_ptr_nonnull(strstr(err.msg, "before the first table entry"));
	} else {
		ck_assert_msg(rc == 0, "%s", err.msg);
		ck_assert_uint_eq(fde, (uint64_t)hdr_lookups[k].fde);
	}
	free(d);
}
END_TEST

START_TEST(test_hdr_errors)
{
	struct tb t;
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t fde;
	/* fde_count says 4, the table holds 3 */
	size_t n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 4, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 12);
	ck_assert_msg(strstr(err.msg, "fde_count 4"), "%s", err.msg);
	/* a huge count must not overflow the size check */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata8, 0x6000, 0x4000, 0xffffffff, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	/* lookup re-checks a header that does not match the bytes */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 3, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n - 1, 0x6000, &h, 0x1200, &fde, &err), -EINVAL);
	/* version 2 */
	t.b[0] = 2;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "version 2"));
	t.b[0] = 1;
	/* truncated before the table encodings */
	ck_assert_int_eq(ehf_parse_hdr(t.b, 3, 0x6000, &h, &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 3);
	/* a LEB128 table cannot be searched */
	t.b[3] = DW_EH_PE_datarel | DW_EH_PE_uleb128;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no fixed-size"));
	/* omitted table or count: parsed, but no table to search */
	t.b[3] = DW_EH_PE_omit;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert(!h.has_table);
	ck_assert_uint_eq(h.fde_count, 3);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n, 0x6000, &h, 0x1200, &fde, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no search table"));
	t.b[3] = DW_EH_PE_datarel | DW_EH_PE_sdata4;
	t.b[2] = DW_EH_PE_omit;
	ck_assert_int_eq(ehf_parse_hdr(t.b, 8, 0x6000, &h, &err), 0);
	ck_assert(!h.has_table);
	ck_assert_uint_eq(h.fde_count, 0);
	/* an empty table: parsed, every lookup fails */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 0, NULL, 0);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n, 0x6000, &h, 0x1200, &fde, &err), -ENOENT);
}
END_TEST

/* The 20-byte header CPython and V8 write right after .eh_frame, resolved
 * to the FDE the parser found. */
START_TEST(test_hdr_cpython)
{
	const uint64_t ha = CPY_EH + sizeof(cpy_eh);
	const int32_t fde_rel = (int32_t)(CPY_EH + 0x18 - ha);
	uint8_t hdr[20] = { 1, 0x1b, 0x03, 0x3b };
	int32_t v[4] = { -(int32_t)(sizeof(cpy_eh) + 4), 1, (int32_t)(CPY_TEXT - ha), fde_rel };
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			hdr[4 + 4 * i + j] = (uint8_t)((uint32_t)v[i] >> (8 * j));
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t fde;
	ck_assert_msg(ehf_parse_hdr(hdr, sizeof(hdr), ha, &h, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(h.eh_frame_ptr, CPY_EH);
	ck_assert_int_eq(ehf_hdr_lookup(hdr, sizeof(hdr), ha, &h, CPY_TEXT + 3, &fde, &err), 0);
	struct ehf_table t;
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	ck_assert_uint_eq(fde - h.eh_frame_ptr, ehf_find_fde(&t, CPY_TEXT + 3)->offset);
	ehf_table_free(&t);
}
END_TEST

void ehframe_add_hdr(TCase *tc)
{
	tcase_add_loop_test(tc, test_hdr_lookup, 0,
			    (int)(sizeof(hdr_encs) / sizeof(hdr_encs[0])) * NLOOKUPS);
	tcase_add_test(tc, test_hdr_errors);
}

void ehframe_add_hdr_cpython(TCase *tc)
{
	tcase_add_test(tc, test_hdr_cpython);
}
