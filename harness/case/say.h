/* One sink for every message a library below the CLI prints (libbpf's
 * pr_warn and libbpf_set_print): errors a command reports on its way out,
 * warnings, visible skips, the terminal's progress line, measurements.
 * A library calls ju_say; the CLI installs the sink (ju_say_sink) that prints
 * them; without one the default sink prints each to stderr as "who: text\n"
 * (docs/HACKING.md "Errors").  No library writes to stderr itself
 * (tools/tablecheck rule 5). */
#ifndef JU_SAY_H
#define JU_SAY_H

#include <stdio.h>

enum ju_say_kind {
	JU_SAY_ERROR,     /* why a command fails: it returns a negative errno or an outcome next */
	JU_SAY_WARNING,   /* something is off and the command goes on (input cut short, a fallback) */
	JU_SAY_SKIP,      /* a check or column that cannot run here, and why (a visible skip) */
	JU_SAY_PROGRESS,  /* the terminal's progress line, redrawn in place; "" erases it */
	JU_SAY_STATS,     /* measurements the user asked for (replay --stats) */
	JU_SAY_DEBUG,     /* traces a developer asked for (JU_FUZZ_DEBUG=1) */
};

/* A sink: who is the speaker ("jitunwind perf-check"; NULL: none), text the
 * message without its newline (already formatted). */
typedef void (*ju_say_fn)(void *ctx, enum ju_say_kind kind, const char *who, const char *text);

/* Install fn (NULL: the default sink) with its ctx; set once at start. */
void ju_say_sink(ju_say_fn fn, void *ctx);

/* Say one message through the installed sink; fmt is printf's. */
__attribute__((format(printf, 3, 4)))
void ju_say(enum ju_say_kind kind, const char *who, const char *fmt, ...);

/* The default sink's line on f: "who: text\n" (no "who: " for NULL); a
 * progress line is "\r\033[K" + text, no newline.  One write per line. */
void ju_say_print(FILE *f, enum ju_say_kind kind, const char *who, const char *text);

#endif
