#!/usr/bin/env python3
"""mockcloud-sync and MockCloudClient against the real stack (nginx +
fcgiwrap + the installed programs) through TLS, verified with the stack's
local CA (no -k anywhere, this suite's own reads included):

- a push of 5,000 samples with the server restarted mid-push, then a
  re-run that sends nothing and a version bump of 100;
- a push of 5,000 and a pull through a loopback relay that resets the
  first connections at random byte counts;
- the limits at their defaults (bodies that need several 8 MiB requests,
  one over 256 KiB refused, the per-address limits on);
- a 410 forced by compaction (tombstone horizon 0) and one by a restore
  from backup (mockcloud-admin backup / restore);
- a 409 and a 412 on settings; a per-field merge (`settings merge`) of two
  phones' offline edits;
- a push after routine compaction (the 410 says `compacted`: the feed is
  read again, nothing sent again) beside one after a restore (`replaced`:
  everything sent again);
- bearer tokens from --token-file (0600; a file others can read is refused
  with its chmod) and MOCKCLOUD_SYNC_TOKEN, never from the command line;
- trust: the system's CAs, a wrong pin, and a CA file with another box's
  CA appended are refused, that other box never reached;
- the library itself (client-bench) over both transports, libcurl's
  CurlTransport and URLSessionTransport (FoundationNetworking): uploads
  and a pull through the cutting relay (retried), a 410 after compaction,
  settings 409 and 412, a certificate from another CA and one for another
  name refused, a request cancelled while the server holds its answer
  (it returns before the server answers, its connection closed), and one
  held past the transport's request timeout (it fails as unavailable, its
  connection closed, no answer taken);
  URLSession on Linux trusts the system's store, so those runs see a
  private mount namespace whose /etc/ssl/certs holds the box's CA alone
  (`unshare -m` and a bind mount as root, `unshare -rm` otherwise); outside
  it, and with a second CA beside the box's, URLSessionTransport refuses
  to start.
- SyncEngine over both transports (Tests/client/engine.py): killed with -9
  at many points of enqueue, editSettings and run, then nothing
  acknowledged lost and nothing applied twice in its store; two phones'
  offline edits; a damaged state file; a second engine on one directory;
  the box away and back; close and reopen, syncUntilIdle, the network
  hint, another network's certificate, a refusal kept through a kill.

- `push DIR --watch` (Tests/client/watch.py): a burst of 1,000 files with
  the watcher SIGKILLed in the middle and started again, a version bump
  written in place, a deletion with --delete, a half-written file held
  back until closed, the stack stopped and started again under it (no
  restart of the watcher), SIGTERM ending it with exit 0, a second push
  on its folder refused (exit 8), a chmod'ed file, a hard link and a
  touched file sent, 50,000 unsent files within 48 MB of an empty
  folder's peak memory, and its system calls under strace within the
  unit's SystemCallFilter.

After each, the pushed folder and the pulled folder must equal the server's
state: every id once, no extra, every body and version right.

    Tests/client/run.py [--part tool|curl|urlsession|waits|watch]...
                                   (Tests/run-all.sh runs each part as a suite)

MOCKCLOUD_SYNC_BIN names the tool (default .build/release/mockcloud-sync).
Prints `N passed, M failed` last.
"""
import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "Tests", "support"))
sys.path.insert(0, os.path.join(REPO, "Benchmarks"))
sys.path.insert(0, HERE)
from cutting_relay import CuttingRelay  # noqa: E402
from holding_server import HoldingServer  # noqa: E402
from inbox_http import InboxHTTP  # noqa: E402
from samples import sample  # noqa: E402
from stack import Stack  # noqa: E402
from suite import Checks  # noqa: E402
import engine  # noqa: E402  (beside this file)
import waiting  # noqa: E402  (beside this file)
import watch  # noqa: E402  (beside this file)

TOOL = os.environ.get("MOCKCLOUD_SYNC_BIN") or os.path.join(REPO, ".build", "release", "mockcloud-sync")
ADMIN = os.path.join(REPO, "cgi-bin", "mockcloud-admin")
LIBRARY = os.path.join(REPO, ".build", "release", "client-bench")
TRANSPORTS = ("curl", "urlsession")


class Box:
    """A stack, with reads of its truth through TLS verified by its CA."""

    def __init__(self, work, name, **settings):
        self.stack = Stack(work, name, **settings).start()
        self.ca = os.path.join(self.stack.run, "tls", "ca.crt")
        self.http = InboxHTTP("127.0.0.1", self.stack.port, ssl.create_default_context(cafile=self.ca))

    @property
    def url(self):
        return self.stack.base

    def truth(self, key):
        """id -> (version, body) of every live message."""
        return {ident: (m["version"], m["body"]) for ident, m in self.http.live_messages(key).items()}

    def request(self, *args, **kw):
        return self.http.request(*args, **kw)

    def restart(self, data=None):
        """nginx and fcgiwrap stopped and started again on the same port
        (with another data directory when given), by the harness."""
        self.stack.restart(data)

    def stop(self):
        self.stack.stop()


def sync(box, *args, url=None, key, device="mirror-1", wait=True, token=None):
    """Runs the tool; `token` is MOCKCLOUD_SYNC_TOKEN (none by default,
    whatever the caller's environment holds)."""
    cmd = [TOOL, *args, "--url", url or box.url, "--ca", box.ca, "--user-key", key, "--json"]
    if device:
        cmd += ["--device-id", device]
    env = {k: v for k, v in os.environ.items() if k != "MOCKCLOUD_SYNC_TOKEN"}
    if token is not None:
        env["MOCKCLOUD_SYNC_TOKEN"] = token
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    out, err = proc.communicate(timeout=300)
    try:
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except ValueError:
        result = {"raw": out}
    return proc.returncode, result, err


def write_samples(folder, first, count, run=0, version=1):
    os.makedirs(folder, exist_ok=True)
    for i in range(first, first + count):
        body = sample(i, run)
        body["syncVersion"] = version
        with open(os.path.join(folder, f"s-{i:05d}.json"), "w") as f:
            json.dump(body, f)


def folder_state(folder):
    """id -> (version, body) of the *.json files a push would send."""
    state = {}
    for name in os.listdir(folder):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(folder, name)) as f:
                body = json.load(f)
            state[name[:-5]] = (body.get("syncVersion", 0), body)
    return state


def pulled_state(folder):
    """id -> (version, body) of a pulled folder, the versions from its record."""
    versions = {}
    record = os.path.join(folder, ".mockcloud-sync-pulled")
    if os.path.exists(record):
        for line in open(record):
            ident, version, _seq = line.split()
            versions[ident] = int(version)
    state = {}
    for name in os.listdir(folder):
        if name.endswith(".json") and not name.startswith("."):
            with open(os.path.join(folder, name)) as f:
                state[name[:-5]] = (versions.get(name[:-5]), json.load(f))
    return state


def differences(label, mine, truth):
    problems = []
    for ident in sorted(set(truth) - set(mine))[:5]:
        problems.append(f"{label}: missing {ident}")
    for ident in sorted(set(mine) - set(truth))[:5]:
        problems.append(f"{label}: {ident} is not on the server")
    for ident in sorted(set(mine) & set(truth)):
        if mine[ident] != truth[ident]:
            problems.append(f"{label}: {ident} is {str(mine[ident])[:80]}, the server has {str(truth[ident])[:80]}")
            if len(problems) > 8:
                break
    if len(mine) != len(truth):
        problems.append(f"{label}: {len(mine)} messages, the server holds {len(truth)}")
    return problems


def wait_for_lines(path, lines, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                if sum(1 for _ in f) >= lines:
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.005)
    return False


class Library:
    """client-bench over one transport. URLSession on Linux reads the
    system's trust store: its runs get a private mount namespace whose
    /etc/ssl/certs holds only the CA they are given (`trusting`, default
    the CA the command names)."""

    def __init__(self, transport, work):
        self.transport, self.work = transport, work
        self.stores = {}

    def store(self, *certificates):
        """A directory holding `certificates` as libcurl's CA file and by hash."""
        if certificates not in self.stores:
            directory = tempfile.mkdtemp(prefix="certs.", dir=self.work)
            with open(os.path.join(directory, "ca-certificates.crt"), "w") as bundle:
                for path in certificates:
                    bundle.write(open(path).read())
            digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", certificates[0]],
                                    capture_output=True, text=True, check=True).stdout.strip()
            os.symlink("ca-certificates.crt", os.path.join(directory, digest + ".0"))
            self.stores[certificates] = directory
        return self.stores[certificates]

    def command(self, command, box_url, ca, key, *args, trusting=None, namespace=True, device=None, attempts=None,
                timeout=None):
        """`device`: its X-Device-Id (bench-1 by default); `attempts`: a
        retry policy of that many attempts, 0.2 to 2 s apart; `timeout`:
        the transport's request timeout, in seconds."""
        cmd = [LIBRARY, "--transport", self.transport]
        cmd += ["--device", device] if device else []
        cmd += ["--attempts", str(attempts)] if attempts else []
        cmd += ["--timeout", str(timeout)] if timeout else []
        cmd += [command, box_url, ca, key, *args]
        if self.transport == "urlsession" and namespace:
            unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
            cmd = unshare + ["sh", "-c", 'mount --bind "$0" /etc/ssl/certs && exec "$@"',
                             self.store(*(trusting or (ca,)))] + cmd
        return cmd

    def run(self, *args, **kw):
        """(exit status, the JSON line printed, stderr)."""
        proc = subprocess.run(self.command(*args, **kw), capture_output=True, text=True, timeout=300)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {"raw": proc.stdout}
        return proc.returncode, result, proc.stderr[-500:]


def sample_lines(path, prefix, count, run):
    """client-bench's upload input: ID VERSION BODY lines; returns id -> (version, body)."""
    state = {}
    with open(path, "w") as f:
        for n in range(count):
            body = sample(n, run)
            f.write(f"{prefix}-{n:05d} 1 {json.dumps(body)}\n")
            state[f"{prefix}-{n:05d}"] = (1, body)
    return state


def library_state(path):
    """id -> (version, body) of a state file client-bench pull wrote."""
    state = {}
    with open(path) as f:
        next(f)
        for line in f:
            ident, version, body = line.rstrip("\n").split(" ", 2)
            state[ident] = (int(version), json.loads(body))
    return state


def write_settings_files(folder):
    """new.json and old.json: the same document at a later and an earlier
    updatedAt (units metric and imperial), for the 409 and 412 checks."""
    os.makedirs(folder)
    for name, stamp, units in (("new", "2026-05-18T04:43:04.095Z", "metric"), ("old", "2026-05-17T00:00:00Z", "imperial")):
        with open(os.path.join(folder, name + ".json"), "w") as f:
            f.write('{"updatedAt": "%s", "units": "%s", "factor": 0.9990998620664758}' % (stamp, units))
    return os.path.join(folder, "new.json"), os.path.join(folder, "old.json")


def delete_then_compact(box, key, prefix="s"):
    """Deletes the key's first 40 samples, then makes its compaction due on
    a box whose tombstone horizon is 0: the log (300 records) must double
    before it is compacted, so 700 more changes. Anchors from before now
    answer 410. The compaction is the write's upkeep, after its answer:
    returns once an anchor from before the deletions answers 410 (the
    bound, the programs' 120 s upkeep limit, is against a hang)."""
    status, page = box.request("GET", "/inbox?limit=1", key)
    assert status == 200 and page.get("anchor"), f"GET /inbox?limit=1: {status} {page}"
    for i in range(40):
        box.request("DELETE", f"/inbox/{prefix}-{i:05d}", key, device="app-1")
    churn = [{"id": f"churn-{n}", "body": {"n": n}} for n in range(350)]
    churn += [{"id": f"churn-{n}", "deleted": True} for n in range(350)]
    box.request("POST", "/inbox:bulk", key, device="app-1", body={"messages": churn})
    deadline = time.monotonic() + 120
    while box.request("GET", "/inbox?anchor=" + urllib.parse.quote(page["anchor"]), key)[0] != 410:
        assert time.monotonic() < deadline, "the inbox was not compacted within the upkeep's 120 s"
        time.sleep(0.05)


# ---------------------------------------------------------------- the library, over one transport

def library_through_cuts(checks, lib, work, box):
    """Uploads and a pull through the relay that resets connections: retried, each item once."""
    t = lib.transport
    relay = CuttingRelay(box.stack.port, cuts=3, low=200, high=400_000, seed=31)
    lines = os.path.join(work, f"lib-{t}.txt")
    expected = sample_lines(lines, f"l{t[0]}", 1500, run=5)
    status, result, err = lib.run("push", f"https://127.0.0.1:{relay.port}", box.ca, f"lib-{t}", lines)
    checks.check(f"{t}: upload of 1,500 through a relay that cuts connections: retried, all stored once "
                 f"({len(relay.cut_points)} cuts)",
                 ([] if status == 0 and result.get("items") == 1500 and relay.cut_points
                  else [f"exit {status}: {result} {err}"]) + differences(f"{t} upload", expected, box.truth(f"lib-{t}")))
    relay.close()
    relay = CuttingRelay(box.stack.port, cuts=3, low=200, high=60_000, seed=32)
    state = os.path.join(work, f"lib-{t}.state")
    status, result, err = lib.run("pull", f"https://127.0.0.1:{relay.port}", box.ca, f"lib-{t}", state)
    checks.check(f"{t}: the feed read through the cutting relay converges ({len(relay.cut_points)} cuts)",
                 ([] if status == 0 and relay.cut_points else [f"exit {status}: {result} {err}"])
                 + (differences(f"{t} pull", library_state(state), box.truth(f"lib-{t}")) if status == 0 else []))
    relay.close()


def library_gone_by_compaction(checks, lib, work, compacting):
    """410 after compaction: the next read is a full one that drops what was deleted."""
    t = lib.transport
    key = f"compact-{t}"
    lines = os.path.join(work, f"compact-{t}.txt")
    sample_lines(lines, "s", 300, run=6)
    state = os.path.join(work, f"compact-{t}.state")
    first = lib.run("push", compacting.url, compacting.ca, key, lines)
    second = lib.run("pull", compacting.url, compacting.ca, key, state)
    delete_then_compact(compacting, key)
    status, result, err = lib.run("pull", compacting.url, compacting.ca, key, state)
    truth = compacting.truth(key)
    checks.check(f"{t}: 410 after compaction: the read resyncs and drops the 40 deleted",
                 ([] if first[0] == 0 and second[0] == 0 and status == 0 and result.get("resync") is True
                  and len(truth) == 260 else [f"push {first[1]}, pull {second[1]}, then exit {status}: {result} {err}"])
                 + (differences(f"{t} after 410", library_state(state), truth) if status == 0 else []))


def library_settings(checks, lib, work, box):
    """409 for an older updatedAt, 412 for a stale If-Match, each with the current document."""
    t = lib.transport
    new, old = write_settings_files(os.path.join(work, f"settings-{t}"))
    key = f"settings-{t}"
    s1, put, _ = lib.run("settings-put", box.url, box.ca, key, new)
    s2, older, _ = lib.run("settings-put", box.url, box.ca, key, old)
    s3, stale, _ = lib.run("settings-put", box.url, box.ca, key, new, '"0000000000000000"')
    s4, got, _ = lib.run("settings-get", box.url, box.ca, key)
    checks.check(f"{t}: settings 409 for an older updatedAt and 412 for a stale If-Match, each with current",
                 [] if s1 == 0 and put.get("status") == "written" and s2 == 0 and older.get("status") == 409
                 and older.get("current", {}).get("units") == "metric" and s3 == 0 and stale.get("status") == 412
                 and stale.get("current") == put.get("document") and s4 == 0 and got.get("document") == put.get("document")
                 and got["document"]["factor"] == 0.9990998620664758
                 else [f"put {s1} {put}", f"older {s2} {older}", f"stale {s3} {stale}", f"get {s4} {got}"])


def library_trust(checks, lib, box, compacting):
    """A certificate from another CA, and one for another name, are refused,
    never retried; URLSession on Linux refuses a store with more than the CA."""
    t = lib.transport
    other = lib.run("settings-get", compacting.url, box.ca, "u1")
    renamed = CuttingRelay(box.stack.port, cuts=0, low=0, high=0, seed=0, host="127.0.0.2")
    named = lib.run("settings-get", f"https://127.0.0.2:{renamed.port}", box.ca, "u1")
    renamed.close()
    checks.check(f"{t}: a certificate from another CA and one for another name are refused as untrusted",
                 [] if other[0] == 1 and other[1].get("kind") == "untrusted" and named[0] == 1
                 and named[1].get("kind") == "untrusted" and "127.0.0.2" in named[1].get("error", "")
                 else [f"another CA: {other}", f"another name: {named}"])
    if t != "urlsession":
        return
    outside = lib.run("settings-get", box.url, box.ca, "u1", namespace=False)
    appended = lib.run("settings-get", box.url, box.ca, "u1", trusting=(box.ca, compacting.ca))
    checks.check("urlsession: it refuses to start where the trust store holds more than the box's CA "
                 "(the system's CAs; a second CA appended)",
                 [] if outside[1].get("kind") == "local" and "trusts the system's CAs" in outside[1].get("error", "")
                 and appended[1].get("kind") == "local" and "another certificate" in appended[1].get("error", "")
                 else [f"outside the namespace: {outside}", f"two CAs: {appended}"])


def library_cancel(checks, lib, box):
    """The server holds its answer; the task is cancelled once the request is in."""
    holder = HoldingServer(os.path.join(box.stack.run, "tls", "cert.pem"), os.path.join(box.stack.run, "tls", "key.pem"))
    proc = subprocess.Popen(lib.command("hold", holder.url, box.ca, "u1"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    requested = holder.requested.wait(30)
    try:
        proc.stdin.write("cancel\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        proc.kill()
        out, err = proc.communicate()
        err += f" ({error})"
    closed = holder.closed_by_client.wait(10)
    answered = holder.answered
    holder.close()
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"raw": out}
    checks.check(f"{lib.transport}: a cancelled request returns before the server answers, as cancelled, its connection "
                 f"closed ({result.get('ms', 0):.1f} ms after the cancel)",
                 [] if requested and proc.returncode == 0 and result.get("outcome") == "cancelled" and closed
                 and not answered else [f"request in {requested}, exit {proc.returncode}: {result} {err[-300:]}; "
                                        f"closed by the client {closed}, answered {answered}"])


def library_timeout(checks, lib, box):
    """The server holds its answer past the transport's request timeout
    (1 s; it would answer after 60): the request fails as a connection
    failure, the transport closes its connection, and no answer is taken."""
    holder = HoldingServer(os.path.join(box.stack.run, "tls", "cert.pem"), os.path.join(box.stack.run, "tls", "key.pem"))
    try:
        status, result, err = lib.run("settings-get", holder.url, box.ca, "u1", attempts=1, timeout=1)
        closed = holder.closed_by_client.wait(10)
        answered = holder.answered
    finally:
        holder.close()
    checks.check(f"{lib.transport}: a request the server holds past the request timeout fails as unavailable, "
                 "its connection closed, no answer taken",
                 [] if status == 1 and result.get("kind") == "unavailable" and closed and not answered
                 else [f"exit {status}: {result} {err}; closed by the client {closed}, answered {answered}"])


def transport_checks(checks, work, box, compacting, transport):
    """The library over one transport against the real stacks."""
    if not os.access(LIBRARY, os.X_OK):
        return checks.check(f"{transport}: the library's driver is built ({LIBRARY})", [f"no {LIBRARY}: run make build"])
    lib = Library(transport, work)
    library_through_cuts(checks, lib, work, box)
    library_gone_by_compaction(checks, lib, work, compacting)
    library_settings(checks, lib, work, box)
    library_trust(checks, lib, box, compacting)
    waiting.library_checks(checks, lib, box, transport)  # follows with waits (Tests/client/waiting.py)
    library_engine(checks, lib, work, box, transport)
    library_cancel(checks, lib, box)
    library_timeout(checks, lib, box)


def library_engine(checks, lib, work, box, transport):
    """SyncEngine (Tests/client/engine.py): kill -9 anywhere, two phones, the
    state directory damaged and held, the box away (a stack of its own)."""
    away = Box(work, f"engine-away-{transport}")
    try:
        engine.checks_for(checks, lib, box, away, transport, work)
    finally:
        away.stop()


# ---------------------------------------------------------------- mockcloud-sync

def push_with_a_restart(checks, work, box):
    """5,000 samples, the server restarted once the first request was acknowledged."""
    push = os.path.join(work, "push-restart")
    write_samples(push, 0, 5000)
    proc = sync(box, "push", push, key="restart", wait=False)
    restarted = wait_for_lines(os.path.join(push, ".mockcloud-sync-pushed"), 1000)
    if restarted:
        box.restart()
    status, result, err = finish(proc)
    checks.check("push of 5,000 with the server restarted mid-push: exit 0, all stored", [] if (
        restarted and status == 0 and result.get("stored") == 5000 and result.get("refused") == 0
    ) else [f"restarted={restarted} exit {status}: {result} {err[-500:]}"])
    truth = box.truth("restart")
    checks.check("after the restart the server holds exactly the folder", differences("push", folder_state(push), truth))
    status, result, err = sync(box, "push", push, key="restart")
    checks.check("a re-run sends nothing new", [] if status == 0 and result.get("sent") == 0 and
                 result.get("unchanged") == 5000 else [f"exit {status}: {result} {err[-300:]}"])
    write_samples(push, 0, 100, version=2)
    status, result, err = sync(box, "push", push, key="restart")
    truth = box.truth("restart")
    checks.check("100 files at syncVersion 2 send 100 and the server keeps version 2",
                 ([] if status == 0 and result.get("sent") == 100 else [f"exit {status}: {result}"])
                 + differences("push v2", folder_state(push), truth))
    pull = os.path.join(work, "pull-restart")
    status, result, err = sync(box, "pull", pull, key="restart", device="phone-1")
    checks.check("pull of the 5,000 converges to the server", ([] if status == 0 else [f"exit {status}: {err}"])
                 + differences("pull", pulled_state(pull), box.truth("restart")))


def push_and_pull_through_cuts(checks, work, box):
    """Through a relay that resets the first connections at random points."""
    relay = CuttingRelay(box.stack.port, cuts=6, low=200, high=400_000, seed=22)
    push = os.path.join(work, "push-relay")
    write_samples(push, 0, 5000, run=1)
    status, result, err = sync(box, "push", push, url=f"https://127.0.0.1:{relay.port}", key="relay")
    cuts = len(relay.cut_points)
    checks.check("push of 5,000 through a relay that cuts connections: exit 0",
                 [] if status == 0 and cuts >= 1 else [f"exit {status}, {cuts} cuts: {result} {err[-500:]}"])
    checks.check("after the cuts the server holds exactly the folder",
                 differences("push via relay", folder_state(push), box.truth("relay")))
    relay.close()
    relay = CuttingRelay(box.stack.port, cuts=4, low=200, high=60_000, seed=23)
    pull = os.path.join(work, "pull-relay")
    status, result, err = sync(box, "pull", pull, url=f"https://127.0.0.1:{relay.port}", key="relay", device=None)
    checks.check(f"pull through the cutting relay converges ({len(relay.cut_points)} cuts)",
                 ([] if status == 0 and relay.cut_points else [f"exit {status}: {err[-300:]}"])
                 + differences("pull via relay", pulled_state(pull), box.truth("relay")))
    relay.close()


def the_default_limits(checks, work, box):
    """Bodies that need several 8 MiB requests, and one over 256 KiB refused."""
    push = os.path.join(work, "push-limits")
    os.makedirs(push)
    for i in range(60):  # 60 bodies of ~200 KiB: 12 MB, at least two 8 MiB requests
        with open(os.path.join(push, f"big-{i:02d}.json"), "w") as f:
            json.dump({"syncVersion": 1, "blob": "x" * (200 << 10), "i": i}, f)
    with open(os.path.join(push, "huge.json"), "w") as f:
        json.dump({"blob": "y" * (300 << 10)}, f)
    status, result, err = sync(box, "push", push, key="limits")
    truth = box.truth("limits")
    expected = {k: v for k, v in folder_state(push).items() if k != "huge"}
    checks.check("60 bodies of 200 KiB are stored over several requests; one of 300 KiB is refused (exit 1)",
                 ([] if status == 1 and result.get("stored") == 60 and result.get("refused") == 1 and
                  "huge.json" in " ".join(result.get("problems", [])) else [f"exit {status}: {result}"])
                 + differences("limits", expected, truth))


def gone_by_compaction(checks, work, compacting):
    """410 by compaction, a deletion's tombstone dropped at once: the pull
    resyncs, and the push (its 410 says compacted) reads the feed again."""
    push = os.path.join(work, "push-compact")
    write_samples(push, 0, 300, run=2)
    sync(compacting, "push", push, key="compact")
    pull = os.path.join(work, "pull-compact")
    sync(compacting, "pull", pull, key="compact", device="phone-1")
    delete_then_compact(compacting, "compact")
    status, result, err = sync(compacting, "pull", pull, key="compact", device="phone-1")
    truth = compacting.truth("compact")
    checks.check("410 after compaction: the pull resyncs and drops the 40 deleted files",
                 ([] if status == 0 and result.get("resync") is True and len(truth) == 260
                  else [f"exit {status}: {result} {err[-300:]}; server {len(truth)}"])
                 + differences("pull after compaction", pulled_state(pull), truth))
    # The push's anchor is from before the compaction too: its 410 says
    # "compacted", so it reads the feed again and sends nothing (sending
    # everything again would bring back the 40 the app deleted).
    with open(os.path.join(push, ".mockcloud-sync-push-anchor")) as f:
        gone = compacting.request("GET", "/inbox?anchor=" + f.read().strip(), "compact")
    status, result, err = sync(compacting, "push", push, key="compact")
    after = compacting.truth("compact")
    checks.check("push after compaction: its anchor's 410 says compacted; the feed is read again, nothing sent again",
                 [] if gone[0] == 410 and gone[1].get("reason") == "compacted" and status == 0
                 and result.get("reread") is True and result.get("resent") is False and result.get("sent") == 0
                 and result.get("anchorGone") == "compacted" and after == truth
                 else [f"410 {gone}; push exit {status}: {result} {err[-300:]}; server {len(after)}"])
    status, result, err = sync(compacting, "push", push, key="compact")
    checks.check("the push after that answers from its new anchor",
                 [] if status == 0 and result.get("reread") is False and result.get("sent") == 0
                 else [f"exit {status}: {result} {err[-300:]}"])


def gone_by_a_restore(checks, work, restoring):
    """410 by a restore from backup, on the same port: the pull resyncs, the
    push (its 410 says replaced) sends everything again."""
    push = os.path.join(work, "push-restore")
    pull = os.path.join(work, "pull-restore")
    write_samples(push, 0, 300, run=3)
    sync(restoring, "push", push, key="restore")
    tar = os.path.join(work, "backup.tar")
    backup = subprocess.run([ADMIN, "backup", restoring.stack.data, tar], capture_output=True, text=True)
    write_samples(push, 300, 200, run=3)
    write_samples(push, 0, 50, run=3, version=2)
    sync(restoring, "push", push, key="restore")
    sync(restoring, "pull", pull, key="restore", device="phone-1")
    restored = os.path.join(work, "restored-data")
    restore = subprocess.run([ADMIN, "restore", tar, restored], capture_output=True, text=True)
    restoring.restart(data=restored)
    before = len(restoring.truth("restore"))
    status, result, err = sync(restoring, "pull", pull, key="restore", device="phone-1")
    truth = restoring.truth("restore")
    checks.check("410 after a restore: the pull resyncs to the restored 300",
                 ([] if backup.returncode == 0 and restore.returncode == 0 and before == 300 and status == 0
                  and result.get("resync") is True else
                  [f"backup {backup.returncode} {backup.stderr[-200:]} restore {restore.returncode} "
                   f"{restore.stderr[-200:]} server {before}; pull exit {status}: {result} {err[-300:]}"])
                 + differences("pull after restore", pulled_state(pull), truth))
    status, result, err = sync(restoring, "push", push, key="restore")
    truth = restoring.truth("restore")
    checks.check("after a restore the push notices (410 replaced) and sends everything again",
                 ([] if status == 0 and result.get("resent") is True and result.get("sent") == 500
                  and result.get("anchorGone") == "replaced" and result.get("reread") is False
                  else [f"exit {status}: {result} {err[-300:]}"])
                 + differences("push after restore", folder_state(push), truth))
    status, result, err = sync(restoring, "pull", pull, key="restore", device="phone-1")
    checks.check("then an incremental pull converges to the 500",
                 ([] if status == 0 and result.get("resync") is False else [f"exit {status}: {result}"])
                 + differences("pull after re-push", pulled_state(pull), restoring.truth("restore")))


def settings_conflicts(checks, work, box):
    """409 (older updatedAt) and 412 (stale If-Match) hand back the current document."""
    new, old = write_settings_files(os.path.join(work, "settings"))
    s1, put, _ = sync(box, "settings", "put", new, key="settings")
    s2, conflict, _ = sync(box, "settings", "put", old, key="settings")
    s3, stale, _ = sync(box, "settings", "put", new, "--if-match", '"0000000000000000"', key="settings")
    s4, got, _ = sync(box, "settings", "get", key="settings")
    checks.check("settings: 409 for an older updatedAt and 412 for a stale If-Match, each with current (exit 1)",
                 [] if s1 == 0 and s2 == 1 and conflict.get("status") == 409 and
                 conflict.get("current", {}).get("units") == "metric" and s3 == 1 and stale.get("status") == 412
                 and stale.get("current") == put.get("document") and s4 == 0 and got.get("document") == put.get("document")
                 and got["document"]["factor"] == 0.9990998620664758
                 else [f"put {s1} {put}", f"older {s2} {conflict}", f"stale {s3} {stale}", f"get {s4} {got}"])
    s5, _, err = sync(box, "settings", "get", key="settings-none")
    checks.check("settings get with nothing stored exits 6", [] if s5 == 6 else [f"exit {s5}: {err}"])


def settings_per_field(checks, work, box):
    """Two phones edit different members offline; both edits survive, the later edit home first."""
    files = os.path.join(work, "fields")
    os.makedirs(files)
    for name, text in (("base", '{"weightCalibrationFactor": 1.0, "unitSystem": "metric", "heightCm": 175, '
                                '"updatedAt": "2026-05-18T10:00:00Z"}'),
                       ("a", '{"weightCalibrationFactor": 0.999}'), ("b", '{"unitSystem": "imperial"}'),
                       ("late", '{"unitSystem": "metric", "heightCm": 180}')):
        with open(os.path.join(files, name + ".json"), "w") as f:
            f.write(text)
    m0, _, e0 = sync(box, "settings", "put", os.path.join(files, "base.json"), key="fields")
    m1, b, e1 = sync(box, "settings", "merge", os.path.join(files, "b.json"), "--edited-at", "2026-05-18T10:05:00Z",
                     key="fields", device="phone-b")
    m2, a, e2 = sync(box, "settings", "merge", os.path.join(files, "a.json"), "--edited-at", "2026-05-18T10:01:00Z",
                     key="fields", device="phone-a")
    want = {"weightCalibrationFactor": 0.999, "unitSystem": "imperial", "heightCm": 175,
            "updatedAt": "20260518T100500.000000Z"}
    got_doc = {k: v for k, v in a.get("document", {}).items() if k != "serverReceivedAt"}
    checks.check("settings merge --edited-at: two phones' offline edits of different members both survive (exit 0)",
                 [] if (m0, m1, m2) == (0, 0, 0) and got_doc == want and a.get("kept") == [] and a.get("status") == "merged"
                 else [f"put {m0} {e0[-200:]}", f"b {m1} {b} {e1[-200:]}", f"a {m2} {a} {e2[-200:]}"])
    m3, late, e3 = sync(box, "settings", "merge", os.path.join(files, "late.json"), "--edited-at", "2026-05-18T10:03:00Z",
                        key="fields", device="phone-a")
    checks.check("a late merge of a member edited since names it as kept and exits 1; its other member lands",
                 [] if m3 == 1 and late.get("kept") == ["unitSystem"] and late["document"]["unitSystem"] == "imperial"
                 and late["document"]["heightCm"] == 180 else [f"exit {m3}: {late} {e3[-300:]}"])
    m4, _, e4 = sync(box, "settings", "merge", os.path.join(files, "a.json"), key="fields")
    m5, _, e5 = sync(box, "settings", "merge", os.path.join(files, "a.json"), "--edited-at", "soon", key="fields")
    checks.check("settings merge without --edited-at, or with one that is no time, is a usage error (exit 2)",
                 [] if m4 == 2 and "--edited-at" in e4 and m5 == 2 and "not a time stamp" in e5
                 else [f"without: {m4} {e4[-200:]}", f"bad: {m5} {e5[-200:]}"])


def bearer_tokens(checks, work, boxes):
    """Bearer tokens: from a 0600 file or the environment, never the command line."""
    tokens_file = os.path.join(work, "bearer.tokens")
    made = subprocess.run([ADMIN, "token", tokens_file, "mirror"], capture_output=True, text=True)
    token = made.stdout.strip()
    if os.getuid() == 0:  # the stacks' user must read it, as docs/OPERATIONS.md says (Tests/support/stack.sh own_secrets)
        subprocess.run([os.path.join(REPO, "nginx", "mockcloud-nginx.sh"), "own", tokens_file], check=True,
                       stdout=subprocess.DEVNULL)
    guarded = boxes.start("tokens", MOCKCLOUD_TOKENS=tokens_file)
    token_file = os.path.join(work, "mirror.token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(token + "\n")
    push = os.path.join(work, "push-token")
    write_samples(push, 0, 20, run=4)
    s1, pushed, e1 = sync(guarded, "push", push, "--token-file", token_file, key="tok")
    s2, pulled, e2 = sync(guarded, "pull", os.path.join(work, "pull-token"), key="tok", device="phone-1", token=token)
    s3, _, e3 = sync(guarded, "settings", "get", key="tok")
    s4, _, e4 = sync(guarded, "settings", "get", key="tok", token="mct_not_issued")
    s5, _, e5 = sync(guarded, "settings", "get", "--token-file", token_file, key="tok", token="mct_not_issued")
    checks.check("a token from --token-file (0600) or MOCKCLOUD_SYNC_TOKEN is sent; none or a wrong one is refused (exit 6)",
                 [] if made.returncode == 0 and token and s1 == 0 and pushed.get("stored") == 20 and s2 == 0
                 and pulled.get("messages") == 20 and s3 == 6 and s4 == 6 and s5 == 6
                 and "Bearer <token> required" in e3 and "not accepted" in e4 and "no settings stored" in e5
                 else [f"token {made.returncode} {made.stderr[-200:]}", f"push {s1} {pushed} {e1[-200:]}",
                       f"pull {s2} {pulled} {e2[-200:]}", f"none {s3} {e3[-200:]}", f"wrong {s4} {e4[-200:]}",
                       f"file wins {s5} {e5[-200:]}"])
    os.chmod(token_file, 0o644)
    s6, _, e6 = sync(guarded, "push", push, "--token-file", token_file, key="tok")
    os.chmod(token_file, 0o640)
    s7, _, e7 = sync(guarded, "push", push, "--token-file", token_file, key="tok")
    checks.check("a token file group or others can read is refused with the chmod to run (exit 3)",
                 [] if s6 == 3 and f"token file {token_file} is readable by group or others (mode 0644); "
                 f"run chmod 600 {token_file}" in e6 and s7 == 3 and "(mode 0640)" in e7
                 else [f"0644: {s6} {e6[-300:]}", f"0640: {s7} {e7[-300:]}"])
    s8, _, e8 = sync(guarded, "push", push, "--token", token, key="tok")
    checks.check("--token on the command line is refused (exit 2) with the two ways that keep it out of ps",
                 [] if s8 == 2 and "--token-file FILE" in e8 and "MOCKCLOUD_SYNC_TOKEN" in e8 and token not in e8
                 else [f"{s8} {e8[-300:]}"])


def tool_settings_get(url, ca, *options, key="settings"):
    """mockcloud-sync settings get, run to the end: the CompletedProcess."""
    return subprocess.run([TOOL, "settings", "get", "--url", url, "--ca", ca, *options, "--user-key", key],
                          capture_output=True, text=True)


def tool_trust(checks, work, box, boxes):
    """The system's CAs are not the box's CA; the CA file is checked against
    its pin; a CA file with another CA appended is refused, pinned to the
    box's fingerprint or not, and never reaches a server the other CA signed."""
    system = tool_settings_get(box.url, "/etc/ssl/certs/ca-certificates.crt", key="u1")
    fingerprint = subprocess.run(["openssl", "x509", "-in", box.ca, "-noout", "-fingerprint", "-sha256"],
                                 capture_output=True, text=True).stdout.strip().split("=")[-1]
    good = tool_settings_get(box.url, box.ca, "--ca-sha256", fingerprint)
    wrong = tool_settings_get(box.url, box.ca, "--ca-sha256", "00" * 32)
    checks.check("another CA is refused (exit 4); the CA file is checked against its SHA-256",
                 [] if system.returncode == 4 and good.returncode == 0 and wrong.returncode == 4
                 else [f"system CAs {system.returncode} {system.stderr}", f"right pin {good.returncode} {good.stderr}",
                       f"wrong pin {wrong.returncode} {wrong.stderr}"])
    other = boxes.start("other-ca")
    appended = os.path.join(work, "appended-ca.crt")
    with open(appended, "w") as f:
        f.write(open(box.ca).read() + open(other.ca).read())
    problems = []
    for url, pin in [(other.url, ["--ca-sha256", fingerprint]), (other.url, []), (box.url, ["--ca-sha256", fingerprint])]:
        run = tool_settings_get(url, appended, *pin)
        if run.returncode != 4 or "exactly one" not in run.stderr or run.stdout:
            problems.append(f"{url} {pin}: exit {run.returncode}, stdout {run.stdout[:200]!r}, stderr {run.stderr[:200]!r}")
    alone = tool_settings_get(other.url, other.ca)
    if alone.returncode != 6:  # its own CA: served, nothing stored there
        problems.append(f"the other box with its own CA: exit {alone.returncode} {alone.stderr[:200]}")
    checks.check("a CA file with another CA appended is refused (exit 4), with or without --ca-sha256", problems)


def the_sync_package(checks, work):
    """The device's package: the stripped tool runs; libcurl is the one library beyond libc's and C++'s."""
    dist = os.path.join(work, "dist")
    built = subprocess.run([os.path.join(REPO, "packaging", "build-sync-deb.sh")], capture_output=True, text=True,
                           env=dict(os.environ, MOCKCLOUD_DIST=dist, MOCKCLOUD_DEB_COMPRESSION="none"))
    problems = [] if built.returncode == 0 else [built.stderr[-300:]]
    if not problems:
        deb = os.path.join(dist, os.listdir(dist)[0])
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work, "unpacked")], check=True)
        tool = os.path.join(work, "unpacked", "usr", "bin", "mockcloud-sync")
        usage = subprocess.run([tool, "--help"], capture_output=True, text=True)
        depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True).stdout
        needed = subprocess.run(["readelf", "-d", tool], capture_output=True, text=True).stdout
        if usage.returncode != 0 or "mockcloud-sync push DIR" not in usage.stdout:
            problems.append(f"--help: {usage.returncode} {usage.stderr}")
        if "libcurl4" not in depends or "libswift" in needed or "libcurl.so.4" not in needed:
            problems.append(f"Depends {depends.strip()}; NEEDED {needed.count('NEEDED')} lines")
    checks.check("make deb's second package: mockcloud-sync, the Swift runtime inside, Depends libcurl4", problems)


class Boxes:
    """A part's stacks (their directories named after the part), each
    started once and all stopped at the end."""

    def __init__(self, work, part):
        self.work, self.part, self.started = work, part, []

    def start(self, name, **settings):
        box = Box(self.work, f"{self.part}-{name}", **settings)
        self.started.append(box)
        return box

    def stop(self):
        while self.started:
            self.started.pop().stop()


def the_tool(checks, work, boxes):
    """mockcloud-sync against a stack: pushes and pulls through restarts and
    cuts, the limits, 410s, settings, tokens, trust, its package."""
    box = boxes.start("main")
    push_with_a_restart(checks, work, box)
    push_and_pull_through_cuts(checks, work, box)
    the_default_limits(checks, work, box)
    gone_by_compaction(checks, work, boxes.start("compact", **COMPACTING))
    gone_by_a_restore(checks, work, boxes.start("restore"))
    settings_conflicts(checks, work, box)
    settings_per_field(checks, work, box)
    bearer_tokens(checks, work, boxes)
    tool_trust(checks, work, box, boxes)
    the_sync_package(checks, work)


def the_library(transport):
    """MockCloudClient over one transport, against a stack and one that compacts at once."""
    def part(checks, work, boxes):
        transport_checks(checks, work, boxes.start("main"), boxes.start("compact", **COMPACTING), transport)
    return part


def waits_meet_faults(checks, work, boxes):
    """The stack stopped and restarted under waits, a compaction and a 410
    during them (Tests/client/waiting.py), for the library's follow and the tool's."""
    waits = boxes.start("waits", MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS="8", MOCKCLOUD_INBOX_TOMBSTONE_HORIZON="0")
    waiting.faults(waits, checks)
    waiting.follow_checks(waits, checks, TOOL)


def the_watcher(checks, work, boxes):
    """The mirror's watcher (Tests/client/watch.py), on a stack of its own that it stops and starts."""
    watch.watch_checks(checks, boxes.start("watch"), TOOL, work, folder_state, differences)


# A compaction at every write that doubles the log, every deletion dropped
# at once: any anchor from before a deletion answers 410.
COMPACTING = {"MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": 0, "MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": 1}

# The suite's parts, each on stacks of its own, so that Tests/run-all.sh
# can run them side by side.
PARTS = {"tool": the_tool, "curl": the_library("curl"), "urlsession": the_library("urlsession"),
         "waits": waits_meet_faults, "watch": the_watcher}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", action="append", choices=sorted(PARTS),
                        help="run only this part (repeatable; default: every part, one after another)")
    parts = parser.parse_args().part or list(PARTS)
    checks = Checks()
    if not os.access(TOOL, os.X_OK):
        checks.check(f"the tool is built ({TOOL})", [f"no {TOOL}: run make build"])
        return checks.summary()
    work = tempfile.mkdtemp(prefix="mcsync.")
    try:
        for name in parts:
            boxes = Boxes(work, name)
            try:
                PARTS[name](checks, work, boxes)
            finally:
                boxes.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
