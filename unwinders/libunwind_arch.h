/* Per-arch glue of the libunwind unwinder (libunwind_<arch>.c, built only on
 * that arch): libunwind's register numbers to perf ids, and the arch's
 * dwarf_search_unwind_table.  libunwind.c stays arch-neutral. */
#ifndef UW_LIBUNWIND_ARCH_H
#define UW_LIBUNWIND_ARCH_H

#include <stdint.h>
#include <libunwind.h>

struct uw_lu_arch {
	uint16_t elf_mach;
	/* perf register id of libunwind register n, -1 where perf has none */
	int (*perf_reg)(unw_regnum_t n);
	/* exported by libunwind 1.6 but not declared in its headers (facts section 3) */
	int (*search_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
			    unw_proc_info_t *pi, int need_unwind_info, void *arg);
	/* reads of [ip] every unw_step makes on its DWARF path (aarch64: the
	 * unw_is_signal_frame probe); one more means the step took the arch's
	 * non-DWARF path (x86_64's rbp chain, aarch64's PLT test before LR) */
	int ip_reads;
};

/* Defined by the host arch's glue.  A strong reference where the glue exists
 * (a weak one would not pull it out of the static library); weak elsewhere,
 * so such a build still links and the unwinder says it cannot run.  The
 * build says which: UW_LU_HAVE_GLUE is 1 where unwinders/libunwind_<arch>.c
 * exists for the arch being built. */
#if defined(UW_LU_HAVE_GLUE) && UW_LU_HAVE_GLUE
extern const struct uw_lu_arch uw_lu_host;
#else
#undef UW_LU_HAVE_GLUE
#define UW_LU_HAVE_GLUE 0
extern const struct uw_lu_arch uw_lu_host __attribute__((weak));
#endif

#endif
