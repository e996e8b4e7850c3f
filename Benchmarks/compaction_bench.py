#!/usr/bin/env python3
"""`make bench-compaction`: what a compaction of a large inbox makes the
key's other clients wait, with a cold page cache (the box after a few days).

    python3 Benchmarks/compaction_bench.py [--cgi-bin DIR] [--label NAME]
        [--messages 99000] [--rounds 3] [--results FILE]

An inbox of `--messages` live ~430-byte messages, written straight in the
store's on-disk format (Tests/support/formats.py) and kept in
Benchmarks/out/compaction/ for later runs. Each round, on a stack of the
test harness (nginx + fcgiwrap + TLS on a free 127.0.0.1 port):

1. the log's header is set so that the next write makes compaction due
   (its `records` to half the log, under the key's lock: the header's
   `records` only says when the next compaction is due), and the key's
   lock file is aged past 30 s, so that the write also finds the tidy-up
   of killed writers' files due, as the first write after a quiet spell does;
2. `sync`, `echo 3 > /proc/sys/vm/drop_caches` (as root; otherwise the
   round is marked warm);
3. the write that makes compaction due (`PUT /inbox/m0000002`, a higher
   version: the inbox keeps its size from round to round);
4. the moment it answers, two requests at once, each on a keep-alive
   connection opened before: a feed read from the anchor the phone holds
   (the newest seq before the write: its page is that write) and a one-item
   write (`PUT /inbox/m0000003`, a higher version);
5. the compaction's end, seen as the log's header changing, and the
   checks: both answered 200, the read's page holds the write, and after
   the compaction the feed from that anchor lists both writes.

Each latency is from the request's send to its whole answer. The gate
(not a timed test: `make test` does not run this): each within 1 s.
The round's figures go to stdout and to `--results` (default
Benchmarks/results/compaction.md), in a section named by `--label`
(the commit when not given) that replaces an earlier one of that label.
"""
import argparse
import datetime
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True     # no __pycache__ in the repository
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
import formats  # noqa: E402
import stack  # noqa: E402
import suite  # noqa: E402
from samples import sample  # noqa: E402  (beside this file)

KEY = "compaction-bench"
GATE_SECONDS = 1.0


def inbox_dir(data):
    return os.path.join(data, "inbox", KEY)


def seed(data, messages):
    """The inbox of `messages` live messages, unless one of that size is there."""
    log = os.path.join(inbox_dir(data), "changes.log")
    if os.path.exists(log):
        header, records, _ = formats.read_log(open(log, "rb").read())
        live = records[-1].live if records and records[-1] else 0
        if header and live == messages:
            return False
        shutil.rmtree(data)
    os.makedirs(data, mode=0o700)
    formats.write_inbox(inbox_dir(data), messages, os.urandom(8).hex(), body_of=lambda seq: sample(seq))
    return True


def read_header(data):
    with open(os.path.join(inbox_dir(data), "changes.log"), "rb") as f:
        return formats.decode_header(f.read(formats.RECORD))


def newest_anchor(data):
    """The anchor a phone that has read everything holds: generation.epoch.lastSeq."""
    raw = open(os.path.join(inbox_dir(data), "changes.log"), "rb").read()
    header, records, _ = formats.read_log(raw)
    last = max([header.last_seq] + [r.seq for r in records if r])
    return "%s.%d.%d" % (header.generation, header.epoch, last), len(records)


def make_compaction_due(data):
    """Under the key's lock (exclusive, as a writer's): the header's
    `records` to half the log's records plus one, so that the next write
    (one more record) makes compaction due; the lock file aged 60 s."""
    lock = os.path.join(data, ".locks", "inbox.%s.lock" % KEY)
    path = os.path.join(inbox_dir(data), "changes.log")
    if not os.path.exists(lock):
        # A seeded inbox has none yet: made as a writer would, the data directory's owner's.
        owner = os.stat(data)
        if not os.path.isdir(os.path.dirname(lock)):
            os.mkdir(os.path.dirname(lock), 0o700)
            os.chown(os.path.dirname(lock), owner.st_uid, owner.st_gid)
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchown(fd, owner.st_uid, owner.st_gid)
        os.close(fd)
    with open(lock, "rb+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with open(path, "rb+") as log:
            header = formats.decode_header(log.read(formats.RECORD))
            count = os.fstat(log.fileno()).st_size // formats.RECORD - 1
            log.seek(0)
            log.write(formats.encode_header(header._replace(records=(count + 1) // 2)))
            log.flush()
            os.fsync(log.fileno())
        aged = time.time() - 60
        os.utime(lock, (aged, aged))
        fcntl.flock(held, fcntl.LOCK_UN)
    return count


def drop_caches():
    """True when the page cache was dropped (root only)."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def cached_mb():
    for line in open("/proc/meminfo"):
        if line.startswith("Cached:"):
            return int(line.split()[1]) // 1024
    return -1


def version_of(conn, ident):
    conn.request("GET", "/inbox/" + ident, headers={"X-User-Key": KEY})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit("GET /inbox/%s answered %d %r" % (ident, r.status, body[:200]))
    return json.loads(body)["version"]


def timed(conn, method, path, body=None, headers=None):
    """(seconds, status, parsed body) of one request on an open connection."""
    all_headers = dict({"X-User-Key": KEY}, **(headers or {}))
    t0 = time.perf_counter()
    conn.request(method, path, body, all_headers)
    r = conn.getresponse()
    raw = r.read()
    seconds = time.perf_counter() - t0
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = {"unparsed": raw[:200].decode(errors="replace")}
    return seconds, r.status, doc


def one_round(base, data, index):
    """One round: compaction made due under a cold page cache, the write that
    starts it, a feed read and a one-item write at once as it answers, then
    a reader and a writer until the compaction ends; the round's figures."""
    conns = [suite.connect(base, timeout=120, source=suite.device_address()) for _ in range(3)]
    writer, reader, other = conns
    versions = {ident: version_of(writer, ident) for ident in ("m0000002", "m0000003")}
    # A request on each connection before the caches go: the TLS sessions and
    # nginx's keep-alive are up, as a phone's are.
    version_of(reader, "m0000001")
    version_of(other, "m0000001")
    records = make_compaction_due(data)
    anchor, _ = newest_anchor(data)
    before = read_header(data)
    cold = drop_caches()
    cache = cached_mb()
    trigger = timed(writer, "PUT", "/inbox/m0000002", json.dumps(sample(2, run=index + 1)),
                    {"X-Sync-Version": str(versions["m0000002"] + 1)})
    answered = time.perf_counter()
    results = at_once(reader, other, anchor, versions, index)
    compacted, during = until_compacted(data, before, answered, reader, other, anchor, versions)
    problems = round_problems(trigger, results, during, compacted, reader, anchor)
    for conn in conns:
        conn.close()
    return dict(records=records, cold=cold, cache=cache, trigger=trigger[0], read=results["read"][0],
                write=results["write"][0], compacted=compacted, problems=problems,
                reads=[x[0] for x in during["read"]], writes=[x[0] for x in during["write"]])


def at_once(reader, other, anchor, versions, index):
    """A feed read from `anchor` and a one-item write sent together; each one's timed answer by name."""
    results = {}

    def run(name, *request):
        results[name] = timed(*request)

    threads = [
        threading.Thread(target=run, args=("read", reader, "GET", "/inbox?anchor=%s&limit=100" % anchor)),
        threading.Thread(target=run, args=("write", other, "PUT", "/inbox/m0000003",
                                           json.dumps(sample(3, run=index + 1)),
                                           {"X-Sync-Version": str(versions["m0000003"] + 1)})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def until_compacted(data, before, answered, reader, other, anchor, versions):
    """Until the compaction ends, a reader and a writer, each one request
    after another: the worst wait any of them saw, the swap included.
    (Seconds from `answered` to the end or None, {"read"/"write": [(seconds, status)]})."""
    done = threading.Event()
    during = {"read": [], "write": []}

    def keep_reading():
        while not done.is_set():
            seconds, status, _ = timed(reader, "GET", "/inbox?anchor=%s&limit=100" % anchor)
            during["read"].append((seconds, status))

    def keep_writing():
        version = versions["m0000003"] + 1
        while not done.is_set():
            version += 1
            seconds, status, _ = timed(other, "PUT", "/inbox/m0000003", json.dumps(sample(3, run=version)),
                                       {"X-Sync-Version": str(version)})
            during["write"].append((seconds, status))

    loops = [threading.Thread(target=keep_reading), threading.Thread(target=keep_writing)]
    for t in loops:
        t.start()
    # The compaction's end: the header rewritten (its `records` changes).
    compacted = None
    deadline = answered + 300
    while time.perf_counter() < deadline:
        header = read_header(data)
        if header and header != before:
            compacted = time.perf_counter() - answered
            break
        time.sleep(0.01)
    done.set()
    for t in loops:
        t.join()
    return compacted, during


def round_problems(trigger, results, during, compacted, reader, anchor):
    """What went wrong in a round: a status other than 200, a page without
    the write before it, a compaction unfinished, or the feed after it missing a write."""
    problems = []
    if trigger[1] != 200:
        problems.append("the write that makes compaction due answered %d %s" % (trigger[1], trigger[2]))
    _, read_status, page = results["read"]
    _, write_status, written = results["write"]
    if read_status != 200:
        problems.append("the feed read answered %d %s" % (read_status, page))
    elif "m0000002" not in [m["id"] for m in page.get("messages", [])]:
        problems.append("the feed read's page does not hold the write before it: %s" % str(page)[:300])
    if write_status != 200:
        problems.append("the one-item write answered %d %s" % (write_status, written))
    for kind, runs in during.items():
        wrong = [status for _, status in runs if status != 200]
        if wrong:
            problems.append("%d of the %ss during the compaction answered %s" % (len(wrong), kind, sorted(set(wrong))))
    if compacted is None:
        problems.append("the compaction did not finish within 300 s")
    else:
        seconds, status, after = timed(reader, "GET", "/inbox?anchor=%s&limit=100" % anchor)
        ids = sorted(set(m["id"] for m in after.get("messages", []))) if status == 200 else None
        if ids != ["m0000002", "m0000003"]:
            problems.append("after the compaction the feed from the anchor answers %d with %s" % (status, ids))
    return problems


def render(label, args, rounds, started, loads):
    ms = lambda s: "–" if s is None else "%.0f ms" % (s * 1000) if s >= 0.01 else "%.1f ms" % (s * 1000)  # noqa: E731
    worst = lambda k: max(r[k] for r in rounds)  # noqa: E731
    gate = all(r["read"] <= GATE_SECONDS and r["write"] <= GATE_SECONDS for r in rounds)
    lines = [
        "## %s" % label, "",
        "`python3 Benchmarks/compaction_bench.py --label %s --messages %d --rounds %d` on %s "
        "(programs: `%s`); load average %s before, %s after." % (
            shlex.quote(label), args.messages, args.rounds, started, os.path.relpath(args.cgi_bin, REPO), loads[0], loads[1]),
        "",
        "| round | log records | page cache after the drop | write that makes compaction due | feed read "
        "(at once) | one-item write (at once) | compaction, from the answer | then, until its end: reads, worst "
        "| writes, worst |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, r in enumerate(rounds, 1):
        lines.append("| %d | %s | %s | %s | **%s** | **%s** | %s | %d, %s | %d, %s |" % (
            i, "{:,}".format(r["records"] + 1), ("%d MB" % r["cache"]) if r["cold"] else "not dropped (not root)",
            ms(r["trigger"]), ms(r["read"]), ms(r["write"]), ms(r["compacted"]),
            len(r["reads"]), ms(max(r["reads"], default=None)), len(r["writes"]), ms(max(r["writes"], default=None))))
    lines += ["", "Worst: feed read %s, one-item write %s (sent at once after the write that made compaction due). "
              "Gate (each within %.0f s): **%s**." % (
                  ms(worst("read")), ms(worst("write")), GATE_SECONDS, "met" if gate else "not met")]
    problems = [p for r in rounds for p in r["problems"]]
    if problems:
        lines += ["", "Problems:"] + ["- " + p for p in problems]
    return "\n".join(lines) + "\n", gate and not problems


def save(path, label, section):
    """Replaces the section `## label` of `path` (or adds it), keeping the others."""
    head = "# Compaction of a large inbox: what the key's other clients wait\n\n" \
           "Written by `make bench-compaction` (`Benchmarks/compaction_bench.py`; what it does is in its docstring).\n"
    text = open(path).read() if os.path.exists(path) else head
    parts = text.split("\n## ")
    kept = [parts[0].rstrip("\n") + "\n"] + ["## " + p.rstrip("\n") + "\n" for p in parts[1:]
                                               if p.split("\n", 1)[0].strip() != label]
    with open(path, "w") as f:
        f.write("\n".join(kept + [section]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cgi-bin", default=stack.DEFAULT_CGI_BIN)
    ap.add_argument("--label", help="the results section's name (default: the commit)")
    ap.add_argument("--messages", type=int, default=99_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results", default=os.path.join(HERE, "results", "compaction.md"))
    args = ap.parse_args()
    args.cgi_bin = os.path.abspath(args.cgi_bin)
    label = args.label or subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                         stdout=subprocess.PIPE, text=True).stdout.strip()
    out = os.path.join(HERE, "out", "compaction")
    os.makedirs(out, exist_ok=True)
    data = os.path.join(out, "data-%d" % args.messages)
    t0 = time.perf_counter()
    if seed(data, args.messages):
        print("seeded %d messages in %.1f s" % (args.messages, time.perf_counter() - t0), flush=True)
    work = tempfile.mkdtemp(prefix="mcc.")
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    loads = [" ".join(open("/proc/loadavg").read().split()[:3])]
    rounds = []
    try:
        with stack.Stack(work, "compaction", cgi_bin=args.cgi_bin, MOCKCLOUD_DATA=data) as served:
            for i in range(args.rounds):
                r = one_round(served.base, data, i)
                rounds.append(r)
                print("round %d: write %.3f s, feed read %.3f s, one-item write %.3f s, compaction %s%s; then "
                      "%d reads (worst %.3f s), %d writes (worst %.3f s)" % (
                          i + 1, r["trigger"], r["read"], r["write"],
                          "%.3f s" % r["compacted"] if r["compacted"] is not None else "unfinished",
                          "" if r["cold"] else " (cache not dropped)", len(r["reads"]), max(r["reads"], default=0),
                          len(r["writes"]), max(r["writes"], default=0)), flush=True)
                for p in r["problems"]:
                    print("  problem: " + p, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    loads.append(" ".join(open("/proc/loadavg").read().split()[:3]))
    section, ok = render(label, args, rounds, started, loads)
    save(args.results, label, section)
    print(section)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
