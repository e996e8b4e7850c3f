"""`mockcloud-sync push DIR --watch` against a real stack through TLS, for
Tests/client/run.py:

- a burst of 1,000 files renamed in, the watcher SIGKILLed in the middle of
  it, started again: every file on the box at its version, what the first
  run acknowledged not sent again;
- a higher syncVersion written in place replaces the stored scan; with
  --delete a removed file becomes a deletion;
- a file half-written (open, part of it written, held) is not sent until
  it is closed;
- the stack stopped, files written, the watcher telling that the box does
  not answer, more files written, the stack started again on the same
  port: all of them sent, the watcher never restarted;
- SIGTERM ends it with exit 0 and a last line saying what it sent;
- a second push on a watched folder is refused at once (exit 8), naming
  the folder;
- a folder of 50,000 unsent files: all on the box, the watcher's peak
  memory within 48 MB of a watcher's over an empty folder (files are read
  a chunk at a time, not all before the first request);
- files that come in other ways than a close or a rename are sent too: a
  file renamed in unreadable and then made readable (chmod), a hard link
  (`ln`, as `rsync --link-dest` makes them), and a file touched after the
  box's newer copy of it was deleted;
- under strace, watching and sending: every system call it makes is one
  the unit's SystemCallFilter= allows, and no memory is
  made writable and executable (MemoryDenyWriteExecute=yes), so the
  sandbox of mockcloud-sync-push@.service, which cannot run here (no
  systemd), never kills it.

Python 3 standard library only.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import threading

from samples import rename_in, sample
from suite import until


class Watcher:
    """The tool's `push DIR --watch --json` as a process; its stdout lines
    parsed as they come, its stderr kept."""

    def __init__(self, tool, box, folder, key, *extra, prefix=(), forks=True, ca=None):
        cmd = [*prefix, tool, "push", folder, "--watch", "--json", "--url", box.url, "--ca", ca or box.ca,
               "--user-key", key, "--device-id", "mirror-1", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.prefixed = bool(prefix) and forks
        self.lines, self.errors = [], []
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines, True), daemon=True),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors, False), daemon=True)]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, into, parse):
        for line in stream:
            try:
                into.append(json.loads(line) if parse else line.rstrip("\n"))
            except ValueError:
                into.append({"raw": line})

    def batches(self):
        return [line for line in list(self.lines) if "ids" in line]

    def sent(self):
        return sum(line["sent"] for line in self.batches())

    def watching(self, timeout=120):
        return until(lambda: any(line.get("watching") for line in list(self.lines)), timeout)

    def pid(self):
        """The tool's process: the one started, or its child under a prefix
        that forks (strace; setpriv execs it)."""
        if not self.prefixed:
            return self.proc.pid
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def stop(self, how=signal.SIGTERM):
        """Sends `how`; the exit status (or a sentence when it would not end)."""
        if self.proc.poll() is None:
            os.kill(self.pid(), how)
        try:
            status = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = "still running 60 s after the signal"
        for reader in self.readers:
            reader.join(10)
        return status

    def tail(self):
        return f"last lines {list(self.lines)[-2:]}, stderr {self.errors[-3:]}"


def scan(i, version):
    body = sample(i, 7)
    body["syncVersion"] = version
    return body


KEY = "watch"  # the user the watched folder pushes as


def watch_checks(checks, box, tool, work, folder_state, differences):
    """The checks on `box`, a stack of their own (stopped and started here);
    `folder_state` and `differences` are run.py's."""
    folder = os.path.join(work, "watched")
    os.makedirs(folder)

    def converged():
        return folder_state(folder) == box.truth(KEY)

    second = killed_in_a_burst(checks, box, tool, folder, converged, folder_state, differences)
    second_push_refused(checks, box, tool, folder, second)
    rewritten_and_removed(checks, box, folder, second, folder_state, differences)
    half_written(checks, box, folder, second)
    box_away(checks, box, folder, second, converged, folder_state, differences)
    terminated(checks, second)
    other_ways_in(checks, box, tool, work)
    a_large_folder(checks, box, tool, work, int(os.environ.get("MOCKCLOUD_LARGE_FOLDER", "50000")))
    sandbox_checks(checks, box, tool, work)


def acknowledged(folder):
    """The ids the ack log (.mockcloud-sync-pushed) holds as stored: the
    last line of each id wins; `#` lines are marks, `<id> -` a deletion."""
    acks = {}
    with open(os.path.join(folder, ".mockcloud-sync-pushed")) as f:
        for line in f:
            fields = line.split()
            if line.endswith("\n") and fields and not fields[0].startswith("#"):
                acks[fields[0]] = len(fields) == 3
    return {ident for ident, stored in acks.items() if stored}


def killed_in_a_burst(checks, box, tool, folder, converged, folder_state, differences):
    """A burst of 1,000, the watcher killed in the middle of it and started
    again with --delete; that second watcher, for the checks after."""
    first = Watcher(tool, box, folder, KEY)
    ready = first.watching()
    killed_after = {}

    def burst():
        for i in range(1000):
            rename_in(folder, f"b-{i:04d}", scan(i, 1 + i % 3))
            if i == 500:  # half written, a few hundred acknowledged: killed
                until(lambda: first.sent() >= 200, 60)
                killed_after["sent"] = first.sent()
                os.kill(first.pid(), signal.SIGKILL)
    writer = threading.Thread(target=burst)
    writer.start()
    writer.join(300)
    status = first.stop()
    acked = len(acknowledged(folder))
    second = Watcher(tool, box, folder, KEY, "--delete")
    ok = second.watching() and until(converged, 120)
    truth = box.truth(KEY)
    caught_up = next((line for line in second.lines if line.get("watching")), {})
    checks.check(f"push --watch: a burst of 1,000 renamed in, the watcher SIGKILLed after {killed_after.get('sent')} "
                 f"were acknowledged, started again: all 1,000 on the box at their versions, "
                 f"{caught_up.get('sent')} sent at the start",
                 ([] if ready and status == -signal.SIGKILL and 0 < acked < 1000 and ok and len(truth) == 1000
                  and caught_up.get("sent") == 1000 - acked and caught_up.get("unchanged") == acked
                  else [f"ready {ready}, exit {status}, {acked} acknowledged, caught up {caught_up}; "
                        f"{second.tail()}"])
                 + differences("watched burst", folder_state(folder), truth))
    return second


def second_push_refused(checks, box, tool, folder, watcher):
    """A push beside a running watcher on the same folder is refused at
    once, with exit 8 and the folder named; the watcher goes on."""
    proc = subprocess.run([tool, "push", folder, "--url", box.url, "--ca", box.ca, "--user-key", KEY],
                          capture_output=True, text=True, timeout=60)
    checks.check("push on a folder that push --watch holds: refused at once (exit 8), the folder named; "
                 "the watcher goes on",
                 [] if proc.returncode == 8 and folder in proc.stderr and "another push" in proc.stderr
                 and watcher.proc.poll() is None else
                 [f"exit {proc.returncode}, stderr {proc.stderr[-300:]!r}; watcher running {watcher.proc.poll() is None}"])


def peak_memory(watcher):
    """The watcher's peak resident memory (VmHWM), in bytes."""
    with open(f"/proc/{watcher.pid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def a_large_folder(checks, box, tool, work, count):
    """A folder of `count` unsent files (MOCKCLOUD_LARGE_FOLDER, 50,000 by
    default and in make test-all; make test runs 5,000, since the box's
    fsync per message makes 50,000 take minutes): each on the box, and the
    watcher's peak memory beside one's over an empty folder. The reading a
    chunk at a time that keeps it flat is held exactly by PushLedgerTests."""
    empty, full = os.path.join(work, "empty"), os.path.join(work, "large")
    os.makedirs(empty)
    os.makedirs(full)
    baseline = Watcher(tool, box, empty, "large-empty")
    ready = baseline.watching()
    base_peak = peak_memory(baseline)
    baseline.stop()
    for i in range(count):
        with open(os.path.join(full, f"l-{i:06d}.json"), "w") as f:
            json.dump(scan(i, 1), f)
    watcher = Watcher(tool, box, full, "large")
    # A bound for a stuck watcher, not a speed: on two loaded cores the
    # box stored the 50,000 in about ten minutes.
    caught_up = watcher.watching(1800)
    peak = peak_memory(watcher)
    status = watcher.stop()
    landed = len(box.truth("large"))
    grown = (peak - base_peak) / 2**20 if peak and base_peak else None
    megabytes = "?" if grown is None else f"{peak / 2**20:.1f} MB, {grown:.1f} MB"
    checks.check(f"push --watch over {count:,} unsent files: all on the box; peak memory {megabytes} over an "
                 f"empty folder's (at most 48)",
                 [] if ready and caught_up and status == 0 and landed == count and grown is not None and grown <= 48 else
                 [f"ready {ready}, caught up {caught_up}, exit {status}, {landed} on the box, grown {grown} MB; "
                  f"{watcher.proc.returncode} {watcher.errors[-3:]}"])


def other_ways_in(checks, box, tool, work):
    """Files that arrive without a close after writing or a rename: a chmod
    that makes an unreadable file readable, a hard link, a touch. As root
    the watcher runs without the capabilities that read any file, so that
    mode 000 stops it as it would stop the service's user."""
    folder, key = os.path.join(work, "other-ways"), "ways"
    os.makedirs(folder)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    ca = os.path.join(work, "other-ways-ca.crt")  # the stack's run folder is its server user's
    shutil.copyfile(box.ca, ca)
    watcher = Watcher(tool, box, folder, key, prefix=prefix, forks=False, ca=ca)
    ready = watcher.watching()

    def stored(ident, version=1):
        return lambda: box.truth(key).get(ident, (None,))[0] == version

    # A scan renamed in that its user cannot read yet, then chmod'ed.
    part, locked = os.path.join(folder, ".locked.json.part"), os.path.join(folder, "locked.json")
    with open(part, "w") as f:
        json.dump(scan(4000, 1), f)
    os.chmod(part, 0)
    os.rename(part, locked)
    unreadable = until(lambda: any("locked.json" in e for e in watcher.errors), 60)
    os.chmod(locked, 0o644)
    chmodded = until(stored("locked"), 30)
    # A hard link to a file written elsewhere (ln, rsync --link-dest).
    source = os.path.join(work, "link-source.json")
    with open(source, "w") as f:
        json.dump(scan(4001, 1), f)
    os.link(source, os.path.join(folder, "linked.json"))
    linked = until(stored("linked"), 30)
    # The box holds a newer copy: a conflict. Deleted on the box, the file is touched.
    status, _ = box.request("PUT", "/inbox/touched", key, body=scan(4002, 5), headers={"X-Sync-Version": "5"})
    rename_in(folder, "touched", scan(4002, 1))
    conflict = until(lambda: any("touched.json: the server holds version 5" in e for e in watcher.errors), 60)
    deleted, _ = box.request("DELETE", "/inbox/touched", key)
    os.utime(os.path.join(folder, "touched.json"))
    touched = until(stored("touched"), 30)
    exit_status = watcher.stop()
    checks.check("push --watch sends a file made readable by chmod, a hard link and a touched file",
                 [] if ready and unreadable and chmodded and linked and status == 201 and conflict
                 and deleted == 204 and touched and exit_status == 0 else
                 [f"ready {ready}; chmod: refused unreadable {unreadable}, sent once readable {chmodded}; "
                  f"hard link sent {linked}; touch: box's copy {status}, conflict {conflict}, deleted {deleted}, "
                  f"sent once touched {touched}; exit {exit_status}; {watcher.tail()}"])


def rewritten_and_removed(checks, box, folder, watcher, folder_state, differences):
    """A higher syncVersion written in place replaces the stored scan;
    --delete makes a removed file a deletion."""
    body = scan(7, 9)
    with open(os.path.join(folder, "b-0007.json"), "w") as f:
        json.dump(body, f)
    replaced = until(lambda: box.truth(KEY).get("b-0007") == (9, body), 60)
    os.remove(os.path.join(folder, "b-0009.json"))
    deleted = until(lambda: "b-0009" not in box.truth(KEY), 60)
    checks.check("push --watch: version 9 written in place replaces the stored scan; with --delete a removed "
                 "file is deleted on the box",
                 ([] if replaced and deleted else [f"replaced {replaced}, deleted {deleted}; {watcher.tail()}"])
                 + differences("watched changes", folder_state(folder), box.truth(KEY)))


def half_written(checks, box, folder, watcher):
    """A file half-written and held open is not sent until it is closed."""
    half = open(os.path.join(folder, "half.json"), "w")
    half.write('{"syncVersion": 1, "weight')
    half.flush()
    rename_in(folder, "marker", scan(1, 1))
    marked = until(lambda: "marker" in box.truth(KEY), 60)
    held = "half" not in box.truth(KEY)
    half.write('": 71.3}')
    half.close()
    closed = until(lambda: box.truth(KEY).get("half") == (1, {"syncVersion": 1, "weight": 71.3}), 60)
    checks.check("push --watch: a file half-written and held open is not sent; once closed it is",
                 [] if marked and held and closed and not any("half.json" in e for e in watcher.errors)
                 else [f"a later file sent {marked}, the half file held back {held}, sent once closed {closed}; "
                       f"{watcher.tail()}"])


def box_away(checks, box, folder, watcher, converged, folder_state, differences):
    """The box away: the stack stopped, files written before and after the
    watcher says it does not answer, the stack started on the same port."""
    port, data = str(box.stack.port), box.stack.data
    box.stop()
    for i in range(5):
        rename_in(folder, f"away-{i}", scan(2000 + i, 1))
    noticed = until(lambda: any("does not answer" in e for e in watcher.errors), 180)
    for i in range(5, 10):
        rename_in(folder, f"away-{i}", scan(2000 + i, 1))
    box.stack.settings.update(MOCKCLOUD_PORT=port, MOCKCLOUD_DATA=data)
    box.stack.start()
    back = until(converged, 180)
    checks.check("push --watch: the stack stopped, 10 files written (the watcher saying the box does not answer "
                 "between them), the stack back on its port: all 10 sent, no restart",
                 ([] if noticed and back and watcher.proc.poll() is None
                  else [f"noticed {noticed}, converged {back}, running {watcher.proc.poll() is None}; {watcher.tail()}"])
                 + differences("after the box was away", folder_state(folder), box.truth(KEY)))


def terminated(checks, watcher):
    """SIGTERM: exit 0, the last line says what it sent."""
    status = watcher.stop(signal.SIGTERM)
    last = watcher.lines[-1] if watcher.lines else {}
    checks.check(f"push --watch: SIGTERM ends it, exit 0, its last line what it sent ({last.get('sent')} in "
                 f"{last.get('requests')} requests)",
                 [] if status == 0 and last.get("stopped") is True and last.get("sent") == watcher.sent()
                 and last.get("stored", 0) + last.get("deleted", 0) == last.get("sent") else
                 [f"exit {status}; {watcher.tail()}"])


UNIT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "packaging", "sync", "mockcloud-sync-push@.service")


def allowed_calls(group):
    """The system calls a SystemCallFilter= group (or a lone call) names, its
    groups expanded (systemd-analyze syscall-filter lists each group's members)."""
    if not group.startswith("@"):
        return {group}
    listing = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True).stdout
    groups, current = {}, None
    for line in listing.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), set())
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.add(line.strip())
    calls, todo, seen = set(), [group], set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            members = groups.get(name, set())
            calls |= {m for m in members if not m.startswith("@")}
            todo += [m for m in members if m.startswith("@")]
    return calls


def sandbox_checks(checks, box, tool, work):
    """The watcher under strace -f: its system calls and memory protections
    against what the unit's sandbox allows."""
    if not shutil.which("strace") or not shutil.which("systemd-analyze"):
        return checks.check("push --watch under the unit's sandbox rules", ["needs strace and systemd-analyze "
                                                                           "(packaging/deps.sh test)"])
    folder = os.path.join(work, "sandboxed")
    os.makedirs(folder)
    trace = os.path.join(work, "watch.strace")
    watcher = Watcher(tool, box, folder, "sandbox", prefix=["strace", "-f", "-qq", "-o", trace])
    ready = watcher.watching()
    rename_in(folder, "traced", scan(3000, 1))
    sent = until(lambda: "traced" in box.truth("sandbox"), 60)
    status = watcher.stop(signal.SIGTERM)
    allowed, denied, filters = set(), set(), []
    for line in open(UNIT):
        if line.startswith("SystemCallFilter="):
            value = line.split("=", 1)[1].strip()
            filters.append(value)
            for name in value.lstrip("~").split():
                (denied if value.startswith("~") else allowed).update(allowed_calls(name))
    allowed -= denied
    used, exec_writable = set(), []
    for line in open(trace):
        match = re.match(r"\d+ +(\w+)\(", line)
        if match:
            used.add(match.group(1))
        if re.match(r"\d+ +(mmap|mprotect|pkey_mprotect)\(", line) and "PROT_EXEC" in line and \
                ("PROT_WRITE" in line or line.split("(", 1)[0].endswith("mprotect")):
            exec_writable.append(line.strip())
    outside = sorted(used - allowed - {"execve"})
    checks.check(f"push --watch's {len(used)} kinds of system call, watching and sending, are all the unit allows "
                 f"(SystemCallFilter= {', '.join(filters)}), and it maps no memory writable and executable",
                 [] if ready and sent and status == 0 and used and allowed and not outside and not exec_writable else
                 [f"ready {ready}, sent {sent}, exit {status}; not allowed: {outside}; "
                  f"W+X or X added: {exec_writable[:3]}; {watcher.tail()}"])
