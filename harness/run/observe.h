/* run --observe: the [expect] block a case's run would pass with, and the
 * same in plain words per perf configuration. */
#ifndef HX_OBSERVE_H
#define HX_OBSERVE_H

#include <stdio.h>
#include "harness/run/runner.h"

/* "[expect]\nfp = ok; skipped at 0,1,7\n..." for the unwinders of o. 0, or -ENOSPC */
int hx_observe_block(const struct hx_case_res *r, const struct hx_opts *o, char *buf, size_t n);
/* c: the case, for the true rows (NULL: left out) */
void hx_observe_words(FILE *out, const struct hx_case *c, const struct hx_case_res *r, const struct hx_opts *o,
		      const char *arch);
/* a column's verdict as [expect] spells it: "ok", "skipped fallback", "consistent" */
void hx_expect_word(const struct hx_uw_res *r, char *w, size_t n);
/* Replace the case file's [expect] section with block (comments kept). 0, or -errno with err */
int hx_observe_write(const char *path, const char *block, struct ju_err *err);
/* every case: the block, the words, and with write the file rewritten. 0, or -errno with err */
int hx_observe_run(FILE *out, const struct hx_case_res *res, size_t n, const struct hx_opts *o,
		   const char *arch, bool write, struct ju_err *err);

#endif
