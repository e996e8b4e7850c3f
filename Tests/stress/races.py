#!/usr/bin/env python3
"""Races held open at the named point, through the programs run directly as
fcgiwrap runs them: one process is stopped inside a system call (strace's
`-e inject=SYSCALL:delay_enter=...:when=N`, N found by tracing the same
request first) while another runs. Five races:

    races.py [--cgi-bin DIR] [--rounds 3] [--only a|b|c|d|e]

  (a) a key's first write (a bulk that creates the inbox) vs a feed read
      from no anchor that found no lock file and no log: the reader is held
      at its open of the log while the writer appends its records and is
      held before its renames. The reader must not step its anchor past a
      message it did not return: following from its anchor after the write,
      it ends with what a full read shows.
  (b) a signed GET (/user/settings and /inbox/<id>) held between reading
      the document and its .mac sidecar while a writer replaces the same
      document: no false integrity 500 (the old or the new document, 200).
  (c) the temporary-file sweep vs a slow writer: a settings writer of key A
      held at the fsync of its temporary `.~A.json` while writers of key B
      (the same folder) run with B's lock file aged past 30 s, so that they
      sweep: as is; with A's temporary 60 s old (a clock step, or a disk
      that stalled); and with B's sweep held at its unlinkat of A's 60 s old
      leftover (a killed writer's) while A removes that leftover and creates
      its live temporary under the same name. A's write must still answer
      200 and be stored; B's too; nothing live is removed.
  (d) compaction failing: with compaction due (MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=4,
      horizon 0), the rename of the rewritten log, or a read of a message
      during compaction, fails. The write still answers 2xx with its change
      visible and in the feed; a following write, compaction failing again,
      answers 2xx too; a POST answers 201 (no retry, so no duplicate).
  (e) a compaction's long step vs the key's readers and writers: the write
      that makes compaction due is held in its compaction's build step (at
      its read of a message file) while a feed read, a new message, a
      replacement and a deletion of messages the build has yet to read run
      and a second feed read follows: each answers 2xx while the compaction
      is still held (they do not wait for it), and once it ends the
      compacted log holds every one of those writes (the catch-up), a
      reader following from its anchor ends with what a full read and every
      GET show, and no half-written log is left. Then the same compaction
      held at its swap (the rename of the new log, under the key's lock): a
      write that waited for it lands in the new log, its seq above all.

Prints ok/FAIL per race and round, then `N passed, M failed`.
"""
import argparse
import json
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import formats  # noqa: E402  (Tests/support/, on the path stresslib sets)
import suite  # noqa: E402
import faults  # noqa: E402
from faults import KEY, Request, put, settings_put  # noqa: E402

HOLD_MS = 400       # how long the held process waits inside its system call


def occurrence(cgi_bin, request, data, env, syscall, text, scratch, after=None):
    """N such that the Nth `syscall` of `request` (run unfaulted on a copy
    of `data`) is the first one whose strace line contains `text` (and comes
    after a line of any traced call containing `after`); None when none does."""
    copy = os.path.join(scratch, "probe-data")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data, copy, symlinks=True)     # mtimes kept: an aged lock stays aged
    trace = os.path.join(scratch, "probe.trace")
    traced = [syscall] + (["openat", "rename", "pwrite64", "fdatasync"] if after else [])
    faults.run_program(cgi_bin, request, copy, env, sorted(set(traced)), trace)
    shutil.rmtree(copy, ignore_errors=True)
    n, armed = 0, after is None
    for line in open(trace, errors="replace"):
        name = line.split(None, 1)[1].split("(", 1)[0] if " " in line else ""
        if after and after in line.replace(copy, data):
            armed = True
        if name != syscall:
            continue
        n += 1
        if armed and text in line.replace(copy, data):
            return n
    return None


def held(cgi_bin, request, data, env, scratch, name, spec):
    """Starts `request` under strace with the injection `spec`."""
    return faults.start_program(cgi_bin, request, data, env, os.path.join(scratch, name + ".trace"),
                                [spec.split(":", 1)[0]], [spec])


def answer_text(answer):
    return "%s %r (exit %s)" % (answer[0], answer[2][:200], answer[4])


def live_of(messages, deleted, start=None):
    live = dict(start or {})
    for m in messages:
        live[m["id"]] = (m["version"], m["seq"])
    for d in deleted:
        live.pop(d["id"], None)
    return live


# ---------------------------------------------------------------- (a)

def race_first_write(args, checks, scratch, round_):
    data = os.path.join(scratch, "a-data")
    shutil.rmtree(data, ignore_errors=True)
    os.mkdir(data, 0o700)
    inbox = os.path.join(args.cgi_bin, "inbox")
    bulk = Request("inbox", "POST", "/inbox:bulk", body={"messages": [
        {"id": "a%d-%d" % (round_, i), "version": 1, "body": {"i": i}} for i in range(5)]})
    reader = Request("inbox", "GET", "/inbox", query="limit=1000")
    problems = []
    # The reader's look for the log, made after it found no lock file.
    open_log = occurrence(args.cgi_bin, reader, data, {}, "newfstatat", "changes.log", scratch)
    first_rename = occurrence(args.cgi_bin, bulk, data, {}, "rename", "/messages/", scratch)
    if not open_log or not first_rename:
        checks.check("(a) round %d: the held points exist" % round_,
                     ["reader's look for the log: %s; writer's first message rename: %s" % (open_log, first_rename)])
        return
    # The reader finds no lock file and no log, then waits just after its
    # look for the log; the writer creates both, appends its records and
    # waits before renaming the message files while the reader goes on (a
    # reader that then opened the log would pass records whose files are
    # not in place yet).
    read = held(args.cgi_bin, reader, data, {}, scratch, "reader",
                "newfstatat:delay_exit=%dms:when=%d" % (HOLD_MS, open_log))
    time.sleep(HOLD_MS / 4000.0)
    write = held(args.cgi_bin, bulk, data, {}, scratch, "writer",
                 "rename:delay_enter=%dms:when=%d" % (2 * HOLD_MS, first_rename))
    read_answer, write_answer = faults.finish(read), faults.finish(write)
    if write_answer[0] != 200 or not write_answer[3]:
        problems.append("the bulk answers %s" % answer_text(write_answer))
    if read_answer[0] != 200 or not read_answer[3]:
        problems.append("the reader answers %s" % answer_text(read_answer))
    else:
        page = json.loads(read_answer[2])
        seen = live_of(page["messages"], page["deleted"])
        rest, deleted, _, more = stresslib.follow_feed(inbox, {}, data, KEY, 1000, anchor=page["anchor"])
        problems += more
        full, full_deleted, _, more = stresslib.follow_feed(inbox, {}, data, KEY, 1000)
        problems += more
        followed, whole = live_of(rest, deleted, seen), live_of(full, full_deleted)
        if followed != whole:
            problems.append("the reader returned %s with anchor %s; following from it it ends with %s, a full "
                            "read shows %s: it missed %s for good" % (
                                sorted(seen), page["anchor"], sorted(followed), sorted(whole),
                                sorted(set(whole) - set(followed))))
    held_ok = [name for name, answer in (("reader", read_answer), ("writer", write_answer)) if answer[5]]
    checks.check("(a) round %d: first write (a bulk creating the inbox) vs a feed read from no anchor, both held "
                 "(%s): the reader misses nothing" % (round_, ", ".join(held_ok) or "neither held!"),
                 problems + ([] if len(held_ok) == 2 else ["the delay was not injected into both"]))


# ---------------------------------------------------------------- (b)

def race_signed_read(args, checks, scratch, round_):
    keys = os.path.join(scratch, "b.keys")
    if not os.path.exists(keys):
        stresslib.write_hmac_keys(keys, "races1")
    env = {"MOCKCLOUD_HMAC_KEYS": keys}
    cases = [
        ("GET /user/settings", Request("user-settings", "GET", "/user/settings"),
         settings_put({"updatedAt": "2026-01-01T00:00:00Z", "n": 0}),
         lambda n: settings_put({"updatedAt": "2026-01-01T00:00:%02dZ" % n, "n": n})),
        ("GET /inbox/<id>", Request("inbox", "GET", "/inbox/s1"), put("s1", 0, {"n": 0}),
         lambda n: put("s1", n, {"n": n})),
    ]
    for name, reader, seed, replace in cases:
        data = os.path.join(scratch, "b-data")
        shutil.rmtree(data, ignore_errors=True)
        os.mkdir(data, 0o700)
        problems = []
        first = faults.run_program(args.cgi_bin, seed, data, env)
        if first[0] not in (200, 201):
            problems.append("seed write answers %s" % answer_text(first))
        sidecar = occurrence(args.cgi_bin, reader, data, env, "openat", ".mac", scratch)
        if not sidecar:
            checks.check("(b) round %d: %s reads a sidecar" % (round_, name), ["no openat of a .mac file"])
            continue
        read = held(args.cgi_bin, reader, data, env, scratch, "reader",
                    "openat:delay_enter=%dms:when=%d" % (HOLD_MS, sidecar))
        time.sleep(HOLD_MS / 4000.0)
        written = faults.run_program(args.cgi_bin, replace(round_ + 1), data, env)
        answer = faults.finish(read)
        if written[0] not in (200, 201):
            problems.append("the replace answers %s" % answer_text(written))
        if answer[0] != 200 or not answer[3]:
            problems.append("the signed read held between the document and its sidecar answers %s" %
                            answer_text(answer))
        checks.check("(b) round %d: signed %s held between document and sidecar vs a replace (%s): no false "
                     "integrity 500" % (round_, name, "held" if answer[5] else "NOT held"),
                     problems + ([] if answer[5] else ["the delay was not injected"]))


# ---------------------------------------------------------------- (c)

def race_sweep(args, checks, scratch, round_):
    variants = [
        ("", None),
        (", its temporary 60 s old (a clock step, or a disk that stalled)", "stepped"),
        (", kb's sweep held at its unlink of ka's 60 s old leftover while ka replaces it with its live one",
         "leftover"),
    ]
    for words, variant in variants:
        data = os.path.join(scratch, "c-data")
        shutil.rmtree(data, ignore_errors=True)
        os.mkdir(data, 0o700)
        problems = []
        for key in ("ka", "kb"):
            answer = faults.run_program(args.cgi_bin, settings_put({"updatedAt": "2026-01-01T00:00:00Z", "k": key},
                                                                   key=key), data, {})
            if answer[0] != 200:
                problems.append("seed of %s answers %s" % (key, answer_text(answer)))
        folder = os.path.join(data, "user_settings")
        temporary = os.path.join(folder, ".~ka.json")
        lock_b = os.path.join(data, ".locks", "user_settings.kb.lock")
        old = time.time() - 60
        aged = time.time() - 45

        def write_b(n):
            return settings_put({"updatedAt": "2026-02-01T00:00:%02dZ" % n, "k": "kb"}, key="kb")

        sweeper = None
        if variant == "leftover":
            # What a killed writer of ka left, old enough to sweep.
            with open(temporary, "w") as f:
                f.write("{}")
            os.utime(temporary, (old, old))
            os.utime(lock_b, (aged, aged))
            unlink = occurrence(args.cgi_bin, write_b(9), data, {}, "unlink", ".~ka.json", scratch)
            if not unlink:
                problems.append("kb's writer does not sweep ka's leftover")
            else:
                sweeper = held(args.cgi_bin, write_b(9), data, {}, scratch, "sweeper",
                               "unlink:delay_enter=%dms:when=%d" % (3 * HOLD_MS, unlink))
                time.sleep(HOLD_MS / 4000.0)
        write_a = settings_put({"updatedAt": "2026-02-01T00:00:00Z", "k": "ka", "round": round_}, key="ka")
        # fsync names a descriptor: the first one after the temporary's openat.
        fsync = occurrence(args.cgi_bin, write_a, data, {}, "fsync", "", scratch, after=".~ka.json")
        slow = held(args.cgi_bin, write_a, data, {}, scratch, "writer-a",
                    "fsync:delay_enter=%dms:when=%d" % (3 * HOLD_MS, fsync))
        held_ok = True
        if sweeper is not None:
            answer = faults.finish(sweeper)
            held_ok = bool(answer[5])
            if answer[0] != 200:
                problems.append("kb's sweeping writer answers %s" % answer_text(answer))
        else:
            deadline = time.monotonic() + 5
            while not os.path.exists(temporary) and time.monotonic() < deadline:
                time.sleep(0.005)
            if variant == "stepped" and os.path.exists(temporary):
                os.utime(temporary, (old, old))
            for n in range(3):
                os.utime(lock_b, (aged, aged))
                answer = faults.run_program(args.cgi_bin, write_b(n), data, {})
                if answer[0] != 200:
                    problems.append("writer of kb (lock aged 45 s) answers %s" % answer_text(answer))
        answer_a = faults.finish(slow)
        held_ok = held_ok and bool(answer_a[5])
        if answer_a[0] != 200 or not answer_a[3]:
            problems.append("the slow writer of ka answers %s" % answer_text(answer_a))
        for key, want in (("ka", {"k": "ka", "round": round_}), ("kb", {"k": "kb"})):
            got = faults.run_program(args.cgi_bin, Request("user-settings", "GET", "/user/settings",
                                                           {"X-User-Key": key}), data, {})
            doc = json.loads(got[2]) if got[0] == 200 else {}
            if got[0] != 200 or any(doc.get(k) != v for k, v in want.items()):
                problems.append("GET %s answers %s; expected %s" % (key, answer_text(got), want))
        report = stresslib.check_data_dir(data)
        problems += report.problems
        checks.check("(c) round %d: the sweep (kb's lock aged past 30 s) vs ka's writer held at its fsync%s: "
                     "ka's write stands, nothing live removed" % (round_, words),
                     problems + ([] if held_ok else ["a delay was not injected"]))


# ---------------------------------------------------------------- (d)

def compact_seed(args, scratch, name):
    """A fresh data directory holding faults.py's "compact" seed: five
    records, the next write makes compaction due (at 4 records, horizon 0)."""
    data = os.path.join(scratch, name)
    shutil.rmtree(data, ignore_errors=True)
    os.mkdir(data, 0o700)
    for request in faults.SEEDS["compact"]:
        faults.run_program(args.cgi_bin, request, data, {})
    return data


def race_compaction(args, checks, scratch, round_):
    env = {"MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": "4", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": "0"}
    inbox = os.path.join(args.cgi_bin, "inbox")
    failures = [
        ("the rename of the rewritten log", "rename", "changes.log\""),
        ("a read of a message during compaction", "openat", "/messages/m3.json"),
    ]
    for what, syscall, text in failures:
        data = compact_seed(args, scratch, "d-data")
        problems = []
        writes = [("PUT m4", put("m4", 1, {"kg": 64})), ("PUT m5", put("m5", 1, {"kg": 65})),
                  ("POST", Request("inbox", "POST", "/inbox", body={"posted": round_}))]
        injected = 0
        for name, request in writes:
            # The failing call comes after the write's own message rename.
            n = occurrence(args.cgi_bin, request, data, env, syscall, text, scratch,
                           after="/messages/.~" if syscall == "rename" else "fdatasync")
            if n is None:
                problems.append("%s: no %s to fail (is compaction due?)" % (name, what))
                continue
            answer = faults.run_program(args.cgi_bin, request, data, env, (syscall, "EIO", n),
                                        os.path.join(scratch, "d.trace"))
            injected += bool(answer[5])
            if answer[0] not in (200, 201) or not answer[3]:
                problems.append("%s with compaction failing answers %s" % (name, answer_text(answer)))
                continue
            ident = json.loads(answer[2])["id"]
            got = faults.run_program(args.cgi_bin, Request("inbox", "GET", "/inbox/" + ident), data, env)
            messages, _, _, more = stresslib.follow_feed(inbox, env, data, KEY, 1000)
            problems += more
            if got[0] != 200:
                problems.append("%s: GET %s answers %s" % (name, ident, answer_text(got)))
            if ident not in [m["id"] for m in messages]:
                problems.append("%s: the feed does not list %s" % (name, ident))
        messages, _, _, more = stresslib.follow_feed(inbox, env, data, KEY, 1000)
        posted = [m for m in messages if m["body"] == {"posted": round_}]
        if len(posted) > 1:
            problems.append("the POST stored %d messages" % len(posted))
        checks.check("(d) round %d: compaction due and %s failing, %d writes in a row (%d faults injected): each "
                     "answers 2xx, its change visible" % (round_, what, len(writes), injected),
                     problems + ([] if injected else ["no fault was injected"]))


# ---------------------------------------------------------------- (e)

def wait_held(proc, text, seconds=10):
    """Until the held process's trace shows it inside its call on `text`
    (strace writes a held call's line up to its arguments): True; False
    when it ended or the time ran out first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if text in open(proc.trace, errors="replace").read():
                return True
        except OSError:
            pass
        time.sleep(0.005)
    return False


def compaction_problems(cgi_bin, env, data, seen, anchor, written):
    """After the compaction: `written` ids (id -> version, None: deleted)
    as the feed and GET show them; the follower from `anchor` (holding
    `seen`) ends with a full read; the log compacted, no temporary left."""
    inbox = os.path.join(cgi_bin, "inbox")
    problems = []
    rest, deleted, _, more = stresslib.follow_feed(inbox, env, data, KEY, 1000, anchor=anchor)
    problems += more
    full, full_deleted, _, more = stresslib.follow_feed(inbox, env, data, KEY, 1000)
    problems += more
    followed, whole = live_of(rest, deleted, seen), live_of(full, full_deleted)
    if followed != whole:
        problems.append("a reader following from %s ends with %s, a full read shows %s" % (
            anchor, sorted(followed.items()), sorted(whole.items())))
    ids = [m["id"] for m in full]
    if len(ids) != len(set(ids)):
        problems.append("the full read lists an id twice: %s" % ids)
    for ident, version in sorted(written.items()):
        got = faults.run_program(cgi_bin, Request("inbox", "GET", "/inbox/" + ident), data, env)
        if version is None:
            if got[0] != 404 or ident in whole:
                problems.append("%s was deleted; GET answers %s, the feed %s" % (ident, got[0], whole.get(ident)))
        elif got[0] != 200 or json.loads(got[2])["version"] != version or whole.get(ident, (None,))[0] != version:
            problems.append("%s written at version %d; GET answers %s, the feed %s" % (
                ident, version, answer_text(got), whole.get(ident)))
    folder = os.path.join(data, "inbox", KEY)
    if os.path.exists(os.path.join(folder, ".~changes.log")):
        problems.append("a half-written change log (.~changes.log) is left")
    header, records, partial = formats.read_log(open(os.path.join(folder, "changes.log"), "rb").read())
    seqs = [r.seq for r in records if r]
    if header is None or None in records or partial or seqs != sorted(set(seqs)) or header.records > len(records):
        problems.append("the compacted log is not whole records in rising seq order under a header that counts "
                        "them: %s, seqs %s" % (header, seqs))
    return problems


def race_compaction_steps(args, checks, scratch, round_):
    env = {"MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": "4", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": "0"}
    inbox = os.path.join(args.cgi_bin, "inbox")
    trigger = put("m4", 1, {"kg": 64})
    for where, syscall, text, after in [
        ("its build step (a read of a message file)", "openat", "/messages/m1.json", "fdatasync"),
        ("its swap (the rename of the new log, under the key's lock)", "rename", ".~changes.log", "/messages/.~"),
    ]:
        data = compact_seed(args, scratch, "e-data")
        problems = []
        messages, deleted, anchor, more = stresslib.follow_feed(inbox, env, data, KEY, 1000)
        seen = live_of(messages, deleted)
        log_size = os.path.getsize(os.path.join(data, "inbox", KEY, "changes.log"))
        n = occurrence(args.cgi_bin, trigger, data, env, syscall, text, scratch, after=after)
        if n is None or more:
            checks.check("(e) round %d: the compaction reaches %s" % (round_, where),
                         more + ["no %s of %s after a %s" % (syscall, text, after)])
            continue
        # wait_held must not read an earlier round's trace.
        if os.path.exists(os.path.join(scratch, "compactor.trace")):
            os.unlink(os.path.join(scratch, "compactor.trace"))
        compactor = held(args.cgi_bin, trigger, data, env, scratch, "compactor",
                         "%s:delay_enter=%dms:when=%d" % (syscall, 6 * HOLD_MS, n))
        if not wait_held(compactor, text):
            faults.finish(compactor)
            checks.check("(e) round %d: the compaction is held at %s" % (round_, where), ["it was not held"])
            continue
        written = {"m4": 1}
        if syscall == "openat":
            # The build has yet to read m1 and m3; m5 is new.
            steps = [("a feed read from the anchor", Request("inbox", "GET", "/inbox", query="limit=1000&anchor=" + anchor), 200),
                     ("PUT m5 (new)", put("m5", 1, {"kg": 65}), 201),
                     ("PUT m3 (a replacement)", put("m3", 2, {"kg": 70}), 200),
                     ("DELETE m1", Request("inbox", "DELETE", "/inbox/m1"), 204),
                     ("a second feed read from the anchor", Request("inbox", "GET", "/inbox",
                                                                    query="limit=1000&anchor=" + anchor), 200)]
            written.update({"m5": 1, "m3": 2, "m1": None})
            for name, request, want in steps:
                answer = faults.run_program(args.cgi_bin, request, data, env)
                if answer[0] != want or not answer[3]:
                    problems.append("%s during the build answers %s" % (name, answer_text(answer)))
                if compactor.poll() is not None:
                    problems.append("%s answered only once the compaction had ended: it waited for it" % name)
            if answer[0] == 200 and answer[3]:
                page = json.loads(answer[2])
                versions = {i: v[0] for i, v in live_of(page["messages"], page["deleted"], seen).items()}
                if any(versions.get(i) != v for i, v in written.items()):
                    problems.append("the second read during the build shows %s, not the writes before it" %
                                    sorted(versions.items()))
        else:
            # Waits for the key's lock, which the swap holds: lands in the new log.
            answer = faults.run_program(args.cgi_bin, put("m6", 1, {"kg": 66}), data, env)
            written["m6"] = 1
            if answer[0] != 201 or not answer[3]:
                problems.append("PUT m6, held behind the swap, answers %s" % answer_text(answer))
        answer = faults.finish(compactor)
        if answer[0] != 201 or not answer[3]:
            problems.append("the write that made compaction due answers %s" % answer_text(answer))
        if os.path.getsize(os.path.join(data, "inbox", KEY, "changes.log")) >= log_size + 256 * len(written):
            problems.append("the log was not compacted")
        problems += compaction_problems(args.cgi_bin, env, data, seen, anchor, written)
        checks.check("(e) round %d: compaction held at %s (%s) while the key's readers and writers go on: none "
                     "waits for its build, every write made meanwhile is in the compacted log" % (
                         round_, where, "held" if answer[5] else "NOT held"),
                     problems + ([] if answer[5] else ["the delay was not injected"]))


RACES = {"a": race_first_write, "b": race_signed_read, "c": race_sweep, "d": race_compaction,
         "e": race_compaction_steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgi-bin", default=stresslib.DEFAULT_CGI_BIN)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=sorted(RACES))
    args = parser.parse_args()
    args.cgi_bin = os.path.abspath(args.cgi_bin)
    checks = suite.Checks()
    scratch = stresslib.make_temp_dir("mcr.")
    try:
        for name, race in sorted(RACES.items()):
            if args.only and name != args.only:
                continue
            for round_ in range(1, args.rounds + 1):
                try:
                    race(args, checks, scratch, round_)
                except Exception as exc:          # a harness failure is a failed check too
                    checks.check("(%s) round %d ran" % (name, round_), ["%s: %s" % (type(exc).__name__, exc)])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
