/* `jitunwind trace`: its option table (opts.h) and the run of harness/trace. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "arches.h"
#include "harness/cli/cmds.h"
#include "harness/trace/trace.h"
#include "unwinders/model/perfview.h"

/* a number in the option's range, read as cli_set_u64 reads it */
static int read_u64(const struct cli_opt *o, const char *arg, uint64_t *v, char *why, size_t wl)
{
	struct cli_opt u = *o;
	u.off = 0;
	return cli_set_u64(v, &u, arg, why, wl);
}

static int set_size(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	uint64_t v;
	int rc = read_u64(o, arg, &v, why, wl);
	if (rc)
		return rc;
	*(size_t *)((char *)s + o->off) = (size_t)v;
	return 0;
}

static int set_hits(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	uint64_t v;
	int rc = read_u64(o, arg, &v, why, wl);
	if (rc)
		return rc;
	*(unsigned *)((char *)s + o->off) = (unsigned)v;
	return 0;
}

/* --perf-profile into hx_trace_cfg's int field (trace.h does not include perfview.h) */
static int set_profile(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	enum pv_profile p;
	struct cli_opt u = *o;
	u.off = 0;
	int rc = cli_set_profile(&p, &u, arg, why, wl);
	if (rc)
		return rc;
	*(int *)((char *)s + o->off) = (int)p;
	return 0;
}

static int set_pid(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	uint64_t v;
	int rc = read_u64(o, arg, &v, why, wl);
	if (rc)
		return rc;
	*(int *)((char *)s + o->off) = (int)v;
	return 0;
}

static int set_time(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	int rc = cli_set_double(s, o, arg, why, wl);
	if (rc)
		return rc;
	if (*(double *)((char *)s + o->off) <= 0) {
		snprintf(why, wl, "expected a number of seconds above 0, got '%s'", arg);
		return -ERANGE;
	}
	return 0;
}

/* --expect LINE, repeatable: kept as given, parsed once all are read */
static int set_expect(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	struct hx_trace_cfg *c = s;
	if (c->nexpect == HX_TRACE_MAX_EXPECT) {
		snprintf(why, wl, "more than %d --expect", HX_TRACE_MAX_EXPECT);
		return -E2BIG;
	}
	c->expect[c->nexpect++] = arg;
	return 0;
}

#define T_OFF(f) offsetof(struct hx_trace_cfg, f)

static const struct cli_opt trace_opts[] = {
	{ "pid", 0, "PID", "attach to this running process (every thread) instead of starting CMD; at the end "
	  "(--time, Ctrl-C, its exit) its breakpoints are removed and it runs on, detached. Code it ran before "
	  "the attach has no truth (no entry seen), and its buffered jitdump writes cannot be flushed",
	  .def_text = "none: -- CMD", .set = set_pid, .off = T_OFF(pid), .lo = 1, .hi = 4194304, .example = "1234" },
	{ "jitdump", 0, "FILE", "the jitdump to read", .def_text = "the marker mapping of jit-<pid>.dump",
	  .set = cli_set_str, .off = T_OFF(jitdump), .example = "jit-1.dump" },
	{ "time", 0, "S", "end the trace, and the process (with --pid: detach), after S seconds", .def_text = "no limit",
	  .set = set_time, .off = T_OFF(time_s), .lo = 0, .hi = 86400 * 7, .example = "5" },
	{ "hits", 0, "N", "sample each boundary up to N times", .def = "1", .set = set_hits, .off = T_OFF(hits),
	  .lo = 1, .hi = 1000000 },
	{ "stack-size", 0, "BYTES", "bytes of user stack per sample", .def = "8192", .set = set_size,
	  .off = T_OFF(stack_size), .lo = 1, .hi = 1 << 20 },
	{ "only", 0, "GLOB", "sample the boundaries only of the loads whose jitdump symbol matches GLOB (fnmatch; the "
	  "others' entries are still followed for the truth)", .def_text = "every load", .set = cli_set_str,
	  .off = T_OFF(only), .example = "JS:*fib*" },
	{ "max-loads", 0, "N", "sample the boundaries of the first N loads (of those --only names)", .def_text = "no limit",
	  .set = set_size, .off = T_OFF(max_loads), .lo = 1, .hi = 1u << 30, .example = "10" },
	{ "max-samples", 0, "N", "stop sampling after N samples (each keeps its stack copy and, where the maps "
	  "changed, the maps: memory is bounded)", .def = "50000", .set = set_size, .off = T_OFF(max_samples),
	  .lo = 1, .hi = 100000000 },
	{ "samples-text", 0, "F", "one line per sample: tid, pc, sp, bp, cx, the first stack words",
	  .set = cli_set_str, .off = T_OFF(samples_text), .example = "/dev/null" },
	{ "no-flush", 0, NULL, "leave CMD's jitdump writes buffered as it makes them (by default an LD_PRELOAD shim "
	  "flushes each fwrite to a jit-*.dump at once, so a load is read before its code runs)",
	  .set = cli_set_true, .off = T_OFF(no_flush) },
	{ "hw-breakpoints", 0, NULL, "sample boundaries with the kernel's hardware execute breakpoints "
	  "(perf_event_open, 4 per thread on x86_64, moved over the unsampled boundaries of the function entered "
	  "last) where it gives them: no ptrace stop per hit; the rest, and every entry and return, by int3. "
	  "Refused (perf_event_paranoid, debug registers taken, no hardware): int3 alone, said",
	  .set = cli_set_true, .off = T_OFF(hw_bp) },
	{ "unwinders", 0, "LIST", "the unwinders (columns) that judge each sample, comma-separated",
	  .def_text = "run's on this machine that read user samples", .set = cli_set_str, .off = T_OFF(unwinders),
	  .example = "oracle" },
	{ "perf-profile", 0, "P", "perf generation to reproduce: " PV_PROFILE_LIST, .def_text = "current",
	  .set = set_profile, .off = T_OFF(profile), .example = "v6.1" },
	{ "perf", 0, "CMD", "the perf of the perf column (may carry arguments, e.g. a root's loader)",
	  .def_text = "perf on PATH", .set = cli_set_str, .off = T_OFF(perf_cmd), .example = "perf" },
	{ "json", 0, "FILE", "write the JSON report (run's schema: a case per JIT function)", .set = cli_set_str,
	  .off = T_OFF(json), .example = "/dev/null" },
	{ "junit", 0, "FILE", "write JUnit XML", .set = cli_set_str, .off = T_OFF(junit), .example = "/dev/null" },
	{ "html", 0, "FILE", "write the HTML heatmap", .set = cli_set_str, .off = T_OFF(html), .example = "/dev/null" },
	{ "tap", 0, NULL, "print TAP (version 13) instead of the matrix", .set = cli_set_true, .off = T_OFF(tap) },
	{ "expect", 0, "LINE", "the gate, repeatable: 'UNWINDER = VERDICT[; VERDICT at LIST]' as a case's [expect] "
	  "line (a bare offset: of every traced function); exit 1 when a judged sample misses it or the column "
	  "judged none, 0 when every one met it", .def_text = "none: the exit status does not judge",
	  .set = set_expect, .example = "libdw = ok; truncated at 0xb" },
	{ "write-cases", 0, "DIR", "write a case file the generator reproduces for each function with a sample not ok "
	  "(one per distinct code and unwinding info), or say why none", .set = cli_set_str, .off = T_OFF(write_cases),
	  .example = "/tmp" },
	{ 0 },
};

static void trace_tail(FILE *f)
{
	fprintf(f, "x86_64 only for now.  exit: 0 traced (with --expect: and every --expect met), 1 an --expect\n"
		   "not met, 2 bad usage, a CMD that cannot start, a jitdump that is not one or that never\n"
		   "appeared, 77 ptrace refused or no tracer for this arch\n");
}

static int cmd_trace(int argc, char **argv);
static const char *const trace_forms[] = { "[OPTIONS] -- CMD [ARGS...]", "[OPTIONS] --pid PID", NULL };

const struct cli_cmd cli_trace = {
	.name = "trace", .summary = "run a real JIT under ptrace, a breakpoint at every instruction of its jitdump's code",
	.forms = trace_forms, .opts = trace_opts, .main = cmd_trace, .tail = trace_tail, .options_first = true,
	.max_operands = -1,
	.about = "  Run CMD under ptrace (every thread), read the jitdump it writes as it grows, plant a\n"
		 "  one-shot breakpoint at every instruction boundary of every CODE_LOAD (decoded from the\n"
		 "  process's memory) and take a sample as perf would at each hit: registers, --stack-size\n"
		 "  bytes of stack, the maps.  The report: per JIT function, boundaries sampled / boundaries\n"
		 "  in the load and those never executed; code in memory that differs from the dump's is a\n"
		 "  finding.\n",
};

/* the flush shim: $JITUNWIND_FLUSH_SO, else libjuflush.so beside this binary,
 * where `make install` puts it (PREFIX/lib/jitunwind/ beside PREFIX/bin/), or
 * in its build/<arch>/; NULL (and a note) if there is none */
static const char *flush_shim(char *buf, size_t n)
{
	const char *env = getenv("JITUNWIND_FLUSH_SO");
	if (env && *env)
		return realpath(env, buf) ? buf : NULL;
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return NULL;
	exe[l] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	const struct arch_facts *af = arch_facts_host();
	for (int i = 0; i < 3; i++) {
		if (i == 2)
			snprintf(cand, sizeof(cand), "%s/build/%s/libjuflush.so", exe, af ? af->name : "?");
		else
			snprintf(cand, sizeof(cand), "%s/%slibjuflush.so", exe, i ? "../lib/jitunwind/" : "");
		if (n >= PATH_MAX && realpath(cand, buf) && !access(buf, R_OK))
			return buf;
	}
	return NULL;
}

static int cmd_trace(int argc, char **argv)
{
	struct hx_trace_cfg c = { .log = stderr, .max_samples = 50000 };
	int first, rc = cli_parse(&cli_trace, argc, argv, &c, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	bool dashes = first >= 2 && !strcmp(argv[first - 1], "--");
	if (c.pid && (first < argc || dashes))
		return cli_usage_error(&cli_trace, "--pid %d and a command: give one of them", c.pid);
	if (c.pid && c.pid == (int)getpid())
		return cli_usage_error(&cli_trace, "--pid %d is jitunwind itself", c.pid);
	if (!c.pid && !dashes)
		return cli_usage_error(&cli_trace, "expected -- before the command%s%s%s (or --pid PID)",
				       first < argc ? " ('" : "", first < argc ? argv[first] : "", first < argc ? "')" : "");
	if (!c.pid && first == argc)
		return cli_usage_error(&cli_trace, "no command after --");
	c.argv = c.pid ? NULL : argv + first;
	struct ju_err why;
	if (c.nexpect && hx_trace_gate_parse(&c, &why)) {
		fprintf(stderr, "jitunwind trace: %s\n", why.msg);
		return 2;
	}
	char so[PATH_MAX];
	if (!c.pid && !c.no_flush && !(c.flush_so = flush_shim(so, sizeof(so))))
		fprintf(stderr, "trace: no libjuflush.so beside %s (nor in ../lib/jitunwind/, or $JITUNWIND_FLUSH_SO): a JIT's buffered "
			"jitdump writes reach the file late, and code that runs before its load is read goes "
			"unsampled\n", argv[0]);
	struct hx_trace_result r;
	int e = hx_trace_run(&c, &r);
	if (e == -EPERM || e == -ENOSYS) {
		printf("SKIP trace: %s\n", r.why);
		return 77;
	}
	if (!e || e == -ESRCH || e == -EBADMSG)
		hx_trace_report(stdout, &r);
	int judged = e ? 0 : hx_trace_judge_report(&c, &r);
	if (!e && c.samples_text) {
		FILE *f = fopen(c.samples_text, "w");
		if (!f || hx_trace_samples_text(f, &r) || fclose(f)) {
			fprintf(stderr, "jitunwind trace: cannot write %s\n", c.samples_text);
			e = -EIO;
			snprintf(r.why, sizeof(r.why), "cannot write %s", c.samples_text);
		}
	}
	if (e)
		fprintf(stderr, "jitunwind trace: %s\n", r.why[0] ? r.why : strerror(-e));
	hx_trace_result_free(&r);
	hx_trace_gate_free(&c);
	return e ? 2 : judged;          /* 1 only with --expect: the gate */
}
