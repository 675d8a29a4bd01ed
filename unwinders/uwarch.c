/* The profiler side's arch table: perf register ids <-> DWARF numbers
 * (facts section 3), the kernel's FP record, pointer authentication.
 * Adding an arch: one struct here and one line in `all`. */
#include "unwinders/uwarch.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/decode.h"

static const struct uw_arch uw_x86_64 = {
	.name = "x86_64", .alias = "amd64", .elf_mach = EM_X86_64,
	.sample_mask = 0xff0fffull,            /* bits 0-23 minus DS, ES, FS, GS */
	/* arch/x86/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "cs", "ss",
			    "ds", "es", "fs", "gs", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" },
	.perf_sp = 7, .perf_ip = 8, .perf_fp = 6, .perf_lr = -1,
	.dw_sp = 7, .dw_fp = 6, .dw_ra = 16, .dw_lr = -1, .dw_pc = 16,
	.ndw = 17,
	.lu_regs = 17,
	/* DWARF 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 RA(=ip) */
	.perf_of_dw = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8,
			-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
			-1, -1, -1, -1, -1, -1, -1 },
	.entry_cfa_off = 8,
	.pac_mask = ~0ull,
	/* arch/x86/events/core.c perf_callchain_user: no monotonicity check, a
	 * zero return address is stored too, a zero FP ends the walk */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = ~0ull, .align = 0, .monotonic = false },
	.lu_ip_reads = 0,
	.dw_names = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
		      "r12", "r13", "r14", "r15", "rip" },
	.dw_pct = true,
	.has_cs = true, .cs_arch = CS_ARCH_X86, .cs_mode = CS_MODE_64, .cs_att = true,
	.decoder = &uw_decoder_x86_64,
};

static const struct uw_arch uw_aarch64 = {
	.name = "aarch64", .alias = "arm64", .elf_mach = EM_AARCH64,
	.sample_mask = (1ull << 33) - 1,       /* x0-x30, sp, pc */
	/* arch/arm64/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
			    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22",
			    "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr", "sp", "pc" },
	.perf_sp = 31, .perf_ip = 32, .perf_fp = 29, .perf_lr = 30,
	.dw_sp = 31, .dw_fp = 29, .dw_ra = 30, .dw_lr = 30, .dw_pc = 32,
	.ndw = 33,
	.lu_regs = 97,
	/* DWARF 0-30 x0-x30, 31 sp; 32 is used here for the pc (perf id 32) */
	.perf_of_dw = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
			20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1, -1, -1, -1, -1,
			-1, -1 },
	.entry_cfa_off = 0,
	.pac_mask = 0x0000ffffffffffffull,     /* libgcc authenticates; 48-bit user VA */
	/* arch/arm64/kernel/perf_callchain.c: stop on misalignment, on a record
	 * that does not move up the stack, PAC bits stripped from lr
	 * (ptrauth_strip_insn_pac, 48-bit VA) */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = 0x0000ffffffffffffull, .align = 8, .monotonic = true },
	.lu_ip_reads = 1,
	.dw_names = { "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
		      "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
		      "x27", "x28", "x29", "x30", "sp" },
	.has_cs = true, .cs_arch = CS_ARCH_ARM64, .cs_mode = CS_MODE_ARM, .cs_att = false,
	.decoder = &uw_decoder_aarch64,
};

static const struct uw_arch *const all[] = { &uw_x86_64, &uw_aarch64 };

const char *const uw_arches_lr_leaf[] = { "aarch64", NULL };
const char *const uw_arches_perf_cases[] = { "x86_64", NULL };

/* the compiler's target is the one fact the build alone knows */
const struct uw_arch *uw_arch_host(void)
{
#if defined(__x86_64__)
	return &uw_x86_64;
#elif defined(__aarch64__)
	return &uw_aarch64;
#else
	return NULL;
#endif
}

const struct uw_arch *const *uw_arches(size_t *n)
{
	*n = sizeof(all) / sizeof(all[0]);
	return all;
}

const struct uw_arch *uw_arch_by_mach(uint16_t m)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->elf_mach == m)
			return all[i];
	return NULL;
}

const struct uw_arch *uw_arch_by_name(const char *n)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, n) || (all[i]->alias && !strcmp(all[i]->alias, n)))
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
		return a->name;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (other[i].mach == m)
			return other[i].name;
	return NULL;
}

const char *uw_dw_name(const struct uw_arch *a, unsigned r, bool pct, char *buf, size_t n)
{
	if (a && r < UW_DW_NAMES && a->dw_names[r])
		snprintf(buf, n, "%s%s", pct && a->dw_pct ? "%" : "", a->dw_names[r]);
	else
		snprintf(buf, n, "r%u", r);
	return buf;
}
