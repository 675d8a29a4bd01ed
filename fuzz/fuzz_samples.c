/* libFuzzer target: the samples-file reader (harness/capture/samples.c) and the
 * replay of what it returns (harness/run/runner.c's hx_replay_group): the case
 * text each CASE record carries through the case parser, the MAPS text
 * through the maps parser, every FUNC row and every SAMPLE (registers, truth,
 * stack copy, a kernel sample's CALLCHAIN) through the unwinders that need
 * nothing but the sample (fp, kernel-fp, lr-step, the oracle) and the judge.
 * The replay is given no jitdump and no maps: both name files on this
 * machine, which a fuzzer must not open.  Beyond the sanitizers it checks the
 * reader's contract: a refused file is named with the byte offset.
 * Built by fuzz/build.sh (OSS-Fuzz conventions); `make fuzz` runs it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/view.h"

#define FUZZ_PATH "fuzz.samples"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "fuzz.samples: offset 0x...: message" */
static void check_message(const char *err)
{
	static const char want[] = FUZZ_PATH ": offset 0x";
	const char *p = err + sizeof(want) - 1;
	if (strncmp(err, want, sizeof(want) - 1) || !strchr("0123456789abcdef", *p) || !*p) {
		fprintf(stderr, "samples reader refused the input without naming file and offset: '%s'\n", err);
		abort();
	}
}

/* What the reader hands out, touched to its last byte (ASan checks the bounds). */
static uint64_t touch(const struct hx_group *g)
{
	uint64_t sum = 0;
	sum += g->case_path ? strlen(g->case_path) : 0;
	sum += g->dump_path ? strlen(g->dump_path) : 0;
	sum += g->error ? strlen(g->error) : 0;
	sum += g->kskip ? strlen(g->kskip) : 0;
	if (g->case_len)
		sum += (uint8_t)g->case_text[0] + (uint8_t)g->case_text[g->case_len - 1];
	for (uint32_t f = 0; f < g->nfuncs; f++)
		for (uint32_t r = 0; r < g->funcs[f].nrows; r++)
			sum += strlen(g->funcs[f].rows[r].insn) + strlen(g->funcs[f].name);
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *s = &g->samples[i];
		if (s->stack_size)
			sum += s->stack[0] + s->stack[s->stack_size - 1];
		for (uint32_t k = 0; k < s->nchain; k++) {
			uint64_t v;
			memcpy(&v, &s->chain[k], 8);
			sum += v;
		}
	}
	return sum;
}

static void replay(const struct hx_group *g, uint32_t elf_mach)
{
	struct uw_map *maps;
	size_t nmaps;
	struct ju_err err;
	if (g->maps && uw_maps_parse(g->maps, g->maps_len, &maps, &nmaps, &err) == 0)
		uw_maps_free(maps, nmaps);
	struct hx_group q = *g;
	q.dump_path = NULL;
	q.maps = NULL;
	q.maps_len = 0;
	/* one profile, one dump size: the replay's memory is per sample */
	struct hx_opts o = { .unwinders = { "fp", "kernel-fp", "lr-step", "oracle" }, .nuw = 4,
			     .stack_size = 8192, .profile = PV_CURRENT, .profile_set = true };
	static struct hx_case_res res;
	hx_replay_group(&q, elf_mach, &o, &res, err.msg, sizeof(err.msg));
	hx_case_res_free(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, owned by the reader (hx_samples_free frees it) */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct hx_samples s;
	char err[1024];
	err[0] = 0;
	if (hx_samples_parse(&s, copy, size, FUZZ_PATH, err, sizeof(err))) {
		check_message(err);
		hx_samples_free(&s);
		return 0;
	}
	volatile uint64_t sink = 0;
	for (size_t i = 0; i < s.ngroups; i++) {
		sink += touch(&s.groups[i]);
		replay(&s.groups[i], s.elf_mach);
	}
	(void)sink;
	hx_samples_free(&s);
	return 0;
}
