/* hx_call(ctx=%rdi, tramp=%rsi, slot=%rdx, target=%rcx): the harness's call
 * into generated code, the target also in %rax, %rdx and %r8-%r11.  Its return address is recorded by construction (the
 * truth), and hx_call_ret is the return address the trampoline sees. */
	.text
	.globl hx_call
	.type hx_call, @function
	.globl hx_call_ret
hx_call:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	mov 8(%rbp), %rax
	mov %rax, (%rdx)
	/* the target in every scratch register a case's call may go through
	 * (`raw ff d0 ; call_target`, call *%rax, as trace --write-cases writes a
	 * JIT's register call), besides %rcx */
	mov %rcx, %rax
	mov %rcx, %rdx
	mov %rcx, %r8
	mov %rcx, %r9
	mov %rcx, %r10
	mov %rcx, %r11
	call *%rsi
hx_call_ret:
	pop %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size hx_call, .-hx_call

/* hx_host_nofp_call(ctx=%rdi, tramp=%rsi, slot=%rdx, target=%rcx): the
 * "nofp" host's call into a trampoline, laid out as -fomit-frame-pointer
 * code that allocates rbp: rbp is saved as a callee-saved register (the CFI
 * says so, the CFA stays rsp-based) and holds the interpreter's state
 * pointer, {tagged counter, opcode word} (host.h), across the call.  Its own
 * return address goes to *slot (the truth). */
	.text
	.globl hx_host_nofp_call
	.type hx_host_nofp_call, @function
	.globl hx_host_nofp_call_ret
hx_host_nofp_call:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	sub $16, %rsp
	.cfi_def_cfa_offset 32
	movq $0x2b, (%rsp)
	movq $0x640053, 8(%rsp)
	mov 24(%rsp), %rax
	mov %rax, (%rdx)
	lea 0(%rsp), %rbp
	mov %rcx, %rax          /* the target in the scratch registers too (hx_call) */
	mov %rcx, %rdx
	mov %rcx, %r8
	mov %rcx, %r9
	mov %rcx, %r10
	mov %rcx, %r11
	call *%rsi
hx_host_nofp_call_ret:
	add $16, %rsp
	.cfi_def_cfa_offset 16
	pop %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size hx_host_nofp_call, .-hx_host_nofp_call
	.section .note.GNU-stack,"",@progbits
