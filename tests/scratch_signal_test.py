#!/usr/bin/env python3
"""A command ended by a signal leaves no scratch directory (harness/run/scratch.c).

  tests/scratch_signal_test.py BIN CASE

`run` makes its private jitdump directory in $TMPDIR (here a fresh directory), captures the
case there, then runs the perf column: its perf is a fake (a shell script) that answers the
version probe as perf 6.1 does and, at the first inject, says so in a file and sleeps.  While
it sleeps the check looks into $TMPDIR (the run's directory and the case's jitdump must be
there: else the check proves nothing and fails), then sends the signal to `run` alone and
checks that it died of that signal, that $TMPDIR is empty and that the perf column's marker
(/tmp/jit-PID.dump, a link to the dump) is gone.  SIGINT, SIGTERM and SIGHUP.
A control: the same with SIGKILL, which no process can handle, must leave the directory (else
the empty $TMPDIR above shows nothing); the next run in that $TMPDIR removes what the killed
one left (its directories are named by its pid, which is gone: harness/run/pidtmp.c).
Exit 0 passed, 1 failed.
"""
import os, signal, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1])
CASE = os.path.abspath(sys.argv[2])
FAKE = r'''#!/bin/sh
if [ "$1" = version ]; then
	printf 'perf version 6.1.0\n                 dwarf: [ on  ]  # HAVE_DWARF_SUPPORT\n             libunwind: [ on  ]  # HAVE_LIBUNWIND_SUPPORT\n'
	exit 0
fi
: >"%s/reached"
exec sleep 60
'''
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += not cond


def left(d):
    out = []
    for root, dirs, files in os.walk(d):
        out += [os.path.join(root, x) for x in dirs + files]
    return out


def one(sig):
    with tempfile.TemporaryDirectory(prefix="jusig-") as top:
        tmp, fake = os.path.join(top, "t"), os.path.join(top, "perf")
        os.mkdir(tmp)
        with open(fake, "w") as f:
            f.write(FAKE % top)
        os.chmod(fake, 0o755)
        env = dict(os.environ, TMPDIR=tmp)
        p = subprocess.Popen([BIN, "run", "--unwinders", "fp,perf", "--perf", fake, CASE], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            t0 = time.time()
            while not os.path.exists(os.path.join(top, "reached")) and p.poll() is None and time.time() - t0 < 60:
                time.sleep(0.02)
            before = left(tmp)
            dumps = [x for x in before if os.path.basename(x).startswith("jit-") and x.endswith(".dump")]
            check(p.poll() is None and any(os.path.basename(x).startswith("jitunwind-run-") for x in before) and dumps,
                  "%s: run waits in its perf column with its scratch directory and a jitdump in $TMPDIR (%d entries)"
                  % (signal.Signals(sig).name, len(before)))
            p.send_signal(sig)
            rc = p.wait(timeout=60)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)   # the fake perf's sleep
            except ProcessLookupError:
                pass
            p.wait()
        after = left(tmp)
        # the perf column's marker: /tmp/jit-PID.dump, a link to the case's dump (PID the capture's)
        markers = [os.path.join("/tmp", os.path.basename(x)) for x in dumps]
        marked = [m for m in markers if os.path.islink(m) and os.path.realpath(m) in map(os.path.realpath, dumps)]
        if sig == signal.SIGKILL:
            check(marked, "SIGKILL: the perf column's marker is left in /tmp (%s)" % markers)
            for m in marked:                       # this run's (its capture's pid, a link to its dump)
                os.unlink(m)
            check(rc == -sig and after, "SIGKILL (the control): run died of it and its directory is left (%d entries)"
                  % len(after))
            # its directories carry its pid, which is gone: the next run removes them (pidtmp.c)
            with open(fake, "w") as f:
                f.write(FAKE.replace(': >"%s/reached"\nexec sleep 60', "exit 1"))
            subprocess.run([BIN, "run", "--unwinders", "fp,perf", "--perf", fake, CASE], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            check(not left(tmp), "SIGKILL: the next run removed the killed run's directories (%s)" % left(tmp)[:3])
        else:
            check(rc == -sig, "%s: run died of the signal (returncode %d)" % (signal.Signals(sig).name, rc))
            check(not after, "%s: nothing left in $TMPDIR (%s)" % (signal.Signals(sig).name, after[:3]))
            check(markers and not marked, "%s: the perf column's marker %s removed" % (signal.Signals(sig).name, markers))


for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
    one(s)
print("scratch-signal: %s" % ("%d check(s) failed" % failed if failed else "passed"))
sys.exit(1 if failed else 0)
