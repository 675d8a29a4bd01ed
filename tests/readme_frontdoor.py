#!/usr/bin/env python3
"""Keep README.md's front door true: its "my JIT already writes a jitdump" commands run.

  tests/readme_frontdoor.py [--readme README.md] [--bin ./jitunwind] [--caseprog P] [--case C]

The README marks the block with `<!-- frontdoor: jitdump -->`; it must sit in the first 80
lines, hold a `jitunwind trace` command, and those 80 lines must link the answer to "frame
pointers only in the trampolines?" (a heading that exists in docs/measurements.md). Each
"$ CMD" line (its "# comment" dropped) runs in order in a temporary directory, with
`jitunwind` the checkout's binary and `./myjit` a small real JIT: the project's generated
CPython trampoline (tests/trace/caseprog on cases/x86_64/cpython-3.13-fp.case, --caseprog,
--case), writing /tmp/jit-<pid>.dump and calling C through its trampoline 300000 times (3
times under `jitunwind trace`, which stops at each call's entry); `<pid>` is the pid of the
last ./myjit run. What each must do: lint exits 0 or 1 and names the function ('tramp');
perf record and perf inject exit 0; replay --lint exits 0 or 1 with JIT samples and the
injected maps (samples in JIT code or under its frames); trace exits 0 (every --expect met).
Before it passes it runs two planted drifts and fails unless each is caught: the block with
`-k 1` dropped from perf record (perf inject -j then refuses the dump), and with an --expect
the trampoline cannot meet (`fp = ok`: the kernel's walk skips the caller at its entry).
Exit 0 pass, 1 a command did not do what the README says or a planted drift not caught,
2 no marked block, 77 no perf or not an x86_64 host (the case is x86_64), with the reason."""
import argparse, os, platform, re, shlex, shutil, subprocess, sys, tempfile
from importlib.machinery import SourceFileLoader

# a JIT's files in /tmp removed by its pid (jit-PID.dump, perf-PID.map, jitted-PID-N.so)
vmfiles = SourceFileLoader("vmfiles", os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace",
                                                    "vmfiles.py")).load_module()

MARK = "<!-- frontdoor: jitdump -->"
CALLS, TRACE_CALLS = 300000, 3


def skip(why):
    print("readme_frontdoor: skipped: " + why)
    sys.exit(77)


def block(readme):
    lines = open(readme, encoding="utf-8").read().split("\n")
    if MARK not in lines:
        print("readme_frontdoor: %s: no %s" % (readme, MARK), file=sys.stderr)
        sys.exit(2)
    i = lines.index(MARK)
    j = i + 2
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    if j >= len(lines) or not lines[i + 1].startswith("```"):
        print("readme_frontdoor: %s:%d: the marker must be followed by a closed ``` block" % (readme, i + 1),
              file=sys.stderr)
        sys.exit(2)
    cmds = [re.sub(r"\s+#.*$", "", l[2:]).strip() for l in lines[i + 2:j] if l.startswith("$ ")]
    return lines, j, cmds


def front_checks(readme, lines, end):
    """the block and the hybrid answer's link in the first 80 lines"""
    bad = []
    if end >= 80:
        bad.append("the front door's block ends at line %d, past the first 80" % (end + 1))
    top = "\n".join(lines[:80])
    if not re.search(r"^\$ jitunwind trace .*-- \./myjit", top, re.M):
        bad.append("no `jitunwind trace ... -- ./myjit` in the first 80 lines")
    m = re.search(r"\(docs/measurements\.md#([a-z0-9-]+)\)", top)
    if not m:
        bad.append("the first 80 lines do not link docs/measurements.md's hybrid answer")
    else:
        doc = open(os.path.join(os.path.dirname(readme) or ".", "docs", "measurements.md"), encoding="utf-8").read()
        slugs = [re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
                 for h in re.findall(r"^#+ (.*)$", doc, re.M)]
        if m.group(1) not in slugs or "trampolines" not in m.group(1):
            bad.append("#%s: no such heading in docs/measurements.md" % m.group(1))
    return bad


def jit_samples(out):
    """replay's samples in JIT code or in native code under JIT frames (the trampoline's
    callee, where nearly all of them are)"""
    m = re.search(r"\((\d+) in JIT code, (\d+) in native code under JIT frames", out)
    return int(m.group(1)) + int(m.group(2)) if m else 0


def run_block(cmds, binary, caseprog, case, d):
    """run the commands; the list of what did not happen as the README says"""
    myjit = os.path.join(d, "myjit")
    with open(myjit, "w") as f:
        f.write('#!/bin/sh\necho $$ > "%s/myjit.pid"\nexec "%s" "%s" /tmp "${MYJIT_CALLS:-%d}" "%s/myjit.out"\n'
                % (d, caseprog, case, CALLS, d))
    os.chmod(myjit, 0o755)
    bad, pids = [], []
    try:
        run_cmds(cmds, binary, d, bad, pids)
    finally:
        for pid in set(pids):    # each run of myjit: its dump, map and perf inject's .so files
            vmfiles.remove(int(pid))
    return bad


def run_cmds(cmds, binary, d, bad, pids):
    """run the README's commands in d, in order; what went wrong into bad, myjit's pids into pids"""
    for cmd in cmds:
        pid = open(os.path.join(d, "myjit.pid")).read().strip() if os.path.exists(os.path.join(d, "myjit.pid")) else "0"
        argv = [binary if a == "jitunwind" else a.replace("<pid>", pid) for a in shlex.split(cmd)]
        env = dict(os.environ, MYJIT_CALLS=str(TRACE_CALLS if argv[0] == binary and argv[1] == "trace" else CALLS))
        p = subprocess.run(argv, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=600)
        out, rc = p.stdout, p.returncode
        if os.path.exists(os.path.join(d, "myjit.pid")):
            pids.append(open(os.path.join(d, "myjit.pid")).read().strip())
        what = argv[1] if argv[0] == binary else " ".join(argv[:2]) if argv[0] == "perf" else argv[0]
        ok = {"./myjit": rc == 0,
              "lint": rc in (0, 1) and "'tramp'" in out,
              "perf record": rc == 0,
              "perf inject": rc == 0 and os.path.exists(os.path.join(d, "perf.jit.data")),
              "replay": rc in (0, 1) and jit_samples(out) > 0 and "injected by perf inject -j" in out,
              "trace": rc == 0 and "--expect" in out and " not met" not in out}.get(what)
        if ok is None:
            bad.append("%s: a command the test does not know" % cmd)
        elif not ok:
            bad.append("%s: exit %d: %s" % (cmd, rc, out.strip()[-600:]))
            break   # what follows needs what this one makes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", default="README.md")
    ap.add_argument("--bin", default="./jitunwind")
    ap.add_argument("--caseprog", default="build/x86_64/tests/trace/caseprog")
    ap.add_argument("--case", default="cases/x86_64/cpython-3.13-fp.case")
    a = ap.parse_args()
    lines, end, cmds = block(a.readme)
    bad = front_checks(a.readme, lines, end)
    if platform.machine() != "x86_64":
        skip("the front door's JIT runs cases/x86_64/cpython-3.13-fp.case; this host is %s" % platform.machine())
    if not shutil.which("perf"):
        skip("no perf on PATH")
    binary, caseprog, case = (os.path.abspath(x) for x in (a.bin, a.caseprog, a.case))
    with tempfile.TemporaryDirectory(prefix="ju-frontdoor-") as d:
        bad += run_block(cmds, binary, caseprog, case, d)
    if not bad:
        # the planted drifts: each must be caught
        plants = [("-k 1 dropped", [c.replace(" -k 1", "") for c in cmds]),
                  ("an --expect not met", [c.replace("--expect 'libdw = ok'", "--expect 'fp = ok'") for c in cmds])]
        for what, pc in plants:
            assert pc != cmds, what
            with tempfile.TemporaryDirectory(prefix="ju-frontdoor-") as d:
                if not run_block(pc, binary, caseprog, case, d):
                    bad.append("planted drift not caught: " + what)
    for b in bad:
        print("readme_frontdoor: " + b)
    print("readme_frontdoor: %d commands of README's front door: %s" % (len(cmds), "as it says" if not bad else
                                                                          "%d failures" % len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
