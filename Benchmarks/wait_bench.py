#!/usr/bin/env python3
"""`make bench-wait`: requests that wait for a change (`?wait=`), through
nginx + TLS on loopback, on a stack of the harness's own.

    python3 Benchmarks/wait_bench.py [--rounds 20] [--probes 300]

1. Freshness: a waiter holds `GET /inbox?anchor=A&wait=30` on a keep-alive
   connection; a writer (another connection, another address) PUTs one
   message; the time from the writer's 2xx to the waiter's whole answer,
   over `--rounds` rounds (a negative figure: the waiter had its answer
   first). Targets: median <= 15 ms, worst <= 50 ms.
2. Starvation: 36 waiters from 127.0.0.20-28 (4 each, each address's
   share of the waits; half on a feed, half on settings, each on a key of
   its own, re-arming when their 60 s run out) while another address
   (127.0.0.5) sends `--probes` sequential `GET /user/settings` on one
   keep-alive connection; its median against the same with none waiting.
   Target: within 1.5x.
3. A write's latency (`PUT /inbox/<id>`, new ids, one keep-alive
   connection) with 0, 16 and 36 waiters on other keys, and with 36 waiting
   on the very inbox written to (each write then wakes them all: they
   answer and wait again).
4. CPU: what every process of the stack (nginx's workers, fcgiwrap, the
   waiting programs) uses over 20 s while 36 wait and nothing changes.

Writes Benchmarks/results/wait.md (docs/PERFORMANCE.md's figures are copied by hand).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import report  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402

RESULTS = os.path.join(HERE, "results", "wait.md")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(*words):
    print("wait_bench:", *words, file=sys.stderr, flush=True)


def request(conn, method, path, key, body=None, headers=None):
    h = {"X-User-Key": key, **(headers or {})}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = conn.getresponse()
    raw = r.read()
    return r.status, raw, r


def anchor_of(conn, key):
    status, raw, _ = request(conn, "GET", "/inbox?limit=1000", key)
    assert status == 200, (status, raw)
    page = json.loads(raw)
    while page["hasMore"]:
        status, raw, _ = request(conn, "GET", "/inbox?limit=1000&anchor=" + page["anchor"], key)
        page = json.loads(raw)
    return page["anchor"]


# ---------------------------------------------------------------- 1. freshness

def freshness(base, rounds):
    key = "fresh"
    writer = suite.connect(base, timeout=60, source="127.0.0.6")
    waiter = suite.connect(base, timeout=60, source="127.0.0.7")
    request(writer, "PUT", "/inbox/seed", key, {"seed": True}, {"X-Device-Id": "mirror-1"})
    anchor = anchor_of(waiter, key)
    figures = []
    for i in range(rounds):
        done = {}

        def wait_once():
            status, raw, _ = request(waiter, "GET", "/inbox?wait=30&exclude-source=phone-1&anchor=" + anchor, key)
            done["at"] = time.monotonic()
            done["status"], done["page"] = status, json.loads(raw)

        thread = threading.Thread(target=wait_once)
        thread.start()
        time.sleep(0.4)   # the waiter is asleep in its program by now
        status, raw, _ = request(writer, "PUT", "/inbox/scan-%d" % i, key, {"kg": 70 + i / 10},
                                 {"X-Device-Id": "mirror-1"})
        written = time.monotonic()
        assert status == 201, (status, raw)
        thread.join(40)
        page = done["page"]
        assert done["status"] == 200 and [m["id"] for m in page["messages"]] == ["scan-%d" % i], done
        anchor = page["anchor"]
        figures.append((done["at"] - written) * 1000)
        time.sleep(0.1)
    writer.close()
    waiter.close()
    return figures


# ---------------------------------------------------------------- waiters

class Waiters:
    """`count` waiting clients from 127.0.0.20-28 (4 each at most: one
    address's share of the waits), each on a key of its own (or
    all on `shared`'s inbox), each on one keep-alive connection, waiting
    again as soon as an answer comes."""

    def __init__(self, base, count, shared=None, first=0):
        self.base, self.count, self.shared = base, count, shared
        self.stop = threading.Event()
        self.ready = threading.Semaphore(0)
        self.answers = 0
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(first, first + count)]

    def run(self, i):
        source = "127.0.0.%d" % (20 + i % 9)
        conn = suite.connect(self.base, timeout=100, source=source)
        key = self.shared or "waiter-%d" % i
        feed = self.shared is not None or i % 2 == 0
        try:
            anchor = anchor_of(conn, key) if feed else None
            self.ready.release()
            while not self.stop.is_set():
                if feed:
                    status, raw, _ = request(conn, "GET", "/inbox?wait=60&anchor=" + anchor, key)
                    if status == 200:
                        anchor = json.loads(raw)["anchor"]
                else:
                    status, raw, _ = request(conn, "GET", "/user/settings?wait=60", key, headers={"If-None-Match": "*"})
                if status not in (200, 304, 404):
                    self.errors.append((status, raw[:200]))
                    time.sleep(1)
                self.answers += 1
        except Exception as error:  # a connection closed at the end
            if not self.stop.is_set():
                self.errors.append(repr(error))
        finally:
            conn.close()

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        for _ in self.threads:
            self.ready.acquire()
        time.sleep(1.0)   # every one of them asleep in its program
        return self

    def __exit__(self, *exc):
        self.stop.set()


def probe(base, count, source="127.0.0.5"):
    conn = suite.connect(base, timeout=60, source=source)
    request(conn, "PUT", "/user/settings", "probe", {"units": "metric"})
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        status, raw, _ = request(conn, "GET", "/user/settings", "probe")
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 200, (status, raw)
    conn.close()
    return times


def writes(base, count, key, tag, pause=0.0):
    conn = suite.connect(base, timeout=60, source="127.0.0.6")
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        status, raw, _ = request(conn, "PUT", "/inbox/%s-%d" % (tag, i), key, {"kg": i}, {"X-Device-Id": "mirror-1"})
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 201, (status, raw)
        if pause:
            time.sleep(pause)
    conn.close()
    return times


# ---------------------------------------------------------------- CPU

def stack_processes(run):
    """Every process of the stack: each one whose PID the launcher recorded
    in the run directory (nginx's master, fcgiwrap, or in the FastCGI mode
    the pools' and the waits' masters) and what is below it (the programs,
    the workers)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open("/proc/%s/stat" % entry).read().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError):
                pass
    roots = set()
    for name in (n for n in os.listdir(run) if n.endswith(".pid")):
        try:
            roots.add(int(open(os.path.join(run, name)).read()))
        except (OSError, ValueError):
            pass
    found = set(roots)
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return found


def cpu_ticks(pids):
    total = {}
    for pid in pids:
        try:
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            total[pid] = int(fields[11]) + int(fields[12])   # utime + stime
        except (OSError, IndexError):
            pass
    return total


def idle_cpu(run, seconds=20):
    before = cpu_ticks(stack_processes(run))
    time.sleep(seconds)
    pids = stack_processes(run)
    after = cpu_ticks(pids)
    used = sum(after[p] - before.get(p, 0) for p in after)
    return used * 1000 / CLOCK_TICKS, len(pids)


# ---------------------------------------------------------------- report

def stats(values):
    return statistics.median(values), max(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--probes", type=int, default=300)
    ap.add_argument("--writes", type=int, default=100)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mcwb.", dir="/tmp")
    load_before = report.load_average()
    out = {}
    try:
        with stack.Stack(work, "wait") as ours:
            base = ours.base
            log("freshness, %d rounds" % args.rounds)
            out["fresh"] = freshness(base, args.rounds)
            log("ordinary GETs and writes with none waiting")
            probe(base, 50)   # warm-up
            out["probe0"] = probe(base, args.probes)
            out["write0"] = writes(base, args.writes, "writes", "w0")
            with Waiters(base, 16) as w16:
                log("writes with 16 waiting")
                out["write16"] = writes(base, args.writes, "writes", "w16")
                with Waiters(base, 20, first=16) as w20:
                    log("ordinary GETs, writes and CPU with 36 waiting")
                    out["probe36"] = probe(base, args.probes)
                    out["write36"] = writes(base, args.writes, "writes", "w36")
                    out["cpu"] = idle_cpu(ours.run)
                    out["errors36"] = w16.errors + w20.errors
            time.sleep(62)   # their waits run out, the next ones are not sent
            with Waiters(base, 36, shared="writes") as shared:
                log("writes to the inbox 36 wait on")
                out["writeShared"] = writes(base, args.writes, "writes", "ws", pause=0.1)
                out["errorsShared"] = list(shared.errors)
                time.sleep(1)
                out["wakes"] = shared.answers
    finally:
        load_after = report.load_average()
        shutil.rmtree(work, ignore_errors=True)
    report.publish(RESULTS, render(args, out, report.measured(load_before, load_after)))


def render(args, out, measured):
    fresh_median, fresh_worst = stats(out["fresh"])
    p0, p36 = statistics.median(out["probe0"]), statistics.median(out["probe36"])
    lines = [
        "# Waiting for a change (`make bench-wait`)",
        "",
        measured,
        "Through nginx + TLS on loopback (HTTP/1.1 keep-alive, http.client), the harness's stack (fcgiwrap -c 64).",
        "",
        "**Freshness**: from the writer's 2xx to the waiter's answer (`GET /inbox?wait=30`), %d rounds:" % len(out["fresh"]),
        "",
        "| median | worst | best | target |",
        "| --- | --- | --- | --- |",
        "| %.1f ms | %.1f ms | %.1f ms | median <= 15 ms, worst <= 50 ms: **%s** |" % (
            fresh_median, fresh_worst, min(out["fresh"]),
            "met" if fresh_median <= 15 and fresh_worst <= 50 else "missed"),
        "",
        "Each round: " + ", ".join("%.1f" % v for v in out["fresh"]) + " ms.",
        "",
        "**An ordinary `GET /user/settings` from a fourth address** (%d sequential on one connection):" % args.probes,
        "",
        "| waiting | median | p90 | worst |",
        "| --- | --- | --- | --- |",
    ]
    for label, values in (("none", out["probe0"]), ("36 (4 from each of 127.0.0.20-28)", out["probe36"])):
        q = statistics.quantiles(values, n=10)
        lines.append("| %s | %.2f ms | %.2f ms | %.2f ms |" % (label, statistics.median(values), q[8], max(values)))
    lines += [
        "",
        "- with 36 waiting: %.2fx its median with none (target <= 1.5x) **%s**" % (
            p36 / p0, "met" if p36 / p0 <= 1.5 else "missed"),
        "",
        "**A write's latency** (`PUT /inbox/<id>`, %d new ids on one connection):" % args.writes,
        "",
        "| waiting | median | p90 | worst | x none |",
        "| --- | --- | --- | --- | --- |",
    ]
    w0 = statistics.median(out["write0"])
    for label, key in (("none", "write0"), ("16, other keys", "write16"), ("36, other keys", "write36"),
                       ("36 on the inbox written to (every write wakes them all; 0.1 s apart)", "writeShared")):
        values = out[key]
        q = statistics.quantiles(values, n=10)
        lines.append("| %s | %.2f ms | %.2f ms | %.2f ms | %.2fx |" % (
            label, statistics.median(values), q[8], max(values), statistics.median(values) / w0))
    cpu, processes = out["cpu"]
    lines += [
        "",
        "**CPU while 36 wait and nothing changes**: %.0f ms over 20 s, all %d processes of the stack together"
        " (nginx's master and workers, fcgiwrap's 65, the 36 waiting programs; /proc utime + stime)." % (cpu, processes),
        "",
        "The 36 on the inbox written to answered %d times in all." % out["wakes"],
    ]
    errors = out["errors36"] + out["errorsShared"]
    if errors:
        lines += ["", "Waiters' errors: %s" % errors[:5]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
