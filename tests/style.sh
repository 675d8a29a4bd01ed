#!/bin/sh
# The structure rules as tests (make style, part of make check): tools/fnlen (no
# function over 80 lines but the decoders and interpreters, no source file over 1,000
# lines), tools/tablecheck (no
# unwinder name in a condition, no arch test outside the tables) and tools/mutstate (every
# writable object of the layer libraries on tools/mutable-state.txt).  Each checker first
# meets planted violations it must fail on (the negative controls), then the tree.
set -u
cd "$(dirname "$0")/.."
t=$(mktemp -d /tmp/justyle-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "style: FAIL: $*"; exit 1; }
lines() { i=0; while [ "$i" -lt "$1" ]; do echo "	x += $i;"; i=$((i + 1)); done; }

# --- tools/fnlen: a function of N lines is name line + '{' + N-3 + '}' ---
{ echo "int at_limit(int x)"; echo "{"; lines 77; echo "}"; } >"$t/at.c"
{ echo "int over(int x)"; echo "{"; lines 78; echo "}"; } >"$t/over.c"
tools/fnlen "$t/at.c" >"$t/out" || fail "fnlen refuses an 80-line function: $(cat "$t/out")"
tools/fnlen "$t/over.c" >"$t/out" && fail "fnlen passes an 81-line function"
grep -q "over is 81 lines" "$t/out" || fail "fnlen does not name the 81-line function: $(cat "$t/out")"
# the file rule: 1,000 lines pass, 1,001 fail (short functions, so only the file is wrong)
fnl() { i=0; while [ "$i" -lt "$1" ]; do echo "int f$i(void) { return $i; }"; i=$((i + 1)); done; }
fnl 1000 >"$t/long_at.c"
fnl 1001 >"$t/long_over.c"
fnl 1001 >"$t/long_over.h"
fnl 1001 | sed 's/.*/\tnop/' >"$t/long_over.S"
tools/fnlen "$t/long_at.c" >"$t/out" || fail "fnlen refuses a 1,000-line file: $(cat "$t/out")"
for f in long_over.c long_over.h long_over.S; do
	tools/fnlen "$t/$f" >"$t/out" && fail "fnlen passes a 1,001-line $f"
	grep -q "$f: 1001 lines (limit 1000)" "$t/out" || fail "fnlen does not name the 1,001-line $f: $(cat "$t/out")"
done
# FILE_PENDING: a pending file over the limit is reported, not failed; an entry whose file
# is short now (or gone) fails, so the list stays true (a tree of its own, a planted list)
mkdir -p "$t/ptree/tools" "$t/ptree/tests"
python3 - "$t/ptree/tools/fnlen" <<'PY'
import re, sys
s = open("tools/fnlen").read()
s = re.sub(r"FILE_PENDING = \{.*?\n\}", 'FILE_PENDING = {\n    "tests/long.c": "planted",\n}', s, flags=re.S)
s = re.sub(r"\nPENDING = \{.*?\}", "\nPENDING = {}", s, flags=re.S)
s = re.sub(r"ALLOWED = \{.*?\n\}", "ALLOWED = {}", s, flags=re.S)
open(sys.argv[1], "w").write(s)
PY
chmod +x "$t/ptree/tools/fnlen"
fnl 1001 >"$t/ptree/tests/long.c"
(cd "$t/ptree" && tools/fnlen) >"$t/out" || fail "fnlen fails a pending long file: $(cat "$t/out")"
grep -q "tests/long.c: 1001 lines (pending: planted)" "$t/out" || fail "fnlen does not report the pending file: $(cat "$t/out")"
fnl 10 >"$t/ptree/tests/long.c"
(cd "$t/ptree" && tools/fnlen) >"$t/out" && fail "fnlen passes a stale FILE_PENDING entry"
grep -q "tests/long.c: 10 lines now: remove it from FILE_PENDING" "$t/out" || fail "fnlen does not name the stale entry: $(cat "$t/out")"
rm "$t/ptree/tests/long.c"
(cd "$t/ptree" && tools/fnlen) >"$t/out" && fail "fnlen passes a FILE_PENDING entry for a missing file"
grep -q "tests/long.c is listed in FILE_PENDING but no such file exists" "$t/out" || fail "fnlen does not name the missing file: $(cat "$t/out")"
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
	lines 68
	echo "	return x + (s[0] == c) + (q[0] == c);"
	echo "}"
	echo "int after(void) { return 0; }"
} >"$t/tricky.c"
tools/fnlen "$t/tricky.c" >"$t/out" && fail "fnlen passes an 81-line function with braces in literals and #if branches"
grep -q "HX_FN(tricky) is 81 lines" "$t/out" || fail "fnlen miscounts braces in literals, comments or #if branches: $(cat "$t/out")"
tools/fnlen --list "$t/tricky.c" | grep -q "after	83	1" || fail "fnlen loses the function after the tricky one: $(tools/fnlen --list "$t/tricky.c")"
{ echo "START_TEST(a_test)"; echo "{"; lines 78; echo "}"; echo "END_TEST"; } >"$t/ck.c"
tools/fnlen "$t/ck.c" >"$t/out" && fail "fnlen passes an 81-line Check test"
grep -q "a_test is 81 lines" "$t/out" || fail "fnlen does not name the Check test: $(cat "$t/out")"
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
mk arches.def <<'EOF'
ARCH(x86_64, amd64, EM_X86_64, x86_64, x86_64-linux-gnu, 7, 6, 16, 16, -1, 8, 1, -8, "%")
ARCH(aarch64, arm64, EM_AARCH64, aarch64, aarch64-linux-gnu, 31, 29, 30, 32, 30, 0, 0, 0, "")
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
const struct arch_facts *f = &arch_facts[ARCH_ID_aarch64];
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
int rec(const struct tr_arch *a) { return a == &tr_arch_x86_64; }
int rec2(const struct tr_arch *a) { return &tr_arch_aarch64 != a; }
#ifdef JU_ARCH_aarch64
#endif
int id(void) { return arch_facts[ARCH_ID_x86_64].dw_sp; }
#if JU_HOST_ARCH
#endif
EOF
mk trampolines/x.c <<'EOF'
#include "unwinders/unwind.h"
EOF
mk harness/capture/arch/x86_64.c <<'EOF'
int own(const struct tr_arch *a) { return a != &tr_arch_x86_64; }   /* not even in an arch file */
EOF
(cd "$t/tree" && "$OLDPWD/tools/tablecheck" --root .) >"$t/out" && fail "tablecheck passes planted violations"
for want in 'harness/bad.c:1: unwinder name "oracle"' 'harness/bad.c:2: unwinder uw_oracle' \
	'harness/bad.c:3: arch test "arm64"' 'harness/bad.c:4: arch test __aarch64__' \
	'harness/bad.c:6: arch test EM_AARCH64' 'trampolines/x.c:1: the JIT side includes' \
	'harness/bad.c:7: arch record compared by identity (== &tr_arch_x86_64)' \
	'harness/bad.c:8: arch record compared by identity (&tr_arch_aarch64 !=)' \
	'harness/bad.c:9: arch test JU_ARCH_aarch64' 'harness/bad.c:11: arch test ARCH_ID_x86_64' \
	'harness/bad.c:12: arch test JU_HOST_ARCH' \
	'harness/capture/arch/x86_64.c:1: arch record compared by identity (!= &tr_arch_x86_64)'; do
	grep -qF "$want" "$t/out" || fail "tablecheck misses '$want': $(cat "$t/out")"
done
[ "$(grep -c '^[a-z]*/[^:]*:[0-9]' "$t/out")" = 12 ] || fail "tablecheck reports more than the planted violations: $(cat "$t/out")"
tools/tablecheck || fail "tools/tablecheck on the tree"

# --- tools/tablecheck rule 4: the error convention's ratchet (ERR_LIMITS, issue 37) ---
# a folder without a limit may have no `return -1;` and no `char *err, size_t`; comments,
# tests/ and tools/ are not counted; each excess is named by file:line
rm -rf "$t/tree" && mkdir -p "$t/tree"
mk arches.def </dev/null
mk harness/zz/ok.c <<'EOF'
/* return -1; and (char *err, size_t errlen) in a comment are no violation,
 * nor is fprintf(stderr, "x\n") */
int ok(struct ju_err *err) { return ju_errf(err, EINVAL, 0, "offset 0x%x: expected a byte", 4); }
void say(FILE *f) { fprintf(f, "to a stream handed down\n"); fputs("stderr", f); }
EOF
# rule 5's owners may print: the CLI, the sink's own file, the fuzz targets
mk harness/cli/main.c <<'EOF'
int main(void) { fprintf(stderr, "jitunwind: usage\n"); perror("x"); return 2; }
EOF
mk harness/case/say.c <<'EOF'
void ju_say_print(FILE *f, const char *t) { fprintf(stderr, "%s\n", t); }
EOF
mk fuzz/fuzz_x.c <<'EOF'
int LLVMFuzzerTestOneInput(void) { fprintf(stderr, "refused\n"); return 0; }
EOF
mk tests/t.c <<'EOF'
int t(char *err, size_t n) { return -1; }
EOF
mk tools/x.c <<'EOF'
int x(char *err, size_t n) { return -1; }
EOF
(cd "$t/tree" && "$OLDPWD/tools/tablecheck" --root .) >"$t/out" ||
	fail "tablecheck counts comments, tests/ or tools/: $(cat "$t/out")"
mk harness/zz/bad.c <<'EOF'
int bad(int x)
{
	if (x)
		return -1;
	return x ? 0 : (fprintf(stderr, "x\n"), -1);
}
int also(int x) { if (x) return fprintf(stderr, "x\n"), -1; return 0; }
int parse(const char *s, char *err,
	  size_t errlen);
EOF
# rule 5: every way of writing to stderr in a library file (and one planted in a
# real library file of the tree, harness/run/runner.c), each named by file:line
mk harness/zz/say.c <<'EOF'
void w(const char *m, va_list ap)
{
	vfprintf(stderr, m, ap);
	fputs(m, stderr);
	fputc('\n', stderr);
	fwrite(m, 1, strlen(f(m, 2)), stderr);
	perror(m);
	dprintf(2, "%s", m);
	write(STDERR_FILENO, m, 1);
}
#include <err.h>
EOF
mk harness/run/runner.c <<'EOF'
int hx_replay_group(void) { fprintf(stderr, "jitunwind: skip: planted\n"); return 0; }
EOF
(cd "$t/tree" && "$OLDPWD/tools/tablecheck" --root .) >"$t/out" && fail "tablecheck passes a planted return -1;"
for want in 'harness/zz/bad.c:4: `return -1;`: harness/zz has 2, limit 0' \
	'harness/zz/bad.c:7: `return -1;`' \
	'harness/zz/bad.c:8: `char *err, size_t` parameter: harness/zz has 1, limit 0' \
	'harness/zz/bad.c:5: write to stderr: harness/zz has 10, limit 0' 'harness/zz/bad.c:7: write to stderr' \
	'harness/zz/say.c:3: write to stderr' 'harness/zz/say.c:4: write' 'harness/zz/say.c:5: write' \
	'harness/zz/say.c:6: write' 'harness/zz/say.c:7: write' 'harness/zz/say.c:8: write' \
	'harness/zz/say.c:9: write' 'harness/zz/say.c:11: write to stderr' \
	'harness/run/runner.c:1: write to stderr: harness/run has 1, limit 0 (tools/tablecheck ERR_LIMITS): say it through ju_say'; do
	grep -qF "$want" "$t/out" || fail "tablecheck misses '$want': $(cat "$t/out")"
done
[ "$(grep -c '^[a-z]*/[^:]*:[0-9]' "$t/out")" = 14 ] || fail "tablecheck's ratchet reports more than the planted: $(cat "$t/out")"

# --- tools/mutstate: every writable object of the layer libraries is on the allowlist ---
# (BUILD, the first argument, holds the libraries: make style builds them first)
build=${1:-}
if [ -z "$build" ]; then
	echo "style: skip: tools/mutstate: no build directory given (make style passes \$(BUILD))"
else
	CC=${CC:-cc}
	# a library with a new global, a new static, a thread-local, a pointer table and a
	# function-local static: each must be named; a const table of pointers (read-only
	# after relocation) must not be
	cat >"$t/mut.c" <<'EOF'
int planted_global = 3;
static int planted_static;
static __thread int planted_tls;
const char *const planted_const_table[] = { "a", "b" };
const char *planted_pointer_table[] = { "a", "b" };
int planted_fn(void)
{
	static char planted_local[8];
	planted_local[0]++;
	planted_tls++;
	return planted_global + planted_static++ + planted_const_table[0][0] + planted_pointer_table[0][0] + planted_local[0];
}
EOF
	$CC -O2 -fPIE -c "$t/mut.c" -o "$t/mut.o" 2>"$t/out" || fail "cannot compile the planted globals: $(cat "$t/out")"
	ar rc "$t/libju_planted.a" "$t/mut.o" || fail "ar failed"
	tools/mutstate --allow tools/mutable-state.txt "$t/libju_planted.a" >"$t/out" &&
		fail "mutstate passes planted writable globals: $(cat "$t/out")"
	for want in "planted_global (.data)" "planted_static (.bss)" "planted_tls (.tbss)" \
		"planted_local (.bss)" "planted_pointer_table (.data.rel"; do
		grep -qF "$want" "$t/out" || fail "mutstate misses '$want': $(cat "$t/out")"
	done
	grep -q planted_const_table "$t/out" && fail "mutstate flags a const table of pointers: $(cat "$t/out")"
	[ "$(grep -c 'is writable' "$t/out")" = 5 ] || fail "mutstate reports more than the planted objects: $(cat "$t/out")"
	# the same objects allowlisted pass; an entry its object no longer defines fails
	for s in planted_global planted_static planted_tls planted_local planted_pointer_table; do
		echo "$s mut.c planted"
	done >"$t/allow"
	tools/mutstate --allow "$t/allow" "$t/libju_planted.a" >"$t/out" || fail "mutstate refuses allowlisted objects: $(cat "$t/out")"
	echo "planted_gone mut.c removed long ago" >>"$t/allow"
	tools/mutstate --allow "$t/allow" "$t/libju_planted.a" >"$t/out" && fail "mutstate passes a stale allowlist entry"
	grep -q "planted_gone in mut.c is no longer writable" "$t/out" || fail "mutstate does not name the stale entry: $(cat "$t/out")"
	tools/mutstate "$build" || fail "tools/mutstate on $build"
fi
echo "style: ok (negative controls caught; the tree passes every rule)"
