"""What the loopback benchmarks (wait_bench, wait_share, watch_bench) say
about where and when they ran, and where their tables go.

Python 3 standard library only.
"""
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def load_average():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def measured(load_before, load_after):
    """The line under a report's title: the day, the commit, the machine,
    and how busy it was before and after."""
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    return "Measured on %s, commit `%s`: %d cores, Linux %s; load average %s before, %s after." % (
        time.strftime("%Y-%m-%d"), commit, os.cpu_count(), os.uname().release, " ".join(load_before),
        " ".join(load_after))


def publish(path, text):
    """Writes the report to `path` (under Benchmarks/results/) and prints it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(text)
