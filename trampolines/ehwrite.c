/* .eh_frame + .eh_frame_hdr writer with selectable encodings (LSB 5.0
 * "Exception Frames"; facts section 2 for the header and the layout perf
 * expects).  Every pc-relative value is computed for where the byte really
 * sits: code_addr + eh_off + its offset. */
#include <errno.h>
#include <dwarf.h>
#include <stdio.h>
#include <string.h>

#include "trampolines/buf.h"
#include "trampolines/tramp.h"
#include "juerr.h"

void tr_unwind_opts_default(struct tr_unwind_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cfi = TR_CFI_DERIVED;
	strcpy(o->cie_aug, "zR");
	o->cie_version = 1;
	o->fde_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
	o->hdr = TR_HDR_AFTER;
	o->table_enc = DW_EH_PE_datarel | DW_EH_PE_sdata4;
	o->hdr_table = true;
	o->terminator = false;
	o->eh_unaligned = false;
	o->mapped = -1;
	o->lsda_enc = DW_EH_PE_omit;
}

/* Size in bytes of an encoded value's format; 0 if unsupported here. */
static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

static bool fits(uint8_t enc, int64_t v)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_udata4:
		return (uint64_t)v <= UINT32_MAX;
	case DW_EH_PE_sdata4:
		return v >= INT32_MIN && v <= INT32_MAX;
	case DW_EH_PE_udata2:
		return (uint64_t)v <= UINT16_MAX;
	case DW_EH_PE_sdata2:
		return v >= INT16_MIN && v <= INT16_MAX;
	default:
		return true;
	}
}

/* Writes value with enc; `base` is what the application (pcrel, datarel) is
 * relative to.  -errno with err filled if not representable. */
static int put_encoded(struct tr_buf *b, uint8_t enc, uint64_t value, uint64_t base, bool apply,
		       const char *what, struct ju_err *err)
{
	size_t n = enc_size(enc);
	uint8_t app = enc & 0x70;
	if (!n || (enc & DW_EH_PE_indirect) || (apply && app && app != DW_EH_PE_pcrel && app != DW_EH_PE_datarel)) {
		ju_errf(err, EINVAL, 0, "%s: encoding 0x%02x not supported (use absptr, udata4/8, sdata4/8, "
			 "pcrel|sdata4/8)", what, enc);
		return -EINVAL;
	}
	int64_t v = (int64_t)(apply && app ? value - base : value);
	if (!fits(enc, v)) {
		ju_errf(err, EINVAL, 0, "%s: value 0x%llx does not fit encoding 0x%02x", what,
			 (unsigned long long)v, enc);
		return -ERANGE;
	}
	tr_buf_le(b, (uint64_t)v, n);
	return 0;
}

static void pad_nops(struct tr_buf *b, size_t start)
{
	while ((b->len - start) % 8 && !b->overflow)
		tr_buf_u8(b, DW_CFA_nop);
}

static int check_aug(const char *aug, struct ju_err *err)
{
	if (!aug[0])
		return 0;
	if (aug[0] != 'z')
		goto bad;
	for (const char *p = aug + 1; *p; p++)
		if (!strchr("PLRS", *p) || strchr(p + 1, *p))
			goto bad;
	return 0;
bad:
	ju_errf(err, EINVAL, 0, "CIE augmentation '%s' not supported (\"\", or 'z' then any of P, L, R, S)", aug);
	return -EINVAL;
}

/* Writes the CIE; returns its offset (always 0 here) via the cursor. */
static int write_cie(struct tr_buf *b, const struct tr_arch *a, const struct tr_unwind_opts *o,
		     struct ju_err *err)
{
	size_t start = b->len;
	tr_buf_le(b, 0, 4);                          /* length, patched below */
	tr_buf_le(b, 0, 4);                          /* CIE id 0 (.eh_frame) */
	tr_buf_u8(b, (uint8_t)o->cie_version);
	tr_buf_bytes(b, o->cie_aug, strlen(o->cie_aug) + 1);
	tr_buf_uleb(b, a->code_align);
	tr_buf_sleb(b, a->data_align);
	if (o->cie_version == 1)
		tr_buf_u8(b, (uint8_t)a->facts->dw_ra);     /* version 1: RA column is a ubyte */
	else
		tr_buf_uleb(b, (uint64_t)a->facts->dw_ra);
	if (o->cie_aug[0] == 'z') {
		uint8_t augbuf[32];
		struct tr_buf ab = { .p = augbuf, .cap = sizeof(augbuf) };
		for (const char *p = o->cie_aug + 1; *p; p++) {
			switch (*p) {
			case 'P':                    /* a dummy personality, absptr 0 */
				tr_buf_u8(&ab, DW_EH_PE_absptr);
				tr_buf_le(&ab, 0, 8);
				break;
			case 'L':
				tr_buf_u8(&ab, o->lsda_enc);
				break;
			case 'R':
				tr_buf_u8(&ab, o->fde_enc);
				break;
			default:                     /* 'S': signal frame, no data */
				break;
			}
		}
		tr_buf_uleb(b, ab.len);
		tr_buf_bytes(b, augbuf, ab.len);
	}
	uint8_t init[32];
	size_t ilen;
	if (tr_cfi_cie_init(a, init, sizeof(init), &ilen)) {
		ju_errf(err, EINVAL, 0, "CIE initial instructions too long");
		return -ENOSPC;
	}
	tr_buf_bytes(b, init, ilen);
	pad_nops(b, start);
	tr_buf_patch_le(b, start, b->len - start - 4, 4);
	return 0;
}

static int fde_program(const struct tr_func *f, const struct tr_unwind_opts *o,
		       uint8_t *prog, size_t cap, size_t *len, struct ju_err *err)
{
	switch (o->cfi) {
	case TR_CFI_DERIVED:
		return tr_cfi_derive(f, prog, cap, len, err);
	case TR_CFI_DIRECTIVES:
		return tr_cfi_compile(f, prog, cap, len, err);
	case TR_CFI_BYTES:
		if (o->prog_len > cap || o->prog_len > sizeof(o->prog)) {
			ju_errf(err, EINVAL, 0, "CFA program of %zu bytes too long", o->prog_len);
			return -ENOSPC;
		}
		memcpy(prog, o->prog, o->prog_len);
		*len = o->prog_len;
		return 0;
	default:
		*len = 0;
		return 0;
	}
}

static int write_fde(struct tr_buf *b, uint64_t eh_addr, size_t cie_pos, const struct tr_func *f,
		     const struct tr_unwind_opts *o, uint64_t code_addr, struct ju_err *err)
{
	/* Without 'R' the FDE's pc fields are absptr (LSB: the default encoding). */
	uint8_t enc = strchr(o->cie_aug, 'R') ? o->fde_enc : DW_EH_PE_absptr;
	size_t start = b->len;
	tr_buf_le(b, 0, 4);                                    /* length, patched below */
	tr_buf_le(b, b->len - cie_pos, 4);                     /* CIE pointer: this field - CIE */
	int rc = put_encoded(b, enc, code_addr, eh_addr + b->len, true, "fde_enc pc_begin", err);
	if (!rc)
		rc = put_encoded(b, enc & 0x0f, f->code_size, 0, false, "fde_enc pc_range", err);
	if (rc < 0)
		return rc;
	if (o->cie_aug[0] == 'z') {
		size_t lsda = 0;
		if (strchr(o->cie_aug, 'L') && o->lsda_enc != DW_EH_PE_omit) {
			lsda = enc_size(o->lsda_enc);
			if (!lsda) {
				ju_errf(err, EINVAL, 0, "lsda_enc 0x%02x not supported", o->lsda_enc);
				return -EINVAL;
			}
		}
		tr_buf_uleb(b, lsda);
		tr_buf_le(b, 0, lsda);                         /* a null LSDA */
	}
	uint8_t prog[4096];
	size_t plen;
	rc = fde_program(f, o, prog, sizeof(prog), &plen, err);
	if (rc < 0)
		return rc;
	tr_buf_bytes(b, prog, plen);
	pad_nops(b, start);
	tr_buf_patch_le(b, start, b->len - start - 4, 4);
	return 0;
}

/* .eh_frame_hdr (facts section 2): version, encodings, eh_frame_ptr, then
 * fde_count and the sorted {initial_loc, fde} table relative to its start. */
static int write_hdr(struct tr_buf *b, uint64_t hdr_addr, uint64_t eh_addr, bool has_fde,
		     uint64_t fde_addr, uint64_t code_addr, const struct tr_unwind_opts *o,
		     struct ju_err *err)
{
	uint8_t table_enc = o->hdr_table ? o->table_enc : DW_EH_PE_omit;
	if (o->hdr_table && table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) &&
	    table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata8)) {
		ju_errf(err, EINVAL, 0, "table_enc 0x%02x not supported (datarel|sdata4 or datarel|sdata8)",
			 table_enc);
		return -EINVAL;
	}
	tr_buf_u8(b, 1);                                       /* version */
	tr_buf_u8(b, DW_EH_PE_pcrel | DW_EH_PE_sdata4);        /* eh_frame_ptr_enc */
	tr_buf_u8(b, o->hdr_table ? DW_EH_PE_udata4 : DW_EH_PE_omit); /* fde_count_enc */
	tr_buf_u8(b, table_enc);
	int rc = put_encoded(b, DW_EH_PE_pcrel | DW_EH_PE_sdata4, eh_addr, hdr_addr + b->len, true,
			     "eh_frame_ptr", err);
	if (rc < 0)
		return rc;
	if (!o->hdr_table)
		return 0;
	tr_buf_le(b, has_fde ? 1 : 0, 4);                      /* fde_count */
	if (has_fde)
		rc = put_encoded(b, table_enc, code_addr, hdr_addr, true, "table initial_loc", err);
	if (has_fde && !rc)
		rc = put_encoded(b, table_enc, fde_addr, hdr_addr, true, "table fde", err);
	if (rc < 0)
		return rc;
	return 0;
}

static size_t hdr_size(const struct tr_unwind_opts *o, bool has_fde)
{
	if (o->hdr == TR_HDR_NONE)
		return 0;
	size_t n = 4 + 4;
	if (o->hdr_table)
		n += 4 + (has_fde ? 2 * enc_size(o->table_enc) : 0);
	return n;
}

int tr_unwind_build(const struct tr_func *f, const struct tr_unwind_opts *o,
		    uint64_t code_addr, struct tr_unwind *u, struct ju_err *err)
{
	memset(u, 0, sizeof(*u));
	if (o->cie_version != 1 && o->cie_version != 3) {
		ju_errf(err, EINVAL, 0, "CIE version %d not supported (1 or 3)", o->cie_version);
		return -EINVAL;
	}
	int rc = check_aug(o->cie_aug, err);
	if (rc < 0)
		return rc;
	/* .eh_frame has no data base (datarel) nor text base worth encoding against. */
	if ((o->fde_enc & 0x70) != DW_EH_PE_absptr && (o->fde_enc & 0x70) != DW_EH_PE_pcrel) {
		ju_errf(err, EINVAL, 0, "fde_enc 0x%02x not supported (absolute or pcrel formats only)", o->fde_enc);
		return -EINVAL;
	}
	bool has_fde = o->cfi != TR_CFI_NONE;
	u->eh_off = o->eh_unaligned ? f->code_size : (f->code_size + 7) & ~(size_t)7;
	uint64_t base = code_addr + u->eh_off;
	u->hdr_size = hdr_size(o, has_fde);
	uint64_t hdr_addr, eh_addr;
	if (o->hdr == TR_HDR_BEFORE) {
		hdr_addr = base;
		eh_addr = base + u->hdr_size;
	} else {
		eh_addr = base;
		hdr_addr = 0; /* known once eh_frame is written */
	}

	uint8_t eh[sizeof(u->data)];
	struct tr_buf b = { .p = eh, .cap = sizeof(eh) };
	uint64_t fde_addr = 0;
	if (has_fde) {
		rc = write_cie(&b, f->arch, o, err);
		if (rc < 0)
			return rc;
		fde_addr = eh_addr + b.len;
		rc = write_fde(&b, eh_addr, 0, f, o, code_addr, err);
		if (rc < 0)
			return rc;
	}
	if (o->terminator)
		tr_buf_le(&b, 0, 4);                           /* zero-length terminator (V8) */
	if (b.overflow) {
		ju_errf(err, EINVAL, 0, ".eh_frame longer than %zu bytes", sizeof(eh));
		return -ENOSPC;
	}
	u->eh_frame_size = b.len;
	if (o->hdr == TR_HDR_AFTER)
		hdr_addr = eh_addr + u->eh_frame_size;

	uint8_t hdr[64];
	struct tr_buf hb = { .p = hdr, .cap = sizeof(hdr) };
	int hrc = o->hdr == TR_HDR_NONE ? 0 :
		  write_hdr(&hb, hdr_addr, eh_addr, has_fde, fde_addr, code_addr, o, err);
	if (hrc < 0)
		return hrc;
	if (hb.overflow || hb.len != u->hdr_size) {
		ju_errf(err, EINVAL, 0, "internal: .eh_frame_hdr is %zu bytes, expected %zu", hb.len, u->hdr_size);
		return -ENOSPC;
	}
	u->size = u->eh_frame_size + u->hdr_size;
	if (u->size > sizeof(u->data)) {
		ju_errf(err, EINVAL, 0, "unwinding data of %zu bytes exceeds %zu", u->size, sizeof(u->data));
		return -ENOSPC;
	}
	if (o->hdr == TR_HDR_BEFORE) {
		memcpy(u->data, hdr, u->hdr_size);
		memcpy(u->data + u->hdr_size, eh, u->eh_frame_size);
	} else {
		memcpy(u->data, eh, u->eh_frame_size);
		memcpy(u->data + u->eh_frame_size, hdr, u->hdr_size);
	}
	u->mapped_size = o->mapped >= 0 ? (uint64_t)o->mapped : (u->size + 15) & ~(uint64_t)15;
	return 0;
}
