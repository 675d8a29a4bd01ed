#!/usr/bin/env python3
"""jitunwind trace on a small real JIT (tests/trace/jitprog.c).

Usage: trace_test.py JITUNWIND JITPROG.  Exit 0 all checks pass, 1 a check
failed, 77 trace cannot run here (not x86_64, under qemu-user (RUNNER), or
ptrace refused): the reason is printed.

The truth is independent of the tracer: the trampoline's address, its
callee's address and the return address the callee sees come from the
program itself; the boundaries from the encoding written down here (push
rbp; mov rsp,rbp; call *rcx; pop rbp; ret: offsets 0 1 4 6 7); each sample's
registers and stack words are checked against what those instructions do.
"""
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

BOUNDARIES = [0, 1, 4, 6, 7]
fails = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        fails.append(what)
        print("FAIL " + what)


def trace(binary, args, timeout=60):
    p = subprocess.run([binary, "trace"] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def prog_out(path):
    facts = {"callee_ret": [], "tramp_ra": []}
    with open(path) as f:
        for line in f:
            k, *v = line.split()
            if k in ("callee_ret", "tramp_ra"):
                facts[k].append(int(v[0], 16))
            elif k in ("tramp", "callee"):
                facts[k] = int(v[0], 16)
            else:
                facts[k] = v[0]
    return facts


def samples(path):
    res = []
    with open(path) as f:
        for line in f:
            d = dict(kv.split("=", 1) for kv in line.split()[1:])
            res.append({k: (int(v, 16) if v.startswith("0x") and "," not in v else v) for k, v in d.items()})
    return res


def check_activation(ss, facts, what):
    """five samples of one call through the trampoline, in order"""
    t = facts["tramp"]
    check([s["pc"] - t for s in ss] == BOUNDARIES, what + ": pcs at the boundaries in order")
    if len(ss) != 5:
        return
    s0, s1, s4, s6, s7 = ss
    ret = s0["w0"]                      # main's return address at entry's [sp]
    check(s1["sp"] == s0["sp"] - 8 and s1["w0"] == s0["bp"] and s1["w1"] == ret,
          what + ": push %rbp: sp-8, [sp] = the caller's rbp, [sp+8] = the return address")
    check(s4["bp"] == s4["sp"] == s1["sp"], what + ": mov %rsp,%rbp: rbp = sp")
    check(s4["cx"] == facts["callee"], what + ": call *%rcx: rcx is the program's callee")
    check(s6["sp"] == s4["sp"], what + ": after the call returned sp is back")
    check(s7["sp"] == s0["sp"] and s7["bp"] == s0["bp"] and s7["w0"] == ret,
          what + ": pop %rbp: the caller's rbp back, [sp] the return address")
    check(all(s["stack"] == "8192" and s["maps"] == "yes" for s in ss),
          what + ": 8192 stack bytes and the maps with every sample")


def test_plain(binary, prog, d):
    out, st = os.path.join(d, "o.txt"), os.path.join(d, "s.txt")
    rc, so, se = trace(binary, ["--samples-text", st, "--", prog, d, "3", out])
    if rc == 77:
        print(so.strip() or se.strip())
        sys.exit(77)
    check(rc == 0, "plain: exit 0 (got %d: %s)" % (rc, se.strip()))
    facts = prog_out(out)
    t = facts["tramp"]
    row = re.search(r"py::tramp:jitprog\s+0x([0-9a-f]+)\s+(\d+)/(\d+)", so)
    check(row and int(row.group(1), 16) == t, "plain: the row names the program's trampoline address")
    check(row and row.group(2) == row.group(3) == "5", "plain: 5/5 boundaries sampled")
    check("never executed" not in so, "plain: no boundary left unexecuted")
    check(facts["callee_ret"] == [t + 6] * 3, "plain: the program saw its callee return to tramp+6")
    check("differs" not in se, "plain: no code difference reported")
    ss = samples(st)
    check(len(ss) == 5, "plain: one sample per boundary with --hits 1 (got %d)" % len(ss))
    check_activation(ss, facts, "plain")


def test_truth(binary, prog, d):
    """truth by execution against what the program knows: its trampoline's
    return address (read by its callee through the trampoline's frame record);
    the verdicts in the run schema, one case per JIT function"""
    import json
    out, st, js = (os.path.join(d, n) for n in ("o.txt", "s.txt", "r.json"))
    rc, so, se = trace(binary, ["--samples-text", st, "--json", js, "--", prog, d, "3", out])
    facts = prog_out(out)
    t, ra = facts["tramp"], set(facts["tramp_ra"])
    check(rc == 0 and len(ra) == 1, "truth: traced, one return address of the trampoline (%s)" % ra)
    ss = samples(st)
    want = ["0x%x,0x%x" % (s["pc"], min(ra)) for s in ss]
    check([s["truth"] for s in ss] == want and ss,
          "truth: every sample's truth is [pc, the trampoline's return address the program saw]")
    check("3 activations" in so and "0 samples with truth unknown" in so, "truth: 3 activations, none unknown")
    with open(js) as f:
        r = json.load(f)
    cs = r["cases"]
    check(len(cs) == 1 and cs[0]["name"] == "py::tramp:jitprog", "json: one case per JIT function")
    sm = cs[0]["samples"] if cs else []
    check([x["where"] for x in sm] == ["py::tramp:jitprog+0x%x" % o for o in BOUNDARIES],
          "json: where = SYMBOL+0xOFF at each boundary")
    check(all(x["truth"] == [hex(x["pc"] if isinstance(x["pc"], int) else int(x["pc"], 16)), hex(min(ra))]
              for x in sm), "json: the judged truth is the traced one")
    # fp: the trampoline's record (push rbp; mov rsp,rbp) is set up at +4 and +6
    # only; elsewhere rbp is main's, whose record lies past the 8192-byte copy
    fp = [x["unwinders"]["fp"]["verdict"] for x in sm]
    check(fp == ["error", "error", "ok", "ok", "error"], "fp: ok exactly where the record is set up (%s)" % fp)
    # no unwinding info in this JIT's dump: the DWARF unwinders cannot pass pc
    for u in ("libunwind", "libdw"):
        check(all(x["unwinders"][u]["stop"] == "no-unwind-info" for x in sm), u + ": no-unwind-info everywhere")


def test_hits(binary, prog, d):
    out, st = os.path.join(d, "o.txt"), os.path.join(d, "s.txt")
    rc, so, se = trace(binary, ["--hits", "3", "--samples-text", st, "--", prog, d, "5", out])
    ss = samples(st)
    facts = prog_out(out)
    check(rc == 0 and len(ss) == 15, "--hits 3 on 5 calls: 15 samples (got %d)" % len(ss))
    for k in range(len(ss) // 5):
        check_activation(ss[5 * k:5 * k + 5], facts, "--hits 3 call %d" % k)
    rc, so, se = trace(binary, ["--hits", "9", "--samples-text", st, "--", prog, d, "2", out])
    check(rc == 0 and len(samples(st)) == 10, "--hits 9 on 2 calls: 10 samples")


def test_modes(binary, prog, d):
    out = os.path.join(d, "o.txt")
    rc, so, se = trace(binary, ["--", prog, d, "2", out, "salt"])
    check(rc == 0 and re.search(r"differs from the jitdump's from offset 0x7\b", se),
          "salt: the changed last byte is a finding at offset 0x7, not a failure")
    rc, so, se = trace(binary, ["--", prog, d, "2", out, "trap"])
    check(rc == 0 and prog_out(out).get("own_traps") == "1" and "1 traps not ours" in so,
          "trap: the program's own SIGTRAP reached its handler, counted as not ours")
    for i in range(3):
        rc, so, se = trace(binary, ["--hits", "2", "--", prog, d, "200", out, "thread"])
        check(rc == 0 and "exited with status 0" in so and "2 threads" in so
              and prog_out(out).get("sum") == "20100", "thread run %d: both threads followed, exit 0" % i)
    rc, so, se = trace(binary, ["--", prog, d, "2", out, "exec"])
    check(rc == 0 and "exec'd mid-trace" in so and "exec'd mid-trace" in se, "exec: reported, detached")


def test_bad(binary, prog, d):
    rc, so, se = trace(binary, ["--", os.path.join(d, "no-such-cmd")])
    check(rc == 2 and "cannot run" in se and "No such file" in se, "missing CMD: exit 2 naming it")
    rc, so, se = trace(binary, ["--", prog, d, "2", os.path.join(d, "o.txt"), "nodump"])
    check(rc == 2 and "no jitdump appeared" in se, "no jitdump: exit 2 with the reason")
    bad = os.path.join(d, "bad.dump")
    with open(bad, "wb") as f:
        f.write(b"rootroot" * 8)
    rc, so, se = trace(binary, ["--jitdump", bad, "--", prog, d, "2", os.path.join(d, "o.txt")])
    check(rc == 2 and "bad.dump" in se and "bad magic" in se, "not a jitdump: exit 2 naming the file")
    t0 = time.time()
    rc, so, se = trace(binary, ["--time", "0.5", "--", "sleep", "30"])
    m = re.search(r"pid (\d+) ended at --time", so)
    check(rc == 2 and m and time.time() - t0 < 10, "--time 0.5: the trace ends (%.1fs)" % (time.time() - t0))
    check(m and not os.path.exists("/proc/%s" % m.group(1)), "--time: the process is not left behind")
    strace = shutil.which("strace")
    if strace:   # a process strace -f follows is traced already: its PTRACE_TRACEME is refused
        p = subprocess.run([strace, "-f", "-o", os.devnull, binary, "trace", "--", "true"],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 77 and "ptrace refused" in p.stdout, "ptrace refused: exit 77 with the reason")
    else:
        print("SKIP ptrace-refused check: no strace here")
    rc, so, se = trace(binary, ["--hits", "0", "--", "true"])
    check(rc == 2, "--hits 0: bad usage, exit 2")
    rc, so, se = trace(binary, ["true"])
    check(rc == 2 and "usage: jitunwind trace" in se, "no --: bad usage, exit 2 with the usage")
    rc, so, se = trace(binary, ["--time", "1", "--"])
    check(rc == 2 and "no command after --" in se, "nothing after --: exit 2")


def main():
    binary, prog = sys.argv[1], sys.argv[2]
    # LeakSanitizer (check-asan) cannot run in a traced process
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0:" + os.environ.get("ASAN_OPTIONS", "")
    if os.environ.get("RUNNER"):
        print("SKIP trace: under %s (qemu-user has no ptrace)" % os.environ["RUNNER"])
        return 77
    if platform.machine() != "x86_64":
        print("SKIP trace: no tracer for %s yet (x86_64 only)" % platform.machine())
        return 77
    with tempfile.TemporaryDirectory() as d:
        test_plain(binary, prog, d)
        test_truth(binary, prog, d)
        test_hits(binary, prog, d)
        test_modes(binary, prog, d)
        test_bad(binary, prog, d)
    print("trace-test: %d checks, %d failed" % (checks, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
