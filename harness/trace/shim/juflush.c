/* libjuflush.so: preloaded into a traced command (LD_PRELOAD), it flushes
 * every fwrite to a jitdump (a file named jit-<N>.dump) at once.
 *
 * JITs write their jitdump through stdio (CPython's perf_jit, V8's perf-jit
 * logger, QEMU, Erlang's BeamAsm), so a CODE_LOAD record sits in a FILE
 * buffer until 4 KiB or more have gathered, while the code it describes
 * already runs: a tracer that learns of a load from the file would plant its
 * breakpoints after the function's first activations (CPython 3.13 traced
 * without this: fib() of a recursive script never sampled).  Flushing makes
 * the record reach the file, through a write the tracer stops at, before the
 * JIT calls the code.  Nothing else changes: the bytes written are the same,
 * only the moment.  Built as its own shared object, linked against nothing
 * of the project. */
#include <dlfcn.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef size_t (*fwrite_fn)(const void *, size_t, size_t, FILE *);
typedef int (*fclose_fn)(FILE *);

/* the FILEs seen lately and whether each is a jitdump (checked once per
 * FILE, forgotten at fclose); no lock: a stale entry only costs a readlink */
#define SEEN 16
static struct { FILE *f; bool jd; } seen[SEEN];
static unsigned next_slot;

static bool is_jitdump(FILE *f)
{
	for (unsigned i = 0; i < SEEN; i++)
		if (seen[i].f == f)
			return seen[i].jd;
	char link[64], path[PATH_MAX];
	int fd = fileno(f);
	bool jd = false;
	if (fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			const char *base = strrchr(path, '/');
			jd = !fnmatch("jit-*.dump", base ? base + 1 : path, 0);
		}
	}
	unsigned s = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % SEEN;
	seen[s].f = f;
	seen[s].jd = jd;
	return jd;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	static fwrite_fn real;
	if (!real)
		real = (fwrite_fn)dlsym(RTLD_NEXT, "fwrite");
	if (!real)
		return 0;
	size_t r = real(p, size, n, f);
	if (is_jitdump(f))
		fflush(f);
	return r;
}

int fclose(FILE *f)
{
	static fclose_fn real;
	if (!real)
		real = (fclose_fn)dlsym(RTLD_NEXT, "fclose");
	for (unsigned i = 0; i < SEEN; i++)
		if (seen[i].f == f)
			seen[i].f = NULL;
	return real ? real(f) : EOF;
}
