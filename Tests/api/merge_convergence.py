#!/usr/bin/env python3
"""The per-field merge converges: every order of arrival gives one document.

    merge_convergence.py BASE_URL DATA_DIR [--examples N]

A property-based test (hypothesis) against the real stack (nginx + fcgiwrap
+ the installed programs; Tests/api/run.sh starts it). Each example is a
history: an optional stored document (a plain PUT, whose members all take
its updatedAt), then per-field patches from several devices editing
overlapping members at a few instants, so that equal times (and equal
devices) are common: values include nested objects with nulls, numbers
whose text differs (1 and 1.0), strings, and null (a deletion). The patches
are delivered in several orders, each to a fresh user key, some with a
patch sent twice (a retried request). Every order must end with:

  - the same document (as JSON objects compare: member order may differ)
    and the same member times (GET with X-Merge: fields);
  - for each member, its newest edit: the latest instant, then the larger
    X-Device-Id (none smallest), then the larger value bytes; a deletion
    keeps the member out; a nested object as its edit sent it, nulls left
    out; members no patch names keep the stored document's value;
  - updatedAt the newest edit time (the stored text when that is already
    the newest), and the settings file in Python's json.dumps(doc, indent=2).

Prints one line per property and `N passed, M failed` last; exit status 1
on any failure. The seed is fixed, so `make test` runs the same cases.
"""

import argparse
import datetime
import http.client
import json
import os
import ssl
import sys
import urllib.parse
import uuid

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

MEMBERS = ["weightCalibrationFactor", "unitSystem", "heightCm", "alerts"]
DEVICES = [None, "phone-a", "phone-b", "mirror-1"]
BASE_TIME = datetime.datetime(2026, 5, 18, 10, 0, tzinfo=datetime.timezone.utc)
MERGE = {"Content-Type": "application/merge-patch+json", "X-Merge": "fields"}


def server_form(instant):
    return instant.strftime("%Y%m%dT%H%M%S.%fZ")


def compact(value):
    """The server's compact form (json.dumps's separators, ensure_ascii)."""
    return json.dumps(value).encode()


def without_nulls(value):
    """What RFC 7396 puts where nothing was: nulls inside objects left out."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


# ---------------------------------------------------------------- histories

values = st.recursive(
    st.one_of(st.integers(-3, 3), st.sampled_from([1.0, 0.999, 2.50]), st.sampled_from(["metric", "imperial", "é"]),
              st.booleans()),
    lambda inner: st.dictionaries(st.sampled_from(["x", "y", "z"]), st.one_of(st.none(), inner), max_size=3),
    max_leaves=4)
edit_values = st.one_of(st.none(), values)


@st.composite
def histories(draw):
    base = None
    if draw(st.booleans()):
        minute = draw(st.integers(0, 2))
        base = {m: draw(values) for m in draw(st.lists(st.sampled_from(MEMBERS), unique=True, max_size=4))}
        # The extended form: kept as written while it is the newest time.
        base["updatedAt"] = (BASE_TIME + datetime.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
    patches = []
    for _ in range(draw(st.integers(2, 5))):
        minute = draw(st.integers(0, 2))
        device = draw(st.sampled_from(DEVICES))
        members = draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=3, unique=True))
        patch = {m: draw(edit_values) for m in members}
        # Half in the basic form with a fraction, half extended with an offset: one instant, two texts.
        instant = BASE_TIME + datetime.timedelta(minutes=minute)
        if draw(st.booleans()):
            patch["updatedAt"] = instant.strftime("%Y%m%dT%H%M%S.000Z")
        else:
            patch["updatedAt"] = (instant + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")
        patches.append((device, instant, patch))
    orders = [list(range(len(patches))), list(reversed(range(len(patches))))]
    for _ in range(2):
        order = draw(st.permutations(range(len(patches))))
        if draw(st.booleans()):
            # A retried request: the same patch once more, anywhere later.
            again = draw(st.sampled_from(order))
            at = draw(st.integers(order.index(again) + 1, len(order)))
            order = order[:at] + [again] + order[at:]
        orders.append(order)
    return base, patches, orders


# ---------------------------------------------------------------- the model

def expected(base, patches):
    """The document and times the rules promise, from the edits alone."""
    edits = {}          # member -> (instant, device, value bytes, value or None for a deletion)
    if base is not None:
        base_time = datetime.datetime.strptime(base["updatedAt"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
        for member, value in base.items():
            if member != "updatedAt":
                edits[member] = (base_time, None, compact(value), value, False)

    def order_key(edit):
        instant, device, value_bytes, _, _ = edit
        return instant, (0, b"") if device is None else (1, device.encode()), value_bytes

    for device, instant, patch in patches:
        for member, value in patch.items():
            if member == "updatedAt":
                continue
            deleted = value is None
            edit = (instant, device, b"null" if deleted else compact(without_nulls(value)),
                    None if deleted else without_nulls(value), deleted)
            if member not in edits or order_key(edit) > order_key(edits[member]):
                edits[member] = edit
    document = {m: e[3] for m, e in edits.items() if not e[4]}
    newest = max(p[1] for p in patches)
    if base is not None and base_time >= newest:
        document["updatedAt"] = base["updatedAt"]
    else:
        document["updatedAt"] = server_form(max(newest, base_time) if base is not None else newest)
    times = {}
    for member, (instant, device, _, _, deleted) in edits.items():
        entry = {"at": server_form(instant)}
        if device is not None:
            entry["device"] = device
        if deleted:
            entry["deleted"] = True
        times[member] = entry
    return document, times


# ---------------------------------------------------------------- the stack

class Stack:
    def __init__(self, base_url, data):
        url = urllib.parse.urlsplit(base_url)
        self.host, self.port, self.data = url.hostname, url.port, data
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE
        self.connection = None
        self.requests = 0

    def send(self, method, key, headers=None, body=None):
        all_headers = dict({"X-User-Key": key}, **(headers or {}))
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)
            try:
                self.connection.request(method, "/user/settings", body=data, headers=all_headers)
                response = self.connection.getresponse()
                payload = response.read()
                self.requests += 1
                return response.status, dict(response.getheaders()), payload
            except (http.client.HTTPException, OSError):
                # nginx closes a keep-alive connection after its request count: open another.
                self.connection.close()
                self.connection = None
                if attempt:
                    raise

    def stored_file(self, key):
        with open(os.path.join(self.data, "user_settings", key + ".json"), encoding="utf-8") as f:
            return f.read()


def deliver(stack, base, patches, order):
    """One order of arrival, to a fresh key: (document, times, file text)."""
    key = "conv-" + uuid.uuid4().hex[:20]
    if base is not None:
        status, _, payload = stack.send("PUT", key, body=base)
        assert status == 200, "PUT of the stored document answered %s %r" % (status, payload[:200])
    for index in order:
        device, _, patch = patches[index]
        headers = dict(MERGE, **({"X-Device-Id": device} if device else {}))
        status, _, payload = stack.send("PATCH", key, headers, patch)
        assert status == 200, "per-field PATCH answered %s %r" % (status, payload[:200])
    status, _, payload = stack.send("GET", key, {"X-Merge": "fields"})
    assert status == 200, "GET with X-Merge: fields answered %s %r" % (status, payload[:200])
    answer = json.loads(payload)
    document = answer["document"]
    document.pop("serverReceivedAt", None)
    text = stack.stored_file(key)
    return document, answer["times"], text


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("data")
    parser.add_argument("--examples", type=int, default=60)
    args = parser.parse_args()
    stack = Stack(args.base_url, args.data)
    results = []

    @seed(20261201)
    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(histories())
    def every_order_gives_each_member_its_newest_edit(history):
        base, patches, orders = history
        want_document, want_times = expected(base, patches)
        first = None
        for order in orders:
            document, times, text = deliver(stack, base, patches, order)
            assert text == json.dumps(json.loads(text), indent=2), "the settings file is not Python's layout"
            if first is None:
                first = (document, times, order)
            assert (document, times) == first[:2], "order %s gave %s / %s, order %s gave %s / %s" % (
                first[2], first[0], first[1], order, document, times)
            assert document == want_document, "order %s: document %s, the rules say %s" % (order, document, want_document)
            assert times == want_times, "order %s: times %s, the rules say %s" % (order, times, want_times)

    name = ("per-field patches from several devices (equal times included), delivered in every order"
            " tried, give one document: each member's newest edit (hypothesis, %d histories)" % args.examples)
    try:
        every_order_gives_each_member_its_newest_edit()
        results.append(("ok  ", name, None))
    except Exception as error:      # hypothesis re-raises the falsifying example's error
        results.append(("FAIL", name, "%s: %s" % (type(error).__name__, error)))
    for verdict, what, detail in results:
        print("%s %s" % (verdict, what))
        if detail:
            print("        " + detail[:2000])
    print("(%d requests)" % stack.requests)
    failed = sum(1 for r in results if r[0] == "FAIL")
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
