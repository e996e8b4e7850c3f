#!/usr/bin/env python3
"""Runs a suite and accounts for every process it started.

    reap.py REPORT COMMAND...

COMMAND runs with this process as its "child subreaper" (prctl), so that
the daemons a suite starts (nginx, fcgiwrap, the programs they run), which
leave their launcher's process tree, stay below this one: their CPU time is
counted with the suite's once they exit, and any still running after the
suite ended is found. When COMMAND has exited, what it left is given
LINGER seconds to end (a stack stopped by PID may take a moment); REPORT
then holds one line: COMMAND's exit status, the CPU seconds of every
process reaped (user + system), and the PIDs and names of those still
running, if any (left running; the caller says so).

Tests/run-all.sh runs each suite under it. Python 3 standard library only.
"""
import ctypes
import os
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
LINGER = 30


def descendants():
    """PIDs whose parent is this process (orphans re-parented here included)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def name(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


def main():
    report, command = sys.argv[1], sys.argv[2:]
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    suite = subprocess.Popen(command)
    status = None
    while status is None:           # reaping whatever ends meanwhile
        pid, wait_status = os.wait()
        if pid == suite.pid:
            status = os.waitstatus_to_exitcode(wait_status)
    deadline = time.monotonic() + LINGER
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break                   # nothing left
        if pid == 0:
            time.sleep(0.05)
    left = [pid for pid in descendants() if pid != suite.pid]
    times = os.times()
    with open(report, "w") as f:
        f.write("%d %.0f %s\n" % (status, times.children_user + times.children_system,
                                " ".join("%d(%s)" % (pid, name(pid)) for pid in left)))
    return status


if __name__ == "__main__":
    sys.exit(main())
