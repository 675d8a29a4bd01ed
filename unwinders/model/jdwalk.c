/* The one jitdump walk: perf's reading of records (tools/perf/util/jitdump.c
 * jit_get_next_entry, jit_repipe_*), every length checked before a read. */
#include "unwinders/model/jdwalk.h"

#include <stdio.h>
#include <errno.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Fill err with lint's and dump's wording of why the walk stops; -EINVAL. */
static int fail(struct ju_err *err, enum jdr_errkind k, uint64_t off, size_t left,
		uint32_t magic, uint32_t id, uint32_t size)
{
	int rc = -EINVAL;
	switch (k) {
	case JDR_SHORT_HEADER:
		rc = ju_errf(err, EINVAL, off, "file of %zu bytes is shorter than the 40-byte jitdump header", left);
		break;
	case JDR_SWAPPED:
		rc = ju_errf(err, EINVAL, off, "byte-swapped magic 0x%08x: a dump from the other byte order "
			     "(perf swaps every field; this reader takes host order only)", magic);
		break;
	case JDR_BAD_MAGIC:
		rc = ju_errf(err, EINVAL, off, "bad magic 0x%08x, expected 0x4a695444 (\"JiTD\")", magic);
		break;
	case JDR_PREFIX_TRUNCATED:
		rc = ju_errf(err, EINVAL, off, "record prefix truncated: %zu bytes left, a prefix has 16", left);
		break;
	case JDR_SIZE_SMALL:
		rc = ju_errf(err, EINVAL, off, "record total_size %u is below the 16-byte prefix", size);
		break;
	case JDR_PAST_END:
		rc = ju_errf(err, EINVAL, off, "record id %u of total_size %u runs past the end of the file (%zu bytes left)",
			     id, size, left);
		break;
	}
	if (err)
		err->kind = (int)k;
	return rc;
}

int jdr_init(struct jdr_iter *it, const uint8_t *data, size_t size, struct ju_err *err)
{
	memset(it, 0, sizeof(*it));
	it->data = data;
	it->size = size;
	if (size < JD_HDR_SIZE)
		return fail(err, JDR_SHORT_HEADER, 0, size, 0, 0, 0);
	struct jdr_hdr *h = &it->hdr;
	h->magic = rd32(data + JD_HDR_MAGIC);
	h->version = rd32(data + JD_HDR_VERSION);
	h->total_size = rd32(data + JD_HDR_TOTAL_SIZE);
	h->elf_mach = rd32(data + JD_HDR_ELF_MACH);
	h->pad1 = rd32(data + JD_HDR_PAD1);
	h->pid = rd32(data + JD_HDR_PID);
	h->timestamp = rd64(data + JD_HDR_TIMESTAMP);
	h->flags = rd64(data + JD_HDR_FLAGS);
	if (h->magic != JD_MAGIC) {
		return fail(err, h->magic == __builtin_bswap32(JD_MAGIC) ? JDR_SWAPPED : JDR_BAD_MAGIC, 0, size,
			    h->magic, 0, 0);
	}
	/* records start where the producer meant them to; lint's JD003 says what perf does */
	it->off = h->total_size > JD_HDR_SIZE && h->total_size <= size ? h->total_size : JD_HDR_SIZE;
	return 0;
}

static void decode_load(struct jdr_rec *r)
{
	struct jdr_load *l = &r->u.load;
	const uint8_t *p = r->p;
	l->pid = rd32(p + JD_LOAD_PID);
	l->tid = rd32(p + JD_LOAD_TID);
	l->vma = rd64(p + JD_LOAD_VMA);
	l->code_addr = rd64(p + JD_LOAD_CODE_ADDR);
	l->code_size = rd64(p + JD_LOAD_CODE_SIZE);
	l->code_index = rd64(p + JD_LOAD_CODE_INDEX);
	size_t room = r->size - JD_LOAD_FIXED;
	const uint8_t *nul = room ? memchr(p + JD_LOAD_FIXED, 0, room) : NULL;
	if (!nul)
		return;
	l->name = (const char *)(p + JD_LOAD_FIXED);
	l->name_len = (size_t)(nul - (p + JD_LOAD_FIXED));
	size_t after = room - l->name_len - 1;
	if (l->code_size <= after) {
		/* perf takes the code as the LAST code_size bytes of the record */
		l->code = p + r->size - l->code_size;
		l->gap = after - (size_t)l->code_size;
	}
}

static void decode(struct jdr_rec *r)
{
	const uint8_t *p = r->p;
	switch (r->id) {
	case JD_CODE_LOAD:
		if (r->size < JD_LOAD_FIXED + 1)
			r->short_fixed = true;
		else
			decode_load(r);
		break;
	case JD_CODE_MOVE:
		if (r->size < JD_MOVE_FIXED) {
			r->short_fixed = true;
			break;
		}
		r->u.move = (struct jdr_move){ rd32(p + JD_MOVE_PID), rd32(p + JD_MOVE_TID), rd64(p + JD_MOVE_VMA),
					       rd64(p + JD_MOVE_OLD_CODE_ADDR), rd64(p + JD_MOVE_NEW_CODE_ADDR),
					       rd64(p + JD_MOVE_CODE_SIZE), rd64(p + JD_MOVE_CODE_INDEX) };
		break;
	case JD_CODE_DEBUG_INFO:
		if (r->size < JD_DEBUG_FIXED) {
			r->short_fixed = true;
			break;
		}
		r->u.debug = (struct jdr_debug){ rd64(p + JD_DEBUG_CODE_ADDR), rd64(p + JD_DEBUG_NR_ENTRY),
						 p + JD_DEBUG_FIXED, r->size - JD_DEBUG_FIXED };
		break;
	case JD_CODE_UNWINDING_INFO:
		if (r->size < JD_UNW_FIXED) {
			r->short_fixed = true;
			break;
		}
		r->u.unw = (struct jdr_unw){ rd64(p + JD_UNW_UNWINDING_SIZE), rd64(p + JD_UNW_EH_FRAME_HDR_SIZE),
					     rd64(p + JD_UNW_MAPPED_SIZE), p + JD_UNW_FIXED,
					     r->size - JD_UNW_FIXED };
		break;
	default:
		break;
	}
}

int jdr_next(struct jdr_iter *it, struct jdr_rec *r, struct ju_err *err)
{
	memset(r, 0, sizeof(*r));
	if (it->off >= it->size)
		return 0;
	size_t left = it->size - it->off;
	r->off = it->off;
	if (left < JD_REC_PREFIX)
		return fail(err, JDR_PREFIX_TRUNCATED, r->off, left, 0, 0, 0);
	const uint8_t *p = it->data + it->off;
	r->id = rd32(p + JD_REC_ID);
	r->size = rd32(p + JD_REC_TOTAL_SIZE);
	r->timestamp = rd64(p + JD_REC_TIMESTAMP);
	r->p = p;
	if (r->size < JD_REC_PREFIX || r->size > left) {
		return fail(err, r->size < JD_REC_PREFIX ? JDR_SIZE_SMALL : JDR_PAST_END, r->off + JD_REC_TOTAL_SIZE,
			    left, 0, r->id, r->size);
	}
	it->off += r->size;
	it->nrecs++;
	decode(r);
	return 1;
}

void jdr_pending_step(struct jdr_pending *s, const struct jdr_rec *r,
		      const struct jdr_unw **unw, uint64_t *unw_off,
		      const struct jdr_debug **dbg, uint64_t *dbg_off)
{
	if (unw)
		*unw = NULL;
	if (dbg)
		*dbg = NULL;
	switch (r->id) {
	case JD_CODE_UNWINDING_INFO:
		if (r->short_fixed)
			break;
		s->unw_set = true;
		s->unw_off = r->off;
		s->unw = r->u.unw;
		break;
	case JD_CODE_DEBUG_INFO:
		if (r->short_fixed)
			break;
		s->dbg_set = true;
		s->dbg_off = r->off;
		s->dbg = r->u.debug;
		break;
	case JD_CODE_LOAD:
		if (s->unw_set) {
			if (unw)
				*unw = &s->unw;
			if (unw_off)
				*unw_off = s->unw_off;
			/* jit_repipe_code_load frees it only when eh_frame_hdr_size != 0 */
			if (s->unw.eh_frame_hdr_size)
				s->unw_set = false;
		}
		if (s->dbg_set) {
			if (dbg)
				*dbg = &s->dbg;
			if (dbg_off)
				*dbg_off = s->dbg_off;
			s->dbg_set = false;
		}
		break;
	default:
		break;
	}
}
