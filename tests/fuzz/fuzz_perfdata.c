/* libFuzzer target over the perf.data reader (unwinders/model/perfdata.c): header,
 * attrs, feature strings and build-ids, and every event of the data section.
 * `make fuzz` builds and runs it after the lint target; by hand:
 *   clang -std=gnu11 -O1 -g -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all tests/fuzz/fuzz_perfdata.c unwinders/model/perfdata.c -o fuzz_perfdata
 *   ./fuzz_perfdata -max_total_time=60 corpus/ seeds/   (seeds: perf.data files) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/model/perfdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy: a read past the end is an ASan report */
	uint8_t *c = malloc(size ? size : 1);
	if (!c)
		return 0;
	memcpy(c, data, size);
	static struct pd_file f;
	struct ju_err err;
	if (pd_parse_mem(&f, c, size, "fuzz.data", &err) == 0) {
		const char *s;
		pd_feat_string(&f, PD_FEAT_ARCH, &s, &err);
		pd_feat_string(&f, PD_FEAT_OSRELEASE, &s, &err);
		struct pd_build_id b;
		uint16_t misc;
		for (size_t i = 0; i < 64 && pd_feat_build_id(&f, i, &b, &misc, &err) == 1; i++)
			;
		struct pd_iter it = { 0 };
		struct pd_event ev;
		volatile uint64_t sink = 0;
		while (pd_next(&f, &it, &ev, &err) == 1)
			for (uint64_t k = 0; k < ev.sample.nr; k++)
				sink += pd_u64(ev.sample.ips + 8 * k);
		(void)sink;
	}
	free(c);
	return 0;
}
