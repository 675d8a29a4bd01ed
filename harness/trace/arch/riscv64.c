/* riscv64: no tracer (ptrace does not run under qemu-user; trace says so and
 * exits 77).  Built only for ARCH=riscv64 (the Makefile's ARCH_ONLY). */
#include "harness/trace/trace.h"

const struct hx_trace_arch hx_trace_host = { .supported = false };
