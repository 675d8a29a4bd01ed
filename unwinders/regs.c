/* perf register ids <-> DWARF numbers (facts section 3). Data only, built
 * for every arch so samples from one arch replay on another. */
#include "unwind.h"

#include <elf.h>
#include <string.h>

static const struct uw_arch uw_x86_64 = {
	.name = "x86_64", .elf_mach = EM_X86_64,
	.sample_mask = 0xff0fffull,            /* bits 0-23 minus DS, ES, FS, GS */
	.perf_sp = 7, .perf_ip = 8, .perf_fp = 6, .perf_lr = -1,
	.dw_sp = 7, .dw_fp = 6, .dw_ra = 16, .dw_lr = -1, .dw_pc = 16,
	.ndw = 17,
	/* DWARF 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 RA(=ip) */
	.perf_of_dw = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8,
			-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
			-1, -1, -1, -1, -1, -1, -1 },
};

static const struct uw_arch uw_aarch64 = {
	.name = "aarch64", .elf_mach = EM_AARCH64,
	.sample_mask = (1ull << 33) - 1,       /* x0-x30, sp, pc */
	.perf_sp = 31, .perf_ip = 32, .perf_fp = 29, .perf_lr = 30,
	.dw_sp = 31, .dw_fp = 29, .dw_ra = 30, .dw_lr = 30, .dw_pc = 32,
	.ndw = 33,
	/* DWARF 0-30 x0-x30, 31 sp; 32 is used here for the pc (perf id 32) */
	.perf_of_dw = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
			20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1, -1, -1, -1, -1,
			-1, -1 },
};

const struct uw_arch *uw_arch_by_mach(uint16_t m)
{
	if (m == EM_X86_64)
		return &uw_x86_64;
	if (m == EM_AARCH64)
		return &uw_aarch64;
	return NULL;
}

const struct uw_arch *uw_arch_by_name(const char *n)
{
	if (!strcmp(n, "x86_64"))
		return &uw_x86_64;
	if (!strcmp(n, "aarch64") || !strcmp(n, "arm64"))
		return &uw_aarch64;
	return NULL;
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
