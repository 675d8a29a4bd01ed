#!/bin/bash
# make layers (part of make check): tools/layercheck first meets planted upward
# references it must refuse (the negative controls), then checks the tree's layers.
#   tests/layers.sh BUILD LAYER:BELOW+... ...     (CC, LDFLAGS, LIBS from make)
set -u
build=$1
shift
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
check_refused unwinders harness "unwinders:model"       # upward
check_refused model unwinders "model:"                  # upward inside the profiler side
check_refused trampolines model "trampolines:"          # across the wall between the sides
echo "layers: layercheck refuses the planted upward and cross-wall calls"
tools/layercheck "$build" "$@"
