/* libjuflush.so: preloaded into a traced command (LD_PRELOAD), it makes a
 * jitdump's stream (a file named jit-<N>.dump) unbuffered where it is opened
 * (fopen, fdopen, freopen) or given a buffer (setvbuf), and flushes it after
 * every stdio write the JIT may use on it (fwrite, fwrite_unlocked, fputs,
 * fputc, putc, fprintf, ... and their _unlocked forms): perf's JVMTI agent
 * writes its dump with fwrite_unlocked on a FILE from fdopen.
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

#include <stdarg.h>

/* glibc may define these as macros or inline functions (-O2): the hooks are
 * the functions a JIT's object calls */
#undef putc
#undef fputc_unlocked
#undef fwrite_unlocked
#undef fputs_unlocked

typedef size_t (*fwrite_fn)(const void *, size_t, size_t, FILE *);
typedef int (*fclose_fn)(FILE *);
typedef int (*fputs_fn)(const char *, FILE *);
typedef int (*fputc_fn)(int, FILE *);
typedef int (*vfprintf_fn)(FILE *, const char *, va_list);
typedef int (*setvbuf_fn)(FILE *, char *, int, size_t);
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef FILE *(*fdopen_fn)(int, const char *);
typedef FILE *(*freopen_fn)(const char *, const char *, FILE *);

/* the next definition of name (libc's), looked up once per hook */
#define REAL(type, name) \
	static type real; \
	if (!real) \
		real = (type)dlsym(RTLD_NEXT, name)

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

/* a stream that is a jitdump's (NULL is none) */
static bool dump_stream(FILE *f)
{
	return f && is_jitdump(f);
}

/* after a write: a jitdump's stream flushed (it may have been opened before
 * this library could make it unbuffered) */
static void flushed(FILE *f, bool unlocked)
{
	if (f && is_jitdump(f))
		unlocked ? fflush_unlocked(f) : fflush(f);
}

/* a stream just opened or given a buffer: a jitdump's is made unbuffered */
static FILE *unbuffered(FILE *f)
{
	REAL(setvbuf_fn, "setvbuf");
	if (f && real && is_jitdump(f))
		real(f, NULL, _IONBF, 0);
	return f;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	REAL(fwrite_fn, "fwrite");
	size_t r = real ? real(p, size, n, f) : 0;
	flushed(f, false);
	return r;
}

size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
	REAL(fwrite_fn, "fwrite_unlocked");
	size_t r = real ? real(p, size, n, f) : 0;
	flushed(f, true);
	return r;
}

int fputs(const char *str, FILE *f)
{
	REAL(fputs_fn, "fputs");
	int r = real ? real(str, f) : EOF;
	flushed(f, false);
	return r;
}

int fputs_unlocked(const char *str, FILE *f)
{
	REAL(fputs_fn, "fputs_unlocked");
	int r = real ? real(str, f) : EOF;
	flushed(f, true);
	return r;
}

int fputc(int c, FILE *f)
{
	REAL(fputc_fn, "fputc");
	int r = real ? real(c, f) : EOF;
	flushed(f, false);
	return r;
}

int fputc_unlocked(int c, FILE *f)
{
	REAL(fputc_fn, "fputc_unlocked");
	int r = real ? real(c, f) : EOF;
	flushed(f, true);
	return r;
}

int putc(int c, FILE *f)
{
	REAL(fputc_fn, "putc");
	int r = real ? real(c, f) : EOF;
	flushed(f, false);
	return r;
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
	REAL(vfprintf_fn, "vfprintf");
	int r = real ? real(f, fmt, ap) : -1;
	flushed(f, false);
	return r;
}

int fprintf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfprintf(f, fmt, ap);
	va_end(ap);
	return r;
}

int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
	REAL(setvbuf_fn, "setvbuf");
	if (!real)
		return EOF;
	/* a JIT's own buffer for its dump: the dump stays unbuffered (dump_stream
	 * takes the NULL test: f here is declared nonnull, gcc 14 refuses to test it) */
	return dump_stream(f) ? real(f, NULL, _IONBF, 0) : real(f, buf, mode, size);
}

FILE *fopen(const char *path, const char *mode)
{
	REAL(fopen_fn, "fopen");
	return unbuffered(real ? real(path, mode) : NULL);
}

FILE *fopen64(const char *path, const char *mode)
{
	REAL(fopen_fn, "fopen64");
	return unbuffered(real ? real(path, mode) : NULL);
}

FILE *fdopen(int fd, const char *mode)
{
	REAL(fdopen_fn, "fdopen");
	return unbuffered(real ? real(fd, mode) : NULL);
}

FILE *freopen(const char *path, const char *mode, FILE *f)
{
	REAL(freopen_fn, "freopen");
	return unbuffered(real ? real(path, mode, f) : NULL);
}

int fclose(FILE *f)
{
	REAL(fclose_fn, "fclose");
	for (unsigned i = 0; i < SEEN; i++)
		if (seen[i].f == f)
			seen[i].f = NULL;
	return real ? real(f) : EOF;
}
