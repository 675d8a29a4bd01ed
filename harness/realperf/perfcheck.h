/* `jitunwind perf-check`: real `perf record` of the cases while the capture
 * child spins at every sample point, in DWARF and frame-pointer mode; each
 * perf sample at a spin point is judged against the truth and against
 * jitunwind's emulation of that perf on the same point (docs/real-perf.md "perf-check"). */
#ifndef HX_PERFCHECK_H
#define HX_PERFCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/outcome.h"
#include "unwinders/model/perfview.h"

enum pk_mode { PK_DWARF, PK_FP, PK_NMODES };

/* The settings of one perf-check (the CLI fills them: harness/cli/realperfcmd.c). */
struct pk_opts {
	const char *json;
	const char *perf_cmd;           /* the perf to run, NULL: perf on PATH */
	bool mode_on[PK_NMODES];
	int stack_size, spin_us, period_us;
	double min_agree;
	bool profile_set;
	enum pv_profile profile;
	const char *emulation;          /* dwarf mode's emulation, when not the perf build's engine */
	const char *dump_dir;           /* where the jitdumps go (perf inject writes the .so files there) */
	bool names;                     /* also read the symbols perf script prints for JIT frames (doctor) */
	char **paths;
	int npaths;
};

/* perf-check's defaults (its option table shows and applies the same) */
#define PK_OPTS_DEFAULTS { .mode_on = { true, true }, .stack_size = 8192, .spin_us = 500, .period_us = 100, \
			   .min_agree = 99.0, .dump_dir = "/tmp" }

/* 0 with out->kind: clean (every sample point got perf samples and
 * agreement reached min_agree in every mode), findings (it did not, or a
 * perf step failed), cannot-run (no perf or perf_event_open refused: the
 * reason printed and in out->reason); a negative errno on bad input or a
 * failed write (the message printed). */
int hx_perfcheck_run(const struct pk_opts *o, struct hx_cmd_outcome *out);

/* perf_event_open of a user-space cpu-clock event of this process, as perf
 * record asks for it: 0, or the errno it was refused with. */
int hx_perf_event_probe(void);

/* perf-check of one case in one mode, summed up for `doctor`. */
struct hx_pk_probe {
	char version[64];            /* the perf that ran */
	char profile[16];            /* the emulation's perf profile */
	char layout[16];             /* the profile whose layout perf inject -j wrote ("" unknown) */
	char emulation[32];          /* the unwinder emulating this perf in that mode */
	char why[600];               /* a perf step that failed, as perf said it ("perf inject: exit 1: ...") */
	char problem[512];           /* the capture's or the replay's first problem */
	size_t points, sampled, samples, agree, elsewhere;
	size_t ok_points, emu_ok_points;       /* sampled points where perf's chains / the emulation's reach the anchor */
	size_t anchor_points, anchor_ok, anchor_emu_ok;   /* the same at the sampled "callee" points */
	size_t jit_maps;             /* jitted .so maps in perf script's mmap events (perf inject -j made them) */
	size_t jit_frames, jit_named;          /* frames perf script printed in jitted .so files; with a symbol */
};

/* perf record (--call-graph MODE: "dwarf" or "fp"), inject -j, script of the
 * case at case_path, its jitdump in dump_dir, judged as perf-check judges.
 * The perf is hx_perf_cmd().  0 with *out set; HX_CMD_CANNOT_RUN perf or
 * perf_event_open unusable (why); a negative errno when the case or a work
 * directory is bad (why) or memory ran out. */
int hx_perfcheck_probe(const char *case_path, const char *dump_dir, const char *mode, struct hx_pk_probe *out,
		       char *why, size_t wl);

#endif
