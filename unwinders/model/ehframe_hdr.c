/* .eh_frame_hdr: its header and the binary search of its table. */
#include "unwinders/model/ehframe_int.h"
#include "unwinders/model/leb.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
