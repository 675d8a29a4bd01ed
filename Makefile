# jitunwind — build, run, test.  `make run`, `make check` (see README.md).
ARCH      ?= $(shell uname -m | sed 's/arm64/aarch64/')
HOSTARCH  := $(shell uname -m | sed 's/arm64/aarch64/')
BUILD     := build/$(ARCH)
PKG_CONFIG ?= pkg-config

ifeq ($(ARCH),$(HOSTARCH))
CC        ?= cc
RUNNER    :=
else ifeq ($(ARCH),aarch64)
CC        := aarch64-linux-gnu-gcc
export PKG_CONFIG_LIBDIR := /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
# make 4.3 does not export to $(shell): the :arm64 .pc files are named here too
PKG_CONFIG := PKG_CONFIG_LIBDIR=$(PKG_CONFIG_LIBDIR) $(PKG_CONFIG)
RUNNER    := qemu-aarch64
endif

PKGS      := libunwind-generic libdw libelf capstone check
DEPS_OK   := $(shell $(PKG_CONFIG) --exists $(PKGS) 2>/dev/null && echo yes)
# A missing package is installed before anything is built (as root), or the
# exact apt-get command is printed and make stops: once, never a loop.
ifneq ($(DEPS_OK),yes)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
DEPS_RUN  := $(shell tools/install-deps --ensure $(ARCH) >&2 && echo ok)
DEPS_OK   := $(shell $(PKG_CONFIG) --exists $(PKGS) 2>/dev/null && echo yes)
ifneq ($(DEPS_OK),yes)
$(error missing packages for ARCH=$(ARCH) (pkg-config $(PKGS)); see the message above)
endif
endif
endif
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs libunwind-generic libdw libelf capstone 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

WARN      := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wimplicit-fallthrough \
             -Wno-unused-parameter -Wno-format-truncation
ifeq ($(ARCH),x86_64)
FRAMEFLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls
else
FRAMEFLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls
endif
OPT       ?= -O2
CFLAGS    ?= $(OPT) -g
ifneq ($(CI),)
WERROR    := -Werror
endif
ALL_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) $(WERROR) $(FRAMEFLAGS) -fasynchronous-unwind-tables \
              -I. -D_GNU_SOURCE -DJU_ARCH_$(ARCH) $(PKG_CFLAGS) $(SAN) \
              -DUW_LU_HAVE_GLUE=$(if $(wildcard unwinders/libunwind_$(ARCH).c),1,0)
ALL_LDFLAGS := $(LDFLAGS) $(SAN)

# Files named *_<arch>.c / *_<arch>.S under harness/ and unwinders/ are built
# only for that arch; trampolines/<arch>.c encoders and the lint decoders
# unwinders/decode_<arch>.c are plain code over bytes and always built (a dump
# of any arch is linted on any host).
ARCHES    := x86_64 aarch64
OTHER     := $(filter-out $(ARCH),$(ARCHES))
ALL_SRC   := $(wildcard trampolines/*.c unwinders/*.c harness/*.c)
ARCH_ONLY := $(filter-out unwinders/decode_%.c,$(filter $(foreach a,$(OTHER),%_$(a).c),$(ALL_SRC)))
LIB_SRC   := $(filter-out harness/main.c $(ARCH_ONLY),$(ALL_SRC))
ASM_SRC   := $(wildcard harness/*_$(ARCH).S)
LIB_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC)) $(patsubst %.S,$(BUILD)/%.o,$(ASM_SRC))
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRC))

ifeq ($(ARCH),$(HOSTARCH))
BIN       := jitunwind
else
BIN       := $(BUILD)/jitunwind
endif
CHECKBIN  := $(BUILD)/tests/check

.PHONY: all run check check-asan bench bench-replay deps clean unit cases matrix cross-replay fuzz perf-e2e goldens lint-vs-run
all: deps $(BIN)

deps:
	@true

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) -MMD -MP -c $< -o $@

# Host builds ([sample] host, harness/host.h): the C around a trampoline
# without frame pointers, or without them in leaves only.  These flags come
# after FRAMEFLAGS and win; no sanitizer, so the code is what a release
# build runs (tests/test_host.c checks the result).
$(BUILD)/harness/host_nofp.o: OBJ_CFLAGS := -fomit-frame-pointer -momit-leaf-frame-pointer -fno-sanitize=all
$(BUILD)/harness/host_nofpleaf.o: OBJ_CFLAGS := -momit-leaf-frame-pointer -fno-sanitize=all

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libjitunwind.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/harness/main.o $(BUILD)/libjitunwind.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm

$(CHECKBIN): $(TEST_OBJ) $(BUILD)/libjitunwind.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(CHECK_LIBS) -lm

run: all
	$(RUNNER) ./$(BIN) run cases/$(ARCH)

unit: deps $(CHECKBIN) $(BIN)
	cd $(CURDIR) && JU_BIN="$(strip $(RUNNER) $(CURDIR)/$(BIN))" $(RUNNER) $(CHECKBIN)

cases: deps $(BIN)
	$(RUNNER) ./$(BIN) run --json $(BUILD)/report.json cases/$(ARCH)

check: unit cases lint-vs-run
# the goldens are the normal build's behaviour: an ASan build's frames below the anchor (which
# no verdict compares) differ, so check-asan leaves them out (GOLDENS=no)
GOLDENS ?= yes
ifeq ($(GOLDENS),yes)
check: goldens
endif

# lint catches what run finds: every trampoline offset where a DWARF unwinder
# loses the caller in cases/$(ARCH) is named by a lint finding on that dump.
lint-vs-run: deps $(BIN)
	tests/lint_vs_run.py --arch $(ARCH) --bin ./$(BIN) $(if $(RUNNER),--runner $(RUNNER))

# Behaviour goldens (tools/goldens): every verdict, frame and flag of run --json, every lint
# finding and dump line of the cases, normalized; a change must be explained and re-saved.
goldens: deps $(BIN)
	tools/goldens --arch $(ARCH) --bin ./$(BIN) $(if $(RUNNER),--runner $(RUNNER)) compare

# The kernel's own FP walk at every spin point of a few cases (README "Spin points and
# kernel-fp"): kernel-fp must match the truth as fp does and equal its chain; perf_event_open
# refused (paranoid, qemu-user's ENOSYS) prints why and skips.
KFP_CASES_x86_64  := nested-depth3 cpython-3.13-fp stack-deep
KFP_CASES_aarch64 := nested-depth3 cpython-aarch64 jit-leaf-frameless
check: kernel-fp
.PHONY: kernel-fp
kernel-fp: deps $(BIN)
	@$(RUNNER) ./$(BIN) run --unwinders fp,kernel-fp,libunwind,libdw,oracle \
	  $(foreach c,$(KFP_CASES_$(ARCH)),cases/$(ARCH)/$(c).case) >$(BUILD)/kernel-fp.txt; rc=$$?; \
	  tail -n 3 $(BUILD)/kernel-fp.txt; \
	  if [ $$rc = 77 ]; then grep -m1 perf_event_open $(BUILD)/kernel-fp.txt; echo "kernel-fp: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/kernel-fp.txt; exit $$rc; fi

# Real perf is the `perf` column of `make cases` (on by default where perf
# works; `jitunwind: skip: the perf column: ...` where not).  tools/perf-e2e
# (perf record of the live run, symbol-matched at the callee) runs by hand only.
perf-e2e: deps $(BIN)
	@tools/perf-e2e --bin ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "perf-e2e: skipped (see the reason above)"; else exit $$rc; fi

# Another arch's build (qemu-user on this host): its samples also replay on
# this host's native build, with the same verdicts (tools/cross-replay).
ifneq ($(ARCH),$(HOSTARCH))
check: cross-replay
endif
cross-replay: deps $(BIN)
	@env -u PKG_CONFIG_LIBDIR $(MAKE) --no-print-directory ARCH=$(HOSTARCH) all
	tools/cross-replay --arch $(ARCH) --runner "$(RUNNER)" --bin $(BIN) --native ./jitunwind

# make check per Debian suite x arch, each in a root built here (tools/rootfs: mmdebstrap,
# podman or a chroot, qemu-user-static for arm64); not part of check (minutes per root).
# MATRIX_ARGS: e.g. "--json m.json trixie-amd64 sid-amd64"
matrix:
	tools/matrix $(MATRIX_ARGS)

check-asan:
	$(MAKE) --no-print-directory BUILD=build/$(ARCH)-asan BIN=build/$(ARCH)-asan/jitunwind \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" OPT=-O1 GOLDENS=no check

bench: all
	$(RUNNER) ./$(BIN) bench cases/$(ARCH)
	@s=$$(date +%s%N); $(RUNNER) ./$(BIN) run cases/$(ARCH) >/dev/null; e=$$(date +%s%N); \
	  awk -v s=$$s -v e=$$e 'BEGIN { printf "  whole run of cases/$(ARCH): %.3f s wall\n", (e - s) / 1e9 }'
	@$(MAKE) --no-print-directory bench-lint
	@$(MAKE) --no-print-directory bench-replay

# the Debian roots under build/roots/ stay (slow to rebuild): tools/rootfs clean removes them
clean:
	find build -mindepth 1 -maxdepth 1 ! -name roots -exec rm -rf {} + 2>/dev/null || true
	rm -f jitunwind

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/harness/main.d

# ---- jitunwind lint: fuzzing and throughput (tests/fuzz/, tools/gen-big-dump.c) ----
# make fuzz: a libFuzzer target (clang, ASan + UBSan) over the strict jitdump
# reader, the .eh_frame/.eh_frame_hdr parser and CFI interpreter, the linter and
# `dump`, for FUZZ_SECONDS.  Seeds: the dump of every case (run --jitdump-dir)
# and the lint suite's crafted dumps.  Fails on a crash; artifacts/ keeps it.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_DIR     := build/$(ARCH)-fuzz
FUZZ_SRC     := tests/fuzz/fuzz_lint.c unwinders/jdwalk.c unwinders/jitdump.c unwinders/ehframe.c \
                unwinders/lint.c unwinders/lint_hist.c unwinders/lint_code.c unwinders/lint_unwind.c \
                unwinders/lint_read.c unwinders/decode.c unwinders/decode_x86_64.c \
                unwinders/decode_aarch64.c unwinders/perfview.c unwinders/view.c harness/lintcmd.c \
                harness/dumpcmd.c harness/dump_text.c harness/dump_json.c harness/jsonw.c unwinders/uwarch.c
FUZZ_FLAGS   := -std=gnu11 -O1 -g -I. -D_GNU_SOURCE -DJU_ARCH_$(ARCH) $(PKG_CFLAGS) -Wall -Wextra \
                -Wno-unused-parameter -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(FUZZ_DIR)/fuzz_lint: $(FUZZ_SRC) $(wildcard unwinders/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_SRC) -o $@ $(PKG_LIBS) -lm

# the perf.data reader (tests/fuzz/fuzz_perfdata.c), seeded with record --perf-data files
$(FUZZ_DIR)/fuzz_perfdata: tests/fuzz/fuzz_perfdata.c unwinders/perfdata.c unwinders/perfdata.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_perfdata.c unwinders/perfdata.c -o $@

fuzz: deps $(BIN) $(CHECKBIN) $(FUZZ_DIR)/fuzz_lint $(FUZZ_DIR)/fuzz_perfdata
	@rm -rf $(FUZZ_DIR)/run $(FUZZ_DIR)/seeds
	@mkdir -p $(FUZZ_DIR)/run $(FUZZ_DIR)/seeds $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	$(RUNNER) ./$(BIN) run --unwinders oracle --jitdump-dir $(FUZZ_DIR)/run cases/$(ARCH) >/dev/null || test $$? = 1
	cp $(FUZZ_DIR)/run/jit-*.dump $(FUZZ_DIR)/seeds/
	JU_LINT_SEEDS=$(CURDIR)/$(FUZZ_DIR)/seeds JU_BIN=$(CURDIR)/$(BIN) CK_RUN_CASE=rules $(RUNNER) $(CHECKBIN) lint >/dev/null
	@echo "fuzz: $$(ls $(FUZZ_DIR)/seeds | wc -l) seeds, $(FUZZ_SECONDS) s"
	@cd $(FUZZ_DIR) && ./fuzz_lint -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	  -artifact_prefix=artifacts/ corpus seeds >fuzz.log 2>&1; rc=$$?; \
	  grep -E 'DONE|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|^artifact' fuzz.log; \
	  test $$rc = 0 || { echo "fuzz: crash, see $(FUZZ_DIR)/fuzz.log and $(FUZZ_DIR)/artifacts"; exit 1; }
	@rm -rf $(FUZZ_DIR)/pd-seeds && mkdir -p $(FUZZ_DIR)/pd-seeds $(FUZZ_DIR)/pd-corpus
	$(RUNNER) ./$(BIN) record -o $(FUZZ_DIR)/pd-seeds/s --jitdump-dir $(FUZZ_DIR)/run \
	  --perf-data $(FUZZ_DIR)/pd-seeds/all.data --stack-size 512 cases/$(ARCH) >/dev/null || test $$? = 1
	@rm -f $(FUZZ_DIR)/pd-seeds/s
	@echo "fuzz: perf.data reader, $(FUZZ_SECONDS) s"
	@cd $(FUZZ_DIR) && ./fuzz_perfdata -max_total_time=$(FUZZ_SECONDS) -max_len=1048576 -print_final_stats=1 \
	  -artifact_prefix=artifacts/ pd-corpus pd-seeds >fuzz-pd.log 2>&1; rc=$$?; \
	  grep -E 'DONE|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|^artifact' fuzz-pd.log; \
	  test $$rc = 0 || { echo "fuzz: crash, see $(FUZZ_DIR)/fuzz-pd.log and $(FUZZ_DIR)/artifacts"; exit 1; }

# make bench-lint (part of make bench): lint throughput and peak memory on a
# generated dump of BIG_DUMP_MB MB with many loads.
BIG_DUMP_MB ?= 128
.PHONY: bench-lint
$(BUILD)/tools/gen-big-dump: tools/gen-big-dump.c $(BUILD)/libjitunwind.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(BUILD)/libjitunwind.a $(PKG_LIBS) -lm

$(BUILD)/bench-lint/jit-1.dump: $(BUILD)/tools/gen-big-dump
	@mkdir -p $(dir $@)
	$(RUNNER) $(BUILD)/tools/gen-big-dump $@ $(BIG_DUMP_MB)

# replay of a real recording (node, this host's perf): rate per unwinder against perf script,
# peak RSS on the recording grown to 10,000 and BENCH_SAMPLES samples (tools/bench-replay)
BENCH_SAMPLES ?= 100000
bench-replay: deps $(BIN)
	$(if $(RUNNER),@echo "bench-replay: skipped: the recording is made on this host's arch",tools/bench-replay --bin ./$(BIN) --samples $(BENCH_SAMPLES) || test $$? = 77)

bench-lint: deps $(BIN) $(BUILD)/bench-lint/jit-1.dump
	$(RUNNER) ./$(BIN) lint --stats $(BUILD)/bench-lint/jit-1.dump >/dev/null || test $$? = 1   # findings are expected: the figure is the point
