#!/usr/bin/env python3
"""`jitunwind trace` on Erlang's BeamAsm: this machine's erl (erlang-base; OTP 25 on Debian 12)
with +JPperf dump (a jitdump: OTP 25's +JPperf true writes it and a perf map, map the map
alone), one scheduler (+S 1), a module with a recursive fib, --only 'fib:fib/1'.

  tests/trace/erlang_test.py JITUNWIND

Checks, each against a source of its own:
  - erl exits with status 0 printing fib(22) (the runtime not corrupted: BeamAsm announces
    data as loads, a module's codeHeader and each function's CodeInfoPrologue, and before
    trace left loads it cannot decode alone, the runtime died of SIGSEGV);
  - objdump finds bytes it cannot decode ("(bad)") in erts_beamasm::codeHeader, and trace
    counts loads not all code;
  - fib:fib/1 sampled at offsets objdump decodes in the dump's bytes; no UNWINDING_INFO;
  - each column's verdicts at fib's samples with a truth of two frames agree with real perf
    on an untraced run (perf record -g / --call-graph dwarf, perf inject -j): ok where real
    perf's chains with fib as the leaf go on to fib, not ok where they do not.
Exit 0 passed, 1 failed, 77 cannot run here (no erl/erlc, no ptrace: the reason).
"""
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader

HERE = os.path.dirname(os.path.abspath(__file__))
real = SourceFileLoader("real_test", os.path.join(HERE, "real_test.py")).load_module()
vmfiles = SourceFileLoader("vmfiles", os.path.join(HERE, "vmfiles.py")).load_module()
fails = []
checks = 0
SRC = """-module(fib).
-export([main/0, main/1]).
fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).
main() -> main(["22"]).
main([A]) ->
    io:format("fib ~p~n", [fib(list_to_integer(A))]),
    halt(0).
"""

# JU_TRACE_HW=1: the boundaries past an entry sampled by hardware breakpoints (the same checks)
HW = ["--hw-breakpoints"] if os.environ.get("JU_TRACE_HW") == "1" else []


def said_sampling(out):
    """which path sampled (the header's line), shown"""
    for line in out.splitlines():
        if "sampling:" in line:
            print("  " + line.strip())


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        fails.append(what)
        print("FAIL " + what)
    return cond


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def erl_cmd(erl, d, n):
    return [erl, "-noshell", "+JPperf", "dump", "+S", "1", "-pa", d, "-run", "fib", "main", str(n)]


def perf_second_frame(erl, d, cg, vm):
    """erl's /tmp/jit-PID.dump, perf-PID.map and perf inject's jitted-PID-N.so (15,000 files) go
    with vm, by the pid the wrapper writes"""
    data, jdata = os.path.join(d, "p.data"), os.path.join(d, "pj.data")
    p = subprocess.run(["perf", "record", "-q", "-o", data, "-F", "4000", "-k", "1", "--call-graph", cg, "--"] +
                       vm.wrap(erl_cmd(erl, d, 32)), capture_output=True, text=True, timeout=300, cwd=d)
    if p.returncode:
        return None, "perf record: rc %d %s" % (p.returncode, p.stderr.strip()[-200:])
    subprocess.run(["perf", "inject", "-j", "-i", data, "-o", jdata], capture_output=True, timeout=300)
    out = subprocess.run(["perf", "script", "-i", jdata, "-F", "ip,sym"], capture_output=True, text=True,
                         timeout=300).stdout
    leaf = on = 0
    for b in out.strip().split("\n\n"):
        fr = [ln.split(None, 1) for ln in b.strip().split("\n") if ln.strip()]
        if fr and len(fr[0]) > 1 and fr[0][1].startswith("fib:fib/1"):
            leaf += 1
            on += len(fr) > 1 and len(fr[1]) > 1 and fr[1][1].startswith("fib:fib/1")
    if leaf < 20:
        return None, "only %d samples in fib:fib/1" % leaf
    return on / leaf, "%d of %d samples in fib:fib/1 go on to fib:fib/1" % (on, leaf)


def main():
    with vmfiles.Cleanup("ju-erlang-") as vm:
        return run(vm)


def run(vm):
    binary = os.path.abspath(sys.argv[1])
    erl, erlc = shutil.which("erl"), shutil.which("erlc")
    if os.environ.get("RUNNER") or platform.machine() != "x86_64" or not erl or not erlc:
        print("SKIP trace-erlang: %s" % ("under a RUNNER (no ptrace)" if os.environ.get("RUNNER") else
                                         "no tracer for %s" % platform.machine() if platform.machine() != "x86_64"
                                         else "no erl/erlc on PATH (apt-get install erlang-base)"))
        return 77
    d = vm.dir
    with open(os.path.join(d, "fib.erl"), "w") as f:
        f.write(SRC)
    subprocess.run([erlc, "-o", d, os.path.join(d, "fib.erl")], check=True, timeout=300)
    js = os.path.join(d, "t.json")
    p = subprocess.run([binary, "trace", "--only", "fib:fib/1", "--time", "120", "--json", js] + HW + ["--"] +
                       erl_cmd(erl, d, 22), capture_output=True, text=True, timeout=600, cwd=d)
    vm.trace_pid(p.stdout)
    said_sampling(p.stdout)
    if p.returncode == 77:
        print((p.stdout + p.stderr).strip()[-300:])
        return 77
    check(p.returncode == 0 and "exited with status 0" in p.stdout and "fib %d" % fib(22) in p.stdout,
          "erl exits 0 printing fib %d (rc %d: %s)" % (fib(22), p.returncode, (p.stdout + p.stderr)[-600:]))
    dump = re.search(r"jitdump (\S+) \(", p.stdout)
    if not check(dump, "the report names the jitdump"):
        return 1
    dump = dump.group(1)
    check(not [r for r in real.records(dump) if r[0] == 4], "BeamAsm wrote no CODE_UNWINDING_INFO")
    ld = real.loads(dump)
    hdr = ld.get("erts_beamasm::codeHeader")
    bad = 0
    if hdr:
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(hdr[1])
            f.flush()
            bad = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f.name],
                                 capture_output=True, text=True).stdout.count("(bad)")
    m = re.search(r"(\d+) loads whose bytes are not all code", p.stdout)
    check(bad and m and int(m.group(1)) > 0, "objdump finds %s undecodable bytes in erts_beamasm::codeHeader; "
          "trace counts %s loads not all code" % (bad, m and m.group(1)))
    if not check("fib:fib/1" in ld, "fib:fib/1 in the jitdump"):
        return 1
    addr, code, _ = ld["fib:fib/1"]
    offs = set(real.objdump_offsets(code))
    with open(js) as f:
        rep = json.load(f)
    ss = [s for c in rep["cases"] if c["name"] == "fib:fib/1" for s in c["samples"]]
    check(len(ss) >= 20 and {s["offset"] for s in ss} <= offs,
          "fib:fib/1 sampled (%d samples) at boundaries objdump decodes" % len(ss))
    tr = [s for s in ss if not s.get("truth_of") and len(s["truth"]) >= 2]
    check(len(tr) >= 10, "%d samples with a truth of two frames or more" % len(tr))
    ok = {u: sum(s["unwinders"][u]["verdict"] == "ok" for s in tr) / len(tr) for u in (tr[0]["unwinders"] if tr else [])}
    bo = subprocess.run(["perf", "version", "--build-options"], capture_output=True, text=True).stdout \
        if shutil.which("perf") else ""
    engine = "libunwind" if re.search(r"^\s*libunwind:\s*\[\s*on", bo, re.M) else "libdw"
    for cg, cols in ({"fp": ["fp"], "dwarf": ["perf", engine]} if bo else {}).items():
        share, why = perf_second_frame(erl, d, cg, vm)
        if share is None:
            print("SKIP trace-erlang: real perf --call-graph %s: %s" % (cg, why))
            continue
        for u in cols:
            if u in ok:
                check((ok[u] > 0.5) == (share > 0.5), "%s ok at %.0f%% of fib's samples; real perf --call-graph %s: %s"
                      % (u, 100 * ok[u], cg, why))
    ver = subprocess.run([erl, "-noshell", "-eval", "io:format(\"~s\", [erlang:system_info(otp_release)]), halt()."],
                         capture_output=True, text=True, timeout=120).stdout.strip()
    print("trace-erlang: %d checks, %d failed (OTP %s: fib:fib/1 %d samples, %d with a truth; ok share %s)"
          % (checks, len(fails), ver, len(ss), len(tr), ", ".join("%s %.0f%%" % (u, 100 * v) for u, v in sorted(ok.items()))))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
