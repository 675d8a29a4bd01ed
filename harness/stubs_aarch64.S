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
	.section .note.GNU-stack,"",%progbits
