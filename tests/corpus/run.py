#!/usr/bin/env python3
"""The corpus of real producers (tools/corpus, docs/found-in-real-jits.md) in make check.

  tests/corpus/run.py --bin ./jitunwind [--runner qemu-aarch64] [--save]

For each line of tests/corpus/MANIFEST (NAME PRODUCER TRIM-ARGS...):
 1. `jitunwind lint` and `jitunwind dump` of the committed trimmed dump tests/corpus/NAME.dump
    against the goldens NAME.lint.txt and NAME.dump.txt (--save writes them instead);
 2. when the whole recording is in the corpus cache (CORPUS_CACHE, default build/corpus;
    tools/corpus record PRODUCER), the dump trimmed again from it with the same arguments
    must lint, load by load, as those loads did in the whole dump (every finding about a
    load: rule and message, offsets in the file taken out); without the cache this part
    is a visible skip.
Exit 0 all passed, 1 a difference (shown), 2 bad usage."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", timeout=600)


def manifest():
    out = []
    with open(os.path.join(HERE, "MANIFEST")) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) < 2:
                sys.stderr.write(f"tests/corpus/MANIFEST:{n}: expected NAME PRODUCER TRIM-ARGS...\n")
                sys.exit(2)
            out.append((line[0], line[1], line[2:]))
    return out


GOLDEN_SUITE = "bookworm"   # where the goldens were saved (capstone 4)


def os_suite():
    """this machine's Debian codename, or None"""
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("VERSION_CODENAME="):
                    return line.split("=", 1)[1].strip().strip('"') or None
    except OSError:
        pass
    return None


def golden(binary, name, save):
    """lint and dump of the trimmed dump against the goldens; the list of differences."""
    path = f"tests/corpus/{name}.dump"
    bad = []
    for what, cmd in (("lint", binary + ["lint", path]), ("dump", binary + ["dump", path])):
        if what == "dump" and not save and os_suite() not in (None, GOLDEN_SUITE):
            print(f"{name}: skipped the dump golden: its instruction text is capstone 4's (Debian "
                  f"{GOLDEN_SUITE}); this is Debian {os_suite()} (capstone 5 writes immediates and operands "
                  f"differently); lint compared")
            continue
        r = run(cmd)
        if r.returncode not in (0, 1):
            bad.append(f"{name}: `{' '.join(cmd)}` exit {r.returncode}:\n{r.stdout[-2000:]}")
            continue
        text = f"exit {r.returncode}\n{r.stdout}"
        gpath = os.path.join(HERE, f"{name}.{what}.txt")
        if save:
            with open(gpath, "w") as f:
                f.write(text)
            continue
        try:
            with open(gpath) as f:
                want = f.read()
        except OSError:
            bad.append(f"{name}: no golden {gpath} (tests/corpus/run.py --save)")
            continue
        if want != text:
            a, b = want.splitlines(), text.splitlines()
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            bad.append(f"{name}.{what}.txt differs at line {i + 1}:\n  golden: "
                       f"{a[i] if i < len(a) else '<end>'}\n  now:    {b[i] if i < len(b) else '<end>'}")
    return bad


def per_load(binary, dump):
    """{(code_index, name): sorted findings} for the loads of a dump, from lint --json."""
    loads = {}
    r = run([sys.executable, os.path.join(HERE, "trim.py"), dump, "--list"])
    for line in r.stdout.splitlines():
        f = line.split(" ", 4)
        if len(f) == 5 and f[0].startswith("0x"):
            loads[int(f[0], 16)] = (f[1], f[4])
    r = run(binary + ["lint", "--json", "--all", dump])
    doc = json.loads(r.stdout)
    out = {key: [] for key in loads.values()}
    for fi in doc["files"][0]["findings"]:
        key = loads.get(fi.get("load", 0))
        if key is None:
            continue
        # offsets in the file differ between the whole dump and the trimmed one, and so does
        # the count of loads a once-per-pattern finding (JD087) says it covers
        msg = re.sub(r"0x[0-9a-f]+", "0x?", fi["message"])
        msg = re.sub(r"^\d+ CODE_LOADs, the first ", "N CODE_LOADs, the first ", msg)
        out[key].append(f"{fi['id']} {fi.get('code_offsets', '')} {msg}")
    return {k: sorted(v) for k, v in out.items()}


def whole_vs_trimmed(binary, name, producer, args):
    cache = os.environ.get("CORPUS_CACHE", os.path.join(SRC, "build", "corpus"))
    d = os.path.join(cache, producer)
    dumps = sorted(x for x in os.listdir(d) if re.match(r"jit-\d+\.dump$", x)) if os.path.isdir(d) else []
    if not dumps:
        return None, f"{name}: skipped the whole-vs-trimmed check: no recording of {producer} in {cache} " \
                     f"(tools/corpus record {producer})"
    if "--drop-unwind" in args:
        return None, f"{name}: no whole-vs-trimmed check (--drop-unwind changes the loads on purpose)"
    whole = os.path.join(d, dumps[0])
    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, dumps[0])
        r = run([sys.executable, os.path.join(HERE, "trim.py"), whole, t] + args)
        if r.returncode:
            return [f"{name}: trimming {whole} failed:\n{r.stdout}"], None
        wl, tl = per_load(binary, whole), per_load(binary, t)
    bad = []
    for key, fs in tl.items():
        if wl.get(key) != fs:
            bad.append(f"{name}: load {key} lints differently trimmed:\n  whole:   {wl.get(key)}\n  trimmed: {fs}")
    return bad, f"{name}: {len(tl)} loads lint as in the whole {whole}"


def main():
    args = sys.argv[1:]
    save = "--save" in args
    # the binary as a command: under its RUNNER (qemu-user) when another arch's
    binary = [args[args.index("--bin") + 1] if "--bin" in args else "./jitunwind"]
    if "--runner" in args and args[args.index("--runner") + 1]:
        binary = [args[args.index("--runner") + 1]] + binary
    os.chdir(SRC)
    bad, checked, skipped = [], 0, 0
    for name, producer, trim in manifest():
        bad += golden(binary, name, save)
        checked += 1
        b, note = whole_vs_trimmed(binary, name, producer, trim)
        if b is None:
            skipped += 1
        else:
            bad += b
        print(note)
    for b in bad:
        print("FAIL " + b)
    print(f"corpus: {checked} trimmed dumps against their lint and dump goldens, "
          f"{checked - skipped} checked against their whole recording, {skipped} not (no cache, or --drop-unwind), "
          f"{len(bad)} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
