/* Case-file op lines -> struct tr_op.  Register names are checked against
 * every arch's table here (so typos fail at parse time, with the line) and
 * kept as text in op->reg_name; tr_emit resolves them for the case's arch. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/arch.h"
#include "juerr.h"

static const char *const op_names[TR_OP__COUNT] = {
	[TR_OP_PUSH_FP] = "push_fp",
	[TR_OP_SET_FP] = "set_fp",
	[TR_OP_ALLOC] = "alloc",
	[TR_OP_FREE] = "free",
	[TR_OP_SAVE_REG] = "save_reg",
	[TR_OP_RESTORE_REG] = "restore_reg",
	[TR_OP_CALL_TARGET] = "call_target",
	[TR_OP_TAIL_JUMP] = "tail_jump",
	[TR_OP_POP_FP] = "pop_fp",
	[TR_OP_LEAVE] = "leave",
	[TR_OP_RET] = "ret",
	[TR_OP_NOP] = "nop",
	[TR_OP_ENDBR64] = "endbr64",
	[TR_OP_BTI] = "bti",
	[TR_OP_PACIASP] = "paciasp",
	[TR_OP_AUTIASP] = "autiasp",
	[TR_OP_RAW] = "raw",
	[TR_OP_CFI] = ".cfi_*",
};

static const char op_list[] =
	"push_fp, set_fp, alloc N, free N, save_reg REG, restore_reg REG, call_target [rel32], "
	"tail_jump, pop_fp, leave, ret, nop, endbr64, bti, paciasp, autiasp, "
	"raw <hex bytes> ; <op>, .cfi_*";

const char *tr_op_name(enum tr_op_kind k)
{
	if ((unsigned)k >= TR_OP__COUNT)
		return "?";
	return op_names[k];
}

int tr_reg_any(const char *name)
{
	size_t n;
	const struct tr_arch *const *arches = tr_arches(&n);
	for (size_t i = 0; i < n; i++) {
		int r = arches[i]->dwarf_reg(name);
		if (r >= 0)
			return r;
	}
	return -ENOENT;
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Copies s[0..n) with surrounding blanks removed. */
static void trim_copy(char *dst, size_t cap, const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static int parse_size(const char *arg, const char *what, int64_t *out, struct ju_err *err)
{
	if (!*arg) {
		ju_errf(err, EINVAL, 0, "%s: missing size (decimal or 0x hex)", what);
		return -EINVAL;
	}
	char *end;
	errno = 0;
	long long v = strtoll(arg, &end, 0);
	if (errno || *end || v < 0 || arg[0] == '-' || arg[0] == '+') {
		ju_errf(err, EINVAL, 0, "%s: '%s' is not a size (decimal or 0x hex, >= 0)", what, arg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Parses "word [arg]" (no raw, no .cfi) into kind/n/reg_name. */
static int parse_simple(const char *word, const char *arg, struct tr_op *op, struct ju_err *err)
{
	int k;
	for (k = 0; k < TR_OP__COUNT; k++) {
		if (k == TR_OP_RAW || k == TR_OP_CFI)
			continue;
		if (!strcmp(word, op_names[k]))
			break;
	}
	if (k == TR_OP__COUNT) {
		ju_errf(err, EINVAL, 0, "unknown op '%s' (expected %s)", word, op_list);
		return -EINVAL;
	}
	op->kind = (enum tr_op_kind)k;
	op->n = 0;
	switch (op->kind) {
	case TR_OP_ALLOC:
	case TR_OP_FREE:
		return parse_size(arg, word, &op->n, err);
	case TR_OP_SAVE_REG:
	case TR_OP_RESTORE_REG: {
		if (!*arg) {
			ju_errf(err, EINVAL, 0, "%s: missing register (e.g. %%rbx or x19)", word);
			return -EINVAL;
		}
		int r = tr_reg_any(arg);
		if (r < 0) {
			ju_errf(err, EINVAL, 0, "%s: unknown register '%s'", word, arg);
			return -EINVAL;
		}
		if (strlen(arg) >= sizeof(op->reg_name)) {
			ju_errf(err, EINVAL, 0, "%s: register name '%s' too long", word, arg);
			return -ENAMETOOLONG;
		}
		op->n = r;
		strcpy(op->reg_name, arg);
		return 0;
	}
	case TR_OP_CALL_TARGET:
		/* call_target rel32: a direct call (x86_64), its displacement set by
		 * whoever places the code (the capture points it at a jump to the target) */
		if (*arg && strcmp(arg, "rel32")) {
			ju_errf(err, EINVAL, 0, "call_target: '%s': expected nothing or rel32", arg);
			return -EINVAL;
		}
		op->n = *arg ? 1 : 0;
		return 0;
	default:
		if (*arg) {
			ju_errf(err, EINVAL, 0, "%s takes no argument (got '%s')", word, arg);
			return -EINVAL;
		}
		return 0;
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -EINVAL;
}

static int parse_raw(const char *args, struct tr_op *op, struct ju_err *err)
{
	const char *semi = strchr(args, ';');
	if (!semi) {
		ju_errf(err, EINVAL, 0, "raw: missing '; <effect>' (e.g. 'raw 55 ; push_fp', 'raw 90 ; none')");
		return -EINVAL;
	}
	char bytes[256], eff[128];
	trim_copy(bytes, sizeof(bytes), args, (size_t)(semi - args));
	trim_copy(eff, sizeof(eff), semi + 1, strlen(semi + 1));
	op->raw_len = 0;
	for (char *tok = strtok(bytes, " \t,"); tok; tok = strtok(NULL, " \t,")) {
		const char *h = tok;
		if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
			h += 2;
		if (strlen(h) != 2 || hexval(h[0]) < 0 || hexval(h[1]) < 0) {
			ju_errf(err, EINVAL, 0, "raw: '%s' is not a hex byte", tok);
			return -EINVAL;
		}
		if (op->raw_len == TR_RAW_MAX) {
			ju_errf(err, EINVAL, 0, "raw: more than %d bytes", TR_RAW_MAX);
			return -ERANGE;
		}
		op->raw[op->raw_len++] = (uint8_t)(hexval(h[0]) << 4 | hexval(h[1]));
	}
	if (!op->raw_len) {
		ju_errf(err, EINVAL, 0, "raw: no bytes before ';'");
		return -EINVAL;
	}
	if (!*eff) {
		ju_errf(err, EINVAL, 0, "raw: missing effect after ';' (an op, or 'none')");
		return -EINVAL;
	}
	if (!strcmp(eff, "none")) {
		op->effect = TR_OP_NOP;
		op->effect_n = 0;
		return 0;
	}
	struct tr_op e;
	memset(&e, 0, sizeof(e));
	char word[32];
	size_t wl = strcspn(eff, " \t");
	trim_copy(word, sizeof(word), eff, wl);
	struct ju_err sub;
	if (!strcmp(word, "raw") || eff[0] == '.' ||
	    parse_simple(word, skip_ws(eff + wl), &e, &sub)) {
		if (!strcmp(word, "raw") || eff[0] == '.')
			ju_errf(&sub, EINVAL, 0, "'%s' cannot be an effect", word);
		ju_errf(err, EINVAL, 0, "raw: effect: %.199s", sub.msg);
		return -EINVAL;
	}
	op->effect = e.kind;
	op->effect_n = e.n;
	memcpy(op->reg_name, e.reg_name, sizeof(op->reg_name));
	return 0;
}

int tr_op_parse(const char *line, struct tr_op *op, struct ju_err *err)
{
	int keep_line = op->line;
	memset(op, 0, sizeof(*op));
	op->line = keep_line;
	op->effect = TR_OP_NOP;
	char buf[256];
	size_t n = strlen(line);
	if (n >= sizeof(buf)) {
		ju_errf(err, EINVAL, 0, "op line too long (%zu characters)", n);
		return -ERANGE;
	}
	trim_copy(buf, sizeof(buf), line, n);
	if (!buf[0]) {
		ju_errf(err, EINVAL, 0, "empty op line");
		return -EINVAL;
	}
	if (!strncmp(buf, ".cfi_", 5)) {
		if (strlen(buf) >= sizeof(op->cfi)) {
			ju_errf(err, EINVAL, 0, "directive too long (max %d characters)", TR_CFI_TEXT_MAX - 1);
			return -ERANGE;
		}
		op->kind = TR_OP_CFI;
		strcpy(op->cfi, buf);
		return 0;
	}
	size_t wl = strcspn(buf, " \t");
	char word[32];
	trim_copy(word, sizeof(word), buf, wl);
	const char *arg = skip_ws(buf + wl);
	if (!strcmp(word, "raw")) {
		op->kind = TR_OP_RAW;
		return parse_raw(arg, op, err);
	}
	return parse_simple(word, arg, op, err);
}
