/* .eh_frame / .eh_frame_hdr parser and CFI interpreter (LSB 5.0 "Exception
 * Frames", DWARF 5 section 6.4).  Pure C: every read goes through a cursor
 * that knows where its record ends, so no byte outside [data, data+size) is
 * ever touched, and every loop consumes input or counts steps. */
#include "unwinders/model/ehframe.h"
#include "unwinders/model/leb.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EHF_EXPR_STACK 64

/* ---- errors and the bounded cursor ---- */

struct ehf_cur {
	const uint8_t *p;         /* p[0] sits at section offset `base` */
	size_t end;               /* readable: p[0..end) (the record's end, not the section's) */
	size_t pos;
	uint64_t base;
	const char *what;         /* "CIE", "FDE"...: error prefix with `rec`, or NULL */
	uint64_t rec;
	struct ju_err *err;
};

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
static int ehf_fail(struct ju_err *err, uint64_t off, const char *fmt, ...)
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
static int ehf_cfail(const struct ehf_cur *c, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	if (c->err)
		c->err->offset = off;
	va_start(ap, fmt);
	ehf_vfail(c->err, c->what, c->rec, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static uint64_t ehf_here(const struct ehf_cur *c)
{
	return c->base + c->pos;
}

static int ehf_need(struct ehf_cur *c, size_t n, const char *what)
{
	if (c->pos <= c->end && c->end - c->pos >= n)
		return 0;
	return ehf_cfail(c, ehf_here(c), "truncated %s: needs %zu bytes at 0x%" PRIx64
			 ", only %zu left before 0x%" PRIx64, what, n, ehf_here(c),
			 c->pos <= c->end ? c->end - c->pos : 0, c->base + c->end);
}

/* Little-endian fixed-size read: both supported targets are little-endian. */
static int ehf_get_le(struct ehf_cur *c, size_t n, uint64_t *v, const char *what)
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

static int ehf_get_u8(struct ehf_cur *c, uint8_t *v, const char *what)
{
	uint64_t r;
	if (ehf_get_le(c, 1, &r, what))
		return -EINVAL;
	*v = (uint8_t)r;
	return 0;
}

/* LEB128 (uw_leb_read), failures told with the record's context. */
static int ehf_get_leb(struct ehf_cur *c, bool sign, uint64_t *v, const char *what)
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

static int ehf_get_uleb(struct ehf_cur *c, uint64_t *v, const char *what)
{
	return ehf_get_leb(c, false, v, what);
}

static int ehf_get_sleb(struct ehf_cur *c, int64_t *v, const char *what)
{
	uint64_t u;
	if (ehf_get_leb(c, true, &u, what))
		return -EINVAL;
	*v = (int64_t)u;
	return 0;
}

/* ---- DW_EH_PE_* pointers ---- */

static const struct ehf_bases ehf_no_bases = { 0, 0, 0, 8 };

static int ehf_ptr_size(const struct ehf_bases *b)
{
	return b->ptr_size ? b->ptr_size : 8;
}

/* Size of an encoding's value format, 0 for LEB128, -1 if unknown. */
static int ehf_enc_size(uint8_t enc, const struct ehf_bases *b)
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
static int ehf_get_enc(struct ehf_cur *c, uint8_t enc, const struct ehf_bases *b, uint64_t *out,
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
		if ((ch == 'z' && i == 0) || strchr("RPLSBG", ch))
			continue;
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
			bad = cie->fde_enc == DW_EH_PE_omit ? "DW_EH_PE_omit"
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

/* ---- .eh_frame_hdr (LSB 5.0, "The .eh_frame_hdr section") ---- */

int ehf_parse_hdr(const uint8_t *data, size_t size, uint64_t hdr_addr,
		  struct ehf_hdr *h, struct ju_err *err)
{
	memset(h, 0, sizeof(*h));
	if (!data && size)
		return ehf_fail(err, 0, "no data");
	struct ehf_bases b = { hdr_addr, 0, hdr_addr, 8 };
	struct ehf_cur c = { data, size, 0, 0, ".eh_frame_hdr", 0, err };
	if (ehf_get_u8(&c, &h->version, "version") ||
	    ehf_get_u8(&c, &h->eh_frame_ptr_enc, "eh_frame_ptr_enc") ||
	    ehf_get_u8(&c, &h->fde_count_enc, "fde_count_enc") ||
	    ehf_get_u8(&c, &h->table_enc, "table_enc"))
		return -EINVAL;
	if (h->version != 1)
		return ehf_cfail(&c, 0, "version %u, expected 1", h->version);
	if (h->eh_frame_ptr_enc == DW_EH_PE_omit)
		return ehf_cfail(&c, 1, "eh_frame_ptr_enc is DW_EH_PE_omit: no way to find .eh_frame");
	if (ehf_get_enc(&c, h->eh_frame_ptr_enc, &b, &h->eh_frame_ptr, "eh_frame_ptr"))
		return -EINVAL;
	if (h->fde_count_enc == DW_EH_PE_omit)
		return 0;
	if (ehf_get_enc(&c, h->fde_count_enc, &b, &h->fde_count, "fde_count"))
		return -EINVAL;
	if (h->table_enc == DW_EH_PE_omit)
		return 0;
	int vs = ehf_enc_size(h->table_enc, &b);
	if (vs <= 0 || (h->table_enc & DW_EH_PE_indirect))
		return ehf_cfail(&c, 3, "table_enc 0x%02x has no fixed-size value", h->table_enc);
	unsigned app = h->table_enc & 0x70;
	if (app != DW_EH_PE_absptr && app != DW_EH_PE_pcrel && app != DW_EH_PE_datarel)
		return ehf_cfail(&c, 3, "table_enc 0x%02x: expected absolute, pcrel or datarel entries",
				 h->table_enc);
	h->entry_size = 2 * (size_t)vs;
	h->table_off = c.pos;
	size_t room = size - c.pos;
	if (h->fde_count > room / h->entry_size)
		return ehf_cfail(&c, c.pos, "fde_count %" PRIu64 " needs %" PRIu64 " bytes of %zu-byte"
				 " entries at 0x%zx, only %zu left", h->fde_count,
				 h->fde_count > UINT64_MAX / h->entry_size ? UINT64_MAX
									  : h->fde_count * h->entry_size,
				 h->entry_size, c.pos, room);
	h->has_table = true;
	return 0;
}

int ehf_hdr_lookup(const uint8_t *data, size_t size, uint64_t hdr_addr,
		   const struct ehf_hdr *h, uint64_t pc, uint64_t *fde_addr,
		   struct ju_err *err)
{
	if (!h->has_table)
		return ehf_fail(err, 0, ".eh_frame_hdr has no search table");
	/* h may come from the caller: re-check it against these bytes */
	if (h->entry_size == 0 || h->table_off > size ||
	    h->fde_count > (size - h->table_off) / h->entry_size)
		return ehf_fail(err, h->table_off, ".eh_frame_hdr: table of %" PRIu64 " entries at"
				" 0x%" PRIx64 " does not fit in 0x%zx bytes", h->fde_count,
				h->table_off, size);
	if (h->fde_count == 0)
		return ju_errf(err, ENOENT, h->table_off, ".eh_frame_hdr: the search table is empty");
	struct ehf_bases b = { hdr_addr, 0, hdr_addr, 8 };
	struct ehf_cur c = { data, size, 0, 0, ".eh_frame_hdr", 0, err };
	size_t lo = 0, hi = (size_t)h->fde_count;
	uint64_t loc;
	while (lo < hi) {  /* first entry with initial_loc > pc */
		size_t mid = lo + (hi - lo) / 2;
		c.pos = (size_t)h->table_off + mid * h->entry_size;
		if (ehf_get_enc(&c, h->table_enc, &b, &loc, "initial_loc"))
			return -EINVAL;
		if (loc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		c.pos = (size_t)h->table_off;
		if (ehf_get_enc(&c, h->table_enc, &b, &loc, "initial_loc"))
			return -EINVAL;
		return ju_errf(err, ENOENT, h->table_off, ".eh_frame_hdr: pc 0x%" PRIx64 " is before the"
				" first table entry (0x%" PRIx64 ")", pc, loc);
	}
	c.pos = (size_t)h->table_off + (lo - 1) * h->entry_size + h->entry_size / 2;
	return ehf_get_enc(&c, h->table_enc, &b, fde_addr, "fde address");
}

/* ---- CFA instructions ---- */

static const char *const ehf_cfa_names[0x30] = {
	[DW_CFA_nop] = "DW_CFA_nop",
	[DW_CFA_set_loc] = "DW_CFA_set_loc",
	[DW_CFA_advance_loc1] = "DW_CFA_advance_loc1",
	[DW_CFA_advance_loc2] = "DW_CFA_advance_loc2",
	[DW_CFA_advance_loc4] = "DW_CFA_advance_loc4",
	[DW_CFA_offset_extended] = "DW_CFA_offset_extended",
	[DW_CFA_restore_extended] = "DW_CFA_restore_extended",
	[DW_CFA_undefined] = "DW_CFA_undefined",
	[DW_CFA_same_value] = "DW_CFA_same_value",
	[DW_CFA_register] = "DW_CFA_register",
	[DW_CFA_remember_state] = "DW_CFA_remember_state",
	[DW_CFA_restore_state] = "DW_CFA_restore_state",
	[DW_CFA_def_cfa] = "DW_CFA_def_cfa",
	[DW_CFA_def_cfa_register] = "DW_CFA_def_cfa_register",
	[DW_CFA_def_cfa_offset] = "DW_CFA_def_cfa_offset",
	[DW_CFA_def_cfa_expression] = "DW_CFA_def_cfa_expression",
	[DW_CFA_expression] = "DW_CFA_expression",
	[DW_CFA_offset_extended_sf] = "DW_CFA_offset_extended_sf",
	[DW_CFA_def_cfa_sf] = "DW_CFA_def_cfa_sf",
	[DW_CFA_def_cfa_offset_sf] = "DW_CFA_def_cfa_offset_sf",
	[DW_CFA_val_offset] = "DW_CFA_val_offset",
	[DW_CFA_val_offset_sf] = "DW_CFA_val_offset_sf",
	[DW_CFA_val_expression] = "DW_CFA_val_expression",
	[DW_CFA_AARCH64_negate_ra_state] = "DW_CFA_AARCH64_negate_ra_state",
	[DW_CFA_GNU_args_size] = "DW_CFA_GNU_args_size",
	[DW_CFA_GNU_negative_offset_extended] = "DW_CFA_GNU_negative_offset_extended",
};

static const char *ehf_cfa_name(uint8_t op)
{
	switch (op) {
	case DW_CFA_advance_loc: return "DW_CFA_advance_loc";
	case DW_CFA_offset: return "DW_CFA_offset";
	case DW_CFA_restore: return "DW_CFA_restore";
	default: return op < 0x30 && ehf_cfa_names[op] ? ehf_cfa_names[op] : "DW_CFA_?";
	}
}

/* One decoded instruction; primary opcodes have their operand bits cleared. */
struct ehf_insn {
	uint8_t op;
	uint64_t reg, reg2;
	int64_t off;              /* data_align applied where the operand is factored */
	uint64_t delta;           /* advances: bytes (code_align applied); set_loc: the address */
	const uint8_t *expr;
	size_t expr_len;
};

static int ehf_factor(struct ehf_cur *c, size_t at, uint8_t op, int64_t v, int64_t align,
		      int64_t *out)
{
	if (__builtin_mul_overflow(v, align, out))
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": offset %" PRId64
				 " * data alignment %" PRId64 " overflows", ehf_cfa_name(op),
				 c->base + at, v, align);
	return 0;
}

static int ehf_ufactor(struct ehf_cur *c, size_t at, uint8_t op, uint64_t u, int64_t align,
		       int64_t *out)
{
	if (u > INT64_MAX)
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": offset 0x%" PRIx64
				 " is too large", ehf_cfa_name(op), c->base + at, u);
	return ehf_factor(c, at, op, (int64_t)u, align, out);
}

/* An advance's delta in bytes. */
static int ehf_scale(struct ehf_cur *c, size_t at, uint8_t op, uint64_t delta,
		     uint64_t code_align, uint64_t *out)
{
	if (__builtin_mul_overflow(delta, code_align, out))
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": delta 0x%" PRIx64
				 " * code alignment %" PRIu64 " overflows", ehf_cfa_name(op),
				 c->base + at, delta, code_align);
	return 0;
}

static int ehf_block(struct ehf_cur *c, struct ehf_insn *in)
{
	uint64_t len = 0;
	if (ehf_get_uleb(c, &len, "expression length"))
		return -EINVAL;
	if (len > c->end - c->pos)
		return ehf_cfail(c, ehf_here(c), "expression of %" PRIu64 " bytes at 0x%" PRIx64
				 " runs past the program's end 0x%" PRIx64, len, ehf_here(c),
				 c->base + c->end);
	in->expr = c->p + c->pos;
	in->expr_len = (size_t)len;
	c->pos += (size_t)len;
	return 0;
}

/* The primary opcodes: the operand in the opcode's low six bits. */
static int ehf_decode_primary(struct ehf_cur *c, size_t at, uint8_t op, uint64_t code_align,
			      int64_t data_align, struct ehf_insn *in)
{
	uint64_t u;
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		in->op = DW_CFA_advance_loc;
		return ehf_scale(c, at, in->op, op & 0x3f, code_align, &in->delta);
	case DW_CFA_offset:
		in->op = DW_CFA_offset;
		in->reg = op & 0x3f;
		if (ehf_get_uleb(c, &u, "DW_CFA_offset operand"))
			return -EINVAL;
		return ehf_ufactor(c, at, in->op, u, data_align, &in->off);
	default:
		in->op = DW_CFA_restore;
		in->reg = op & 0x3f;
		return 0;
	}
}

/* offset_extended, val_offset, GNU_negative_offset_extended: register, unsigned factored offset. */
static int ehf_decode_offset_ext(struct ehf_cur *c, size_t at, uint8_t op, int64_t data_align,
				 struct ehf_insn *in)
{
	const char *name = ehf_cfa_name(op);
	uint64_t u;
	if (ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &u, name) ||
	    ehf_ufactor(c, at, op, u, data_align, &in->off))
		return -EINVAL;
	if (op == DW_CFA_GNU_negative_offset_extended) {
		if (in->off == INT64_MIN)
			return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64
					 ": offset overflows", name, c->base + at);
		in->off = -in->off;
	}
	return 0;
}

/* Decode the instruction at c->pos.  bases NULL: set_loc is read without its
 * application (dumps do not know where the section is). */
static int ehf_decode(struct ehf_cur *c, uint64_t code_align, int64_t data_align, uint8_t fde_enc,
		      const struct ehf_bases *bases, struct ehf_insn *in)
{
	size_t at = c->pos;
	uint8_t op;
	uint64_t u;
	int64_t s;
	memset(in, 0, sizeof(*in));
	if (ehf_get_u8(c, &op, "CFA opcode"))
		return -EINVAL;
	if (op & 0xc0)
		return ehf_decode_primary(c, at, op, code_align, data_align, in);
	in->op = op;
	const char *name = ehf_cfa_name(op);
	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
	case DW_CFA_AARCH64_negate_ra_state:
		return 0;
	case DW_CFA_set_loc:
		if (bases)
			return ehf_get_enc(c, fde_enc, bases, &in->delta, name);
		return ehf_get_enc(c, fde_enc & 0x0f, &ehf_no_bases, &in->delta, name);
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		if (ehf_get_le(c, op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 : 4,
			       &u, name))
			return -EINVAL;
		return ehf_scale(c, at, op, u, code_align, &in->delta);
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
	case DW_CFA_GNU_negative_offset_extended:
		return ehf_decode_offset_ext(c, at, op, data_align, in);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
	case DW_CFA_def_cfa_sf:
		if (ehf_get_uleb(c, &in->reg, name) || ehf_get_sleb(c, &s, name))
			return -EINVAL;
		return ehf_factor(c, at, op, s, data_align, &in->off);
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_def_cfa_register:
		return ehf_get_uleb(c, &in->reg, name);
	case DW_CFA_register:
		return ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &in->reg2, name) ? -1 : 0;
	case DW_CFA_def_cfa:
		if (ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &u, name))
			return -EINVAL;
		return ehf_ufactor(c, at, op, u, 1, &in->off);  /* not factored */
	case DW_CFA_def_cfa_offset:
		if (ehf_get_uleb(c, &u, name))
			return -EINVAL;
		return ehf_ufactor(c, at, op, u, 1, &in->off);
	case DW_CFA_def_cfa_offset_sf:
		if (ehf_get_sleb(c, &s, name))
			return -EINVAL;
		return ehf_factor(c, at, op, s, data_align, &in->off);
	case DW_CFA_def_cfa_expression:
		return ehf_block(c, in);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (ehf_get_uleb(c, &in->reg, name))
			return -EINVAL;
		return ehf_block(c, in);
	case DW_CFA_GNU_args_size:
		return ehf_get_uleb(c, &in->delta, name);
	default:
		return ehf_cfail(c, c->base + at, "unsupported CFA opcode 0x%02x at offset 0x%" PRIx64,
				 op, c->base + at);
	}
}

/* ---- the interpreter ---- */

/* remember_state copies: compact rules keep 16 levels at ~25 KiB of stack.
 * expr_len fits 32 bits because a record's length field does. */
struct ehf_saved_rule {
	uint8_t kind;
	uint16_t reg;
	uint32_t expr_len;
	union {
		int64_t off;
		const uint8_t *expr;
	};
};

struct ehf_saved {
	uint8_t cfa_kind;
	bool cfa_defined, ra_signed;
	uint16_t cfa_reg;
	uint32_t cfa_expr_len;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	struct ehf_saved_rule reg[EHF_NREGS];
};

struct ehf_interp {
	const struct ehf_fde *fde;
	const struct ehf_cie *cie;
	struct ehf_row *row;
	const struct ehf_row *init;   /* the CIE's row, for DW_CFA_restore; NULL in the CIE */
	uint64_t loc;
	uint64_t stop;                /* ehf_row_at: the pc whose row is wanted */
	int (*cb)(const struct ehf_row *row, void *arg);  /* ehf_rows */
	void *arg;
	int cb_rc;
	unsigned depth;
	struct ehf_saved stack[EHF_STACK_MAX];
};

static void ehf_row_reset(struct ehf_row *r)
{
	memset(r, 0, sizeof(*r));
	r->cfa_kind = EHF_CFA_REG_OFF;
	for (unsigned i = 0; i < EHF_NREGS; i++)
		r->reg[i].kind = EHF_INITIAL;
}

static void ehf_save(struct ehf_saved *s, const struct ehf_row *r)
{
	s->cfa_kind = r->cfa_kind;
	s->cfa_defined = r->cfa_defined;
	s->ra_signed = r->ra_signed;
	s->cfa_reg = r->cfa_reg;
	s->cfa_off = r->cfa_off;
	s->cfa_expr = r->cfa_expr;
	s->cfa_expr_len = (uint32_t)r->cfa_expr_len;
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_rule *ru = &r->reg[i];
		struct ehf_saved_rule *sr = &s->reg[i];
		sr->kind = ru->kind;
		sr->reg = ru->reg;
		sr->expr_len = (uint32_t)ru->expr_len;
		if (ru->kind == EHF_EXPRESSION || ru->kind == EHF_VAL_EXPRESSION)
			sr->expr = ru->expr;
		else
			sr->off = ru->off;
	}
}

static void ehf_load(struct ehf_row *r, const struct ehf_saved *s)
{
	r->cfa_kind = s->cfa_kind;
	r->cfa_defined = s->cfa_defined;
	r->ra_signed = s->ra_signed;
	r->cfa_reg = s->cfa_reg;
	r->cfa_off = s->cfa_off;
	r->cfa_expr = s->cfa_expr;
	r->cfa_expr_len = s->cfa_expr_len;
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_saved_rule *sr = &s->reg[i];
		struct ehf_rule *ru = &r->reg[i];
		ru->kind = sr->kind;
		ru->reg = sr->reg;
		ru->expr_len = sr->expr_len;
		if (sr->kind == EHF_EXPRESSION || sr->kind == EHF_VAL_EXPRESSION) {
			ru->expr = sr->expr;
			ru->off = 0;
		} else {
			ru->expr = NULL;
			ru->off = sr->off;
		}
	}
}

/* Move to new_loc: 0 keep going, 1 the wanted row (or the last) is done. */
static int ehf_advance(struct ehf_interp *ip, uint64_t new_loc)
{
	if (new_loc == ip->loc)
		return 0;
	uint64_t end = new_loc < ip->fde->pc_end ? new_loc : ip->fde->pc_end;
	if (ip->cb) {
		if (ip->loc < end) {
			ip->row->loc = ip->loc;
			ip->row->end = end;
			ip->cb_rc = ip->cb(ip->row, ip->arg);
			if (ip->cb_rc)
				return 1;
		}
		ip->loc = new_loc;
		return new_loc >= ip->fde->pc_end;
	}
	if (new_loc > ip->stop) {
		ip->row->loc = ip->loc;
		ip->row->end = end;
		return 1;
	}
	ip->loc = new_loc;
	return 0;
}

/* Run one program: 0 at its end, 1 when ehf_advance says done, -1 on error. */
static int ehf_exec(struct ehf_interp *ip, const uint8_t *insns, size_t len, uint64_t insns_off,
		    const char *what, uint64_t rec, struct ju_err *err)
{
	const struct ehf_cie *cie = ip->cie;
	struct ehf_row *row = ip->row;
	struct ehf_cur c = { insns, len, 0, insns_off, what, rec, err };
	while (c.pos < c.end) {  /* every instruction consumes at least its opcode */
		size_t at = c.pos;
		struct ehf_insn in;
		if (ehf_decode(&c, cie->code_align, cie->data_align, cie->fde_enc, &ip->fde->bases, &in))
			return -EINVAL;
		const char *name = ehf_cfa_name(in.op);
		uint64_t off_at = insns_off + at;
		if (in.reg >= EHF_NREGS || in.reg2 >= EHF_NREGS)
			return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": register %" PRIu64
					 " is out of range (max %d)", name, off_at,
					 in.reg >= EHF_NREGS ? in.reg : in.reg2, EHF_NREGS - 1);
		struct ehf_rule *ru = &row->reg[in.reg];
		if (in.reg > row->max_reg || in.reg2 > row->max_reg)
			row->max_reg = (uint16_t)(in.reg > in.reg2 ? in.reg : in.reg2);
		uint64_t new_loc;
		int rc;
		switch (in.op) {
		case DW_CFA_advance_loc:
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_set_loc:
			if (!ip->init)
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 " in a CIE's"
						 " initial instructions", name, off_at);
			if (in.op == DW_CFA_set_loc) {
				new_loc = in.delta;
				if (new_loc < ip->loc)
					return ehf_cfail(&c, off_at, "DW_CFA_set_loc at offset 0x%" PRIx64
							 ": 0x%" PRIx64 " is below the current location"
							 " 0x%" PRIx64, off_at, new_loc, ip->loc);
			} else if (__builtin_add_overflow(ip->loc, in.delta, &new_loc)) {
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": location"
						 " overflows", name, off_at);
			}
			rc = ehf_advance(ip, new_loc);
			if (rc)
				return rc;
			break;
		case DW_CFA_offset:
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_GNU_negative_offset_extended:
			*ru = (struct ehf_rule){ .kind = EHF_OFFSET, .off = in.off };
			break;
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
			*ru = (struct ehf_rule){ .kind = EHF_VAL_OFFSET, .off = in.off };
			break;
		case DW_CFA_restore:
		case DW_CFA_restore_extended:
			if (ip->init)
				*ru = ip->init->reg[in.reg];
			else
				*ru = (struct ehf_rule){ .kind = EHF_INITIAL };
			break;
		case DW_CFA_undefined:
			*ru = (struct ehf_rule){ .kind = EHF_UNDEF };
			break;
		case DW_CFA_same_value:
			*ru = (struct ehf_rule){ .kind = EHF_SAME };
			break;
		case DW_CFA_register:
			*ru = (struct ehf_rule){ .kind = EHF_REGISTER, .reg = (uint16_t)in.reg2 };
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			*ru = (struct ehf_rule){
				.kind = in.op == DW_CFA_expression ? EHF_EXPRESSION : EHF_VAL_EXPRESSION,
				.expr = in.expr, .expr_len = in.expr_len };
			break;
		case DW_CFA_remember_state:
			if (ip->depth >= EHF_STACK_MAX)
				return ehf_cfail(&c, off_at, "DW_CFA_remember_state at offset 0x%" PRIx64
						 ": more than %d states remembered", off_at,
						 EHF_STACK_MAX);
			ehf_save(&ip->stack[ip->depth++], row);
			break;
		case DW_CFA_restore_state:
			if (ip->depth == 0)
				return ehf_cfail(&c, off_at, "DW_CFA_restore_state at offset 0x%" PRIx64
						 ": no remembered state", off_at);
			ehf_load(row, &ip->stack[--ip->depth]);
			break;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			row->cfa_kind = EHF_CFA_REG_OFF;
			row->cfa_reg = (uint16_t)in.reg;
			row->cfa_off = in.off;
			row->cfa_expr = NULL;
			row->cfa_expr_len = 0;
			row->cfa_defined = true;
			break;
		case DW_CFA_def_cfa_register:
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
			/* DWARF 5 6.4.2.2: only valid on a register+offset CFA */
			if (!row->cfa_defined || row->cfa_kind != EHF_CFA_REG_OFF)
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": the CFA is"
						 " not register+offset here", name, off_at);
			if (in.op == DW_CFA_def_cfa_register)
				row->cfa_reg = (uint16_t)in.reg;
			else
				row->cfa_off = in.off;
			break;
		case DW_CFA_def_cfa_expression:
			row->cfa_kind = EHF_CFA_EXPR;
			row->cfa_expr = in.expr;
			row->cfa_expr_len = in.expr_len;
			row->cfa_reg = 0;
			row->cfa_off = 0;
			row->cfa_defined = true;
			break;
		case DW_CFA_AARCH64_negate_ra_state:
			row->ra_signed = !row->ra_signed;
			break;
		case DW_CFA_nop:
		case DW_CFA_GNU_args_size:
			break;
		default:  /* ehf_decode rejects everything else */
			return ehf_cfail(&c, off_at, "unsupported CFA opcode 0x%02x at offset 0x%" PRIx64,
					 in.op, off_at);
		}
	}
	return 0;
}

/* Sets up ip and runs the CIE's program into ip->row; init receives a copy. */
static int ehf_start(struct ehf_interp *ip, const struct ehf_fde *fde, struct ehf_row *row,
		     struct ehf_row *init, struct ju_err *err)
{
	if (!fde || !fde->cie)
		return ehf_fail(err, 0, "no FDE");
	ip->fde = fde;
	ip->cie = fde->cie;
	ip->row = row;
	ip->init = NULL;
	ip->loc = fde->pc_begin;
	ip->stop = 0;
	ip->cb = NULL;
	ip->arg = NULL;
	ip->cb_rc = 0;
	ip->depth = 0;
	ehf_row_reset(row);
	if (ehf_exec(ip, ip->cie->insns, ip->cie->insns_len, ip->cie->insns_off, "CIE",
		     ip->cie->offset, err) < 0)
		return -EINVAL;
	*init = *row;
	ip->init = init;
	return 0;
}

int ehf_row_at(const struct ehf_fde *fde, uint64_t pc, struct ehf_row *out,
	       struct ju_err *err)
{
	struct ehf_interp ip;
	struct ehf_row init;
	if (fde && (pc < fde->pc_begin || pc >= fde->pc_end))
		return ehf_fail(err, fde->offset, "FDE at 0x%" PRIx64 ": pc 0x%" PRIx64 " is outside"
				" [0x%" PRIx64 ", 0x%" PRIx64 ")", fde->offset, pc, fde->pc_begin,
				fde->pc_end);
	if (ehf_start(&ip, fde, out, &init, err))
		return -EINVAL;
	ip.stop = pc;
	int rc = ehf_exec(&ip, fde->insns, fde->insns_len, fde->insns_off, "FDE", fde->offset, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		out->loc = ip.loc;
		out->end = fde->pc_end;
	}
	return 0;
}

int ehf_rows(const struct ehf_fde *fde,
	     int (*cb)(const struct ehf_row *row, void *arg), void *arg,
	     struct ju_err *err)
{
	struct ehf_interp ip;
	struct ehf_row row, init;
	if (!cb)
		return ehf_fail(err, 0, "no callback");
	if (ehf_start(&ip, fde, &row, &init, err))
		return -EINVAL;
	ip.cb = cb;
	ip.arg = arg;
	int rc = ehf_exec(&ip, fde->insns, fde->insns_len, fde->insns_off, "FDE", fde->offset, err);
	if (rc < 0)
		return rc;
	if (rc > 0)
		return ip.cb_rc;
	if (ip.loc < fde->pc_end) {
		row.loc = ip.loc;
		row.end = fde->pc_end;
		return cb(&row, arg);
	}
	return 0;
}

/* ---- DWARF expressions (DWARF 5 section 2.5, the CFI subset) ---- */

int ehf_eval_expr(const uint8_t *expr, size_t len, const struct ehf_expr_ctx *ctx,
		  bool push_cfa, uint64_t cfa, uint64_t *out, struct ju_err *err)
{
	uint64_t st[EHF_EXPR_STACK];
	size_t sp = 0;
	struct ehf_cur c = { expr, len, 0, 0, NULL, 0, err };
	if (!expr && len)
		return ehf_fail(err, 0, "no expression");
	if (push_cfa)
		st[sp++] = cfa;
	for (unsigned steps = 0; c.pos < c.end; steps++) {
		size_t at = c.pos;
		uint8_t op = expr[c.pos++];  /* the loop condition checked the length */
		uint64_t u, a, b, v;
		int64_t s;
		if (steps >= EHF_EXPR_STEPS_MAX)
			return ehf_fail(err, at, "expression: more than %d steps (a loop?)",
					EHF_EXPR_STEPS_MAX);
#define NEED(n) do { if (sp < (size_t)(n)) return ehf_fail(err, at, "DW_OP 0x%02x at" \
		" offset 0x%zx: needs %zu stack entries, has %zu", op, at, (size_t)(n), sp); } while (0)
#define PUSH(x) do { uint64_t pushed_ = (x); if (sp >= EHF_EXPR_STACK) return ehf_fail(err, \
		at, "DW_OP 0x%02x at offset 0x%zx: stack overflow (%d entries)", op, at, \
		EHF_EXPR_STACK); st[sp++] = pushed_; } while (0)
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH((uint64_t)(op - DW_OP_lit0));
			continue;
		}
		if ((op >= DW_OP_breg0 && op <= DW_OP_breg31) || op == DW_OP_bregx) {
			u = op - DW_OP_breg0;
			if (op == DW_OP_bregx && ehf_get_uleb(&c, &u, "DW_OP_bregx register"))
				return -EINVAL;
			if (ehf_get_sleb(&c, &s, "DW_OP_breg offset"))
				return -EINVAL;
			if (!ctx || !ctx->read_reg)
				return ehf_fail(err, at, "DW_OP_breg at offset 0x%zx: no registers", at);
			if (u > UINT32_MAX || ctx->read_reg(ctx->arg, (unsigned)u, &v))
				return ju_errf(err, ENODATA, at, "DW_OP_breg at offset 0x%zx: register %" PRIu64
						" is not available", at, u);
			PUSH(v + (uint64_t)s);
			continue;
		}
		if ((op >= DW_OP_reg0 && op <= DW_OP_reg31) || op == DW_OP_regx)
			return ehf_fail(err, at, "DW_OP_reg* (0x%02x) at offset 0x%zx: a register"
					" location is not valid in a CFI expression", op, at);
		switch (op) {
		case DW_OP_nop:
			break;
		case DW_OP_addr:
		case DW_OP_const8u:
		case DW_OP_const8s:
			if (ehf_get_le(&c, 8, &u, "DW_OP operand"))
				return -EINVAL;
			PUSH(u);
			break;
		case DW_OP_const1u: case DW_OP_const1s:
		case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: {
			unsigned n = op <= DW_OP_const1s ? 1 : op <= DW_OP_const2s ? 2 : 4;
			if (ehf_get_le(&c, n, &u, "DW_OP operand"))
				return -EINVAL;
			if (((op - DW_OP_const1u) & 1) && (u >> (8 * n - 1)) & 1)
				u |= ~(uint64_t)0 << (8 * n);
			PUSH(u);
			break;
		}
		case DW_OP_constu:
			if (ehf_get_uleb(&c, &u, "DW_OP_constu operand"))
				return -EINVAL;
			PUSH(u);
			break;
		case DW_OP_consts:
			if (ehf_get_sleb(&c, &s, "DW_OP_consts operand"))
				return -EINVAL;
			PUSH((uint64_t)s);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(st[sp - 1]);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(st[sp - 2]);
			break;
		case DW_OP_pick: {
			uint8_t idx;
			if (ehf_get_u8(&c, &idx, "DW_OP_pick index"))
				return -EINVAL;
			NEED((size_t)idx + 1);
			PUSH(st[sp - 1 - idx]);
			break;
		}
		case DW_OP_swap:
			NEED(2);
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = v;
			break;
		case DW_OP_rot:  /* top -> third, second -> top, third -> second */
			NEED(3);
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = st[sp - 3];
			st[sp - 3] = v;
			break;
		case DW_OP_deref:
		case DW_OP_deref_size: {
			uint8_t n = 8;
			if (op == DW_OP_deref_size && ehf_get_u8(&c, &n, "DW_OP_deref_size size"))
				return -EINVAL;
			if (n < 1 || n > 8)
				return ehf_fail(err, at, "DW_OP_deref_size at offset 0x%zx: size %u,"
						" expected 1..8", at, n);
			NEED(1);
			if (!ctx || !ctx->read_mem)
				return ehf_fail(err, at, "DW_OP_deref at offset 0x%zx: no memory", at);
			if (ctx->read_mem(ctx->arg, st[sp - 1], &v))
				return ju_errf(err, EFAULT, at, "DW_OP_deref at offset 0x%zx: cannot read"
						" memory at 0x%" PRIx64, at, st[sp - 1]);
			st[sp - 1] = n == 8 ? v : v & ((UINT64_C(1) << (8 * n)) - 1);
			break;
		}
		case DW_OP_abs:
			NEED(1);
			if ((int64_t)st[sp - 1] < 0)
				st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_plus_uconst:
			if (ehf_get_uleb(&c, &u, "DW_OP_plus_uconst operand"))
				return -EINVAL;
			NEED(1);
			st[sp - 1] += u;
			break;
		case DW_OP_and: case DW_OP_div: case DW_OP_minus: case DW_OP_mod:
		case DW_OP_mul: case DW_OP_or: case DW_OP_plus: case DW_OP_shl:
		case DW_OP_shr: case DW_OP_shra: case DW_OP_xor:
		case DW_OP_eq: case DW_OP_ge: case DW_OP_gt:
		case DW_OP_le: case DW_OP_lt: case DW_OP_ne:
			NEED(2);
			b = st[--sp];  /* the former top */
			a = st[sp - 1];
			switch (op) {
			case DW_OP_and: v = a & b; break;
			case DW_OP_or: v = a | b; break;
			case DW_OP_xor: v = a ^ b; break;
			case DW_OP_plus: v = a + b; break;
			case DW_OP_minus: v = a - b; break;
			case DW_OP_mul: v = a * b; break;
			case DW_OP_div:
				if (b == 0)
					return ehf_fail(err, at, "DW_OP_div at offset 0x%zx: division"
							" by zero", at);
				/* INT64_MIN / -1 overflows: wrap as the hardware would not */
				v = (int64_t)b == -1 ? -a : (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case DW_OP_mod:
				if (b == 0)
					return ehf_fail(err, at, "DW_OP_mod at offset 0x%zx: division"
							" by zero", at);
				v = a % b;
				break;
			case DW_OP_shl: v = b >= 64 ? 0 : a << b; break;
			case DW_OP_shr: v = b >= 64 ? 0 : a >> b; break;
			case DW_OP_shra:
				v = b >= 64 ? ((int64_t)a < 0 ? ~(uint64_t)0 : 0)
					    : (uint64_t)((int64_t)a >> b);
				break;
			/* comparisons are signed (DWARF 5 2.5.1.5, generic type) */
			case DW_OP_eq: v = a == b; break;
			case DW_OP_ne: v = a != b; break;
			case DW_OP_ge: v = (int64_t)a >= (int64_t)b; break;
			case DW_OP_gt: v = (int64_t)a > (int64_t)b; break;
			case DW_OP_le: v = (int64_t)a <= (int64_t)b; break;
			default: v = (int64_t)a < (int64_t)b; break;  /* DW_OP_lt */
			}
			st[sp - 1] = v;
			break;
		case DW_OP_skip:
		case DW_OP_bra: {
			if (ehf_get_le(&c, 2, &u, "branch offset"))
				return -EINVAL;
			int64_t rel = (int16_t)(uint16_t)u;
			if (op == DW_OP_bra) {
				NEED(1);
				if (st[--sp] == 0)
					break;
			}
			int64_t target = (int64_t)c.pos + rel;
			if (target < 0 || (uint64_t)target > len)
				return ehf_fail(err, at, "DW_OP 0x%02x at offset 0x%zx: branch target"
						" %" PRId64 " is outside the expression (length %zu)",
						op, at, target, len);
			c.pos = (size_t)target;
			break;
		}
		default:
			return ehf_fail(err, at, "unsupported DWARF op 0x%02x at offset 0x%zx in a CFI"
					" expression", op, at);
		}
#undef NEED
#undef PUSH
	}
	if (sp == 0)
		return ehf_fail(err, len, "expression left an empty stack");
	*out = st[sp - 1];
	return 0;
}

/* ---- dumps ---- */

__attribute__((format(printf, 4, 5)))
static void ehf_put(char *out, size_t outlen, size_t *n, const char *fmt, ...)
{
	if (*n >= outlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(out + *n, outlen - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n = *n + (size_t)k < outlen ? *n + (size_t)k : outlen;
}

int ehf_disasm_insn(const uint8_t *data, size_t size, size_t *pos,
		    const struct ehf_cie *cie, char *out, size_t outlen,
		    struct ju_err *err)
{
	if (!data && size)
		return ehf_fail(err, 0, "no data");
	if (*pos > size)
		return ehf_fail(err, *pos, "position 0x%zx is past the end (size 0x%zx)", *pos, size);
	struct ehf_cur c = { data, size, *pos, 0, NULL, 0, err };
	struct ehf_insn in;
	/* without a CIE, factored operands are shown unfactored */
	if (ehf_decode(&c, cie ? cie->code_align : 1, cie ? cie->data_align : 1,
		       cie ? cie->fde_enc : DW_EH_PE_absptr, NULL, &in))
		return -EINVAL;
	*pos = c.pos;
	if (!out || !outlen)
		return 0;
	out[0] = 0;
	size_t n = 0;
	const char *name = ehf_cfa_name(in.op);
	switch (in.op) {
	case DW_CFA_advance_loc: case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2: case DW_CFA_advance_loc4:
		ehf_put(out, outlen, &n, "%s %" PRIu64, name, in.delta);
		break;
	case DW_CFA_set_loc:
		ehf_put(out, outlen, &n, "%s 0x%" PRIx64 "%s", name, in.delta,
			cie && (cie->fde_enc & 0x70) ? " (unrelocated)" : "");
		break;
	case DW_CFA_offset: case DW_CFA_offset_extended: case DW_CFA_offset_extended_sf:
	case DW_CFA_GNU_negative_offset_extended:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " at cfa%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_val_offset: case DW_CFA_val_offset_sf:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " is cfa%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_restore: case DW_CFA_restore_extended: case DW_CFA_undefined:
	case DW_CFA_same_value: case DW_CFA_def_cfa_register:
		ehf_put(out, outlen, &n, "%s r%" PRIu64, name, in.reg);
		break;
	case DW_CFA_register:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " in r%" PRIu64, name, in.reg, in.reg2);
		break;
	case DW_CFA_def_cfa: case DW_CFA_def_cfa_sf:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 "%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_def_cfa_offset: case DW_CFA_def_cfa_offset_sf:
		ehf_put(out, outlen, &n, "%s %" PRId64, name, in.off);
		break;
	case DW_CFA_expression: case DW_CFA_val_expression: case DW_CFA_def_cfa_expression:
		ehf_put(out, outlen, &n, "%s", name);
		if (in.op != DW_CFA_def_cfa_expression)
			ehf_put(out, outlen, &n, " r%" PRIu64, in.reg);
		ehf_put(out, outlen, &n, " [");
		for (size_t i = 0; i < in.expr_len; i++)
			ehf_put(out, outlen, &n, "%s%02x", i ? " " : "", in.expr[i]);
		ehf_put(out, outlen, &n, "]");
		break;
	case DW_CFA_GNU_args_size:
		ehf_put(out, outlen, &n, "%s %" PRIu64, name, in.delta);
		break;
	default:
		ehf_put(out, outlen, &n, "%s", name);
		break;
	}
	return 0;
}

static size_t rule_text(const struct ehf_rule *ru, const struct ehf_row_fmt *f, const char *col,
			char *buf, size_t n)
{
	char t[24];
	switch (ru->kind) {
	case EHF_OFFSET:
		return (size_t)snprintf(buf, n, f->brackets ? " %s=[%s%+" PRId64 "]" : " %s=%s%+" PRId64,
					col, f->cfa, ru->off);
	case EHF_VAL_OFFSET:
		return (size_t)snprintf(buf, n, f->val_paren ? " %s=val(%s%+" PRId64 ")" : " %s=%s%+" PRId64,
					col, f->cfa, ru->off);
	case EHF_REGISTER:
		return (size_t)snprintf(buf, n, " %s=%s", col, f->name(f->ctx, ru->reg, t, sizeof(t)));
	case EHF_UNDEF:
		return (size_t)snprintf(buf, n, " %s=%s", col, f->undef);
	case EHF_SAME:
		return f->same ? (size_t)snprintf(buf, n, " %s=same", col) : 0;
	case EHF_EXPRESSION:
	case EHF_VAL_EXPRESSION:
		if (!f->expr_len)
			return (size_t)snprintf(buf, n, " %s=expr", col);
		return (size_t)snprintf(buf, n, " %s=%sexpr(%zu bytes)", col,
					ru->kind == EHF_VAL_EXPRESSION ? "val_" : "", ru->expr_len);
	default:
		return 0;     /* the arch's initial rule: nothing the program said */
	}
}

size_t ehf_row_text(const struct ehf_row *row, const struct ehf_row_fmt *f, char *buf, size_t n)
{
	char t[24];
	size_t o;
	if (!row->cfa_defined)
		o = (size_t)snprintf(buf, n, "%s", f->cfa_undefined);
	else if (row->cfa_kind == EHF_CFA_EXPR && f->expr_len)
		o = (size_t)snprintf(buf, n, "%s=expr(%zu bytes)", f->cfa, row->cfa_expr_len);
	else if (row->cfa_kind == EHF_CFA_EXPR)
		o = (size_t)snprintf(buf, n, "%s=expr", f->cfa);
	else
		o = (size_t)snprintf(buf, n, "%s=%s%+" PRId64, f->cfa, f->name(f->ctx, row->cfa_reg, t, sizeof(t)),
				     row->cfa_off);
	unsigned nregs = f->nregs < EHF_NREGS ? f->nregs : EHF_NREGS;
	for (unsigned d = 0; d < nregs && o < n; d++) {
		const struct ehf_rule *ru = &row->reg[d];
		if (ru->kind != EHF_INITIAL && (ru->kind != EHF_SAME || f->same))
			o += rule_text(ru, f, f->name(f->ctx, d, t, sizeof(t)), buf + o, n - o);
	}
	if (f->ra_signed && row->ra_signed && o < n)
		o += (size_t)snprintf(buf + o, n - o, " ra_signed");
	return o;
}
