"""A JIT's files in /tmp, removed by the pid of the process that wrote them (docs/HACKING.md
"Temporary files"): jit-PID.dump (CPython -X perf_jit, Erlang +JPperf dump, the test
programs), perf-PID.map (CPython -X perf, Erlang, V8 --perf-basic-prof) and the
jitted-PID-N.so files `perf inject -j` writes beside the dump.  Another process's files (a
test running at the same time) are never touched: only names carrying a pid this test
started, and only files made since it started (a pid that came round again is not ours).

  with vmfiles.Cleanup() as vm:      # removes every pid's files at the end, failing or not
      vm.trace_pid(stdout)           # `jitunwind trace`'s "trace: pid N" line
      cmd = vm.wrap(cmd)             # an untraced run: its pid written before exec
      ...
"""
import os
import re
import shutil
import tempfile
import time

DIR = "/tmp"


def names(pid, d=DIR):
    """the files of pid in d (its dump, its map, perf inject's jitted .so files)"""
    mine = ("jit-%d.dump" % pid, "perf-%d.map" % pid)
    pre = "jitted-%d-" % pid
    try:
        listing = os.listdir(d)
    except OSError:
        return []
    return [n for n in listing if n in mine or (n.startswith(pre) and n.endswith(".so") and
                                                n[len(pre):-3].isdigit())]


def remove(pid, since=0.0, d=DIR):
    """remove pid's files in d made at or after since; how many"""
    gone = 0
    for n in names(pid, d):
        p = os.path.join(d, n)
        try:
            if os.lstat(p).st_mtime >= since:
                os.unlink(p)
                gone += 1
        except FileNotFoundError:
            pass
    return gone


class Cleanup:
    """pids whose files go at the end; a private directory (self.dir) removed with them"""

    def __init__(self, prefix="ju-vm-"):
        self.prefix, self.pids, self.pidfiles = prefix, set(), []
        self.since = time.time() - 2            # mtimes: a coarse clock, a second of slack
        self.dir = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        return self

    def add(self, pid):
        self.pids.add(int(pid))

    def trace_pid(self, stdout):
        """the traced process's pid from trace's report, kept; or None"""
        m = re.search(r"trace: pid (\d+)", stdout or "")
        if m:
            self.add(m.group(1))
        return m and int(m.group(1))

    def wrap(self, cmd):
        """cmd run through sh, which writes its pid before exec (the pid stays the JIT's)"""
        pf = os.path.join(self.dir, "pid-%d" % len(self.pidfiles))
        self.pidfiles.append(pf)
        return ["sh", "-c", 'echo $$ >"$0" && exec "$@"', pf] + list(cmd)

    def collect(self):
        for pf in self.pidfiles:
            try:
                with open(pf) as f:
                    self.add(f.read().strip())
            except (OSError, ValueError):
                pass
        self.pidfiles = []

    def clean(self):
        self.collect()
        return sum(remove(p, self.since) for p in sorted(self.pids))

    def __exit__(self, *exc):
        self.clean()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
