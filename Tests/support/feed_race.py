#!/usr/bin/env python3
"""Writers and an anchored reader on one inbox at once, through the real stack.

    feed_race.py BASE_URL [--writers 4] [--ops 60] [--seconds 90]

Each writer puts new ids, replaces its own ids with higher versions and
deletes some, recording every acknowledged answer. A reader follows the
feed's anchors the whole time (and until hasMore is false once the writers
are done), applying messages and deletions as a client would. At the end:

- the reader's state equals a full read (no anchor) and the state that the
  acknowledged writes imply (each id's last acknowledged change);
- no page repeats an id, and no (id, seq) reaches the reader twice;
- seqs only grow along the feed.

Each writer and the reader is a device with a source address of its own
(suite.device_address), one request in progress at a time: no answer may be
a 429.

Exit status 0 when all hold; otherwise the first failures are printed.
Bounded in count (writers x ops) and time (--seconds).
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True      # no __pycache__ in the repository
import suite  # noqa: E402

KEY = "race-%d" % int(time.time() * 1000)


class Client:
    def __init__(self, base):
        self.connection = suite.connect(base, source=suite.device_address())

    def request(self, method, path, body=None, headers=None):
        all_headers = {"X-User-Key": KEY}
        all_headers.update(headers or {})
        data = None if body is None else json.dumps(body).encode()
        failures = 0
        while True:
            try:
                self.connection.request(method, path, body=data, headers=all_headers)
                response = self.connection.getresponse()
                raw = response.read()
            except (http.client.HTTPException, ConnectionError, OSError):
                self.connection.close()
                failures += 1
                if failures == 3:
                    raise
                continue
            return response.status, (json.loads(raw) if raw else None)


def writer(base, number, ops, deadline, acknowledged, failures):
    client = Client(base)
    rng = random.Random(number)
    versions = {}
    for op in range(ops):
        if time.time() > deadline:
            return
        mine = [i for i in versions if versions[i] is not None]
        choice = rng.random()
        if not mine or choice < 0.45:
            ident = "w%d-m%d" % (number, op)
            status, doc = client.request("PUT", "/inbox/" + ident, {"writer": number, "op": op},
                                         {"X-Device-Id": "dev-%d" % number, "X-Sync-Version": "1"})
            if status != 201:
                failures.append("PUT new %s: %s %s" % (ident, status, doc))
                continue
            versions[ident] = 1
        elif choice < 0.8:
            ident = rng.choice(mine)
            versions[ident] += 1
            status, doc = client.request("PUT", "/inbox/" + ident, {"writer": number, "op": op},
                                         {"X-Device-Id": "dev-%d" % number, "X-Sync-Version": str(versions[ident])})
            if status != 200:
                failures.append("PUT replace %s: %s %s" % (ident, status, doc))
                continue
        else:
            ident = rng.choice(mine)
            status, doc = client.request("DELETE", "/inbox/" + ident)
            if status != 204:
                failures.append("DELETE %s: %s %s" % (ident, status, doc))
                continue
            versions[ident] = None
            doc = None
        # What this id's state is after this change, by the change's seq where known.
        acknowledged.append((ident, doc))


def read_feed(client, anchor, state, seen, failures, last_seq):
    """One page from anchor; applies it; returns (anchor, hasMore, last_seq)."""
    path = "/inbox?limit=7" + ("&anchor=" + urllib.parse.quote(anchor) if anchor else "")
    status, page = client.request("GET", path)
    if status != 200:
        failures.append("feed %s: %s %s" % (path, status, page))
        return anchor, False, last_seq
    ids = [m["id"] for m in page["messages"]] + [d["id"] for d in page["deleted"]]
    if len(ids) != len(set(ids)):
        failures.append("a page repeats an id: %s" % ids)
    changes = sorted([(m["seq"], m["id"], m) for m in page["messages"]] +
                     [(d["seq"], d["id"], None) for d in page["deleted"]], key=lambda c: c[0])
    for seq, ident, message in changes:
        if (ident, seq) in seen:
            failures.append("(%s, %d) delivered twice" % (ident, seq))
        seen.add((ident, seq))
        if seq <= last_seq:
            failures.append("seq %d after %d: the feed went back" % (seq, last_seq))
        last_seq = max(last_seq, seq)
        if message is None:
            state.pop(ident, None)
        else:
            state[ident] = message
    return page["anchor"], page["hasMore"], last_seq


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=90)
    args = parser.parse_args()
    deadline = time.time() + args.seconds

    acknowledged, failures = [], []
    threads = [threading.Thread(target=writer, args=(args.base, n, args.ops, deadline, acknowledged, failures))
               for n in range(args.writers)]
    for thread in threads:
        thread.start()

    reader = Client(args.base)
    state, seen, anchor, last_seq, pages = {}, set(), None, 0, 0
    while any(t.is_alive() for t in threads) and time.time() < deadline:
        anchor, _, last_seq = read_feed(reader, anchor, state, seen, failures, last_seq)
        pages += 1
    for thread in threads:
        thread.join(max(0.0, deadline - time.time()))
    if any(t.is_alive() for t in threads):
        print("writers did not finish within %s s" % args.seconds)
        return 1
    more = True
    while more and time.time() < deadline:
        anchor, more, last_seq = read_feed(reader, anchor, state, seen, failures, last_seq)
        pages += 1

    # The state the acknowledged writes imply: each id's last acknowledged change.
    expected = {}
    for ident, doc in acknowledged:
        if doc is None:
            expected.pop(ident, None)
        else:
            expected[ident] = doc

    full, more, full_anchor = {}, True, None
    while more:
        full_anchor, more, _ = read_feed(Client(args.base), full_anchor, full, set(), failures, 0)

    if state != full:
        missing = sorted(set(full) - set(state))
        extra = sorted(set(state) - set(full))
        stale = sorted(i for i in set(state) & set(full) if state[i] != full[i])
        failures.append("reader != full read: missing %s, extra %s, stale %s" % (missing[:5], extra[:5], stale[:5]))
    if state != expected:
        missing = sorted(set(expected) - set(state))
        extra = sorted(set(state) - set(expected))
        stale = sorted(i for i in set(state) & set(expected) if state[i] != expected[i])
        failures.append("reader != acknowledged writes: missing %s, extra %s, stale %s" % (missing[:5], extra[:5], stale[:5]))

    print("%d writers, %d acknowledged changes, %d live messages, %d pages read, %d failures"
          % (args.writers, len(acknowledged), len(expected), pages, len(failures)))
    for failure in failures[:10]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
