"""Waiting requests (`?wait=`) meet faults, for Tests/client/run.py: a stack
stopped while requests wait, a stack restarted under a follower, a
compaction and a 410 during a wait. The follower here is the protocol as
docs/API.md §4 gives it, in a few lines of Python (a wait with the last
anchor, the same wait again after a broken connection), so that what is
checked is the server's side; run.py checks the real clients on the same
faults.

Python 3 standard library only.
"""
import http.client
import json
import os
import threading
import time
import urllib.parse

import suite
from formats import read_log
from suite import until


class Follower(threading.Thread):
    """Follows `key`'s feed with waits from a device, as a client must:
    each answer's anchor into the next wait, the same wait again after a
    broken connection or a 5xx, a full read without exclude-source after a
    410. `seen` lists (id, seq) of every message it was handed, in order."""

    def __init__(self, box, key, device="phone-1", anchor=None, wait=20):
        super().__init__(daemon=True)
        self.box, self.key, self.device, self.anchor, self.wait = box, key, device, anchor, wait
        self.seen, self.deleted, self.statuses, self.errors = [], [], [], []
        self.resyncs = 0
        # The device's copy: ids it holds; a full read replaces it at its end.
        self.copy, self.reading = set(), None
        self.stop = threading.Event()
        self.waiting = threading.Event()

    def run(self):
        conn = None
        full = self.anchor is None
        while not self.stop.is_set():
            query = {"wait": self.wait, "limit": 1000}
            if self.anchor:
                query["anchor"] = self.anchor
            if not full:
                query["exclude-source"] = self.device
            try:
                if conn is None:
                    conn = http.client.HTTPSConnection("127.0.0.1", self.box.stack.port, context=self.box.http.context,
                                                       timeout=self.wait + 30)
                self.waiting.set()
                conn.request("GET", "/inbox?" + urllib.parse.urlencode(query),
                             headers={"X-User-Key": self.key, "X-Device-Id": self.device})
                r = conn.getresponse()
                raw = r.read()
            except (OSError, http.client.HTTPException) as error:
                self.errors.append(type(error).__name__)
                if conn:
                    conn.close()
                conn = None
                time.sleep(0.3)
                continue
            self.statuses.append(r.status)
            if r.status == 410:
                self.anchor, full = None, True
                self.resyncs += 1
                self.reading = set()
                continue
            if r.status != 200:
                time.sleep(0.5)
                continue
            page = json.loads(raw)
            self.seen += [(m["id"], m["seq"]) for m in page["messages"]]
            self.deleted += [(d["id"], d["seq"]) for d in page["deleted"]]
            self.anchor = page["anchor"]
            if self.reading is not None:
                self.reading |= {m["id"] for m in page["messages"]}
                self.reading -= {d["id"] for d in page["deleted"]}
            else:
                self.copy |= {m["id"] for m in page["messages"]}
                self.copy -= {d["id"] for d in page["deleted"]}
            if not page["hasMore"]:
                if self.reading is not None:
                    self.copy, self.reading = self.reading, None
                full = False
        if conn:
            conn.close()

    def wait_for(self, ids, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if set(ids) <= {i for i, _ in self.seen}:
                return True
            time.sleep(0.05)
        return False


def put(box, key, ident, device="mirror-1", version=None, body=None):
    headers = {} if version is None else {"X-Sync-Version": str(version)}
    status, answer = box.request("PUT", "/inbox/" + ident, key, device=device, body=body or {"id": ident},
                                 headers=headers)
    assert status in (200, 201), (status, answer)
    return answer


def held_request(box, path, key, headers, results, index, protocol_timeout=90):
    """One waiting request, from a device address of its own (one address
    holds at most MOCKCLOUD_WAITS_PER_ADDRESS waits); its status (or the
    exception's name) lands in results[index]."""
    conn = http.client.HTTPSConnection("127.0.0.1", box.stack.port, context=box.http.context, timeout=protocol_timeout,
                                       source_address=(suite.device_address(), 0))
    try:
        conn.request("GET", path, headers={"X-User-Key": key, **headers})
        r = conn.getresponse()
        r.read()
        results[index] = r.status
    except (OSError, http.client.HTTPException) as error:
        results[index] = type(error).__name__
    finally:
        conn.close()


def faults(box, checks):
    """The checks on `box`, a stack with compaction at 8 records and a
    tombstone horizon of 0 (every deletion expires at the next compaction)."""
    waits_when_the_stack_stops(box, checks)
    follower_over_a_restart(box, checks)
    compaction_during_a_wait(box, checks)
    gone_during_a_follow(box, checks)


def following(box, key, anchor):
    """A Follower from `anchor`, started, once its first wait is in."""
    follower = Follower(box, key, anchor=anchor)
    follower.start()
    follower.waiting.wait(10)
    time.sleep(0.5)
    return follower


def waits_when_the_stack_stops(box, checks):
    """Stopping the stack ends every wait with a clean answer or a closed connection."""
    put(box, "w-stop", "seed")
    anchor = box.request("GET", "/inbox", "w-stop")[1]["anchor"]
    results = [None] * 6
    threads = []
    for i in range(6):
        path, headers = (("/inbox?wait=60&anchor=" + anchor, {}) if i % 2 == 0
                         else ("/user/settings?wait=60", {"If-None-Match": "*"}))
        threads.append(threading.Thread(target=held_request, args=(box, path, "w-stop", headers, results, i)))
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    started = time.monotonic()
    port, data = str(box.stack.port), box.stack.data
    box.stop()
    for thread in threads:
        thread.join(90)
    took = time.monotonic() - started
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _is_program_of(pid, box)]
    problems = [f"answers: {results}"] if any(r is None or (isinstance(r, int) and r >= 500) for r in results) else []
    # Ended by the stop, not by running out their 60 s: the bound tells the
    # two apart whatever the machine's load, it does not time the stop.
    if took > 55:
        problems.append(f"the waits ended {took:.1f} s after the stop: they ran out, the stop did not end them")
    if leftovers:
        problems.append(f"programs left running: {leftovers}")
    checks.check("the stack stopped under 6 waits: each ends with a closed connection or a clean answer, "
                 f"none a 5xx ({', '.join(sorted(set(map(str, results))))}), no program left", problems)
    box.stack.settings.update(MOCKCLOUD_PORT=port, MOCKCLOUD_DATA=data)
    box.stack.start()


def follower_over_a_restart(box, checks):
    """A follower survives a restart of the stack: nothing missed, nothing twice."""
    put(box, "w-restart", "before")
    follower = following(box, "w-restart", box.request("GET", "/inbox", "w-restart")[1]["anchor"])
    for i in range(3):
        put(box, "w-restart", f"a{i}")
    follower.wait_for(["a0", "a1", "a2"], 30)
    box.restart()
    for i in range(3):
        put(box, "w-restart", f"b{i}")
    got = follower.wait_for(["b0", "b1", "b2"], 60)
    put(box, "w-restart", "own", device="phone-1")
    put(box, "w-restart", "c0")
    got = got and follower.wait_for(["c0"], 30)
    follower.stop.set()
    ids = [i for i, _ in follower.seen]
    checks.check("a follower over a restart of the stack gets each write once, in order, and not its own",
                 [] if got and ids == ["a0", "a1", "a2", "b0", "b1", "b2", "c0"] else
                 [f"seen {follower.seen}, statuses {sorted(set(follower.statuses))}, errors {follower.errors[:5]}"])


def compaction_during_a_wait(box, checks):
    """A compaction during the wait: the follower's own writes make it due
    and do not end the wait; the next write of another device does."""
    key = "w-compact"
    for i in range(4):
        put(box, key, f"m{i}")
    follower = following(box, key, box.request("GET", "/inbox", key)[1]["anchor"])
    log = os.path.join(box.stack.data, "inbox", key, "changes.log")
    before = read_log(open(log, "rb").read())[0]
    for i in range(12):
        put(box, key, f"own-{i}", device="phone-1")
    deadline = time.monotonic() + 10
    after = before
    while after.records == before.records and time.monotonic() < deadline:
        time.sleep(0.1)
        after = read_log(open(log, "rb").read())[0]
    put(box, key, "after")
    got = follower.wait_for(["after"], 30)
    follower.stop.set()
    checks.check("a compaction during a wait neither ends it nor loses the next change",
                 [] if got and [i for i, _ in follower.seen] == ["after"] and after.records != before.records
                 and 410 not in follower.statuses else
                 [f"seen {follower.seen}, statuses {follower.statuses}, log records {before.records} -> {after.records}"])


def gone_during_a_follow(box, checks):
    """A 410 during the follow: a deletion the compaction right after it
    drops (horizon 0) may reach the follower first or only as a 410; either
    way it recovers with a full read and ends with the server's state."""
    key = "w-gone"
    for i in range(6):
        put(box, key, f"g{i}")
    follower = Follower(box, key)   # a full read first, then waits
    follower.start()
    follower.wait_for([f"g{i}" for i in range(6)], 30)
    time.sleep(0.5)
    for i in range(3):
        status, _ = box.request("DELETE", f"/inbox/g{i}", key, device="mirror-1")
        assert status == 204, status
    for i in range(8):
        put(box, key, f"h{i}")
    got = follower.wait_for([f"h{i}" for i in range(8)], 30)
    follower.stop.set()
    follower.join(60)
    live = set(box.http.live_messages(key))
    checks.check(f"a follower through deletions that compaction drops ends with the server's state "
                 f"({follower.resyncs} full read{'s' if follower.resyncs != 1 else ''} after a 410)",
                 [] if got and follower.copy >= live and not ({"g0", "g1", "g2"} & follower.copy) else
                 [f"copy {sorted(follower.copy)}, server {sorted(live)}, statuses {follower.statuses}"])


def _is_program_of(pid, box):
    """True for an inbox or user-settings program still running for box's
    data directory (other stacks run the same cgi-bin; a program's
    MOCKCLOUD_DATA, from nginx's fastcgi_param, says whose it is)."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return False
    return os.path.basename(exe) in ("inbox", "user-settings") and \
        ("MOCKCLOUD_DATA=" + box.stack.data).encode() in environ


def follow_checks(box, checks, tool):
    """`mockcloud-sync pull DIR --follow` (`tool`: the built program) on the
    same faults: the folder kept current, through a restart of the stack
    and a 410, each change printed once, and SIGINT ending it at once."""
    import signal
    import subprocess
    import tempfile

    key = "w-follow"
    folder = tempfile.mkdtemp(prefix="mcfollow.")
    put(box, key, "first")
    cmd = [tool, "pull", folder, "--follow", "--exclude-own", "--json", "--url", box.url, "--ca", box.ca,
           "--user-key", key, "--device-id", "phone-1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(json.loads(line) for line in proc.stdout), daemon=True)
    reader.start()

    def files():
        return {name[:-5] for name in os.listdir(folder) if name.endswith(".json") and not name.startswith(".")}

    until(lambda: any(line.get("following") for line in lines), 30)
    started = time.monotonic()
    put(box, key, "scan-1")
    fresh = until(lambda: "scan-1" in files(), 30)
    took = time.monotonic() - started
    checks.check(f"pull --follow: a write lands in the folder while it waits ({took * 1000:.0f} ms)",
                 [] if fresh else [f"files {sorted(files())}, lines {lines}"])

    box.restart()
    for i in range(3):
        put(box, key, f"after-restart-{i}")
    put(box, key, "own", device="phone-1")
    wanted = ["scan-1"] + [f"after-restart-{i}" for i in range(3)]

    def stored():
        return [line["id"] for line in list(lines) if line.get("change") == "stored"]
    ok = until(lambda: set(wanted) <= files() and set(wanted) <= set(stored()), 90)
    time.sleep(0.5)  # a line printed twice would be there by now
    checks.check("pull --follow through a restart of the stack: every write once, its own skipped",
                 [] if ok and sorted(stored()) == sorted(wanted) and "own" not in files() else
                 [f"files {sorted(files())}, stored lines {stored()}"])

    # A 410: deletions the compaction drops at once (horizon 0) under the follow.
    for i in range(3):
        status, _ = box.request("DELETE", f"/inbox/after-restart-{i}", key, device="mirror-1")
        assert status == 204, status
    for i in range(8):
        put(box, key, f"late-{i}")
    truth = set(box.http.live_messages(key)) - {"own"}
    ok = until(lambda: files() == truth | ({"own"} & files()), 60)
    checks.check("pull --follow through deletions that compaction drops (a 410 or not): the folder is the server's",
                 [] if ok else [f"files {sorted(files())}, server {sorted(truth)}, lines {lines[-5:]}"])

    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        status = proc.wait(40)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = "still running after 40 s"
    took = time.monotonic() - started
    reader.join(5)
    checks.check(f"Ctrl-C ends pull --follow at once, cleanly ({took * 1000:.0f} ms, exit {status})",
                 [] if status == 0 and took < 3 and lines and lines[-1].get("stopped") else
                 [f"exit {status} after {took:.1f} s; last lines {lines[-2:]}; stderr {proc.stderr.read()[-300:]}"])


def library_checks(checks, lib, box, transport):
    """The library's follows (client-bench `follow` and `watch-settings`,
    over `transport`): each change handed out as it commits, the device's
    own skipped, each new settings document and the deletion, and a cancel
    that ends the waiting request at once."""
    import subprocess

    def start(command, key):
        proc = subprocess.Popen(lib.command(command, box.url, box.ca, key), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        threading.Thread(target=lambda: lines.extend(json.loads(line) for line in proc.stdout), daemon=True).start()
        return proc, lines

    def until(condition, timeout=30):  # finer steps: the check reports each change's delay
        return suite.until(condition, timeout, step=0.02)

    def stop(proc, lines):
        count = len(lines)
        try:
            proc.stdin.write("cancel\n")
            proc.stdin.flush()
            proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
        until(lambda: len(lines) > count and "outcome" in lines[-1], 5)
        return lines[-1] if lines and "outcome" in lines[-1] else {"raw": lines[-1:], "stderr": proc.stderr.read()[-300:]}

    key = f"lib-follow-{transport}"
    feed, feed_lines = start("follow", key)
    settings, settings_lines = start("watch-settings", key)
    until(lambda: feed_lines, 30)
    time.sleep(0.5)
    times = []
    for i in range(3):
        started = time.monotonic()
        put(box, key, f"scan-{i}")
        until(lambda: any(f"scan-{i}" in line.get("ids", ()) for line in feed_lines))
        times.append((time.monotonic() - started) * 1000)
    put(box, key, "own", device="bench-1")
    put(box, key, "scan-3")
    until(lambda: any("scan-3" in line.get("ids", ()) for line in feed_lines))
    ids = [i for line in feed_lines if not line.get("full") for i in line.get("ids", ())]
    ended = stop(feed, feed_lines)
    checks.check(f"{transport}: changes(since:follow:) hands out each change as it commits, not the device's own "
                 f"({', '.join('%.0f' % t for t in times)} ms), and a cancel ends it at once with CancellationError "
                 f"({ended.get('ms', -1):.1f} ms)",
                 [] if ids == ["scan-0", "scan-1", "scan-2", "scan-3"] and ended.get("outcome") == "cancelled"
                 and ended.get("ms", 1e9) < 1000 else [f"ids {ids}, end {ended}"])

    for units in ("metric", "imperial"):
        status, _ = box.request("PUT", "/user/settings", key, body={"units": units})
        assert status == 200, status
        until(lambda: any(line.get("document", {}).get("units") == units for line in settings_lines))
    status, _ = box.request("DELETE", "/user/settings", key)
    assert status == 204, status
    until(lambda: any(line.get("deleted") for line in settings_lines))
    seen = [line.get("document", {}).get("units") if "document" in line else "deleted"
            for line in settings_lines if "outcome" not in line]
    ended = stop(settings, settings_lines)
    checks.check(f"{transport}: settingsUpdates(after:) hands out each new document and the deletion, "
                 f"and a cancel ends it at once with CancellationError ({ended.get('ms', -1):.1f} ms)",
                 [] if seen == ["metric", "imperial", "deleted"] and ended.get("outcome") == "cancelled"
                 and ended.get("ms", 1e9) < 1000 else [f"seen {seen}, end {ended}"])
