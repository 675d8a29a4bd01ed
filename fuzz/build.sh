#!/bin/bash -eu
# Builds every libFuzzer target of jitunwind the way OSS-Fuzz and ClusterFuzzLite
# call a project's build script, so the same file serves both (and `make
# oss-fuzz-build` here):
#
#   in:  CC CXX CFLAGS CXXFLAGS LIB_FUZZING_ENGINE OUT (OSS-Fuzz's environment;
#        the sanitizer and coverage flags are in CFLAGS, the engine in
#        LIB_FUZZING_ENGINE), WORK (scratch, default a fresh mktemp -d),
#        JOBS (make -j, default nproc), JU_SEED_BIN (a jitunwind binary to
#        record the seeds with; default: one is built here without sanitizers),
#        JU_CHECK_BIN (optional: the Check suite, whose lint tests write crafted dumps)
#   out: $OUT/<target>, $OUT/<target>_seed_corpus.zip, $OUT/<target>.dict,
#        $OUT/<target>.options for each target below
#
# The sources are found next to this script, or in $SRC/jitunwind when it is run
# as $SRC/build.sh (fuzz/oss-fuzz/Dockerfile).
# Targets:
#   fuzz_case      the case-file parser and what the harness derives from a case
#   fuzz_samples   the samples-file reader and the replay of what it reads
#   fuzz_lint      the strict jitdump reader, .eh_frame parser, CFI interpreter, lint, dump
#   fuzz_perfdata  the perf.data reader
# The external libraries (libunwind, elfutils, capstone) are linked
# statically: OSS-Fuzz runs the targets in an image without the builder's
# packages.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# copied to $SRC/build.sh (OSS-Fuzz's and ClusterFuzzLite's place for it): the checkout is $SRC/jitunwind
[ -f "$ROOT/fuzz/fuzz_case.c" ] || ROOT=$SRC/jitunwind
: "${CC:?}" "${CXX:?}" "${CFLAGS:?}" "${LIB_FUZZING_ENGINE:?}" "${OUT:?}"
CXXFLAGS=${CXXFLAGS:-$CFLAGS}
WORK=${WORK:-$(mktemp -d)}
JOBS=${JOBS:-$(nproc)}
ARCH=$(uname -m | sed 's/arm64/aarch64/')
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
mkdir -p "$OUT" "$WORK"

TARGETS="fuzz_case:fuzz/fuzz_case.c fuzz_samples:fuzz/fuzz_samples.c
fuzz_lint:tests/fuzz/fuzz_lint.c fuzz_perfdata:tests/fuzz/fuzz_perfdata.c"

# 1. The project's library, instrumented: the Makefile's own source list and
# flags, with OSS-Fuzz's CFLAGS in place of -O2 -g (no -Werror: clang may warn
# where gcc does not).
make -C "$ROOT" --no-print-directory -j"$JOBS" BUILD="$WORK/lib" CC="$CC" \
	CFLAGS="$CFLAGS -Wno-unknown-warning-option" \
	WERROR= SAN= "$WORK/lib/libjitunwind.a"

# 2. The targets, linked by $CXX with the engine (libFuzzer is C++); -no-pie:
# Debian's libunwind-generic.a is not position-independent.
INC="-std=gnu11 -I$ROOT -D_GNU_SOURCE -DJU_ARCH_$ARCH -DJU_HOST_ARCH=$ARCH $($PKG_CONFIG --cflags libunwind-generic libdw libelf capstone)"
STATIC_LIBS="-Wl,-Bstatic $($PKG_CONFIG --static --libs libunwind-generic libdw libelf capstone |
	sed 's/-pthread//; s/-lpthread//g') -Wl,-Bdynamic -lpthread -lm"
for l in $STATIC_LIBS; do
	case "$l" in -l*)
		a=$($CC -print-file-name="lib${l#-l}.a")
		[ "$a" != "lib${l#-l}.a" ] || { echo "build.sh: lib${l#-l}.a not found: the targets link it statically (tools/install-deps installs it)" >&2; exit 1; } ;;
	esac
done
for t in $TARGETS; do
	name=${t%%:*}
	src=${t#*:}
	$CC $CFLAGS $INC -c "$ROOT/$src" -o "$WORK/$name.o"
	$CXX $CXXFLAGS -no-pie "$WORK/$name.o" -o "$OUT/$name" $LIB_FUZZING_ENGINE "$WORK/lib/libjitunwind.a" \
		$STATIC_LIBS
	cp "$ROOT/fuzz/$name.dict" "$OUT/$name.dict"
	cp "$ROOT/fuzz/$name.options" "$OUT/$name.options"
done

# 3. Seed corpora.  Case files from cases/; the samples files, jitdumps and
# perf.data files a record of each case writes (by a build without
# sanitizers); the samples files cut to a few samples with short stacks
# (fuzz/trim-samples: a whole one is megabytes); and every regression seed
# kept in fuzz/regress/<target>/ (the input of each crash the targets found).
SEEDS=$WORK/seeds
rm -rf "$SEEDS"
for t in $TARGETS; do
	mkdir -p "$SEEDS/${t%%:*}"
done
for c in "$ROOT"/cases/*/*.case; do
	cp "$c" "$SEEDS/fuzz_case/$(basename "$(dirname "$c")")-$(basename "$c")"
done
BIN=${JU_SEED_BIN:-}
if [ -z "$BIN" ]; then
	make -C "$ROOT" --no-print-directory -j"$JOBS" BUILD="$WORK/plain" BIN="$WORK/plain/jitunwind" \
		CC="$CC" CFLAGS="-O1 -g" WERROR= SAN= "$WORK/plain/jitunwind"
	BIN=$WORK/plain/jitunwind
fi
rec=$WORK/record
rm -rf "$rec"
mkdir -p "$rec"
nrec=0
for c in "$ROOT/cases/$ARCH"/*.case; do
	n=$(basename "$c" .case)
	mkdir -p "$rec/$n"
	# exit 1 is a case that missed its expectations: its files are seeds all the same
	if "$BIN" record -o "$rec/$n/s.samples" --jitdump-dir "$rec/$n" --perf-data "$rec/$n/s.data" \
		--stack-size 64 "$c" >/dev/null 2>"$rec/$n/err" || [ $? = 1 ]; then
		nrec=$((nrec + 1))
	else
		echo "build.sh: record of $c failed (no seeds from it): $(head -c 300 "$rec/$n/err")" >&2
		continue
	fi
	python3 "$ROOT/fuzz/trim-samples" "$rec/$n/s.samples" "$SEEDS/fuzz_samples/$n.samples"
	for d in "$rec/$n"/jit-*.dump; do
		[ -f "$d" ] && cp "$d" "$SEEDS/fuzz_lint/$n.dump"
	done
	[ -f "$rec/$n/s.data" ] && cp "$rec/$n/s.data" "$SEEDS/fuzz_perfdata/$n.data"
done
echo "build.sh: recorded seeds from $nrec cases of cases/$ARCH" >&2
# the lint suite's crafted dumps, one good and one bad per rule (a built tests/check)
if [ -n "${JU_CHECK_BIN:-}" ]; then
	JU_LINT_SEEDS="$SEEDS/fuzz_lint" JU_BIN="$BIN" CK_RUN_CASE=rules "$JU_CHECK_BIN" lint >/dev/null
fi
for t in $TARGETS; do
	name=${t%%:*}
	[ -d "$ROOT/fuzz/regress/$name" ] && cp "$ROOT/fuzz/regress/$name"/* "$SEEDS/$name/" 2>/dev/null || true
	rm -f "$OUT/${name}_seed_corpus.zip"
	(cd "$SEEDS/$name" && python3 -m zipfile -c "$OUT/${name}_seed_corpus.zip" .)
	echo "build.sh: $name: $(ls "$SEEDS/$name" | wc -l) seeds" >&2
done
