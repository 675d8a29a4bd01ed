#!/bin/sh
# One matrix leg, run inside a root by tools/matrix (or on the host as its fallback):
# the versions that matter, then `make check` into the leg's own build directory.
#   tools/containers/leg.sh BUILD_DIR [MAKE_ARGS...]
# Prints "leg-info: key=value ..." first; exit = make's exit.
set -u
b=${1:?usage: tools/containers/leg.sh BUILD_DIR [MAKE_ARGS...]}
shift
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed 's/^[0-9]*://; s/[-+~].*//'; }
# a cross leg (ARCH=aarch64|riscv64 among the make arguments): its compiler is the triplet's
cc=gcc
for a in "$@"; do
	case "$a" in ARCH=*)
		t=$(sed -n "s/^ARCH(${a#ARCH=},\([^,]*,\)\{3\}\([^,)]*\).*/\2/p" arches.def | tr -d ' ')
		[ -z "$t" ] || [ "${a#ARCH=}" = "$(uname -m)" ] || cc=$t-gcc ;;
	esac
done
gcc=$($cc -dumpfullversion 2>/dev/null || echo none)
perf=none engine=none
if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
	perf=$(perf version 2>/dev/null | sed -n 's/^perf version \([0-9.]*\).*/\1/p' | head -1)
	opts=$(perf version --build-options 2>/dev/null)
	# perf's DWARF unwinder: libunwind when built with it, else libdw
	if echo "$opts" | grep -Eq '^ *libunwind: \[ on'; then engine=libunwind
	elif echo "$opts" | grep -Eq 'libdw(-dwarf-unwind)?: \[ on'; then engine=libdw; fi
fi
deps=ok
tools/install-deps --print 2>&1 | grep -q '^# all packages installed' || deps=missing
. /etc/os-release 2>/dev/null || true
echo "leg-info: os=${VERSION_CODENAME:-${ID:-?}} machine=$(uname -m) gcc=$gcc libunwind=$(ver libunwind-dev) elfutils=$(ver libdw-dev) binutils=$(ver binutils) glibc=$(ver libc6) capstone=$(ver libcapstone-dev) perf=$perf engine=$engine deps=$deps"
# compile with both cores, then the checks (-k: every failure is reported)
make --no-print-directory -j2 BUILD="$b" BIN="$b/jitunwind" "$@" all "$b/tests/check" || exit $?
exec make --no-print-directory -k BUILD="$b" BIN="$b/jitunwind" "$@" check
