/* How a harness command ended, as the library reports it: the library
 * returns 0 with an outcome (or a negative errno when it could not run to
 * a conclusion: bad input, a failed allocation or write), and only
 * harness/cli maps the two to an exit code (harness/cli/main.c,
 * cli_exit_code). */
#ifndef HX_CMD_H
#define HX_CMD_H

enum hx_cmd_kind {
	HX_CMD_CLEAN = 0,    /* ran, nothing found: exit 0 */
	HX_CMD_FINDINGS,     /* ran, something failed or applies: exit 1 */
	HX_CMD_CANNOT_RUN,   /* the check cannot run here (reason): exit 77 */
	HX_CMD_NKINDS
};

struct hx_cmd_outcome {
	enum hx_cmd_kind kind;
	char reason[600]; /* why it cannot run (HX_CMD_CANNOT_RUN), or "" */
};

#endif
