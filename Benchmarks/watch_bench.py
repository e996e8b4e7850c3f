#!/usr/bin/env python3
"""`make bench-watch`: the mirror's freshness through `mockcloud-sync push
DIR --watch`, through nginx + TLS on loopback, on a stack of the harness's
own.

    python3 Benchmarks/watch_bench.py [--samples 60] [--burst 1000]

A phone's follower holds `GET /inbox?wait=30&anchor=A&exclude-source=phone-1`
on a keep-alive connection from another address, waiting again with each
answer's anchor; the tool watches a folder as the mirror box's unit runs it.

1. Freshness of one scan: written as a hidden part file, then renamed into
   the folder; the time from the rename to the follower's answer holding
   it (the tool reads it, sends one bulk request, the box commits and wakes
   the follower's waiting program), over `--samples` scans 0.3 s apart.
   The issue's end-to-end target, to the phone's store: median <= 40 ms,
   worst <= 150 ms.
   Beside it, the box alone: the same one-item bulk request sent from here
   on a warm keep-alive connection, until the follower has it; what the
   tool adds is the difference.
2. A burst: `--burst` scans renamed in as fast as Python can; the time
   from the first rename to the follower holding the last, and how many
   bulk requests the tool made of them.

MOCKCLOUD_SYNC_BIN names the tool (default .build/release/mockcloud-sync).
Writes Benchmarks/results/watch.md (docs/SYNC.md's figures are copied by hand).
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, HERE)
import report  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402
from samples import rename_in, sample  # noqa: E402

RESULTS = os.path.join(HERE, "results", "watch.md")
TOOL = os.environ.get("MOCKCLOUD_SYNC_BIN") or os.path.join(REPO, ".build", "release", "mockcloud-sync")
KEY = "mirror"


def log(*words):
    print("watch_bench:", *words, file=sys.stderr, flush=True)


class Follower(threading.Thread):
    """The phone: waits on the feed, notes when each id's answer arrived."""

    def __init__(self, base):
        super().__init__(daemon=True)
        self.conn = suite.connect(base, timeout=60, source="127.0.0.7")
        self.arrived = {}
        self.changed = threading.Condition()
        self.anchor = self.read("/inbox?limit=1000")["anchor"]
        self.stop = False

    def read(self, path):
        self.conn.request("GET", path, headers={"X-User-Key": KEY, "X-Device-Id": "phone-1"})
        r = self.conn.getresponse()
        raw = r.read()
        assert r.status == 200, (r.status, raw)
        return json.loads(raw)

    def run(self):
        while not self.stop:
            try:
                page = self.read("/inbox?limit=1000&wait=30&exclude-source=phone-1&anchor=" + self.anchor)
            except (OSError, http.client.HTTPException):
                if self.stop:
                    return  # the stack stopped under the last wait
                raise
            now = time.monotonic()
            with self.changed:
                for message in page["messages"]:
                    self.arrived.setdefault(message["id"], now)
                self.anchor = page["anchor"]
                self.changed.notify_all()

    def when(self, ident, timeout=60):
        with self.changed:
            self.changed.wait_for(lambda: ident in self.arrived, timeout)
            return self.arrived.get(ident)


def follow_lines(watcher):
    """The watcher's lines as they come, and when each id was first in one;
    returns once it says it is watching."""
    lines, acknowledged = [], {}

    def read_lines():
        for line in watcher.stdout:
            lines.append(json.loads(line))
            for ident in lines[-1].get("ids", ()):
                acknowledged.setdefault(ident, time.monotonic())
    threading.Thread(target=read_lines, daemon=True).start()
    while not any(line.get("watching") for line in lines):
        assert watcher.poll() is None, watcher.stderr.read()
        time.sleep(0.05)
    return lines, acknowledged


def one_scan(folder, follower, acknowledged, samples):
    """Milliseconds from each scan's rename to the follower's answer, and to
    the tool's line for it, over `samples` scans after 5 to warm up."""
    log("freshness, %d scans (and 5 to warm up)" % samples)
    figures, tool = [], []
    for i in range(samples + 5):
        renamed = rename_in(folder, "scan-%d" % i, dict(sample(i, 1), syncVersion=1))
        arrived = follower.when("scan-%d" % i)
        assert arrived, "scan-%d never reached the follower" % i
        time.sleep(0.3)
        if i >= 5:
            figures.append((arrived - renamed) * 1000)
            tool.append((acknowledged["scan-%d" % i] - renamed) * 1000)
    return figures, tool


def box_alone(base, follower, samples):
    """Milliseconds from the same one-item bulk request sent from here, on a
    warm connection, to the follower's answer, over `samples` after 5 to warm up."""
    log("the box alone: the same bulk request from here, %d scans" % samples)
    writer = suite.connect(base, timeout=60, source="127.0.0.6")
    alone = []
    for i in range(samples + 5):
        ident = "direct-%d" % i
        body = json.dumps({"messages": [{"id": ident, "version": 1, "body": dict(sample(i, 3), syncVersion=1)}]})
        sent = time.monotonic()
        writer.request("POST", "/inbox:bulk", body=body, headers={
            "X-User-Key": KEY, "X-Device-Id": "mirror-2", "Content-Type": "application/json"})
        answer = writer.getresponse()
        answer.read()
        assert answer.status == 200, answer.status
        arrived = follower.when(ident)
        time.sleep(0.3)
        if i >= 5:
            alone.append((arrived - sent) * 1000)
    writer.close()
    return alone


def burst(folder, follower, lines, count):
    """`count` scans renamed in at once: (milliseconds from the first rename
    to the follower holding the last, bulk requests, their sizes)."""
    log("a burst of %d" % count)
    before = len([line for line in lines if "ids" in line])
    first = None
    for i in range(count):
        renamed = rename_in(folder, "burst-%d" % i, dict(sample(i, 2), syncVersion=1))
        first = first or renamed
    last = follower.when("burst-%d" % (count - 1), 120)
    assert last, "the burst's last scan never reached the follower"
    time.sleep(0.5)
    batches = [line for line in lines if "ids" in line][before:]
    return (last - first) * 1000, len(batches), [b["sent"] for b in batches]


def main():
    """The watcher and the follower on a stack of their own, the three measurements, the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    if not os.access(TOOL, os.X_OK):
        sys.exit(f"watch_bench: no {TOOL}: run make build")
    load_before = report.load_average()
    work = tempfile.mkdtemp(prefix="mcwatch.")
    folder = os.path.join(work, "scans")
    os.makedirs(folder)
    out = {}
    watcher = None
    try:
        with stack.Stack(work, "watch") as ours:
            ca = os.path.join(ours.run, "tls", "ca.crt")
            watcher = subprocess.Popen([TOOL, "push", folder, "--watch", "--json", "--url", ours.base, "--ca", ca,
                                        "--user-key", KEY, "--device-id", "mirror-1"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines, acknowledged = follow_lines(watcher)
            follower = Follower(ours.base)
            follower.start()
            time.sleep(0.5)
            out["fresh"], out["tool"] = one_scan(folder, follower, acknowledged, args.samples)
            out["alone"] = box_alone(ours.base, follower, args.samples)
            out["burst"] = burst(folder, follower, lines, args.burst)
            follower.stop = True
    finally:
        if watcher and watcher.poll() is None:
            watcher.terminate()
            watcher.wait(30)
        load_after = report.load_average()
        shutil.rmtree(work, ignore_errors=True)
    report.publish(RESULTS, render(args, out, report.measured(load_before, load_after)))


def render(args, out, measured):
    fresh = out["fresh"]
    median, worst = statistics.median(fresh), max(fresh)
    took, requests, sizes = out["burst"]
    return "\n".join([
        "# The mirror's freshness (`make bench-watch`)",
        "",
        measured,
        "`mockcloud-sync push DIR --watch` and a phone's follower (`GET /inbox?wait=30`, http.client, keep-alive)"
        " through nginx + TLS on loopback, the harness's stack.",
        "",
        "**One scan**, from its rename into the watched folder to the follower's answer holding it,"
        " %d scans 0.3 s apart (5 more before them to warm up):" % len(fresh),
        "",
        "| until | median | p90 | worst | best | target (to the phone's store) |",
        "| --- | --- | --- | --- | --- | --- |",
        "| the follower's answer | %.1f ms | %.1f ms | %.1f ms | %.1f ms | median <= 40 ms, worst <= 150 ms: **%s** |" % (
            median, statistics.quantiles(fresh, n=10)[8], worst, min(fresh),
            "met" if median <= 40 and worst <= 150 else "missed"),
        "| the tool's line for it (the box's answer, then the record synced) | %.1f ms | %.1f ms | %.1f ms | %.1f ms | |" % (
            statistics.median(out["tool"]), statistics.quantiles(out["tool"], n=10)[8], max(out["tool"]),
            min(out["tool"])),
        "| the box alone: the same one-item bulk request sent from Python on a warm connection, until the follower's"
        " answer | %.1f ms | %.1f ms | %.1f ms | %.1f ms | |" % (
            statistics.median(out["alone"]), statistics.quantiles(out["alone"], n=10)[8], max(out["alone"]),
            min(out["alone"])),
        "",
        "Each scan: " + ", ".join("%.1f" % v for v in fresh) + " ms.",
        "",
        "**A burst of %d scans** renamed in one after another: the last one at the follower %.0f ms after the first"
        " rename; the tool sent them in %d bulk requests (%s items)." % (
            args.burst, took, requests, ", ".join(map(str, sizes[:12])) + (", ..." if len(sizes) > 12 else "")),
        "",
    ])


if __name__ == "__main__":
    main()
