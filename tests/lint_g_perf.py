#!/usr/bin/env python3
"""lint's -g rules against real `perf record -g`: tests/realg/jitg.c writes three
x86_64 JIT functions (no frame record; a frame record; rbp pointed at other data)
and their jitdump, and runs one of them, which calls spin().  In each recording the
kernel's frame-pointer walk must show what lint says of that function: below
jit_noframe its caller call_noframe is missing from every chain (JD084), below
jit_framed call_framed is in them (no finding), below jit_clobber the chain holds
the data rbp points at (0x2222, JD085); and lint of the dump says exactly that, by
function name.

  tests/lint_g_perf.py [--bin B] [--perf P] [--cc CC]

Exit 0 pass, 1 a disagreement, 77 no perf, no permission, or not an x86_64 host
(the JIT's code is x86_64), with the reason printed."""
import json, os, platform, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# what each run's chains below spin() must (and must not) hold, and lint's -g finding
RUNS = {
    'noframe': {'must': [], 'never': ['call_noframe'], 'rule': 'JD084'},
    'framed': {'must': ['call_framed'], 'never': [], 'rule': None},
    'clobber': {'must': ['0x2222'], 'never': ['call_clobber'], 'rule': 'JD085'},
}


def sh(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def skip(why):
    print('lint_g_perf: skipped: ' + why)
    sys.exit(77)


def chains(perf, d):
    """the chains of the samples in spin(), as lists of 'sym' or '0xaddr'"""
    r = sh([perf, 'script', '-i', 'perf.data', '-F', 'ip,sym', '--no-inline'], cwd=d)
    out = []
    for block in r.stdout.split('\n\n'):
        frames = []
        for line in block.strip().splitlines():
            f = line.split()
            if not f:
                continue
            frames.append(f[1] if len(f) > 1 and f[1] != '[unknown]' else '0x' + f[0].lstrip('0'))
        if frames and frames[0] == 'spin':
            out.append(frames)
    return out


def record(perf, prog, which, d):
    r = sh([perf, 'record', '-q', '-k', '1', '-g', '-e', 'cpu-clock', '-F', '999', '-o', 'perf.data', prog, which],
           cwd=d)
    if r.returncode:
        skip('perf record -g failed (%d): %s' % (r.returncode, r.stderr.strip()[:200]))
    return chains(perf, d)


def judge(which, cs):
    want = RUNS[which]
    bad = []
    if len(cs) < 10:
        bad.append('%s: %d samples in spin(), 10 needed' % (which, len(cs)))
    for c in cs:
        for m in want['must']:
            if m not in c:
                bad.append('%s: a chain without %s: %s' % (which, m, ' <- '.join(c)))
                break
        for n in want['never']:
            if n in c:
                bad.append('%s: a chain with %s: %s' % (which, n, ' <- '.join(c)))
                break
    return bad


def lint_says(binary, dump):
    r = sh([binary, 'lint', '--json', '--all', dump])
    got = {}
    for f in json.loads(r.stdout)['files'][0]['findings']:
        if f['id'] in ('JD084', 'JD085', 'JD086'):
            got.setdefault(f.get('function'), set()).add(f['id'])
    bad = []
    for which, want in RUNS.items():
        have = got.get('jit_' + which, set())
        if have != ({want['rule']} if want['rule'] else set()):
            bad.append('lint on jit_%s: %s, want %s' % (which, sorted(have) or 'nothing', want['rule'] or 'nothing'))
    return bad


def main():
    args = sys.argv[1:]
    opt = {'--bin': './jitunwind', '--perf': 'perf', '--cc': 'cc'}
    while args:
        if args[0] not in opt or len(args) < 2:
            sys.exit('usage: tests/lint_g_perf.py [--bin B] [--perf P] [--cc CC]')
        opt[args[0]] = args[1]
        args = args[2:]
    if platform.machine() != 'x86_64':
        skip('the JIT in tests/realg/jitg.c writes x86_64 code; this host is %s' % platform.machine())
    perf = shutil.which(opt['--perf'])
    if not perf:
        skip('no perf on PATH')
    binary = os.path.abspath(opt['--bin'])
    with tempfile.TemporaryDirectory(prefix='ju-lintg-') as d:
        prog = os.path.join(d, 'jitg')
        r = sh([opt['--cc'], '-O1', '-fno-omit-frame-pointer', '-o', prog, os.path.join(HERE, 'realg', 'jitg.c')])
        if r.returncode:
            sys.exit('lint_g_perf: cc failed: ' + r.stderr)
        bad, n = [], 0
        for which in RUNS:
            cs = record(perf, prog, which, d)
            n += len(cs)
            bad += judge(which, cs)
        dumps = sorted(x for x in os.listdir(d) if x.startswith('jit-') and x.endswith('.dump'))
        bad += lint_says(binary, os.path.join(d, dumps[-1]))
    for b in bad:
        print('lint_g_perf: ' + b)
    print('lint_g_perf: %d perf record -g samples in spin() below jit_noframe, jit_framed, jit_clobber: %s'
          % (n, 'lint and perf agree' if not bad else '%d disagreements' % len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
