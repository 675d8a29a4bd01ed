/* The unwinders known to this build, by report key (DESIGN vocabulary).
 * Adding an unwinder: its file defines `const struct uw_unwinder uw_NAME`
 * with its policy; UW_UNWINDERS in unwind.h lists it. */
#include "unwinders/unwind.h"

#include <stdio.h>
#include <string.h>

#define UW_ADDR(id) &id,
/* the run layer adds its columns (harness: real perf) in its own table */
static const struct uw_unwinder *const all[] = { UW_UNWINDERS(UW_ADDR) };
#define NALL (sizeof(all) / sizeof(all[0]))

const struct uw_unwinder *const *uw_unwinders(size_t *n)
{
	*n = NALL;
	return all;
}

const struct uw_unwinder *uw_table_find(const struct uw_unwinder *const *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i]->name, name))
			return t[i];
	return NULL;
}

const struct uw_unwinder *uw_unwinder_by_name(const char *name)
{
	return uw_table_find(all, NALL, name);
}

bool uw_unwinder_default_on(const struct uw_unwinder *u, const char *arch)
{
	bool on = !u->default_arches;
	for (const char *const *a = u->default_arches; !on && *a; a++)
		on = arch && !strcmp(*a, arch);
	return on;
}

bool uw_unwinder_machine_default(const struct uw_unwinder *u, const char *arch)
{
	return uw_unwinder_default_on(u, arch) && (!u->probe || u->probe(NULL, 0) == 0);
}

void uw_table_list(const struct uw_unwinder *const *t, size_t n, const char *arch, bool machine,
		   char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (arch && !(machine ? uw_unwinder_machine_default(t[i], arch)
				      : uw_unwinder_default_on(t[i], arch) && !t[i]->probe))
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", t[i]->name);
		if (w < 0 || (size_t)w >= len - off)
			return;
		off += (size_t)w;
	}
}

void uw_unwinder_list(const char *arch, char *buf, size_t len)
{
	uw_table_list(all, NALL, arch, false, buf, len);
}

void uw_unwinder_defaults(const char *arch, char *buf, size_t len)
{
	uw_table_list(all, NALL, arch, true, buf, len);
}

const char *uw_stop_name(enum uw_stop s)
{
	static const char *const names[] = {
		[UW_STOP_END] = "end", [UW_STOP_NO_INFO] = "no-unwind-info",
		[UW_STOP_MEM] = "outside-snapshot", [UW_STOP_BAD_INFO] = "bad-unwind-info",
		[UW_STOP_MAX] = "max-frames", [UW_STOP_LOOP] = "no-progress",
		[UW_STOP_ERROR] = "unwinder-error",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void uw_why_hex(char *why, size_t n, const char *a, uint64_t x, const char *b)
{
	/* per sample in the fp walk's usual stop: lengths and memcpy, not a
	 * character loop (make bench's fp rate) */
	char hex[19] = "0x";
	int d = x ? (64 - __builtin_clzll(x) + 3) / 4 : 1;
	for (int i = 0; i < d; i++)
		hex[2 + d - 1 - i] = "0123456789abcdef"[(x >> (4 * i)) & 15];
	hex[2 + d] = 0;
	if (!n)
		return;
	size_t o = 0;
	const char *const parts[3] = { a, hex, b };
	for (int i = 0; i < 3 && parts[i]; i++) {
		size_t l = strlen(parts[i]);
		if (l > n - 1 - o)
			l = n - 1 - o;
		memcpy(why + o, parts[i], l);
		o += l;
	}
	why[o] = 0;
}
