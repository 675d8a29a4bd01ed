/* The one LEB128 reader of the profiler side (DWARF's variable-length
 * integers, as .eh_frame and DWARF expressions carry them).  The JIT side
 * writes them with its own code (trampolines/buf.h), so a test of one
 * against the other is a test. */
#ifndef UW_LEB_H
#define UW_LEB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read the ULEB128 (sign: SLEB128) at p[*pos], never past p[end - 1].  0 with
 * *v set and *pos past it; -ENODATA when it runs past end, -EOVERFLOW when it
 * is longer than 10 bytes (the most 64 bits take), -ERANGE when its 10th byte
 * holds more than bit 63 (or, signed, its sign).  On an error *pos is where
 * the reading stopped and *v is left alone. */
static inline int uw_leb_read(const uint8_t *p, size_t end, size_t *pos, bool sign, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos >= end)
			return -ENODATA;
		uint8_t b = p[(*pos)++];
		if (i == 9) {
			if (b & 0x80)
				return -EOVERFLOW;
			/* the 10th byte holds bit 63 only; the rest must match it */
			if (sign ? (b != 0 && b != 0x7f) : (b & 0x7e))
				return -ERANGE;
		}
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (sign && i < 9 && (b & 0x40))
				r |= ~(uint64_t)0 << (7 * (i + 1));
			*v = r;
			return 0;
		}
	}
	return -EOVERFLOW;   /* not reached: the 10th byte ends it or fails */
}

#endif
