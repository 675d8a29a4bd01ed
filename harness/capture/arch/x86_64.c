/* x86_64 capture glue: ucontext -> perf's register layout (facts section 3). */
#include "harness/capture/capture.h"

#include <string.h>
#include <sys/ucontext.h>

static void x86_regs(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64])
{
	const greg_t *g = uc->uc_mcontext.gregs;
	memset(regs, 0, 64 * sizeof(uint64_t));
	*abi = 2;                                   /* PERF_SAMPLE_REGS_ABI_64 */
	*mask = 0xff0fffull;
	regs[0] = (uint64_t)g[REG_RAX];
	regs[1] = (uint64_t)g[REG_RBX];
	regs[2] = (uint64_t)g[REG_RCX];
	regs[3] = (uint64_t)g[REG_RDX];
	regs[4] = (uint64_t)g[REG_RSI];
	regs[5] = (uint64_t)g[REG_RDI];
	regs[6] = (uint64_t)g[REG_RBP];
	regs[7] = (uint64_t)g[REG_RSP];
	regs[8] = (uint64_t)g[REG_RIP];
	regs[9] = (uint64_t)g[REG_EFL];
	regs[10] = (uint64_t)g[REG_CSGSFS] & 0xffff;          /* cs */
	regs[11] = ((uint64_t)g[REG_CSGSFS] >> 48) & 0xffff;  /* ss (was __pad0) */
	regs[16] = (uint64_t)g[REG_R8];
	regs[17] = (uint64_t)g[REG_R9];
	regs[18] = (uint64_t)g[REG_R10];
	regs[19] = (uint64_t)g[REG_R11];
	regs[20] = (uint64_t)g[REG_R12];
	regs[21] = (uint64_t)g[REG_R13];
	regs[22] = (uint64_t)g[REG_R14];
	regs[23] = (uint64_t)g[REG_R15];
}

static uint64_t x86_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RIP]; }
static uint64_t x86_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RSP]; }
/* RIP is one past the int3 (facts section 8) */
static uint64_t x86_trap_addr(const ucontext_t *uc) { return x86_pc(uc) - 1; }
static void x86_resume_at(ucontext_t *uc, uint64_t addr) { uc->uc_mcontext.gregs[REG_RIP] = (greg_t)addr; }
static void x86_skip_trap(ucontext_t *uc) { (void)uc; }
static void x86_tamper(ucontext_t *uc) { uc->uc_mcontext.gregs[REG_RBX] ^= 1; }

static const uint8_t x86_spin[2] = { 0xeb, 0xfe };   /* jmp . */

const struct hx_cap_arch hx_cap_host = {
	.tr = &tr_arch_x86_64, .regs = x86_regs, .pc = x86_pc, .sp = x86_sp,
	.trap_addr = x86_trap_addr, .resume_at = x86_resume_at, .skip_trap = x86_skip_trap,
	.spin = x86_spin, .spin_len = sizeof(x86_spin), .tamper = x86_tamper,
};
