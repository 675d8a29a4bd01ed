/* aarch64 capture glue: ucontext -> perf's arm64 register layout (facts
 * section 3: x0-x30, sp, pc; mask (1 << 33) - 1).  brk #0 traps with the pc
 * on the brk itself (not advanced), natively and under qemu-user. */
#include "harness/capture/capture.h"

#include <string.h>
#include <sys/ucontext.h>

enum { A64_PERF_SP = 31, A64_PERF_PC = 32, A64_INSN = 4 };

static void a64_regs(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64])
{
	const mcontext_t *m = &uc->uc_mcontext;
	memset(regs, 0, 64 * sizeof(uint64_t));
	*abi = 2;                                   /* PERF_SAMPLE_REGS_ABI_64 */
	*mask = arch_facts_host()->perf_mask;        /* arches.def */
	for (int i = 0; i < 31; i++)
		regs[i] = (uint64_t)m->regs[i];     /* x0-x29, lr = perf ids 0-30 */
	regs[A64_PERF_SP] = (uint64_t)m->sp;
	regs[A64_PERF_PC] = (uint64_t)m->pc;
}

static uint64_t a64_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.pc; }
static uint64_t a64_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.sp; }
static void a64_resume_at(ucontext_t *uc, uint64_t addr) { uc->uc_mcontext.pc = addr; }
/* the callee's own brk stays in place: continue after it */
static void a64_skip_trap(ucontext_t *uc) { uc->uc_mcontext.pc += A64_INSN; }
static void a64_tamper(ucontext_t *uc) { uc->uc_mcontext.regs[19] ^= 1; }   /* x19 */

static const uint8_t a64_spin[4] = { 0x00, 0x00, 0x00, 0x14 };   /* b . */

const struct hx_cap_arch hx_cap_host = {
	.tr = &tr_arch_aarch64, .regs = a64_regs, .pc = a64_pc, .sp = a64_sp,
	.resume_at = a64_resume_at, .skip_trap = a64_skip_trap,
	.spin = a64_spin, .spin_len = sizeof(a64_spin), .tamper = a64_tamper,
	.trace = { .supported = false },   /* no tracer yet (trace says so and exits 77) */
};
