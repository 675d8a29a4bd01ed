/* aarch64: no tracer yet in this slice (trace says so and exits 77). */
#include "harness/trace/trace.h"

#ifdef __aarch64__
const struct hx_trace_arch hx_trace_host = { .supported = false };
#endif
