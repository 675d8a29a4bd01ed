#!/usr/bin/env python3
"""No command of jitunwind leaves files in /tmp or /dev/shm (make leak-test, part of make check;
docs/HACKING.md "Temporary files").

  tests/leakcheck_test.py JITUNWIND [JITPROG]

- tools/leakcheck itself, on planted leaks: a VM's jit-PID.dump (its header's pid printed),
  perf-PID.map, 3 jitted-PID-N.so (one group), a /dev/shm directory, a process left running;
  a clean command passes; a failing command keeps its status; a skip (77) that leaves a file
  fails; the planted files are in its private /tmp, never in this machine's.
- jitunwind's commands that write there, each under tools/leakcheck: run with the perf column
  (its jitdump in /tmp, perf inject's jitted .so files beside it, the lock of its pid),
  record and replay of the recording (the views' /dev/shm/jitunwind-rr-PID-XXXXXX, its vDSO
  copy), trace of tests/trace/jitprog with its dump in /tmp, perf-check of one case.
  Negative control: the same run with JU_PERF_KEEP=1 (the perf column keeps its files on
  purpose) must be found leaving them.
A check that cannot run here (no perf, no ptrace, no private /tmp) is a visible SKIP.
Exit 0 passed, 1 failed, 77 nothing could run.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEAK = os.path.join(ROOT, "tools", "leakcheck")
CASE = os.path.join(ROOT, "cases", "x86_64", "cpython-3.13-fp.case")
fails = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)
    return cond


def leak(cmd, d, name, env=None, cwd=None):
    """(status, stderr, what was left) of cmd under tools/leakcheck"""
    js = os.path.join(d, name + ".json")
    p = subprocess.run([LEAK, "--json", js, "--"] + cmd, capture_output=True, text=True, timeout=900,
                       env=env, cwd=cwd)
    left = {"left": [], "running": []}
    if os.path.exists(js):
        with open(js) as f:
            left = json.load(f)
    return p.returncode, p.stdout + p.stderr, left


PLANT = r"""
import os, struct, subprocess, sys
pid = os.getpid()
with open("/tmp/jit-%d.dump" % pid, "wb") as f:
    f.write(struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, pid, 0, 0))
open("/tmp/perf-%d.map" % pid, "w").write("1000 10 f\n")
for i in range(3):
    open("/tmp/jitted-%d-%d.so" % (pid, i), "w").close()
os.makedirs("/dev/shm/jitunwind-rr-%d-abcdef/sub" % pid)
open("/dev/shm/jitunwind-rr-%d-abcdef/sub/x" % pid, "w").write("xyz")
print(pid)
"""


def tool_checks(d):
    rc, out, left = leak(["true"], d, "clean")
    if "not checked" in out:
        print("SKIP leak-test: %s" % out.strip())
        return False
    check(rc == 0 and left["left"] == [] and "left nothing" in out, "a clean command passes (rc %d)" % rc)
    p = subprocess.run([LEAK, "--", sys.executable, "-c", PLANT], capture_output=True, text=True, timeout=120)
    pid = p.stdout.strip()
    check(p.returncode == 1, "planted leaks fail (rc %d)" % p.returncode)
    for want in ("/tmp/jit-%s.dump [header pid %s]: 1 file, 40 bytes" % (pid, pid),
                 "/tmp/perf-%s.map: 1 file, 10 bytes" % pid,
                 "/tmp/jitted-%s-*.so (3 entries): 3 files, 0 bytes" % pid,
                 "/dev/shm/jitunwind-rr-%s-abcdef: 1 file, 3 bytes" % pid):
        check(want in p.stderr, "planted: '%s' named (%s)" % (want, p.stderr.strip()[-300:]))
    check(not os.path.exists("/tmp/jit-%s.dump" % pid) and not os.path.exists("/dev/shm/jitunwind-rr-%s-abcdef" % pid),
          "the planted files were in leakcheck's private /tmp and /dev/shm, not this machine's")
    rc, out, _ = leak(["sh", "-c", "exit 3"], d, "fails")
    check(rc == 3, "a failing command keeps its status (rc %d)" % rc)
    rc, out, _ = leak(["sh", "-c", "exit 77"], d, "skips")
    check(rc == 77, "a clean skip keeps 77 (rc %d)" % rc)
    rc, out, _ = leak(["sh", "-c", "touch /tmp/jitunwind-x; exit 77"], d, "skipleak")
    check(rc == 1 and "/tmp/jitunwind-x" in out, "a skip that leaves a file fails (rc %d)" % rc)
    rc, out, left = leak(["sh", "-c", "sleep 30 >/dev/null 2>&1 & exit 0"], d, "running")
    check(rc == 1 and "left running" in out and "(sleep)" in out, "a process left running is named (rc %d: %s)"
          % (rc, out.strip()[-200:]))
    for pid_comm in left["running"]:              # not ours to keep
        try:
            os.kill(int(pid_comm.split()[0]), 9)
        except (OSError, ValueError):
            pass
    return True


def have_perf():
    return shutil.which("perf") and subprocess.run(["perf", "version"], capture_output=True).returncode == 0


def command_checks(binary, jitprog, d):
    env = dict(os.environ)
    env.pop("JU_PERF_KEEP", None)
    if os.environ.get("RUNNER"):
        print("SKIP leak-test: the build runs under %s (the commands' checks run the native build)"
              % os.environ["RUNNER"])
        return
    if not os.path.exists(CASE) or os.uname().machine != "x86_64":
        print("SKIP leak-test: the commands' checks use an x86_64 case (this is %s)" % os.uname().machine)
        return
    perf = have_perf()
    # run: the perf column writes jit-PID.dump in /tmp and perf inject the jitted .so files
    rc, out, left = leak([binary, "run", CASE], d, "run", env=env)
    check(rc == 0 and not left["left"], "run with the perf column leaves nothing (rc %d: %s)" % (rc, out.strip()[-300:]))
    if perf and "skip: the perf column" not in out:
        rc, out, left = leak([binary, "run", CASE], d, "keep", env=dict(env, JU_PERF_KEEP="1"))
        names = [g["name"] for g in left["left"]]
        check(rc == 1 and any(re.fullmatch(r"jitted-\d+-\*\.so", n) for n in names),
              "negative control: JU_PERF_KEEP=1 keeps the perf column's files and leakcheck finds them (%s)" % names)
    else:
        print("SKIP leak-test: no working perf (the perf column's files unchecked)")
    # record + replay: the views in /dev/shm/jitunwind-rr-PID-*, the vDSO copy
    rec = os.path.join(d, "rec")
    os.makedirs(rec)
    if perf:
        script = ('"$0" record -o s.bin --jitdump-dir "$PWD" --perf-data p.data "$1" >log 2>&1 && '
                  '"$0" replay p.data >out 2>&1; r=$?; [ $r = 0 ] || [ $r = 1 ]')
        rc, out, left = leak(["sh", "-c", script, binary, CASE], d, "replay", env=env, cwd=rec)
        check(rc == 0 and not left["left"], "record and replay leave nothing (rc %d: %s)" % (rc, out.strip()[-300:]))
        rc, out, left = leak([binary, "perf-check", CASE], d, "perfcheck", env=env, cwd=rec)
        check(rc in (0, 77) and not left["left"], "perf-check leaves nothing (rc %d: %s)" % (rc, out.strip()[-300:]))
    else:
        print("SKIP leak-test: no working perf (record --perf-data, replay, perf-check unchecked)")
    if not jitprog:
        print("SKIP leak-test: no jitprog given (trace unchecked)")
        return
    rc, out, left = leak([binary, "trace", "--", jitprog, "/tmp", "2", "out.txt"], d, "trace", env=env, cwd=rec)
    if rc == 77 or "ptrace" in out and rc:
        print("SKIP leak-test: trace cannot run here: %s" % out.strip()[-200:])
        return
    # the traced program's own jitdump is its (the user's): trace leaves it; jitprog writes its
    # dump in the directory it is given, here /tmp: that one file, named by jitprog's pid
    rest = [g["name"] for g in left["left"] if not re.fullmatch(r"(jit-\d+\.dump|perf-\d+\.map)", g["name"])]
    m = re.search(r"trace: pid (\d+)", out)
    mine = [g["name"] for g in left["left"] if m and g["name"] in ("jit-%s.dump" % m.group(1), "perf-%s.map" % m.group(1))]
    check(rc in (0, 1) and not rest and len(mine) == len(left["left"]),
          "trace leaves only the traced program's own files (%s; rc %d)" % ([g["name"] for g in left["left"]], rc))


def main():
    binary = os.path.abspath(sys.argv[1])
    jitprog = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
    d = tempfile.mkdtemp(prefix="ju-leak-test-", dir=os.path.join(ROOT, "build"))
    try:
        if not tool_checks(d):
            return 77
        command_checks(binary, jitprog, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("leak-test: %d checks, %d failed" % (checks, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
