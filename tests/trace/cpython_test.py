#!/usr/bin/env python3
"""`jitunwind trace` on CPython 3.13 (Debian trixie) and 3.15 (sid) with -X perf_jit, run here
on their own loaders and libraries (tools/in-root --only python3.X SUITE), real_test.py's
recursive script (3.14 is real_test.py's).  3.13's trampoline keeps no frame pointer (sub/add
rsp); 3.15's sets one up (push rbp; mov rsp,rbp; ... pop rbp) and its jitdump salts each
load's last 8 code bytes (they are not the code).

  tests/trace/cpython_test.py JITUNWIND [3.13] [3.15]

Checks, each against a source of its own:
  - the interpreter exits with status 0 printing fib(12) = 144, every boundary of every
    trampoline sampled;
  - py::fib's sampled offsets: 3.13, the instructions objdump decodes in the dump's bytes;
    3.15, every point the load's own FDE program advances to (the dump's bytes past the
    endbr64 are the salt: real_test.py's reader finds them differing between the loads
    while the first 4 bytes agree, and trace counts every load salted, once);
  - the truth at the entry is the return address the sample's stack holds at [sp];
  - the DWARF columns (libunwind, libdw, and real perf where it runs) are not ok exactly at
    the offsets where `jitunwind lint` of the same dump reports JD057 (3.15: the ret, as
    3.14; 3.13: nowhere); fp is not ok at every boundary where lint says the trampoline
    makes no frame (JD084, 3.13), and at 3.15's call its chain is the truth's up to the
    frame in py::<module>.
Exit 0 passed, 1 failed, 77 cannot run here (no ptrace, no root can be built: the reason).
"""
import json
import os
import re
import subprocess
import sys
from importlib.machinery import SourceFileLoader

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
real = SourceFileLoader("real_test", os.path.join(HERE, "real_test.py")).load_module()
vmfiles = SourceFileLoader("vmfiles", os.path.join(HERE, "vmfiles.py")).load_module()
SUITE = {"3.13": "trixie", "3.15": "sid"}
fails = []
checks = 0

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


def advances(prog):
    """the code offsets a CFA program advances to (DW_CFA_advance_loc and advance_loc1)"""
    at, i, out = 0, 0, []
    while i < len(prog):
        op = prog[i]
        i += 1
        if op >> 6 == 1:
            at += op & 0x3f
            out.append(at)
        elif op >> 6 == 2:                   # DW_CFA_offset reg, ULEB
            while prog[i] & 0x80:
                i += 1
            i += 1
        elif op == 0x02:
            at += prog[i]
            i += 1
            out.append(at)
        elif op in (0x0c,):                  # def_cfa reg, off
            i += 2
        elif op in (0x0d, 0x0e):             # def_cfa_register / def_cfa_offset
            i += 1
        elif op >> 6 == 3 or op == 0:
            pass
        else:
            return out                       # an op this reader does not know: what it has
    return out


def lint_offsets(binary, dump, rec_of):
    """{id: {offsets}} of the findings of lint --json in the CODE_LOAD at rec_of"""
    lj = subprocess.run([binary, "lint", "--json", "--all", dump], capture_output=True, text=True, timeout=600)
    found = {}
    for f in json.loads(lj.stdout)["files"][0]["findings"]:
        if f.get("load") == rec_of:
            found.setdefault(f["id"], set()).update(f.get("code_offsets", []) or [-1])
    return found


def one(binary, ver, d, vm):
    script = os.path.join(d, "w.py")
    with open(script, "w") as f:
        f.write("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint(fib(12))\n")
    js = os.path.join(d, "t%s.json" % ver)
    cmd = [binary, "trace", "--json", js] + HW + ["--", os.path.join(ROOT, "tools", "in-root"), "--only",
           "python" + ver, SUITE[ver], "python" + ver, "-X", "perf_jit", script]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=d)
    vm.trace_pid(p.stdout)                   # its /tmp/jit-PID.dump goes at the end
    said_sampling(p.stdout)
    if p.returncode == 77 or ("tools/in-root" in p.stderr or "tools/rootfs" in p.stderr) and \
            "exited with status 0" not in p.stdout:
        return "SKIP CPython %s: %s" % (ver, (p.stdout + p.stderr).strip()[-300:])
    what = "CPython %s" % ver
    check(p.returncode == 0 and "exited with status 0" in p.stdout and re.search(r"^144$", p.stdout, re.M),
          "%s: exits 0 printing 144 (rc %d: %s)" % (what, p.returncode, (p.stdout + p.stderr)[-600:]))
    rows = re.findall(r"^\s+0x([0-9a-f]+)\s+(\d+)/(\d+)\s+(\S.*)$", p.stdout, re.M)
    check(len(rows) > 50 and all(a == b for _, a, b, _ in rows), "%s: every boundary of all %d trampolines sampled"
          % (what, len(rows)))
    dump = re.search(r"jitdump (\S+) \(", p.stdout)
    if not check(dump, what + ": the report names the jitdump"):
        return None
    dump = dump.group(1)
    ld = real.loads(dump)
    recs, nload = {}, 0
    for rid, off, body in real.records(dump):
        if rid == 0:
            end = body.index(b"\0", 40)
            recs[body[40:end].decode()] = off
            nload += 1
    fib = [n for n in ld if n.startswith("py::fib:")]
    if not check(len(fib) == 1, "%s: one load of py::fib (%s)" % (what, fib)):
        return None
    addr, code, prog = ld[fib[0]]
    with open(js) as f:
        rep = json.load(f)
    ss = {s["offset"]: s for c in rep["cases"] if c["name"] == fib[0] for s in c["samples"]}
    if ver == "3.13":
        offs = real.objdump_offsets(code)
        check(sorted(ss) == offs, "%s: py::fib sampled at the offsets objdump decodes (%s, %s)" % (what, sorted(ss), offs))
    else:
        adv = advances(prog)
        check(adv and set(adv) <= set(ss), "%s: py::fib sampled at every point its FDE advances to (%s in %s)"
              % (what, adv, sorted(ss)))
        heads = {c[:4] for _, c, _ in ld.values()}
        tails = {c[-8:] for _, c, _ in ld.values()}
        check(len(heads) == 1 and len(tails) > len(ld) // 2,
              "%s: every load's first 4 bytes alike, its last 8 a salt (%d distinct tails of %d loads)"
              % (what, len(tails), len(ld)))
        check("%d loads whose jitdump copy differs from memory only in its last 8" % nload in p.stdout and
              p.stderr.count("a salt, not the code") == 1,
              "%s: trace counts the %d salted loads, one finding line" % (what, nload))
    s0 = ss.get(0)
    if s0:
        st = s0["unwinders"]
    check(s0 and len(s0["truth"]) >= 2, what + ": a truth at py::fib's entry")
    lint = lint_offsets(binary, dump, recs[fib[0]])
    bad = lint.get("JD057", set())
    for off, s in sorted(ss.items()):
        for u in ("libunwind", "libdw", "perf"):
            if u in s["unwinders"]:
                v = s["unwinders"][u]["verdict"]
                check((v == "ok") == (off not in bad), "%s: py::fib+0x%x: %s %s, lint JD057 at %s"
                      % (what, off, u, v, sorted(bad)))
    if ver == "3.13":
        check("JD084" in lint and all(s["unwinders"]["fp"]["verdict"] != "ok" for s in ss.values()),
              "%s: fp not ok at every boundary, lint JD084 fp-no-frame (%s)" % (what, sorted(lint)))
    else:
        call = [s for s in ss.values() if s["insn"].startswith("call")]
        if check(call, what + ": a sample at the call"):
            t, f = call[0]["truth"], call[0]["unwinders"]["fp"]["frames"]
            k = next((i for i, n in enumerate(call[0]["truth_symbols"]) if n and n.startswith("py::<module>")), 0)
            check(k >= 2 and f[:k + 1] == t[:k + 1], "%s: fp at the call: the truth up to py::<module> (frame %d)"
                  % (what, k))
    n_bad = sum(1 for c in rep["cases"] for s in c["samples"]
                if "libdw" in s["unwinders"] and s["unwinders"]["libdw"]["verdict"] != "ok")
    return "%s: %d trampolines, %d boundaries of py::fib, libdw not ok at %d samples (lint JD057 at %s)" % (
        what, len(rows), len(ss), n_bad, sorted(bad))


def main():
    with vmfiles.Cleanup("ju-cpython-") as vm:
        return run(vm)


def run(vm):
    binary = os.path.abspath(sys.argv[1])
    vers = sys.argv[2:] or ["3.13", "3.15"]
    if os.environ.get("RUNNER"):
        print("SKIP trace-cpython: under a RUNNER (no ptrace)")
        return 77
    d = vm.dir
    said = []
    for v in vers:
        if v not in SUITE:
            print("cpython_test: no CPython %s here (%s)" % (v, ", ".join(SUITE)))
            return 2
        line = one(binary, v, d, vm)
        if line:
            said.append(line)
            print(line) if line.startswith("SKIP") else None
    print("\n".join(x for x in said if not x.startswith("SKIP")))
    print("trace-cpython: %d checks, %d failed" % (checks, len(fails)))
    if not checks:
        return 77
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
