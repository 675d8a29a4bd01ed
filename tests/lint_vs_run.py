#!/usr/bin/env python3
"""lint catches what run finds: for every sample of cases/<arch> where a DWARF
unwinder (libunwind, libdw) loses the caller at a trampoline offset without
falling back, `lint` on that case's dump (under the sample's perf profile and
stack size) must name that offset: a finding whose code offsets include it, or
one about every instruction of the load (or of every load).

  tests/lint_vs_run.py [--arch A] [--bin B] [--runner R] [CASE...]

And the -g rules are true to the kernel's frame-pointer walk: at every
boundary a JD085 or JD086 finding names, and at every boundary of a function
JD084 names, the `fp` emulation and the kernel's own walk (`kernel-fp`, the
CALLCHAIN of perf_event_open samples, where this machine allows them) lose
a frame (skipped, wrong, ...), in every sample run takes there.

Exit 1 naming each offset lint misses or names falsely.  Uses only run's JSON
and lint's JSON (the offsets are machine-readable there), never the message text."""
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
    return any(int(t, 16) in (a, a + 1) and not (n or '').startswith(('tramp', 'leaf'))
               for t, n in zip(s.get('truth', []), s.get('truth_symbols', [])))


def losses(report):
    """(case file, profile, stack size) -> {offset: [why...]}"""
    out = {}
    for c in report['cases']:
        for s in c['samples']:
            if not s['where'].startswith('tramp'):
                continue
            # a later generation of a case's code: its losses come from what perf kept of
            # an earlier load (docs/case-format.md "Generations"), which no lint rule names yet
            if '@g' in s['where'] and not s['where'].endswith('@g1'):
                continue
            for u in DWARF:
                v = s['unwinders'].get(u)
                if v and v['verdict'] in LOST and not v.get('fallback') and not native_unreported(s, v):
                    key = (c['file'], s.get('profile') or 'current', s.get('stack_size') or 8192)
                    out.setdefault(key, {}).setdefault(s['offset'], []).append('%s %s' % (u, v['verdict']))
    return out


FP_RULES = ('JD084', 'JD085', 'JD086')
FP_COLS = ('fp', 'kernel-fp')


def fp_verdicts(report):
    """case file -> {(function, offset): [(column, verdict)...]} of the FP columns"""
    out = {}
    for c in report['cases']:
        for s in c['samples']:
            fn, _, rest = s['where'].partition('+')
            gen = rest.partition('@g')[2]
            if gen and gen != '1':
                fn += '@g' + gen      # a later generation's load, as the jitdump names it
            if s.get('offset') is None:
                continue
            for u in FP_COLS:
                v = s['unwinders'].get(u)
                if v:
                    out.setdefault(c['file'], {}).setdefault((fn, s['offset']), []).append((u, v['verdict']))
    return out


def fp_false(case, findings, verdicts):
    """(checked, [false claims]) of the -g findings of one case's dump"""
    checked, bad = 0, []
    for f in findings:
        if f['id'] not in FP_RULES or 'function' not in f:
            continue
        fn, co = f['function'], f['code_offsets']
        for (vf, off), vs in sorted(verdicts.items()):
            if vf != fn or (co != 'all' and off not in co):
                continue
            for col, v in vs:
                checked += 1
                if v not in LOST:
                    bad.append('%s: %s names %s+0x%x, where %s is %s' % (case, f['id'], fn, off, col, v))
    return checked, bad


def named(findings, off):
    for f in findings:
        if f['severity'] == 'info' or 'code_offsets' not in f:
            continue
        co = f['code_offsets']
        if co == 'all' or off in co:
            return True
    return False


def fp_check(runner, binary, cases, tmp):
    """the -g findings of every case's dump against its fp columns"""
    rep = os.path.join(tmp, 'fp.json')
    cols = 'fp,kernel-fp'
    r = sh(runner + [binary, 'run', '--unwinders', cols, '--json', rep] + cases)
    if r.returncode not in (0, 1):
        r = sh(runner + [binary, 'run', '--unwinders', 'fp', '--json', rep] + cases)
        if r.returncode not in (0, 1):
            sys.exit('lint_vs_run: run --unwinders fp failed (%d): %s' % (r.returncode, r.stderr))
    with open(rep) as f:
        verdicts = fp_verdicts(json.load(f))
    checked, bad, nfind = 0, [], 0
    for case, vs in sorted(verdicts.items()):
        d = tempfile.mkdtemp(dir=tmp)
        sh(runner + [binary, 'run', '--unwinders', 'oracle', '--jitdump-dir', d, case])
        dumps = [x for x in os.listdir(d) if x.startswith('jit-') and x.endswith('.dump')]
        if len(dumps) != 1:
            sys.exit('lint_vs_run: %s left %d dumps' % (case, len(dumps)))
        r = sh(runner + [binary, 'lint', '--json', '--all', os.path.join(d, dumps[0])])
        findings = json.loads(r.stdout)['files'][0]['findings']
        nfind += sum(f['id'] in FP_RULES for f in findings)
        n, b = fp_false(case, findings, vs)
        checked += n
        bad += b
    return checked, bad, nfind


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
        fpc, fpbad, fpn = fp_check(runner, binary, cases, tmp)
    for b in bad + fpbad:
        print('lint_vs_run: ' + b)
    print('lint_vs_run: %d samples at boundaries the -g rules name, %d lose a frame in the fp columns'
          % (fpc, fpc - len(fpbad)))
    if fpn and not fpc:
        sys.exit('lint_vs_run: %d -g findings, none at a sampled boundary: the check would prove nothing' % fpn)
    if not fpn:
        print('lint_vs_run: no -g finding on these cases (lint judges -g where the arch table says the '
              'kernel walk alone makes the chain)')
    print('lint_vs_run: %d offsets where a DWARF unwinder loses the caller, %d named by lint'
          % (checked, checked - len(bad)))
    if not checked and not args:
        sys.exit('lint_vs_run: no losses found in %s: the check would prove nothing' % cases[0])
    return 1 if bad or fpbad else 0


if __name__ == '__main__':
    sys.exit(main())
