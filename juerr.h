/* The one error record of the library layers (trampolines, model, unwinders,
 * lint): a function returns 0 (or a count) or a negative errno, and fills
 * one struct ju_err saying where and what.  Header only, so both sides of
 * the wall (trampolines/ and unwinders/) include it without linking each
 * other; like arches.h it holds no code of either.  Only harness/cli turns
 * an error into an exit code (docs/HACKING.md "Errors"). */
#ifndef JU_ERR_H
#define JU_ERR_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct ju_err {
	char file[256];   /* the file at fault; "" when the caller names it */
	uint64_t offset;  /* byte offset inside the file or section being read */
	int line;         /* 1-based line of a text input; 0 when not a text */
	int kind;         /* a reader's own reason code (jdwalk.h's enum jdr_errkind); 0 none */
	char msg[1024];   /* what was found and what was expected */
};

/* Fill err (when not NULL) with offset and the printf-like message; returns
 * -errnum, so a failing path reads "return ju_errf(err, EINVAL, off, ...)". */
__attribute__((format(printf, 4, 5)))
static inline int ju_errf(struct ju_err *err, int errnum, uint64_t offset, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->file[0] = 0;
		err->offset = offset;
		err->line = 0;
		err->kind = 0;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return errnum > 0 ? -errnum : -EIO;   /* a system call that failed without errno */
}

/* -errno of the system call that just failed (-EIO if it left errno 0). */
static inline int ju_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* ju_errf with a va_list (a reader's own formatter around it). */
static inline int ju_verrf(struct ju_err *err, int errnum, uint64_t offset, const char *fmt, va_list ap)
{
	if (err) {
		err->file[0] = 0;
		err->offset = offset;
		err->line = 0;
		err->kind = 0;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	}
	return errnum > 0 ? -errnum : -EIO;
}

/* Put "line 12: " or "what: " before a message filled further down (the
 * caller knows where); the rest of the record is kept. */
__attribute__((format(printf, 2, 3)))
static inline void ju_err_prefix(struct ju_err *err, const char *fmt, ...)
{
	if (!err)
		return;
	char pre[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	size_t pl = strlen(pre), ml = strnlen(err->msg, sizeof(err->msg) - 1);
	if (pl + ml >= sizeof(err->msg))
		ml = sizeof(err->msg) - 1 - pl;
	memmove(err->msg + pl, err->msg, ml);
	memcpy(err->msg + 0, pre, pl);
	err->msg[pl + ml] = 0;
}

/* "PATH: offset 0x1c: what" (a binary input) with file and offset set:
 * the one formatter of the readers (perf.data, the samples file). */
__attribute__((format(printf, 5, 6)))
static inline int ju_err_at(struct ju_err *err, int errnum, const char *file, uint64_t offset,
			    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = ju_verrf(err, errnum, offset, fmt, ap);
	va_end(ap);
	ju_err_prefix(err, "%s: offset 0x%llx: ", file, (unsigned long long)offset);
	if (err)
		snprintf(err->file, sizeof(err->file), "%s", file);
	return rc;
}

/* "PATH:12: what" (a text input) with file and line set: the case parsers' one. */
__attribute__((format(printf, 5, 6)))
static inline int ju_err_line(struct ju_err *err, int errnum, const char *file, int line,
			      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = ju_verrf(err, errnum, 0, fmt, ap);
	va_end(ap);
	ju_err_prefix(err, "%s:%d: ", file, line);
	if (err) {
		snprintf(err->file, sizeof(err->file), "%s", file);
		err->line = line;
	}
	return rc;
}

/* Name the file of an error filled further down (a reader that knows it). */
static inline void ju_err_file(struct ju_err *err, const char *file)
{
	if (err)
		snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
}

#endif
