/* The message sink (say.h): the one place a library's message meets stderr. */
#include <stdarg.h>
#include <stdlib.h>
#include "harness/case/say.h"

/* the installed sink: written once by the CLI (or a test) before any message */
static struct {
	ju_say_fn fn;
	void *ctx;
} sink;

void ju_say_print(FILE *f, enum ju_say_kind kind, const char *who, const char *text)
{
	if (kind == JU_SAY_PROGRESS)
		fprintf(f, "\r\033[K%s", text);
	else if (who)
		fprintf(f, "%s: %s\n", who, text);
	else
		fprintf(f, "%s\n", text);
}

void ju_say_sink(ju_say_fn fn, void *ctx)
{
	sink.fn = fn;
	sink.ctx = ctx;
}

void ju_say(enum ju_say_kind kind, const char *who, const char *fmt, ...)
{
	char buf[2048], *text = buf;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf) && (text = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(text, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (!text)   /* no memory for a long one: the first 2 KiB */
		text = buf;
	if (n < 0)
		buf[0] = 0;
	if (sink.fn)
		sink.fn(sink.ctx, kind, who, text);
	else
		ju_say_print(stderr, kind, who, text);
	if (text != buf)
		free(text);
}
