/* The unwinders known to this build, by report key (DESIGN vocabulary).
 * Adding an unwinder: its file defines `const struct uw_unwinder uw_NAME`
 * with its policy; one line below lists it. */
#include "unwinders/unwind.h"

#include <stdio.h>
#include <string.h>

extern const struct uw_unwinder uw_fp, uw_libunwind, uw_libdw, uw_oracle, uw_lrstep, uw_lrstep_dw,
	uw_kernel_fp, uw_perf, uw_perf_fp;

static const struct uw_unwinder *const all[] = {
	&uw_fp,
	&uw_libunwind,
	&uw_libdw,
	&uw_oracle,
	&uw_lrstep,
	&uw_lrstep_dw,
	&uw_kernel_fp,
	&uw_perf,         /* harness/realperf/perfcol.c: real perf, run per case */
	&uw_perf_fp,      /* the same, arm64 --call-graph fp with the LR record */
};

const struct uw_unwinder *const *uw_unwinders(size_t *n)
{
	*n = sizeof(all) / sizeof(all[0]);
	return all;
}

const struct uw_unwinder *uw_unwinder_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
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

static void list(const char *arch, bool machine, char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (arch && !(machine ? uw_unwinder_machine_default(all[i], arch)
				      : uw_unwinder_default_on(all[i], arch) && !all[i]->probe))
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", all[i]->name);
		if (w < 0 || (size_t)w >= len - off)
			return;
		off += (size_t)w;
	}
}

void uw_unwinder_list(const char *arch, char *buf, size_t len)
{
	list(arch, false, buf, len);
}

void uw_unwinder_defaults(const char *arch, char *buf, size_t len)
{
	list(arch, true, buf, len);
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
	char hex[19] = "0x";
	int d = 0;
	for (uint64_t t = x; t; t >>= 4)
		d++;
	if (!d)
		d = 1;
	for (int i = 0; i < d; i++)
		hex[2 + d - 1 - i] = "0123456789abcdef"[(x >> (4 * i)) & 15];
	hex[2 + d] = 0;
	size_t o = 0;
	for (const char *const *p = (const char *const[]){ a, hex, b, NULL }; *p && n; p++)
		for (const char *c = *p; *c && o + 1 < n; c++)
			why[o++] = *c;
	if (n)
		why[o] = 0;
}
