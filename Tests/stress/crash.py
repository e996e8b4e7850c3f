#!/usr/bin/env python3
"""SIGKILL the programs in the middle of writes, then prove nothing was lost.

    crash.py [--cgi-bin DIR] [--ops 600] [--kill-share 0.7] [--max-delay-ms 3]
             [--parallel 4] [--seed 1] [--hmac] [--seconds 300] [--json FILE]

Writers run the built programs directly as processes, the way fcgiwrap runs
them (CGI environment, body on stdin): PUT /user/settings with an increasing
updatedAt on a few keys, and PUT /inbox/<id> with new ids, replacements at a
higher X-Sync-Version and some deletions, several at a time. A --kill-share
of them get SIGKILL a random 0..--max-delay-ms after they started. A write is
acknowledged when its whole 200/201/204 answer (Content-Length bytes) was on
stdout; a process killed after that still counts as acknowledged, since
fcgiwrap would have passed the answer on.

Then, with no process running, it proves:
  - the data directory is whole: settings files are JSON objects in the
    Python layout, envelopes parse and name their id, change logs hold whole
    256-byte records in seq order (a torn record only at the very end), and
    every stored message's seq is in its log;
  - no acknowledged write is lost: each settings key's stored updatedAt is at
    least its latest acknowledged one; each acknowledged inbox id is there
    with at least the acknowledged version (404 once a deletion was
    acknowledged);
  - the programs serve it: GET of every key and message answers 200 with
    what is on disk (with --hmac, every MAC sidecar verifies: no 500);
  - the feed read from no anchor (pages of 7 and of 1000) lists every live
    message exactly once, in its stored state, and nothing else;
  - temporary files the kills left behind are never taken for data (the
    feed, the GETs and, with --hmac, `mockcloud-admin verify` skip them);
  - after one more unkilled write per key the logs have no torn tail and
    every key takes writes again.

Bounded: --ops processes, --seconds in all. Prints the figures (kills
injected, acknowledged writes, files checked) and `N passed, M failed`.
"""
import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import cgi_program  # noqa: E402  (Tests/support/, on the path stresslib sets)
import suite  # noqa: E402

SETTINGS_KEYS = ["ck0", "ck1", "ck2", "ck3"]
INBOX_KEYS = ["ci0", "ci1"]


def stamp(n):
    """The updatedAt of settings write number n: 2026-01-01 plus n milliseconds."""
    seconds, millis = divmod(n, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return "2026-01-01T%02d:%02d:%02d.%03dZ" % (hours, minutes, seconds, millis)


class Plan:
    """Chooses the next write and remembers what was acknowledged; shared by
    the worker threads under one lock."""

    def __init__(self, seed, ops):
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.left = ops
        self.settings_n = collections.Counter()         # key -> last n handed out
        self.settings_ack = {}                          # key -> highest acknowledged n
        self.versions = {}                              # (key, id) -> last version handed out
        self.inbox_ack = {}                             # (key, id) -> highest acknowledged version
        self.retired = set()                            # ids a deletion was sent for
        self.deleted_ack = set()
        self.busy = collections.Counter()               # (key, id) -> writes in flight
        self.next_id = 0
        self.stats = collections.Counter()
        self.errors = []

    def next(self):
        with self.lock:
            if self.left <= 0:
                return None
            self.left -= 1
            rng = self.rng
            pad = "p" * rng.choice([0, 10, 200, 4000, 30000])
            if rng.random() < 0.5:
                key = rng.choice(SETTINGS_KEYS)
                self.settings_n[key] += 1
                n = self.settings_n[key]
                body = json.dumps({"updatedAt": stamp(n), "n": n, "pad": pad}).encode()
                return ("settings", key, n, "user-settings", "PUT", "/user/settings", {"X-User-Key": key}, body)
            key = rng.choice(INBOX_KEYS)
            live = [i for i in self.versions if i[0] == key and i not in self.retired]
            choice = rng.random()
            if not live or choice < 0.4:
                self.next_id += 1
                ident = (key, "m%04d" % self.next_id)
                self.versions[ident] = rng.randrange(3)
                kind = "put"
            else:
                ident = rng.choice(live)
                idle = [i for i in live if self.busy[i] == 0]
                if choice > 0.9 and idle:
                    ident = rng.choice(idle)
                    self.retired.add(ident)
                    self.busy[ident] += 1
                    return ("delete", key, ident, "inbox", "DELETE", "/inbox/" + ident[1],
                            {"X-User-Key": key}, b"")
                self.versions[ident] += 1
                kind = "put"
            version = self.versions[ident]
            self.busy[ident] += 1
            body = json.dumps({"id": ident[1], "v": version, "pad": pad}).encode()
            return (kind, key, (ident, version), "inbox", "PUT", "/inbox/" + ident[1],
                    {"X-User-Key": key, "X-Sync-Version": str(version), "X-Device-Id": "crash"}, body)

    def record(self, op, status, whole, killed, returncode):
        kind, key, what = op[0], op[1], op[2]
        with self.lock:
            self.stats["processes"] += 1
            if killed:
                self.stats["kills injected"] += 1
            if kind != "settings":
                self.busy[what if kind == "delete" else what[0]] -= 1
            if not whole:
                if not killed:
                    self.errors.append("%s %s: exit %s without a whole answer" % (op[4], op[5], returncode))
                return
            if killed:
                self.stats["killed after a whole answer"] += 1
            if kind == "settings":
                if status == 200:
                    self.stats["settings writes acknowledged"] += 1
                    self.settings_ack[key] = max(self.settings_ack.get(key, 0), what)
                elif status != 409:
                    self.errors.append("PUT /user/settings %s n=%d: status %s" % (key, what, status))
            elif kind == "put":
                ident, version = what
                if status in (200, 201):
                    self.stats["inbox writes acknowledged"] += 1
                    self.inbox_ack[ident] = max(self.inbox_ack.get(ident, -1), version)
                elif status != 409:
                    self.errors.append("PUT /inbox/%s v%d: status %s" % (ident[1], version, status))
            else:
                if status == 204:
                    self.stats["inbox deletions acknowledged"] += 1
                    self.deleted_ack.add(what)
                elif status != 404:
                    self.errors.append("DELETE /inbox/%s: status %s" % (what[1], status))


def run_one(args, plan, rng_lock, rng, env_extra, data):
    op = plan.next()
    if op is None:
        return False
    _, _, _, program, method, path, headers, body = op
    with rng_lock:
        kill = rng.random() < args.kill_share
        delay = rng.uniform(0, args.max_delay_ms) / 1000.0
    env = cgi_program.environment(method, path, data, headers, body=body, extra=env_extra)
    out, err, returncode, _ = stresslib.run_killed(os.path.join(args.cgi_bin, program), env, body,
                                                   delay if kill else None)
    killed = returncode == -signal.SIGKILL
    status, _, _, whole, = cgi_program.parse_output(out)[:4]
    plan.record(op, status, whole, killed, returncode)
    if err and not killed:
        with plan.lock:
            plan.errors.append("%s %s: stderr %r" % (method, path, err[:300]))
    return True


def program(args, env_extra, data, name, method, path, headers=None, query="", body=b""):
    return cgi_program.run(os.path.join(args.cgi_bin, name), method, path, data, headers, query, body, env_extra)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgi-bin", default=stresslib.DEFAULT_CGI_BIN)
    parser.add_argument("--ops", type=int, default=600)
    parser.add_argument("--kill-share", type=float, default=0.7)
    parser.add_argument("--max-delay-ms", type=float, default=3.0)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hmac", action="store_true", help="sign stored data (MAC sidecars) while crashing")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    args.cgi_bin = os.path.abspath(args.cgi_bin)
    return args


def run_writers(args, plan, env_extra, data):
    """The plan's writes by `args.parallel` threads, each process maybe
    killed; (seconds taken, the harness's own failures)."""
    deadline = time.monotonic() + args.seconds
    rng, rng_lock = random.Random(args.seed * 7919 + 1), threading.Lock()
    failures = []

    def worker():
        try:
            while time.monotonic() < deadline and run_one(args, plan, rng_lock, rng, env_extra, data):
                pass
        except Exception as exc:          # a failure of the harness, not of the programs
            failures.append("%s: %s" % (type(exc).__name__, exc))

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if plan.left > 0:
        failures.append("only %d of %d writes ran within %s s" % (args.ops - plan.left, args.ops, args.seconds))
    return time.monotonic() - started, failures


def store_a_temporary_looking_message(args, plan, env_extra, data):
    """A valid message id that starts like a temporary file's name: data
    that tools must not mistake for a temporary file."""
    ident = (INBOX_KEYS[0], ".tmp-hidden")
    status, _, body, whole, _ = program(args, env_extra, data, "inbox", "PUT", "/inbox/" + ident[1],
                                        {"X-User-Key": ident[0]}, body=b'{"looks": "temporary"}')
    if status in (200, 201) and whole:
        plan.inbox_ack[ident] = 0
    else:
        plan.errors.append("PUT /inbox/.tmp-hidden: %s %r" % (status, body[:200]))


def lost_writes(plan, report):
    """Acknowledged writes the data directory does not hold."""
    lost = []
    for key, n in sorted(plan.settings_ack.items()):
        doc = report.settings.get(key)
        if doc is None:
            lost.append("settings %s: acknowledged n=%d, no file" % (key, n))
        elif doc.get("n", 0) < n or doc.get("updatedAt") != stamp(doc.get("n", 0)):
            lost.append("settings %s: acknowledged n=%d (%s), stored %r" % (key, n, stamp(n),
                                                                             {k: doc.get(k) for k in ("n", "updatedAt")}))
    for ident, version in sorted(plan.inbox_ack.items()):
        if ident in plan.deleted_ack:
            continue
        state = report.live.get(ident)
        if state is None and ident not in plan.retired:
            lost.append("inbox %s/%s: acknowledged version %d, not stored" % (ident[0], ident[1], version))
        elif state is not None and state["version"] < version:
            lost.append("inbox %s/%s: acknowledged version %d, stored %d" % (ident[0], ident[1], version,
                                                                             state["version"]))
    for ident in sorted(plan.deleted_ack):
        if ident in report.live:
            lost.append("inbox %s/%s: deletion acknowledged, still live" % ident)
    return lost


def served_differently(args, plan, env_extra, data, report):
    """Answers of the programs that differ from what the directory holds."""
    served = []
    for key in SETTINGS_KEYS:
        status, headers, body, whole, _ = program(args, env_extra, data, "user-settings", "GET", "/user/settings",
                                                  {"X-User-Key": key})
        if key in report.settings:
            if status != 200 or not whole or json.loads(body) != report.settings[key] or "etag" not in headers:
                served.append("GET settings %s: %s %r" % (key, status, body[:200]))
        elif status != 404:
            served.append("GET settings %s (no file): %s %r" % (key, status, body[:200]))
    for (key, ident), state in sorted(report.live.items()):
        status, _, body, whole, _ = program(args, env_extra, data, "inbox", "GET", "/inbox/" + ident,
                                            {"X-User-Key": key})
        if status != 200 or not whole or json.loads(body) != state:
            served.append("GET /inbox/%s (%s): %s %r" % (ident, key, status, body[:200]))
    for key, ident in sorted(plan.deleted_ack):
        status, _, body, _, _ = program(args, env_extra, data, "inbox", "GET", "/inbox/" + ident,
                                        {"X-User-Key": key})
        if status != 404:
            served.append("GET deleted /inbox/%s: %s %r" % (ident, status, body[:200]))
    return served


def feed_differences(args, env_extra, data, report):
    """The feed from no anchor, in pages of 7 and of 1000, against the live messages."""
    problems = []
    for key in INBOX_KEYS:
        live = {i: d for (k, i), d in report.live.items() if k == key}
        for limit in (7, 1000):
            messages, deleted, read = stresslib.read_feed(os.path.join(args.cgi_bin, "inbox"), env_extra, data, key, limit)
            problems += read
            ids = [m["id"] for m in messages]
            twice = [i for i, c in collections.Counter(ids + [d["id"] for d in deleted]).items() if c > 1]
            if twice:
                problems.append("feed %s limit %d: ids listed twice: %s" % (key, limit, twice[:5]))
            if set(ids) != set(live):
                problems.append("feed %s limit %d: missing %s, extra %s" % (
                    key, limit, sorted(set(live) - set(ids))[:5], sorted(set(ids) - set(live))[:5]))
            for message in messages:
                if message["id"] in live and message != live[message["id"]]:
                    problems.append("feed %s: %s is not its stored state" % (key, message["id"]))
                if stresslib.TEMPORARY.match(message["id"]):
                    problems.append("feed %s: a temporary file listed as %s" % (key, message["id"]))
    return problems


def verify_problems(args, env_extra, data, report):
    """mockcloud-admin verify over the directory: passes, counts every stored document, names no temporary file."""
    admin = subprocess.run([os.path.join(args.cgi_bin, "mockcloud-admin"), "verify", data],
                           env={"PATH": "/usr/bin:/bin", "MOCKCLOUD_HMAC_KEYS": env_extra["MOCKCLOUD_HMAC_KEYS"]},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    text = admin.stdout.decode(errors="replace")
    bad = [] if admin.returncode == 0 else ["exit %d: %s" % (admin.returncode, text[-800:])]
    bad += ["names a temporary file: " + line for line in text.splitlines()
            if any(stresslib.TEMPORARY.match(part.rsplit("/", 1)[-1]) for part in line.split())]
    counted = re.search(r"checked (\d+) documents", text)
    stored = report.settings_files + report.messages
    if not counted or int(counted.group(1)) != stored:
        bad.append("it checked %s documents; %d are stored (settings files and messages, "
                   "the message .tmp-hidden among them)" % (counted.group(1) if counted else "?", stored))
    return bad


def heal(args, plan, env_extra, data):
    """One more write per key, unkilled: (problems, the directory's report after them)."""
    healed = []
    for key in SETTINGS_KEYS:
        plan.settings_n[key] += 1
        n = plan.settings_n[key]
        status, _, body, whole, _ = program(args, env_extra, data, "user-settings", "PUT", "/user/settings",
                                            {"X-User-Key": key},
                                            body=json.dumps({"updatedAt": stamp(n), "n": n}).encode())
        if status != 200 or not whole:
            healed.append("PUT settings %s after the kills: %s %r" % (key, status, body[:200]))
    for key in INBOX_KEYS:
        plan.next_id += 1
        status, _, body, whole, _ = program(args, env_extra, data, "inbox", "PUT", "/inbox/after-%d" % plan.next_id,
                                            {"X-User-Key": key}, body=b'{"after": true}')
        if status != 201 or not whole:
            healed.append("PUT /inbox after the kills (%s): %s %r" % (key, status, body[:200]))
    final = stresslib.check_data_dir(data, allow_torn=False, allow_temporary=True)
    return healed + final.problems, final


def report_figures(args, plan, checks, seconds, report, final):
    temporaries = len(report.temporary)
    figures = dict(plan.stats)
    figures.update({
        "ops": args.ops, "seed": args.seed, "hmac": args.hmac, "max_delay_ms": args.max_delay_ms,
        "kill_share": args.kill_share, "seconds": round(seconds, 1), "files_checked": report.files_checked,
        "files_checked_after_heal": final.files_checked, "temporary files left by kills": temporaries,
        "torn log tails seen": report.torn_tails, "orphan log records": report.orphan_records,
        "tombstone files left by compaction": report.stale_tombstones,
        "acknowledged keys/ids": len(plan.settings_ack) + len(plan.inbox_ack) + len(plan.deleted_ack),
        "failed_checks": checks.failed,
    })
    print("figures: " + ", ".join("%s: %s" % (k, v) for k, v in sorted(figures.items())))
    if temporaries:
        print("note: %d temporary files (.~*) are left by the kills, at most one per document; the next write of that document replaces it" % temporaries)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1)


def main():
    args = parse_args()
    work = stresslib.make_temp_dir("mcc.")
    data = os.path.join(work, "data")
    os.mkdir(data, 0o700)
    # Compaction every few records, dropping every deletion at once (horizon
    # 0), so that kills land in it and in the removal of tombstone files too.
    env_extra = {"MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": "16", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": "0"}
    if args.hmac:
        env_extra["MOCKCLOUD_HMAC_KEYS"] = stresslib.write_hmac_keys(os.path.join(work, "hmac.keys"), "crash1")
    checks = suite.Checks()
    try:
        plan = Plan(args.seed, args.ops)
        seconds, failures = run_writers(args, plan, env_extra, data)
        checks.check("%d writer processes ran, %d SIGKILLed (%.1f s)" % (
            plan.stats["processes"], plan.stats["kills injected"], seconds), failures)
        checks.check("every process that was not killed answered whole, with an expected status", plan.errors)
        if args.hmac:
            store_a_temporary_looking_message(args, plan, env_extra, data)

        # ---- the data directory as a crash left it
        report = stresslib.check_data_dir(data, allow_torn=True, allow_temporary=True)
        checks.check("the data directory is whole after the kills (%d files)" % report.files_checked, report.problems)
        checks.check("no acknowledged write is lost (%d settings keys, %d inbox ids, %d deletions)" % (
            len(plan.settings_ack), len(plan.inbox_ack), len(plan.deleted_ack)), lost_writes(plan, report))
        checks.check("the programs serve exactly what is stored (%d settings, %d messages%s)" % (
            len(report.settings), len(report.live), ", every MAC verifies" if args.hmac else ""),
            served_differently(args, plan, env_extra, data, report))
        checks.check("the feed from no anchor lists every live message exactly once, as stored",
                     feed_differences(args, env_extra, data, report))
        if args.hmac:
            checks.check("mockcloud-admin verify passes, checks every stored document and no temporary file",
                         verify_problems(args, env_extra, data, report))

        # ---- one more write per key, unkilled: the store heals and takes writes
        healed, final = heal(args, plan, env_extra, data)
        checks.check("after one unkilled write per key: every key takes writes, no torn log tail (%d files)"
                     % final.files_checked, healed)
        report_figures(args, plan, checks, seconds, report, final)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("data kept in " + data)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
