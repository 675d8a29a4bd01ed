/* x86_64 breakpoint site for inline asm (capture.c's C target, host_body.h's
 * leaves): the trap, then a jump to itself, where the capture resumes past
 * (hx_cap_host: bkpt_len + spin_len bytes after the label) or spins. */
#define HX_TRAP_SPIN "int3\n1:\n\tjmp 1b"   /* cc eb fe */
