#!/usr/bin/env python3
"""`make bench-engine`: SyncEngine as the app feels it. Figures, not tests.

    python3 Benchmarks/engine_bench.py [--samples 55] [--lan] [--out FILE]

Each engine is `client-bench engine` (a SyncEngine over CurlTransport,
driven a command per line; Tests/client/engine.py's driver), against the
stack of Tests/support (nginx + fcgiwrap + the installed programs, TLS):

1. Freshness: a scan written on one side until it is applied in a
   following engine's store (its `applied` event, printed once the store's
   file with the page and its anchor was renamed into place and synced).
   The source is a scan renamed into the folder `mockcloud-sync push DIR
   --watch` watches (the time counts from the rename), or, with a tool
   that has no --watch, `mockcloud-sync push DIR` run after the rename (a
   process per scan; the time counts from its start); and another
   engine's `enqueue` (the time counts from the command).
2. Coming home: a phone whose engine holds 5,000 queued samples and 3
   settings edits (made at 3 times) is started: the time from `run` until
   the box acknowledged all of them, beside the library's one-shot
   `upload` of the same samples (client-bench push, timed inside its
   process), median of 3.
3. Idle: an engine with nothing queued, following the feed and the
   settings (waits of 30 s), its CPU time over 20 s (/proc/PID/stat).

With --lan (root: network namespaces), 1 and 2 run again with the engines
in the phone's namespace of Benchmarks/lan's link (10 ms round trip,
50 Mbit/s), the stack on the server's end with its data on tmpfs, and
"coming home" is set against the round-trip-bound minimum: (2 set-up round
trips + one per request) x 10 ms + the bytes on the wire at 50 Mbit/s.
Writes a Markdown table to Benchmarks/results/engine.md.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "Tests", "client"))
sys.path.insert(0, os.path.join(HERE, "lan"))
sys.path.insert(0, HERE)
import engine as driver  # noqa: E402  (Tests/client/engine.py)
import report  # noqa: E402
from samples import rename_in, sample  # noqa: E402
from stack import Stack  # noqa: E402

TOOL = os.path.join(REPO, ".build", "release", "mockcloud-sync")
LIBRARY = os.path.join(REPO, ".build", "release", "client-bench")


class Place:
    """Where the clients run (a command prefix: none, or `ip netns exec`)
    and the box they reach."""

    def __init__(self, url, ca, prefix=()):
        self.url, self.ca, self.prefix = url, ca, list(prefix)

    # Tests/client/engine.py's Engine asks its library for the command.
    def command(self, command, url, ca, key, *args, device=None, attempts=None):
        return self.prefix + [LIBRARY, "--transport", "curl", "--device", device or "bench-1", command, url, ca, key, *args]


def wait_for(condition, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.002)
    raise SystemExit(f"bench-engine: gave up waiting after {timeout} s")


def applied_at(engine, ident):
    """The wall-clock time of the `applied` event that holds `ident`."""
    return wait_for(lambda: next((e["t"] for e in engine.events("applied") if ident in e.get("ids", ())), None))


def watching():
    """Whether this mockcloud-sync has `push --watch`."""
    return "--watch" in subprocess.run([TOOL, "--help"], capture_output=True, text=True).stdout


def freshness(place, work, samples, tag):
    """(from the source, the push process alone (none with --watch), from
    enqueue) in seconds, per sample. The source is `push --watch` where the
    tool has it (the time counts from the rename), else a push per scan
    (from the push's start)."""
    key = f"fresh-{tag}-{int(time.time())}"
    follower = driver.Engine(place, place, key, os.path.join(work, f"follower-{tag}"), os.path.join(work, f"follower-{tag}.store"),
                             device="phone-1", run=True, attempts=None)
    follower.pending()
    time.sleep(1)  # its first read done, its wait on the box
    folder = os.path.join(work, f"scans-{tag}")
    os.makedirs(folder)
    common = ["--url", place.url, "--ca", place.ca, "--user-key", key, "--device-id", "mirror-1", "--json"]
    from_push, push_alone = [], []
    watcher = None
    if watching():
        watcher = subprocess.Popen(place.prefix + [TOOL, "push", folder, "--watch", *common],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    for i in range(samples):
        ident = f"scan-{i:03d}"
        started = rename_in(folder, ident, sample(i, 7), clock=time.time)
        if not watcher:
            subprocess.run(place.prefix + [TOOL, "push", folder, *common], check=True, capture_output=True)
            push_alone.append(time.time() - started)
        from_push.append(applied_at(follower, ident) - started)
        time.sleep(0.1)
    if watcher:
        watcher.terminate()
        watcher.wait(30)
    source = driver.Engine(place, place, key, os.path.join(work, f"source-{tag}"), os.path.join(work, f"source-{tag}.store"),
                           device="mirror-2", run=True, attempts=None)
    source.pending()
    time.sleep(1)
    from_enqueue = []
    for i in range(samples):
        ident = f"fromengine-{i:03d}"
        started = time.time()
        source.send(f"put {ident} 1 {json.dumps(sample(i, 8))}")
        from_enqueue.append(applied_at(follower, ident) - started)
        time.sleep(0.1)
    source.close()
    return follower, from_push, push_alone, from_enqueue


def coming_home(place, work, tag, runs=3, meter=lambda: 0):
    """(engine seconds, one-shot upload seconds, bytes `meter` counted
    during the engine's runs) per run."""
    lines = os.path.join(work, f"home-{tag}.txt")
    with open(lines, "w") as f:
        for n in range(5000):
            f.write(f"h-{n:05d} 1 {json.dumps(sample(n, 9))}\n")
    engine_runs, upload_runs, counted = [], [], []
    for r in range(runs):
        key = f"home-{tag}-{r}-{int(time.time())}"
        phone = driver.Engine(place, place, key, os.path.join(work, f"home-{tag}-{r}"), os.path.join(work, f"home-{tag}-{r}.store"),
                              device="phone-2", run=False, attempts=None)
        phone.send(f"samples {lines}", 'edit 2026-05-18T10:01:00Z {"unitSystem": "imperial"}',
                   'edit 2026-05-18T10:02:00Z {"weightCalibrationFactor": 0.999}', 'edit 2026-05-18T10:03:00Z {"heightCm": 180}')
        wait_for(lambda: len(phone.acks()) == 4, 120)
        before = meter()
        started = time.time()
        phone.send("run")

        def done():
            uploaded = sum(len(e.get("ids", ())) for e in phone.events("uploaded"))
            merged = phone.events("settingsMerged")
            if uploaded == 5000 and len(merged) == 3:
                return max(e["t"] for e in phone.events("uploaded") + merged)
            return None
        engine_runs.append(wait_for(done, 300) - started)
        counted.append(meter() - before)
        phone.close()
        out = subprocess.run(place.command("push", place.url, place.ca, key + "-once", lines), check=True,
                             capture_output=True, text=True).stdout
        upload_runs.append(json.loads(out.strip().splitlines()[-1])["seconds"])
    return engine_runs, upload_runs, counted


def idle_cpu(engine, seconds=20):
    """CPU seconds the engine's process used over `seconds` of following."""
    def used():
        with open(f"/proc/{engine.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    before = used()
    time.sleep(seconds)
    return used() - before


def ms(seconds):
    return f"{seconds * 1000:,.1f} ms"


def summary(values):
    values = sorted(values)
    return statistics.median(values), values[-1], values[0]


def on_loopback(work, samples, rows, notes):
    """Freshness, idle CPU and coming home against a stack on loopback, their
    rows and notes added to `rows` and `notes`."""
    box = Stack(work, "box").start()
    try:
        place = Place(box.base, os.path.join(box.run, "tls", "ca.crt"))
        follower, from_push, push_alone, from_enqueue = freshness(place, work, samples, "loop")
        cpu = idle_cpu(follower)
        follower.close()
        home, once, _ = coming_home(place, work, "loop")
    finally:
        box.stop()
    source = ("a scan renamed into the folder `mockcloud-sync push --watch` watches, from the rename" if watching()
              else "`mockcloud-sync push` of the folder a scan was renamed into, from the push's start")
    for label, values in ((source, from_push), ("the same push process alone (start to exit)", push_alone),
                          ("another engine's `enqueue`, from the command", from_enqueue)):
        if not values:
            continue
        median, worst, best = summary(values)
        rows.append(f"| freshness, loopback: {label} | {len(values)} | {ms(median)} | {ms(worst)} | {ms(best)} |")
    median, worst, best = summary(home)
    reference = statistics.median(once)
    rows.append(f"| coming home, loopback: 5,000 queued samples + 3 settings edits, `run` until all acknowledged | "
                f"{len(home)} | {ms(median)} | {ms(worst)} | {ms(best)} |")
    rows.append(f"| the same 5,000 samples by the library's one-shot `upload` (client-bench push) | {len(once)} | "
                f"{ms(reference)} | {ms(max(once))} | {ms(min(once))} |")
    notes.append(f"- Coming home on loopback took {median / reference:.2f}× the one-shot upload of the same samples "
                 "(which sends no settings and starts no follows).")
    notes.append(f"- Idle: an engine with nothing queued, following the feed and the settings (two waits of 30 s), "
                 f"used {cpu * 1000:,.0f} ms of CPU in 20 s ({cpu / 20 * 100:.2f} % of one core).")


def over_the_link(samples, rows, notes):
    """Freshness and coming home with the engines across Benchmarks/lan's
    link, the stack's data on tmpfs, set against the round-trip-bound
    minimum; their rows and notes added to `rows` and `notes`."""
    import bench_client
    import bench_lan
    lab = bench_lan.Lab()
    shutil.rmtree(lab.work)
    lab.work = tempfile.mkdtemp(prefix="bench-engine-lan.", dir="/dev/shm")
    try:
        lab.make_link()
        lab.start_stack()
        url = f"https://{bench_lan.SERVER_ADDR}:{bench_lan.PORT}"
        place = Place(url, os.path.join(lab.stack.run, "tls", "ca.crt"), ["ip", "netns", "exec", lab.phone_ns])
        follower, from_push, push_alone, from_enqueue = freshness(place, lab.work, samples, "lan")
        follower.close()
        home, once, counted = coming_home(place, lab.work, "lan", meter=lambda: bench_client.wire(lab))
        wire_bytes = int(statistics.median(counted))
    finally:
        lab.close()
    for label, values in ((("`push --watch`, from the rename" if watching() else "`mockcloud-sync push`, from the push's start"),
                           from_push),
                          ("another engine's `enqueue`, from the command", from_enqueue)):
        median, worst, best = summary(values)
        rows.append(f"| freshness, 10 ms link: {label} | {len(values)} | {ms(median)} | {ms(worst)} | {ms(best)} |")
    median, worst, best = summary(home)
    requests = 5 + 3
    floor = (bench_lan.HANDSHAKE_RTTS + requests) * bench_lan.RTT + wire_bytes * 8 / (bench_lan.RATE_MBIT * 1e6)
    rows.append(f"| coming home, 10 ms link (data on tmpfs): 5,000 samples + 3 edits | {len(home)} | {ms(median)} | "
                f"{ms(worst)} | {ms(best)} |")
    rows.append(f"| the same samples by the one-shot `upload`, 10 ms link | {len(once)} | {ms(statistics.median(once))} | "
                f"{ms(max(once))} | {ms(min(once))} |")
    notes.append(f"- Coming home over the link: {median / floor:.2f}× its round-trip-bound minimum of {ms(floor)} "
                 f"({requests} requests: 5 bulk, 3 merges; about {wire_bytes:,} bytes on the wire; target ≤ 3×) "
                 f"**{'met' if median <= 3 * floor else 'missed'}**.")
    fresh = statistics.median(from_enqueue)
    notes.append(f"- Freshness over the link from another engine's enqueue: median {ms(fresh)} against 2 round trips "
                 f"+ 10 ms = {ms(2 * bench_lan.RTT + 0.010)} **{'met' if fresh <= 2 * bench_lan.RTT + 0.010 else 'missed'}**.")


def main():
    """On loopback, then over the link with --lan; the table to --out."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=55, help="freshness samples per source (default 55)")
    ap.add_argument("--lan", action="store_true", help="also over Benchmarks/lan's link (root)")
    ap.add_argument("--out", default=os.path.join(REPO, "Benchmarks", "results", "engine.md"))
    args = ap.parse_args()
    for program in (TOOL, LIBRARY):
        if not os.access(program, os.X_OK):
            raise SystemExit(f"bench-engine: no {program}: run make build")
    load = report.load_average()
    work = tempfile.mkdtemp(prefix="bench-engine.")
    rows, notes = [], []
    try:
        on_loopback(work, args.samples, rows, notes)
        if args.lan:
            over_the_link(args.samples, rows, notes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join([
        "# SyncEngine (`make bench-engine`)", "", report.measured(load, report.load_average()),
        "CurlTransport; the stack's data on disk for loopback.", "",
        "| what | samples | median | worst | best |", "| --- | --- | --- | --- | --- |", *rows, "", *notes,
    ])
    report.publish(args.out, text + "\n")


if __name__ == "__main__":
    main()
