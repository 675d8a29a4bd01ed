/* hx_call(ctx=x0, tramp=x1, slot=x2, target=x3): the harness's call into
 * generated code.  Its return address (x30 at entry) is recorded by
 * construction (the truth); hx_call_ret is the return address the
 * trampoline sees in x30.  x0-x3 pass through, so the trampoline gets
 * target as its 4th argument (CPython's signature). */
	.text
	.globl hx_call
	.type hx_call, %function
	.globl hx_call_ret
	.p2align 2
hx_call:
	.cfi_startproc
	stp x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov x29, sp
	.cfi_def_cfa_register 29
	str x30, [x2]
	blr x1
hx_call_ret:
	ldp x29, x30, [sp], #16
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa 31, 0
	ret
	.cfi_endproc
	.size hx_call, .-hx_call

/* hx_host_nofp_call(ctx=x0, tramp=x1, slot=x2, target=x3): the "nofp"
 * host's call into a trampoline, laid out as -fomit-frame-pointer code that
 * allocates x29 (as clang's does): x29 and x30 are saved as callee-saved
 * registers (the CFI says so, the CFA stays sp-based) and x29 holds the
 * interpreter's state pointer, {tagged counter, opcode word} (host.h), across
 * the call.  Its own return address goes to *slot (the truth). */
	.text
	.globl hx_host_nofp_call
	.type hx_host_nofp_call, %function
	.globl hx_host_nofp_call_ret
	.p2align 2
hx_host_nofp_call:
	.cfi_startproc
	sub sp, sp, #32
	.cfi_def_cfa_offset 32
	stp x29, x30, [sp, #16]
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	str x30, [x2]
	mov x9, #0x2b
	movz x10, #0x53
	movk x10, #0x64, lsl #16
	stp x9, x10, [sp]
	mov x29, sp
	blr x1
hx_host_nofp_call_ret:
	ldp x29, x30, [sp, #16]
	.cfi_restore 29
	.cfi_restore 30
	add sp, sp, #32
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size hx_host_nofp_call, .-hx_host_nofp_call
	.section .note.GNU-stack,"",%progbits
