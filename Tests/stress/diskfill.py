#!/usr/bin/env python3
"""A disk filled by the service's own writes, through the real stack
(nginx + fcgiwrap + TLS on 127.0.0.1), as the box lives it. As root: it
mounts tmpfs file systems.

    diskfill.py [--cgi-bin DIR] [--size-mib 2] [--floor-size-mib 4]

Fill: the data directory is a fresh 2 MiB tmpfs. Settings PUTs (new keys
and replacements), inbox PUTs (new ids and new versions) and bulks run in
turn, with bodies growing until the first refusal and then shrinking to a
few hundred bytes, until a whole round of every kind is refused. Then:
  - every refused write answered 507 with a JSON error and wrote nothing:
    the GETs it concerns and the full feed are as before it (bytes);
  - reads and the feed keep working on the full disk;
  - nothing acknowledged is lost: every 2xx write is readable at the end,
    at its version, and the feed lists every live message once;
  - after the file system is remounted bigger, every kind of write works
    again with no repair step, and the data directory is whole.

Floor: a 4 MiB tmpfs and MOCKCLOUD_MIN_FREE_MB=1. Writes must be refused
with 507 and an error naming the floor while the file system still has
free space (at least half the floor at the first refusal); deletions are
still allowed below the floor, and nothing acknowledged is lost.

Every mount is undone and the stacks stopped (by PID) on exit. Prints
ok/FAIL lines, then `N passed, M failed`.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import suite  # noqa: E402
import stack  # noqa: E402  (Tests/support/, on the path stresslib sets)

KEY = "fill"
MIB = 1024 * 1024


class Store:
    """Writes through the stack, remembering what was acknowledged and
    proving each refusal changed nothing."""

    def __init__(self, base, data):
        self.base, self.data = base, data
        self.settings = {}          # key -> acknowledged document (without serverReceivedAt)
        self.messages = {}          # id -> (version, body) acknowledged; None once deleted
        self.versions = {}          # id -> last version sent
        self.refusals = []          # (what, free bytes when refused, error)
        self.problems = []
        self.counter = 0

    def call(self, method, path, headers=None, body=None):
        headers = dict({"X-User-Key": KEY}, **(headers or {}))
        return stresslib.request(self.base, method, path, headers, body)

    def free_bytes(self):
        st = os.statvfs(self.data)
        return st.f_bavail * st.f_frsize

    def view(self, settings_keys=(), ids=()):
        """What a client reads: the GETs' bytes and the feed's messages and deletions."""
        seen = {}
        for key in settings_keys:
            r = self.call("GET", "/user/settings", {"X-User-Key": key})
            seen[("settings", key)] = (r.status, r.body)
        for ident in ids:
            r = self.call("GET", "/inbox/" + ident)
            seen[("message", ident)] = (r.status, r.body)
        seen["feed"] = self.feed()
        return seen

    def feed(self):
        messages, deleted, anchor = [], [], None
        while True:
            r = self.call("GET", "/inbox?limit=1000" + ("&anchor=" + anchor if anchor else ""))
            if r.status != 200:
                self.problems.append("the feed answers %s %r" % (r.status, r.body[:200]))
                return None
            page = r.json()
            messages += page["messages"]
            deleted += page["deleted"]
            anchor = page["anchor"]
            if not page["hasMore"]:
                return json.dumps([messages, deleted], sort_keys=True)

    def write(self, what, method, path, body, headers=None, settings_keys=(), ids=(), on_success=None):
        """One write; a refusal must be a 507 with a JSON error that changed nothing."""
        before = self.view(settings_keys, ids)
        free = self.free_bytes()
        data = json.dumps(body).encode()
        r = self.call(method, path, headers, data)
        if 200 <= r.status < 300:
            on_success(r)
            return True
        try:
            error = r.json().get("error")
        except (ValueError, AttributeError):
            error = None
        self.refusals.append((what, free, error or ""))
        if r.status != 507 or not error:
            self.problems.append("%s (%d bytes, %d free) refused with %s %r, not a 507 with a JSON error" % (
                what, len(data), free, r.status, r.body[:200]))
        after = self.view(settings_keys, ids)
        for part in sorted(set(before) | set(after), key=str):
            if before.get(part) != after.get(part):
                self.problems.append("%s was refused (%s) but %s changed: %r -> %r" % (
                    what, r.status, part, str(before.get(part))[:120], str(after.get(part))[:120]))
        return False

    # ---- the kinds of write

    def settings_new(self, size):
        self.counter += 1
        key = "s%d" % self.counter
        doc = {"updatedAt": "2026-01-01T00:00:00Z", "pad": "s" * size}
        return self.write("PUT /user/settings (new key %s)" % key, "PUT", "/user/settings", doc,
                          {"X-User-Key": key}, settings_keys=[key],
                          on_success=lambda r: self.settings.__setitem__(key, doc))

    def settings_replace(self, size):
        self.counter += 1
        doc = {"updatedAt": "2026-01-01T%02d:%02d:%02dZ" % (self.counter // 3600 % 24, self.counter // 60 % 60,
                                                               self.counter % 60), "pad": "r" * size}
        return self.write("PUT /user/settings (replace)", "PUT", "/user/settings", doc, settings_keys=[KEY],
                          on_success=lambda r: self.settings.__setitem__(KEY, doc))

    def message_new(self, size):
        self.counter += 1
        ident = "n%d" % self.counter
        return self.put(ident, size)

    def message_replace(self, size):
        live = sorted(i for i, v in self.messages.items() if v is not None)
        return self.put(live[self.counter % len(live)], size) if live else self.message_new(size)

    def put(self, ident, size):
        version = self.versions.get(ident, 0) + 1
        self.versions[ident] = version
        body = {"pad": "m" * size}
        return self.write("PUT /inbox/%s v%d" % (ident, version), "PUT", "/inbox/" + ident, body,
                          {"X-Sync-Version": str(version)}, ids=[ident],
                          on_success=lambda r: self.messages.__setitem__(ident, (version, body)))

    def bulk(self, size):
        items = []
        for n in range(4):
            self.counter += 1
            ident = "b%d" % self.counter
            self.versions[ident] = 1
            items.append({"id": ident, "version": 1, "body": {"pad": "b" * max(1, size // 4)}})

        def done(r):
            for item, result in zip(items, r.json()["results"]):
                if result.get("status") in (200, 201):
                    self.messages[item["id"]] = (1, item["body"])
                else:
                    self.problems.append("bulk item %s answered %s inside a 200" % (item["id"], result))
        return self.write("POST /inbox:bulk (4 items)", "POST", "/inbox:bulk", {"messages": items},
                          ids=[i["id"] for i in items], on_success=done)

    def kinds(self):
        return [self.settings_new, self.settings_replace, self.message_new, self.message_replace, self.bulk]

    def fill(self, start=1024, top=200 * 1024, bottom=200, rounds=200):
        """Writes of every kind, growing then shrinking, until a whole round
        of the smallest size is refused. Returns the number of rounds."""
        size, growing = start, True
        for round_ in range(1, rounds + 1):
            accepted = [kind(size) for kind in self.kinds()]
            if not any(accepted) and size <= bottom:
                return round_
            if growing and not all(accepted):
                growing = False
            size = min(top, size * 2) if growing else max(bottom, size // 2)
        self.problems.append("the disk never filled in %d rounds" % rounds)
        return rounds

    def acknowledged_problems(self):
        """Every acknowledged write is there, at its version; the feed lists each live message once."""
        problems = []
        for key, doc in sorted(self.settings.items()):
            r = self.call("GET", "/user/settings", {"X-User-Key": key})
            got = r.json() if r.status == 200 else {}
            got.pop("serverReceivedAt", None)
            if r.status != 200 or got != doc:
                problems.append("settings %s: acknowledged, GET answers %s %r" % (key, r.status, r.body[:120]))
        feed = self.feed()
        listed = {}
        if feed is not None:
            for m in json.loads(feed)[0]:
                if m["id"] in listed:
                    problems.append("the feed lists %s twice" % m["id"])
                listed[m["id"]] = (m["version"], m["body"])
        for ident, state in sorted(self.messages.items()):
            r = self.call("GET", "/inbox/" + ident)
            if state is None:
                if r.status != 404:
                    problems.append("%s: deletion acknowledged, GET answers %s" % (ident, r.status))
                continue
            got = r.json() if r.status == 200 else {}
            if r.status != 200 or (got.get("version"), got.get("body")) != state:
                problems.append("%s: acknowledged v%d, GET answers %s %r" % (ident, state[0], r.status, r.body[:120]))
            if listed.get(ident) != state:
                problems.append("%s: acknowledged v%d, the feed lists %s" % (
                    ident, state[0], listed.get(ident, ("nothing",))[0]))
        return problems


def mount_tmpfs(path, size_mib, mounts):
    os.makedirs(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0711" % size_mib, "mockcloud-fill", path],
                   check=True)
    mounts.append(path)
    data = os.path.join(path, "data")
    os.mkdir(data, 0o700)
    return data


def fill_test(args, checks, work, mounts):
    fs = os.path.join(work, "fs")
    data = mount_tmpfs(fs, args.size_mib, mounts)
    # No floor: this test fills the file system itself (floor_test has one).
    with stack.Stack(work, "fill", args.cgi_bin, MOCKCLOUD_DATA=data, MOCKCLOUD_MIN_FREE_MB="0") as running:
        store = Store(running.base, data)
        rounds = store.fill()
        refused_kinds = sorted({re.sub(r"/inbox/\S+", "/inbox/<id>", re.sub(r" v\d+$", "", what)).split(" (")[0]
                                for what, _, _ in store.refusals})
        checks.check("a %d MiB tmpfs filled by writes in %d rounds: %d writes acknowledged, %d refused "
                     "(%s); %d bytes free at the end" % (
                         args.size_mib, rounds, len(store.settings) + len(store.messages), len(store.refusals),
                         ", ".join(refused_kinds), store.free_bytes()),
                     store.problems[:1] if "never filled" in "".join(store.problems) else [])
        checks.check("every refused write answered 507 with a JSON error and changed nothing a client reads",
                     [p for p in store.problems if "never filled" not in p])
        store.problems = []
        reads = store.acknowledged_problems()
        checks.check("on the full disk, GET and the feed answer, and every acknowledged write is there at "
                     "its version (%d settings, %d messages)" % (len(store.settings), len(store.messages)),
                     reads + store.problems)
        subprocess.run(["mount", "-o", "remount,size=%dm" % (args.size_mib * 4), fs], check=True)
        store.problems = []
        resumed = [kind.__name__ for kind in store.kinds() if not kind(2048)]
        report = stresslib.check_data_dir(data)
        checks.check("remounted 4x bigger, every kind of write works again with no repair step; the data "
                     "directory is whole",
                     ["%s still refused" % name for name in resumed] + store.problems + report.problems
                     + store.acknowledged_problems())


def floor_test(args, checks, work, mounts):
    fs = os.path.join(work, "floor-fs")
    data = mount_tmpfs(fs, args.floor_size_mib, mounts)
    floor = 1
    with stack.Stack(work, "floor", args.cgi_bin, MOCKCLOUD_DATA=data, MOCKCLOUD_MIN_FREE_MB=str(floor)) as running:
        store = Store(running.base, data)
        store.fill(start=16 * 1024, top=64 * 1024, bottom=4 * 1024)
        problems = [p for p in store.problems if "never filled" not in p]
        if not store.refusals:
            problems.append("no write was refused")
        else:
            what, free, error = store.refusals[0]
            if free < floor * MIB // 2:
                problems.append("the first refusal (%s) came with only %d bytes free: the floor of %d MiB did "
                                "not hold" % (what, free, floor))
            unnamed = [(w, e) for w, _, e in store.refusals if "MOCKCLOUD_MIN_FREE_MB" not in e and "floor" not in e]
            if unnamed:
                problems.append("%d refusals do not name the floor, e.g. %s: %r" % (len(unnamed), unnamed[0][0],
                                                                                   unnamed[0][1]))
        checks.check("with MOCKCLOUD_MIN_FREE_MB=%d on a %d MiB tmpfs, writes get 507 naming the floor while "
                     "the file system still has room (%d bytes free at the end)" % (
                         floor, args.floor_size_mib, store.free_bytes()), problems)
        store.problems = []
        deletions = []
        live = sorted(i for i, v in store.messages.items() if v is not None)
        for ident in live[:2]:
            r = store.call("DELETE", "/inbox/" + ident)
            if r.status == 204:
                store.messages[ident] = None
            else:
                deletions.append("DELETE /inbox/%s below the floor answers %s %r" % (ident, r.status, r.body[:160]))
        r = store.call("DELETE", "/user/settings")
        if r.status in (204, 404):
            store.settings.pop(KEY, None)
        else:
            deletions.append("DELETE /user/settings below the floor answers %s %r" % (r.status, r.body[:160]))
        checks.check("below the floor, deletions are still allowed; nothing acknowledged is lost",
                     deletions + store.acknowledged_problems() + store.problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgi-bin", default=stresslib.DEFAULT_CGI_BIN)
    parser.add_argument("--size-mib", type=int, default=2)
    parser.add_argument("--floor-size-mib", type=int, default=4)
    args = parser.parse_args()
    args.cgi_bin = os.path.abspath(args.cgi_bin)
    checks = suite.Checks()
    if os.geteuid() != 0:
        checks.check("diskfill.py mounts tmpfs file systems: run it as root", ["not root"])
        return checks.summary()
    work = stresslib.make_temp_dir("mcfill.")
    mounts = []
    try:
        for test in (fill_test, floor_test):
            try:
                test(args, checks, work, mounts)
            except Exception as exc:          # a harness failure is a failed check too
                checks.check("%s ran" % test.__name__, ["%s: %s" % (type(exc).__name__, exc)])
    finally:
        for path in reversed(mounts):
            if subprocess.run(["umount", path], stderr=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["umount", "-l", path])
        shutil.rmtree(work, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
