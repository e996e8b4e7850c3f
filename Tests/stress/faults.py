#!/usr/bin/env python3
"""Fail one storage system call at a time, at every occurrence, in every kind
of write, and prove that the answer told the truth and that nothing is lost.

    faults.py [--cgi-bin DIR] [--jobs 2] [--quick] [--only TEXT] [--syscall NAME]
              [--strict-changed | --lenient-changed] [--fastcgi] [--keep]

The injector is strace's `-e inject=SYSCALL:error=ERRNO:when=N` (strace 6.1,
`--seccomp-bpf`, `-f`): the programs are static executables, so an
LD_PRELOAD shim never sees their calls, and a hook compiled into the
programs would sit on every production request. Each program runs directly
as fcgiwrap runs it (Tests/support/cgi_program.py: the CGI environment, the
body on stdin, the answer parsed from stdout), not through nginx: the faults
are in the program. With --fastcgi, the request faulted (and the one that
counts its calls) is served by the program's FastCGI mode instead: a pool
of one worker with --max-requests 1 on a socket of its own, the same
request sent as nginx sends it, strace following master, worker and any
upkeep child; the same checks, through CGI programs, judge it.

For every scenario (settings PUT new and replace, PATCH, DELETE, a key's
first settings write, a per-field PATCH over member times and a first one,
a PUT and a DELETE over member times; inbox PUT new and replace, DELETE, POST /inbox, a bulk
of new, replaced and deleted items, a key's first inbox write, a write that
triggers compaction), each unsigned and signed (MOCKCLOUD_HMAC_KEYS), it
counts each storage system call in the unfaulted request, then for every
call S, every N in 1..count(S) and EIO (and ENOSPC where a full disk can
answer it) runs the request on a fresh copy of the seed with exactly that
fault, checks, retries the same request unfaulted, and checks again:

  consistent   GET /inbox/<id> of every id known before and after and the
               full feed from no anchor agree on which ids exist and at which
               version and seq; feed seqs and ids are unique; a tombstone
               answers 404 and is listed in `deleted`; no stored item answers
               5xx (signed: no false integrity 500); settings GET answers 200
               with an ETag or 404, and GET with X-Merge: fields the same
               document with its member times (which count as the settings'
               state in every check below).
  truthful     2xx: the whole change is visible. 4xx and a 5xx saying
               "changed": "no": nothing changed (every GET and the full feed
               as before: ids, versions, bodies, seqs). "yes": the whole change
               is visible. "maybe", a 503, no answer or a garbled one: each
               item is in its state before or after. POST's "yes"/"maybe"
               carries the server-chosen "id". A 5xx from a write without
               "changed" fails with --strict-changed (the default) and is
               only counted with --lenient-changed.
  no reuse     a reader that follows the feed from its anchor taken before
               the fault (and one from its anchor taken right after) ends
               with exactly what a full read shows; every envelope the retry
               wrote has a seq above every seq the feed showed after the fault.
  recoverable  the retry (POST's: a PUT of the id the answer named) answers
               2xx (a DELETE 404 when the first one already deleted) and the
               state then is the request's after-state.

The compaction scenario is also killed (SIGKILL, strace's
`-e inject=SYSCALL:signal=SIGKILL:when=N`) at every occurrence of every
storage system call, its write's and its compaction's steps alike: a crash
at each step. The same invariants hold, and after the retry no new change
log is left half written (`.~changes.log`).

Prints one ok/FAIL line per scenario x system call x errno (a FAIL lists the
N that failed, grouped by problem), the number of fault checks and the time,
then `N passed, M failed` counting fault checks. --quick samples N (the first
two, the middle and the last two occurrences).
"""
import argparse
import collections
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import cgi_program  # noqa: E402  (Tests/support/, on the path stresslib sets)
import suite  # noqa: E402

KEY = "fk"
PROBE = "zz-probe"      # the new message written after each retry
# The storage system calls a program may make (x86_64 names), and those a
# full disk can fail with ENOSPC. close(2) is left out: its errors are
# ignored by design and injecting it leaks nothing.
STORAGE_CALLS = ["openat", "read", "pread64", "write", "pwrite64", "fsync", "fdatasync", "syncfs", "sync_file_range",
                 "rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat", "ftruncate", "flock",
                 "fstat", "newfstatat", "statx", "lstat", "stat", "getdents64", "statfs", "fstatfs", "utimensat"]
ENOSPC_CALLS = {"write", "pwrite64", "fsync", "fdatasync", "syncfs", "sync_file_range", "openat", "mkdir", "mkdirat",
                "rename", "renameat", "renameat2", "ftruncate"}
STRACE = shutil.which("strace") or "/usr/bin/strace"
KILL = "KILL"       # in place of an errno: the program is killed at that call


# ---------------------------------------------------------------- requests

class Request:
    def __init__(self, program, method, path, headers=None, body=b"", query=""):
        self.program, self.method, self.path, self.query = program, method, path, query
        self.headers = dict({"X-User-Key": KEY}, **(headers or {}))
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()

    def __str__(self):
        return "%s %s" % (self.method, self.path)


def start_program(cgi_bin, request, data, env_extra, trace=None, syscalls=(), injections=()):
    """Starts `request`'s program as fcgiwrap would (the body written to its
    stdin, which is then closed); under strace when `trace` (the file strace
    writes) is given, tracing `syscalls` with each of `injections` (strace
    -e inject= specs: "rename:error=EIO:when=3", "openat:delay_enter=300ms:when=5",
    "fsync:signal=SIGKILL:when=2")."""
    env = cgi_program.environment(request.method, request.path, data, request.headers, request.query,
                                  request.body, env_extra)
    command = [os.path.join(cgi_bin, request.program)]
    if trace:
        command = strace_command(trace, syscalls, injections) + command
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    proc.trace = trace if injections else None
    try:
        proc.stdin.write(request.body)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    proc.stdin = None           # communicate() must not touch it again
    return proc


def finish(proc, timeout=40):
    """Waits for a started program: (status, headers, body, whole, exit
    status, injected: whether strace says it injected a fault or a delay,
    None untraced)."""
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        code = "timeout"
    status, headers, body, whole = cgi_program.parse_output(out)
    injected = None
    if proc.trace:
        try:
            text = open(proc.trace, errors="replace").read()
            injected = "(INJECTED)" in text or "(DELAYED)" in text or "killed by SIGKILL" in text
        except OSError:
            injected = False
    return status, headers, body, whole, code, injected


def strace_command(trace, syscalls, injections):
    """strace -f writing to `trace`, tracing `syscalls`, with each of `injections`."""
    # strace 6.1 delivers no injected signal with --seccomp-bpf: those run without it.
    fast = [] if any(":signal=" in spec for spec in injections) else ["--seccomp-bpf"]
    command = [STRACE, "-f", "-qq"] + fast + ["-o", trace, "-e", "trace=" + ",".join(syscalls)]
    for spec in injections:
        command += ["-e", "inject=" + spec]
    return command


def children(pid):
    """PID's child processes."""
    try:
        return [int(c) for c in open("/proc/%d/task/%d/children" % (pid, pid)).read().split()]
    except (OSError, ValueError):
        return []


def waiting_in_accept(pid):
    try:
        return open("/proc/%d/syscall" % pid).read().split()[0] == "288"    # accept4, x86_64
    except (OSError, IndexError):
        return False


def run_fastcgi(cgi_bin, request, data, env_extra, trace, syscalls, injections):
    """`request` served by the FastCGI mode's worker (--fastcgi, one worker,
    --max-requests 1: one request per process, as a CGI program is) under
    strace, sent as nginx sends it (its CGI environment as PARAMS, the body
    as STDIN); then, once the master has put a fresh worker in its place
    (waiting in accept4), SIGTERM to the master, and its end (and every
    upkeep child's) awaited. Returns what `finish` returns; a pool still
    running 10 s after SIGTERM is ended by SIGKILL, and its exit status is
    then "ignored SIGTERM"."""
    env = cgi_program.environment(request.method, request.path, data, request.headers, request.query,
                                  request.body, env_extra)
    sock_path = trace + ".sock"
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    command = strace_command(trace, syscalls, injections) + [
        os.path.join(cgi_bin, request.program), "--fastcgi", "unix:" + sock_path, "--workers", "1",
        "--max-requests", "1"]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={"PATH": "/usr/bin:/bin"})
    out, master, first = b"", None, []
    if suite.until(lambda: os.path.exists(sock_path) or proc.poll() is not None, timeout=30, step=0.005):
        master = (children(proc.pid) or [None])[0]
        first = children(master) if master else []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(sock_path)
                out, _ = cgi_program.fastcgi_request(sock, env, request.body)
            except OSError:
                pass
    if master:
        # The replacement in place first: a stop is for a pool at rest.
        suite.until(lambda: any(waiting_in_accept(c) for c in children(master) if c not in first)
                    or proc.poll() is not None, timeout=5, step=0.005)
        try:
            os.kill(master, signal.SIGTERM)
        except OSError:
            pass
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        for pid in [master] + children(master) if master else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        code = "ignored SIGTERM"
    status, headers, body, whole = cgi_program.parse_output(out)
    text = open(trace, errors="replace").read() if os.path.exists(trace) else ""
    injected = ("(INJECTED)" in text or "killed by SIGKILL" in text) if injections else None
    return status, headers, body, whole, code, injected


def run_program(cgi_bin, request, data, env_extra, fault=None, trace=None):
    """Runs `request` once; `fault` = (syscall, errno, n) runs it under
    strace with that one fault (errno KILL: killed there), or a list of
    system calls to trace (into `trace`). Returns what `finish` returns.
    With --fastcgi, a traced request (faulted or counted) goes to a worker
    (run_fastcgi); the checks around it run the programs as CGI."""
    if isinstance(fault, tuple):
        syscall, errno, n = fault
        what = "signal=SIGKILL" if errno == KILL else "error=" + errno
        injection = "%s:%s:when=%d" % (syscall, what, n)
        if Context.fastcgi:
            return run_fastcgi(cgi_bin, request, data, env_extra, trace, [syscall], [injection])
        proc = start_program(cgi_bin, request, data, env_extra, trace, [syscall], [injection])
    elif fault and Context.fastcgi:
        return run_fastcgi(cgi_bin, request, data, env_extra, trace, fault, [])
    else:
        proc = start_program(cgi_bin, request, data, env_extra, trace if fault else None, fault or ())
    return finish(proc)


def count_calls(trace):
    """{syscall: count} from an strace -f -o file, and the number of processes."""
    counts, pids = collections.Counter(), set()
    for line in open(trace, errors="replace"):
        match = re.match(r"^(\d+)\s+(\w+)\(", line)
        if match:
            pids.add(match.group(1))
            counts[match.group(2)] += 1
    return counts, len(pids)


# ---------------------------------------------------------------- scenarios

def put(ident, version, body):
    return Request("inbox", "PUT", "/inbox/" + ident, {"X-Sync-Version": str(version)}, body)


def settings_put(doc, key=KEY):
    return Request("user-settings", "PUT", "/user/settings", {"X-User-Key": key}, doc)


def settings_fields(patch, device):
    """A per-field PATCH (X-Merge: fields): its members edited at its updatedAt."""
    return Request("user-settings", "PATCH", "/user/settings",
                   {"Content-Type": "application/merge-patch+json", "X-Merge": "fields", "X-Device-Id": device}, patch)


SEEDS = {
    "empty": [],
    "base": [
        settings_put({"updatedAt": "2026-01-01T00:00:00Z", "units": "metric", "nested": {"a": 1}}),
        settings_put({"updatedAt": "2026-01-01T00:00:00Z", "other": True}, key="bystander"),
        put("m1", 1, {"kg": 71.3}), put("m2", 1, {"kg": 70.1}), put("m3", 1, {"kg": 69.9}),
        put("d1", 1, {"kg": 1}), Request("inbox", "DELETE", "/inbox/d1"),
    ],
    # Settings merged per field once: a member-times file beside the document.
    "timed": [
        settings_put({"updatedAt": "2026-01-01T00:00:00Z", "units": "metric", "nested": {"a": 1}, "height": 175}),
        settings_fields({"updatedAt": "2026-01-02T00:00:00Z", "height": 176}, "phone-a"),
    ],
    # Five records, two of them superseded, and a tombstone that horizon 0
    # makes expired: the next write crosses MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=4.
    "compact": [
        put("m1", 1, {"kg": 71.3}), put("m1", 2, {"kg": 71.0}), put("m2", 1, {"kg": 70.1}),
        Request("inbox", "DELETE", "/inbox/m2"), put("m3", 1, {"kg": 69.9}),
    ],
}

BULK = {"messages": [
    {"id": "n1", "version": 1, "body": {"kg": 60}},
    {"id": "n2", "version": 1, "body": {"kg": 61}},
    {"id": "m1", "version": 2, "body": {"kg": 72}},
    {"id": "m3", "version": 5, "body": {"kg": 68}},
    {"id": "m2", "deleted": True},
    {"id": "d1", "version": 2, "body": {"kg": 2}},
]}


class Scenario:
    def __init__(self, name, kind, seed, request, env=None, ids=(), settings_keys=(KEY,)):
        self.name, self.kind, self.seed, self.request = name, kind, seed, request
        self.env = env or {}
        self.ids = set(ids)                 # inbox ids the request names
        self.settings_keys = list(settings_keys)
        self.is_post = request.method == "POST" and request.path == "/inbox"
        self.is_delete = request.method == "DELETE"
        self.is_bulk = request.path == "/inbox:bulk"
        self.compacts = "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON" in self.env
        self.killed = self.compacts     # also killed at every call (a crash at each step)


SCENARIOS = [
    Scenario("settings PUT new", "settings", "base",
             settings_put({"updatedAt": "2026-02-01T00:00:00Z", "units": "metric"}, key="fresh"),
             settings_keys=(KEY, "fresh")),
    Scenario("settings PUT replace", "settings", "base",
             settings_put({"updatedAt": "2026-02-01T00:00:00Z", "units": "imperial"})),
    Scenario("settings PATCH", "settings", "base",
             Request("user-settings", "PATCH", "/user/settings", {"Content-Type": "application/merge-patch+json"},
                     {"updatedAt": "2026-02-01T00:00:00Z", "units": "imperial", "nested": {"b": 2}})),
    Scenario("settings DELETE", "settings", "base", Request("user-settings", "DELETE", "/user/settings")),
    # The document and its member times are one change: "changed" speaks for both.
    Scenario("settings PATCH per field", "settings", "timed",
             settings_fields({"updatedAt": "2026-02-01T00:00:00Z", "units": "imperial", "nested": None, "new": 1},
                             "phone-b")),
    Scenario("settings PATCH per field first", "settings", "empty",
             settings_fields({"updatedAt": "2026-02-01T00:00:00Z", "units": "metric", "gone": None}, "phone-b")),
    Scenario("settings PUT over member times", "settings", "timed",
             settings_put({"updatedAt": "2026-02-01T00:00:00Z", "units": "imperial"})),
    Scenario("settings DELETE with member times", "settings", "timed",
             Request("user-settings", "DELETE", "/user/settings")),
    Scenario("settings first write", "settings", "empty",
             settings_put({"updatedAt": "2026-02-01T00:00:00Z", "units": "metric"})),
    Scenario("inbox PUT new", "inbox", "base", put("m9", 1, {"kg": 65}), ids=["m9"]),
    Scenario("inbox PUT replace", "inbox", "base", put("m1", 2, {"kg": 72}), ids=["m1"]),
    Scenario("inbox DELETE", "inbox", "base", Request("inbox", "DELETE", "/inbox/m2"), ids=["m2"]),
    Scenario("inbox POST", "inbox", "base", Request("inbox", "POST", "/inbox", body={"posted": True})),
    Scenario("inbox bulk", "inbox", "base", Request("inbox", "POST", "/inbox:bulk", body=BULK),
             ids=[item["id"] for item in BULK["messages"]]),
    Scenario("inbox first write", "inbox", "empty", put("f1", 1, {"kg": 80}), ids=["f1"]),
    Scenario("inbox compaction", "inbox", "compact", put("m4", 1, {"kg": 64}), ids=["m4", "m1", "m2", "m3"],
             env={"MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": "4", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": "0"}),
]


# ---------------------------------------------------------------- what clients see

def body_text(value):
    return json.dumps(value, sort_keys=True)


class State:
    """What the unfaulted programs answer about a data directory."""

    def __init__(self):
        self.problems = []          # inconsistencies (the `consistent` invariant)
        self.visible = {}           # settings key or inbox id -> None | (version, body text)
        self.exact = {}             # the same with seqs and raw bytes: for "nothing changed"
        self.feed = []              # [(id, "m"|"d", version, seq)] of the full read
        self.live = {}              # id -> (version, seq) of the full read's messages
        self.anchor = None
        self.max_seq = 0


def observe(cgi_bin, scenario, data, env, ids):
    """What unfaulted programs show of the store: the settings of each key,
    or the full feed and every message a client may know of."""
    state = State()
    if scenario.kind == "settings":
        for key in scenario.settings_keys:
            observe_settings(cgi_bin, key, data, env, state)
        return state
    listed = observe_feed(cgi_bin, data, env, state)
    # Ids only the disk knows (a POST whose answer named none, a change the
    # feed lost) are asked for too: a client may hold them.
    folder = os.path.join(data, "inbox", KEY, "messages")
    on_disk = {name[:-5] for name in (os.listdir(folder) if os.path.isdir(folder) else [])
               if name.endswith(".json") and not stresslib.TEMPORARY.match(name)}
    for ident in sorted(set(ids) | set(listed) | on_disk):
        observe_message(cgi_bin, ident, listed.get(ident, []), data, env, state)
    holders = collections.defaultdict(list)
    for ident, exact in sorted(state.exact.items()):
        if isinstance(exact, tuple):
            holders[exact[1]].append(ident)
    for seq, idents in sorted(holders.items()):
        if len(idents) > 1:
            state.problems.append("GET answers seq %d for each of %s" % (seq, idents))
    return state


def observe_settings(cgi_bin, key, data, env, state):
    """The key's document and its member times, as a plain GET and one with X-Merge: fields answer them."""
    problem = state.problems.append
    program = os.path.join(cgi_bin, "user-settings")
    status, headers, body, whole, code = cgi_program.run(program, "GET", "/user/settings", data, {"X-User-Key": key},
                                                         extra=env)
    state.exact[key] = (status, body, headers.get("etag"))
    if status == 404 and whole:
        state.visible[key] = None
        return
    if status != 200 or not whole:
        problem("GET settings %s answers %s %r (exit %s)" % (key, status, body[:160], code))
        state.visible[key] = "unreadable"
        return
    if not re.match(r'^"[0-9a-f]{16}"$', headers.get("etag", "")):
        problem("GET settings %s: 200 without a strong ETag (%r)" % (key, headers.get("etag")))
    doc = json.loads(body)
    # The member times belong to the change as much as the document.
    t_status, _, t_body, t_whole, t_code = cgi_program.run(program, "GET", "/user/settings", data,
                                                           {"X-User-Key": key, "X-Merge": "fields"}, extra=env)
    times = None
    if t_status == 200 and t_whole:
        timed = json.loads(t_body)
        times = timed["times"]
        if timed["document"] != doc:
            problem("GET settings %s with X-Merge: fields answers another document" % key)
    else:
        problem("GET settings %s with X-Merge: fields answers %s %r (exit %s)" % (key, t_status, t_body[:160], t_code))
    state.exact[key] = (status, body, headers.get("etag"), json.dumps(times, sort_keys=True))
    doc.pop("serverReceivedAt", None)
    state.visible[key] = json.dumps({"document": doc, "times": times}, sort_keys=True)


def observe_feed(cgi_bin, data, env, state):
    """The full feed into `state`; id -> its entries (a message, or None for a deletion)."""
    messages, deleted, state.anchor, feed_problems = stresslib.follow_feed(
        os.path.join(cgi_bin, "inbox"), env, data, KEY, 1000)
    state.problems += feed_problems
    listed = {}
    for m in messages:
        state.feed.append((m["id"], "m", m["version"], m["seq"]))
        state.live[m["id"]] = (m["version"], m["seq"])
        listed.setdefault(m["id"], []).append(m)
    for d in deleted:
        state.feed.append((d["id"], "d", d.get("version"), d["seq"]))
        listed.setdefault(d["id"], []).append(None)
    seqs = collections.Counter(entry[3] for entry in state.feed)
    twice = sorted(seq for seq, n in seqs.items() if n > 1)
    if twice:
        state.problems.append("the feed shows seq %s more than once" % twice)
    for ident, entries in sorted(listed.items()):
        if len(entries) > 1:
            state.problems.append("the feed lists %s %d times" % (ident, len(entries)))
    state.max_seq = max(seqs) if seqs else 0
    return listed


def observe_message(cgi_bin, ident, in_feed, data, env, state):
    """GET /inbox/<ident> into `state`, checked against the feed's entries for it."""
    problem = state.problems.append
    status, _, body, whole, code = cgi_program.run(os.path.join(cgi_bin, "inbox"), "GET", "/inbox/" + ident,
                                                   data, extra=env, headers={"X-User-Key": KEY})
    message = next((m for m in in_feed if m is not None), None)
    if status == 200 and whole:
        envelope = json.loads(body)
        state.visible[ident] = (envelope["version"], body_text(envelope["body"]))
        state.exact[ident] = (envelope["version"], envelope["seq"], body_text(envelope["body"]))
        if message is None:
            problem("GET %s answers version %d seq %d but the full feed %s" % (
                ident, envelope["version"], envelope["seq"],
                "lists it as deleted" if in_feed else "never lists it"))
        elif (message["version"], message["seq"], message["body"]) != (
                envelope["version"], envelope["seq"], envelope["body"]):
            problem("GET %s answers version %d seq %d, the feed version %d seq %d" % (
                ident, envelope["version"], envelope["seq"], message["version"], message["seq"]))
    elif status == 404 and whole:
        state.visible[ident] = None
        state.exact[ident] = None
        if message is not None:
            problem("GET %s answers 404 but the feed lists it at version %d seq %d" % (
                ident, message["version"], message["seq"]))
    else:
        state.visible[ident] = state.exact[ident] = "unreadable"
        problem("GET %s answers %s %r (exit %s)" % (ident, status, body[:160], code))


def follow(cgi_bin, env, data, start, problem, when):
    """A reader holding the state `start` follows the feed from its anchor to
    the end, applying each page; returns the live map it ends with (id ->
    (version, seq)), or None when the walk failed (a 410, a 500)."""
    messages, deleted, _, problems = stresslib.follow_feed(os.path.join(cgi_bin, "inbox"), env, data, KEY, 1000,
                                                           anchor=start.anchor)
    for line in problems:
        problem("a reader following from the anchor %s: %s" % (when, line))
    if problems:
        return None
    live = dict(start.live)
    for m in messages:
        live[m["id"]] = (m["version"], m["seq"])
    for d in deleted:
        live.pop(d["id"], None)
    return live


def compare_follow(cgi_bin, env, data, start, full, problem, when):
    """The `no reuse` invariant: the follower ends with what a full read shows."""
    live = follow(cgi_bin, env, data, start, problem, when)
    if live is None or live == full.live:
        return

    def show(entry):
        return "absent" if entry is None else "v%d seq %d" % entry
    differing = ["%s: follower %s, full read %s" % (i, show(live.get(i)), show(full.live.get(i)))
                 for i in sorted(set(live) | set(full.live)) if live.get(i) != full.live.get(i)]
    problem("a reader following from the anchor %s ends with another state than a full read (%s)" % (
        when, "; ".join(differing[:5])))


# ---------------------------------------------------------------- judging

class Expectation:
    """The before and after states of a scenario (the after state from an
    unfaulted run on the same seed)."""

    def __init__(self, before, after, posted_body=None):
        self.before, self.after, self.posted_body = before, after, posted_body


def new_ids(state, before):
    return sorted(i for i, v in state.visible.items() if v is not None and before.visible.get(i) is None)


def visible_problems(scenario, state, expect, allowed, posted_id=None):
    """`allowed` "before", "after" or "either": each item's visible state
    must be that. Returns problem strings."""
    problems = []
    before, after = expect.before.visible, expect.after.visible
    for key in sorted(set(before) | set(after) | set(state.visible)):
        if scenario.is_post and key not in before:
            continue
        now = state.visible.get(key)
        if now == "unreadable":
            continue                # a consistency problem already
        want = {"before": [before.get(key)], "after": [after.get(key)],
                "either": [before.get(key), after.get(key)]}[allowed]
        if now not in want:
            problems.append("%s is %s; expected %s" % (key, describe(now), " or ".join(describe(w) for w in want)))
    if scenario.is_post:
        fresh = new_ids(state, expect.before)
        wrong = [i for i in fresh if state.visible[i][1] != expect.posted_body]
        if wrong:
            problems.append("POST left messages with other bodies: %s" % wrong)
        if allowed == "before" and fresh:
            problems.append("POST stored %s although the answer says nothing changed" % fresh)
        if allowed == "after" and len(fresh) != 1:
            problems.append("POST answered as done, and %d new messages exist (%s)" % (len(fresh), fresh))
        if allowed == "either" and len(fresh) > 1:
            problems.append("one POST left %d new messages (%s)" % (len(fresh), fresh))
        if posted_id and fresh and allowed != "before" and posted_id not in fresh:
            problems.append("POST named id %s, but the new message is %s" % (posted_id, fresh))
    return problems


def describe(value):
    if value is None:
        return "absent"
    if isinstance(value, tuple):
        return "version %s %s" % (value[0], value[1][:60])
    return str(value)[:80]


def exact_problems(scenario, state, expect):
    """Nothing visible changed: every GET and the full feed as before."""
    before = expect.before
    problems = []
    feed_now, feed_then = set(state.feed), set(before.feed)
    if scenario.compacts:
        # Compaction may drop an expired deletion: the feed no longer lists it.
        feed_then = {e for e in feed_then if e[1] != "d" or e in feed_now}
    if feed_now != feed_then:
        problems.append("the feed changed: now also %s, no longer %s" % (
            sorted(feed_now - feed_then, key=str)[:4], sorted(feed_then - feed_now, key=str)[:4]))
    for key in sorted(set(before.exact) | set(state.exact)):
        if key in state.exact and key in before.exact and state.exact[key] != before.exact[key]:
            if scenario.kind == "settings" or state.exact[key] != "unreadable":
                problems.append("%s changed: %s -> %s" % (key, str(before.exact[key])[:100],
                                                           str(state.exact[key])[:100]))
        elif key not in before.exact and state.exact.get(key) not in (None, "unreadable"):
            problems.append("%s appeared: %s" % (key, str(state.exact[key])[:100]))
    return problems


def judge_answer(scenario, answer, state, expect, strict, tally):
    """The `truthful` invariant for the faulted request's answer: (a label
    for the answer, problems, the POST's id when the answer names it)."""
    status, _, body, whole, code, _ = answer
    problems = []
    try:
        doc = json.loads(body) if whole and body else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        doc = {}
    posted_id = doc.get("id") if scenario.is_post else None
    if status is None or not whole:
        tally["no whole answer"] += 1
        label, allowed = "no whole answer (exit %s)" % code, "either"
    elif status < 300:
        failed_items = [r for r in doc.get("results", []) if r.get("status", 0) >= 500]
        label, allowed = "answered %s" % status, "either" if failed_items else "after"
    elif status < 500:
        label, allowed = "answered %s" % status, "nothing"
    else:
        changed = doc.get("changed")
        label = "%s changed=%s" % (status, changed)
        if changed is None and status != 503:
            tally["5xx without \"changed\""] += 1
            if strict:
                problems.append("no \"changed\" in the answer")
            # Until every 5xx carries "changed", its words are taken at face
            # value (the 503 time-out's "nothing was written" only means the
            # program gave up: a maybe).
            changed = legacy_changed(doc)
            label = "%s without \"changed\"" % status
        allowed = {"no": "nothing", "yes": "after"}.get(changed, "either")
        if doc.get("changed") in ("yes", "maybe") and scenario.is_post and not posted_id:
            problems.append("POST answered %s changed=%s without the \"id\" it chose" % (status, changed))
        label += " %r" % str(doc.get("error", ""))[:110]
    if allowed == "nothing":
        problems += exact_problems(scenario, state, expect)
    else:
        problems += visible_problems(scenario, state, expect, allowed, posted_id)
    return label, problems, posted_id


def legacy_changed(doc):
    """What an error sentence without "changed" says of the data."""
    error = str(doc.get("error", "")) if isinstance(doc, dict) else ""
    if "nothing was written" in error or "stored data is unchanged" in error:
        return "no"
    if "the change was made" in error:
        return "yes"
    return "maybe"


def retry_request(scenario, posted_id):
    if scenario.is_post and posted_id:
        return put(posted_id, 0, scenario.request.body)
    return scenario.request


def judge_retry(scenario, answer, after_fault, expect):
    """The `recoverable` invariant's answer: 2xx; a DELETE already done may answer 404."""
    status, _, body, whole, code, _ = answer
    if not whole or status is None:
        return ["the retry gave no whole answer (exit %s)" % code]
    gone = [k for k in scenario.settings_keys if after_fault.visible.get(k) is None] if scenario.kind == "settings" \
        else [i for i, v in after_fault.visible.items() if v is None]
    if scenario.is_delete and status == 404:
        target = scenario.settings_keys[0] if scenario.kind == "settings" else scenario.request.path.rsplit("/", 1)[1]
        return [] if target in gone else ["the retried DELETE answers 404, but the target was still there"]
    if not 200 <= status < 300:
        return ["the retry answers %s %r" % (status, body[:200])]
    if scenario.is_bulk:
        problems = []
        for item, result in zip(BULK["messages"], json.loads(body).get("results", [])):
            ok = result.get("status") in (200, 201, 204) or (
                item.get("deleted") and result.get("status") == 404 and item["id"] in gone)
            if not ok:
                problems.append("the retried bulk's item %s answers %s" % (item["id"], result))
        return problems
    return []


# ---------------------------------------------------------------- one fault

class Context:
    """What a worker needs: built in the parent before the pool forks."""
    cgi_bin = None
    work = None
    seeds = {}          # (seed name, signed) -> directory
    keys_file = None
    expectations = {}   # (scenario index, signed) -> Expectation
    strict = True
    fastcgi = False     # --fastcgi: traced requests go to a worker (run_fastcgi)


def scenario_env(scenario, signed):
    env = dict(scenario.env)
    if signed:
        env["MOCKCLOUD_HMAC_KEYS"] = Context.keys_file
    return env


def copy_seed(seed, data):
    # shutil.copy, not copy2: fresh mtimes, so that no lock file looks stale
    # and no sweep runs that the unfaulted count did not see.
    shutil.copytree(seed, data, symlinks=True, copy_function=shutil.copy)


def one_fault(index, signed, fault, scratch, tally, plant=None):
    """Runs one fault check; returns its problems (empty: passed). `plant`
    (the self-test's) maps a stage ("answer", "after fault", "after retry")
    to a planted defect: a function of the answer or of the data directory."""
    plant = plant or {}
    scenario = SCENARIOS[index]
    env = scenario_env(scenario, signed)
    expect = Context.expectations[(index, signed)]
    cgi_bin = Context.cgi_bin
    data = os.path.join(scratch, "data")
    shutil.rmtree(data, ignore_errors=True)
    copy_seed(Context.seeds[(scenario.seed, signed)], data)
    problems = []
    answer = run_program(cgi_bin, scenario.request, data, env, fault, os.path.join(scratch, "trace"))
    if not answer[5]:
        tally["fault not reached"] += 1
    if answer[4] == "ignored SIGTERM":
        # Counted, not failed: the master's stop races its start of a
        # replacement worker (a SIGTERM between its check and its wait4 is
        # lost; reported to the mode's owner). What this test judges is the
        # answer and the store, which the SIGKILL after it leaves as they are.
        tally["pool still running 10 s after SIGTERM (then SIGKILLed)"] += 1
    if "answer" in plant:
        answer = plant["answer"](answer)
    ids = set(expect.before.visible) | set(expect.after.visible) | scenario.ids
    after_fault = observe(cgi_bin, scenario, data, env, ids)
    problems += ["after the fault: " + p for p in after_fault.problems]
    if "after fault" in plant:
        plant["after fault"](data)
    label, truth, posted_id = judge_answer(scenario, answer, after_fault, expect, Context.strict, tally)
    problems += ["%s: %s" % (label, p) for p in truth]
    if scenario.kind == "inbox" and expect.before.anchor:
        compare_follow(cgi_bin, env, data, expect.before, after_fault, problems.append,
                       "taken before the fault, after the fault,")

    retry = retry_request(scenario, posted_id)
    again = run_program(cgi_bin, retry, data, env)
    problems += ["retry %s: %s" % (retry, p) for p in judge_retry(scenario, again, after_fault, expect)]
    ids |= set(after_fault.visible)
    if scenario.is_post and again[3] and again[0] in (200, 201):
        posted_id = posted_id or json.loads(again[2]).get("id")
    if "after retry" in plant:
        plant["after retry"](data)
    if scenario.kind == "inbox" and os.path.exists(os.path.join(data, "inbox", KEY, ".~changes.log")):
        # A new log half written (a compaction's, a first write's): the retry's own replaces it.
        problems.append("after the retry: a half-written change log (.~changes.log) is left")
    if scenario.kind == "inbox":
        # One more write: its seq must be new, above all the fault left.
        probe = run_program(cgi_bin, put(PROBE, 1, {"probe": True}), data, env)
        if probe[0] != 201 or not probe[3]:
            problems.append("a new message written after the retry answers %s %r" % (probe[0], probe[2][:160]))
        ids.add(PROBE)
    final = observe(cgi_bin, scenario, data, env, ids)
    problems += ["after the retry: " + p for p in final.problems]
    probe_state = final.exact.pop(PROBE, None)
    final.visible.pop(PROBE, None)
    if isinstance(probe_state, tuple):
        above = [(i, e[1]) for i, e in final.exact.items() if isinstance(e, tuple) and e[1] >= probe_state[1]]
        above += [(e[0], e[3]) for e in after_fault.feed if e[3] >= probe_state[1]]
        if above:
            problems.append("the write after the retry got seq %d, not above %s" % (probe_state[1], sorted(set(above))))
    settled = visible_problems(scenario, final, expect, "after", posted_id)
    if scenario.is_post:
        fresh = new_ids(final, expect.before)
        # Without an id in the first answer the client could only POST again.
        if len(fresh) == 2 and not posted_id_known(answer):
            settled = [p for p in settled if "new messages exist" not in p]
            tally["POST duplicated after an answer without an id"] += 1
    problems += ["after the retry: " + p for p in settled]
    if scenario.kind == "inbox":
        if expect.before.anchor:
            compare_follow(cgi_bin, env, data, expect.before, final, problems.append,
                           "taken before the fault, after the retry,")
        if after_fault.anchor:
            compare_follow(cgi_bin, env, data, after_fault, final, problems.append,
                           "taken after the fault, after the retry,")
        shown = set(after_fault.feed)
        reused = [e for e in final.feed if e not in shown and e[3] <= after_fault.max_seq]
        if reused:
            problems.append("after the retry: %s written at seq <= %d, a seq the feed had already shown" % (
                ["%s seq %d" % (e[0], e[3]) for e in reused], after_fault.max_seq))
    return problems


def posted_id_known(answer):
    status, _, body, whole, _, _ = answer
    if not whole or status is None:
        return False
    try:
        return bool(json.loads(body).get("id"))
    except (ValueError, AttributeError):
        return False


def run_group(task):
    """All the N of one scenario x signed x syscall x errno, in one worker."""
    index, signed, syscall, errno, ns = task
    scratch = stresslib.make_temp_dir("group.", Context.work)
    tally = collections.Counter()
    failures = []
    try:
        for n in ns:
            try:
                problems = one_fault(index, signed, (syscall, errno, n), scratch, tally)
            except Exception as exc:      # a harness failure is a failed check too
                problems = ["the harness failed: %s: %s" % (type(exc).__name__, exc)]
            if problems:
                failures.append((n, problems))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return task, failures, tally


# ---------------------------------------------------------------- self-test

def cut_last_record(data):
    """Takes the change log's last record back, as main's commit did."""
    log = os.path.join(data, "inbox", KEY, "changes.log")
    os.truncate(log, os.path.getsize(log) - 256)


def lock_in_the_way(data):
    """A directory where the settings lock file belongs: every write fails."""
    lock = os.path.join(data, ".locks", "user_settings.%s.lock" % KEY)
    os.unlink(lock)
    os.mkdir(lock)


def restore_from_seed(name):
    def restore(data):
        seed = Context.seeds[("base", False)]
        shutil.copy(os.path.join(seed, name), os.path.join(data, name))
    return restore


def false_no(answer):
    return 500, {}, b'{"error": "planted", "changed": "no"}', True, 0, answer[5]


# (invariant, scenario, plant, the words the check must then print). The
# fault is the program's first newfstatat (the runtime's own, at start): the
# request itself succeeds, and each plant makes one invariant false.
PLANTS = [
    ("truthful", "settings PUT replace", {"answer": false_no}, "changed=no"),
    ("consistent", "inbox PUT new", {"after retry": cut_last_record}, "but the full feed never lists it"),
    ("no reuse", "inbox PUT new", {"after fault": cut_last_record}, "the write after the retry got seq"),
    ("recoverable (the retry)", "settings PUT replace", {"after fault": lock_in_the_way}, "the retry answers 500"),
    ("recoverable (the after-state)", "inbox PUT replace",
     {"after retry": restore_from_seed("inbox/%s/messages/m1.json" % KEY)}, "after the retry: m1 is version 1"),
]


def self_test(checks, scratch):
    """Each invariant's check fails on a planted defect: a checker that
    cannot fail proves nothing."""
    for invariant, name, plant, words in PLANTS:
        index = next(i for i, s in enumerate(SCENARIOS) if s.name == name)
        if (index, False) not in Context.expectations:
            continue
        fault = ("newfstatat", "EIO", 1)
        control = one_fault(index, False, fault, scratch, collections.Counter())
        problems = one_fault(index, False, fault, scratch, collections.Counter(), plant)
        caught = any(words in line for line in problems)
        checks.check("self-test: %s catches a planted defect in %s" % (invariant, name),
                     ["without the plant: %s" % line for line in control]
                     + ([] if caught else ["the check did not say %r; it said %s" % (words, problems[:5])]))


# ---------------------------------------------------------------- set-up

def build_seed(cgi_bin, name, signed, directory):
    data = os.path.join(directory, "seed-%s-%s" % (name, "signed" if signed else "unsigned"))
    os.mkdir(data, 0o700)
    env = {"MOCKCLOUD_HMAC_KEYS": Context.keys_file} if signed else {}
    for request in SEEDS[name]:
        status, _, body, whole, code, _ = run_program(cgi_bin, request, data, env)
        if not whole or status not in (200, 201, 204):
            raise RuntimeError("seed %s: %s answered %s %r" % (name, request, status, body[:200]))
    return data


def prepare(index, signed, scratch):
    """Before and after states of a scenario, and its system call counts."""
    scenario = SCENARIOS[index]
    env = scenario_env(scenario, signed)
    cgi_bin = Context.cgi_bin
    seed = Context.seeds[(scenario.seed, signed)]
    data = os.path.join(scratch, "prepare")
    shutil.rmtree(data, ignore_errors=True)
    copy_seed(seed, data)
    ids = set(scenario.ids) | {m for m in ("m1", "m2", "m3", "d1")}
    before = observe(cgi_bin, scenario, data, env, ids)
    if before.problems:
        raise RuntimeError("%s: the seed is not consistent: %s" % (scenario.name, before.problems))
    trace = os.path.join(scratch, "count.trace")
    answer = run_program(cgi_bin, scenario.request, data, env, STORAGE_CALLS, trace)
    counts, processes = count_calls(trace)
    if not answer[3] or not 200 <= (answer[0] or 0) < 300:
        raise RuntimeError("%s: the unfaulted request answered %s %r" % (scenario.name, answer[0], answer[2][:200]))
    after = observe(cgi_bin, scenario, data, env, ids | set(before.visible))
    if after.problems:
        raise RuntimeError("%s: the unfaulted request left an inconsistent state: %s" % (scenario.name, after.problems))
    posted_body = body_text(json.loads(scenario.request.body)) if scenario.is_post else None
    if scenario.is_post:
        # The server picks another id each time: the after state is judged by
        # the new ids, not by this one.
        for ident in new_ids(after, before):
            after.visible.pop(ident)
    shutil.rmtree(data, ignore_errors=True)
    return Expectation(before, after, posted_body), counts, processes


def sampled(count, quick):
    if not quick:
        return list(range(1, count + 1))
    return sorted({n for n in (1, 2, (count + 1) // 2, count - 1, count) if 1 <= n <= count})


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgi-bin", default=stresslib.DEFAULT_CGI_BIN)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="sample N instead of every occurrence")
    parser.add_argument("--only", help="scenarios whose name contains this text")
    parser.add_argument("--syscall", action="append", help="only this system call (repeatable)")
    parser.add_argument("--unsigned-only", action="store_true")
    strict = parser.add_mutually_exclusive_group()
    strict.add_argument("--strict-changed", dest="strict", action="store_true", default=True,
                        help="a write's 5xx without \"changed\" fails (the default)")
    strict.add_argument("--lenient-changed", dest="strict", action="store_false",
                        help="a write's 5xx without \"changed\" is only counted")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--fastcgi", action="store_true",
                        help="the faulted request served by a FastCGI worker with --max-requests 1")
    # tmpfs when there is one: the checks' fsyncs then cost nothing, and the
    # faults are injected, not waited for.
    parser.add_argument("--tmp", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else "/tmp",
                        help="where the data directories live (default /dev/shm, else /tmp)")
    return parser.parse_args()


def fault_tasks(args, work):
    """The seeds built and each scenario's expectation prepared; one task
    per (scenario, signing, system call, errno) with the occurrences N to fault."""
    Context.keys_file = os.path.join(work, "hmac.keys")
    stresslib.write_hmac_keys(Context.keys_file, "faults1")
    signings = [False] if args.unsigned_only else [False, True]
    for name in SEEDS:
        for signed in signings:
            Context.seeds[(name, signed)] = build_seed(Context.cgi_bin, name, signed, work)
    tasks = []
    for index, scenario in enumerate(SCENARIOS):
        if args.only and args.only not in scenario.name:
            continue
        for signed in signings:
            expect, counts, processes = prepare(index, signed, work)
            Context.expectations[(index, signed)] = expect
            if processes > 1:
                print("note: %s ran %d processes; strace -f counts each" % (scenario.name, processes))
            for syscall in STORAGE_CALLS:
                if counts[syscall] == 0 or (args.syscall and syscall not in args.syscall):
                    continue
                for errno in ["EIO"] + (["ENOSPC"] if syscall in ENOSPC_CALLS else []) + (
                        [KILL] if scenario.killed else []):
                    tasks.append((index, signed, syscall, errno, sampled(counts[syscall], args.quick)))
    return tasks


def run_tasks(args, tasks):
    """Every fault check, `args.jobs` at a time, a line per group; (passed, failed, what was tallied)."""
    passed = failed = 0
    groups = suite.Checks()     # prints the groups' lines; the totals count fault checks
    tally = collections.Counter()
    with multiprocessing.Pool(args.jobs) as pool:
        for task, failures, counts in pool.imap(run_group, tasks):
            index, signed, syscall, errno, ns = task
            tally.update(counts)
            name = "%s (%s) %s %s, N=1..%d" % (SCENARIOS[index].name, "signed" if signed else "unsigned",
                                              syscall, errno, max(ns))
            by_problem = collections.OrderedDict()
            for n, problems in failures:
                for line in problems:
                    by_problem.setdefault(line, []).append(n)
            lines = ["N=%s: %s" % (",".join(map(str, ns_)), line) for line, ns_ in by_problem.items()]
            failed += len(failures)
            passed += len(ns) - len(failures)
            groups.check(name, lines)
    return passed, failed, tally


def main():
    args = parse_args()
    Context.cgi_bin = os.path.abspath(args.cgi_bin)
    Context.strict = args.strict
    Context.fastcgi = args.fastcgi
    checks = suite.Checks()
    if not os.access(STRACE, os.X_OK):
        checks.check("strace is installed (the injector)", ["no strace at %s" % STRACE])
        return checks.summary()
    started = time.monotonic()
    work = stresslib.make_temp_dir("mcf.", args.tmp)
    Context.work = work
    try:
        tasks = fault_tasks(args, work)
        # The checker's own test, as CGI in both runs: its plants are timed
        # to the CGI program's calls, and the checker is the same.
        Context.fastcgi = False
        self_test(checks, work)
        Context.fastcgi = args.fastcgi
        total = sum(len(task[4]) for task in tasks)
        print("%d fault checks in %d groups (%s), %d at a time" % (
            total, len(tasks), "sampled N" if args.quick else "every occurrence", args.jobs), flush=True)
        passed, failed, tally = run_tasks(args, tasks)
        seconds = time.monotonic() - started
        print("%d fault checks, %d failed, in %.1f s (%d jobs)%s" % (
            total, failed, seconds, args.jobs,
            "".join("; %s: %d" % item for item in sorted(tally.items()))), flush=True)
    finally:
        if args.keep:
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    # The summary counts fault checks (and the self-test's), not groups.
    checks.passed += passed
    checks.failed += failed
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
