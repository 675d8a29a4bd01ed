/* Private to unwinders/model/ehframe*.c: the bounded cursor every reader of
 * .eh_frame bytes goes through, and its errors (struct ju_err, negative
 * errnos: -EINVAL for malformed bytes). */
#ifndef UW_EHFRAME_INT_H
#define UW_EHFRAME_INT_H

#include "unwinders/model/ehframe.h"

#include <stdarg.h>

struct ehf_cur {
	const uint8_t *p;         /* p[0] sits at section offset `base` */
	size_t end;               /* readable: p[0..end) (the record's end, not the section's) */
	size_t pos;
	uint64_t base;
	const char *what;         /* "CIE", "FDE"...: error prefix with `rec`, or NULL */
	uint64_t rec;
	struct ju_err *err;
};

extern const struct ehf_bases ehf_no_bases;

__attribute__((format(printf, 3, 4)))
int ehf_fail(struct ju_err *err, uint64_t off, const char *fmt, ...);
__attribute__((format(printf, 3, 4)))
int ehf_cfail(const struct ehf_cur *c, uint64_t off, const char *fmt, ...);
uint64_t ehf_here(const struct ehf_cur *c);
int ehf_need(struct ehf_cur *c, size_t n, const char *what);
int ehf_get_le(struct ehf_cur *c, size_t n, uint64_t *v, const char *what);
int ehf_get_u8(struct ehf_cur *c, uint8_t *v, const char *what);
int ehf_get_leb(struct ehf_cur *c, bool sign, uint64_t *v, const char *what);
int ehf_get_uleb(struct ehf_cur *c, uint64_t *v, const char *what);
int ehf_get_sleb(struct ehf_cur *c, int64_t *v, const char *what);
int ehf_get_enc(struct ehf_cur *c, uint8_t enc, const struct ehf_bases *b, uint64_t *out,
		const char *what);
int ehf_enc_size(uint8_t enc, const struct ehf_bases *b);

#endif
