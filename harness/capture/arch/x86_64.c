/* x86_64's harness part: capture's (ucontext -> perf's register layout,
 * facts section 3) and the tracer's (perf's user registers from ptrace's
 * user_regs_struct, the entry state, --write-cases' instruction tests).
 * Built only for ARCH=x86_64 (the Makefile's ARCH_ONLY). */
#include "harness/capture/capture.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/ucontext.h>
#include <sys/user.h>

static void x86_regs(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64])
{
	const greg_t *g = uc->uc_mcontext.gregs;
	memset(regs, 0, 64 * sizeof(uint64_t));
	*abi = 2;                                   /* PERF_SAMPLE_REGS_ABI_64 */
	*mask = arch_facts_host()->perf_mask;        /* arches.def */
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
static void x86_resume_at(ucontext_t *uc, uint64_t addr) { uc->uc_mcontext.gregs[REG_RIP] = (greg_t)addr; }
static void x86_skip_trap(ucontext_t *uc) { (void)uc; }
static void x86_tamper(ucontext_t *uc) { uc->uc_mcontext.gregs[REG_RBX] ^= 1; }

static const uint8_t x86_spin[2] = { 0xeb, 0xfe };   /* jmp . */

/* --- the tracer's part --- */

static int getregs(pid_t tid, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) < 0 ? -errno : 0;
}

/* perf's user registers from ptrace's user_regs_struct (the layout
 * x86_regs writes from a ucontext) */
static int x86_ptrace_regs(pid_t tid, uint64_t *abi, uint64_t g[64])
{
	struct user_regs_struct r;
	int e = getregs(tid, &r);
	if (e)
		return e;
	memset(g, 0, 64 * sizeof(uint64_t));
	*abi = 2;                                /* PERF_SAMPLE_REGS_ABI_64 */
	g[0] = r.rax; g[1] = r.rbx; g[2] = r.rcx; g[3] = r.rdx;
	g[4] = r.rsi; g[5] = r.rdi; g[6] = r.rbp; g[7] = r.rsp;
	g[8] = r.rip; g[9] = r.eflags; g[10] = r.cs; g[11] = r.ss;
	g[16] = r.r8; g[17] = r.r9; g[18] = r.r10; g[19] = r.r11;
	g[20] = r.r12; g[21] = r.r13; g[22] = r.r14; g[23] = r.r15;
	return 0;
}

static int x86_get_pc(pid_t tid, uint64_t *pc)
{
	struct user_regs_struct r;
	int e = getregs(tid, &r);
	if (!e)
		*pc = r.rip;
	return e;
}

static int x86_set_pc(pid_t tid, uint64_t pc)
{
	struct user_regs_struct r;
	int e = getregs(tid, &r);
	if (e)
		return e;
	r.rip = pc;
	return ptrace(PTRACE_SETREGS, tid, NULL, &r) < 0 ? -errno : 0;
}

/* at entry [rsp] is the return address; after the ret, rsp + 8 (DWARF
 * numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip) */
static int x86_entry_state(const uint64_t g[64], uint64_t sp, const uint8_t *stack, size_t stack_len,
			   uint64_t *ra, uint64_t *dw, int *ndw)
{
	if (stack_len < 8)
		return -EINVAL;
	memcpy(ra, stack, 8);
	static const int perf_of_dw[16] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 };
	for (int i = 0; i < 16; i++)
		dw[i] = g[perf_of_dw[i]];
	dw[7] = sp + 8;
	dw[16] = *ra;
	*ndw = 17;
	return 0;
}

/* --write-cases: an instruction a case's harness may run as it is: no
 * branch, no prefix (rep, lock), no memory operand but lea's and a long
 * nop's, no implicit use of rsp, rbp, rsi, rdi (push, string ops) */
static bool x86_inert(const cs_insn *in)
{
	const cs_detail *d = in->detail;
	if (!d || d->x86.prefix[0] || d->x86.prefix[1])
		return false;
	for (uint8_t g = 0; g < d->groups_count; g++)
		if (d->groups[g] == CS_GRP_JUMP || d->groups[g] == CS_GRP_CALL || d->groups[g] == CS_GRP_RET ||
		    d->groups[g] == CS_GRP_INT || d->groups[g] == CS_GRP_IRET || d->groups[g] == CS_GRP_PRIVILEGE)
			return false;
	static const uint16_t implicit[] = { X86_REG_RSP, X86_REG_RBP, X86_REG_RSI, X86_REG_RDI, X86_REG_RIP };
	for (size_t k = 0; k < sizeof(implicit) / sizeof(implicit[0]); k++) {
		for (uint8_t i = 0; i < d->regs_read_count; i++)
			if (d->regs_read[i] == implicit[k])
				return false;
		for (uint8_t i = 0; i < d->regs_write_count; i++)
			if (d->regs_write[i] == implicit[k])
				return false;
	}
	bool addr_only = in->id == X86_INS_LEA || in->id == X86_INS_NOP;
	for (uint8_t i = 0; i < d->x86.op_count; i++) {
		const cs_x86_op *o = &d->x86.operands[i];
		if (o->type == X86_OP_MEM && !addr_only)
			return false;
		if (o->type == X86_OP_REG && (o->access & CS_AC_WRITE) &&
		    (o->reg == X86_REG_RSP || o->reg == X86_REG_RBP || o->reg == X86_REG_ESP || o->reg == X86_REG_EBP ||
		     o->reg == X86_REG_SP || o->reg == X86_REG_BP || o->reg == X86_REG_SPL || o->reg == X86_REG_BPL))
			return false;
	}
	return true;
}

/* the registers hx_call and hx_host_nofp_call give the target in
 * (stubs_x86_64.S), each with its parts */
static const uint16_t target_regs[][5] = {
	{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
	{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
	{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
	{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0 },
	{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0 },
	{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0 },
	{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0 },
};
#define NTARGET_REGS (sizeof(target_regs) / sizeof(target_regs[0]))

/* call *%reg (ff /2, register form) through one of target_regs */
static int x86_call_reg(const cs_insn *in)
{
	const cs_detail *d = in->detail;
	if (!d || in->id != X86_INS_CALL || d->x86.op_count != 1 || d->x86.operands[0].type != X86_OP_REG ||
	    d->x86.prefix[0] || d->x86.prefix[1])
		return 0;
	for (size_t k = 0; k < NTARGET_REGS; k++)
		if (d->x86.operands[0].reg == target_regs[k][0])
			return target_regs[k][0];
	return 0;
}

static bool x86_call_rel(const cs_insn *in)
{
	const cs_detail *d = in->detail;
	return d && in->id == X86_INS_CALL && d->x86.op_count == 1 && d->x86.operands[0].type == X86_OP_IMM;
}

static bool x86_in_family(const uint16_t *fam, unsigned r)
{
	for (int i = 0; i < 5; i++)
		if (fam[i] && fam[i] == r)
			return true;
	return false;
}

static bool x86_writes_reg(const cs_insn *in, int reg)
{
	const cs_detail *d = in->detail;
	const uint16_t *fam = NULL;
	for (size_t k = 0; k < NTARGET_REGS; k++)
		if (target_regs[k][0] == reg)
			fam = target_regs[k];
	if (!d || !fam)
		return true;
	for (uint8_t i = 0; i < d->regs_write_count; i++)
		if (x86_in_family(fam, d->regs_write[i]))
			return true;
	for (uint8_t i = 0; i < d->x86.op_count; i++) {
		const cs_x86_op *o = &d->x86.operands[i];
		if (o->type == X86_OP_REG && (o->access & CS_AC_WRITE) && x86_in_family(fam, o->reg))
			return true;
	}
	return false;
}

/* syscall (0f 05), sysenter (0f 34), int $0x80 (cd 80) */
static bool x86_syscall_insn(const uint8_t *c, size_t n)
{
	return n >= 2 && ((c[0] == 0x0f && (c[1] == 0x05 || c[1] == 0x34)) || (c[0] == 0xcd && c[1] == 0x80));
}

/* user_regs_struct's field for a push's register number (0-7: rax rcx rdx
 * rbx rsp rbp rsi rdi; 8-15: r8-r15, with REX.B) */
static uint64_t push_reg(const struct user_regs_struct *r, int n)
{
	const unsigned long long *f[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
					    &r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };
	return (uint64_t)*f[n & 15];
}

/* What JIT entries begin with (the tracer plants an int3 there for the
 * whole trace): push r64 (50+r, 41 50+r), endbr64 (f3 0f 1e fa), nop (90),
 * mov %rsp,%rbp (48 89 e5 / 48 8b ec).  None reads or writes the flags; a
 * push's stack write goes first (refused: the real step faults as the
 * program would) */
static int x86_step_emulate(pid_t tid, uint64_t pc, const uint8_t *c, size_t n)
{
	int push = -1;
	size_t len;
	bool mov_rbp = false;
	if (n >= 1 && c[0] >= 0x50 && c[0] <= 0x57) {
		push = c[0] - 0x50;
		len = 1;
	} else if (n >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57) {
		push = 8 + c[1] - 0x50;
		len = 2;
	} else if (n >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) {
		len = 4;
	} else if (n >= 1 && c[0] == 0x90) {
		len = 1;
	} else if (n >= 3 && c[0] == 0x48 && ((c[1] == 0x89 && c[2] == 0xe5) || (c[1] == 0x8b && c[2] == 0xec))) {
		len = 3;
		mov_rbp = true;
	} else {
		return -ENOTSUP;
	}
	struct user_regs_struct r;
	int e = getregs(tid, &r);
	if (e)
		return e;
	if (push >= 0) {
		uint64_t v = push_reg(&r, push);
		if (ptrace(PTRACE_POKEDATA, tid, (void *)(uintptr_t)(r.rsp - 8), (void *)(uintptr_t)v) < 0)
			return -ENOTSUP;
		r.rsp -= 8;
	}
	if (mov_rbp)
		r.rbp = r.rsp;
	r.rip = pc + len;
	return ptrace(PTRACE_SETREGS, tid, NULL, &r) < 0 ? -errno : 0;
}

const struct hx_cap_arch hx_cap_host = {
	.tr = &tr_arch_x86_64, .regs = x86_regs, .pc = x86_pc, .sp = x86_sp,
	.resume_at = x86_resume_at, .skip_trap = x86_skip_trap,
	.spin = x86_spin, .spin_len = sizeof(x86_spin), .tamper = x86_tamper,
	.trace = {
		.supported = true, .call_mnemonic = "call", .call_max = 10,
		.ptrace_regs = x86_ptrace_regs, .set_pc = x86_set_pc, .get_pc = x86_get_pc,
		.entry_state = x86_entry_state, .inert = x86_inert, .call_reg = x86_call_reg,
		.writes_reg = x86_writes_reg, .call_rel = x86_call_rel, .target_reg = X86_REG_RCX,
		.hw_bp_len = 8,          /* HW_BREAKPOINT_X takes sizeof(long) on x86 */
		.syscall_insn = x86_syscall_insn, .call_regs = "rax, rcx, rdx, r8-r11",
		.step_emulate = x86_step_emulate,
	},
};
