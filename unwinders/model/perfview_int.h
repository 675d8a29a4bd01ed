/* Private to unwinders/model/perfview*.c. */
#ifndef UW_PERFVIEW_INT_H
#define UW_PERFVIEW_INT_H

#include "unwinders/model/perfview.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "juerr.h"

#define PV_MAX_FILE (1ull << 30)       /* larger mapped files are not read */
#define PV_MAX_MAPS (1u << 22)
#define PV_MAX_SECTIONS 65536u
#define PV_MAX_SYMS (1u << 22)
#define PV_MAX_PHDRS 4096u

static inline uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

bool pv_valid_profile(enum pv_profile p);
/* perfview_dso.c: load d's symbols and unwinding tables (mapped: a file of
 * the process, else a jitted file written by perfview_elf.c); 0 or a
 * negative errno with err */
int pv_dso_load(struct pv_dso *d, bool mapped, struct ju_err *err);
void pv_dso_clear(struct pv_dso *d);

#endif
