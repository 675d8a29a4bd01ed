/* The profiler side's arch table: perf register ids <-> DWARF numbers
 * (facts section 3), the kernel's FP record, pointer authentication.
 * Each arch's record, uw_arch_<name>, is in unwinders/arch/<name>.c (its line
 * in arches.def lists it here). */
#include "unwinders/uwarch.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/decode.h"

/* every ARCH line of arches.def has its uw_arch_<name> (unwinders/arch/<name>.c) */
static const struct uw_arch *const all[] = {
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) &uw_arch_##n,
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
};

const char *const uw_arches_lr_leaf[] = { "aarch64", NULL };
const char *const uw_arches_perf_cases[] = { "x86_64", NULL };

/* the build's target (JU_HOST_ARCH, from the Makefile) */
const struct uw_arch *uw_arch_host(void)
{
	const struct arch_facts *h = arch_facts_host();
	return h ? uw_arch_by_name(h->name) : NULL;
}

const struct uw_arch *const *uw_arches(size_t *n)
{
	*n = sizeof(all) / sizeof(all[0]);
	return all;
}

const struct uw_arch *uw_arch_by_mach(uint16_t m)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->facts->elf_mach == m)
			return all[i];
	return NULL;
}

const struct uw_arch *uw_arch_by_name(const char *n)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->facts->name, n) || !strcmp(all[i]->facts->debian, n))
			return all[i];
	return NULL;
}

const char *uw_mach_name(uint32_t m)
{
	/* genelf's machines beyond the table (tools/perf/util/genelf.h): named only */
	static const struct { uint16_t mach; const char *name; } other[] = {
		{ EM_386, "i386" }, { EM_MIPS, "mips" }, { EM_PPC, "ppc" }, { EM_PPC64, "ppc64" },
		{ EM_S390, "s390" }, { EM_ARM, "arm" }, { EM_RISCV, "riscv" }, { 258 /* EM_LOONGARCH */, "loongarch" },
	};
	const struct uw_arch *a = m <= UINT16_MAX ? uw_arch_by_mach((uint16_t)m) : NULL;
	if (a)
		return a->facts->name;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (other[i].mach == m)
			return other[i].name;
	return NULL;
}

const char *uw_dw_name(const struct uw_arch *a, unsigned r, bool pct, char *buf, size_t n)
{
	return arch_dw_name(a ? a->facts : NULL, r, pct, buf, n);
}
