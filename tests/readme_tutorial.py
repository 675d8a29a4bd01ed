#!/usr/bin/env python3
"""Keep README.md's tutorial true: run its commands and diff their output with what it shows.

  tests/readme_tutorial.py [--readme README.md] [--bin ./jitunwind] [--arch ARCH] [--keep]

The README marks the tutorial with HTML comments (invisible on GitHub), each followed by one
fenced block:
  <!-- tutorial: file NAME -->   the block is written to NAME in the work directory
  <!-- tutorial: file NAME mirrors PATH -->   the same, and its [code] and [unwind] sections
                                 must say what those of PATH (a shipped case, relative to the
                                 README's directory) say, comments and blanks aside
  <!-- tutorial: session -->     lines "$ CMD" are commands; the lines after one, up to the next
                                 "$ " line or the block's end, are what it prints (stdout and
                                 stderr together); a last line "[exit N]" is its exit status
                                 (0 when absent)
Files and commands run in order, in a new temporary directory where ./jitunwind is the binary
of the checkout (--bin). Both sides are normalized before the diff: hex numbers >= 0x10000
become ADDR<n> (numbered by first appearance in that output, so equal addresses stay equal),
register values (NAME=0x...: explain's registers, flags among them) VALUE, times T, pids PID,
perf's version VERSION, the work directory $WORK, and runs of blanks one blank.
Before it passes, it plants a drift (a verdict word changed in the first command's shown output)
and a mirror difference (a byte of the file's [unwind] changed) and fails unless both are caught.
Exit: 0 no drift; 1 drift (the unified diff per command), a command with another exit status, a
mirrored file that says something else than its case, or a planted drift not caught;
2 a README without tutorial markers or with a malformed one; 77 a prerequisite is missing
(another ARCH than the tutorial's x86_64 case, no working perf for the perf column the README
shows, or libunwind, elfutils or perf versions other than the README's recorded-with marker
names: a Debian 13 or sid leg unwinds some points differently), with the reason.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- tutorial: (file (\S+)(?: mirrors (\S+))?|session) -->\s*$")
RECORDED = re.compile(r"^<!-- tutorial: recorded-with ((?:\w+=[\d.]+ ?)+) -->\s*$", re.M)
HEX = re.compile(r"0x[0-9a-fA-F]+")
TIME = re.compile(r"\b\d+(\.\d+)? (s|ms|us)\b")
PID = re.compile(r"\b(jit|perf|jitted)-\d+")
PERFVER = re.compile(r"\bperf (version )?\d+\.\d+(\.\d+)*")
REGVAL = re.compile(r"\b(\w+)=0x[0-9a-fA-F]+\b")
PERF_SKIP = "skip: the perf column"


def die(code, msg):
    print(f"readme_tutorial: {msg}", file=sys.stderr if code == 2 else sys.stdout)
    sys.exit(code)


def parse(path):
    """The tutorial's steps: ("file", name, text, line, mirror) / ("cmd", cmd, out, exit, line)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    steps, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            die(2, f"{path}:{i + 1}: a tutorial marker must be followed by a ``` block")
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        if k == len(lines):
            die(2, f"{path}:{j + 1}: the ``` block is not closed")
        body = lines[j + 1:k]
        if m.group(2):
            steps.append(("file", m.group(2), "\n".join(body) + "\n", i + 1, m.group(3)))
        else:
            steps.extend(session(path, body, j + 2))
        i = k + 1
    if not steps:
        die(2, f"{path}: no <!-- tutorial: ... --> markers")
    return steps


def session(path, body, first):
    out, cur = [], None
    for n, line in enumerate(body):
        if line.startswith("$ "):
            cur = ["cmd", line[2:], [], 0, first + n]
            out.append(cur)
        elif cur is None:
            die(2, f"{path}:{first + n}: output before the first '$ ' command")
        else:
            cur[2].append(line)
    for c in out:
        if c[2] and re.fullmatch(r"\[exit \d+\]", c[2][-1]):
            c[3] = int(c[2].pop()[6:-1])
    return [tuple(c) for c in out]


def normalize(text, work):
    seen = {}

    def hexrep(m):
        v = int(m.group(0), 16)
        if v < 0x10000:
            return m.group(0)
        seen.setdefault(v, f"ADDR{len(seen) + 1}")
        return seen[v]

    res = []
    for line in text.split("\n"):
        line = line.replace(work, "$WORK")
        line = PERFVER.sub("perf VERSION", line)
        line = PID.sub(lambda m: m.group(1) + "-PID", line)
        line = TIME.sub(lambda m: "T " + m.group(2), line)
        line = REGVAL.sub(lambda m: m.group(1) + "=VALUE", line)
        line = HEX.sub(hexrep, line)
        res.append(re.sub(r"\s+", " ", line).rstrip())
    while res and res[-1] == "":
        res.pop()
    return res


def sections(text, names=("code", "unwind")):
    """The lines of the named sections of a case, comments, blanks and spacing aside."""
    out, cur = [], None
    for line in text.split("\n"):
        line = re.sub(r"\s+", " ", line.split("#", 1)[0]).strip()
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            cur = m.group(1)
        elif line and cur in names:
            out.append(f"[{cur}] {line}")
    return out


def mirror_diff(readme, name, text, line, mirror):
    """'' when the tutorial's file says what the shipped case says, else why not."""
    path = os.path.join(os.path.dirname(os.path.abspath(readme)), mirror)
    try:
        case = open(path, encoding="utf-8").read()
    except OSError as e:
        return f"README.md:{line}: {name} mirrors {mirror}: {e.strerror}"
    want, got = sections(case), sections(text)
    if not want:
        return f"README.md:{line}: {mirror} has no [code] or [unwind] lines"
    if want == got:
        return ""
    d = difflib.unified_diff(want, got, mirror, f"README.md:{line} {name}", lineterm="")
    return "\n".join(d)


def plant(steps, runs, readme):
    """Negative controls: a drift and a mirror difference planted must both be caught."""
    missed = []
    if runs:
        want, got, work = runs[0]
        bad = re.sub(r"= ok\b", "= truncated", "\n".join(want), count=1)
        if bad == "\n".join(want):
            die(2, f"{readme}: the first command's output shows no '= ok' to plant a drift in")
        if normalize(bad, work) == normalize(got, work):
            missed.append("a verdict changed in the shown output")
    for st in steps:
        if st[0] == "file" and st[4]:
            planted = re.sub(r"(cfi = bytes .*)\b([0-9a-f]{2})$", lambda m: m.group(1) + "ff"
                             if m.group(2) != "ff" else m.group(1) + "00", st[2], flags=re.M)
            if planted == st[2] or not mirror_diff(readme, st[1], planted, st[3], st[4]):
                missed.append(f"a byte of {st[1]}'s [unwind] changed")
    if missed:
        print("readme_tutorial: FAIL: planted drift not caught: " + "; ".join(missed))
        sys.exit(1)


def versions(bin_path):
    """This machine's libunwind and elfutils (Debian's -dev packages) and perf, as major.minor."""
    def deb(pkg):
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        m = re.match(r"(?:\d+:)?(\d+\.\d+)", p.stdout) if p.returncode == 0 else None
        return m.group(1) if m else "none"
    perf = "none"
    try:
        p = subprocess.run(["perf", "version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=30)
        m = re.search(r"perf version (\d+\.\d+)", p.stdout)
        perf = m.group(1) if m else "none"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"libunwind": deb("libunwind-dev"), "elfutils": deb("libdw-dev"), "perf": perf}


def check_recorded(readme, bin_path):
    """77 when the README's outputs were recorded with other library or perf versions."""
    m = RECORDED.search(open(readme, encoding="utf-8").read())
    if not m:
        die(2, f"{readme}: no '<!-- tutorial: recorded-with NAME=VERSION ... -->' marker")
    want = dict(kv.split("=") for kv in m.group(1).split())
    have = versions(bin_path)
    diff = [f"{k} {have.get(k, '?')} (the README's: {v})" for k, v in want.items() if have.get(k) != v]
    if diff:
        die(77, "skip: the tutorial's outputs were recorded with other versions; here " + ", ".join(diff))


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--readme", default=os.path.join(here, "README.md"))
    ap.add_argument("--bin", default=os.path.join(here, "jitunwind"))
    ap.add_argument("--arch", default=os.uname().machine.replace("arm64", "aarch64"))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    steps = parse(a.readme)
    if a.arch != "x86_64":
        die(77, f"skip: the tutorial's case is an x86_64 trampoline; ARCH={a.arch}")
    if not os.access(a.bin, os.X_OK):
        die(2, f"{a.bin}: no binary (make all first)")
    check_recorded(a.readme, a.bin)
    work = tempfile.mkdtemp(prefix="ju-tutorial-")
    os.symlink(os.path.abspath(a.bin), os.path.join(work, "jitunwind"))
    drift, ran, runs = [], 0, []
    try:
        for st in steps:
            if st[0] == "file":
                with open(os.path.join(work, st[1]), "w") as f:
                    f.write(st[2])
                why = mirror_diff(a.readme, *st[1:]) if st[4] else ""
                if why:
                    drift.append(why)
                continue
            _, cmd, want, want_rc, line = st
            p = subprocess.run(["bash", "-c", cmd], cwd=work, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace")
            ran += 1
            if PERF_SKIP in p.stdout:
                why = next(l for l in p.stdout.split("\n") if PERF_SKIP in l)
                die(77, f"skip: the README shows the perf column and this machine has none: {why.strip()}")
            runs.append((want, p.stdout, work))
            got_n, want_n = normalize(p.stdout, work), normalize("\n".join(want), work)
            if got_n != want_n or p.returncode != want_rc:
                d = list(difflib.unified_diff(want_n, got_n, f"README.md:{line} (normalized)",
                                              f"$ {cmd} (normalized)", lineterm=""))
                if p.returncode != want_rc:
                    d.append(f"exit status {p.returncode}, README says {want_rc}")
                drift.append("\n".join(d))
    finally:
        if a.keep:
            print(f"readme_tutorial: work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if drift:
        print("\n\n".join(drift))
        print(f"readme_tutorial: FAIL: {len(drift)} of {ran} tutorial commands print something "
              "other than README.md shows")
        sys.exit(1)
    plant(steps, runs, a.readme)
    mirrors = sum(1 for st in steps if st[0] == "file" and st[4])
    print(f"readme_tutorial: planted drift caught; {mirrors} tutorial files say what their cases say")
    print(f"readme_tutorial: pass: {ran} tutorial commands print what README.md shows")


if __name__ == "__main__":
    main()
