#!/usr/bin/env python3
"""`make bench-waits`: thousands of waiting phones on the FastCGI mode,
through nginx + TLS on loopback, on a stack of the harness's own.

    python3 Benchmarks/waits_bench.py [--waits 2000] [--addresses 40] [--probes 300]

A stack in the FastCGI mode (MOCKCLOUD_MODE=fastcgi), where a wait costs no
worker: `?wait=` requests go to one event-loop process. Then:

1. An ordinary `GET /user/settings` alone: `--probes` sequential requests
   on one keep-alive connection from 127.0.0.2, their median.
2. `--waits` waits (`GET /inbox?anchor=A&wait=60`, one connection each,
   all on one key's feed) from `--addresses` addresses, 127.0.0.10 and up,
   the same number from each; none may be answered before the write.
3. CPU: what every process of the stack (nginx's master and workers, the
   pools, the waits process) uses over 10 s while they all wait and nothing
   changes (/proc utime + stime). Goal: <= 0.5 s.
4. The same GETs beside them: their median against step 1's. Goal:
   <= 1.5x + 2 ms.
5. One write (`PUT /inbox/<id>` from 127.0.0.3): the time from its 2xx to
   the last of the waits' whole answers. Goal: every one answered 200
   within 1 s.

Writes Benchmarks/results/waits.md (docs/PERFORMANCE.md's figures are
copied by hand). Python 3 standard library only (asyncio for the waits).
"""
import argparse
import asyncio
import json
import os
import resource
import shutil
import ssl
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import report  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402
import wait_bench  # noqa: E402  (the stack's processes and their CPU)

RESULTS = os.path.join(HERE, "results", "waits.md")
KEY = "waiters"
GOAL_CPU, GOAL_ANSWERED, GOAL_RATIO, GOAL_EXTRA = 0.5, 1.0, 1.5, 0.002


def log(*words):
    print("waits_bench:", *words, file=sys.stderr, flush=True)


def probe_gets(base, count):
    """`count` sequential settings GETs on one keep-alive connection: seconds each."""
    conn = suite.connect(base, source="127.0.0.2")
    times = []
    for _ in range(count):
        started = time.perf_counter()
        conn.request("GET", "/user/settings", headers={"X-User-Key": "probe"})
        response = conn.getresponse()
        response.read()
        times.append(time.perf_counter() - started)
        if response.status != 200:
            raise SystemExit("waits_bench: GET /user/settings answered %d" % response.status)
    conn.close()
    return times


class Waiter:
    """One wait over a connection of its own: its status and when its
    whole answer came (time.perf_counter)."""

    def __init__(self, source):
        self.source, self.status, self.answered, self.error = source, None, None, None

    async def run(self, host, port, path, context, sent):
        try:
            reader, writer = await asyncio.open_connection(host, port, ssl=context, local_addr=(self.source, 0))
            writer.write(("GET %s HTTP/1.1\r\nHost: %s\r\nX-User-Key: %s\r\n\r\n" % (path, host, KEY)).encode())
            await writer.drain()
            sent.release()
            head = await reader.readuntil(b"\r\n\r\n")
            self.status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            self.answered = time.perf_counter()
            writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            self.error = "%s: %s" % (type(error).__name__, error)
            sent.release()


async def hold_waits(args, box, anchor, measure):
    """Opens the waits, calls `measure` (in a thread) once all are sent, and
    returns the waiters once every one has its answer or failed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    path = "/inbox?anchor=%s&wait=60" % anchor
    waiters = [Waiter("127.0.0.%d" % (10 + i % args.addresses)) for i in range(args.waits)]
    sent = asyncio.Semaphore(0)
    tasks = []
    # A few hundred handshakes at a time: the server's backlog, not the point here.
    for i, waiter in enumerate(waiters):
        tasks.append(asyncio.ensure_future(waiter.run("127.0.0.1", box.port, path, context, sent)))
        if i % 200 == 199:
            await asyncio.sleep(0.2)
    for _ in waiters:
        await sent.acquire()
    result = await asyncio.get_running_loop().run_in_executor(None, measure, waiters)
    await asyncio.wait(tasks, timeout=90)
    return waiters, result


def write_one(base):
    conn = suite.connect(base, source="127.0.0.3")
    conn.request("PUT", "/inbox/wake", body=b'{"kg": 71.3}', headers={"X-User-Key": KEY, "X-Sync-Version": "1"})
    response = conn.getresponse()
    response.read()
    acknowledged = time.perf_counter()
    conn.close()
    if response.status not in (200, 201):
        raise SystemExit("waits_bench: the write answered %d" % response.status)
    return acknowledged


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--waits", type=int, default=2000)
    ap.add_argument("--addresses", type=int, default=40)
    ap.add_argument("--probes", type=int, default=300)
    ap.add_argument("--cpu-seconds", type=float, default=10)
    return ap.parse_args()


def main():
    args = parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.waits + 512)), hard))
    load_before = report.load_average()
    work = tempfile.mkdtemp(prefix="mcw.", dir="/tmp")
    box = stack.Stack(work, "waits", MOCKCLOUD_MODE="fastcgi")
    try:
        box.start()
        return measure_all(args, box, load_before)
    finally:
        box.stop()
        shutil.rmtree(work, ignore_errors=True)


def measure_all(args, box, load_before):
    conn = suite.connect(box.base)
    for method, path, key, body in (("PUT", "/user/settings", "probe", b'{"updatedAt": "2026-05-18T10:00:00Z"}'),
                                    ("PUT", "/inbox/first", KEY, b'{"kg": 70.0}'),
                                    ("GET", "/inbox?limit=10", KEY, None)):
        conn.request(method, path, body=body, headers={"X-User-Key": key, "X-Sync-Version": "1"})
        response = conn.getresponse()
        answer = response.read()
    conn.close()
    anchor = json.loads(answer)["anchor"]
    log("%d GETs alone" % args.probes)
    alone = probe_gets(box.base, args.probes)

    def measure(waiters):
        time.sleep(2)   # the last few reach the waits process
        early = [w for w in waiters if w.status is not None or w.error]
        log("%d waits held; CPU over %.0f s" % (len(waiters) - len(early), args.cpu_seconds))
        cpu, processes = wait_bench.idle_cpu(box.run, args.cpu_seconds)
        log("%d GETs beside them" % args.probes)
        beside = probe_gets(box.base, args.probes)
        log("one write")
        return early, cpu, processes, beside, write_one(box.base)

    log("opening %d waits from %d addresses" % (args.waits, args.addresses))
    waiters, (early, cpu, processes, beside, acknowledged) = asyncio.run(hold_waits(args, box, anchor, measure))
    text = render(args, alone, beside, waiters, early, cpu / 1000, processes, acknowledged, load_before)
    report.publish(RESULTS, text)
    return 0


def render(args, alone, beside, waiters, early, cpu, processes, acknowledged, load_before):
    answered = [w for w in waiters if w.status == 200 and w.answered]
    last = max((w.answered - acknowledged for w in answered), default=float("nan"))
    other = {}
    for w in waiters:
        if w not in answered:
            what = w.error or "status %s" % w.status
            other[what] = other.get(what, 0) + 1
    a, b = statistics.median(alone), statistics.median(beside)
    bound = GOAL_RATIO * a + GOAL_EXTRA
    verdict = lambda ok: "**met**" if ok else "**missed**"  # noqa: E731
    rows = [
        ("CPU of the stack while %d wait, %.0f s (%d processes)" % (args.waits, args.cpu_seconds, processes),
         "%.3f s" % cpu, "≤ %.1f s" % GOAL_CPU, verdict(cpu <= GOAL_CPU)),
        ("one write: from its 2xx to the last wait's whole answer", "%.0f ms" % (last * 1000),
         "≤ %.0f ms, all %d answered 200" % (GOAL_ANSWERED * 1000, args.waits),
         verdict(len(answered) == args.waits and last <= GOAL_ANSWERED)),
        ("GET /user/settings beside them, median", "%.2f ms (alone %.2f ms, %.2f×)" % (b * 1000, a * 1000, b / a),
         "≤ 1.5× + 2 ms = %.2f ms" % (bound * 1000), verdict(b <= bound)),
    ]
    lines = ["# Thousands of waits, the FastCGI mode (`make bench-waits`)", "",
             report.measured(load_before, report.load_average()), "",
             "%d waits (`GET /inbox?anchor=A&wait=60`, a TLS connection each) from %d addresses "
             "(127.0.0.10 and up, %d each) on one key's feed; %d sequential settings GETs on one keep-alive "
             "connection from another address, alone and beside them; one write wakes them all." % (
                 args.waits, args.addresses, args.waits // args.addresses, args.probes), "",
             "| what | measured | goal | |", "| --- | --- | --- | --- |"]
    lines += ["| %s | %s | %s | %s |" % row for row in rows]
    if early or other:
        lines += ["", "Not as expected: %d answered before the write; %s." % (
            len(early), ", ".join("%d %s" % (n, what) for what, n in sorted(other.items())) or "none other")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
