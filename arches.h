/* The pure facts of each architecture, one record each, generated from
 * arches.def: the JIT side (trampolines/arch.h) and the profiler side
 * (unwinders/uwarch.h) both point at these and restate none of them.  Header
 * only (static data and inline functions), so neither side links the other:
 * each object that uses a record has its own copy; compare records by
 * elf_mach or name, never by address. */
#ifndef JU_ARCHES_H
#define JU_ARCHES_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef EM_RISCV
#define EM_RISCV 243
#endif

struct arch_facts {
	const char *name;          /* as cases, reports and the build spell it */
	const char *debian;        /* Debian's name, accepted as another spelling */
	const char *qemu;          /* qemu-user's name */
	const char *triplet;       /* the GNU triplet (the cross compiler's prefix) */
	uint16_t elf_mach;
	int dw_sp, dw_fp, dw_ra, dw_pc, dw_lr;   /* DWARF numbers; dw_lr -1 where none */
	int64_t entry_cfa_off;     /* CFA = sp + this at a function's first instruction */
	bool ra_at_cfa;            /* at entry the return address is at CFA + ra_cfa_off, */
	int64_t ra_cfa_off;        /* else in the link register dw_lr */
	const char *reg_prefix;    /* GNU as writes registers with it ("%" on x86) */
	uint64_t perf_mask;        /* perf's sample_regs_user: the registers a sample carries */
	const uint8_t *bkpt;       /* the breakpoint instruction the capture and trace plant */
	size_t bkpt_len;
	unsigned bkpt_pc_off;      /* the pc at its trap is the breakpoint's address + this */
	const char *mapsyms;       /* the psABI's mapping symbols' letters ("": none) */
	bool mapsyms_exact;        /* ... followed by the end or '.' only */
	const char *const *dw_names;   /* DWARF register n's name, n < ndw_names */
	unsigned ndw_names;
};

/* ARCH_ID_<name>: an arch's index in arch_facts[] */
enum arch_id {
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) ARCH_ID_##n,
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
	ARCH_COUNT
};

/* AF_<name>_<fact>: the numbers as constants, for static initializers */
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) \
	enum { AF_##n##_sp = sp, AF_##n##_fp = fp, AF_##n##_ra = ra, AF_##n##_pc = pc, AF_##n##_lr = lr, \
	       AF_##n##_cfa = cfa, AF_##n##_ra_at_cfa = raat, AF_##n##_ra_cfa_off = raoff };
#define DWREGS(n, ...) static const char *const af_##n##_dwnames[] = { __VA_ARGS__ };
#include "arches.def"
#undef ARCH
#undef DWREGS

static const struct arch_facts arch_facts[ARCH_COUNT] = {
#define ARCH(n, deb, mach, qm, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bk, bkoff, ld, msyms, msexact, pgens) \
	[ARCH_ID_##n] = { .name = #n, .debian = #deb, .qemu = #qm, .triplet = #trip, .elf_mach = mach, \
			  .dw_sp = sp, .dw_fp = fp, .dw_ra = ra, .dw_pc = pc, .dw_lr = lr, .entry_cfa_off = cfa, \
			  .ra_at_cfa = raat, .ra_cfa_off = raoff, .reg_prefix = pfx, .dw_names = af_##n##_dwnames, \
			  .perf_mask = pmask, .bkpt = (const uint8_t *)bk, .bkpt_len = sizeof(bk) - 1, \
			  .bkpt_pc_off = bkoff, .mapsyms = msyms, .mapsyms_exact = msexact, \
			  .ndw_names = sizeof(af_##n##_dwnames) / sizeof(af_##n##_dwnames[0]) },
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS
};

/* Is name one of the ELF mapping symbols of the arch's psABI ("$x", "$d.foo"),
 * which perf's symbol loader (dso__load_sym) drops (arches.def's rule). */
static inline bool arch_mapping_symbol(uint16_t elf_mach, const char *name)
{
	for (unsigned a = 0; a < ARCH_COUNT; a++) {
		const struct arch_facts *f = &arch_facts[a];
		if (f->elf_mach != elf_mach || !f->mapsyms[0] || name[0] != '$' || !name[1] ||
		    !strchr(f->mapsyms, name[1]))
			continue;
		return !f->mapsyms_exact || name[2] == 0 || name[2] == '.';
	}
	return false;
}

/* The arch the build runs on: the Makefile passes -DJU_HOST_ARCH=<name>. */
#define ARCH_ID_OF_(n) ARCH_ID_##n
#define ARCH_ID_OF(n) ARCH_ID_OF_(n)
#ifdef JU_HOST_ARCH
#define ARCH_ID_HOST ARCH_ID_OF(JU_HOST_ARCH)
#else
#define ARCH_ID_HOST ARCH_COUNT   /* not one of the table's: no host arch */
#endif

static inline const struct arch_facts *arch_facts_host(void)
{
	return ARCH_ID_HOST < ARCH_COUNT ? &arch_facts[ARCH_ID_HOST] : NULL;
}

/* By name or Debian's name; NULL if none. */
static inline const struct arch_facts *arch_facts_by_name(const char *s)
{
	for (unsigned i = 0; i < ARCH_COUNT; i++)
		if (!strcmp(s, arch_facts[i].name) || !strcmp(s, arch_facts[i].debian))
			return &arch_facts[i];
	return NULL;
}

static inline const struct arch_facts *arch_facts_by_mach(uint32_t m)
{
	for (unsigned i = 0; i < ARCH_COUNT; i++)
		if (arch_facts[i].elf_mach == m)
			return &arch_facts[i];
	return NULL;
}

/* DWARF register r's name as GNU as writes it, with the prefix when pfx;
 * "rN" where the arch has none (f NULL: any arch). */
static inline const char *arch_dw_name(const struct arch_facts *f, unsigned r, bool pfx, char *buf, size_t n)
{
	if (f && r < f->ndw_names)
		snprintf(buf, n, "%s%s", pfx ? f->reg_prefix : "", f->dw_names[r]);
	else
		snprintf(buf, n, "r%u", r);
	return buf;
}

/* DWARF number of a name as GNU as writes it (the prefix optional); -1 if none. */
static inline int arch_dw_number(const struct arch_facts *f, const char *s)
{
	size_t pl = strlen(f->reg_prefix);
	if (pl && !strncmp(s, f->reg_prefix, pl))
		s += pl;
	for (unsigned i = 0; i < f->ndw_names; i++)
		if (!strcmp(s, f->dw_names[i]))
			return (int)i;
	return -1;
}

#endif
