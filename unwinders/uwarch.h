/* The profiler side's architectures as data: everything replay, the FP walk,
 * the oracle and the reports need to know of an arch.  Built for every arch
 * (samples from one replay on another); the table is unwinders/uwarch.c, each
 * arch's record in unwinders/arch/<arch>.c. */
#ifndef UW_UWARCH_H
#define UW_UWARCH_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#include "arches.h"

#define UW_PERF_REGS 64

struct uw_decoder;   /* decode.h */

/* The kernel's frame-pointer walk (perf_callchain_user) for the arch. */
struct uw_fp_layout {
	int64_t next_off, ra_off;  /* caller's FP and the return address at FP + these */
	uint64_t ra_mask;          /* bits of a return address kept (arm64: PAC stripped, 48-bit VA) */
	unsigned align;            /* a record address not a multiple of this ends the walk; 0: no check */
	bool monotonic;            /* a record that does not move up the stack ends the walk */
	/* the first step's return address is the live link register (perf_lr),
	 * not the record's slot, and the first record is read without the zero
	 * and alignment checks (the kernel's user walk checks only the FPs it
	 * reads from records) */
	bool first_ra_live;
	bool zero_ra_ends;         /* a zero return address ends the walk, not stored */
};

struct uw_arch {
	const struct arch_facts *facts;   /* name, ELF machine, DWARF numbers and names (arches.def) */
	const char *perf_reg_names[UW_PERF_REGS];   /* by perf register id; NULL where none */
	int perf_sp, perf_ip, perf_fp, perf_lr;   /* perf ids; perf_lr -1 on x86_64 */
	int ndw;                   /* DWARF registers carried into unwinders (x86_64 17, arm64 33) */
	int perf_of_dw[40];        /* perf id of DWARF reg n, -1 if none */
	int lu_regs;               /* libunwind's DWARF_NUM_PRESERVED_REGS (x86_64 17, arm64 97): a CFA
				    * instruction naming a register at or past it fails its step */
	/* HEADER_CPUID of the perf.data written for this arch's samples, NULL:
	 * none (where perf needs one, the arch's record says why) */
	const char *perf_cpuid;
	/* perf 6.5-6.x (profile v6.12) finds registers by perf_env__arch()'s name,
	 * which maps no name of this arch: its stack-pointer lookup fails and
	 * gives register 0, so unwind-libdw.c reads the stack dump as if it began
	 * at that register's value */
	bool perf_name_unknown;
	/* elfutils' backend for this arch has no frame-pointer fallback (no
	 * unwind hook): perf's libdw path ends at code without CFI (lint's JD083) */
	bool libdw_no_fp;
	int lu_pc;                 /* libunwind's own number for the pc where it is not ndw - 1's
				    * place in perf_of_dw (libunwind numbers it after the float registers); 0 none */
	uint64_t pac_mask;         /* a signed return address ANDed with this (~0: no pointer auth) */
	struct uw_fp_layout fp;
	/* reads of [ip] libunwind's unw_step makes on its DWARF path (aarch64: the
	 * unw_is_signal_frame probe in Gstep.c); one more means the step took the
	 * arch's non-DWARF path (x86_64's rbp chain, aarch64's PLT test before LR) */
	int lu_ip_reads;
	/* lint and dump */
	bool has_cs;               /* capstone disassembles it: */
	int cs_arch, cs_mode;      /* cs_open's arguments (capstone's enum values) */
	bool cs_att;               /* AT&T syntax (as objdump and GNU as write x86) */
	const struct uw_decoder *decoder;   /* lint's instruction decoder (decode_<arch>.c), or NULL */
};

/* Arches by what perf does on them, for an unwinder's default_arches (unwind.h):
 * NULL-terminated lists of the table's names, kept with the table. */
/* perf's --call-graph fp takes the leaf's caller from LR with one DWARF step
 * (tools/perf/arch/arm64/util/machine.c get_leaf_frame_caller): lr-step's arches */
extern const char *const uw_arches_lr_leaf[];
/* the arch's cases carry real perf's expectations (`?perf` keys, recorded from a
 * real perf): the perf column runs by default there */
extern const char *const uw_arches_perf_cases[];

/* uw_arch_<name>: one per ARCH line of arches.def, in unwinders/arch/<name>.c */
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx, pmask, bkpt, bkptoff, ld, msyms, msexact, pgens) \
	extern const struct uw_arch uw_arch_##n;
#define DWREGS(n, ...)
#include "arches.def"
#undef ARCH
#undef DWREGS

/* The arch this build runs on (the compiler's target), or NULL if not in the table. */
const struct uw_arch *uw_arch_host(void);
const struct uw_arch *uw_arch_by_mach(uint16_t elf_mach);
/* An ELF machine's name: the table's arches, and the other machines perf's
 * genelf knows (for lint's elf-mach rule and dump's header); NULL if none. */
const char *uw_mach_name(uint32_t elf_mach);
/* DWARF register r of arch a (NULL: any) as GNU as writes it, with the '%'
 * when pct and the arch uses one; "rN" where the arch has no name. */
const char *uw_dw_name(const struct uw_arch *a, unsigned r, bool pct, char *buf, size_t n);
const struct uw_arch *uw_arch_by_name(const char *name);
/* Every arch of the table; n set to the count. */
const struct uw_arch *const *uw_arches(size_t *n);

#endif
