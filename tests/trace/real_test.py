#!/usr/bin/env python3
"""`jitunwind trace` on a real JIT: Debian sid's CPython 3.14 (-X perf_jit), run here on
its own loader and libraries (tools/in-root --only python3.14 sid), a recursive script.

  tests/trace/real_test.py JITUNWIND

Checks, each against a source of its own:
  - every instruction boundary of every trampoline is sampled (the report's rows), and the
    boundaries are the instructions binutils' objdump decodes in the code bytes this file
    reads from the jitdump itself (its own reader of the record layout);
  - the truth at the trampoline's entry, after its push and at its ret is the word the
    stack holds there (the samples' own stack words);
  - the FDE program CPython wrote (read here from the UNWINDING_INFO record) is the one
    cases/x86_64/cpython-3.14-perf-jit.case holds, byte for byte;
  - at the ret, and only there, perf's unwinders (libunwind, libdw and real perf where it
    runs) end after two frames in some functions: the verdicts `run` gives that case at
    tramp+0xb; `jitunwind lint` of the same dump names the rule (JD057 reg-below-sp).
Exit 0 passed, 1 failed, 77 cannot run here (no ptrace, no root can be built: the reason).
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "cases", "x86_64", "cpython-3.14-perf-jit.case")
fails = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        fails.append(what)
        print("FAIL " + what)


def records(path):
    """(id, offset, body) of each jitdump record, by the specification's layout"""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, hsize = struct.unpack_from("<III", data, 0)
    if magic != 0x4A695444:
        raise SystemExit("%s: offset 0: not a jitdump (magic 0x%x)" % (path, magic))
    off = hsize
    for _ in range(1 << 20):
        if off + 16 > len(data):
            return
        rid, size = struct.unpack_from("<II", data, off)
        if size < 16 or off + size > len(data):
            return
        yield rid, off, data[off + 16:off + size]
        off += size


def fde_program(unwinding_body):
    """the CFA program of the first FDE of an UNWINDING_INFO body (pcrel|sdata4, "zR")"""
    usize, hsize, _mapped = struct.unpack_from("<QQQ", unwinding_body, 0)
    eh = unwinding_body[24:24 + usize - hsize]
    cie_len = struct.unpack_from("<I", eh, 0)[0]
    fde = 4 + cie_len
    flen = struct.unpack_from("<I", eh, fde)[0]
    body = eh[fde + 4:fde + 4 + flen]
    prog = body[4 + 4 + 4 + 1:]          # CIE pointer, pc_begin, pc_range, aug length 0
    return prog.rstrip(b"\0")            # DW_CFA_nop padding


def loads(dump):
    """name -> (code address, code bytes, FDE program of the UNWINDING_INFO before it)"""
    out, prog = {}, None
    for rid, _off, body in records(dump):
        if rid == 4:
            prog = fde_program(body)
        elif rid == 0:
            _pid, _tid, _vma, addr, size, _idx = struct.unpack_from("<IIQQQQ", body, 0)
            end = body.index(b"\0", 40)
            name = body[40:end].decode()
            out[name] = (addr, body[end + 1:end + 1 + size], prog)
            prog = None
    return out


def objdump_offsets(code):
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        p = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f.name],
                           capture_output=True, text=True)
    return [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\t", p.stdout, re.M)]


def samples(path):
    res = []
    with open(path) as f:
        for line in f:
            d = dict(kv.split("=", 1) for kv in line.split()[1:])
            res.append(d)
    return res


def case_cfi():
    with open(CASE) as f:
        m = re.search(r"^cfi\s*=\s*bytes\s+(.+)$", f.read(), re.M)
    return bytes(int(b, 16) for b in m.group(1).split())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    vmfiles = SourceFileLoader("vmfiles", os.path.join(here, "vmfiles.py")).load_module()
    with vmfiles.Cleanup("ju-real-") as vm:
        return run(vm)


def run(vm):
    binary = os.path.abspath(sys.argv[1])
    d = vm.dir
    script = os.path.join(d, "w.py")
    with open(script, "w") as f:
        f.write("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint(fib(12))\n")
    js, st, wc = os.path.join(d, "t.json"), os.path.join(d, "s.txt"), os.path.join(d, "wc")
    # JU_TRACE_HW=1: the boundaries past an entry sampled by hardware breakpoints (the same checks)
    hw = ["--hw-breakpoints"] if os.environ.get("JU_TRACE_HW") == "1" else []
    cmd = [binary, "trace", "--json", js, "--samples-text", st, "--write-cases", wc] + hw + ["--",
           os.path.join(ROOT, "tools", "in-root"), "--only", "python3.14", "sid", "python3.14", "-X", "perf_jit",
           script]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=d)
    vm.trace_pid(p.stdout)                 # its /tmp/jit-PID.dump goes at the end
    for line in p.stdout.splitlines():     # which path sampled
        if "sampling:" in line:
            print("  " + line.strip())
    if p.returncode == 77 or "SKIP trace" in p.stdout:
        print((p.stdout + p.stderr).strip()[-400:])
        return 77
    if "1 execs followed" not in p.stdout and p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
        # tools/in-root could not build or run the root: its reason, a visible skip
        if "tools/in-root" in p.stderr or "tools/rootfs" in p.stderr:
            return 77
    check(p.returncode in (0, 1) and "1 execs followed before any JIT code" in p.stdout,
          "traced through tools/in-root's exec (exit %d)" % p.returncode)
    dump = re.search(r"jitdump (\S+) \(", p.stdout)
    check(dump, "the report names the jitdump")
    if not dump:
        return 1
    dump = dump.group(1)
    rows = re.findall(r"^\s+0x([0-9a-f]+)\s+(\d+)/(\d+)\s+(\S.*)$", p.stdout, re.M)
    check(len(rows) > 50 and all(a == b for _, a, b, _ in rows),
          "every boundary of all %d trampolines sampled (%s)" %
          (len(rows), [r for r in rows if r[1] != r[2]][:3]))
    ld = loads(dump)
    fib = [n for n in ld if n.startswith("py::fib:")]
    check(len(fib) == 1, "one load of py::fib in the jitdump (%s)" % fib)
    if not fib:
        return 1
    addr, code, prog = ld[fib[0]]
    offs = objdump_offsets(code)
    with open(js) as f:
        rep = json.load(f)
    cases = {c["name"]: c for c in rep["cases"]}
    fc = cases.get(fib[0])
    check(fc and sorted({s["offset"] for s in fc["samples"]}) == offs,
          "py::fib's sampled offsets are the instructions objdump decodes (%s)" % offs)
    check(prog == case_cfi(), "the FDE program in the jitdump is the case's cfi bytes (%s)" % prog.hex(" "))
    # the truth against the stack words of each sample (x86_64: [sp] the return address at
    # entry and at ret, [sp+8] after the push)
    word = {0x0: "w0", 0x4: "w0", 0x5: "w1", 0xb: "w0"}
    ss = [s for s in samples(st) if addr <= int(s["pc"], 16) < addr + len(code)]
    got = {int(s["pc"], 16) - addr: s for s in ss}
    check(sorted(got) == offs, "py::fib: one sample per boundary (%s)" % sorted(got))
    for off, w in word.items():
        s = got.get(off)
        check(s and s["truth"].split(",")[1] == s[w],
              "py::fib+0x%x: the truth's caller is the stack word %s" % (off, w))
    # at the ret: the loss, and only there
    lost = []
    for c in rep["cases"]:
        at = {s["offset"]: s for s in c["samples"]}
        r = at.get(0xb)
        if r and r["unwinders"]["libdw"]["verdict"] == "truncated":
            lost.append(c["name"])
            for u in ("libunwind", "libdw", "perf"):
                if u in r["unwinders"]:
                    check(r["unwinders"][u]["verdict"] == "truncated" and len(r["unwinders"][u]["frames"]) == 2,
                          "%s+0xb: %s ends after 2 frames" % (c["name"], u))
            check(all(s["unwinders"][u]["verdict"] == "ok" for s in c["samples"] if s["offset"] != 0xb
                      for u in ("libunwind", "libdw") if u in s["unwinders"]),
                  "%s: libunwind and libdw ok everywhere but the ret" % c["name"])
    check(len(lost) >= 1, "some trampoline loses its caller's rbp at the ret (%d)" % len(lost))
    # the case run on the same bytes gives the same verdicts at tramp+0xb
    cj = os.path.join(d, "case.json")
    subprocess.run([binary, "run", "--json", cj, CASE], capture_output=True, text=True, timeout=600)
    with open(cj) as f:
        cr = json.load(f)["cases"][0]
    at = [s for s in cr["samples"] if s["where"] == "tramp+0xb"][0]
    check(at["unwinders"]["libdw"]["verdict"] == "truncated" and at["unwinders"]["libunwind"]["verdict"] == "truncated",
          "the case reproduces it at tramp+0xb")
    # --write-cases: one case for the 170-odd identical trampolines, the shipped case's code
    # and FDE program, the harness's verdicts as traced for every column that reads the CFI
    # (fp differs: the interpreter has no frame pointers), and run passes it
    written = sorted(os.listdir(wc)) if os.path.isdir(wc) else []
    check(len(written) == 1, "write-cases: one case for the identical trampolines (%s)" % written)
    if written:
        wpath = os.path.join(wc, written[0])
        with open(wpath) as f:
            text = f.read()
        with open(CASE) as f:
            ship = f.read()
        sect = lambda t, n: [x.strip() for x in t.split("[" + n + "]")[1].split("[")[0].splitlines()
                             if x.strip() and not x.startswith("#")]
        check(sect(text, "code") == sect(ship, "code"), "write-cases: [code] is the shipped case's")
        check(bytes(int(b, 16) for b in re.search(r"^cfi = bytes (.+)$", text, re.M).group(1).split()) == prog,
              "write-cases: cfi bytes are the jitdump's FDE program")
        diff = set(re.findall(r"^# traced: (\S+) ", text, re.M))
        check(diff <= {"fp"}, "write-cases: libunwind, libdw, oracle and perf here as traced (%s differ)" % diff)
        check(re.search(r"^libunwind = ok; truncated at 11$", text, re.M), "write-cases: the loss at the ret")
        r = subprocess.run([binary, "run", wpath], capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "write-cases: run passes the written case (rc %d)" % r.returncode)
    lint = subprocess.run([binary, "lint", dump], capture_output=True, text=True, timeout=600)
    check("JD057" in lint.stdout and "at +0xb rbp's rule says saved at cfa-16" in lint.stdout,
          "lint names the rule at +0xb (JD057)")
    print("trace-real: %d checks, %d failed (CPython 3.14: %d trampolines, %d lose rbp at the ret)" %
          (checks, len(fails), len(rows), len(lost)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
