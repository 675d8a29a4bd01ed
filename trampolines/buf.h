/* Private to trampolines/ (but for tr_leb_put, the one LEB128 writer, which
 * harness/fuzz/fuzzcfi_enc.c writes its random CFA programs with): a byte
 * cursor with a sticky overflow flag (LuaJIT lj_gdbjit.c style writers, sljit
 * style errors).  Multi-byte values
 * are written little-endian byte by byte: both supported arches are LE. */
#ifndef TR_BUF_H
#define TR_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tr_buf {
	uint8_t *p;
	size_t len, cap;
	bool overflow;
};

static inline void tr_buf_bytes(struct tr_buf *b, const void *src, size_t n)
{
	if (b->overflow || n > b->cap - b->len) {
		b->overflow = true;
		return;
	}
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
}

static inline void tr_buf_u8(struct tr_buf *b, uint8_t v)
{
	tr_buf_bytes(b, &v, 1);
}

static inline void tr_buf_le(struct tr_buf *b, uint64_t v, size_t n)
{
	uint8_t le[8];
	for (size_t i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	tr_buf_bytes(b, le, n);
}

/* The one LEB128 writer of the JIT side: v as ULEB128, or with sign the
 * int64_t in v as SLEB128, into out; returns its length (1..10).  The
 * profiler side reads them with its own code (unwinders/model/leb.h). */
#define TR_LEB_MAX 10
static inline size_t tr_leb_put(uint8_t out[TR_LEB_MAX], uint64_t v, bool sign)
{
	size_t n = 0;
	int64_t s = (int64_t)v;
	for (;;) {
		uint8_t byte = (uint8_t)(v & 0x7f);
		bool done;
		if (sign) {
			s >>= 7;   /* arithmetic shift: gcc and clang define it for signed values */
			done = (s == 0 && !(byte & 0x40)) || (s == -1 && (byte & 0x40));
			v = (uint64_t)s;
		} else {
			v >>= 7;
			done = v == 0;
		}
		out[n++] = done ? byte : (uint8_t)(byte | 0x80);
		if (done)
			return n;
	}
}

static inline void tr_buf_uleb(struct tr_buf *b, uint64_t v)
{
	uint8_t t[TR_LEB_MAX];
	tr_buf_bytes(b, t, tr_leb_put(t, v, false));
}

static inline void tr_buf_sleb(struct tr_buf *b, int64_t v)
{
	uint8_t t[TR_LEB_MAX];
	tr_buf_bytes(b, t, tr_leb_put(t, (uint64_t)v, true));
}

/* Back-patches a little-endian value written earlier at pos. */
static inline void tr_buf_patch_le(struct tr_buf *b, size_t pos, uint64_t v, size_t n)
{
	if (b->overflow || pos + n > b->len)
		return;
	for (size_t i = 0; i < n; i++)
		b->p[pos + i] = (uint8_t)(v >> (8 * i));
}

#endif
