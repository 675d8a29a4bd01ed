#!/usr/bin/env python3
"""Trim a real producer's jitdump to the loads that matter, byte for byte.

  tests/corpus/trim.py IN OUT [--name GLOB]... [--first N] [--drop-unwind GLOB]... [--list]

Keeps the 40-byte header as written and, for each CODE_LOAD chosen (its name matches a
GLOB, fnmatch; at most N of them, in file order), the load and the records perf hands it:
the DEBUG_INFO and UNWINDING_INFO pending since the previous CODE_LOAD (perf's
jit_repipe_* keep the last of each), unchanged.  A sticky UNWINDING_INFO (one that perf
keeps for later loads, eh_frame_hdr_size 0) is written again before each chosen load it
served.  --drop-unwind leaves out the UNWINDING_INFO of the chosen loads so named (a
producer that writes none for them: the JD028/JD029 tests).  --list prints each load: offset, code_index, code_size, has unwinding info, name.
Exit 2 (a message with the offset) on a dump it cannot walk."""
import fnmatch
import struct
import sys

LOAD, MOVE, DEBUG, CLOSE, UNWIND = 0, 1, 2, 3, 4
MAX_RECORDS = 10_000_000


def die(msg):
    sys.stderr.write(f"trim.py: {msg}\n")
    sys.exit(2)


def records(data, path):
    """(offset, id, bytes) of each record; stops at the end or a truncated record."""
    if len(data) < 40 or data[:4] not in (b"DTiJ", b"JiTD"):
        die(f"{path}: offset 0: not a jitdump (magic 'JiTD' expected)")
    end = "<" if data[:4] == b"DTiJ" else ">"
    hsize = struct.unpack_from(end + "I", data, 8)[0]
    off = max(40, min(hsize, 80))
    for _ in range(MAX_RECORDS):
        if off + 8 > len(data):
            return
        rid, size = struct.unpack_from(end + "II", data, off)
        if size < 16 or off + size > len(data):
            sys.stderr.write(f"trim.py: {path}: offset 0x{off:x}: record of {size} bytes past the end "
                             f"({len(data)}): the walk stops there, as perf's does\n")
            return
        yield off, rid, data[off:off + size], end
        off += size
    die(f"{path}: more than {MAX_RECORDS} records")


def load_fields(rec, end):
    _pid, _tid, _vma, addr, size, index = struct.unpack_from(end + "IIQQQQ", rec, 16)
    nul = rec.find(b"\0", 56)
    name = rec[56:nul].decode("utf-8", "replace") if nul >= 0 else "?"
    return addr, size, index, name


def main():
    args = sys.argv[1:]
    globs, first, listing, pos, drop = [], None, False, [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--name" and i + 1 < len(args):
            globs.append(args[i + 1]); i += 2
        elif a == "--drop-unwind" and i + 1 < len(args):
            drop.append(args[i + 1]); i += 2
        elif a == "--first" and i + 1 < len(args):
            first = int(args[i + 1]); i += 2
        elif a == "--list":
            listing = True; i += 1
        elif a.startswith("-"):
            die(f"unknown option '{a}' (--name GLOB, --first N, --drop-unwind GLOB, --list)")
        else:
            pos.append(a); i += 1
    if len(pos) != (1 if listing else 2):
        die("usage: trim.py IN OUT [--name GLOB]... [--first N] | trim.py IN --list")
    with open(pos[0], "rb") as f:
        data = f.read()
    out = [data[:40]]
    unw = dbg = None
    sticky = None
    kept = 0
    for off, rid, rec, end in records(data, pos[0]):
        if rid == UNWIND:
            unw = rec
            hdr_size = struct.unpack_from(end + "Q", rec, 24)[0]
            sticky = rec if hdr_size == 0 else None
        elif rid == DEBUG:
            dbg = rec
        elif rid == LOAD and len(rec) >= 57:
            addr, size, index, name = load_fields(rec, end)
            has = unw is not None or sticky is not None
            if listing:
                print(f"0x{off:x} {index} {size} {'unw' if has else 'none'} {name}")
            elif (not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)) and \
                    (first is None or kept < first):
                kept += 1
                if dbg is not None:
                    out.append(dbg)
                if any(fnmatch.fnmatchcase(name, g) for g in drop):
                    pass
                elif unw is not None or sticky is not None:
                    out.append(unw if unw is not None else sticky)
                out.append(rec)
            unw = dbg = None
    if listing:
        return 0
    if not kept:
        die(f"{pos[0]}: no CODE_LOAD matches {globs or '*'}")
    with open(pos[1], "wb") as f:
        f.write(b"".join(out))
    print(f"{pos[1]}: {kept} loads, {sum(map(len, out))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
