#!/usr/bin/env python3
"""jitunwind trace --hw-breakpoints: the same verdicts as int3 sampling.

Usage: hw_test.py JITUNWIND JITPROG CASEPROG.  Exit 0 all checks pass, 1 a check failed,
77 trace cannot run here (the reason printed).

Every program of the trace tests is traced twice, with int3 stops alone and with
--hw-breakpoints (the boundaries past a function's entry sampled by the kernel's
execute breakpoints, the thread never stopped there): the matrix rows and, per sample
in the JSON, its where, each column's verdict and the truth's symbols must be the same,
and the hardware must have taken samples (else the comparison proves nothing: a visible
SKIP when the kernel refuses them).  The truth of hardware samples is checked against
what the program knows (the return address its callee saw), every sample with hw=1 at
the boundaries past the entry.  A refusal (the kernel's EINVAL for a --stack-size above
what a sample holds) falls back to int3 with the reason said, and samples every boundary.  The maps
text is read again only when it may have changed: a stack grown by faults alone must
show in every sample's maps, with int3 and with the hardware.
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_test as tt  # noqa: E402  (its check(), trace(), samples(), prog_out())
vmfiles = tt.vmfiles

COLS = "fp,libunwind,libdw,oracle"


def matrix(so):
    """the matrix's rows: a function's name, then its cells"""
    return sorted(l.strip() for l in so.splitlines() if " | " in l and not l.startswith("case "))


def per_sample(js):
    """(case, where, verdicts, truth symbols) of each judged sample, sorted"""
    with open(js) as f:
        r = json.load(f)
    res = []
    for c in r["cases"]:
        for x in c["samples"]:
            v = tuple(sorted((k, str(u.get("verdict")), str(u.get("consistent"))) for k, u in x["unwinders"].items()))
            res.append((c["name"], x["where"], v, tuple(x.get("truth_symbols") or ())))
    return sorted(res)


def hw_taken(so):
    m = re.search(r"sampling: hardware breakpoints \((\d+) per thread\) took (\d+) samples", so)
    return int(m.group(2)) if m else 0


def by_key(samples):
    """per (case, where, truth symbols): the verdicts seen"""
    res = {}
    for c, w, v, t in samples:
        res.setdefault((c, w, t), set()).add(v)
    return res


def both(binary, d, name, args, cmd, threads=False):
    """trace cmd with int3 alone and with --hw-breakpoints; compare; the hardware's samples.
    threads: which executions get sampled depends on the scheduling (with int3 too: another
    thread passes a boundary while one steps over it), so the samples of each (where, truth)
    that both runs took must have the same verdicts, and the matrices are not compared"""
    out = {}
    for hw in (False, True):
        js = os.path.join(d, "%s-%d.json" % (name, hw))
        rc, so, se = tt.trace(binary, args + (["--hw-breakpoints"] if hw else []) + ["--json", js, "--"] + cmd,
                              timeout=300)
        m = re.search(r"trace: pid (\d+)", so)
        if m:                                  # its dump and map in /tmp, by its pid
            vmfiles.remove(int(m.group(1)))
        tt.check(rc == 0 and os.path.exists(js), "%s%s: traced (rc %d: %s)" % (name, " hw" if hw else "", rc,
                                                                               se.strip()[-300:]))
        out[hw] = (so, per_sample(js) if os.path.exists(js) else [])
    (so0, s0), (so1, s1) = out[False], out[True]
    tt.check("sampling:" not in so0, "%s: int3 alone says no sampling line" % name)
    if threads:
        k0, k1 = by_key(s0), by_key(s1)
        common = set(k0) & set(k1)
        tt.check(common and all(k0[k] == k1[k] for k in common),
                 "%s: the same verdicts per where and truth taken by both (%d in common; differing: %s)"
                 % (name, len(common), [(k, k0[k], k1[k]) for k in common if k0[k] != k1[k]][:2]))
        return hw_taken(so1), so1
    tt.check(matrix(so0) == matrix(so1) and matrix(so0), "%s: the same matrix (%s vs %s)"
             % (name, matrix(so0), matrix(so1)))
    diff = [a for a in s0 if a not in s1][:2] + [b for b in s1 if b not in s0][:2]
    tt.check(s0 == s1 and s0, "%s: the same verdicts and truth per sample (%d vs %d samples; differing: %s)"
             % (name, len(s0), len(s1), diff))
    return hw_taken(so1), so1


def test_same(binary, prog, cprog, d):
    """every program: the same matrix and per-sample verdicts with and without"""
    n, so = both(binary, d, "jitprog", ["--unwinders", COLS, "--hits", "3"], [prog, d, "5", os.path.join(d, "o")])
    if not n:
        m = re.search(r"sampling: int3 stops only \(hardware breakpoints not used: (.*)\)", so)
        print("SKIP hw: the kernel gives no hardware breakpoints here (%s): int3 against int3 only"
              % (m.group(1) if m else "no sampling line"))
        tt.check(m, "hw refused: the header says why (%s)" % so[:300])
    else:
        tt.check(n == 12, "jitprog: the hardware took the 4 boundaries past the entry, 3 hits each (%d)" % n)
    for mode, hits in (("thread", "8"), ("movedra", "2"), ("popret", "2")):
        taken, _ = both(binary, d, "jitprog " + mode, ["--unwinders", COLS, "--hits", hits],
                        [prog, d, "4", os.path.join(d, "o"), mode], threads=mode == "thread")
        tt.check(taken > 0 or not n, "jitprog %s: the hardware took samples (%d)" % (mode, taken))
    for name in tt.CASES:
        case = os.path.join(tt.CASEDIR, name + ".case")
        taken, _ = both(binary, d, name, [], [cprog, case, "/tmp", "2", os.path.join(d, "g")])
        tt.check(taken > 0 or not n, "%s: the hardware took samples (%d)" % (name, taken))
    for name, extra in (("cpython-3.13-fp", "plant"), ("cpython-3.14-perf-jit", "main")):
        case = os.path.join(tt.CASEDIR, name + ".case")
        taken, _ = both(binary, d, name + " " + extra, [], [cprog, case, "/tmp", "2", os.path.join(d, "g"), extra])
        tt.check(taken > 0 or not n, "%s %s: the hardware took samples (%d)" % (name, extra, taken))
    return n


def test_truth(binary, prog, d):
    """a hardware sample's truth against what the program knows: [pc, the
    trampoline's return address its callee read through the frame record]"""
    out, st = os.path.join(d, "o.txt"), os.path.join(d, "s.txt")
    rc, so, se = tt.trace(binary, ["--hw-breakpoints", "--unwinders", "fp", "--hits", "3", "--samples-text", st,
                                   "--", prog, d, "3", out])
    facts = tt.prog_out(out)
    ra, t = set(facts["tramp_ra"]), facts["tramp"]
    ss = tt.samples(st)
    hw = [s for s in ss if s.get("hw") == "1"]
    tt.check(rc == 0 and len(ss) == 15 and len(ra) == 1, "hw truth: 15 samples, one return address (%d, %s)"
             % (len(ss), ra))
    tt.check(sorted(set(s["pc"] - t for s in hw)) == tt.BOUNDARIES[1:] and len(hw) == 12,
             "hw truth: the hardware's samples at every boundary past the entry, 3 each (%s)"
             % sorted(s["pc"] - t for s in hw))
    tt.check(all(s["truth"].split(",")[:2] == ["0x%x" % s["pc"], "0x%x" % min(ra)] for s in hw) and hw,
             "hw truth: each starts [pc, the return address the program saw] (%s)" % [s["truth"] for s in hw[:2]])
    tt.check(all(s["stack"] == "8192" for s in hw), "hw truth: the kernel copied 8192 stack bytes each")
    # two threads (one call site in calls(), so one return address): each hardware sample's truth
    # the return address the callees saw, from both threads
    rc, so, se = tt.trace(binary, ["--hw-breakpoints", "--unwinders", "fp", "--hits", "8", "--samples-text", st,
                                   "--", prog, d, "4", out, "thread"])
    facts = tt.prog_out(out)
    ra = set(facts["tramp_ra"])
    ss = tt.samples(st)
    hw = [s for s in ss if s.get("hw") == "1"]
    tt.check(rc == 0 and len(ra) == 1 and len(set(s["tid"] for s in hw)) == 2,
             "hw truth, two threads: both threads' hits taken by the hardware (%d, %s)"
             % (len(hw), set(s["tid"] for s in hw)))
    # Every hit's truth is known and right: each thread's entry trap is seen.  The entry's int3
    # stays in memory while a thread steps past it (the tracer does its push), so the other
    # thread cannot run past it unseen; with the byte lifted for a real single step
    # (JU_TRACE_STEP_LIFT=1), about 1 run in 8 here every hit of one thread had no truth.
    known = [s for s in hw if s["truth"] != "unknown"]
    wrong = [s for s in known if not (s["truth"].split(",")[0] == "0x%x" % s["pc"] and
                                      int(s["truth"].split(",")[1], 16) in ra)]
    tt.check(known and not wrong,
             "hw truth, two threads: each known truth starts [pc, a return address a callee saw] (%s)"
             % [(s["tid"], hex(s["pc"]), s["truth"]) for s in (wrong or hw)[:3]])
    tt.check(len(known) == len(hw),
             "hw truth, two threads: every hit has a truth (%d of %d without)" % (len(hw) - len(known), len(hw)))
    m = re.search(r"steps over a kept breakpoint: (\d+) done by the tracer", so)
    tt.check(m and int(m.group(1)) > 0, "hw truth, two threads: the entries' steps done with the int3 kept (%s)"
             % (m and m.group(0)))


def test_maps(binary, prog, d, hw):
    """the maps text is read again only when it may have changed (a syscall stop, a
    thread inside a syscall, a single-step, the size in /proc/PID/statm): a stack grown
    by faults alone (jitprog grow: each call 32 KiB deeper, no syscall between) must show
    in every sample's maps, its SP inside the [stack] mapping they give"""
    out, st = os.path.join(d, "o.txt"), os.path.join(d, "s.txt")
    rc, so, se = tt.trace(binary, ["--unwinders", "fp", "--hits", "30", "--samples-text", st] + hw +
                          ["--", prog, d, "30", out, "grow"])
    ss = tt.samples(st) if os.path.exists(st) else []
    vmas = set(s.get("stack_vma") for s in ss)
    bad = [s for s in ss if not isinstance(s.get("stack_vma"), int) or s["sp"] < s["stack_vma"]]
    what = "maps%s" % (" hw" if hw else "")
    tt.check(rc == 0 and len(ss) == 150 and len(vmas) > 10,
             "%s: 150 samples, the stack's mapping seen growing (rc %d, %d samples, %d starts)"
             % (what, rc, len(ss), len(vmas)))
    tt.check(not bad, "%s: every sample's SP inside the [stack] of its maps (%s)"
             % (what, ["sp 0x%x [stack] at %s" % (s["sp"], s.get("stack_vma")) for s in bad[:2]]))


def test_refused(binary, prog, d):
    """refused (the kernel's EINVAL: a sample holds no 65,536 stack bytes): int3 alone, the
    reason said on stderr and in the header, every boundary sampled"""
    out = os.path.join(d, "o.txt")
    rc, so, se = tt.trace(binary, ["--hw-breakpoints", "--unwinders", "fp", "--stack-size", "65536", "--",
                                   prog, d, "2", out])
    tt.check(rc == 0 and "hardware breakpoints not used (perf_event_open of a breakpoint on thread" in se and
             "Invalid argument (--stack-size above" in se and
             "sampling: int3 stops only (hardware breakpoints not used" in so and
             re.search(r"\b5/5\s+py::tramp:jitprog", so),
             "hw refused: int3 alone, said, 5/5 sampled (rc %d, %s, %s)" % (rc, se[:300], so[:400]))


def main():
    binary, prog, cprog = sys.argv[1], sys.argv[2], sys.argv[3]
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0:" + os.environ.get("ASAN_OPTIONS", "")
    if os.environ.get("RUNNER"):
        print("SKIP hw: under %s (qemu-user has no ptrace and no hardware breakpoints)" % os.environ["RUNNER"])
        return 77
    if os.uname().machine != "x86_64":
        print("SKIP hw: no tracer for %s yet (x86_64 only)" % os.uname().machine)
        return 77
    with tempfile.TemporaryDirectory() as d:
        rc, so, se = tt.trace(binary, ["--unwinders", "fp", "--", prog, d, "1", os.path.join(d, "o")])
        if rc == 77:
            print((so.strip() or se.strip()).splitlines()[-1])
            return 77
        test_maps(binary, prog, d, [])
        if test_same(binary, prog, cprog, d):
            test_truth(binary, prog, d)
            test_maps(binary, prog, d, ["--hw-breakpoints"])
        test_refused(binary, prog, d)
    print("hw-test: %d checks, %d failed" % (tt.checks, len(tt.fails)))
    return 1 if tt.fails else 0


if __name__ == "__main__":
    sys.exit(main())
