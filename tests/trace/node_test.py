#!/usr/bin/env python3
"""`jitunwind trace` on V8: this machine's node (20) with --perf-prof --perf-prof-unwinding-info,
a recursive fib called with more arguments than it has parameters, so its TurboFan code takes
both return sequences:
    pop %rbp; cmp $n,%rcx; jg 1f; ret $m
    1: pop %r10; lea (%rsp,%rcx,8),%rsp; push %r10; ret
under an FDE that says CFA = rsp+8, the return address at CFA-8 and rbp saved at CFA-16 all
through them (docs/found-in-real-jits.md).

  tests/trace/node_test.py JITUNWIND [--sid]

--sid: Debian sid's node (24) instead, run on its root's loader (tools/in-root --only nodejs
sid) in a mount namespace of its own whose /usr/share is the root's (Debian's node loads
builtins such as undici from /usr/share/nodejs, a path compiled in); its V8 copies
InterpreterEntryTrampoline from the builtin's live bytes, the tracer's entry breakpoint
with it (trace puts the original back: hazardprog copy).

Checks, each against a source of its own:
  - the sequence is found by binutils' objdump in the code bytes this file reads from the
    jitdump itself (real_test.py's reader), and each of its 8 boundaries is sampled;
  - at each, libunwind gives what the trace found: truncated at the cmp, the jg, the first
    ret, the pop and the last ret (rbp lost), wrong at the lea and the push (the return
    address is in r10, the CFI reads the word above it); real perf's verdict (the perf
    column, where it runs) equals the emulation of its DWARF engine (libunwind, or libdw for
    a perf built without it: `perf version --build-options`) at every boundary;
  - lint --json of the same dump names them: JD057 at the five, JD059 at the lea and the
    push, JD052 at the lea, all in that load;
  - cases/x86_64/v8-node20-argument-drop.case, the model, gives libunwind the same verdicts
    at its pop, lea, push and ret.
Exit 0 passed, 1 failed, 77 cannot run here (no node, no ptrace, not x86_64: the reason).
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
ROOT = os.path.dirname(os.path.dirname(HERE))
real = SourceFileLoader("real_test", os.path.join(HERE, "real_test.py")).load_module()
vmfiles = SourceFileLoader("vmfiles", os.path.join(HERE, "vmfiles.py")).load_module()
fails = []
checks = 0
SCRIPT = """function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
for (let i = 0; i < 150; i++) s += fib(15, i, i + 1, i + 2);
console.log(s);
"""
# the traced verdict of libunwind at each instruction of the sequence
WANT = ["truncated", "truncated", "truncated", "truncated", "wrong", "wrong", "truncated"]


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        fails.append(what)
        print("FAIL " + what)
    return cond


def loads(dump):
    """name -> (record offset, code address, code bytes) of each CODE_LOAD (real_test.py's record walk)"""
    out = {}
    for rid, off, body in real.records(dump):
        if rid == 0:
            _pid, _tid, _vma, addr, size, _idx = real.struct.unpack_from("<IIQQQQ", body, 0)
            end = body.index(b"\0", 40)
            out[body[40:end].decode(errors="replace")] = (off, addr, body[end + 1:end + 1 + size])
    return out


def disasm(code):
    """[(offset, mnemonic, operands)] of objdump's decoding"""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        p = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f.name],
                           capture_output=True, text=True)
    out = []
    for m in re.finditer(r"^[ \t]+([0-9a-f]+):\t(?:[0-9a-f]{2} )+[ \t]*\t(\S+)[ \t]*([^\n]*)$", p.stdout, re.M):
        out.append((int(m.group(1), 16), m.group(2), m.group(3).strip()))
    return out


def sequence(ins):
    """offsets of: pop %rbp, cmp, jg, ret $n, pop %rX, lea (%rsp,%rY,8),%rsp, push %rX, ret"""
    for i in range(len(ins) - 7):
        w = ins[i:i + 8]
        m = [x[1] for x in w]
        if (m[0] == "pop" and w[0][2] == "%rbp" and m[1] == "cmp" and m[2] == "jg" and m[3] == "ret" and
                w[3][2].startswith("$") and m[4] == "pop" and m[5] == "lea" and
                re.match(r"\(%rsp,%r\w+,8\),%rsp", w[5][2]) and m[6] == "push" and w[6][2] == w[4][2] and
                m[7] == "ret" and not w[7][2]):
            return [x[0] for x in w]
    return None


def sid_node():
    """the command that runs sid's node here, or (None, why)"""
    inroot = os.path.join(ROOT, "tools", "in-root")
    p = subprocess.run([inroot, "--only", "nodejs", "--path", "sid"], capture_output=True, text=True, timeout=1800)
    if p.returncode or not shutil.which("unshare"):
        return None, "no sid nodejs root (tools/in-root: %s)" % (p.stderr.strip()[-300:] or "no unshare")
    share = os.path.join(p.stdout.strip(), "usr", "share")
    wrap = lambda args: ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /usr/share && exec "$@"', share,
                         inroot, "--only", "nodejs", "sid", "node"] + args
    v = subprocess.run(wrap(["--version"]), capture_output=True, text=True, timeout=600)
    if v.returncode:
        return None, "sid's node does not run here: %s" % (v.stdout + v.stderr).strip()[-300:]
    return wrap, v.stdout.strip()


def main():
    with vmfiles.Cleanup("ju-node-") as vm:
        return run(vm)


def run(vm):
    binary = os.path.abspath(sys.argv[1])
    sid = sys.argv[2:] == ["--sid"]
    node = shutil.which("node")
    if os.environ.get("RUNNER") or platform.machine() != "x86_64" or not (node or sid):
        print("SKIP trace-node: %s" % ("under a RUNNER (no ptrace)" if os.environ.get("RUNNER") else
                                        "no tracer for %s" % platform.machine() if platform.machine() != "x86_64"
                                        else "no node on PATH"))
        return 77
    if sid:
        wrap, ver = sid_node()
        if not wrap:
            print("SKIP trace-node --sid: %s" % ver)
            return 77
    else:
        wrap = lambda args: [node] + args
        ver = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    d = vm.dir
    with open(os.path.join(d, "fib.js"), "w") as f:
        f.write(SCRIPT)
    js = os.path.join(d, "t.json")
    # JU_TRACE_HW=1: the boundaries past an entry sampled by hardware breakpoints (the same checks)
    hw = ["--hw-breakpoints"] if os.environ.get("JU_TRACE_HW") == "1" else []
    p = subprocess.run([binary, "trace", "--only", "JS:*fib*", "--json", js] + hw + ["--"] + wrap(["--perf-prof",
                        "--perf-prof-unwinding-info", "--interpreted-frames-native-stack", "fib.js"]),
                       capture_output=True, text=True, timeout=1800, cwd=d)
    vm.trace_pid(p.stdout)                 # a perf map or dump it wrote in /tmp goes at the end
    if p.returncode == 77:
        print((p.stdout + p.stderr).strip()[-400:])
        return 77
    for line in p.stdout.splitlines():     # which path sampled, and the matrix's rows
        if "sampling:" in line or (" | " in line and "fib" in line):
            print("  " + line.strip())
    check(p.returncode in (0, 1) and "exited with status 0" in p.stdout,
          "node %s traced to its end (exit %d: %s)" % (ver, p.returncode, (p.stdout + p.stderr)[-600:]))
    dump = re.search(r"jitdump (\S+) \(", p.stdout)
    if not check(dump, "the report names the jitdump"):
        return 1
    dump = dump.group(1)
    ld = loads(dump)
    tf = [n for n in ld if re.match(r"JS:\*'?fib ", n)]     # node 24 marks its names with a quote
    if not check(len(tf) == 1, "one TurboFan load of fib (JS:*fib) in the jitdump (%s)" % tf):
        return 1
    rec, addr, code = ld[tf[0]]
    seq = sequence(disasm(code))
    if not check(seq, "objdump finds V8's two return sequences in JS:*fib's code"):
        return 1
    with open(js) as f:
        rep = json.load(f)
    case = {c["name"]: c for c in rep["cases"]}.get(tf[0])
    at = {s["offset"]: s for s in (case or {}).get("samples", [])}
    check(all(o in at for o in seq), "every boundary of the sequences sampled (%s missing)"
          % [hex(o) for o in seq if o not in at])
    cols = set(next(iter(at.values()))["unwinders"]) if at else set()
    # real perf's DWARF engine, from its own build options: the column it must equal
    bo = subprocess.run(["perf", "version", "--build-options"], capture_output=True, text=True).stdout
    engine = "libunwind" if re.search(r"^\s*libunwind:\s*\[\s*on", bo, re.M) else "libdw"
    for o, want in zip(seq[1:], WANT):
        s = at.get(o)
        if not s:
            continue
        u = s["unwinders"]
        check(u["libunwind"]["verdict"] == want, "JS:*fib+0x%x (%s): libunwind %s, traced before: %s"
              % (o, s["insn"], u["libunwind"]["verdict"], want))
        if "perf" in u and engine in u:
            check(u["perf"]["verdict"] == u[engine]["verdict"], "JS:*fib+0x%x: real perf %s = %s %s"
                  % (o, u["perf"]["verdict"], engine, u[engine]["verdict"]))
    # lint of the same dump, in that load
    lj = subprocess.run([binary, "lint", "--json", dump], capture_output=True, text=True, timeout=600)
    lint = json.loads(lj.stdout)
    found = {}
    for f in lint["files"][0]["findings"]:
        if f.get("load") == rec:
            found.setdefault(f["id"], set()).update(f.get("code_offsets", []))
    check(set(seq[1:5]) | {seq[7]} <= found.get("JD057", set()), "lint: JD057 at the cmp, jg, ret, pop and ret (%s)"
          % sorted(found.get("JD057", set())))
    check({seq[5], seq[6]} <= found.get("JD059", set()), "lint: JD059 at the lea and the push (%s)"
          % sorted(found.get("JD059", set())))
    check(seq[5] in found.get("JD052", set()), "lint: JD052 at the lea (%s)" % sorted(found.get("JD052", set())))
    # the model gives the same at its pop, lea, push and ret
    cj = os.path.join(d, "case.json")
    subprocess.run([binary, "run", "--json", cj, os.path.join(ROOT, "cases", "x86_64", "v8-node20-argument-drop.case")],
                   capture_output=True, text=True, timeout=600)
    with open(cj) as f:
        cr = json.load(f)["cases"][0]
    model = {s["where"]: s["unwinders"]["libunwind"]["verdict"] for s in cr["samples"]}
    check([model.get("tramp+0x%x" % o) for o in (0x1d, 0x1f, 0x23, 0x25)] == WANT[3:],
          "the case v8-node20-argument-drop: libunwind %s at its pop, lea, push, ret, as traced"
          % [model.get("tramp+0x%x" % o) for o in (0x1d, 0x1f, 0x23, 0x25)])
    print("trace-node: %d checks, %d failed (node %s, JS:*fib at 0x%x, its return sequences at %s; columns %s)"
          % (checks, len(fails), ver, addr, ", ".join("+0x%x" % o for o in seq), ",".join(sorted(cols))))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
