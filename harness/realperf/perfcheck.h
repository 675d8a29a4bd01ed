/* `jitunwind perf-check`: real `perf record` of the cases while the capture
 * child spins at every sample point, in DWARF and frame-pointer mode; each
 * perf sample at a spin point is judged against the truth and against
 * jitunwind's emulation of that perf on the same point (README "perf-check"). */
#ifndef HX_PERFCHECK_H
#define HX_PERFCHECK_H

/* argv[0] is "perf-check".  Exit codes: 0 every sample point got perf
 * samples and agreement reached --min-agreement in every mode, 1 it did not
 * (or a perf step failed), 2 bad usage or input, 77 no perf or
 * perf_event_open refused (the reason printed). */
int hx_perfcheck_main(int argc, char **argv);

#endif
