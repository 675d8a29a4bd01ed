/* The unwinders known to this build, by report key (DESIGN vocabulary). */
#include "unwind.h"

#include <string.h>

static const struct uw_unwinder *const all[] = { &uw_fp, &uw_oracle };

const struct uw_unwinder *uw_unwinder_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

const char *uw_unwinder_names(void)
{
	return "fp,oracle";
}
