/* libunwind glue for x86_64, as perf's arch/x86/util/unwind-libunwind.c maps
 * registers: UNW_X86_64_* to PERF_REG_X86_*. */
#include "libunwind_arch.h"

#include <elf.h>

extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t, unw_word_t, unw_dyn_info_t *,
					      unw_proc_info_t *, int, void *);

/* perf ids: AX 0, BX 1, CX 2, DX 3, SI 4, DI 5, BP 6, SP 7, IP 8, R8..R15 16..23 */
static const int8_t perf_of_unw[] = {
	[UNW_X86_64_RAX] = 0, [UNW_X86_64_RDX] = 3, [UNW_X86_64_RCX] = 2, [UNW_X86_64_RBX] = 1,
	[UNW_X86_64_RSI] = 4, [UNW_X86_64_RDI] = 5, [UNW_X86_64_RBP] = 6, [UNW_X86_64_RSP] = 7,
	[UNW_X86_64_R8] = 16, [UNW_X86_64_R9] = 17, [UNW_X86_64_R10] = 18, [UNW_X86_64_R11] = 19,
	[UNW_X86_64_R12] = 20, [UNW_X86_64_R13] = 21, [UNW_X86_64_R14] = 22, [UNW_X86_64_R15] = 23,
	[UNW_X86_64_RIP] = 8,
};

static int x86_64_perf_reg(unw_regnum_t n)
{
	if (n < 0 || (size_t)n >= sizeof(perf_of_unw) / sizeof(perf_of_unw[0]))
		return -1;
	return perf_of_unw[n];
}

const struct uw_lu_arch uw_lu_host = {
	.elf_mach = EM_X86_64,
	.perf_reg = x86_64_perf_reg,
	.search_table = _Ux86_64_dwarf_search_unwind_table,
	.ip_reads = 0,
};
