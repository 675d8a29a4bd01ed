#!/usr/bin/env python3
"""jitunwind doctor (make doctor-test, part of make check).

- On this machine: exit 0 or 1 (77 only with the reason perf cannot work), every fact present, the
  perf version and DWARF engine as `perf version --build-options` says (parsed here, independently),
  the paranoid and container facts as /proc and the file system say, and a probe entry per case
  and mode whose `lost` agrees with the exit code.
- `--perf /bin/false` exits 77 naming the failed version query; `--perf does-not-exist` exits 2
  naming the command.
- Fake perfs (shell scripts printing a version and build options): perf 5.10.0 with libunwind
  names 5.10-segbase; 5.10.0 without libunwind is named libdw and does not (the rule is
  libunwind's); 5.4.0 names text-0x40; 7.2.0 without libunwind names tmp-jitted and libdw-only;
  6.1.0 with libunwind names none of these (the negative control); 6.12.0 names regs-by-name
  on riscv64 only (its arch name is unknown to perf 6.5-6.x), 7.2.0 nowhere.
- A jitdump directory mounted noexec (a tmpfs, where mounting is allowed): noexec-dump-dir named,
  exit 1, and every probe loses the JIT (no JIT frame in perf's output).
- The real perf with one step broken (inject without -j; record with a period of 1000 s): every
  probe names that step.
Usage: tests/doctor_test.py [BIN] (default ./jitunwind; RUNNER: e.g. qemu-aarch64).
Exit 0 all passed, 1 a check failed.
"""
import json, os, re, shlex, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'jitunwind')
RUNNER = shlex.split(os.environ.get('RUNNER', ''))
# the binary's arch: the emulator's (qemu-riscv64) under a RUNNER, else this machine's
ARCH = (os.path.basename(RUNNER[0]).replace('qemu-', '') if RUNNER else os.uname().machine).replace('arm64', 'aarch64')
failed = 0
FACTS = ['perf', 'perf_event_paranoid', 'capabilities', 'container', 'perf_event_open', '/tmp',
         'build-id cache', 'addr2line', 'perf record -k 1']
VERSION_PITFALLS = ['5.10-segbase', 'text-0x40', 'v6.1-layout', 'tmp-jitted', 'libdw-only', 'regs-by-name']


def check(what, got, want):
    global failed
    if got != want:
        failed += 1
        print('FAIL %s: expected %r, got %r' % (what, want, got))
    else:
        print('ok   %s' % what)


def doctor(args, d):
    j = os.path.join(d, 'doctor-%d.json' % len(os.listdir(d)))
    p = subprocess.run(RUNNER + [BIN, 'doctor', '--json', j] + args, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    rep = json.load(open(j)) if os.path.exists(j) else None
    return p.returncode, p.stdout + p.stderr, rep


def real_perf():
    """perf's version and engine, read here from its own build options"""
    try:
        out = subprocess.run(['perf', 'version', '--build-options'], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
    except OSError:
        return None, None
    m = re.search(r'perf version (\S+)', out)
    eng = 'libunwind' if re.search(r'libunwind: \[ on', out) else \
          'libdw' if re.search(r'libdw(-dwarf-unwind)?: \[ on', out) else None
    return (m.group(1) if m else None), eng


def this_machine(d):
    rc, out, rep = doctor([], d)
    ver, eng = real_perf()
    if rc == 77:
        print('skip this machine: doctor says perf cannot work here: %s' % (rep or {}).get('unusable'))
        check('77 names why', bool(rep and rep['unusable']), True)
        return
    check('this machine: exit 0 or 1 (%s)' % out.strip().splitlines()[-1], rc in (0, 1), True)
    facts = {f['name']: f for f in rep['facts']}
    check('every fact present', [n for n in FACTS + ['inject -j layout'] if n not in facts], [])
    check('every fact says how it was found', [n for n, f in facts.items() if not f['how']], [])
    check('perf version as perf says', rep['perf']['version'], ver)
    check('DWARF engine as perf version --build-options says', rep['perf']['engine'], eng)
    check('the report names the engine', 'DWARF engine %s' % eng in ' '.join(out.split()), True)
    par = open('/proc/sys/kernel/perf_event_paranoid').read().strip()
    check('paranoid as /proc says', facts['perf_event_paranoid']['value'], par)
    cont = os.path.exists('/run/.containerenv') or os.path.exists('/.dockerenv')
    check('container as the file system says', facts['container']['value'].startswith('yes'), cont)
    modes = sorted((os.path.basename(p['case']), p['mode']) for p in rep['probe'])
    check('a probe per case and mode', modes, [('cpython-3.13-fp.case', 'dwarf'), ('cpython-3.13-fp.case', 'fp'),
                                               ('hybrid-plain-fp-none.case', 'dwarf'),
                                               ('hybrid-plain-fp-none.case', 'fp')]
          if os.uname().machine == 'x86_64' else modes)
    lay = facts['inject -j layout']['value']
    check('the layout perf inject -j wrote is a profile (%s)' % lay,
          bool(re.match(r'profile (current|v6\.1|5\.x-0x40|5\.10\.y)$', lay)) or not rep['probe'], True)
    bad = [p for p in rep['pitfalls'] if p['applies']] + [p for p in rep['probe'] if p['lost']]
    check('exit 1 exactly when a pitfall applies or a probe lost something', rc == 1, bool(bad))
    for p in rep['probe']:
        if not p['lost']:
            check('%s %s: names shown and the callee reaches the anchor' % (os.path.basename(p['case']), p['mode']),
                  (p['jit_named'] == p['jit_frames'] > 0, p['callee_ok'] == p['callee_points'] > 0), (True, True))


FAKE = """#!/bin/sh
for a in "$@"; do
  if [ "$a" = version ]; then
    echo "perf version %s"
    echo "                 dwarf: [ on  ]  # HAVE_DWARF_SUPPORT"
    echo "                libbfd: [ OFF ]  # HAVE_LIBBFD_SUPPORT"
    echo "             libunwind: [ %s ]  # HAVE_LIBUNWIND_SUPPORT"
    echo "    libdw-dwarf-unwind: [ on  ]  # HAVE_DWARF_SUPPORT"
    exit 0
  fi
done
exit 0
"""


def fakes(d):
    for ver, unw, engine, want, absent in [
            ('5.10.0', 'on ', 'libunwind', ['5.10-segbase'], ['text-0x40', 'tmp-jitted', 'libdw-only']),
            ('5.10.0', 'OFF', 'libdw', [], ['5.10-segbase', 'text-0x40', 'tmp-jitted', 'libdw-only']),
            ('5.4.0', 'on ', 'libunwind', ['text-0x40'], ['5.10-segbase', 'tmp-jitted', 'libdw-only']),
            ('7.2.0', 'OFF', 'libdw', ['tmp-jitted', 'libdw-only'], ['5.10-segbase', 'text-0x40']),
            ('6.1.0', 'on ', 'libunwind', [], VERSION_PITFALLS),
            # perf 6.5-6.x looks registers up by the arch's name: riscv64's is unknown to it
            # (the riscv64 leg runs this binary under qemu-riscv64), x86_64's and arm64's are known
            ('6.12.0', 'OFF', 'libdw', ['tmp-jitted'] + (['regs-by-name'] if ARCH == 'riscv64' else []),
             ['5.10-segbase', 'text-0x40', 'v6.1-layout', 'libdw-only'] + ([] if ARCH == 'riscv64' else ['regs-by-name'])),
            ('7.2.0', 'OFF', 'libdw', ['tmp-jitted', 'libdw-only'], ['regs-by-name'])]:
        f = os.path.join(d, 'perf-%s-%s' % (ver, unw.strip()))
        open(f, 'w').write(FAKE % (ver, unw))
        os.chmod(f, 0o755)
        rc, out, rep = doctor(['--perf', f, '--no-probe'], d)
        tag = 'fake perf %s, libunwind %s' % (ver, unw.strip())
        if rc == 77:
            print('skip %s: %s' % (tag, (rep or {}).get('unusable')))
            continue
        applied = sorted(p['id'] for p in rep['pitfalls'] if p['applies'])
        check('%s: engine %s' % (tag, engine), rep['perf']['engine'], engine)
        check('%s: names %s' % (tag, want), [w for w in want if w not in applied], [])
        check('%s: names none of %s' % (tag, absent), [a for a in absent if a in applied], [])
        check('%s: each named pitfall printed' % tag, [w for w in want if '  %s: ' % w not in out], [])
        check('%s: exit 1 when one applies' % tag, rc == 1, bool(applied))


def bad_perf(d):
    rc, out, rep = doctor(['--perf', '/bin/false', '--no-probe'], d)
    check('--perf /bin/false: exit 77', rc, 77)
    check('--perf /bin/false: the reason (JSON)', "'/bin/false version --build-options' failed (exit 1)"
          in (rep or {}).get('unusable', ''), True)
    check('--perf /bin/false: the reason printed', 'perf cannot work here: ' in out, True)
    rc, out, rep = doctor(['--perf', 'does-not-exist-jitunwind'], d)
    check('--perf does-not-exist: exit 2', rc, 2)
    check('--perf does-not-exist: the reason', 'does-not-exist-jitunwind not found on PATH' in out, True)
    p = subprocess.run(RUNNER + [BIN, 'doctor', '--help'], stdout=subprocess.PIPE, text=True)
    check('doctor --help: exit 0', p.returncode, 0)
    check('doctor --help lists every option', [o for o in ('--perf', '--json', '--jitdump-dir', '--no-probe')
                                                if o not in p.stdout], [])
    p = subprocess.run(RUNNER + [BIN, '--help'], stdout=subprocess.PIPE, text=True)
    check('jitunwind --help names doctor', '  doctor ' in p.stdout, True)


def noexec(d):
    """a jitdump directory mounted noexec (a tmpfs, where this process may mount one): the pitfall
    is named and every probe loses the JIT before perf sees it"""
    m = os.path.join(d, 'noexec')
    os.mkdir(m)
    try:
        mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'noexec,size=16m', 'tmpfs', m],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    except OSError as e:      # no mount(8) at all: a minimal root
        print('skip noexec: cannot run mount(8) here: %s' % e)
        return
    if not mounted:
        print('skip noexec: cannot mount a noexec tmpfs here (not root?)')
        return
    try:
        check('noexec dump dir: statvfs says noexec (the setup)', bool(os.statvfs(m).f_flag & os.ST_NOEXEC), True)
        rc, out, rep = doctor(['--jitdump-dir', m], d)
    finally:
        subprocess.run(['umount', m])
    if rc == 77:
        print('skip noexec: perf cannot work here: %s' % rep['unusable'])
        return
    check('noexec dump dir: exit 1', rc, 1)
    check('noexec dump dir: the pitfall named', '  noexec-dump-dir: ' in out, True)
    check('noexec dump dir: the fact flagged', [f['problem'] for f in rep['facts'] if f['name'] == 'jitdump directory'],
          [True])
    check('noexec dump dir: every probe lost the JIT', [p['mode'] for p in rep['probe'] if not p['lost']], [])
    check('noexec dump dir: the probes got no JIT frame', sum(p['jit_frames'] for p in rep['probe']), 0)


SABOTEUR = """#!/usr/bin/env python3
# the real perf, with one step broken: 'inject' drops -j, 'record' samples every 1000 s
import os, sys
how, args = sys.argv[1], sys.argv[2:]
if how == 'inject' and 'inject' in args:
    args = [a for a in args if a != '-j']
if how == 'record' and 'record' in args and '-c' in args:
    args[args.index('-c') + 1] = '1000000000000'
os.execvp('perf', ['perf'] + args)
"""


def sabotaged(d):
    """the probe names the step that lost the JIT: perf inject without -j (no jitted .so), a
    perf record that takes no sample"""
    f = os.path.join(d, 'saboteur')
    open(f, 'w').write(SABOTEUR)
    os.chmod(f, 0o755)
    for how, want in [('inject', 'inject: perf inject -j added no jitted .so'),
                      ('record', 'record: no perf sample at the case')]:
        rc, out, rep = doctor(['--perf', '%s %s' % (f, how)], d)
        if rc == 77:
            print('skip sabotaged %s: %s' % (how, rep['unusable']))
            continue
        check('perf with a broken %s: exit 1' % how, rc, 1)
        check('perf with a broken %s: every probe says so' % how,
              [p['lost'] for p in rep['probe'] if not (p['lost'] or '').startswith(want)], [])


def gens(d):
    """tools/doctor-gens (run in CI against real perfs 5.10-7.2) against fake perfs on PATH:
    a 6.1 with libunwind is what 6.1 is (exit 0); a 7.2 that claims libunwind is not what perf
    7.2 is, and a 9.9 is no generation it knows (exit 1 each: the check can fail)"""
    if RUNNER:
        print('skip doctor-gens: fake perfs are host scripts; RUNNER %s' % ' '.join(RUNNER))
        return
    for ver, unw, want, says in [('6.1.0', 'on ', 0, 'pitfalls none: ok'),
                                 ('7.2.0', 'on ', 1, 'engine: perf 7.2 is known to unwind with libdw'),
                                 ('9.9.0', 'OFF', 1, 'perf 9.9: no known pitfalls')]:
        bindir = os.path.join(d, 'gens-%s-%s' % (ver, unw.strip()))
        os.makedirs(bindir, exist_ok=True)
        f = os.path.join(bindir, 'perf')
        open(f, 'w').write(FAKE % (ver, unw))
        os.chmod(f, 0o755)
        env = dict(os.environ, PATH=bindir + ':' + os.environ.get('PATH', ''))
        rc, out, rep = doctor(['--perf', f], d)
        if rc == 77:
            # doctor-gens takes doctor's own verdict: where doctor cannot probe
            # (no perf events, e.g. in a container under qemu-user) it has none
            print('skip doctor-gens on a fake perf %s: %s' % (ver, (rep or {}).get('unusable')))
            continue
        p = subprocess.run([os.path.join(ROOT, 'tools', 'doctor-gens'), '--bin', BIN, 'host'], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tag = 'doctor-gens on a fake perf %s, libunwind %s' % (ver, unw.strip())
        check('%s: exit' % tag, p.returncode, want)
        check('%s: says %r' % (tag, says), says in p.stdout, True)


def main():
    d = tempfile.mkdtemp(prefix='ju-doctor-test-')
    bad_perf(d)
    fakes(d)
    gens(d)
    this_machine(d)
    noexec(d)
    sabotaged(d)
    subprocess.run(['rm', '-rf', d])
    print('doctor-test: %s' % ('%d failed' % failed if failed else 'all passed'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
