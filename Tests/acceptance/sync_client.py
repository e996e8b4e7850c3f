#!/usr/bin/env python3
"""A phone's sync as docs/API.md §4, "How a client syncs", tells it, against
a stack whose compaction drops tombstones at once
(MOCKCLOUD_INBOX_TOMBSTONE_HORIZON=0, MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=1).

    sync_client.py https://127.0.0.1:PORT

Each scenario ends by comparing the phone's local copy with the server's
messages: a client that follows those rules must hold exactly them. Exit 1
with what differs.
"""
import json
import os
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from inbox_http import InboxHTTP  # noqa: E402
from suite import TLS  # noqa: E402


class Server(InboxHTTP):
    def __init__(self, base):
        parts = urllib.parse.urlsplit(base)
        super().__init__(parts.hostname, parts.port, TLS)

    def truth(self, key):
        """Every live message's body, read without anchor or exclusion."""
        return {ident: m["body"] for ident, m in self.live_messages(key).items()}


class Phone:
    """The client of docs/API.md §4: uploads its own changes, reads the feed with
    exclude-source=<itself> from its saved anchor, recovers from 410 by a
    full read (without exclude-source) that replaces its local copy."""

    def __init__(self, server, key, device="phone-1", recovery_excludes_self=False):
        self.server, self.key, self.device = server, key, device
        self.local, self.anchor = {}, None
        self.recovery_excludes_self = recovery_excludes_self
        self.recoveries = 0

    def upload(self, items):
        status, answer = self.server.request("POST", "/inbox:bulk", self.key, self.device,
                                             {"messages": [{"id": i, "version": 1, "body": b} for i, b in items]})
        assert status == 200, (status, answer)
        for (i, b), result in zip(items, answer["results"]):
            assert result["status"] in (200, 201), result
            self.local[i] = b

    def read(self, anchor, exclude_self):
        changes, deleted = {}, set()
        while True:
            query = {"limit": 2, **({"anchor": anchor} if anchor else {}),
                     **({"exclude-source": self.device} if exclude_self else {})}
            status, page = self.server.request("GET", "/inbox?" + urllib.parse.urlencode(query), self.key)
            if status == 410:
                return None
            assert status == 200, (status, page)
            for m in page["messages"]:
                changes[m["id"]] = m["body"]
                deleted.discard(m["id"])
            for d in page["deleted"]:
                deleted.add(d["id"])
                changes.pop(d["id"], None)
            anchor = page["anchor"]
            if not page["hasMore"]:
                return changes, deleted, anchor

    def sync(self):
        result = self.read(self.anchor, exclude_self=True)
        if result is None:
            # 410: drop the anchor, read everything, replace the local copy.
            self.recoveries += 1
            result = self.read(None, exclude_self=self.recovery_excludes_self)
            assert result is not None, "a read without an anchor answered 410"
            changes, _, self.anchor = result
            self.local = dict(changes)
            return
        changes, deleted, self.anchor = result
        self.local.update(changes)
        for i in deleted:
            self.local.pop(i, None)


def compact(server, key):
    """Writes and deletes until compaction has run (the log doubles at
    MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=1): every tombstone so far expires."""
    for n in range(8):
        server.request("PUT", f"/inbox/churn-{n}", key, "mirror-1", {"n": n})
        server.request("DELETE", f"/inbox/churn-{n}", key, "mirror-1")


def check(name, phone, server, failures, expect_recovery=True):
    truth = server.truth(phone.key)
    if phone.local != truth:
        failures.append(f"{name}: the phone holds {sorted(phone.local)}, the server {sorted(truth)}")
    if expect_recovery and phone.recoveries == 0:
        failures.append(f"{name}: the phone was never told (410) that it may have missed a deletion")


def main():
    server = Server(sys.argv[1])
    failures = []

    # 1. The empty inbox's anchor: the phone read an empty inbox, uploaded its
    # own sample, the mirror deleted it, compaction dropped the tombstone.
    phone = Phone(server, "sync-empty")
    phone.sync()
    if phone.anchor is None:
        failures.append("empty inbox: no anchor")
    phone.upload([("sample-1", {"kg": 71.3})])
    server.request("DELETE", "/inbox/sample-1", phone.key, "mirror-1")
    compact(server, phone.key)
    phone.sync()
    check("empty-inbox anchor after a dropped deletion", phone, server, failures)

    # 2. The empty inbox's anchor with nothing dropped is answered (200), not refused.
    quiet = Phone(server, "sync-quiet")
    quiet.sync()
    status, _ = server.request("PUT", "/inbox/m1", quiet.key, "mirror-1", {"a": 1})
    assert status == 201, status
    quiet.sync()
    check("empty-inbox anchor, no compaction", quiet, server, failures, expect_recovery=False)
    if quiet.local != {"m1": {"a": 1}}:
        failures.append(f"empty-inbox anchor, no compaction: the phone holds {quiet.local}")

    # 3. The 410 recovery reads without exclude-source: the phone's own samples
    # are in the server's inbox and must stay in its local copy.
    for excludes_self in (True, False):
        key = f"sync-recover-{int(excludes_self)}"
        phone = Phone(server, key, recovery_excludes_self=excludes_self)
        server.request("PUT", "/inbox/other", key, "mirror-1", {"o": 1})
        phone.sync()
        phone.upload([("own-1", {"kg": 70.1}), ("own-2", {"kg": 70.2})])
        phone.sync()
        server.request("DELETE", "/inbox/other", key, "mirror-1")
        compact(server, key)
        phone.sync()
        truth = server.truth(key)
        if excludes_self:
            # A recovery read with exclude-source: the phone loses its own samples.
            if phone.recoveries != 1 or "own-1" in phone.local or "own-1" not in truth:
                failures.append("the recovery read with exclude-source should lose the phone's own samples "
                                f"(recoveries {phone.recoveries}, local {sorted(phone.local)}); the test proves nothing")
        else:
            check("410 recovery without exclude-source", phone, server, failures)

    for line in failures:
        print(line)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
