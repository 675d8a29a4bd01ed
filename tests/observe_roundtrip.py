#!/usr/bin/env python3
"""run --observe --write against the cases' own [expect]: every case of
CASEDIR with its [expect] keys removed (a comment left in their place) is
observed and rewritten in TMP, then must pass, with the same expectation
for every sample, unwinder, profile and dump size as the original (compared
through run --json's "expected"), every line outside [expect] and the
comment kept.  Control: one rewritten verdict flipped must fail the run.

usage: observe_roundtrip.py "BIN" CASEDIR TMP   (BIN may be "qemu-aarch64 ./x")"""
import glob, json, os, re, shlex, shutil, subprocess, sys

COMMENT = '# a comment observe --write must keep'


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return r.returncode, r.stdout


def strip_expect(text):
    out, in_expect = [], False
    for line in text.split('\n'):
        if line.strip().startswith('['):
            in_expect = line.strip().startswith('[expect]')
            out.append(line)
            if in_expect:
                out.append(COMMENT)
            continue
        if not in_expect:
            out.append(line)
    return '\n'.join(out)


def outside_expect(text):
    lines, in_expect = [], False
    for line in text.split('\n'):
        if line.strip().startswith('['):
            in_expect = line.strip().startswith('[expect]')
        if not in_expect and line.strip():
            lines.append(line)
    return lines


def expected(report):
    return {(c['name'], i, u): (s['profile'], s['stack_size'], v['expected'])
            for c in report['cases'] for i, s in enumerate(c['samples'])
            for u, v in s['unwinders'].items()}


def main():
    binary, casedir, tmp = shlex.split(sys.argv[1]), sys.argv[2], sys.argv[3]
    errs = []
    rc, out = run(binary + ['run', '--json', tmp + '/orig.json', casedir])
    if rc != 0:
        print(out[-3000:])
        return 'the original cases do not pass (exit %d)' % rc
    work = tmp + '/observe'
    os.makedirs(work)
    originals = {}
    for p in sorted(glob.glob(casedir + '/*.case')):
        text = open(p).read()
        dst = os.path.join(work, os.path.basename(p))
        originals[dst] = text
        open(dst, 'w').write(strip_expect(text))
    rc, out = run(binary + ['run', '--observe', '--write', work])
    if rc != 0:
        print(out[-3000:])
        return 'run --observe --write exit %d' % rc
    rc, out = run(binary + ['run', '--json', tmp + '/new.json', work])
    if rc != 0:
        errs.append('the observed cases do not all pass (exit %d):\n%s' % (rc, out[-3000:]))
    a = expected(json.load(open(tmp + '/orig.json')))
    b = expected(json.load(open(tmp + '/new.json'))) if os.path.exists(tmp + '/new.json') else {}
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            errs.append('%s sample %d %s: original expects %s, observed %s' % (k + (a.get(k), b.get(k))))
    for dst, text in originals.items():
        new = open(dst).read()
        if COMMENT not in new:
            errs.append('%s: the comment in [expect] is gone' % dst)
        if outside_expect(new) != outside_expect(text):
            errs.append('%s: lines outside [expect] changed' % dst)
    # control: one verdict of a rewritten block flipped fails the run
    first = sorted(originals)[0]
    text = open(first).read()
    head, sep, block = text.partition('[expect]')
    flipped = re.sub(r'^(\w+) = ok', r'\1 = wrong', block, count=1, flags=re.M)
    if flipped == block:
        flipped = re.sub(r'^(\w+) = (\w+)', r'\1 = ok', block, count=1, flags=re.M)
    open(first, 'w').write(head + sep + flipped)
    rc, out = run(binary + ['run', first])
    if rc != 1:
        errs.append('control: a flipped verdict in %s gave exit %d, not 1' % (first, rc))
    for e in errs[:30]:
        print('observe_roundtrip: ' + e)
    print('observe_roundtrip: %d expectations compared, %d problem(s)' % (len(a), len(errs)))
    return 1 if errs else 0


sys.exit(main())
