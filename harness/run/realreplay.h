/* `jitunwind replay FILE.data`: a perf.data recorded from a real JIT (with
 * --call-graph dwarf), replayed through every unwinder against perf's view
 * of the process at each sample's time.  No truth: it reports where the
 * unwinders disagree, per JIT symbol and pc offset. */
#ifndef HX_REALREPLAY_H
#define HX_REALREPLAY_H

#include <stdbool.h>

/* Does the file start with perf.data's magic (either byte order)? */
bool hx_is_perf_data(const char *path);
/* argv[0] is "replay".  Exit codes: 0 every unwinder agreed on every JIT
 * sample, 1 some JIT sample's chains differ, 2 bad usage or bad input. */
int hx_realreplay_main(int argc, char **argv);

#endif
