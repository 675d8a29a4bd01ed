/* .eh_frame parser (LSB 5.0 "Exception Frames"): the bounded cursor, DW_EH_PE
 * pointers, CIEs and FDEs.  The header is in ehframe_hdr.c, the CFI
 * interpreter in ehframe_cfi.c, expressions in ehframe_expr.c (their shared
 * cursor: ehframe_int.h).  Pure C: every read goes through a cursor
 * that knows where its record ends, so no byte outside [data, data+size) is
 * ever touched, and every loop consumes input or counts steps. */
#include "unwinders/model/ehframe.h"
#include "unwinders/model/ehframe_int.h"
#include "unwinders/model/leb.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and the bounded cursor ---- */


__attribute__((format(printf, 4, 0)))
static int ehf_vfail(struct ju_err *err, const char *what, uint64_t rec, const char *fmt,
		     va_list ap)
{
	if (!err)
		return -EINVAL;
	err->file[0] = 0;
	err->line = 0;
	err->kind = 0;
	int n = 0;
	if (what)
		n = snprintf(err->msg, sizeof(err->msg), "%s at 0x%" PRIx64 ": ", what, rec);
	if (n < 0 || (size_t)n >= sizeof(err->msg))
		n = 0;
	vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
	return -EINVAL;
}

/* Every error of these readers is malformed input (-EINVAL) but for the
 * allocation (-ENOMEM), a pc before a header table (-ENOENT) and what an
 * expression could not read (-ENODATA a register, -EFAULT memory). */

/* An error at section offset off, without a record prefix. */
__attribute__((format(printf, 3, 4)))
int ehf_fail(struct ju_err *err, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	if (err)
		err->offset = off;
	va_start(ap, fmt);
	ehf_vfail(err, NULL, 0, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* An error at section offset off, prefixed with the cursor's record. */
__attribute__((format(printf, 3, 4)))
int ehf_cfail(const struct ehf_cur *c, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	if (c->err)
		c->err->offset = off;
	va_start(ap, fmt);
	ehf_vfail(c->err, c->what, c->rec, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

uint64_t ehf_here(const struct ehf_cur *c)
{
	return c->base + c->pos;
}

int ehf_need(struct ehf_cur *c, size_t n, const char *what)
{
	if (c->pos <= c->end && c->end - c->pos >= n)
		return 0;
	return ehf_cfail(c, ehf_here(c), "truncated %s: needs %zu bytes at 0x%" PRIx64
			 ", only %zu left before 0x%" PRIx64, what, n, ehf_here(c),
			 c->pos <= c->end ? c->end - c->pos : 0, c->base + c->end);
}

/* Little-endian fixed-size read: both supported targets are little-endian. */
int ehf_get_le(struct ehf_cur *c, size_t n, uint64_t *v, const char *what)
{
	if (ehf_need(c, n, what))
		return -EINVAL;
	uint64_t r = 0;
	for (size_t i = 0; i < n; i++)
		r |= (uint64_t)c->p[c->pos + i] << (8 * i);
	c->pos += n;
	*v = r;
	return 0;
}

int ehf_get_u8(struct ehf_cur *c, uint8_t *v, const char *what)
{
	uint64_t r;
	if (ehf_get_le(c, 1, &r, what))
		return -EINVAL;
	*v = (uint8_t)r;
	return 0;
}

/* LEB128 (uw_leb_read), failures told with the record's context. */
int ehf_get_leb(struct ehf_cur *c, bool sign, uint64_t *v, const char *what)
{
	size_t start = c->pos;
	const char *kind = sign ? "SLEB128" : "ULEB128";
	switch (uw_leb_read(c->p, c->end, &c->pos, sign, v)) {
	case 0:
		return 0;
	case -ENODATA:
		return ehf_cfail(c, c->base + start, "truncated %s: %s at 0x%" PRIx64 " runs past 0x%" PRIx64,
				 what, kind, c->base + start, c->base + c->end);
	case -ERANGE:
		return ehf_cfail(c, c->base + start, "%s: %s at 0x%" PRIx64 " overflows 64 bits", what, kind,
				 c->base + start);
	default:
		return ehf_cfail(c, c->base + start, "%s: %s at 0x%" PRIx64 " is longer than 10 bytes", what,
				 kind, c->base + start);
	}
}

int ehf_get_uleb(struct ehf_cur *c, uint64_t *v, const char *what)
{
	return ehf_get_leb(c, false, v, what);
}

int ehf_get_sleb(struct ehf_cur *c, int64_t *v, const char *what)
{
	uint64_t u;
	if (ehf_get_leb(c, true, &u, what))
		return -EINVAL;
	*v = (int64_t)u;
	return 0;
}

/* ---- DW_EH_PE_* pointers ---- */

const struct ehf_bases ehf_no_bases = { 0, 0, 0, 8 };

static int ehf_ptr_size(const struct ehf_bases *b)
{
	return b->ptr_size ? b->ptr_size : 8;
}

/* Size of an encoding's value format, 0 for LEB128, -1 if unknown. */
int ehf_enc_size(uint8_t enc, const struct ehf_bases *b)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return ehf_ptr_size(b);
	case DW_EH_PE_uleb128: case DW_EH_PE_sleb128: return 0;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	default: return -EINVAL;
	}
}

/* Why an encoding cannot be used to store pointers here, or NULL. */
static const char *ehf_enc_problem(uint8_t enc, const struct ehf_bases *b)
{
	if (enc == DW_EH_PE_omit)
		return NULL;
	if (ehf_enc_size(enc, b) < 0)
		return "unknown value format";
	switch (enc & 0x70) {
	case DW_EH_PE_absptr: case DW_EH_PE_pcrel: case DW_EH_PE_textrel: case DW_EH_PE_datarel:
		return NULL;
	case DW_EH_PE_funcrel:
		return "DW_EH_PE_funcrel is not supported";
	case DW_EH_PE_aligned:
		return "DW_EH_PE_aligned is not supported";
	default:
		return "unknown application";
	}
}

/* pcrel is relative to the field's address: b->section + section offset. */
int ehf_get_enc(struct ehf_cur *c, uint8_t enc, const struct ehf_bases *b, uint64_t *out,
		       const char *what)
{
	if (enc == DW_EH_PE_omit) {
		*out = 0;
		return 0;
	}
	const char *bad = ehf_enc_problem(enc, b);
	if (bad)
		return ehf_cfail(c, ehf_here(c), "%s at 0x%" PRIx64 ": encoding 0x%02x: %s", what,
				 ehf_here(c), enc, bad);
	uint64_t field = ehf_here(c);
	uint64_t v;
	int size = ehf_enc_size(enc, b);
	if (size == 0) {
		if (ehf_get_leb(c, (enc & 0x0f) == DW_EH_PE_sleb128, &v, what))
			return -EINVAL;
	} else {
		if (size != 4 && size != 8 && size != 2)
			return ehf_cfail(c, field, "%s: pointer size %d is not 4 or 8", what, size);
		if (ehf_get_le(c, (size_t)size, &v, what))
			return -EINVAL;
		/* sdataN: sign-extend; absptr of 4 bytes is an unsigned address */
		if ((enc & DW_EH_PE_signed) && size < 8 && (v >> (8 * size - 1)) & 1)
			v |= ~(uint64_t)0 << (8 * size);
	}
	switch (enc & 0x70) {
	case DW_EH_PE_pcrel: v += b->section + field; break;
	case DW_EH_PE_textrel: v += b->text; break;
	case DW_EH_PE_datarel: v += b->data; break;
	default: break;
	}
	if (ehf_ptr_size(b) == 4)
		v &= 0xffffffffu;
	*out = v;
	return 0;
}

int ehf_read_encoded(const uint8_t *data, size_t size, size_t *pos, uint8_t enc,
		     const struct ehf_bases *bases, uint64_t *out, struct ju_err *err)
{
	if (!data && size)
		return ehf_fail(err, 0, "no data");
	if (*pos > size)
		return ehf_fail(err, *pos, "position 0x%zx is past the end (size 0x%zx)", *pos, size);
	struct ehf_cur c = { data, size, *pos, 0, NULL, 0, err };
	if (ehf_get_enc(&c, enc, bases ? bases : &ehf_no_bases, out, "encoded pointer"))
		return -EINVAL;
	*pos = c.pos;
	return 0;
}

/* ---- .eh_frame records ---- */

struct ehf_rec {
	size_t off;               /* of the length field */
	size_t id_off;            /* of the CIE id / CIE pointer */
	size_t end;               /* first byte after the record */
	uint32_t id;
};

/* 1: zero terminator, 0: a record, -1: error.  Only 32-bit lengths: the
 * 64-bit form is not produced for .eh_frame and its id width is disputed. */
static int ehf_rec_header(const uint8_t *data, size_t size, size_t off, struct ehf_rec *r,
			  struct ju_err *err)
{
	struct ehf_cur c = { data, size, off, 0, "record", off, err };
	uint64_t len, id;
	if (ehf_get_le(&c, 4, &len, "length field"))
		return -EINVAL;
	if (len == 0)
		return 1;
	if (len == 0xffffffffu)
		return ehf_cfail(&c, off, "64-bit DWARF length (0xffffffff) is not supported in .eh_frame");
	if (len < 4)
		return ehf_cfail(&c, off, "length 0x%" PRIx64 " is too small to hold the CIE id", len);
	if (len > size - c.pos)
		return ehf_cfail(&c, off, "length 0x%" PRIx64 " runs past the end of .eh_frame"
				 " (record would end at 0x%" PRIx64 ", size 0x%zx)", len,
				 (uint64_t)c.pos + len, size);
	r->off = off;
	r->id_off = c.pos;
	r->end = c.pos + (size_t)len;
	if (ehf_get_le(&c, 4, &id, "CIE id"))
		return -EINVAL;
	r->id = (uint32_t)id;
	return 0;
}

static bool ehf_aug_has(const struct ehf_cie *cie, char ch)
{
	return strchr(cie->aug, ch) != NULL;
}

/* The augmentation string at c->pos: copied to cie->aug, letters checked;
 * its length in *n. */
static int cie_aug_string(const struct ehf_table *t, struct ehf_cur *c, struct ehf_cie *cie, size_t *n)
{
	size_t aug_at = c->pos, k = 0;
	while (aug_at + k < c->end && t->data[aug_at + k] != 0)
		k++;
	if (aug_at + k >= c->end)
		return ehf_cfail(c, aug_at, "augmentation string at 0x%zx has no NUL before the"
				 " record's end 0x%zx", aug_at, c->end);
	if (k >= sizeof(cie->aug))
		return ehf_cfail(c, aug_at, "augmentation string of %zu characters is too long"
				 " (at most %zu)", k, sizeof(cie->aug) - 1);
	memcpy(cie->aug, t->data + aug_at, k);
	c->pos = aug_at + k + 1;
	if (k >= 2 && cie->aug[0] == 'e' && cie->aug[1] == 'h')
		return ehf_cfail(c, aug_at, "\"eh\" augmentation (GCC 2.x) is not supported");
	for (size_t i = 0; i < k; i++) {
		char ch = cie->aug[i];
		/* B (arm64 B-key) and G (MTE tagged stack) carry no data */
		if (ch == 'z' && i == 0)
			continue;
		/* LSB: R, P, L (and S) only "if the 'z' character is also present"
		 * as the first; without it their data has no length to skip */
		if (strchr("RPLSBG", ch) && cie->aug[0] == 'z')
			continue;
		if (strchr("RPLSBG", ch))
			return ehf_cfail(c, aug_at + i, "augmentation '%c' in \"%s\" without 'z'"
					 " first", ch, cie->aug);
		return ehf_cfail(c, aug_at + i, "augmentation '%c' in \"%s\" is not supported"
				 " (expected z first, then R, P, L, S)", ch, cie->aug);
	}
	cie->has_aug_data = cie->aug[0] == 'z';
	cie->signal = ehf_aug_has(cie, 'S');
	*n = k;
	return 0;
}

/* The fields from the version 4 sizes to the return address register. */
static int cie_fields(const struct ehf_table *t, struct ehf_cur *c, struct ehf_cie *cie)
{
	if (cie->version >= 4) {
		uint8_t asz, ssz;
		if (ehf_get_u8(c, &asz, "address_size") || ehf_get_u8(c, &ssz, "segment_selector_size"))
			return -EINVAL;
		if (asz != ehf_ptr_size(&t->bases))
			return ehf_cfail(c, c->pos - 2, "address_size %u, expected %d", asz,
					 ehf_ptr_size(&t->bases));
		if (ssz != 0)
			return ehf_cfail(c, c->pos - 1, "segment_selector_size %u, expected 0", ssz);
	}
	if (ehf_get_uleb(c, &cie->code_align, "code_alignment_factor") ||
	    ehf_get_sleb(c, &cie->data_align, "data_alignment_factor"))
		return -EINVAL;
	uint64_t ra;
	size_t ra_at = c->pos;
	if (cie->version == 1) {
		uint8_t ra8;
		if (ehf_get_u8(c, &ra8, "return_address_register"))
			return -EINVAL;
		ra = ra8;
	} else if (ehf_get_uleb(c, &ra, "return_address_register")) {
		return -EINVAL;
	}
	if (ra >= EHF_NREGS)
		return ehf_cfail(c, ra_at, "return address register %" PRIu64
				 " is out of range (max %d)", ra, EHF_NREGS - 1);
	cie->ra_reg = (unsigned)ra;
	return 0;
}

/* The augmentation data (z): the R, P and L letters' fields, inside it. */
static int cie_aug_data(const struct ehf_table *t, struct ehf_cur *c, struct ehf_cie *cie, size_t n)
{
	size_t rec_end = c->end;
	if (cie->has_aug_data) {
		uint64_t alen;
		size_t len_at = c->pos;
		if (ehf_get_uleb(c, &alen, "augmentation data length"))
			return -EINVAL;
		if (alen > c->end - c->pos)
			return ehf_cfail(c, len_at, "augmentation data length 0x%" PRIx64
					 " runs past the record's end 0x%zx", alen, c->end);
		c->end = c->pos + (size_t)alen;  /* letters may not read past their data */
	}
	for (size_t i = cie->has_aug_data ? 1 : 0; i < n; i++) {
		const char *bad;
		uint8_t enc;
		switch (cie->aug[i]) {
		case 'R':
			if (ehf_get_u8(c, &cie->fde_enc, "'R' encoding"))
				return -EINVAL;
			/* DW_EH_PE_indirect would make pc_begin the address of a
			 * pointer in memory the section's reader does not have */
			bad = cie->fde_enc == DW_EH_PE_omit ? "DW_EH_PE_omit"
			      : cie->fde_enc & DW_EH_PE_indirect ? "DW_EH_PE_indirect"
			      : ehf_enc_problem(cie->fde_enc, &t->bases);
			if (bad)
				return ehf_cfail(c, c->pos - 1, "FDE pointer encoding 0x%02x: %s",
						 cie->fde_enc, bad);
			break;
		case 'P':
			/* DW_EH_PE_indirect: the value is the address of the pointer;
			 * we record it and never dereference it */
			if (ehf_get_u8(c, &enc, "'P' encoding") ||
			    ehf_get_enc(c, enc, &t->bases, &cie->personality, "personality"))
				return -EINVAL;
			break;
		case 'L':
			if (ehf_get_u8(c, &cie->lsda_enc, "'L' encoding"))
				return -EINVAL;
			bad = ehf_enc_problem(cie->lsda_enc, &t->bases);
			if (bad)
				return ehf_cfail(c, c->pos - 1, "LSDA encoding 0x%02x: %s",
						 cie->lsda_enc, bad);
			break;
		default:
			break;
		}
	}
	if (cie->has_aug_data)
		c->pos = c->end;  /* skip data for letters we don't read, as libgcc does */
	c->end = rec_end;
	return 0;
}

static int ehf_parse_cie(const struct ehf_table *t, const struct ehf_rec *r, struct ehf_cie *cie,
			 struct ju_err *err)
{
	struct ehf_cur c = { t->data, r->end, r->id_off + 4, 0, "CIE", r->off, err };
	memset(cie, 0, sizeof(*cie));
	cie->offset = r->off;
	cie->fde_enc = DW_EH_PE_absptr;
	cie->lsda_enc = DW_EH_PE_omit;
	if (ehf_get_u8(&c, &cie->version, "version"))
		return -EINVAL;
	if (cie->version != 1 && cie->version != 3 && cie->version != 4)
		return ehf_cfail(&c, c.pos - 1, "CIE version %u is not supported (expected 1, 3 or 4)",
				 cie->version);
	size_t n = 0;
	if (cie_aug_string(t, &c, cie, &n) || cie_fields(t, &c, cie) || cie_aug_data(t, &c, cie, n))
		return -EINVAL;
	cie->insns = t->data + c.pos;
	cie->insns_len = c.end - c.pos;
	cie->insns_off = c.pos;
	return 0;
}

static const struct ehf_cie *ehf_cie_at(const struct ehf_cie *cies, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cies[mid].offset == off)
			return &cies[mid];
		if (cies[mid].offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int ehf_parse_fde(const struct ehf_table *t, const struct ehf_rec *r, struct ehf_fde *fde,
			 struct ju_err *err)
{
	struct ehf_cur c = { t->data, r->end, r->id_off + 4, 0, "FDE", r->off, err };
	memset(fde, 0, sizeof(*fde));
	fde->offset = r->off;
	fde->bases = t->bases;
	/* the CIE pointer counts back from its own field (LSB: "CIE Pointer") */
	if (r->id > r->id_off)
		return ehf_cfail(&c, r->id_off, "CIE pointer 0x%" PRIx32 " points outside .eh_frame"
				 " (size 0x%zx)", r->id, t->size);
	uint64_t cie_off = r->id_off - r->id;
	fde->cie = ehf_cie_at(t->cies, t->ncies, cie_off);
	if (!fde->cie)
		return ehf_cfail(&c, r->id_off, "CIE pointer 0x%" PRIx32 " gives 0x%" PRIx64
				 ", which is not the start of a CIE", r->id, cie_off);
	const struct ehf_cie *cie = fde->cie;
	uint64_t range;
	if (ehf_get_enc(&c, cie->fde_enc, &t->bases, &fde->pc_begin, "pc_begin"))
		return -EINVAL;
	/* pc_range is a length: the value format only (DWARF/LSB) */
	if (ehf_get_enc(&c, cie->fde_enc & 0x0f, &t->bases, &range, "pc_range"))
		return -EINVAL;
	if (fde->pc_begin + range < fde->pc_begin)
		return ehf_cfail(&c, c.pos, "pc_begin 0x%" PRIx64 " + pc_range 0x%" PRIx64
				 " wraps around", fde->pc_begin, range);
	fde->pc_end = fde->pc_begin + range;
	if (cie->has_aug_data) {
		uint64_t alen;
		size_t len_at = c.pos;
		if (ehf_get_uleb(&c, &alen, "augmentation data length"))
			return -EINVAL;
		if (alen > c.end - c.pos)
			return ehf_cfail(&c, len_at, "augmentation data length 0x%" PRIx64
					 " runs past the record's end 0x%zx", alen, c.end);
		c.pos += (size_t)alen;
	}
	fde->insns = t->data + c.pos;
	fde->insns_len = c.end - c.pos;
	fde->insns_off = c.pos;
	return 0;
}

static int ehf_fde_cmp(const void *a, const void *b)
{
	const struct ehf_fde *x = a, *y = b;
	if (x->pc_begin != y->pc_begin)
		return x->pc_begin < y->pc_begin ? -1 : 1;
	/* section order breaks ties: a stable sort */
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int ehf_parse(struct ehf_table *t, const uint8_t *data, size_t size,
	      const struct ehf_bases *bases, struct ju_err *err)
{
	memset(t, 0, sizeof(*t));
	if (!data && size)
		return ehf_fail(err, 0, "no data");
	t->data = data;
	t->size = size;
	t->bases = bases ? *bases : ehf_no_bases;
	if (!t->bases.ptr_size)
		t->bases.ptr_size = 8;
	if (t->bases.ptr_size != 4 && t->bases.ptr_size != 8)
		return ehf_fail(err, 0, "pointer size %d, expected 4 or 8", t->bases.ptr_size);

	/* pass 1: framing and counts; every record is at least 8 bytes */
	size_t ncie = 0, nfde = 0, off = 0;
	struct ehf_rec r;
	while (off < size) {
		int rc = ehf_rec_header(data, size, off, &r, err);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			t->terminated = true;
			break;
		}
		if (r.id == 0)
			ncie++;
		else
			nfde++;
		off = r.end;
	}
	t->cies = calloc(ncie ? ncie : 1, sizeof(*t->cies));
	t->fdes = calloc(nfde ? nfde : 1, sizeof(*t->fdes));
	if (!t->cies || !t->fdes) {
		ehf_table_free(t);
		return ju_errf(err, ENOMEM, 0, "out of memory for %zu CIEs and %zu FDEs", ncie, nfde);
	}
	/* pass 2: CIE pointers only count backwards, so each FDE's CIE is
	 * already parsed when the FDE is reached */
	off = 0;
	while (t->ncies + t->nfdes < ncie + nfde) {
		if (ehf_rec_header(data, size, off, &r, err) != 0)
			goto fail;  /* cannot happen: pass 1 walked the same bytes */
		if (r.id == 0) {
			if (ehf_parse_cie(t, &r, &t->cies[t->ncies], err))
				goto fail;
			t->ncies++;
		} else {
			if (ehf_parse_fde(t, &r, &t->fdes[t->nfdes], err))
				goto fail;
			t->nfdes++;
		}
		off = r.end;
	}
	qsort(t->fdes, t->nfdes, sizeof(*t->fdes), ehf_fde_cmp);
	return 0;
fail:
	ehf_table_free(t);
	t->data = data;
	t->size = size;
	return -EINVAL;
}

void ehf_table_free(struct ehf_table *t)
{
	free(t->cies);
	free(t->fdes);
	t->cies = NULL;
	t->fdes = NULL;
	t->ncies = t->nfdes = 0;
}

const struct ehf_fde *ehf_find_fde(const struct ehf_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nfdes;
	while (lo < hi) {  /* first FDE with pc_begin > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (t->fdes[mid].pc_begin <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= t->fdes[lo - 1].pc_end)
		return NULL;
	return &t->fdes[lo - 1];
}
