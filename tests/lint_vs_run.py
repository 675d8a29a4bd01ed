#!/usr/bin/env python3
"""lint catches what run finds: for every sample of cases/<arch> where a DWARF
unwinder (libunwind, libdw) loses the caller at a trampoline offset without
falling back, `lint` on that case's dump (under the sample's perf profile and
stack size) must name that offset: a finding whose code offsets include it, or
one about every instruction of the load (or of every load).

  tests/lint_vs_run.py [--arch A] [--bin B] [--runner R] [CASE...]

Exit 1 naming each offset lint misses.  Uses only run's JSON and lint's JSON
(the offsets are machine-readable there), never the message text."""
import re
import json, os, subprocess, sys, tempfile

DWARF = ('libunwind', 'libdw')
LOST = ('truncated', 'skipped', 'error', 'wrong')


def sh(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def native_unreported(s, v):
    """the chain ended at a native caller (a truth frame outside the generated code) whose
    module perf's Dwfl could not report: nothing in the dump lint reads"""
    m = re.search(r'perf reports no module covering (?:the sampled ip )?(0x[0-9a-f]+)', v.get('why') or '')
    if not m:
        return False
    a = int(m.group(1), 16)
    return any(int(t, 16) in (a, a + 1) and not n.startswith(('tramp', 'leaf'))
               for t, n in zip(s.get('truth', []), s.get('truth_symbols', [])))


def losses(report):
    """(case file, profile, stack size) -> {offset: [why...]}"""
    out = {}
    for c in report['cases']:
        for s in c['samples']:
            if not s['where'].startswith('tramp'):
                continue
            for u in DWARF:
                v = s['unwinders'].get(u)
                if v and v['verdict'] in LOST and not v.get('fallback') and not native_unreported(s, v):
                    key = (c['file'], s.get('profile') or 'current', s.get('stack_size') or 8192)
                    out.setdefault(key, {}).setdefault(s['offset'], []).append('%s %s' % (u, v['verdict']))
    return out


def named(findings, off):
    for f in findings:
        if f['severity'] == 'info' or 'code_offsets' not in f:
            continue
        co = f['code_offsets']
        if co == 'all' or off in co:
            return True
    return False


def main():
    args = sys.argv[1:]
    arch = os.uname().machine.replace('arm64', 'aarch64')
    binary, runner = './jitunwind', []
    while args and args[0].startswith('--'):
        if args[0] == '--arch':
            arch = args[1]
        elif args[0] == '--bin':
            binary = args[1]
        elif args[0] == '--runner':
            runner = args[1].split()
        else:
            sys.exit('usage: tests/lint_vs_run.py [--arch A] [--bin B] [--runner R] [CASE...]')
        args = args[2:]
    cases = args or [os.path.join('cases', arch)]
    bad, checked = [], 0
    with tempfile.TemporaryDirectory(prefix='ju-lintrun-') as tmp:
        rep = os.path.join(tmp, 'r.json')
        r = sh(runner + [binary, 'run', '--json', rep] + cases)
        if r.returncode not in (0, 1):
            sys.exit('lint_vs_run: run failed (%d): %s' % (r.returncode, r.stderr))
        with open(rep) as f:
            lost = losses(json.load(f))
        for (case, prof, stack), offs in sorted(lost.items()):
            d = tempfile.mkdtemp(dir=tmp)
            sh(runner + [binary, 'run', '--unwinders', 'oracle', '--jitdump-dir', d, case])
            dumps = [x for x in os.listdir(d) if x.startswith('jit-') and x.endswith('.dump')]
            if len(dumps) != 1:
                sys.exit('lint_vs_run: %s left %d dumps' % (case, len(dumps)))
            r = sh(runner + [binary, 'lint', '--json', '--all', '--perf-profile', prof,
                             '--stack-size', str(stack), os.path.join(d, dumps[0])])
            findings = json.loads(r.stdout)['files'][0]['findings']
            for off, why in sorted(offs.items()):
                checked += 1
                if not named(findings, off):
                    bad.append('%s (perf %s, stack %d): +0x%x (%s): no lint finding names it'
                               % (case, prof, stack, off, ', '.join(why)))
    for b in bad:
        print('lint_vs_run: ' + b)
    print('lint_vs_run: %d offsets where a DWARF unwinder loses the caller, %d named by lint'
          % (checked, checked - len(bad)))
    if not checked and not args:
        sys.exit('lint_vs_run: no losses found in %s: the check would prove nothing' % cases[0])
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
