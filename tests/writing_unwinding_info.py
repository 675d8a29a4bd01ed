#!/usr/bin/env python3
"""docs/writing-unwinding-info.md's worked example, checked against the bytes.

  tests/writing_unwinding_info.py [--doc docs/writing-unwinding-info.md] [--bin ./jitunwind]

The table after `<!-- worked-example: nested-depth3 -->` gives each quantity of
cases/x86_64/nested-depth3.case's first load as the project's JIT-side writer writes it
(`jitunwind record --perf-data`) and real `perf inject -j` lays it out. Each is computed here
without the project's reader: the dump's record fields from its bytes (struct, the jitdump
specification's offsets), the jitted .so's sections with `readelf -SW`, the FDE's offset and
range with `readelf --debug-dump=frames`, pc_begin and the header's fields from `readelf -x`,
the injected MMAP2s from `perf script --show-mmap-events`; any value that differs from the
doc's is a failure. Before it passes it plants a wrong number (pc_begin) in a copy of the table
and fails unless that is caught.
Exit 0 the doc's numbers are the bytes', 1 some differ, 2 no table in the doc, 77 no perf, no
readelf, or not an x86_64 host (the case is x86_64), with the reason."""
import argparse, glob, os, platform, re, shutil, struct, subprocess, sys, tempfile

MARK = "<!-- worked-example: nested-depth3 -->"


def skip(why):
    print("writing_unwinding_info: skipped: " + why)
    sys.exit(77)


def sh(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def doc_table(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    if MARK not in lines:
        print("writing_unwinding_info: %s: no %s" % (path, MARK), file=sys.stderr)
        sys.exit(2)
    i, rows = lines.index(MARK) + 3, {}
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip() for c in lines[i].strip("|").split("|")]
        rows[cells[0]] = int(cells[1], 16)
        i += 1
    return rows


def dump_fields(path):
    """the first UNWINDING_INFO's sizes and the CODE_LOADs' addresses, from the bytes"""
    data = open(path, "rb").read()
    off, unw, loads = struct.unpack_from("<I", data, 8)[0], None, []
    while off + 16 <= len(data):
        rid, size = struct.unpack_from("<II", data, off)
        if rid == 4 and unw is None:
            unw = struct.unpack_from("<QQQ", data, off + 16)
        elif rid == 0:
            addr, csize, idx = struct.unpack_from("<QQQ", data, off + 32)
            loads.append((idx, addr, csize))
        if size < 16:
            break
        off += size
    return unw, sorted(loads)


def hexbytes(so, sec):
    """readelf -x SECTION: {address: byte}"""
    out, b = sh(["readelf", "-x", sec, so]).stdout, {}
    for m in re.finditer(r"^\s+0x([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})", out, re.M):
        a = int(m.group(1), 16)
        for byte in bytes.fromhex("".join(m.group(2).split())):
            b[a] = byte
            a += 1
    return b


def s32(b, a):
    return struct.unpack("<i", bytes(b[a + i] for i in range(4)))[0]


def measure(binary, d):
    case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases", "x86_64", "nested-depth3.case")
    r = sh([binary, "record", "-o", "s.bin", "--jitdump-dir", d, "--perf-data", "p.data", case], cwd=d)
    if r.returncode:
        sys.exit("writing_unwinding_info: jitunwind record failed: " + r.stderr[-400:])
    r = sh(["perf", "inject", "-j", "-i", "p.data", "-o", "pi.data"], cwd=d)
    if r.returncode:
        skip("perf inject -j failed (%d): %s" % (r.returncode, r.stderr.strip()[-200:]))
    dump = glob.glob(os.path.join(d, "jit-*.dump"))[0]
    pid = re.search(r"jit-(\d+)\.dump", dump).group(1)
    (usize, hsize, msize), loads = dump_fields(dump)
    so = os.path.join(d, "jitted-%s-0.so" % pid)
    secs = {m.group(1): (int(m.group(2), 16), int(m.group(3), 16)) for m in re.finditer(
        r"\] (\.\S+)\s+\S+\s+([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+)", sh(["readelf", "-SW", so]).stdout)}
    fde = re.search(r"^([0-9a-f]{8}) \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)",
                    sh(["readelf", "--debug-dump=frames", so]).stdout, re.M)
    eh, hdr = secs[".eh_frame"][0], secs[".eh_frame_hdr"][0]
    fde_at = eh + int(fde.group(1), 16)
    ehb, hb = hexbytes(so, ".eh_frame"), hexbytes(so, ".eh_frame_hdr")
    mm = {}
    for m in re.finditer(r"PERF_RECORD_MMAP2 .*\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ 0x([0-9a-f]+) .*jitted-%s-(\d+)\.so"
                         % pid, sh(["perf", "script", "-i", "pi.data", "--show-mmap-events"], cwd=d).stdout):
        mm[int(m.group(4))] = (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
    return {
        "code_size": loads[0][2], "unwinding_size": usize, "eh_frame_hdr_size": hsize, "mapped_size": msize,
        ".text": secs[".text"][0], ".eh_frame": eh, ".eh_frame size": secs[".eh_frame"][1], ".eh_frame_hdr": hdr,
        "FDE": fde_at, "pc_begin field": fde_at + 8, "pc_begin": s32(ehb, fde_at + 8),
        "pc_range": int(fde.group(3), 16) - int(fde.group(2), 16),
        "eh_frame_ptr": s32(hb, hdr + 4), "table initial_loc": s32(hb, hdr + 12), "table fde": s32(hb, hdr + 16),
        "MMAP2 pgoff": mm[0][2], "MMAP2 len": mm[0][1], "load stride": mm[1][0] - mm[0][0],
    }, (int(fde.group(2), 16), secs[".text"][0])


def compare(doc, got):
    bad = ["%s: the doc says %s, the bytes %s" % (k, hex(v), hex(got[k]) if k in got else "nothing")
           for k, v in doc.items() if got.get(k) != v]
    bad += ["%s: measured, not in the doc" % k for k in got if k not in doc]
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", default="docs/writing-unwinding-info.md")
    ap.add_argument("--bin", default="./jitunwind")
    a = ap.parse_args()
    doc = doc_table(a.doc)
    if platform.machine() != "x86_64":
        skip("the worked example is an x86_64 case; this host is %s" % platform.machine())
    for tool in ("perf", "readelf"):
        if not shutil.which(tool):
            skip("no %s on PATH" % tool)
    with tempfile.TemporaryDirectory(prefix="ju-unwdoc-") as d:
        got, (pc_lo, text) = measure(os.path.abspath(a.bin), d)
    bad = compare(doc, got)
    if pc_lo != text:
        bad.append("readelf's FDE starts at 0x%x, .text at 0x%x" % (pc_lo, text))
    planted = dict(doc, **{"pc_begin": doc.get("pc_begin", 0) + 8})
    if not compare(planted, got):
        bad.append("a planted wrong pc_begin was not caught")
    for b in bad:
        print("writing_unwinding_info: " + b)
    print("writing_unwinding_info: %d numbers of the worked example: %s" % (len(doc), "as the bytes say" if not bad
                                                                              else "%d differ" % len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
