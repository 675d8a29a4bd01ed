/* aarch64: no tracer yet (trace says so and exits 77).  Built only for
 * ARCH=aarch64 (the Makefile's ARCH_ONLY). */
#include "harness/trace/trace.h"

const struct hx_trace_arch hx_trace_host = { .supported = false };
