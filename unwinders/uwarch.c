/* The profiler side's arch table: perf register ids <-> DWARF numbers
 * (facts section 3), the kernel's FP record, pointer authentication.
 * Adding an arch: one struct uw_<name> here (its line in arches.def lists it). */
#include "unwinders/uwarch.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/decode.h"

static const struct uw_arch uw_x86_64 = {
	.facts = &arch_facts[ARCH_ID_x86_64],
	.sample_mask = 0xff0fffull,            /* bits 0-23 minus DS, ES, FS, GS */
	/* arch/x86/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "cs", "ss",
			    "ds", "es", "fs", "gs", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" },
	.perf_sp = 7, .perf_ip = 8, .perf_fp = 6, .perf_lr = -1,
	.ndw = 17,
	.lu_regs = 17,
	/* DWARF 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 RA(=ip) */
	.perf_of_dw = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8,
			-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
			-1, -1, -1, -1, -1, -1, -1 },
	.pac_mask = ~0ull,
	/* arch/x86/events/core.c perf_callchain_user: no monotonicity check, a
	 * zero return address is stored too, a zero FP ends the walk */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = ~0ull, .align = 0, .monotonic = false },
	.lu_ip_reads = 0,
	.has_cs = true, .cs_arch = CS_ARCH_X86, .cs_mode = CS_MODE_64, .cs_att = true,
	.decoder = &uw_decoder_x86_64,
};

static const struct uw_arch uw_aarch64 = {
	.facts = &arch_facts[ARCH_ID_aarch64],
	.sample_mask = (1ull << 33) - 1,       /* x0-x30, sp, pc */
	/* arch/arm64/include/uapi/asm/perf_regs.h */
	.perf_reg_names = { "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
			    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22",
			    "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr", "sp", "pc" },
	.perf_sp = 31, .perf_ip = 32, .perf_fp = 29, .perf_lr = 30,
	.ndw = 33,
	.lu_regs = 97,
	/* DWARF 0-30 x0-x30, 31 sp; 32 is used here for the pc (perf id 32) */
	.perf_of_dw = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
			20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1, -1, -1, -1, -1,
			-1, -1 },
	.pac_mask = 0x0000ffffffffffffull,     /* libgcc authenticates; 48-bit user VA */
	/* arch/arm64/kernel/perf_callchain.c: stop on misalignment, on a record
	 * that does not move up the stack, PAC bits stripped from lr
	 * (ptrauth_strip_insn_pac, 48-bit VA) */
	.fp = { .next_off = 0, .ra_off = 8, .ra_mask = 0x0000ffffffffffffull, .align = 8, .monotonic = true },
	.lu_ip_reads = 1,
	.has_cs = true, .cs_arch = CS_ARCH_ARM64, .cs_mode = CS_MODE_ARM, .cs_att = false,
	.decoder = &uw_decoder_aarch64,
};

static const struct uw_arch uw_riscv64 = {
	.facts = &arch_facts[ARCH_ID_riscv64],
	.sample_mask = (1ull << 32) - 1,       /* PERF_REG_RISCV_MAX = 32 */
	/* arch/riscv/include/uapi/asm/perf_regs.h: pc in place of x0, then x1-x31 */
	.perf_reg_names = { "pc", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1",
			    "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7",
			    "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6" },
	.perf_sp = 2, .perf_ip = 0, .perf_fp = 8, .perf_lr = 1,
	.ndw = 33,
	/* libunwind's riscv DWARF_NUM_PRESERVED_REGS (x0-x31, f0-f31); no riscv64
	 * libunwind on the build machine checks it yet */
	.lu_regs = 64,
	.lu_pc = 64,                           /* UNW_RISCV_PC */
	/* DWARF 0 zero (no perf id: perf's 0 is the pc), 1-31 x1-x31 as perf numbers
	 * them; 32 is used here for the pc, as on arm64 */
	.perf_of_dw = { -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
			20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0, -1, -1, -1, -1, -1,
			-1, -1 },
	.pac_mask = ~0ull,
	/* arch/riscv/kernel/stacktrace.c arch_stack_walk_user (perf_callchain.c's
	 * user_backtrace before it): the record {fp, ra} below s0, the first
	 * step's ra the live register, a zero ra ends the walk unstored, a record
	 * address not a multiple of 8 ends it (0x3 in older kernels) */
	.fp = { .next_off = -16, .ra_off = -8, .ra_mask = ~0ull, .align = 8, .monotonic = false,
		.first_ra_live = true, .zero_ra_ends = true },
	/* libunwind's riscv unw_step probes the instruction at ip once
	 * (unw_is_signal_frame: li a7, __NR_rt_sigreturn; ecall) before its DWARF step */
	.lu_ip_reads = 1,
	/* capstone disassembles riscv from version 5 (Debian 13) */
#if CS_API_MAJOR >= 5
	/* RISCVC: compiled C is compressed (gcc's rv64gc); JIT code here is not */
	.has_cs = true, .cs_arch = CS_ARCH_RISCV, .cs_mode = CS_MODE_RISCV64 | CS_MODE_RISCVC, .cs_att = false,
#else
	.has_cs = false,
#endif
	.perf_cpuid = "0x0-0x0-0x0",
	.libdw_no_fp = true,
	.perf_name_unknown = true,
	.decoder = &uw_decoder_riscv64,
};

/* every ARCH line of arches.def has its uw_<name> above */
static const struct uw_arch *const all[] = {
#define ARCH(n, deb, mach, qemu, trip, sp, fp, ra, pc, lr, cfa, raat, raoff, pfx) &uw_##n,
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
