/* hx_call(ctx=a0, tramp=a1, slot=a2, target=a3): the harness's call into
 * generated code, with a psABI frame record (ra at s0-8, the caller's s0 at
 * s0-16).  Its return address (ra at entry) is recorded by construction (the
 * truth); hx_call_ret is the return address the trampoline sees in ra.
 * a0-a3 pass through, so the trampoline gets target as its 4th argument
 * (CPython's signature).  norvc: every instruction 4 bytes, as the JIT
 * side's. */
	.option norvc
	.text
	.globl hx_call
	.type hx_call, @function
	.globl hx_call_ret
	.p2align 2
hx_call:
	.cfi_startproc
	addi sp, sp, -16
	.cfi_def_cfa_offset 16
	sd ra, 8(sp)
	sd s0, 0(sp)
	.cfi_offset 1, -8
	.cfi_offset 8, -16
	addi s0, sp, 16
	.cfi_def_cfa 8, 0
	sd ra, 0(a2)
	jalr ra, 0(a1)
hx_call_ret:
	.cfi_def_cfa 2, 16
	ld ra, 8(sp)
	ld s0, 0(sp)
	.cfi_restore 1
	.cfi_restore 8
	addi sp, sp, 16
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size hx_call, .-hx_call

/* hx_host_nofp_call(ctx=a0, tramp=a1, slot=a2, target=a3): the "nofp"
 * host's call into a trampoline, laid out as -fomit-frame-pointer code that
 * allocates s0: s0 and ra are saved as callee-saved registers (the CFI says
 * so, the CFA stays sp-based) and s0 points just above the interpreter's
 * state, {tagged counter, opcode word} (host.h), across the call.  Its own return
 * address goes to *slot (the truth). */
	.text
	.globl hx_host_nofp_call
	.type hx_host_nofp_call, @function
	.globl hx_host_nofp_call_ret
	.p2align 2
hx_host_nofp_call:
	.cfi_startproc
	addi sp, sp, -32
	.cfi_def_cfa_offset 32
	sd ra, 24(sp)
	sd s0, 16(sp)
	.cfi_offset 1, -8
	.cfi_offset 8, -16
	sd ra, 0(a2)
	li t0, 0x2b
	li t1, 0x640053
	sd t0, 0(sp)
	sd t1, 8(sp)
	addi s0, sp, 16          /* the walk reads {fp, ra} below s0: the state */
	jalr ra, 0(a1)
hx_host_nofp_call_ret:
	ld ra, 24(sp)
	ld s0, 16(sp)
	.cfi_restore 1
	.cfi_restore 8
	addi sp, sp, 32
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size hx_host_nofp_call, .-hx_host_nofp_call
	.section .note.GNU-stack,"",%progbits
