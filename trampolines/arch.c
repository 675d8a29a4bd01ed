/* Arch lookup. */
#include <string.h>

#include "arch.h"

const struct tr_arch *tr_arch_by_name(const char *name)
{
	if (!strcmp(name, "x86_64") || !strcmp(name, "amd64"))
		return &tr_arch_x86_64;
	if (!strcmp(name, "aarch64") || !strcmp(name, "arm64"))
		return &tr_arch_aarch64;
	return NULL;
}

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
