/* x86_64 part of the tracer: int3, perf's user register set from ptrace's
 * user_regs_struct (facts section 3: the layout the samples file stores).
 * Built only for ARCH=x86_64 (the Makefile's ARCH_ONLY). */
#include "harness/trace/trace.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

static int getregs(pid_t tid, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) < 0 ? -errno : 0;
}

static int x86_sample_regs(pid_t tid, struct hx_trace_sample *s)
{
	struct user_regs_struct r;
	int e = getregs(tid, &r);
	if (e)
		return e;
	memset(s->regs, 0, sizeof(s->regs));
	s->abi = 2;                              /* PERF_SAMPLE_REGS_ABI_64 */
	s->mask = 0xff0fffull;
	uint64_t *g = s->regs;
	g[0] = r.rax; g[1] = r.rbx; g[2] = r.rcx; g[3] = r.rdx;
	g[4] = r.rsi; g[5] = r.rdi; g[6] = r.rbp; g[7] = r.rsp;
	g[8] = r.rip; g[9] = r.eflags; g[10] = r.cs; g[11] = r.ss;
	g[16] = r.r8; g[17] = r.r9; g[18] = r.r10; g[19] = r.r11;
	g[20] = r.r12; g[21] = r.r13; g[22] = r.r14; g[23] = r.r15;
	s->pc = r.rip;
	s->sp = r.rsp;
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
static int x86_entry_state(const struct hx_trace_sample *s, uint64_t *ra, uint64_t *dw, int *ndw)
{
	if (s->stack_len < 8)
		return -EINVAL;
	memcpy(ra, s->stack, 8);
	const uint64_t *g = s->regs;
	static const int perf_of_dw[16] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 };
	for (int i = 0; i < 16; i++)
		dw[i] = g[perf_of_dw[i]];
	dw[7] = s->sp + 8;
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

/* RIP is one past the int3 */
static uint64_t x86_trap_addr(uint64_t pc_after) { return pc_after - 1; }

/* syscall (0f 05), sysenter (0f 34), int $0x80 (cd 80) */
static bool x86_syscall_insn(const uint8_t *c, size_t n)
{
	return n >= 2 && ((c[0] == 0x0f && (c[1] == 0x05 || c[1] == 0x34)) || (c[0] == 0xcd && c[1] == 0x80));
}

const struct hx_trace_arch hx_trace_host = {
	.supported = true, .bp = { 0xcc }, .bp_len = 1,
	.cs_arch = CS_ARCH_X86, .cs_mode = CS_MODE_64, .cs_syntax = CS_OPT_SYNTAX_ATT,
	.call_mnemonic = "call", .call_max = 10,
	.trap_addr = x86_trap_addr, .sample_regs = x86_sample_regs,
	.set_pc = x86_set_pc, .get_pc = x86_get_pc, .entry_state = x86_entry_state,
	.inert = x86_inert, .call_reg = x86_call_reg, .writes_reg = x86_writes_reg,
	.call_rel = x86_call_rel, .target_reg = X86_REG_RCX,
	.hw_bp_len = 8,          /* HW_BREAKPOINT_X takes sizeof(long) on x86 */
	.syscall_insn = x86_syscall_insn,
	.call_regs = "rax, rcx, rdx, r8-r11",
};
