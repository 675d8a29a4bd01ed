#!/usr/bin/env python3
"""`jitunwind trace` on HotSpot: this machine's OpenJDK (17 on Debian 12) with perf's own JVMTI
agent (libperf-jvmti.so, built from Debian's linux-source by tools/build-jvmti), a class with
a recursive static fib, traced with --only '*fib*' under --time (60 s: the JVM must end on
its own well before) twice: with HotSpot's default (-XX:-PreserveFramePointer: compiled code
uses rbp as a general register) and with -XX:+PreserveFramePointer.  Flags, each for a
reason: -XX:-TieredCompilation (one compiled fib, C2's), -Xbatch (fib compiled in the
foreground at its 10,000th call: the compiled code runs at the same point of every run).

  tests/trace/hotspot_test.py JITUNWIND        (JU_TRACE_LONG=1: a longer workload)

Checks, each against a source of its own:
  - the JVM exits with status 0 and prints the sum Python computes (not corrupted);
  - compiled fib (its CODE_LOAD read here from the jitdump by real_test.py's reader) is
    sampled, at offsets binutils' objdump decodes in the dump's code bytes;
  - the dump holds no CODE_UNWINDING_INFO record (the agent writes none);
  - the verdicts at the samples with a truth by execution agree with real perf on an
    untraced run of the same program (perf record at 2 kHz, perf inject -j, perf script):
    a column is ok at fib's samples exactly where real perf's chains with fib as the leaf
    go on to fib (its caller): fp as `perf record -g`, perf and perf's DWARF engine (libunwind
    or libdw, from `perf version --build-options`) as `--call-graph dwarf`.
Exit 0 passed, 1 failed, 77 cannot run here (no java/javac, no agent, no ptrace: the reason).
"""
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from importlib.machinery import SourceFileLoader

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
real = SourceFileLoader("real_test", os.path.join(HERE, "real_test.py")).load_module()
vmfiles = SourceFileLoader("vmfiles", os.path.join(HERE, "vmfiles.py")).load_module()
fails = []
checks = 0
JAVA = """public class Fib {
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    public static void main(String[] a) {
        long s = 0;
        int n = Integer.parseInt(a[1]);
        for (int i = 0; i < Integer.parseInt(a[0]); i++) s += fib(n);
        System.out.println("sum " + s);
    }
}
"""
# -XX:-UsePerfData: no jvmstat file, so no /tmp/hsperfdata_USER left behind (the JIT the same)
FLAGS = ["-Xbatch", "-XX:-TieredCompilation", "-XX:-UsePerfData"]

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


def perf_second_frame(java, agent, pfp, cg, d):
    """real perf on an untraced run: of the samples whose leaf is Fib.fib, the share whose
    next frame is Fib.fib too; or None with why"""
    data, jdata = os.path.join(d, "p.data"), os.path.join(d, "pj.data")
    p = subprocess.run(["perf", "record", "-q", "-o", data, "-F", "2000", "-k", "1", "--call-graph", cg, "--",
                        java, "-agentpath:" + agent, pfp] + FLAGS + ["-cp", d, "Fib", "60", "30"],
                       capture_output=True, text=True, timeout=300, env=agent_env(d))
    if p.returncode:
        return None, "perf record: rc %d %s" % (p.returncode, p.stderr.strip()[-200:])
    subprocess.run(["perf", "inject", "-j", "-i", data, "-o", jdata], capture_output=True, timeout=300)
    out = subprocess.run(["perf", "script", "-i", jdata, "-F", "ip,sym"], capture_output=True, text=True,
                         timeout=300).stdout
    leaf = on = 0
    for b in out.strip().split("\n\n"):
        fr = [ln.split(None, 1) for ln in b.strip().split("\n") if ln.strip()]
        if fr and len(fr[0]) > 1 and fr[0][1].startswith("Fib.fib"):
            leaf += 1
            on += len(fr) > 1 and len(fr[1]) > 1 and fr[1][1].startswith("Fib.fib")
    if leaf < 50:
        return None, "only %d samples in Fib.fib" % leaf
    return on / leaf, "%d of %d samples in Fib.fib go on to Fib.fib" % (on, leaf)


def agent_env(d):
    """perf's JVMTI agent writes its jitdump (and perf inject its jitted .so files) under
    $JITDUMPDIR/.debug/jit/java-jit-*, else under $HOME: the test's directory, removed with it"""
    return dict(os.environ, JITDUMPDIR=d)


def traced(binary, java, agent, pfp, d, rounds, n, long):
    js = os.path.join(d, "t%s.json" % pfp[4])
    cmd = [binary, "trace", "--only", "*fib*", "--time", "60", "--hits", "20" if long else "3", "--json", js] + HW + [
           "--", java, "-agentpath:" + agent, pfp] + FLAGS + ["-cp", d, "Fib", str(rounds), str(n)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=d, env=agent_env(d))
    said_sampling(p.stdout)
    return p, js


def judge_run(binary, java, agent, pfp, d, long, real_perf):
    rounds, n = (5, 22) if long else (3, 20)
    p, js = traced(binary, java, agent, pfp, d, rounds, n, long)
    what = "HotSpot %s" % pfp
    if p.returncode == 77:
        return 77, (p.stdout + p.stderr).strip()[-300:]
    check(p.returncode == 0 and "exited with status 0" in p.stdout and "sum %d" % (rounds * fib(n)) in p.stdout,
          "%s: the JVM exits with status 0 and prints sum %d (rc %d: %s)"
          % (what, rounds * fib(n), p.returncode, (p.stdout + p.stderr)[-800:]))
    dump = re.search(r"jitdump (\S+) \(", p.stdout)
    if not check(dump, what + ": the report names the jitdump"):
        return 1, ""
    recs = list(real.records(dump.group(1)))
    check(not [r for r in recs if r[0] == 4], what + ": the agent wrote no CODE_UNWINDING_INFO")
    ld = real.loads(dump.group(1))
    fibs = [k for k in ld if k.startswith("LFib;fib")]
    if not check(len(fibs) == 1, what + ": one compiled fib in the jitdump (%s)" % fibs):
        return 1, ""
    addr, code, _ = ld[fibs[0]]
    offs = set(real.objdump_offsets(code))
    with open(js) as f:
        rep = json.load(f)
    ss = [s for c in rep["cases"] if c["name"] == fibs[0] for s in c["samples"]]
    check(len(ss) >= 20 and {s["offset"] for s in ss} <= offs,
          "%s: compiled fib sampled (%d samples) at boundaries objdump decodes" % (what, len(ss)))
    # the samples with a truth by execution reaching fib's caller
    tr = [s for s in ss if not s.get("truth_of") and len(s["truth"]) >= 2]
    check(len(tr) >= 5, "%s: %d samples with a truth of two frames or more" % (what, len(tr)))
    ok = {}
    for u in tr[0]["unwinders"] if tr else []:
        ok[u] = sum(s["unwinders"][u]["verdict"] == "ok" for s in tr) / len(tr)
    for cg, cols in real_perf.items():
        share, why = perf_second_frame(java, agent, pfp, cg, d)
        if share is None:
            print("SKIP %s: real perf --call-graph %s: %s (trace's verdicts unchecked against it)" % (what, cg, why))
            continue
        for u in cols:
            if u in ok:
                check((ok[u] > 0.5) == (share > 0.5),
                      "%s: %s ok at %.0f%% of fib's samples; real perf --call-graph %s: %s"
                      % (what, u, 100 * ok[u], cg, why))
    return 0, "%s: %d samples of fib, %d with a truth; ok share %s" % (
        what, len(ss), len(tr), ", ".join("%s %.0f%%" % (u, 100 * v) for u, v in sorted(ok.items())))


def main():
    with vmfiles.Cleanup("ju-hotspot-") as vm:
        return run(vm)


def run(vm):
    binary = os.path.abspath(sys.argv[1])
    long = os.environ.get("JU_TRACE_LONG") == "1"
    java, javac = shutil.which("java"), shutil.which("javac")
    if os.environ.get("RUNNER") or platform.machine() != "x86_64" or not java or not javac:
        print("SKIP trace-hotspot: %s" % ("under a RUNNER (no ptrace)" if os.environ.get("RUNNER") else
                                          "no tracer for %s" % platform.machine() if platform.machine() != "x86_64"
                                          else "no java/javac on PATH (apt-get install openjdk-17-jdk-headless)"))
        return 77
    b = subprocess.run([os.path.join(ROOT, "tools", "build-jvmti")], capture_output=True, text=True, timeout=900)
    if b.returncode:
        print("SKIP trace-hotspot: tools/build-jvmti: %s" % b.stderr.strip()[-300:])
        return 77 if b.returncode == 77 else 1
    agent = b.stdout.strip()
    ver = subprocess.run([java, "-XX:-UsePerfData", "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    d = vm.dir
    with open(os.path.join(d, "Fib.java"), "w") as f:
        f.write(JAVA)
    subprocess.run([javac, "-J-XX:-UsePerfData", "-d", d, os.path.join(d, "Fib.java")], check=True, timeout=300)
    bo = subprocess.run(["perf", "version", "--build-options"], capture_output=True, text=True).stdout \
        if shutil.which("perf") else ""
    engine = "libunwind" if re.search(r"^\s*libunwind:\s*\[\s*on", bo, re.M) else "libdw"
    real_perf = {"fp": ["fp"], "dwarf": ["perf", engine]} if bo else {}
    if not bo:
        print("SKIP trace-hotspot: no perf on PATH (trace's verdicts unchecked against real perf)")
    said = []
    for pfp in ("-XX:-PreserveFramePointer", "-XX:+PreserveFramePointer"):
        rc, line = judge_run(binary, java, agent, pfp, d, long, real_perf)
        if rc == 77:
            print(line)
            return 77
        said.append(line)
    print("\n".join(said))
    print("trace-hotspot: %d checks, %d failed (%s, perf's JVMTI agent %s)" % (checks, len(fails), ver, agent))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
