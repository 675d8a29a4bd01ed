/* arm64 breakpoint site for inline asm (capture.c's C target, host_body.h's
 * leaves): the trap, then a branch to itself, where the capture resumes past
 * (hx_cap_host: bkpt_len + spin_len bytes after the label) or spins. */
#define HX_TRAP_SPIN "brk #0\n1:\n\tb 1b"
