#!/usr/bin/env python3
"""Checks of the matrix's and the perf tools' parsing (make tools-test, part of make check).

- tools/containers/leg-summary: the cases of a leg are make cases' own, never the "cases:"
  line kernel-fp prints after it (the matrix once reported kernel-fp's 3 cases); from the
  leg's report when there is one, with the perf columns' agreement.
- tools/perf-agree: counts only replays with a faithful flag (and where perf itself ran
  through: a failed inject is counted apart), lists each disagreement with
  the first divergent frame, and fails (exit 1) when a perf column was compared nowhere.
- tools/perf-gens: which generation's emulation runs on its root's libraries (trixie-arm64's
  under qemu too).
- tools/goldens: the frames past the anchor (the harness's callers) are one token, so moving
  or renaming harness code above the anchor changes no golden line, while a changed verdict,
  a changed or missing frame down to the anchor, or a chain that jumped over it does.
- tools/arches: every arch's fields as the C compiler reads arches.def (arches.h's records,
  compiled and printed here), one arch by its Debian name, bad usage exits 2.
- tools/in-root and tools/rootfs: bad usage (a suite or arch they do not know, bullseye as a
  build root) exits 2 before anything is built; so does tools/bench-trace's.
Every check names what it expected.  Exit 0 all passed, 1 a check failed.
"""
import json, os, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failed = 0


def check(what, got, want):
    global failed
    if got != want:
        failed += 1
        print('FAIL %s: expected %r, got %r' % (what, want, got))
    else:
        print('ok   %s' % what)


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout


LOG = """leg-info: os=trixie machine=x86_64 gcc=14.2.0
97%: Checks: 560, Failures: 1, Errors: 2
cases: 39 passed, 1 failed, 2 skipped (30.1 s)
jitunwind: some other output
cases: 3 passed, 0 failed, 0 skipped (2.0 s)
"""


def sample(name, faithful):
    return {'where': 'tramp+0x0', 'truth': ['0x1000', '0x2000'], 'profile': 'current', 'stack_size': 8192,
            'unwinders': {'libunwind': {'frames': ['0x1000', '0x2000']},
                          name: {'frames': ['0x1000', '0x2001'] if faithful is False else ['0x1000', '0x2000'],
                                 'faithful': faithful, 'verdict': 'ok',
                                 'why': 'perf 9.9 script printed 2 frames; compared with libunwind under profile current'}}}


def golden_case(callers=('0x40000', '0x50000'), caller_name='hx_capture_case', libdw=None, fp_verdict='wrong'):
    """One case of a run --json report: truth tramp, hx_call, hx_anchor; libdw and the
    oracle go on past the anchor into the harness's callers, fp jumps over the anchor."""
    truth = ['0x10000', '0x20000', '0x30000']
    up = list(callers)
    uw = {'libdw': {'verdict': 'ok', 'frames': libdw or truth + up, 'stop': 'outside-snapshot',
                    'why': 'unwinding %s: read of 0x7ffd00 outside the stack copy' % up[-1],
                    'symbols': ['tramp', 'hx_call', 'hx_anchor'], 'match': True},
          'fp': {'verdict': fp_verdict, 'frames': truth[:2] + up + ['0x5'], 'stop': 'end',
                 'symbols': ['tramp', 'hx_call', caller_name], 'match': True},
          'oracle': {'verdict': 'ok', 'frames': truth + up + ['0x7f0000'], 'stop': 'end',
                     'why': 'return address undefined at %s' % up[-1], 'match': True},
          'perf': {'verdict': 'ok', 'frames': truth + ['0x99999'], 'stop': 'end'}}
    return {'cases': [{'name': 'c', 'file': 'cases/x86_64/c.case', 'result': 'pass', 'emitted': 'consistent',
                       'samples': [{'where': 'tramp+0x0', 'offset': 0, 'insn': 'push %rbp', 'stack_size': 8192,
                                    'truth': truth, 'unwinders': uw}]}]}


def goldens_checks():
    from importlib.machinery import SourceFileLoader
    g = SourceFileLoader('goldens', os.path.join(ROOT, 'tools/goldens')).load_module()
    base = g.run_lines(golden_case())
    text = '\n'.join(base)
    check('goldens: no caller of the anchor in the lines', 'hx_capture_case' in text or '0x7ffd00' in text, False)
    check('goldens: the chain past the anchor is one token', '    libdw ok [T0 T1 T2 ...]' in text, True)
    check('goldens: a chain that jumped over the anchor is cut at the caller, its verdict kept',
          '    fp wrong [T0 T1 ...]' in text, True)
    moved = g.run_lines(golden_case(callers=('0x41000', '0x52000', '0x63000'), caller_name='hx_capture_one'))
    check('goldens: harness code moved, renamed and one frame deeper above the anchor: the same lines',
          moved, base)
    for what, case in (('a changed verdict', golden_case(fp_verdict='skipped')),
                       ('a changed frame below the anchor', golden_case(libdw=['0x10000', '0x21000', '0x30000', '0x40000'])),
                       ('a missing frame below the anchor', golden_case(libdw=['0x10000', '0x30000', '0x40000'])),
                       ('a chain that jumps over the anchor', golden_case(libdw=['0x10000', '0x20000', '0x40000']))):
        check('goldens: %s changes the lines' % what, g.run_lines(case) != base, True)


ARCHES_C = r'''
#include "arches.h"
int main(void)
{
	for (unsigned i = 0; i < ARCH_COUNT; i++)
		printf("%s\t%s\t%s\t%s\n", arch_facts[i].name, arch_facts[i].debian, arch_facts[i].qemu,
		       arch_facts[i].triplet);
	return 0;
}
'''


def check_arches(d):
    """tools/arches against the C compiler's reading of arches.def (arches.h)"""
    ta = os.path.join(ROOT, 'tools/arches')
    src, exe = os.path.join(d, 'arches.c'), os.path.join(d, 'arches')
    open(src, 'w').write(ARCHES_C)
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc or subprocess.run([cc, '-I', ROOT, '-o', exe, src]).returncode:
        print('skip tools/arches against arches.h: no C compiler for this machine here')
    else:
        want = subprocess.run([exe], stdout=subprocess.PIPE, text=True).stdout
        check('arches: name, debian, qemu, triplet as arches.h has them',
              run([ta, 'name', 'debian', 'qemu', 'triplet'])[1], want)
        first = want.splitlines()[0].split('\t')
        check('arches: one arch by its Debian name', run([ta, '--of', first[1], 'name', 'triplet']),
              (0, '%s\t%s\n' % (first[0], first[3])))
    check('arches: an unknown arch is bad usage (exit 2)', run([ta, '--of', 'nosuch', 'name'])[0], 2)
    check('arches: an unknown field is bad usage (exit 2)', run([ta, 'nosuch'])[0], 2)


def main():
    d = tempfile.mkdtemp(prefix='ju-tools-test-')
    try:
        return checks(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def checks(d):
    check_arches(d)
    log = os.path.join(d, 'leg.log')
    open(log, 'w').write(LOG)
    ls = os.path.join(ROOT, 'tools/containers/leg-summary')
    check('leg-summary: the first cases line, not kernel-fp\'s', run([ls, log])[1].split(),
          ['560', '3', '39', '1', '2', '-'])
    rep = os.path.join(d, 'report.json')
    json.dump({'totals': {'cases': 41, 'pass': 38, 'fail': 2},
               'cases': [{'name': 'c', 'samples': [sample('perf', True), sample('perf', False),
                                                   sample('perf', None)]}]}, open(rep, 'w'))
    check('leg-summary: the report\'s totals and perf agreement', run([ls, log, rep])[1].split(),
          ['560', '3', '38', '2', '1', '1/2'])
    check('leg-summary: an unreadable report falls back to the log',
          run([ls, log, os.path.join(d, 'none.json')])[1].split(), ['560', '3', '39', '1', '2', '-'])
    empty = os.path.join(d, 'empty.log')
    open(empty, 'w').write('make: *** [all] Error 2\n')
    check('leg-summary: nothing known', run([ls, empty])[1].split(), ['?', '?', '?', '?', '?', '-'])

    pa = os.path.join(ROOT, 'tools/perf-agree')
    rc, out = run([pa, rep])
    check('perf-agree: exit 0 with a compared column', rc, 0)
    check('perf-agree: compared only where faithful is set',
          'total: 3 replays, 2 compared, 1 the same chain (50.0 %), 1 differ' in out, True)
    check('perf-agree: the disagreement names the first divergent frame', '>0x2001' in out and '>0x2000' in out, True)
    none = os.path.join(d, 'none-compared.json')
    json.dump({'cases': [{'name': 'c', 'samples': [sample('perf', None)]}]}, open(none, 'w'))
    check('perf-agree: exit 1 when nothing was compared', run([pa, none])[0], 1)
    check('perf-agree: exit 2 on an unreadable report', run([pa, os.path.join(d, 'missing.json')])[0], 2)
    pfail = sample('perf', False)
    pfail['unwinders']['perf'].update(verdict='error', frames=[], why='perf inject: killed by signal 11 '
                                       '(Segmentation fault) (ran \'perf inject -j -i p.data ...\')')
    fr = os.path.join(d, 'perf-failed.json')
    json.dump({'cases': [{'name': 'c', 'samples': [sample('perf', True), pfail]}]}, open(fr, 'w'))
    rc, out = run([pa, fr])
    check('perf-agree: a replay where perf failed is not compared, and is counted with its reason',
          rc == 0 and 'total: 2 replays, 1 compared, 1 the same chain (100.0 %), 0 differ' in out and
          '1 replay(s) without a chain: perf itself failed (first: perf inject: killed by signal 11' in out, True)
    json.dump({'cases': [{'name': 'c', 'samples': [pfail]}]}, open(fr, 'w'))
    check('perf-agree: exit 1 when perf failed everywhere (nothing compared)', run([pa, fr])[0], 1)
    ir = os.path.join(ROOT, 'tools/in-root')
    rc, out = run([ir, 'wheezy', 'perf'])
    check('in-root: an unknown suite is bad usage (exit 2)', rc, 2)
    rc, out = run([ir, 'sid-sparc', 'perf'])
    check('in-root: an unknown arch is bad usage (exit 2)', rc, 2)
    rc, out = run([ir])
    check('in-root: no arguments is bad usage (exit 2)', rc, 2)
    rc, out = run([ir, 'trixie', os.path.join(d, 'no-such-program')])
    check('in-root: a program path that does not exist is bad usage (exit 2), no root built', rc, 2)
    rs = os.path.join(ROOT, 'tools/rootfs')
    rc, out = run([rs, 'build', 'bullseye', 'amd64'])
    check('rootfs: bullseye without --only is refused (exit 2)', rc, 2)
    for args, what in ((['dir', '--extract', 'trixie', 'amd64'], '--extract without --only'),
                       (['dir', '--only', 'linux-perf', '--emulated', 'trixie', 'arm64'], '--emulated with --only'),
                       (['dir', '--only', 'apt', '--minbase', '--extract', 'trixie', 'amd64'], '--minbase with --extract'),
                       (['image', '--only', 'linux-perf', '--extract', 'trixie', 'amd64'], 'an image of an --extract root'),
                       (['build', 'bookworm', 'riscv64'], 'a bookworm riscv64 root')):
        rc, out = run([rs] + args)
        check('rootfs: %s is bad usage (exit 2)' % what, rc, 2)
    # .ci/run: its step table read back, bad usage refused before anything runs
    ci = os.path.join(ROOT, '.ci/run')
    rc, out = run([ci, '--plan', '--arch', 'aarch64', 'trace-node'])
    check('.ci/run --plan: an x86_64-only step on aarch64 is refused (exit 2)', rc, 2)
    rc, out = run([ci, '--plan', '--arch', 'sparc', 'build'])
    check('.ci/run --plan: an unknown arch is refused (exit 2)', rc, 2)
    live = os.path.join(ROOT, 'build', 'ci', 'steps.tsv')
    before = os.stat(live).st_mtime_ns if os.path.exists(live) else None
    rc, out = run([ci, 'no-such-step'])
    check('.ci/run: an unknown step is refused before anything runs (exit 2)', rc, 2)
    # a leg's make check runs this in the tree a CI run is using: its step times stay
    check('.ci/run: a refused step leaves a running CI\'s build/ci/steps.tsv alone',
          (os.stat(live).st_mtime_ns if os.path.exists(live) else None), before)
    rc, out = run([ci, '--plan', '--arch', 'x86_64', 'build', 'leg-arm64'])
    check('.ci/run --plan: known steps pass (exit 0)', rc, 0)
    # the budget: quiet under 45 minutes, a warning past it, a failure past 70, each naming
    # the slowest steps (longest first)
    st = os.path.join(d, 'steps.tsv')
    with open(st, 'w') as f:
        f.write('build\t0\t600\t0\ncheck\t600\t1500\t0\nlegs\t0\t2400\t0\nfuzz\t2100\t120\t0\n')
    for total, want_rc, word in ((1800, 0, None), (3000, 0, 'warning: 50 min'), (4300, 1, 'FAILED: 71 min')):
        p = subprocess.run([ci, '--summary', st, str(total)], capture_output=True, text=True)
        check('.ci/run budget: %d min exits %d' % (total // 60, want_rc), p.returncode, want_rc)
        if word:
            check('.ci/run budget: %d min says %r and names the slowest steps' % (total // 60, word),
                  word in p.stderr and 'slowest steps: legs 40.0 min, check 25.0 min' in p.stderr, True)
        else:
            check('.ci/run budget: %d min neither warns nor fails' % (total // 60), p.stderr, '')
    rc, out = run([ci, '--summary', os.path.join(d, 'none.tsv'), '10'])
    check('.ci/run --summary: a missing steps file is bad usage (exit 2)', rc, 2)
    goldens_checks()
    print('tools-test: %d failed' % failed)
    # perf-gens compares like with like: the emulation runs on the libraries of the perf's own
    # root wherever the binary is of that root's arch, trixie-arm64 under qemu too (it once ran
    # on this machine's :arm64 libunwind 1.6 against perf 6.12's 1.8 and differed at the
    # PAC-signed return addresses 1.8 keeps)
    from importlib.machinery import SourceFileLoader
    pg = SourceFileLoader('perf_gens', os.path.join(ROOT, 'tools/perf-gens')).load_module()
    check('perf-gens: trixie-arm64 is an aarch64 perf', pg.gen_arch('trixie-arm64'), 'aarch64')
    check('perf-gens: a suite alone is this machine\'s arch', pg.gen_arch('trixie'),
          os.uname().machine.replace('arm64', 'aarch64'))
    check('perf-gens: the aarch64 emulation runs on the trixie-arm64 root\'s libraries',
          pg.emu_on_root('trixie-arm64', 'aarch64', 'root'), True)
    check('perf-gens: --emu-libs host keeps this machine\'s', pg.emu_on_root('trixie-arm64', 'aarch64', 'host'), False)
    check('perf-gens: an x86_64 binary never runs on an arm64 root', pg.emu_on_root('trixie-arm64', 'x86_64', 'root'), False)
    check('perf-gens: the host perf has no root', pg.emu_on_root('host', 'x86_64', 'root'), False)
    check('perf-gens: the arm64 libunwind\'s name', 'libunwind-aarch64.so.8' in pg.unwind_libs('aarch64'), True)
    # bench-trace: bad usage is exit 2 before anything runs
    rc, _ = run([os.path.join(ROOT, 'tools/bench-trace'), '--calls', '0'])
    check('bench-trace: --calls 0 is bad usage (exit 2)', rc, 2)
    rc, _ = run([os.path.join(ROOT, 'tools/bench-trace'), '--prog', '/nonexistent/jitprog'])
    check('bench-trace: a missing program is bad usage (exit 2)', rc, 2)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
