/* riscv64 decoder for the code-vs-CFI check: the stack instructions JIT
 * prologues and epilogues use (the RISC-V unprivileged ISA, RV64I and the C
 * extension's stack forms), 4 or 2 bytes each; an unknown one stops the
 * check as on the other arches.  A large frame's `lui t0, N; sub sp, sp, t0`
 * is a constant the interpreter keeps for one instruction (UW_EFF_CONST).  DWARF numbers are the x registers: sp 2,
 * s0 (the frame pointer) 8, ra 1. */
#include <capstone/capstone.h>
#include <stdio.h>

#include "unwinders/decode.h"
#include "unwinders/uwarch.h"

enum { RV_RA = 1, RV_SP = 2, RV_T0 = 5, RV_S0 = 8 };

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);
	return (int64_t)((v ^ m) - m);
}

/* a write of rd the check does not follow, where rd is sp or the frame pointer */
static void unknown_write(struct uw_insn *e, unsigned rd)
{
	if (rd == RV_SP)
		uw_insn_add(e, UW_EFF_SP_UNKNOWN, 0);
	else if (rd == RV_S0)
		uw_insn_add(e, UW_EFF_FP_UNKNOWN, 0);
}

/* addi rd, rs1, imm between sp and s0 */
static void addi(struct uw_insn *e, unsigned rd, unsigned rs1, int64_t imm)
{
	if (rd == RV_SP && rs1 == RV_SP)
		uw_insn_add(e, UW_EFF_SP_ADD, imm);
	else if (rd == RV_SP && rs1 == RV_S0)
		uw_insn_add(e, UW_EFF_SP_FROM_FP, imm);
	else if (rd == RV_S0 && rs1 == RV_SP)
		uw_insn_add(e, UW_EFF_FP_FROM_SP, imm);
	else if (rd == RV_S0 && rs1 == RV_S0)
		uw_insn_add(e, UW_EFF_FP_ADD, imm);
	else
		unknown_write(e, rd);
}

/* ld rd, off(sp) and its compressed form; false: sp itself loaded */
static bool load_sp(struct uw_insn *e, unsigned rd, int64_t off)
{
	if (rd == RV_SP)
		return false;
	uw_insn_reg(e, UW_EFF_RESTORE, rd, off);
	if (rd == RV_S0)
		uw_insn_add(e, UW_EFF_FP_RESTORE, 0);
	return true;
}

static size_t rv_decode32(uint32_t w, struct uw_insn *e)
{
	unsigned op = w & 0x7f, rd = (w >> 7) & 31, f3 = (w >> 12) & 7, rs1 = (w >> 15) & 31, rs2 = (w >> 20) & 31;
	int64_t imm_i = sext(w >> 20, 12), imm_s = sext(((w >> 25) << 5) | ((w >> 7) & 31), 12);
	switch (op) {
	case 0x13:                                      /* OP-IMM: addi, and the rest */
		if (f3 == 0)
			addi(e, rd, rs1, imm_i);
		else
			unknown_write(e, rd);
		return 4;
	case 0x33:                                      /* OP: add/sub sp, sp, rs2 (a large frame) */
		if (rd == RV_SP && rs1 == RV_SP && f3 == 0 && (w >> 25 == 0 || w >> 25 == 0x20))
			uw_insn_reg(e, UW_EFF_SP_ADD_REG, rs2, w >> 25 ? -1 : 1);
		else
			unknown_write(e, rd);
		return 4;
	case 0x1b: case 0x3b: case 0x17:                /* OP-IMM-32, OP-32, auipc */
		unknown_write(e, rd);
		return 4;
	case 0x37:                                      /* lui: a constant for the next instruction */
		if (rd == RV_SP || rd == RV_S0)
			unknown_write(e, rd);
		else if (rd)
			uw_insn_reg(e, UW_EFF_CONST, rd, sext(w & 0xfffff000u, 32));
		return 4;
	case 0x23:                                      /* stores: sd rs2, imm(sp) */
		if (f3 == 3 && rs1 == RV_SP)
			uw_insn_reg(e, UW_EFF_STORE, rs2, imm_s);
		return 4;
	case 0x03:                                      /* loads: ld rd, imm(sp) */
		if (f3 == 3 && rs1 == RV_SP)
			return load_sp(e, rd, imm_i) ? 4 : 0;
		unknown_write(e, rd);
		return 4;
	case 0x67:                                      /* jalr: ret, jr, call */
	case 0x6f:                                      /* jal: j, call */
		if (rd == 0)
			e->end = true;
		else if (rd == RV_RA)
			uw_insn_reg(e, UW_EFF_CLOBBER, RV_RA, 0);
		else
			unknown_write(e, rd);
		return 4;
	case 0x63: case 0x0f:                           /* branches, fence */
		return 4;
	case 0x73:                                      /* ebreak ends; ecall goes on */
		e->end = w == 0x00100073u;
		return w == 0x00100073u || w == 0x00000073u ? 4 : 0;
	default:
		return 0;
	}
}

/* the C extension's quadrant 2 (stack-pointer forms, jr/jalr/mv) */
static size_t rv_decode_c2(uint16_t h, struct uw_insn *e)
{
	unsigned f3 = h >> 13, rd = (h >> 7) & 31, rs2 = (h >> 2) & 31;
	bool b12 = h & 0x1000;
	switch (f3) {
	case 3: {                                       /* c.ldsp */
		int64_t off = (int64_t)(((h >> 12) & 1) << 5 | ((h >> 5) & 3) << 3 | ((h >> 2) & 7) << 6);
		return rd && load_sp(e, rd, off) ? 2 : 0;
	}
	case 7:                                         /* c.sdsp */
		uw_insn_reg(e, UW_EFF_STORE, rs2, (int64_t)(((h >> 10) & 7) << 3 | ((h >> 7) & 7) << 6));
		return 2;
	case 4:
		if (!b12 && !rs2) {                     /* c.jr */
			e->end = true;
		} else if (!b12) {                      /* c.mv rd, rs2 */
			if ((rd == RV_SP && rs2 == RV_S0) || (rd == RV_S0 && rs2 == RV_SP))
				addi(e, rd, rs2, 0);
			else
				unknown_write(e, rd);
		} else if (!rd && !rs2) {               /* c.ebreak */
			e->end = true;
		} else if (!rs2) {                      /* c.jalr */
			uw_insn_reg(e, UW_EFF_CLOBBER, RV_RA, 0);
		} else {                                /* c.add */
			unknown_write(e, rd);
		}
		return 2;
	case 0: case 2:                                 /* c.slli, c.lwsp */
		unknown_write(e, rd);
		return 2;
	default:                                        /* c.fldsp, c.fsdsp, c.swsp */
		return 2;
	}
}

static size_t rv_decode16(uint16_t h, struct uw_insn *e)
{
	unsigned q = h & 3, f3 = h >> 13, rd = (h >> 7) & 31, rdp = 8 + ((h >> 2) & 7), rs1p = 8 + ((h >> 7) & 7);
	int64_t imm6 = sext(((h >> 12) & 1) << 5 | ((h >> 2) & 31), 6);
	if (q == 2)
		return rv_decode_c2(h, e);
	if (q == 0) {
		if (!h)
			return 0;                               /* the defined illegal instruction */
		if (f3 == 0)                                /* c.addi4spn rd', sp, uimm */
			addi(e, rdp, RV_SP, (int64_t)(((h >> 6) & 1) << 2 | ((h >> 5) & 1) << 3 |
						       ((h >> 11) & 3) << 4 | ((h >> 7) & 15) << 6));
		else if (f3 < 4)                            /* loads into rd' */
			unknown_write(e, rdp);
		return 2;
	}
	switch (f3) {                                   /* quadrant 1 */
	case 0:                                         /* c.addi (c.nop) */
		addi(e, rd, rd, imm6);
		return 2;
	case 3:
		if (rd == RV_SP) {                      /* c.addi16sp */
			int64_t imm = sext(((h >> 12) & 1) << 9 | ((h >> 6) & 1) << 4 | ((h >> 5) & 1) << 6 |
					   ((h >> 3) & 3) << 7 | ((h >> 2) & 1) << 5, 10);
			uw_insn_add(e, UW_EFF_SP_ADD, imm);
		} else {                                /* c.lui */
			unknown_write(e, rd);
		}
		return 2;
	case 1: case 2:                                 /* c.addiw, c.li */
		unknown_write(e, rd);
		return 2;
	case 4:                                         /* c.srli ... c.and on rd' */
		unknown_write(e, rs1p);
		return 2;
	case 5:                                         /* c.j */
		e->end = true;
		return 2;
	default:                                        /* c.beqz, c.bnez */
		return 2;
	}
}

static size_t rv_decode(const uint8_t *p, size_t n, struct uw_insn *e)
{
	e->end = e->data = e->fp_base = e->call = e->jump = false;   /* readers stop at neff */
	e->neff = 0;
	if (n < 2)
		return 0;
	uint16_t h = (uint16_t)(p[0] | p[1] << 8);
	if ((h & 3) != 3)
		return rv_decode16(h, e);
	if (n < 4 || (h & 0x1f) == 0x1f)                /* 48-bit and longer forms: not known */
		return 0;
	return rv_decode32(rd32(p), e);
}

static const char *rv_reg(unsigned r)
{
	return uw_decoder_reg(&arch_facts[ARCH_ID_riscv64], r);
}

/* DWARF: s0 the frame pointer, sp 2, ra 1 the return address column; a
 * jalr leaves CFA = sp + 0 with the return address in ra (the psABI) */
const struct uw_decoder uw_decoder_riscv64 = {
	UW_DECODER_FACTS(riscv64), .max_insn = 4, .decode = rv_decode, .reg_name = rv_reg,
};

/* the profiler side's record of the arch (unwinders/uwarch.h) */
const struct uw_arch uw_arch_riscv64 = {
	.facts = &arch_facts[ARCH_ID_riscv64],
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
	/* perf takes the machine's own /proc/cpuinfo ids where the file has no
	 * HEADER_CPUID, and under qemu-user (which lists no mvendorid) perf 6.12
	 * crashes on a NULL there; a file from riscv64 hardware carries
	 * "mvendorid-marchid-mimpid", which perf reads only to pick its PMU event
	 * tables: zeros here */
	.perf_cpuid = "0x0-0x0-0x0",
	.libdw_no_fp = true,                   /* elfutils' riscv backend has no unwind hook */
	/* perf_env__arch() maps no name to "riscv64" (profile v6.12 was checked
	 * here, on Debian 13's perf 6.12.117 under qemu-user) */
	.perf_name_unknown = true,
	.decoder = &uw_decoder_riscv64,
};
