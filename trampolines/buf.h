/* Private to trampolines/: a byte cursor with a sticky overflow flag
 * (LuaJIT lj_gdbjit.c style writers, sljit style errors).  Multi-byte values
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

static inline void tr_buf_uleb(struct tr_buf *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		tr_buf_u8(b, v ? (uint8_t)(byte | 0x80) : byte);
	} while (v);
}

static inline void tr_buf_sleb(struct tr_buf *b, int64_t v)
{
	for (;;) {
		uint8_t byte = (uint8_t)(v & 0x7f);
		v >>= 7; /* arithmetic shift: gcc and clang define it for signed values */
		bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
		tr_buf_u8(b, done ? byte : (uint8_t)(byte | 0x80));
		if (done)
			return;
	}
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
