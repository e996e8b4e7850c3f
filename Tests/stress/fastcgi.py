#!/usr/bin/env python3
"""The FastCGI mode with its workers killed mid-request (part of `make test`).

    fastcgi.py [--seconds 15] [--every 0.3] [--writers 8] [--readers 2] [--keep]

A stack in the FastCGI mode (Tests/support/stack.py, MOCKCLOUD_MODE=fastcgi:
a pool of persistent workers per program behind nginx + TLS). For
--seconds, 8 writers (6 PUT new inbox messages of one key, 2 PUT their own
settings documents), each from a loopback address of its own over one
keep-alive connection, and 2 readers following the key's feed from their
anchors, run at full speed, while every 0.3 s a SIGKILL goes to a random
busy worker (one of either pool's masters' children that is not waiting in
accept4, read from /proc/PID/syscall). Then:

  acknowledged  every write answered 2xx is on the box: each message in
                the full feed and by GET at its version, each settings
                document at least as new as its last acknowledged one;
  consistent    the feed's ids and seqs are unique, and each reader,
                following on from its anchor to the end, holds exactly
                what a full read shows;
  JSON errors   every request that failed answered a JSON error (a 5xx
                with Content-Type application/json): none went unanswered;
  the others    no more requests failed than workers were killed: a kill
                costs the request it interrupted, never one in another
                worker;
  whole again   each pool has its workers back, each waiting in accept4;
  no refusal    the clients never met a refused or broken connection, and
                nginx's error log names no connect() to a pool that failed.

Then the inbox's loop for waits (inbox-waits: every `?wait=` read goes to
this one event-loop process) with 6 feed waits held in it from 3
addresses, killed with SIGKILL. Each waiting client gets a JSON error at
once; a write meanwhile answers 201 as ever; its master starts another
loop, the same waits sent again are held there, and the next write answers
every one of them with its change.

Prints ok/FAIL lines and `N passed, M failed` last (Tests/support/suite.py).
Everything listens on 127.0.0.1 in a temporary directory and is stopped by PID.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import stack  # noqa: E402
import suite  # noqa: E402

KEY = "chaos"
WAIT_KEY = "chaos-waits"
WORKERS = 4
ACCEPT4 = "288"     # x86_64: a worker blocked here waits for its next request
POOLS = ("user-settings", "inbox")


def pool_workers(run, pool, program=None):
    """The workers of a pool (a program's, or its pool for waits): the
    children of the master whose PID the launcher recorded, under the
    program's name; {pid: syscall}."""
    program = program or pool
    try:
        master = int(open(os.path.join(run, pool + ".pid")).read())
    except (OSError, ValueError):
        return {}
    workers = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % pid).read()
            syscall = open("/proc/%s/syscall" % pid).read().split()[0]
        except (OSError, IndexError):
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == master and fields[0] != "Z" and stat[stat.index("(") + 1:stat.rindex(")")] == program:
            workers[int(pid)] = syscall
    return workers


class Client(threading.Thread):
    """One client's loop over one keep-alive connection from its own
    address; every answer recorded as (what, status, content type, body)."""

    def __init__(self, base, stop, step):
        super().__init__(daemon=True)
        self.base, self.stop, self.step = base, stop, step
        self.source = suite.device_address()
        self.answers, self.broken = [], []
        self.conn = None

    def send(self, method, path, headers, body=None):
        """(status, content type, body bytes), or None when the connection broke."""
        for _ in range(2):
            if self.conn is None:
                self.conn = suite.connect(self.base, timeout=30, source=self.source)
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                answer = (response.status, response.getheader("Content-Type", ""), response.read())
                self.answers.append((method + " " + path,) + answer)
                return answer
            except (OSError, ValueError, Exception) as error:  # http.client raises its own kinds too
                self.broken.append("%s %s: %s: %s" % (method, path, type(error).__name__, error))
                self.conn.close()
                self.conn = None
        return None

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            self.step(self, n)
        if self.conn:
            self.conn.close()


def inbox_writer(acked):
    def step(client, n):
        ident = "m-%s-%d" % (client.source.replace(".", "-"), n)
        answer = client.send("PUT", "/inbox/" + ident, {"X-User-Key": KEY, "X-Sync-Version": "1",
                                                         "Content-Type": "application/json"},
                             json.dumps({"n": n, "from": client.source}).encode())
        if answer and 200 <= answer[0] < 300:
            acked.append(ident)
    return step


def settings_writer(acked):
    def step(client, n):
        key = "chaos-" + client.source.replace(".", "-")
        stamp = "2026-05-18T10:%02d:%02d.%03dZ" % (n // 60000 % 60, n // 1000 % 60, n % 1000)
        answer = client.send("PUT", "/user/settings", {"X-User-Key": key, "Content-Type": "application/json"},
                             json.dumps({"n": n, "updatedAt": stamp}).encode())
        if answer and answer[0] == 200:
            acked[key] = n
    return step


class Follower:
    """A reader's state: id -> version, from the feed followed by its anchor."""

    def __init__(self):
        self.anchor, self.state = None, {}

    def page(self, client):
        """One page; True when it read to the end."""
        path = "/inbox?limit=200" + ("&anchor=" + self.anchor if self.anchor else "")
        answer = client.send("GET", path, {"X-User-Key": KEY})
        if not answer or answer[0] != 200:
            return False
        doc = json.loads(answer[2])
        for message in doc["messages"]:
            self.state[message["id"]] = message["version"]
        for ident in doc.get("deleted", []):
            self.state.pop(ident if isinstance(ident, str) else ident["id"], None)
        self.anchor = doc["anchor"]
        return not doc["hasMore"]


def reader(follower):
    def step(client, n):
        follower.page(client)
        time.sleep(0.02)
    return step


def killer(run, stop, every, kills, idle):
    """Every `every` seconds, SIGKILL to one random busy worker of either pool."""
    rng = random.Random(20261207)
    while not stop.wait(every):
        busy = [(program, pid) for program in POOLS
                for pid, syscall in pool_workers(run, program).items() if syscall != ACCEPT4]
        if not busy:
            idle.append(time.monotonic())
            continue
        program, pid = rng.choice(busy)
        try:
            os.kill(pid, signal.SIGKILL)
            kills.append((program, pid))
        except ProcessLookupError:
            pass


def full_read(base):
    """The whole feed from no anchor: ({id: version}, [seqs], [ids], problems)."""
    client = Client(base, threading.Event(), None)
    follower, seqs, ids, problems = Follower(), [], [], []
    for _ in range(10000):
        path = "/inbox?limit=500" + ("&anchor=" + follower.anchor if follower.anchor else "")
        answer = client.send("GET", path, {"X-User-Key": KEY})
        if not answer or answer[0] != 200:
            problems.append("the full read: %s" % (answer,))
            break
        doc = json.loads(answer[2])
        for message in doc["messages"]:
            follower.state[message["id"]] = message["version"]
            seqs.append(message.get("seq"))
            ids.append(message["id"])
        follower.anchor = doc["anchor"]
        if not doc["hasMore"]:
            break
    return follower.state, seqs, ids, problems + client.broken, client


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--every", type=float, default=0.3, help="seconds between kills")
    ap.add_argument("--writers", type=int, default=8, help="writers, the last quarter of them settings writers")
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return ap.parse_args()


def main():
    args = parse_args()
    checks = suite.Checks()
    work = os.path.realpath(os.path.join("/tmp", "mcf.%d" % os.getpid()))
    os.makedirs(work, mode=0o711)
    box = stack.Stack(work, "pool", MOCKCLOUD_MODE="fastcgi", MOCKCLOUD_FASTCGI_WORKERS=str(WORKERS))
    try:
        box.start()
    except RuntimeError as error:
        checks.check("a stack in the FastCGI mode starts", [str(error)])
        return checks.summary()
    try:
        return chaos(args, checks, box)
    finally:
        box.stop()
        if args.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def chaos(args, checks, box):
    stop = threading.Event()
    inbox_acked, settings_acked, kills, idle = [], {}, [], []
    settings_count = max(1, args.writers // 4)
    clients = [Client(box.base, stop, inbox_writer(inbox_acked)) for _ in range(args.writers - settings_count)]
    clients += [Client(box.base, stop, settings_writer(settings_acked)) for _ in range(settings_count)]
    followers = [Follower() for _ in range(args.readers)]
    readers = [Client(box.base, stop, reader(f)) for f in followers]
    everyone = clients + readers
    for client in everyone:
        client.start()
    hunter = threading.Thread(target=killer, args=(box.run, stop, args.every, kills, idle), daemon=True)
    hunter.start()
    time.sleep(args.seconds)
    stop.set()
    hunter.join()
    for client in everyone:
        client.join(60)
    answers = [a for c in everyone for a in c.answers]
    failed = [a for a in answers if not 200 <= a[1] < 300]
    print("  %d requests, %d failed (%s); %d workers killed (%s), %d ticks with no busy worker" % (
        len(answers), len(failed), ", ".join(sorted({str(a[1]) for a in failed})), len(kills),
        ", ".join("%s %d" % (p, sum(1 for k in kills if k[0] == p)) for p in POOLS), len(idle)), flush=True)

    checks.check("workers were killed mid-request: at least one kill in every 3 s",
                 [] if len(kills) >= args.seconds / 3 else ["%d kills in %.0f s" % (len(kills), args.seconds)])
    not_json = []
    for what, status, kind, body in failed:
        try:
            json.loads(body)
            ok = kind.split(";")[0] == "application/json" and status >= 500
        except ValueError:
            ok = False
        if not ok:
            not_json.append("%s: %d %s %r" % (what, status, kind, body[:120]))
    checks.check("every request a kill interrupted answered a JSON error (5xx, application/json)", not_json)
    checks.check("no more requests failed than workers were killed (the others succeeded)",
                 [] if len(failed) <= len(kills) else
                 ["%d failed, %d kills: %s" % (len(failed), len(kills), [a[:2] for a in failed[:10]])])
    checks.check("no client met a refused or broken connection", [b for c in everyone for b in c.broken])

    state, seqs, ids, problems, probe = full_read(box.base)
    checks.check("every acknowledged message is in the full feed", problems +
                 ["%s acknowledged, not in the feed" % i for i in inbox_acked if i not in state])
    missing = []
    for ident in inbox_acked[::max(1, len(inbox_acked) // 200)]:
        answer = probe.send("GET", "/inbox/" + ident, {"X-User-Key": KEY})
        if not answer or answer[0] != 200 or json.loads(answer[2]).get("version") != 1:
            missing.append("GET /inbox/%s: %s" % (ident, answer and answer[:2]))
    checks.check("every acknowledged message answers GET at its version (a sample of 200)", missing)
    stale = []
    for key, n in settings_acked.items():
        answer = probe.send("GET", "/user/settings", {"X-User-Key": key})
        if not answer or answer[0] != 200 or json.loads(answer[2]).get("n", -1) < n:
            stale.append("%s: acknowledged n=%d, stored %s" % (key, n, answer and answer[2][:100]))
    checks.check("every acknowledged settings document is stored (or a newer one)", stale)
    checks.check("the feed's ids and seqs are unique",
                 [] if len(set(ids)) == len(ids) and len(set(seqs)) == len(seqs) else
                 ["%d ids (%d distinct), %d seqs (%d distinct)" % (len(ids), len(set(ids)), len(seqs), len(set(seqs)))])
    differ = []
    for number, follower in enumerate(followers):
        for _ in range(10000):
            if follower.page(probe):
                break
        if follower.state != state:
            extra = set(follower.state) - set(state)
            lost = set(state) - set(follower.state)
            differ.append("reader %d: %d ids the full read lacks, %d it lacks" % (number, len(extra), len(lost)))
    checks.check("each reader, following on from its anchor, holds what a full read shows", differ)

    def whole():
        return all(len(w) == WORKERS and all(s == ACCEPT4 for s in w.values())
                   for w in (pool_workers(box.run, p) for p in POOLS))
    suite.until(whole, timeout=60, step=0.1)
    checks.check("each pool has its %d workers again, each waiting for a request" % WORKERS,
                 [] if whole() else ["%s: %s" % (p, pool_workers(box.run, p)) for p in POOLS])
    refused = []
    try:
        for line in open(os.path.join(box.run, "logs", "error.log"), errors="replace"):
            if re.search(r"connect\(\) to unix:.*failed|Connection refused|Resource temporarily unavailable", line):
                refused.append(line.strip()[:200])
    except OSError as error:
        refused.append(str(error))
    checks.check("nginx never failed to connect to a pool (error.log)", refused)
    waits_killed(checks, box)
    return checks.summary()


def held(box, source, anchor, answers):
    """A feed wait from `source`, its (status, content type, body, seconds) added to `answers`."""
    def run():
        client = Client(box.base, threading.Event(), None)
        client.source = source
        started = time.monotonic()
        answer = client.send("GET", "/inbox?anchor=%s&wait=30" % anchor, {"X-User-Key": WAIT_KEY})
        answers.append((answer or (0, "", b""))[:3] + (time.monotonic() - started,))
        if client.conn:
            client.conn.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def waits_killed(checks, box):
    writer = Client(box.base, threading.Event(), None)

    def write(ident):
        answer = writer.send("PUT", "/inbox/" + ident, {"X-User-Key": WAIT_KEY, "X-Sync-Version": "1"}, b'{"kg": 70}')
        return answer and answer[0]

    write("w-0")
    first = writer.send("GET", "/inbox?limit=100", {"X-User-Key": WAIT_KEY})
    anchor = json.loads(first[2])["anchor"]
    sources = ["127.0.0.%d" % (250 + i % 3) for i in range(6)]

    def loop():
        """The inbox's loop for waits: the one child of its master."""
        loops = list(pool_workers(box.run, "inbox-waits", "inbox"))
        return loops[0] if len(loops) == 1 else None

    def sockets(pid):
        """The sockets `pid` holds: its listening one and one per held wait."""
        try:
            return sum(1 for fd in os.listdir("/proc/%d/fd" % pid)
                       if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"))
        except OSError:
            return 0

    first_loop = loop()
    idle = sockets(first_loop) if first_loop else 0
    answers = []
    threads = [held(box, source, anchor, answers) for source in sources]
    suite.until(lambda: sockets(first_loop) >= idle + len(threads) or answers, timeout=30)
    holds = sockets(first_loop) - idle if first_loop else 0
    checks.check("6 feed waits are held by the inbox's one loop for waits, none answered yet",
                 [] if first_loop and holds >= 6 and not answers else
                 ["loop %s holds %d, answers %s" % (first_loop, holds, answers)])
    if first_loop:
        os.kill(first_loop, signal.SIGKILL)
    for thread in threads:
        thread.join(40)
    bad = [a for a in answers if not (a[0] >= 500 and a[1].split(";")[0] == "application/json" and a[3] < 25)]
    checks.check("every client whose wait was killed got a JSON 5xx at once, not a hang or a broken connection",
                 [] if len(answers) == 6 and not bad else ["%d answers: %s" % (len(answers), [a[:2] for a in answers])])
    status = write("w-1")
    checks.check("a write beside the killed waits answers 201", [] if status == 201 else ["answered %s" % status])
    suite.until(lambda: loop() not in (None, first_loop), timeout=30, step=0.1)
    second_loop = loop()
    checks.check("the master started another loop for waits",
                 [] if second_loop not in (None, first_loop) else ["loop %s (was %s)" % (second_loop, first_loop)])
    # Following on: from the anchor after w-1, the waits are held until w-2.
    page = writer.send("GET", "/inbox?limit=100&anchor=" + anchor, {"X-User-Key": WAIT_KEY})
    anchor = json.loads(page[2])["anchor"]
    answers = []
    idle = sockets(second_loop) if second_loop else 0
    threads = [held(box, source, anchor, answers) for source in sources[:4]]
    suite.until(lambda: (second_loop and sockets(second_loop) >= idle + len(threads)) or answers, timeout=30)
    early = list(answers)
    status = write("w-2")
    for thread in threads:
        thread.join(40)
    with_change = [a for a in answers if a[0] == 200 and b'"w-2"' in a[2]]
    checks.check("the same clients following again are held, and the next write answers each with its change",
                 [] if not early and status == 201 and len(with_change) == 4 else
                 ["answered before the write: %s; the write: %s; after: %s" % (
                     [a[:2] for a in early], status, [a[:3] for a in answers])])

if __name__ == "__main__":
    sys.exit(main())
