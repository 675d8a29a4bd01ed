/* The unwinders known to this build, by report key (DESIGN vocabulary). */
#include "unwind.h"
#include "lrstep.h"

#include <string.h>

extern const struct uw_unwinder uw_libunwind, uw_libdw;

static const struct uw_unwinder *const all[] = { &uw_fp, &uw_libunwind, &uw_libdw, &uw_oracle,
						    &uw_lrstep, &uw_lrstep_dw };

const struct uw_unwinder *uw_unwinder_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

const char *uw_unwinder_names(void)
{
	/* lr-step is perf's arm64-only splice: run by default where the cases are
	 * arm64 ones; named explicitly (--unwinders) it replays anywhere */
#if defined(__aarch64__)
	return "fp,libunwind,libdw,oracle,lr-step,lr-step-dw";
#else
	return "fp,libunwind,libdw,oracle";
#endif
}
