/* `jitunwind record --perf-data OUT`: a samples file as the perf.data
 * `perf record -k 1 --call-graph dwarf` would have written for the same run. */
#ifndef HX_TOPERF_H
#define HX_TOPERF_H

#include <stddef.h>
#include <stdint.h>
#include "juerr.h"

struct hx_toperf_opts {
	uint32_t attr_size;          /* perf_event_attr size of the perf that reads it (perfdata.h) */
	uint32_t stack_size;         /* sample_stack_user (perf --call-graph dwarf,N); 0: 8192 */
	int buildid_mmap;            /* MMAP2 with build-ids (perf record --buildid-mmap) */
	int callchain_fp;            /* --call-graph fp as perf records it on arm64: the
					kernel's frame-pointer chain as CALLCHAIN, LR alone in
					the user registers, no stack (default: dwarf) */
	const char *marker_path;     /* the jitdump marker's name (NULL: the dump's real path):
					perf inject -j opens the dump there and writes the jitted
					.so files next to it */
};

/* Parses "5.10", "6.1", "6.3" (the perf that will read the file) into an attr size. */
int hx_toperf_abi(const char *s, uint32_t *attr_size);
/* 0, or a negative errno with "FILE: offset ...: what" in err. */
int hx_toperf_write(const char *samples_path, const char *out, const struct hx_toperf_opts *o,
		    struct ju_err *err);
struct hx_group;
struct uw_arch;
/* One case's samples (a replay's group) as their own perf.data; same contract. */
int hx_toperf_write_group(const struct hx_group *g, const struct uw_arch *arch, const char *out,
			  const struct hx_toperf_opts *o, struct ju_err *err);

#endif
