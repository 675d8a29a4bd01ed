/* The JIT side's arch table: every ARCH line of arches.def, whose encoder
 * file trampolines/<name>.c defines tr_arch_<name>. */
#include <stdio.h>
#include <string.h>

#include "trampolines/arch.h"

static const struct tr_arch *const all[] = {
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) &tr_arch_##n,
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
};

const struct tr_arch *const *tr_arches(size_t *n)
{
	*n = sizeof(all) / sizeof(all[0]);
	return all;
}

const struct tr_arch *tr_arch_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, all[i]->facts->name) || !strcmp(name, all[i]->facts->debian))
			return all[i];
	return NULL;
}

void tr_arch_names(char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", all[i]->facts->name);
		if (w < 0 || (size_t)w >= len - off)
			return;
		off += (size_t)w;
	}
}

/* the build's target (JU_HOST_ARCH, from the Makefile) */
const struct tr_arch *tr_arch_host(void)
{
	const struct arch_facts *h = arch_facts_host();
	return h ? tr_arch_by_name(h->name) : NULL;
}
