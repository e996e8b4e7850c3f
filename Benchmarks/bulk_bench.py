#!/usr/bin/env python3
"""`make bench`'s bulk row: messages stored per second through
`POST /inbox:bulk` of 500 versus single `PUT /inbox/<id>`s, on loopback
through nginx + TLS, and what one item of a bulk write costs the program.

    python3 Benchmarks/bulk_bench.py [--rounds 6]     (standalone: its own stack)

bench.py calls `measure(port, data, inbox_program)` with its own stack and
puts `render(result)` in its report; this file imports nothing of bench.py
(its stack comes from the harness, Tests/support/stack.py).

Both ways use one keep-alive connection (http.client, HTTP/1.1) and write new
ids, ~400-byte bodies, one key per round; rounds alternate single and bulk.
The per-item cost is the program run directly (as fcgiwrap runs it): the
median wall and CPU time of a bulk of 500 minus a bulk of 1, over 499.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True     # no __pycache__ in the repository
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import cgi_program  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402
from samples import sample  # noqa: E402  (beside this file)
BATCH = 500
SINGLES = 500


def singles(port, key):
    conn = suite.connect(f"https://127.0.0.1:{port}", timeout=60)
    t0 = time.perf_counter()
    for i in range(SINGLES):
        conn.request("PUT", f"/inbox/s{i}", json.dumps(sample(i)), {"X-User-Key": key, "X-Sync-Version": "1"})
        r = conn.getresponse()
        r.read()
        if r.status != 201:
            raise SystemExit(f"PUT /inbox/s{i} answered {r.status}")
    seconds = time.perf_counter() - t0
    conn.close()
    return SINGLES / seconds


def bulks(port, key, requests=4):
    conn = suite.connect(f"https://127.0.0.1:{port}", timeout=60)
    payloads = [json.dumps({"messages": [{"id": f"b{r}-{i}", "version": 1, "body": sample(i)} for i in range(BATCH)]})
                for r in range(requests)]
    t0 = time.perf_counter()
    for payload in payloads:
        conn.request("POST", "/inbox:bulk", payload, {"X-User-Key": key, "Content-Type": "application/json"})
        r = conn.getresponse()
        answer = r.read()
        if r.status != 200 or b'"status": 201' not in answer:
            raise SystemExit(f"POST /inbox:bulk answered {r.status}: {answer[:200]!r}")
    seconds = time.perf_counter() - t0
    conn.close()
    return requests * BATCH / seconds


def run_program(program, data, key, items):
    payload = json.dumps({"messages": items}).encode()
    env = cgi_program.environment("POST", "/inbox:bulk", data,
                                  {"X-User-Key": key, "Content-Type": "application/json"}, body=payload)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([program], input=payload, env=env, stdout=subprocess.PIPE, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not out.startswith(b"Status: 200"):
        raise SystemExit(f"{program} answered {out[:200]!r}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def item_cost(program, data, runs=7):
    """(wall, cpu) seconds per item: (bulk of 500 - bulk of 1) / 499, medians."""
    by_size = {}
    for size in (1, BATCH):
        walls, cpus = [], []
        for r in range(runs):
            items = [{"id": f"c{size}-{r}-{i}", "version": 1, "body": sample(i)} for i in range(size)]
            wall, cpu = run_program(program, data, f"cost-{size}-{r}", items)
            walls.append(wall)
            cpus.append(cpu)
        by_size[size] = (statistics.median(walls), statistics.median(cpus))
    return tuple((by_size[BATCH][k] - by_size[1][k]) / (BATCH - 1) for k in (0, 1)) + (by_size[1], by_size[BATCH])


def answer_time(program, data, key, items, extra=None):
    """(seconds until the answer was whole, seconds until the process
    exited) for one bulk run directly: the program answers, then does its
    upkeep (compaction) with stdout closed."""
    payload = json.dumps({"messages": items}).encode()
    env = cgi_program.environment("POST", "/inbox:bulk", data,
                                  {"X-User-Key": key, "Content-Type": "application/json"}, body=payload, extra=extra)
    t0 = time.perf_counter()
    proc = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    proc.stdin.write(payload)
    proc.stdin.close()
    out = proc.stdout.read()
    answered = time.perf_counter() - t0
    proc.wait()
    exited = time.perf_counter() - t0
    if not out.startswith(b"Status: 200"):
        raise SystemExit(f"{program} answered {out[:200]!r}")
    return answered, exited


def inbox_size_cost(program, data, size=100_000, runs=7):
    """A bulk of 500 new messages into an inbox that holds one message and
    into one of `size` messages (seeded by bulks of 1,000), the two taken in
    turn so that the disk's moods fall on both; the bulk whose write makes
    compaction due (after 1,000 messages); and a key's first write, which
    also makes and syncs its folders: medians of the time to the answer,
    and to the process's exit (the upkeep after the answer included)."""
    def bulk_of(prefix, n=BATCH):
        return [{"id": f"{prefix}-{i}", "version": 1, "body": sample(i)} for i in range(n)]
    key = f"large-{os.getpid()}"
    t0 = time.perf_counter()
    for start in range(0, size, 1000):
        answer_time(program, data, key, bulk_of(f"seed{start}", 1000))
    seeded = time.perf_counter() - t0
    small, large, first, crossing = [], [], [], []
    for r in range(runs):
        small_key = f"small-{os.getpid()}-{r}"
        first.append(answer_time(program, data, small_key, bulk_of("one", 1)))
        small.append(answer_time(program, data, small_key, bulk_of(f"s{r}")))
        large.append(answer_time(program, data, key, bulk_of(f"l{r}")))
    for r in range(3):
        cross_key = f"cross-{os.getpid()}-{r}"
        for i in range(2):
            answer_time(program, data, cross_key, bulk_of(f"s{i}"))
        # 1,000 records, compaction due at 1,024: this bulk makes it due.
        crossing.append(answer_time(program, data, cross_key, bulk_of("c")))
    med = lambda runs_, k: statistics.median(x[k] for x in runs_)  # noqa: E731
    return dict(size=size, seeded=seeded, small=(med(small, 0), med(small, 1)), large=(med(large, 0), med(large, 1)),
                first=(med(first, 0), med(first, 1)), crossing=(med(crossing, 0), med(crossing, 1)), runs=runs)


def render_size(m):
    e, g, c, f = m["small"], m["large"], m["crossing"], m["first"]
    return "\n".join([
        f"**A write's cost does not grow with the inbox** (a bulk of {BATCH} new ~400-byte samples, the program run "
        f"directly; median of {m['runs']}; compaction runs after the answer):", "",
        "| inbox | until the answer | until the process exits | × one message (answer) |",
        "| --- | --- | --- | --- |",
        f"| one message | {e[0] * 1000:.1f} ms | {e[1] * 1000:.1f} ms | 1.00× |",
        f"| {m['size']:,} messages | {g[0] * 1000:.1f} ms | {g[1] * 1000:.1f} ms | {g[0] / e[0]:.2f}× |",
        f"| 1,000 messages, this bulk makes compaction due | {c[0] * 1000:.1f} ms | {c[1] * 1000:.1f} ms "
        f"| {c[0] / e[0]:.2f}× |", "",
        f"(A key's first write, a bulk of one that makes and syncs the inbox's folders and log: "
        f"{f[0] * 1000:.1f} ms. Seeding {m['size']:,} messages by bulks of 1,000 took {m['seeded']:.1f} s.)"])


def measure(port, data, program, rounds=6):
    single, bulk = [], []
    for r in range(rounds):
        order = [("s", singles), ("b", bulks)] if r % 2 == 0 else [("b", bulks), ("s", singles)]
        for name, f in order:
            (single if name == "s" else bulk).append(f(port, f"bulk-bench-{name}{r}-{os.getpid()}"))
    wall, cpu, one, many = item_cost(program, data)
    return dict(single=single, bulk=bulk, item_wall=wall, item_cpu=cpu, one=one, many=many, rounds=rounds,
                by_size=inbox_size_cost(program, data))


def render(m):
    s, b = statistics.median(m["single"]), statistics.median(m["bulk"])
    rows = [
        f"| single `PUT /inbox/<id>` | {s:,.0f} | {' / '.join(f'{x:,.0f}' for x in m['single'])} | 1.00× |",
        f"| `POST /inbox:bulk` of {BATCH} | {b:,.0f} | {' / '.join(f'{x:,.0f}' for x in m['bulk'])} | {b / s:.1f}× |",
    ]
    return "\n".join([
        f"**Bulk writes** (messages stored per second on one keep-alive connection through nginx + TLS, new ids, "
        f"~400-byte bodies; {m['rounds']} alternating rounds of {SINGLES} single PUTs and 4 bulk requests of {BATCH}; "
        "median):", "",
        "| how | messages/s | by round | × single |", "| --- | --- | --- | --- |", *rows, "",
        f"One item of a bulk write costs the program {m['item_wall'] * 1000:.3f} ms of wall time and "
        f"{m['item_cpu'] * 1000:.3f} ms of CPU (run directly: a bulk of {BATCH} took {m['many'][0] * 1000:.1f} ms, "
        f"{m['many'][1] * 1000:.1f} ms CPU; a bulk of 1 {m['one'][0] * 1000:.1f} ms, {m['one'][1] * 1000:.1f} ms CPU; "
        "medians of 7): one lock, one change-log append with one `fdatasync`, one `syncfs` of the new files "
        "(then each one's writeback checked by path with `sync_file_range`, which reports what `syncfs` may miss) "
        "and one directory `fsync` per "
        "request.", "", render_size(m["by_size"])])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--size-only", action="store_true", help="only the empty vs 100,000-message inbox rows")
    args = ap.parse_args()
    if args.size_only:
        work = tempfile.mkdtemp(prefix="mcbb.", dir="/tmp")
        try:
            print(render_size(inbox_size_cost(os.path.join(stack.DEFAULT_CGI_BIN, "inbox"), work)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    work = tempfile.mkdtemp(prefix="mcbb.", dir="/tmp")
    try:
        with stack.Stack(work, "ours") as ours:
            print(render(measure(ours.port, ours.data, os.path.join(ours.cgi_bin, "inbox"), args.rounds)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
