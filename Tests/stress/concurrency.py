#!/usr/bin/env python3
"""Many writers at once: no lost update, no torn file, no cross-key waiting.

    concurrency.py BASE --data DATA_DIR [--writers 16] [--increments 10] [--puts 12]
                   [--feed-ops 30] [--direct CGI_BIN] [--stuck] [--seconds 240]

Through the stack at BASE (whose data directory is DATA_DIR):

  - read-modify-write: --writers threads increment a counter in one key's
    settings with GET + PUT If-Match (retrying on 412), --increments times
    each; the counter ends at writers x increments and no two writers ever
    stored the same value (no lost update). The same on one key per writer,
    where no 412 may happen at all;
  - plain PUTs: --writers threads PUT documents of 1 KB to 300 KB to one key
    while readers GET it; every answer is one whole document that a writer
    sent, and the file is whole JSON in the Python layout;
  - the inbox: Tests/support/feed_race.py with --writers writers and an
    anchored reader: nothing missed, nothing twice, seq order intact;
  - per-key locks: with a key's lock file held (flock, from this process),
    requests on other keys finish at once and writes on the held key (and
    its feed, which shares the lock) wait until it is released;
  - --stuck: with the locks held past the programs' 25 s limit, the waiting
    writers answer a JSON 503 (not nginx's 504 at 30 s) and write nothing.

--direct CGI_BIN runs the read-modify-write and plain PUT checks once more
against the programs as processes on DATA_DIR, all writers truly at once
(through nginx, fcgiwrap runs at most 4 programs at a time).

Bounded by counts and by --seconds. Prints `N passed, M failed` last.
"""
import argparse
import collections
import fcntl
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import cgi_program  # noqa: E402  (Tests/support/, on the path stresslib sets)
import suite  # noqa: E402

SETTINGS = "/user/settings"
RUN_ID = "%x" % int(time.time() * 1000 % 0xFFFFFF)


class HTTP:
    """One keep-alive HTTPS connection per thread, each thread a device
    with an address of its own."""

    def __init__(self, base):
        self.host, self.port = stresslib.host_port(base)
        self.local = threading.local()

    def request(self, method, path, headers=None, body=None):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        for attempt in range(3):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                if not hasattr(self.local, "source"):
                    self.local.source = suite.device_address()
                connection = http.client.HTTPSConnection(self.host, self.port, context=stresslib.TLS, timeout=60,
                                                         source_address=(self.local.source, 0))
                self.local.connection = connection
            try:
                connection.request(method, path, body=data, headers=headers or {})
                response = connection.getresponse()
                raw = response.read()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, raw
            except (http.client.HTTPException, OSError):
                connection.close()
                self.local.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    name = "through nginx"


class Direct:
    """The programs as processes, as fcgiwrap runs them."""

    def __init__(self, cgi_bin, data):
        self.cgi_bin, self.data = cgi_bin, data

    def request(self, method, path, headers=None, body=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        program = "user-settings" if path.startswith(SETTINGS) else "inbox"
        path, _, query = path.partition("?")
        status, out_headers, out_body, whole, code = cgi_program.run(
            os.path.join(self.cgi_bin, program), method, path, self.data, headers, query, data)
        if not whole:
            raise RuntimeError("%s %s: no whole answer (exit %s)" % (method, path, code))
        return status, out_headers, out_body

    name = "programs as processes"


def run_threads(count, target, who="writer"):
    errors = []

    def wrap(n):
        try:
            target(n)
        except Exception as exc:
            errors.append("%s %d: %s: %s" % (who, n, type(exc).__name__, exc))

    threads = [threading.Thread(target=wrap, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def read_modify_write(client, keys, increments, deadline):
    """Writer n increments keys[n % len(keys)]; returns (problems, retries)."""
    problems, stored = [], collections.defaultdict(list)
    retries = collections.Counter()
    lock = threading.Lock()
    for key in set(keys):
        status, _, body = client.request("PUT", SETTINGS, {"X-User-Key": key}, {"counter": 0})
        if status != 200:
            problems.append("PUT %s counter 0: %s %r" % (key, status, body[:200]))

    def writer(n):
        key = keys[n % len(keys)]
        rng = random.Random(n)
        done = attempts = 0
        while done < increments:
            attempts += 1
            if attempts > increments * 400 or time.monotonic() > deadline:
                raise RuntimeError("%d of %d increments after %d attempts" % (done, increments, attempts))
            status, headers, body = client.request("GET", SETTINGS, {"X-User-Key": key})
            if status != 200:
                raise RuntimeError("GET %s: %s %r" % (key, status, body[:200]))
            doc = json.loads(body)
            doc["counter"] += 1
            status, _, body = client.request("PUT", SETTINGS, {"X-User-Key": key, "If-Match": headers["etag"]}, doc)
            if status == 200:
                done += 1
                with lock:
                    stored[key].append(doc["counter"])
            elif status == 412:
                with lock:
                    retries[key] += 1
                time.sleep(rng.random() * 0.003)
            else:
                raise RuntimeError("PUT %s If-Match: %s %r" % (key, status, body[:200]))

    problems += run_threads(len(keys), writer)
    for key in sorted(set(keys)):
        writers = keys.count(key)
        status, _, body = client.request("GET", SETTINGS, {"X-User-Key": key})
        final = json.loads(body).get("counter") if status == 200 else None
        if final != writers * increments:
            problems.append("%s: counter %s, expected %d (lost updates)" % (key, final, writers * increments))
        twice = [v for v, c in collections.Counter(stored[key]).items() if c > 1]
        if twice:
            problems.append("%s: two writers both stored counter %s" % (key, twice[:5]))
    return problems, retries


def plain_puts(client, key, writers, puts, deadline, readers=4):
    """Writers PUT whole documents of many sizes; readers GET all the while."""
    problems, sent = [], {}
    lock = threading.Lock()
    finished = threading.Event()
    reads = collections.Counter()

    def document(n, j):
        size = random.Random(n * 1000 + j).choice([1000, 20000, 100000, 300000])
        return {"writer": n, "op": j, "size": size, "pad": "%d-%d:" % (n, j) + "x" * size}

    def writer(n):
        for j in range(puts):
            if time.monotonic() > deadline:
                raise RuntimeError("out of time after %d PUTs" % j)
            doc = document(n, j)
            with lock:
                sent[(n, j)] = doc
            status, _, body = client.request("PUT", SETTINGS, {"X-User-Key": key}, doc)
            if status != 200:
                raise RuntimeError("PUT %d-%d: %s %r" % (n, j, status, body[:200]))

    def reader(n):
        while not finished.is_set() and time.monotonic() < deadline:
            status, _, body = client.request("GET", SETTINGS, {"X-User-Key": key})
            reads[status] += 1
            if status == 404:
                continue
            if status != 200:
                raise RuntimeError("GET: %s %r" % (status, body[:200]))
            doc = json.loads(body)
            expected = sent.get((doc.get("writer"), doc.get("op")))
            whole = dict(doc)
            whole.pop("serverReceivedAt", None)
            if expected != whole:
                raise RuntimeError("GET answered a document no writer sent whole: %r" % body[:200])

    reader_threads = [threading.Thread(target=lambda n=n: problems.extend(run_threads(1, reader, "reader")))
                      for n in range(readers)]
    for thread in reader_threads:
        thread.start()
    problems += run_threads(writers, writer)
    finished.set()
    for thread in reader_threads:
        thread.join()
    return problems, reads


def lock_isolation(client, data, route, held_key, other_key, hold=2.0):
    """Holds held_key's lock file; returns (problems, figures)."""
    problems = []
    figures = {}
    if route == "settings":
        lock_name = "user_settings.%s.lock" % held_key
        waiting = [("PUT", SETTINGS, {"X-User-Key": held_key}, {"held": True})]
        other = [("PUT", SETTINGS, {"X-User-Key": other_key}, {"other": True}),
                 ("GET", SETTINGS, {"X-User-Key": other_key}, None)]
        free_read = ("GET", SETTINGS, {"X-User-Key": held_key}, None)
    else:
        lock_name = "inbox.%s.lock" % held_key
        waiting = [("PUT", "/inbox/held-1", {"X-User-Key": held_key}, {"held": True}),
                   ("GET", "/inbox?limit=10", {"X-User-Key": held_key}, None)]
        other = [("PUT", "/inbox/other-%d" % i, {"X-User-Key": other_key}, {"other": i}) for i in range(3)] + \
                [("GET", "/inbox?limit=10", {"X-User-Key": other_key}, None)]
        free_read = ("GET", "/inbox/seed", {"X-User-Key": held_key}, None)
    # Something stored first, so that reads of the held key have data.
    for method, path, headers, body in [("PUT", SETTINGS, {"X-User-Key": held_key}, {"seed": 1}),
                                        ("PUT", "/inbox/seed", {"X-User-Key": held_key}, {"seed": 1})]:
        client.request(method, path, headers, body)
    directory = os.path.join(data, ".locks")
    os.makedirs(directory, 0o700, exist_ok=True)
    fd = os.open(os.path.join(directory, lock_name), os.O_RDWR | os.O_CREAT, 0o600)
    results = {}
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held_at = time.monotonic()

        def wait_one(i):
            method, path, headers, body = waiting[i]
            status, _, raw = client.request(method, path, headers, body)
            results[i] = (status, time.monotonic(), raw[:200])

        threads = [threading.Thread(target=wait_one, args=(i,)) for i in range(len(waiting))]
        for thread in threads:
            thread.start()
        latencies = []
        for method, path, headers, body in other * 3:
            started = time.monotonic()
            status, _, raw = client.request(method, path, headers, body)
            latencies.append(time.monotonic() - started)
            if status not in (200, 201):
                problems.append("%s %s on %s while %s is held: %s %r" % (method, path, other_key, held_key,
                                                                           status, raw[:200]))
        started = time.monotonic()
        status, _, _ = client.request(*free_read)
        figures["read of the held key"] = "%s in %.0f ms" % (status, (time.monotonic() - started) * 1000)
        slowest = max(latencies)
        figures["other key, slowest of %d" % len(latencies)] = "%.0f ms" % (slowest * 1000)
        if slowest > 1.0:
            problems.append("a request on %s took %.2f s while %s's lock was held" % (other_key, slowest, held_key))
        time.sleep(max(0.0, hold - (time.monotonic() - held_at)))
        early = {i: r for i, r in results.items()}
        for i, (status, at, raw) in early.items():
            problems.append("%s %s on the held key finished while the lock was held (%s after %.2f s)" % (
                waiting[i][0], waiting[i][1], status, at - held_at))
        released_at = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_UN)
        for thread in threads:
            thread.join(15)
        for i, (method, path, _, _) in enumerate(waiting):
            if i not in results:
                problems.append("%s %s on the held key did not finish within 15 s of the release" % (method, path))
                continue
            status, at, raw = results[i]
            figures["%s %s on the held key" % (method, path)] = "%s, %.0f ms after the release" % (
                status, (at - released_at) * 1000)
            if status not in (200, 201) or at - released_at > 2.0:
                problems.append("%s %s after the release: %s in %.2f s: %r" % (method, path, status,
                                                                                at - released_at, raw))
    finally:
        os.close(fd)
    return problems, figures


def stuck_writers(client, data, key):
    """Holds key's settings and inbox locks for longer than the programs' own
    time limit (25 s): both writers must give up with a JSON 503 before
    nginx's 30 s (a 504), and write nothing."""
    problems, figures = [], {}
    client.request("PUT", SETTINGS, {"X-User-Key": key}, {"before": True})
    client.request("PUT", "/inbox/stuck", {"X-User-Key": key}, {"before": True})
    _, _, settings_before = client.request("GET", SETTINGS, {"X-User-Key": key})
    _, _, message_before = client.request("GET", "/inbox/stuck", {"X-User-Key": key})
    directory = os.path.join(data, ".locks")
    fds = [os.open(os.path.join(directory, name % key), os.O_RDWR | os.O_CREAT, 0o600)
           for name in ("user_settings.%s.lock", "inbox.%s.lock")]
    results = {}
    try:
        for fd in fds:
            fcntl.flock(fd, fcntl.LOCK_EX)
        started = time.monotonic()
        writes = [("PUT", SETTINGS, {"X-User-Key": key}, {"after": True}),
                  ("PUT", "/inbox/stuck", {"X-User-Key": key, "X-Sync-Version": "5"}, {"after": True})]

        def one(i):
            status, headers, raw = client.request(*writes[i])
            results[i] = (status, headers.get("content-type", ""), raw, time.monotonic() - started)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(writes))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(40)
    finally:
        for fd in fds:
            os.close(fd)
    for i, (method, path, _, _) in enumerate(writes):
        if i not in results:
            problems.append("%s %s: no answer within 40 s" % (method, path))
            continue
        status, ctype, raw, seconds = results[i]
        figures["%s %s" % (method, path)] = "%s after %.1f s" % (status, seconds)
        if status != 503 or not ctype.startswith("application/json"):
            problems.append("%s %s behind a held lock: %s (%s) after %.1f s: %r" % (method, path, status, ctype,
                                                                                  seconds, raw[:200]))
    _, _, settings_after = client.request("GET", SETTINGS, {"X-User-Key": key})
    _, _, message_after = client.request("GET", "/inbox/stuck", {"X-User-Key": key})
    if settings_after != settings_before or message_after != message_before:
        problems.append("a writer that gave up changed the stored data")
    return problems, figures


def settings_checks(checks, client, args, deadline, label, data):
    one = ["cc1-%s-%s" % (label, RUN_ID)] * args.writers
    problems, retries = read_modify_write(client, one, args.increments, deadline)
    checks.check("%s: %d writers x %d If-Match increments on one key: no lost update (%d retries on 412)" % (
        label, args.writers, args.increments, sum(retries.values())), problems)

    many = ["cck%d-%s-%s" % (n, label, RUN_ID) for n in range(args.writers)]
    problems, retries = read_modify_write(client, many, args.increments, deadline)
    if retries:
        problems.append("412 on a key with a single writer: %s" % dict(retries))
    checks.check("%s: %d writers on %d keys x %d increments: every counter exact, no 412" % (
        label, args.writers, args.writers, args.increments), problems)

    key = "cct-%s-%s" % (label, RUN_ID)
    problems, reads = plain_puts(client, key, args.writers, args.puts, deadline)
    if data:
        path = os.path.join(data, "user_settings", key + ".json")
        why = stresslib.settings_file_problem(open(path, "rb").read()) if os.path.exists(path) else "no file"
        if why:
            problems.append("%s: %s" % (path, why))
    checks.check("%s: %d writers x %d plain PUTs (1-300 KB) with readers: every GET whole (%d reads), file whole" % (
        label, args.writers, args.puts, sum(reads.values())), problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("--data", required=True, help="the stack's data directory (for lock files and file checks)")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--increments", type=int, default=10)
    parser.add_argument("--puts", type=int, default=12)
    parser.add_argument("--feed-ops", type=int, default=30)
    parser.add_argument("--direct", metavar="CGI_BIN", help="also run the settings checks on the programs directly")
    parser.add_argument("--stuck", action="store_true",
                        help="also hold a key's locks past the programs' 25 s limit (takes 25 s)")
    parser.add_argument("--seconds", type=float, default=240)
    args = parser.parse_args()
    deadline = time.monotonic() + args.seconds
    checks = suite.Checks()
    client = HTTP(args.base)

    started = time.monotonic()
    settings_checks(checks, client, args, deadline, "nginx", args.data)

    feed = subprocess.run([sys.executable, os.path.join(stresslib.REPO, "Tests", "support", "feed_race.py"),
                           args.base, "--writers", str(args.writers), "--ops", str(args.feed_ops),
                           "--seconds", str(max(10, min(120, deadline - time.monotonic())))],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    text = feed.stdout.decode(errors="replace").strip()
    checks.check("inbox: feed_race.py with %d writers and an anchored reader: %s" % (
        args.writers, text.splitlines()[0] if text else "no output"), [] if feed.returncode == 0 else text.splitlines())

    for route in ("settings", "inbox"):
        problems, figures = lock_isolation(client, args.data, route, "cch-%s" % RUN_ID, "cco-%s" % RUN_ID)
        checks.check("%s: a held key lock stops only that key's writers%s (%s)" % (
            route, " and feed readers" if route == "inbox" else "",
            "; ".join("%s: %s" % item for item in figures.items())), problems)

    if args.stuck:
        problems, figures = stuck_writers(client, args.data, "ccs-%s" % RUN_ID)
        checks.check("writers stuck behind a held lock give up with a JSON 503 before nginx's 504, writing nothing (%s)"
                     % "; ".join("%s: %s" % item for item in figures.items()), problems)

    if args.direct:
        direct = Direct(os.path.abspath(args.direct), args.data)
        settings_checks(checks, direct, args, deadline, "direct", args.data)
    print("concurrency: %.1f s" % (time.monotonic() - started))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
