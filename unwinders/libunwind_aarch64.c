/* libunwind glue for aarch64, as perf's arch/arm64/util/unwind-libunwind.c
 * maps registers: UNW_AARCH64_X0..X29 to PERF_REG_ARM64_X0..X29, X30 to LR,
 * SP and PC to SP and PC; anything else (PSTATE, V0..) perf does not sample. */
#include "libunwind_arch.h"

#include <elf.h>

extern int _Uaarch64_dwarf_search_unwind_table(unw_addr_space_t, unw_word_t, unw_dyn_info_t *,
					       unw_proc_info_t *, int, void *);

/* perf ids: X0..X29 0..29, LR 30, SP 31, PC 32 (facts section 3) */
enum { PERF_ARM64_LR = 30, PERF_ARM64_SP = 31, PERF_ARM64_PC = 32 };

static int aarch64_perf_reg(unw_regnum_t n)
{
	if (n >= UNW_AARCH64_X0 && n <= UNW_AARCH64_X29)
		return (int)(n - UNW_AARCH64_X0);
	switch (n) {
	case UNW_AARCH64_X30:
		return PERF_ARM64_LR;
	case UNW_AARCH64_SP:
		return PERF_ARM64_SP;
	case UNW_AARCH64_PC:
		return PERF_ARM64_PC;
	default:
		return -1;
	}
}

const struct uw_lu_arch uw_lu_host = {
	.elf_mach = EM_AARCH64,
	.perf_reg = aarch64_perf_reg,
	.search_table = _Uaarch64_dwarf_search_unwind_table,
	/* Gstep.c asks unw_is_signal_frame (one read of [ip]) before dwarf_step */
	.ip_reads = 1,
};
