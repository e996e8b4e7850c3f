"""SyncEngine against the real stack, for Tests/client/run.py, over one
transport (`client-bench engine`, a SyncEngine driven a command per line):

- kill -9 at many points of enqueue, editSettings and run (rounds of
  random puts, deletions and settings edits, the engine running in most,
  another device writing meanwhile, each round killed after a random
  time), then a run to the end: every acknowledged change is on the box as
  its latest acknowledged version (or a later one that was written but
  not acknowledged), every acknowledged settings edit likewise, nothing
  the app did not hand over, and the engine's store (its file holds the
  record of every application) equals the box with no change applied
  twice;
- two phones: A edits one member offline at 10:01, B another at 10:05 and
  comes home first, A last: both edits are on the box;
- a damaged state file: the engine stops with an error naming the file,
  sends nothing, and leaves the file as it was;
- a second engine on one state directory is refused, in the same process
  and from another; a process killed with -9 releases it;
- the box away: the stack stopped under a running engine, changes handed
  over meanwhile, the stack started again: the engine sends them by
  itself, with no restart;
- the lifecycle: close() then a new engine on the directory at once, in
  the same process; syncUntilIdle with the box present (everything sent,
  the feed read), away (back by its deadline, everything pending), and past
  its deadline (cancelled, then the rest sent by the next); the network
  hint (nothing sent while off, everything once on); a TLS server with
  another certificate at the box's address (another network), then the
  box: the same engine sends everything; an upload the box refused, the
  engine killed before the app took it: the next engine shows it until
  the app takes it;
- a kill at every step (over one transport): the engine run under strace,
  killed (SIGKILL injected) at its Nth system call on the state directory
  (a write, a sync, a truncation, a rename, an open) for N = 1, 2, ...
  until a run ends unkilled, through enqueue, editSettings, run and a
  compaction: each time the engine opens again, sends what is left, and
  the box holds everything acknowledged.

Python 3 standard library only.
"""
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import threading
import time

TIME_BASE = 1_779_098_400  # 2026-05-18T10:00:00Z


def stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(TIME_BASE + seconds))


class Engine:
    """One `client-bench engine` process: commands in, its lines (acks,
    events, errors) collected as they come."""

    def __init__(self, lib, box, key, state, store, device="phone-1", include_own=False, run=True, attempts=3):
        args = [state, store] + (["--include-own"] if include_own else [])
        self.proc = subprocess.Popen(lib.command("engine", box.url, box.ca, key, *args, device=device, attempts=attempts),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if run:
            self.send("run")

    def _read(self):
        for line in self.proc.stdout:
            try:
                parsed = json.loads(line)
            except ValueError:
                parsed = {"raw": line}
            with self.lock:
                self.lines.append(parsed)

    def send(self, *commands):
        try:
            self.proc.stdin.write("".join(command + "\n" for command in commands))
            self.proc.stdin.flush()
        except OSError:
            pass  # killed, or ended with an error the lines hold

    def seen(self):
        with self.lock:
            return list(self.lines)

    def acks(self):
        return [line for line in self.seen() if "ack" in line]

    def events(self, kind):
        return [line for line in self.seen() if line.get("event") == kind]

    def until(self, condition, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            if self.proc.poll() is not None:
                self.reader.join(5)
                return condition()
            time.sleep(0.02)
        return False

    def pending(self, timeout=30):
        """{"uploads", "settings"} as the engine counts them now."""
        before = len(self.seen())
        self.send("pending")
        self.until(lambda: any("pending" in line for line in self.seen()[before:]), timeout)
        answers = [line["pending"] for line in self.seen()[before:] if "pending" in line]
        return answers[-1] if answers else None

    def drained(self, timeout=120):
        """True once nothing is pending."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = self.pending()
            if pending and pending.get("uploads") == 0 and pending.get("settings") == 0:
                return True
            if pending is None:
                return False
            time.sleep(0.1)
        return False

    def kill(self):
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.reader.join(10)

    def close(self):
        """EOF on stdin: the run cancelled, the process ends."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.reader.join(10)
        return self.proc.returncode

    def stderr(self):
        try:
            return self.proc.stderr.read()[-400:]
        except (OSError, ValueError):
            return ""


def store_state(path):
    """(id -> (version, body), [(id, seq, kind)] applications) of a FileStore."""
    messages, applied = {}, []
    if not os.path.exists(path):
        return messages, applied
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split(" ", 4)
            if fields[0] == "m":
                messages[fields[1]] = (int(fields[2]), json.loads(fields[4]))
            elif fields[0] == "a":
                applied.append((fields[1], int(fields[2]), fields[3]))
    return messages, applied


def allowed(changes):
    """What the box may hold for one id (or member) after `changes`, a list
    of (value, acknowledged), oldest first, None meaning deleted: the last
    acknowledged value or any later one; anything, or nothing, when none
    was acknowledged."""
    acked = [i for i, (_, ack) in enumerate(changes) if ack]
    if not acked:
        return [None] + [value for value, _ in changes]
    return [value for value, _ in changes[acked[-1]:]]


class CrashRounds:
    """The rounds of crash_checks: an engine handed random changes and killed
    with -9 each round, with a ledger of what was handed over and what came
    back acknowledged, to judge the box and the store by at the end."""

    def __init__(self, lib, box, t, work, rng):
        self.lib, self.box, self.rng = lib, box, rng
        self.key = f"engine-crash-{t}"
        self.state, self.store = os.path.join(work, f"engine-crash-{t}"), os.path.join(work, f"engine-crash-{t}.store")
        self.uploads = {}   # id -> [((version, body) or None, acknowledged)]
        self.edits = {}     # member -> [(value or None, acknowledged)]
        self.versions = {}  # id -> last version handed out
        self.mirror = {}    # another device's writes, each acknowledged by the box
        self.clock = 0
        self.stats = {"kills": 0, "killed while running": 0, "killed among its enqueues": 0, "acknowledged puts": 0,
                      "acknowledged deletions": 0, "acknowledged edits": 0, "changes handed over unacknowledged": 0}
        self.problems = []

    def engine(self, run):
        """An engine on this check's state directory and store."""
        return Engine(self.lib, self.box, self.key, self.state, self.store, include_own=True, run=run)

    def round(self, r):
        """One round: an engine (running or not) handed random changes, the
        other device writing meanwhile, killed after a random while."""
        running = self.rng.random() < 0.75
        engine = self.engine(running)
        planned = self.plan()
        places = self.hand_over(planned)
        engine.send(*[command for _, _, command in planned])
        self.other_device_writes()
        self.kill_later(engine)
        self.acknowledge(r, running, engine, planned, places)

    def plan(self):
        """A round's random commands, each (kind, what, command line)."""
        rng, planned = self.rng, []
        for _ in range(rng.randint(3, 40)):
            roll = rng.random()
            live = [i for i, changes in self.uploads.items() if changes[-1][0] is not None]
            if roll < 0.25:
                self.clock += 1
                members = {f"m{rng.randrange(5)}": (None if rng.random() < 0.15 else self.clock) for _ in range(rng.randint(1, 2))}
                planned.append(("edit", members, f"edit {stamp(self.clock)} {json.dumps(members)}"))
            elif roll < 0.35 and live:
                ident = rng.choice(live)
                planned.append(("delete", ident, f"delete {ident}"))
            else:
                ident = rng.choice(list(self.uploads)) if self.uploads and rng.random() < 0.5 else f"c-{len(self.uploads):04d}"
                self.versions[ident] = self.versions.get(ident, 0) + 1
                body = {"id": ident, "v": self.versions[ident], "pad": "p" * rng.choice([0, 50, 2000])}
                planned.append(("put", (ident, self.versions[ident], body), f"put {ident} {self.versions[ident]} {json.dumps(body)}"))
        return planned

    def hand_over(self, planned):
        """Enters the planned changes unacknowledged; per command, the (list,
        index) of each change it hands over, for its acknowledgement to mark."""
        places = []
        for kind, what, _ in planned:
            if kind == "edit":
                changes = [self.edits.setdefault(member, []) for member in what]
                for member, value in what.items():
                    self.edits[member].append((value, False))
                places.append([(c, len(c) - 1) for c in changes])
            else:
                ident = what if kind == "delete" else what[0]
                changes = self.uploads.setdefault(ident, [])
                changes.append((None if kind == "delete" else (what[1], what[2]), False))
                places.append([(changes, len(changes) - 1)])
        return places

    def other_device_writes(self):
        """Now and then a write from another device, for the engine's feed to bring in."""
        if self.rng.random() < 0.3:
            ident = f"mirror-{len(self.mirror):03d}"
            status, _ = self.box.request("PUT", f"/inbox/{ident}", self.key, device="mirror-1", body={"scan": len(self.mirror)})
            if status in (200, 201):
                self.mirror[ident] = (0, {"scan": len(self.mirror)})

    def kill_later(self, engine):
        """kill -9 at a random moment: among the enqueues, or in the run."""
        when = self.rng.random()
        if when < 0.4:  # among the enqueues and edits: a few ms after the first was acknowledged
            engine.until(lambda: engine.acks(), 30)
            time.sleep(self.rng.uniform(0, 0.03))
        else:  # during the sends, the feed's pages and the waits
            time.sleep(self.rng.uniform(0.1, 0.5) if when < 0.7 else self.rng.uniform(0.4, 1.5))
        engine.kill()

    def acknowledge(self, r, running, engine, planned, places):
        """Marks what the killed engine acknowledged, counts the round, and
        notes acknowledgements that do not match their command and errors."""
        acks = engine.acks()
        self.stats["kills"] += 1
        self.stats["killed while running"] += running
        self.stats["killed among its enqueues"] += 0 < len(acks) < len(planned)
        for (kind, what, command), where, ack in zip(planned, places, acks):
            if ack.get("ack") != kind or (kind == "put" and (ack.get("id"), ack.get("version")) != what[:2]):
                self.problems.append(f"round {r}: {command[:60]} acknowledged as {ack}")
                continue
            for changes, index in where:
                changes[index] = (changes[index][0], True)
            self.stats["acknowledged " + {"edit": "edits", "delete": "deletions", "put": "puts"}[kind]] += 1
        self.stats["changes handed over unacknowledged"] += len(planned) - len(acks)
        failed = [line for line in engine.seen() if "error" in line and "event" not in line or line.get("run") == "failed"]
        if failed:
            self.problems.append(f"round {r}: {failed[:2]} {engine.stderr()}")

    def finish(self):
        """A last engine run to the end; the box's messages, and the store's
        messages and applications once it holds the box's."""
        final = self.engine(True)
        drained = final.drained()
        truth = self.box.truth(self.key)
        final.until(lambda: store_state(self.store)[0] == truth, 60)
        messages, applied = store_state(self.store)
        final.close()
        if not drained:
            self.problems.append(f"the last run did not empty the queue: {final.seen()[-3:]} {final.stderr()}")
        return truth, messages, applied

    def verify_box(self, truth):
        """Every message and settings member on the box is one the ledger allows."""
        for ident, changes in self.uploads.items():
            held = truth.get(ident)
            if held not in allowed(changes):
                self.problems.append(f"{ident}: the box holds {str(held)[:60]}; acknowledged last: "
                                     f"{[str(v)[:40] for v, a in changes if a][-1:]}, handed over: {len(changes)}")
        for ident in set(truth) - set(self.uploads) - set(self.mirror):
            self.problems.append(f"{ident} is on the box but was never handed over")
        for ident, value in self.mirror.items():
            if truth.get(ident) != value:
                self.problems.append(f"the other device's {ident} is {truth.get(ident)}")
        status, settings = self.box.request("GET", "/user/settings", self.key)
        document = settings if status == 200 else {}
        for member, changes in self.edits.items():
            if document.get(member) not in allowed(changes):
                self.problems.append(f"settings member {member} is {document.get(member)}; its edits {changes[-4:]}")

    def verify_store(self, truth, messages, applied):
        """The engine's store equals the box, and no change was applied twice."""
        if messages != truth:
            self.problems.append(f"the store holds {len(messages)} messages, the box {len(truth)}: "
                                 f"{sorted(set(messages) ^ set(truth))[:5]} differ in presence, "
                                 f"{[i for i in set(messages) & set(truth) if messages[i] != truth[i]][:5]} in content")
        seen, doubled = set(), []
        for ident, seq, kind in applied:
            if (ident, seq) in seen:
                doubled.append(f"{ident} at seq {seq} ({kind})")
            seen.add((ident, seq))
        if doubled:
            self.problems.append(f"applied twice: {doubled[:5]}")


def crash_checks(checks, lib, box, t, work, rounds=40, seed=7):
    """SyncEngine killed with -9 in `rounds` rounds of random changes, then
    run to the end: the box and its store checked against what was acknowledged."""
    crashes = CrashRounds(lib, box, t, work, random.Random(seed + (t == "urlsession")))
    for r in range(rounds):
        crashes.round(r)
    truth, messages, applied = crashes.finish()
    crashes.verify_box(truth)
    crashes.verify_store(truth, messages, applied)
    figures = ", ".join(f"{v} {k}" for k, v in crashes.stats.items())
    checks.check(f"{t}: SyncEngine killed with -9 {rounds} times in enqueue, editSettings and run ({figures}; "
                 f"{len(truth)} messages, {len(applied)} applications): nothing acknowledged lost, "
                 "nothing applied twice", crashes.problems)


def two_phones(checks, lib, box, t, work):
    key = f"engine-phones-{t}"
    status, _ = box.request("PUT", "/user/settings", key, body={"weightCalibrationFactor": 1.0, "unitSystem": "metric",
                                                               "heightCm": 175, "updatedAt": "2026-05-18T10:00:00Z"})
    paths = {p: (os.path.join(work, f"engine-{p}-{t}"), os.path.join(work, f"engine-{p}-{t}.store")) for p in "ab"}

    def phone(name, run):
        return Engine(lib, box, key, *paths[name], device=f"phone-{name}", run=run)

    a = phone("a", run=False)
    a.send('edit 2026-05-18T10:01:00Z {"weightCalibrationFactor": 0.999}')
    a_acked = a.until(lambda: a.acks())
    a.close()
    b = phone("b", run=False)
    b.send('edit 2026-05-18T10:05:00Z {"unitSystem": "imperial"}', "run")
    b_home = b.until(lambda: b.events("settingsMerged"))
    b.close()
    a = phone("a", run=True)
    a_home = a.until(lambda: a.events("settingsMerged"))
    a.close()
    status, document = box.request("GET", "/user/settings", key)
    got = {k: v for k, v in (document or {}).items() if k not in ("serverReceivedAt",)}
    want = {"weightCalibrationFactor": 0.999, "unitSystem": "imperial", "heightCm": 175, "updatedAt": "20260518T100500.000000Z"}
    checks.check(f"{t}: two phones' engines, A's edit at 10:01 and B's at 10:05 made offline, B home first and A last: "
                 "both edits on the box", [] if a_acked and b_home and a_home and got == want
                 else [f"A acknowledged {a_acked}, B merged {b_home}, A merged {a_home}; the box: {status} {document}",
                       f"A: {a.seen()[-3:]} B: {b.seen()[-3:]}"])


def state_directory_checks(checks, lib, box, t, work):
    # A damaged journal: an error naming it, nothing sent, the file as it was.
    key = f"engine-damaged-{t}"
    state, store = os.path.join(work, f"engine-damaged-{t}"), os.path.join(work, f"engine-damaged-{t}.store")
    engine = Engine(lib, box, key, state, store, run=False)
    engine.send(*[f'put d-{n} 1 {{"n": {n}}}' for n in range(3)])
    engine.until(lambda: len(engine.acks()) == 3)
    engine.close()
    journal = os.path.realpath(os.path.join(state, "journal"))
    with open(journal, "rb") as f:
        damaged = bytearray(f.read())
    second_record = damaged.index(b"\n", damaged.index(b"\n") + 1) + 1
    damaged[second_record + 25] ^= 0x01
    with open(journal, "wb") as f:
        f.write(damaged)
    engine = Engine(lib, box, key, state, store, run=True)
    code = engine.proc.wait(60)
    engine.reader.join(10)
    error = next((line for line in engine.seen() if "error" in line), {})
    with open(journal, "rb") as f:
        after = f.read()
    checks.check(f"{t}: a damaged state file stops the engine with an error naming it; nothing is sent, the file is left as it was",
                 [] if code == 1 and error.get("kind") == "stateDamaged" and f"the sync state file {journal} is damaged at record 3" in error.get("error", "")
                 and "Nothing was sent" in error.get("error", "") and after == bytes(damaged) and box.truth(key) == {}
                 else [f"exit {code}: {error} {engine.stderr()}", f"file unchanged {after == bytes(damaged)}, box {len(box.truth(key))}"])

    # One engine per directory: in this process, from another, released by a kill.
    key = f"engine-held-{t}"
    state, store = os.path.join(work, f"engine-held-{t}"), os.path.join(work, f"engine-held-{t}.store")
    first = Engine(lib, box, key, state, store, run=True)
    first.send("second")
    first.until(lambda: any("second" in line for line in first.seen()))
    second = next((line for line in first.seen() if "second" in line), {})
    other = Engine(lib, box, key, state, store, run=False)
    other_code = other.proc.wait(60)
    other.reader.join(10)
    other_error = next((line for line in other.seen() if "error" in line), {})
    first.kill()
    after = Engine(lib, box, key, state, store, run=False)
    reopened = after.pending()
    after.close()
    where = os.path.realpath(state)
    checks.check(f"{t}: a second engine on one state directory is refused, in the same process and from another, "
                 "naming the directory; kill -9 of the holder releases it",
                 [] if second.get("second") == "refused" and f"the sync state directory {where} is in use by another SyncEngine in this process"
                 in second.get("error", "") and other_code == 1 and f"the sync state directory {where} is in use by another process"
                 in other_error.get("error", "") and other_error.get("kind") == "stateInUse"
                 and reopened == {"uploads": 0, "settings": 0, "refused": []}
                 else [f"in process: {second}", f"another process: exit {other_code} {other_error} {other.stderr()}",
                       f"after the kill: {reopened} {after.stderr()}"])


def box_away(checks, lib, box, t, work):
    """`box` is the suite's own for this check: stopped and started again."""
    key = f"engine-away-{t}"
    state, store = os.path.join(work, f"engine-away-{t}"), os.path.join(work, f"engine-away-{t}.store")
    engine = Engine(lib, box, key, state, store, run=True)
    engine.pending()
    time.sleep(0.5)  # its follows waiting on the box
    port, data = box.stack.port, box.stack.data
    box.stack.stop()
    engine.send(*[f'put away-{n} 1 {{"n": {n}}}' for n in range(30)], 'edit 2026-05-18T11:00:00Z {"away": true}')
    acked = engine.until(lambda: len(engine.acks()) == 31, 60)
    lost = engine.until(lambda: engine.events("unreachable"), 60)
    time.sleep(1)
    box.stack.settings.update(MOCKCLOUD_PORT=str(port), MOCKCLOUD_DATA=data)
    box.stack.start()
    drained = engine.drained(120)
    truth = box.truth(key)
    status, document = box.request("GET", "/user/settings", key)
    alive = engine.proc.poll() is None
    found = engine.events("reachable")
    engine.close()
    checks.check(f"{t}: the box away (stack stopped, 30 changes and an edit handed over, stack started again): the engine "
                 "backs off, then sends them by itself with no restart",
                 [] if acked and lost and drained and alive and found and len(truth) == 30 and status == 200
                 and document.get("away") is True
                 else [f"acknowledged {acked}, unreachable {lost}, reachable {bool(found)}, drained {drained}, "
                       f"alive {alive}; box {len(truth)} messages, settings {status} {document}", str(engine.seen()[-4:])])


def answer(engine, key, timeout=120):
    """The engine's next line holding `key`, after those seen so far."""
    before = len(engine.seen())
    engine.until(lambda: any(key in line for line in engine.seen()[before:]), timeout)
    return next((line for line in engine.seen()[before:] if key in line), None)


def close_then_reopen(checks, lib, box, t, work):
    """close() under a running engine with a queue, then a new engine on the
    directory at once, in the same process: accepted, it sends the rest."""
    key = f"engine-reopen-{t}"
    state, store = os.path.join(work, f"engine-reopen-{t}"), os.path.join(work, f"engine-reopen-{t}.store")
    engine = Engine(lib, box, key, state, store, run=True)
    engine.send(*[f'put r-{n} 1 {{"n": {n}, "pad": "{"p" * 2000}"}}' for n in range(200)])
    engine.until(lambda: len(engine.acks()) == 200, 60)
    engine.send("reopen")
    reopened = answer(engine, "reopened")
    drained = engine.drained(120)
    truth = box.truth(key)
    code = engine.close()
    checks.check(f"{t}: close() under a running engine with 200 queued, then a new engine on its directory at once in the "
                 "same process: accepted, and it sends the rest",
                 [] if reopened and reopened.get("reopened") is True and drained and len(truth) == 200 and code == 0
                 else [f"reopened {reopened}, drained {drained}, box {len(truth)}, exit {code}", engine.stderr()])


def until_idle(checks, lib, box, away_box, t, work):
    """syncUntilIdle: the box present, away, and past its deadline."""
    key = f"engine-idle-{t}"
    state, store = os.path.join(work, f"engine-idle-{t}"), os.path.join(work, f"engine-idle-{t}.store")
    box.request("PUT", "/inbox/from-mirror", key, device="mirror-1", body={"scan": 1})
    engine = Engine(lib, box, key, state, store, run=False)
    engine.send(*[f'put i-{n} 1 {{"n": {n}}}' for n in range(20)], 'edit 2026-05-18T10:00:00Z {"unitSystem": "metric"}')
    engine.until(lambda: len(engine.acks()) == 21, 60)
    engine.send("idle 25")
    present = answer(engine, "idle")
    truth = box.truth(key)
    held, _ = store_state(store)
    status, document = box.request("GET", "/user/settings", key)
    problems = [] if present and present.get("idle") == {"uploads": 0, "settings": 0} and len(truth) == 21 \
        and "from-mirror" in held and document.get("unitSystem") == "metric" \
        else [f"answer {present}, box {len(truth)}, store {sorted(held)[:3]}, settings {status} {document}"]

    # Past its deadline: 3,000 samples of 2 KB and 0.3 s; the next call sends the rest.
    samples = os.path.join(work, f"engine-idle-{t}.samples")
    with open(samples, "w") as f:
        for n in range(3000):
            f.write(f'late-{n:04d} 1 {{"n": {n}, "pad": "{"p" * 2000}"}}\n')
    engine.send(f"samples {samples}")
    answer(engine, "count")
    engine.send("idle 0.3")
    late = answer(engine, "idle")
    engine.send("idle 120")
    rest = answer(engine, "idle", 180)
    truth = box.truth(key)
    engine.close()
    if not (late and isinstance(late.get("idle"), dict) and late["idle"]["uploads"] > 0 and late["took"] <= 1.3
            and rest and rest.get("idle") == {"uploads": 0, "settings": 0} and len(truth) == 3021):
        problems.append(f"past its deadline: {late}; then {rest}; box {len(truth)}")

    # The box away: back by its deadline, everything kept.
    key = f"engine-idle-away-{t}"
    state, store = os.path.join(work, f"engine-idle-away-{t}"), os.path.join(work, f"engine-idle-away-{t}.store")
    port, data = away_box.stack.port, away_box.stack.data
    away_box.stack.stop()
    engine = Engine(lib, away_box, key, state, store, run=False)
    engine.send(*[f'put a-{n} 1 {{"n": {n}}}' for n in range(5)])
    engine.until(lambda: len(engine.acks()) == 5, 60)
    engine.send("idle 2")
    away = answer(engine, "idle")
    engine.close()
    away_box.stack.settings.update(MOCKCLOUD_PORT=str(port), MOCKCLOUD_DATA=data)
    away_box.stack.start()
    if not (away and away.get("idle") == {"uploads": 5, "settings": 0} and away["took"] <= 3):
        problems.append(f"the box away: {away}")
    checks.check(f"{t}: syncUntilIdle sends everything and reads the feed with the box present; past its deadline "
                 f"({late and late.get('took')} s for 0.3 s) it returns with the rest pending, which the next call sends; "
                 f"with the box away it returns by its deadline ({away and away.get('took')} s for 2 s), everything pending",
                 problems)


def network_hint(checks, lib, box, t, work):
    """networkChanged(available: false): nothing sent; true: everything, at once."""
    key = f"engine-network-{t}"
    state, store = os.path.join(work, f"engine-network-{t}"), os.path.join(work, f"engine-network-{t}.store")
    engine = Engine(lib, box, key, state, store, run=True)
    engine.send("network off")
    answer(engine, "available")
    engine.send(*[f'put n-{n} 1 {{"n": {n}}}' for n in range(10)])
    engine.until(lambda: len(engine.acks()) == 10, 60)
    time.sleep(1)  # a window in which an engine that ignored the hint would have sent them
    while_off = len(box.truth(key))
    engine.send("network on")
    drained = engine.drained(60)
    truth = box.truth(key)
    engine.close()
    checks.check(f"{t}: the network hint: nothing is sent while the app says there is no network, everything once it is back",
                 [] if while_off == 0 and drained and len(truth) == 10
                 else [f"on the box while off: {while_off}; drained {drained}, box {len(truth)}", engine.stderr()])


class Impostor:
    """A TLS server on `port` with a certificate the box's CA did not sign
    (another network's server at the box's address): it takes connections
    and drops them after the handshake the client refuses."""

    def __init__(self, port, cert, key):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(16)
        self.handshakes = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            self.handshakes += 1
            try:
                raw.settimeout(5)
                with self.context.wrap_socket(raw, server_side=True) as conn:
                    conn.recv(1)
            except (OSError, ssl.SSLError):
                pass
            finally:
                raw.close()

    def close(self):
        self.listener.close()
        self.thread.join(10)


def another_network(checks, lib, away_box, other_box, t, work):
    """The box's address answered by a server with another certificate, then
    by the box: the same engine, never stopped, sends everything."""
    key = f"engine-network-away-{t}"
    state, store = os.path.join(work, f"engine-other-{t}"), os.path.join(work, f"engine-other-{t}.store")
    port, data = away_box.stack.port, away_box.stack.data
    away_box.stack.stop()
    impostor = Impostor(port, os.path.join(other_box.stack.run, "tls", "cert.pem"), os.path.join(other_box.stack.run, "tls", "key.pem"))
    engine = Engine(lib, away_box, key, state, store, run=True)
    engine.send(*[f'put o-{n} 1 {{"n": {n}}}' for n in range(10)])
    engine.until(lambda: len(engine.acks()) == 10, 60)
    untrusted = engine.until(lambda: any("not trusted" in line.get("error", "") for line in engine.events("unreachable")), 60)
    time.sleep(1)
    impostor.close()
    away_box.stack.settings.update(MOCKCLOUD_PORT=str(port), MOCKCLOUD_DATA=data)
    away_box.stack.start()
    engine.send("sync")
    drained = engine.drained(120)
    alive = engine.proc.poll() is None
    truth = away_box.truth(key)
    stopped = engine.events("stopped") + [line for line in engine.seen() if line.get("run") == "failed"]
    engine.close()
    checks.check(f"{t}: another network's server at the box's address (another certificate, {impostor.handshakes} handshakes "
                 "refused), then the box: the same engine, never stopped, sends everything",
                 [] if untrusted and drained and alive and not stopped and len(truth) == 10
                 else [f"untrusted {untrusted}, drained {drained}, alive {alive}, stopped {stopped}, box {len(truth)}",
                       str(engine.seen()[-3:]), engine.stderr()])


def refusal_survives_a_kill(checks, lib, box, t, work):
    """An upload the box refuses (409: it holds a newer version), the engine
    killed with -9 before the app took it: a new engine still shows it,
    until the app takes it."""
    key = f"engine-refusal-{t}"
    state, store = os.path.join(work, f"engine-refusal-{t}"), os.path.join(work, f"engine-refusal-{t}.store")
    status, _ = box.request("PUT", "/inbox/r-1", key, device="mirror-1", body={"v": 5}, headers=[("X-Sync-Version", "5")])
    engine = Engine(lib, box, key, state, store, run=True)
    engine.send('put r-1 1 {"v": 1}', 'put r-2 1 {"v": 1}')
    refused = engine.until(lambda: engine.events("refused"), 60)
    engine.kill()
    engine = Engine(lib, box, key, state, store, run=False)
    kept = engine.pending()
    engine.send("take")
    taken = answer(engine, "taken")
    engine.close()
    engine = Engine(lib, box, key, state, store, run=False)
    after = engine.pending()
    engine.close()
    checks.check(f"{t}: an upload the box refused (409), the engine killed with -9 before the app took it: a new engine "
                 "shows it in pending until the app takes it",
                 [] if status == 201 and refused and kept == {"uploads": 0, "settings": 0, "refused": ["r-1"]}
                 and taken and taken.get("taken") == 1 and after == {"uploads": 0, "settings": 0, "refused": []}
                 else [f"PUT {status}, refused {refused}, pending after the kill {kept}, taken {taken}, then {after}"])


# The system calls a kill is injected at: what changes the state on disk.
STEP_CALLS = "write,pwrite64,fsync,fdatasync,ftruncate,rename,renameat,renameat2,openat,unlink,unlinkat"


class Stepped:
    """`lib`'s commands under strace, killed at the `n`th step call (above)
    on the state directory or its journal. The cooperative thread pool is
    made one thread wide (LIBDISPATCH_COOPERATIVE_POOL_STRICT), so that the
    engine's state calls, whichever task makes them, are one thread's and
    strace's count (per thread) is theirs."""

    def __init__(self, lib, state, n):
        self.lib, self.state, self.n = lib, os.path.realpath(state), n

    def command(self, *args, **kw):
        return ["env", "LIBDISPATCH_COOPERATIVE_POOL_STRICT=1", "strace", "-f", "-qq", "-o", "/dev/null",
                "-P", self.state, "-P", os.path.join(self.state, "journal"), "-e", f"trace={STEP_CALLS}",
                "-e", f"inject={STEP_CALLS}:signal=KILL:when={self.n}"] + self.lib.command(*args, **kw)


def kill_at_every_step(checks, lib, box, t, work, most=200):
    """enqueue, editSettings, run (acknowledgements) and a compaction, the
    engine killed at its Nth state call for N = 1, 2, ... until a run is
    not killed; after each kill the engine must open, send what is left,
    and the box must hold every change acknowledged before the kill."""
    samples = os.path.join(work, f"engine-steps-{t}.txt")
    with open(samples, "w") as f:  # over 64 KiB: once acknowledged, the journal is compacted
        for i in range(200):
            f.write(f"s-{i:03d} 1 {json.dumps({'n': i, 'pad': 'x' * 350})}\n")
    problems, kills, n = [], 0, 0
    for n in range(1, most + 1):
        key, state = f"engine-step-{t}-{n}", os.path.join(work, f"engine-step-{t}-{n}")
        store = state + ".store"
        engine = Engine(Stepped(lib, state, n), box, key, state, store, run=False)
        engine.send("put a 1 {\"v\": 1}", "put b 1 {\"v\": 1}", f"edit {stamp(60)} {{\"unitSystem\": \"imperial\"}}",
                    "delete b", f"samples {samples}", "run")
        finished = engine.drained(timeout=60)
        if finished:
            engine.send("put c 1 {\"v\": 1}")
            finished = engine.until(lambda: any(a.get("id") == "c" for a in engine.acks()), 30)
            engine.until(lambda: engine.pending() == {"uploads": 0, "settings": 0, "refused": []}, 30)
        acks = engine.acks()
        if finished:
            engine.close()
            break
        engine.kill()
        kills += 1
        again = Engine(lib, box, key, state, store, run=True)
        if not again.drained(timeout=60):
            problems.append(f"step {n}: the engine did not open or drain after the kill: {again.seen()[-2:]} {again.stderr()}")
            again.kill()
            continue
        again.close()
        truth = box.truth(key)

        def acked(kind, ident):
            return any(a.get("ack") == kind and a.get("id") == ident for a in acks)
        changes = {"a": [(1, acked("put", "a"))], "b": [(1, acked("put", "b")), (None, acked("delete", "b"))],
                   "c": [(1, acked("put", "c"))]}
        for ident, handed in changes.items():
            held = truth[ident][0] if ident in truth else None
            if held not in allowed(handed):
                problems.append(f"step {n}: {ident} is {held} on the box; handed over and acknowledged: {handed}")
        if any(a.get("ack") == "samples" for a in acks) and len([i for i in truth if i.startswith("s-")]) != 200:
            problems.append(f"step {n}: 200 samples acknowledged, the box holds {len([i for i in truth if i.startswith('s-')])}")
        if any(a.get("ack") == "edit" for a in acks):
            status, settings = box.request("GET", "/user/settings", key)
            if status != 200 or settings.get("unitSystem") != "imperial":
                problems.append(f"step {n}: the edit was acknowledged, the box's settings are {status} {settings}")
    else:
        problems.append(f"the engine was still killed at its {most}th state call")
    checks.check(f"{t}: SyncEngine killed at each of its {kills} state calls in enqueue, editSettings, run and a compaction: "
                 "it always opens again, and nothing acknowledged is lost", problems)


def checks_for(checks, lib, box, away_box, t, work):
    if t == "curl":
        kill_at_every_step(checks, lib, box, t, work)
    crash_checks(checks, lib, box, t, work)
    two_phones(checks, lib, box, t, work)
    state_directory_checks(checks, lib, box, t, work)
    box_away(checks, lib, away_box, t, work)
    close_then_reopen(checks, lib, box, t, work)
    until_idle(checks, lib, box, away_box, t, work)
    network_hint(checks, lib, box, t, work)
    another_network(checks, lib, away_box, box, t, work)
    refusal_survives_a_kill(checks, lib, box, t, work)
