/* riscv64 capture glue: ucontext -> perf's riscv64 register layout
 * (arch/riscv/include/uapi/asm/perf_regs.h: PERF_REG_RISCV_PC 0, then ra,
 * sp, gp, tp, t0-t2, s0, s1, a0-a7, s2-s11, t3-t6 as x1-x31; mask
 * (1 << 32) - 1), which is glibc's __gregs order (REG_PC 0, x1-x31 after).
 * ebreak traps with the pc on the ebreak itself, natively (the kernel's
 * do_trap_break) and under qemu-user. */
#include "harness/capture/capture.h"

#include <string.h>
#include <sys/ucontext.h>

enum { RV_REG_PC = 0, RV_REG_SP = 2, RV_REG_S1 = 9, RV_INSN = 4 };

static void rv_regs(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64])
{
	const mcontext_t *m = &uc->uc_mcontext;
	memset(regs, 0, 64 * sizeof(uint64_t));
	*abi = 2;                                   /* PERF_SAMPLE_REGS_ABI_64 */
	*mask = arch_facts_host()->perf_mask;        /* arches.def */
	for (int i = 0; i < 32; i++)
		regs[i] = (uint64_t)m->__gregs[i];  /* pc, x1-x31 = perf ids 0-31 */
}

static uint64_t rv_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.__gregs[RV_REG_PC]; }
static uint64_t rv_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.__gregs[RV_REG_SP]; }
static void rv_resume_at(ucontext_t *uc, uint64_t addr) { uc->uc_mcontext.__gregs[RV_REG_PC] = addr; }
/* the callee's own ebreak stays in place: continue after it */
static void rv_skip_trap(ucontext_t *uc) { uc->uc_mcontext.__gregs[RV_REG_PC] += RV_INSN; }
static void rv_tamper(ucontext_t *uc) { uc->uc_mcontext.__gregs[RV_REG_S1] ^= 1; }   /* s1 */

static const uint8_t rv_spin[4] = { 0x6f, 0x00, 0x00, 0x00 };   /* j . (jal x0, 0) */

const struct hx_cap_arch hx_cap_host = {
	.tr = &tr_arch_riscv64, .regs = rv_regs, .pc = rv_pc, .sp = rv_sp,
	.resume_at = rv_resume_at, .skip_trap = rv_skip_trap,
	.spin = rv_spin, .spin_len = sizeof(rv_spin), .tamper = rv_tamper,
	.trace = { .supported = false },   /* no tracer: ptrace does not run under qemu-user (trace says so and exits 77) */
};
