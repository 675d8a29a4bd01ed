/* Host build "nofp-leaf": frame pointers except in leaf functions
 * (-momit-leaf-frame-pointer, Makefile).  The trampoline's caller is the
 * frame-pointer hx_call. */
#include "harness/capture/capture.h"
#define HX_HOST_FN(x) hx_host_nofpleaf_##x
#define HX_HOST_TRAP "hx_host_nofpleaf_trap"
#define HX_HOST_CALL hx_call
#include "harness/capture/host_body.h"
