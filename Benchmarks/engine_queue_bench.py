#!/usr/bin/env python3
"""`make bench-engine-queue`: SyncEngine with a long queue. Figures, not tests.

    python3 Benchmarks/engine_queue_bench.py [--samples 100000] [--out FILE]

An engine is `client-bench engine` (Tests/client/engine.py's driver, over
CurlTransport) against the stack of Tests/support (nginx + fcgiwrap + the
installed programs, TLS), its state directory on disk:

1. An empty engine, opened and run for 3 s (following the feed): its peak
   RSS (VmHWM) is the baseline.
2. Queueing: a new engine, not running (the box away), handed `--samples`
   samples of about 300 bytes in calls of 1,000 (as HealthKit's anchored
   queries deliver them): its peak RSS above the baseline, and the
   journal's size.
3. Opening: a new process on that state: how long `SyncEngine(…)` takes
   (timed inside the process), and `pendingCount`'s round trip through
   the driver's pipe (median of 50, an upper bound of the call).
4. Draining: that engine run until the box acknowledged every sample: the
   time, and the process's peak RSS above the baseline (its open included).

Writes a Markdown table to Benchmarks/results/engine-queue.md.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "Tests", "client"))
sys.path.insert(0, HERE)
import engine as driver  # noqa: E402  (Tests/client/engine.py)
import report  # noqa: E402
from engine_bench import LIBRARY, Place  # noqa: E402
from stack import Stack  # noqa: E402

BATCH = 1000


def peak_rss_mb(engine):
    """The process's peak resident set (VmHWM), in MB."""
    with open(f"/proc/{engine.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("bench-engine-queue: no VmHWM")


def answer(engine, command, key, timeout=600):
    """Sends `command` and returns the first new line holding `key`."""
    before = len(engine.seen())
    engine.send(command)
    found = engine.until(lambda: any(key in line for line in engine.seen()[before:]), timeout)
    if not found:
        raise SystemExit(f"bench-engine-queue: no answer to {command}: {engine.stderr()}")
    return next(line for line in engine.seen()[before:] if key in line)


def body(i):
    """A sample's body of about 300 bytes."""
    text = {"type": "HKQuantityTypeIdentifierBodyMass", "uuid": f"{i:08d}-0000-4000-8000-000000000000", "unit": "kg",
            "value": 71.3 + (i % 100) / 100, "startDate": "2026-05-18T10:00:00+00:00", "endDate": "2026-05-18T10:00:30+00:00",
            "source": {"name": "Body Mirror", "bundleIdentifier": "com.example.bodymirror"}, "pad": ""}
    text["pad"] = "x" * max(0, 300 - len(json.dumps(text)))
    return json.dumps(text)


def measure(place, work, samples):
    key = f"queue-{int(time.time())}"
    rows = []
    empty = driver.Engine(place, place, key, os.path.join(work, "empty"), os.path.join(work, "empty.store"), run=True, attempts=None)
    answer(empty, "count", "count")
    time.sleep(3)
    baseline = peak_rss_mb(empty)
    empty.close()
    rows.append(("an empty engine, run for 3 s: peak RSS (the baseline)", f"{baseline:.1f} MB"))

    state, store = os.path.join(work, "state"), os.path.join(work, "state.store")
    queueing = driver.Engine(place, place, key, state, store, run=False, attempts=None)
    answer(queueing, "count", "count")
    started = time.monotonic()
    for first in range(0, samples, BATCH):
        path = os.path.join(work, "batch.txt")
        with open(path, "w") as f:
            for i in range(first, min(samples, first + BATCH)):
                f.write(f"s-{i:06d} 1 {body(i)}\n")
        answer(queueing, f"samples {path}", "ack")
    queued = time.monotonic() - started
    rows.append((f"{samples:,} samples of 300 B queued in calls of {BATCH:,} (the box away): time", f"{queued:.2f} s"))
    rows.append(("the same: peak RSS above the baseline (target ≤ 48 MB)", f"{peak_rss_mb(queueing) - baseline:.1f} MB"))
    queueing.close()
    rows.append(("the journal then", f"{os.path.getsize(os.path.join(state, 'journal')) / 1e6:.1f} MB"))

    draining = driver.Engine(place, place, key, state, store, run=False, attempts=None)
    opened = answer(draining, "opened", "opened")["opened"]
    rows.append((f"opening the engine on {samples:,} queued samples, inside the process (target ≤ 1 s)", f"{opened * 1000:.0f} ms"))
    trips = []
    for _ in range(50):
        sent = time.monotonic()
        count = answer(draining, "count", "count")["count"]
        trips.append(time.monotonic() - sent)
    rows.append((f"`pendingCount` ({count:,}), a round trip through the driver's pipe, median of 50 (target ≤ 10 ms)",
                 f"{statistics.median(trips) * 1000:.2f} ms"))
    started = time.monotonic()
    draining.send("run")
    while answer(draining, "count", "count")["count"] > 0:
        time.sleep(0.2)
    rows.append((f"draining {samples:,} samples to the box: time", f"{time.monotonic() - started:.1f} s"))
    rows.append(("the same process (open and drain): peak RSS above the baseline (target ≤ 48 MB)",
                 f"{peak_rss_mb(draining) - baseline:.1f} MB"))
    draining.close()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000, help="samples queued (default 100,000)")
    ap.add_argument("--out", default=os.path.join(REPO, "Benchmarks", "results", "engine-queue.md"))
    args = ap.parse_args()
    if not os.access(LIBRARY, os.X_OK):
        raise SystemExit(f"bench-engine-queue: no {LIBRARY}: run make build")
    load = report.load_average()
    work = tempfile.mkdtemp(prefix="bench-engine-queue.")
    try:
        with Stack(work, "box") as box:
            rows = measure(Place(box.base, os.path.join(box.run, "tls", "ca.crt")), work, args.samples)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join([
        "# SyncEngine with a long queue (`make bench-engine-queue`)", "", report.measured(load, report.load_average()),
        "CurlTransport; the state directory and the stack's data on disk.", "",
        "| what | figure |", "| --- | --- |", *[f"| {what} | {figure} |" for what, figure in rows], "",
    ])
    report.publish(args.out, text + "\n")


if __name__ == "__main__":
    main()
