/* libFuzzer target: the case-file parser (harness/case/case.c) and what the
 * harness derives from a case before any of it runs: the trampoline's and
 * the [leaf]'s code and truth rows, the .eh_frame/.eh_frame_hdr its [unwind]
 * section asks for, read back by the project's own CFI reader, and every
 * [expect] lookup the judge makes.  Beyond the sanitizers it checks the
 * parser's contract: a refused case names the file and a line.
 * Built by fuzz/build.sh (OSS-Fuzz conventions); `make fuzz` runs it. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/case/case.h"
#include "harness/run/session.h"
#include "trampolines/tramp.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"

#define FUZZ_PATH "fuzz.case"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "fuzz.case:LINE: message", LINE a number (0 only for out of memory) */
static void check_message(const char *err)
{
	size_t n = strlen(FUZZ_PATH);
	const char *p = err + n + 1;
	if (strncmp(err, FUZZ_PATH ":", n + 1) || !isdigit((unsigned char)*p)) {
		fprintf(stderr, "case parser refused the input without naming file:line: '%s'\n", err);
		abort();
	}
	while (isdigit((unsigned char)*p))
		p++;
	if (p[0] != ':' || p[1] != ' ' || !p[2]) {
		fprintf(stderr, "case parser message is not 'file:line: message': '%s'\n", err);
		abort();
	}
}

/* One .eh_frame and its header: CIEs/FDEs, the row at every instruction,
 * the header's table around the code. */
static void read_eh(const struct tr_func *f, uint64_t code_addr, const uint8_t *eh, size_t ehs,
		    uint64_t eh_addr, const uint8_t *hd, size_t hs, uint64_t hdr_addr)
{
	struct ehf_table t;
	struct ehf_bases b = { eh_addr, 0, 0, 8 };
	struct ju_err e;
	if (!ehf_parse(&t, eh, ehs, &b, &e)) {
		for (size_t r = 0; r < f->nrows; r++) {
			uint64_t pc = code_addr + f->rows[r].offset;
			const struct ehf_fde *fde = ehf_find_fde(&t, pc);
			struct ehf_row row;
			if (fde)
				ehf_row_at(fde, pc, &row, &e);
		}
		ehf_table_free(&t);
	}
	struct ehf_hdr h;
	if (hs && !ehf_parse_hdr(hd, hs, hdr_addr, &h, &e) && h.has_table) {
		uint64_t fa;
		ehf_hdr_lookup(hd, hs, hdr_addr, &h, code_addr, &fa, &e);
		ehf_hdr_lookup(hd, hs, hdr_addr, &h, code_addr + f->code_size, &fa, &e);
	}
}

/* The built data read back as perf and the oracle read a load's (.eh_frame
 * first, then hdr_size bytes of header, at code + eh_off), and where the
 * writer put them when the header comes first ([unwind] hdr = before). */
static void read_back(const struct tr_func *f, const struct tr_unwind *u, bool hdr_first,
		      uint64_t code_addr)
{
	if (u->hdr_size > u->size)
		return;
	uint64_t base = code_addr + u->eh_off;
	size_t ehs = u->size - u->hdr_size;
	read_eh(f, code_addr, u->data, ehs, base, u->data + ehs, u->hdr_size, base + ehs);
	if (hdr_first)
		read_eh(f, code_addr, u->data + u->hdr_size, ehs, base + u->hdr_size, u->data, u->hdr_size,
			base);
}

/* Code, truth rows and unwinding data, at two addresses (pc-relative and
 * absolute encodings differ with the address). */
static void derive(const struct hx_case *c)
{
	static struct tr_func f;
	static struct tr_unwind u;
	struct ju_err err;
	const struct tr_arch *a = tr_arch_by_name(c->arch);
	if (!a || tr_emit(a, c->ops, c->nops, &f, &err))
		return;
	static const uint64_t at[] = { 0x10000, 0x7f3a12345000 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (!tr_unwind_build(&f, &c->unw, at[i], &u, &err))
			read_back(&f, &u, c->unw.hdr == TR_HDR_BEFORE, at[i]);
	if (c->has_leaf && !tr_emit(a, c->leaf_ops, c->nleaf, &f, &err) &&
	    !tr_unwind_build(&f, &c->unw, at[0], &u, &err))
		read_back(&f, &u, c->unw.hdr == TR_HDR_BEFORE, at[0]);
}

/* The lookups the judge makes, for each unwinder of this build: is there a
 * key under each profile and dump size, and the verdict at the callee and at
 * a few instruction offsets under the case's first profile and size. */
static void lookups(const struct hx_case *c)
{
	static const int sizes[] = { 8192, 65528 };
	static const char *const where[] = { "callee", "tramp+0x0", "tramp2+0x3", "leaf+0x4" };
	const char *prof = pv_profile_name((enum pv_profile)(c->nprofiles ? c->profiles[0] : PV_CURRENT));
	int size = c->nstack_sizes ? c->stack_sizes[0] : 8192;
	size_t n;
	const struct uw_unwinder *const *uws = hx_columns(&n);
	volatile size_t sink = 0;
	for (size_t u = 0; u < n; u++) {
		for (int p = PV_CURRENT; p <= PV_5X_0X40; p++)
			for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
				sink += hx_case_has_expect(c, uws[u]->name, pv_profile_name((enum pv_profile)p), sizes[z]);
		for (int off = -1; off < 3; off++) {
			const char *v = hx_case_expect(c, uws[u]->name, prof, size, where[off + 1], off);
			sink += v ? strlen(v) : 0;
		}
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hx_case c;
	char err[1024];
	err[0] = 0;
	if (hx_case_parse(&c, FUZZ_PATH, (const char *)data, size, err, sizeof(err)) == 0) {
		lookups(&c);
		derive(&c);
	} else {
		check_message(err);
	}
	hx_case_free(&c);
	return 0;
}
