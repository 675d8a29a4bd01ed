/* Code bytes that are not the code (JD087): a producer that writes each
 * load's bytes altered, so they cannot be the code its CFI describes.
 * CPython 3.15's perf_jit XORs the last 8 code bytes of every CODE_LOAD with
 * a salt that changes per load (so genelf's build-ids differ): its
 * trampolines are then byte for byte alike but for their last 8 bytes, and
 * those decode to instructions across which the FDE's rows start.  lint
 * takes a load as not its code when a neighbouring load (the one before or
 * the next) has the same size and bytes but for the last 8, and the rows of
 * the load's FDE do not all start on the instructions its bytes decode to
 * (lint_code.c), or an earlier load of that shape was so; its code-derived
 * findings are then left out and its rows are judged alone. */
#include "unwinders/lint/lint_int.h"

#include <inttypes.h>
#include <string.h>

#define SALT_BYTES 8                  /* CPython 3.15: the last 8 code bytes */
#define SALT_MAX_CODE 4096            /* loads compared at most this long */
#define SALT_AHEAD 8                  /* records looked at for the next load */

/* Same size, same bytes but for the last SALT_BYTES, which differ? */
static bool salt_pair(const struct jdr_load *a, const struct jdr_load *b)
{
	if (!a->code || !b->code || a->code_size != b->code_size)
		return false;
	size_t n = (size_t)a->code_size - SALT_BYTES;
	return !memcmp(a->code, b->code, n) && memcmp(a->code + n, b->code + n, SALT_BYTES);
}

static bool load_at(const struct lint_ctx *c, size_t off, struct jdr_rec *o)
{
	struct jdr_iter it = { c->data, c->size, off, c->hdr, 0 };
	struct ju_err e;
	return off < c->size && jdr_next(&it, o, &e) > 0 && o->id == JD_CODE_LOAD && !o->short_fixed &&
	       o->u.load.name && o->u.load.code;
}

/* The load before (the last one walked) or the next one within
 * SALT_AHEAD records is this one but for its last SALT_BYTES. */
static bool salt_neighbour(const struct lint_ctx *c, const struct jdr_rec *r)
{
	struct jdr_rec o;
	if (c->salt_prev_off && load_at(c, (size_t)c->salt_prev_off, &o) && salt_pair(&r->u.load, &o.u.load))
		return true;
	struct jdr_iter it = { c->data, c->size, (size_t)(r->off + r->size), c->hdr, 0 };
	struct ju_err e;
	for (int k = 0; k < SALT_AHEAD && jdr_next(&it, &o, &e) > 0; k++)
		if (o.id == JD_CODE_LOAD)
			return !o.short_fixed && o.u.load.name && salt_pair(&r->u.load, &o.u.load);
	return false;
}

void lint_salt_on_load(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	c->salt_candidate = c->not_code = false;
	/* code an earlier load had whole (c->code_seen) is no salted copy of it */
	if (!l->code || l->code_size <= SALT_BYTES || l->code_size > SALT_MAX_CODE || c->code_seen) {
		c->salt_prev_off = l->code ? r->off : c->salt_prev_off;
		return;
	}
	c->salt_candidate = salt_neighbour(c, r);
	/* the shape seen salted before: the same size and unsalted bytes */
	if (c->salt_candidate && c->salt_loads && c->salt_size == l->code_size &&
	    !memcmp(c->salt_head, l->code, (size_t)l->code_size - SALT_BYTES < sizeof(c->salt_head) ?
		    (size_t)l->code_size - SALT_BYTES : sizeof(c->salt_head)))
		c->not_code = true;
	c->salt_prev_off = r->off;
}

void lint_salt_found(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	if (!c->salt_loads++) {
		c->salt_first = r->off;
		c->salt_size = l->code_size;
		size_t n = (size_t)l->code_size - SALT_BYTES;
		memset(c->salt_head, 0, sizeof(c->salt_head));
		memcpy(c->salt_head, l->code, n < sizeof(c->salt_head) ? n : sizeof(c->salt_head));
	}
}

void lint_salt_finish(struct lint_ctx *c)
{
	if (!c->salt_loads)
		return;
	struct lint_where w = { .load = c->salt_first, .whole = true };
	lint_report_at(c, LR_CODE_NOT_CODE, c->salt_first, &w, "%" PRIu64 " CODE_LOAD%s, the first the CODE_LOAD at 0x%"
		       PRIx64 ", hold%s the bytes of another load of %" PRIu64 " bytes but for the last %d, and the rows "
		       "of %s FDE start inside the instructions those bytes decode to: the dump's bytes are not the "
		       "code (CPython 3.15 XORs each load's last 8 code bytes with a salt), so lint judges %s by %s CFI "
		       "alone", c->salt_loads, c->salt_loads == 1 ? "" : "s", c->salt_first,
		       c->salt_loads == 1 ? "s" : "", c->salt_size, SALT_BYTES, c->salt_loads == 1 ? "its" : "their",
		       c->salt_loads == 1 ? "it" : "them", c->salt_loads == 1 ? "its" : "their");
}
