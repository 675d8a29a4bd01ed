/* The JIT side's arch table.  Adding an arch: its encoder file defines
 * tr_arch_<name>; one line in `all`. */
#include <stdio.h>
#include <string.h>

#include "trampolines/arch.h"

static const struct { const struct tr_arch *a; const char *alias; } all[] = {
	{ &tr_arch_x86_64, "amd64" },
	{ &tr_arch_aarch64, "arm64" },
};

const struct tr_arch *tr_arch_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, all[i].a->name) || !strcmp(name, all[i].alias))
			return all[i].a;
	return NULL;
}

void tr_arch_names(char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", all[i].a->name);
		if (w < 0 || (size_t)w >= len - off)
			return;
		off += (size_t)w;
	}
}

/* the compiler's target is the one fact the build alone knows */
const struct tr_arch *tr_arch_host(void)
{
#if defined(__x86_64__)
	return &tr_arch_x86_64;
#elif defined(__aarch64__)
	return &tr_arch_aarch64;
#else
	return NULL;
#endif
}
