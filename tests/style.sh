#!/bin/sh
# The structure rules as tests (make style, part of make check): tools/fnlen (no
# function over 100 lines but the decoders and interpreters) and tools/tablecheck (no
# unwinder name in a condition, no arch test outside the tables).  Each checker first
# meets planted violations it must fail on (the negative controls), then the tree.
set -u
cd "$(dirname "$0")/.."
t=$(mktemp -d /tmp/justyle-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "style: FAIL: $*"; exit 1; }
lines() { i=0; while [ "$i" -lt "$1" ]; do echo "	x += $i;"; i=$((i + 1)); done; }

# --- tools/fnlen: a function of N lines is name line + '{' + N-3 + '}' ---
{ echo "int at_limit(int x)"; echo "{"; lines 97; echo "}"; } >"$t/at.c"
{ echo "int over(int x)"; echo "{"; lines 98; echo "}"; } >"$t/over.c"
tools/fnlen "$t/at.c" >"$t/out" || fail "fnlen refuses a 100-line function: $(cat "$t/out")"
tools/fnlen "$t/over.c" >"$t/out" && fail "fnlen passes a 101-line function"
grep -q "over is 101 lines" "$t/out" || fail "fnlen does not name the 101-line function: $(cat "$t/out")"
# braces in literals and comments, and in both branches of an #if, count once: a lexer
# fooled by any of them ends the function early (or late) and misses this one
{
	echo "#define HX_FN(x) fn_##x"
	echo "static int HX_FN(tricky)(int x)"
	echo "{"
	echo "	const char *s = \"}}\"; char c = '}'; /* } */ // }"
	echo "#if defined(A)"
	echo "	if (x) {"
	echo "#else"
	echo "	if (!x) {"
	echo "#endif"
	echo "		x++;"
	echo "	}"
	echo "	const char *q = \"\\\"{\";"
	lines 88
	echo "	return x + (s[0] == c) + (q[0] == c);"
	echo "}"
	echo "int after(void) { return 0; }"
} >"$t/tricky.c"
tools/fnlen "$t/tricky.c" >"$t/out" && fail "fnlen passes a 101-line function with braces in literals and #if branches"
grep -q "HX_FN(tricky) is 101 lines" "$t/out" || fail "fnlen miscounts braces in literals, comments or #if branches: $(cat "$t/out")"
tools/fnlen --list "$t/tricky.c" | grep -q "after	103	1" || fail "fnlen loses the function after the tricky one: $(tools/fnlen --list "$t/tricky.c")"
{ echo "START_TEST(a_test)"; echo "{"; lines 98; echo "}"; echo "END_TEST"; } >"$t/ck.c"
tools/fnlen "$t/ck.c" >"$t/out" && fail "fnlen passes a 101-line Check test"
grep -q "a_test is 101 lines" "$t/out" || fail "fnlen does not name the Check test: $(cat "$t/out")"
# an independent parser agrees on where every function of the tree ends (Universal Ctags)
if ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
	tools/fnlen --list | awk -F'\t' '{ print $1 ":" $3 + $4 - 1 }' | sort >"$t/ours"
	find trampolines unwinders harness tools tests -name '*.[ch]' | sort |
		xargs ctags --fields=+ne --c-kinds=f --output-format=u-ctags -o - 2>/dev/null |
		awk -F'\t' '{ for (i = 4; i <= NF; i++) if ($i ~ /^end:/) print $2 ":" substr($i, 5) }' |
		sort >"$t/ctags"
	diff "$t/ours" "$t/ctags" >"$t/out" || fail "fnlen and ctags disagree on where functions end: $(head -20 "$t/out")"
	echo "style: fnlen agrees with Universal Ctags on the end of all $(wc -l <"$t/ours") functions"
else
	echo "style: skip: no Universal Ctags here to cross-check fnlen's lexer (apt-get install universal-ctags)"
fi
tools/fnlen || fail "tools/fnlen on the tree"

# --- tools/tablecheck: a tree with one file of each violation ---
mk() { mkdir -p "$t/tree/$(dirname "$1")"; cat >"$t/tree/$1"; }
mk Makefile <<'EOF'
ARCHES    := x86_64 aarch64
EOF
mk unwinders/oracle.c <<'EOF'
const struct uw_unwinder uw_oracle = { .name = "oracle", .ref = UW_REF_TRUTH };
int own(const char *n) { return !strcmp(n, "oracle"); }   /* its own file: fine */
EOF
mk unwinders/registry.c <<'EOF'
const struct uw_unwinder *by(const char *n) { return !strcmp(n, "oracle") ? &uw_oracle : 0; }
EOF
mk unwinders/uwarch.c <<'EOF'
static const char *n = "aarch64";
#if defined(__x86_64__)
#endif
EOF
mk harness/capture/arch/aarch64.c <<'EOF'
const char *name = "aarch64";   /* an arch file: fine */
EOF
mk harness/good.c <<'EOF'
/* "aarch64" and strcmp(n, "oracle") in a comment are no test */
int ok(const struct uw_unwinder *u) { return u->ref == UW_REF_TRUTH; }
EOF
(cd "$t/tree" && "$OLDPWD/tools/tablecheck" --root .) >"$t/out" ||
	fail "tablecheck refuses a tree without violations: $(cat "$t/out")"
mk harness/bad.c <<'EOF'
int by_name(const struct uw_unwinder *u) { if (!strcmp(u->name, "oracle")) return 1; return 0; }
int by_ident(const struct uw_unwinder *u) { return u == &uw_oracle; }
int by_arch(const char *a) { return !strcmp(a, "arm64"); }
#if defined(__aarch64__)
#endif
int mach(int m) { return m == EM_AARCH64; }
EOF
mk trampolines/x.c <<'EOF'
#include "unwinders/unwind.h"
EOF
(cd "$t/tree" && "$OLDPWD/tools/tablecheck" --root .) >"$t/out" && fail "tablecheck passes planted violations"
for want in 'harness/bad.c:1: unwinder name "oracle"' 'harness/bad.c:2: unwinder uw_oracle' \
	'harness/bad.c:3: arch test "arm64"' 'harness/bad.c:4: arch test __aarch64__' \
	'harness/bad.c:6: arch test EM_AARCH64' 'trampolines/x.c:1: the JIT side includes'; do
	grep -qF "$want" "$t/out" || fail "tablecheck misses '$want': $(cat "$t/out")"
done
[ "$(grep -c '^[a-z]*/[^:]*:[0-9]' "$t/out")" = 6 ] || fail "tablecheck reports more than the planted violations: $(cat "$t/out")"
tools/tablecheck || fail "tools/tablecheck on the tree"
echo "style: ok (negative controls caught; the tree passes both rules)"
