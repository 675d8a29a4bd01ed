#!/bin/bash
# make layers (part of make check): tools/layercheck first meets planted upward
# references it must refuse (the negative controls), then checks the tree's layers;
# tools/includecheck the same for includes (planted upward, sideways and cyclic
# includes in a copy of the tree first).
#   tests/layers.sh BUILD LAYER:BELOW+... ... -- LAYER=DIR+...:BELOW+... ...
#   (CC, LDFLAGS, LIBS from make)
set -u
build=$1
shift
links=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do links+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
incs=("$@")
[ ${#links[@]} -gt 0 ] && [ ${#incs[@]} -gt 0 ] || { echo "layers: usage: tests/layers.sh BUILD LINKSPEC... -- INCSPEC..."; exit 2; }
cc=${CC:-cc}
t=$(mktemp -d /tmp/julayers-XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "layers: FAIL: $*"; exit 1; }
# a global function of a library, to call from a planted object
sym() { nm -g --defined-only "$build/libju_$1.a" 2>/dev/null | awk '$2 == "T" { print $3; exit }'; }

plant() { # plant LOW HIGH: LOW's library plus an object calling one of HIGH's functions
	local low=$1 high=$2 s
	s=$(sym "$high")
	[ -n "$s" ] || fail "no function in $build/libju_$high.a to plant a call to"
	mkdir -p "$t/$low-$high"
	cp "$build"/libju_*.a "$t/$low-$high/"
	printf 'void %s(void);\nvoid ju_planted_%s(void) { %s(); }\n' "$s" "$low" "$s" >"$t/planted.c"
	$cc -c "$t/planted.c" -o "$t/planted_upward.o" || fail "cannot compile the planted object"
	ar rs "$t/$low-$high/libju_$low.a" "$t/planted_upward.o" 2>/dev/null
	echo "$s"
}
check_refused() { # LOW HIGH SPEC: the planted library must fail, naming the object and symbol
	local s
	s=$(plant "$1" "$2") || exit 1
	tools/layercheck "$t/$1-$2" "$3" >"$t/out" 2>&1 && fail "layercheck passes $1 calling $2's $s"
	grep -q "planted_upward.o: .$s" "$t/out" ||
		fail "layercheck does not name the planted call of $s: $(cat "$t/out")"
}
check_refused unwinders run "unwinders:model"           # upward, out of the sides
check_refused model unwinders "model:"                  # upward inside the profiler side
check_refused trampolines model "trampolines:"          # across the wall between the sides
check_refused case capture "case:lint+unwinders+model+trampolines"   # upward inside harness/
check_refused trace fuzz "trace:report+run+capture+case+lint+unwinders+model+trampolines"  # sideways
echo "layers: layercheck refuses the planted upward, sideways and cross-wall calls"
tools/layercheck "$build" "${links[@]}" || exit 1

# includes: a copy of the tree's sources, one planted include at a time
src="$t/src"
mkdir -p "$src"
(git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build/*') |
	grep -v '^build/' | while read -r f; do mkdir -p "$src/$(dirname "$f")"; cp "$f" "$src/$f"; done
tools/includecheck "$src" "${incs[@]}" >"$t/out" 2>&1 || fail "the copied tree fails the include check: $(cat "$t/out")"
inc_refused() { # WHY FILE=HEADER...: each FILE including its HEADER, together, must fail, naming the first FILE
	local why=$1 p
	shift
	for p in "$@"; do printf '#include "%s"\n' "${p#*=}" >"$src/${p%%=*}"; done
	tools/includecheck "$src" "${incs[@]}" >"$t/out" 2>&1 && fail "includecheck passes $* ($why)"
	grep -q "${1%%=*}" "$t/out" || fail "includecheck does not name ${1%%=*}: $(cat "$t/out")"
	for p in "$@"; do rm -f "$src/${p%%=*}"; done
}
inc_refused "model includes the unwinders above it" unwinders/model/planted.c=unwinders/view.h
inc_refused "the case layer includes the run" harness/case/planted.c=harness/run/session.h
inc_refused "one command includes another" harness/trace/planted.h=harness/fuzz/fuzzcfi.h
inc_refused "the JIT side includes the profiler side" trampolines/planted.c=unwinders/model/jitdump.h
inc_refused "a folder cycle inside one layer" harness/planted.h=harness/case/case.h \
	harness/case/planted.h=harness/planted.h
echo "layers: includecheck refuses the planted upward, sideways, cross-wall and cyclic includes"
tools/includecheck . "${incs[@]}"
