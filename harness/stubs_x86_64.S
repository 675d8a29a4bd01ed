/* hx_call(ctx=%rdi, tramp=%rsi, slot=%rdx, target=%rcx): the harness's call
 * into generated code.  Its return address is recorded by construction (the
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
	call *%rsi
hx_call_ret:
	pop %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size hx_call, .-hx_call
	.section .note.GNU-stack,"",@progbits
