#!/usr/bin/env python3
"""replay tells why, on real recordings of tests/realg/jitanon.c (a JIT whose one
function spins in an anonymous executable page, with its jitdump):

- `unmarked` (the dump written, never mapped), recorded with `perf record -k 1
  --call-graph dwarf`: replay exits 1 and says the JIT never mapped its dump with
  PROT_EXEC; its count of unseen JIT samples is the count of samples perf script
  places in an anonymous map (an independent reader). Negative control: the same
  recording with `--jitdump` naming the dump: no such message, those samples are
  JIT samples.
- `unmarked` recorded without -k 1: the message names -k 1 too.
- `marked` (the dump mapped PROT_EXEC), recorded with `perf record -g`: replay says
  the samples carry no stack and what it judges (the kernel-fp column only); the
  dwarf recording of `marked` (negative control) says neither.

  tests/replay_why.py [--bin B] [--perf P] [--cc CC]

Exit 0 pass, 1 a failure, 77 no perf, no permission, or not an x86_64 host (the
JIT's code is x86_64), with the reason printed."""
import json, os, platform, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def skip(why):
    print('replay_why: skipped: ' + why)
    sys.exit(77)


def record(perf, prog, which, out, args, d):
    r = sh([perf, 'record', '-q'] + args + ['-e', 'cpu-clock', '-F', '999', '-o', out, prog, which], cwd=d)
    if r.returncode:
        skip('perf record %s failed (%d): %s' % (' '.join(args), r.returncode, r.stderr.strip()[:200]))
    dumps = [x for x in os.listdir(d) if x.startswith('jit-') and x.endswith('.dump')]
    new = max(dumps, key=lambda x: os.path.getmtime(os.path.join(d, x)))
    return os.path.join(d, new)


def is_anon(dso):
    return dso.startswith('(//anon') or dso.startswith('(/tmp/perf-')


def anon_samples(perf, data, d):
    """samples whose first user frame perf script places in an anonymous map (its
    own reading: perf names an anonymous executable map's DSO /tmp/perf-PID.map,
    whether or not that file exists); a sample taken in the kernel counts by the
    user frame under it, as replay takes the user registers' pc.  Where perf
    prints no chain for a sample (perf 7.x's libdw stops before the first frame
    when it sits in a map with no file), the sample itself is read (`perf script
    -G`, matched by time): its ip and DSO, or for a sample in the kernel its user
    registers' IP, counted when perf placed another sample's ip on that page in
    an anonymous map."""
    r = sh([perf, 'script', '-i', data, '-F', 'time,ip,dso'], cwd=d)
    g = sh([perf, 'script', '-G', '-i', data, '-F', 'time,ip,dso,uregs'], cwd=d)
    own, anon_pages = {}, set()
    for line in g.stdout.splitlines():
        f = line.split()
        if len(f) < 3 or not f[0].endswith(':'):
            continue
        uip = [x[3:] for x in f[3:] if x.startswith('IP:0x')]
        own[f[0]] = (f[2], int(uip[0], 16) if uip else None)
        if is_anon(f[2]):
            anon_pages.add(int(f[1], 16) >> 12)
    n = 0
    when, user = None, None

    def close():
        if when is None:
            return 0
        if user is not None:
            return is_anon(user)
        dso, uip = own.get(when, ('', None))
        if dso == '([kernel.kallsyms])':
            return uip is not None and uip >> 12 in anon_pages
        return is_anon(dso)
    for line in r.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0].endswith(':') and not line.startswith('\t'):
            n += close()
            when, user = f[0], None
            continue
        if user is None and len(f) >= 2 and f[1] != '([kernel.kallsyms])':
            user = f[1]
    n += close()
    return n


def replay(binary, data, d, extra=()):
    js = os.path.join(d, 'r.json')
    r = sh([binary, 'replay', '--no-perf', '--json', js] + list(extra) + [data], cwd=d)
    with open(js) as f:
        return r.returncode, r.stdout, json.load(f)


def main():
    args = sys.argv[1:]
    opt = {'--bin': './jitunwind', '--perf': 'perf', '--cc': 'cc'}
    while args:
        if args[0] not in opt or len(args) < 2:
            sys.exit('usage: tests/replay_why.py [--bin B] [--perf P] [--cc CC]')
        opt[args[0]] = args[1]
        args = args[2:]
    if platform.machine() != 'x86_64':
        skip('the JIT in tests/realg/jitanon.c writes x86_64 code; this host is %s' % platform.machine())
    perf = shutil.which(opt['--perf'])
    if not perf:
        skip('no perf on PATH')
    binary = os.path.abspath(opt['--bin'])
    bad = []

    def want(cond, what):
        if not cond:
            bad.append(what)

    with tempfile.TemporaryDirectory(prefix='ju-rwhy-') as d:
        prog = os.path.join(d, 'jitanon')
        r = sh([opt['--cc'], '-O1', '-o', prog, os.path.join(HERE, 'realg', 'jitanon.c')])
        if r.returncode:
            sys.exit('replay_why: cc failed: ' + r.stderr)
        dwarf = ['-k', '1', '--call-graph', 'dwarf']
        # the dump never mapped
        dump = record(perf, prog, 'unmarked', 'un.data', dwarf, d)
        pid = os.path.basename(dump)[4:-5]
        anon = anon_samples(perf, 'un.data', d)
        want(anon >= 10, 'unmarked: %d samples in an anonymous map by perf script, 10 needed' % anon)
        rc, out, j = replay(binary, 'un.data', d)
        want(rc == 1, 'unmarked: exit %d, want 1' % rc)
        want(j.get('unseen_jit_samples') == anon, 'unmarked: %s unseen JIT samples, perf script places %d in //anon'
             % (j.get('unseen_jit_samples'), anon))
        want(j['jit_samples'] == 0, 'unmarked: %d JIT samples, want 0' % j['jit_samples'])
        msg = 'the JIT never mapped its jit-%s.dump with PROT_EXEC' % pid
        want(msg in out and msg in (j.get('unseen_jit_why') or ''), 'unmarked: no "%s" in:\n%s' % (msg, out))
        want('-k 1' not in (j.get('unseen_jit_why') or ''), 'unmarked: -k 1 blamed, the recording has it')
        # negative control: the dump named, the same samples are JIT samples
        rc, out, j = replay(binary, 'un.data', d, ['--jitdump', dump])
        want(j.get('unseen_jit_samples') == 0 and j.get('unseen_jit_why') is None and 'JIT code unseen' not in out,
             'unmarked --jitdump: still unseen: %s' % out)
        want(j['jit_samples'] == anon, 'unmarked --jitdump: %d JIT samples, want %d' % (j['jit_samples'], anon))
        # the dump never mapped, and no -k 1
        record(perf, prog, 'unmarked', 'nok.data', ['--call-graph', 'dwarf'], d)
        rc, out, j = replay(binary, 'nok.data', d)
        want(rc == 1 and 'without -k 1' in (j.get('unseen_jit_why') or ''), 'no -k 1: exit %d, %s' % (rc, out))
        # perf record -g: no stack; negative control: --call-graph dwarf
        record(perf, prog, 'marked', 'g.data', ['-k', '1', '-g'], d)
        rc, out, j = replay(binary, 'g.data', d)
        note = 'carry no user registers or stack'
        want(j['samples'] > 0 and j['no_regs'] == j['samples'], 'perf -g: %d of %d samples without a stack'
             % (j['no_regs'], j['samples']))
        want(note in out and 'kernel-fp' in out, 'perf -g: no note of what is judged:\n' + out)
        want(j['columns'] == ['kernel-fp'], 'perf -g: columns %s, want kernel-fp alone' % j['columns'])
        want(j['jit_samples'] > 0, 'perf -g: no JIT sample')
        record(perf, prog, 'marked', 'mk.data', dwarf, d)
        rc, out, j = replay(binary, 'mk.data', d)
        want(note not in out and 'JIT code unseen' not in out and j['jit_samples'] > 0 and j['no_regs'] == 0,
             'marked dwarf: ' + out)
    for b in bad:
        print('replay_why: ' + b)
    print('replay_why: a dump never mapped, without -k 1, and a perf record -g recording: %s'
          % ('replay says why' if not bad else '%d failures' % len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
