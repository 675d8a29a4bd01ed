#!/usr/bin/env python3
"""No silent skip, no false fail with real perf (docs/real-perf.md "When perf cannot run").

  tests/perf_skip_test.py BIN [CASE]

Each check runs BIN with a fake perf (a shell script in a temporary directory) where real
perf is not needed, and fails on the old behaviour:
  - `run --perf CMD` with CMD no program: exit 2 naming it (was: one skip line, exit 0);
  - `run --perf CMD` with CMD a perf that cannot run here (exit 77, as tools/in-root with its
    root missing): exit 77 with the reason and how to fix it (was: exit 0);
  - perf found on PATH that cannot read the case's files: a visible skip of the column, the
    exit as without it (was: every sample an error, exit 1);
  - `replay FILE.data` with perf found on PATH printing "incompatible file format" (a
    recording of a newer perf): the column skipped visibly, the exit as with --no-perf
    (was: exit 2);
  - `list DIR` with no cases: exit 2 naming DIR (was: exit 0, nothing listed);
  - a case without a `perf` key, with perf found: judged by its agreement with the
    emulation (was: "has no expectation for 'perf'", exit 1); needs a working real perf,
    else that check says it skipped;
  - `run --observe --write` with no perf: no ?perf key written.
Exit 0 all passed, 1 a check failed.
"""
import platform
import os, re, shutil, subprocess, sys, tempfile

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.abspath('jitunwind')
CASE = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
failed = 0

FAKE = r'''#!/bin/sh
# a fake perf: MODE=%(mode)s
case "$1" in
version)
	[ "%(mode)s" = unusable ] && { echo "tools/in-root: trixie root missing" >&2; exit 77; }
	echo "perf version 6.1.0"
	echo "                 libunwind: [ on  ]  # HAVE_LIBUNWIND_SUPPORT"
	exit 0 ;;
esac
echo "  Error:" >&2
echo "incompatible file format (rerun with -v to learn more)" >&2
exit 255
'''


def check(name, ok, detail=''):
    global failed
    print('%s %s%s' % ('ok  ' if ok else 'FAIL', name, '' if ok else ': ' + detail))
    if not ok:
        failed += 1


def fake_perf(d, mode):
    p = os.path.join(d, 'perf')
    with open(p, 'w') as f:
        f.write(FAKE % {'mode': mode})
    os.chmod(p, 0o755)
    return p


def run(args, cwd, path=None):
    env = dict(os.environ)
    if path is not None:
        env['PATH'] = path
    r = subprocess.run([BIN] + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


def case_text(tmp):
    """A small case of this machine's arch (x86_64: the README's), with fp, libunwind, libdw and
    oracle keys, no perf key."""
    here = {'aarch64': ('aarch64', 'cpython-aarch64.case'), 'arm64': ('aarch64', 'cpython-aarch64.case')}
    arch, name = here.get(platform.machine(), ('x86_64', 'cpython-3.13-fp.case'))
    src = CASE or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'cases', arch, name)
    with open(src) as f:
        text = f.read()
    text = '\n'.join(l for l in text.split('\n') if not re.match(r'\s*\?perf', l)) + '\n'
    p = os.path.join(tmp, 'noperf.case')
    with open(p, 'w') as f:
        f.write(text)
    return p


def main():
    tmp = tempfile.mkdtemp(prefix='jitunwind-perfskip-')
    try:
        case = case_text(tmp)
        fakes = {m: os.path.join(tmp, m) for m in ('unusable', 'oldformat')}
        for m, d in fakes.items():
            os.mkdir(d)
            fake_perf(d, m)
        # the perf column is a default unwinder on x86_64 only: elsewhere name it
        col = [] if platform.machine() == 'x86_64' else ['--unwinders', 'fp,libunwind,libdw,oracle,perf']
        rc, out, err = run(['run'] + col + ['--perf', os.path.join(tmp, 'no-such-perf'), case], tmp)
        check('--perf naming no program: exit 2', rc == 2, 'exit %d: %s' % (rc, err))
        check('... the message names the command and the fix', 'no-such-perf' in err and 'tools/in-root' in err, err)
        rc, out, err = run(['run'] + col + ['--perf', os.path.join(fakes['unusable'], 'perf'), case], tmp)
        check('--perf that cannot run here: exit 77', rc == 77, 'exit %d: %s' % (rc, err))
        check('... with the reason and the fix', 'root missing' in err and 'install linux-perf' in err, err)
        rc, out, err = run(['run', '--unwinders', 'fp', '--perf', os.path.join(tmp, 'no-such-perf'), case], tmp)
        check('--perf with no perf column selected: not needed, exit 0', rc == 0, 'exit %d: %s' % (rc, err))

        path = fakes['oldformat'] + ':' + os.environ.get('PATH', '')
        rc, out, err = run(['run'] + col + [case], tmp, path)
        check('perf on PATH that cannot read the files: exit as without it', rc == 0, 'exit %d: %s%s' % (rc, out, err))
        check('... a visible skip of the column naming the reason and the fix',
              'skip: the perf column for' in err and 'incompatible file format' in err and '--perf' in err, err)

        data = os.path.join(tmp, 'rec.data')
        # the dumps beside the samples (without --jitdump-dir record keeps them in /tmp/jitunwind-*)
        rc, out, err = run(['record', '-o', os.path.join(tmp, 'rec.samples'), '--jitdump-dir', tmp, '--perf-data', data,
                            case], tmp)
        if rc != 0:
            check('record --perf-data for the replay check', False, 'exit %d: %s' % (rc, err))
        else:
            base, _, _ = run(['replay', '--no-perf', data], tmp)
            rc, out, err = run(['replay', data], tmp, path)
            check('replay FILE.data, perf on PATH too old for it: exit as with --no-perf (%d), not 2' % base,
                  rc == base and rc != 2, 'exit %d: %s' % (rc, err))
            check('... the perf column skipped visibly with the fix',
                  'skip: the perf column' in err and 'incompatible file format' in err and 'tools/in-root' in err, err)

        empty = os.path.join(tmp, 'empty')
        os.mkdir(empty)
        rc, out, err = run(['list', empty], tmp)
        check('list DIR with no cases: exit 2', rc == 2, 'exit %d: %s' % (rc, out + err))
        check('... naming DIR', empty in err, err)

        nowhere = os.path.join(tmp, 'nothing-on-path')
        os.mkdir(nowhere)
        obs = os.path.join(tmp, 'observe.case')
        shutil.copy(case, obs)
        rc, out, err = run(['run', '--observe', '--write', obs], tmp, nowhere)
        with open(obs) as f:
            written = f.read()
        check('observe --write without perf: exit 0', rc == 0, 'exit %d: %s' % (rc, err))
        check('... no ?perf key written', '[expect]' in written and not re.search(r'^\?perf', written, re.M), written)

        # a case without a perf key, with a working perf: held to the emulation
        import shutil as sh
        if not sh.which('perf') or subprocess.run(['perf', 'version'], capture_output=True).returncode != 0:
            print('skip a case without a perf key under real perf: no working perf on PATH')
        else:
            rc, out, err = run(['run', '--unwinders', 'fp,libunwind,libdw,oracle,perf', case], tmp)
            check('no perf key, real perf: not "has no expectation"', 'no expectation' not in out + err, out + err)
            check('... exit 0 (perf agrees with its emulation on this case)', rc == 0, 'exit %d: %s' % (rc, out + err))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('perf-skip-test: %s' % ('all passed' if not failed else '%d failed' % failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
