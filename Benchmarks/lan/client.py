#!/usr/bin/env python3
"""The phone's side of `make bench-lan`, run inside the phone's namespace by
bench_lan.py with the venv's Python (httpx with HTTP/2, requests).

    client.py --ours https://10.77.13.1:8443 [--peer https://10.77.13.1:8444]

Prints one JSON object: the link check and each scenario's time (end to end
as the client sees it, connection set-up included), requests, and bytes on
the wire (both directions, IP headers included, from the namespace's end of
the link: /sys/class/net/mclan0/statistics).
"""
import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import time
import urllib.parse
import warnings

import httpx
import requests
import urllib3

sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from samples import sample  # noqa: E402  (Benchmarks/samples.py)

warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
DEVICE = "mclan0"
SAMPLES = 1000
FEED_MESSAGES = 10_000
FEED_PAGE = 1000
REPEATS = 5  # runs of scenarios 3 and 4, each; the median is reported


def wire_bytes():
    total = 0
    for way in ("rx_bytes", "tx_bytes"):
        with open(f"/sys/class/net/{DEVICE}/statistics/{way}") as f:
            total += int(f.read())
    return total


class Scenario:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.bytes0 = wire_bytes()
        self.t0 = time.perf_counter()
        self.requests = 0
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        self.bytes = wire_bytes() - self.bytes0
        if exc[0] is None:
            print(f"bench-lan: scenario {self.name}: {self.seconds * 1000:,.0f} ms, {self.requests} requests, "
                  f"{self.bytes:,} bytes", file=sys.stderr)

    def result(self, **extra):
        return dict(name=self.name, seconds=self.seconds, requests=self.requests, bytes=self.bytes, **extra)


def check_link(host, port):
    """The median of 15 TCP connects: a round trip each."""
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        socket.create_connection((host, port), timeout=5).close()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def headers(key, **more):
    return {"X-User-Key": key, "X-Device-Id": "phone-1", **more}


def put_one_by_one(base, key, run):
    with Scenario("1") as s, requests.Session() as session:
        session.verify, session.trust_env = False, False
        for i in range(SAMPLES):
            body = sample(i, run)
            r = session.put(f"{base}/inbox/{body['syncIdentifier']}", json=body,
                            headers=headers(key, **{"X-Sync-Version": "1"}))
            s.requests += 1
            assert r.status_code == 201, (r.status_code, r.text)
    return s.result(in_flight=1, http="1.1")


async def put_in_flight(base, key, run, width=8):
    with Scenario("2") as s:
        async with httpx.AsyncClient(http2=True, verify=False, trust_env=False, limits=httpx.Limits(max_connections=1)) as client:
            gate = asyncio.Semaphore(width)
            versions = set()

            async def put(i):
                body = sample(i, run)
                async with gate:
                    r = await client.put(f"{base}/inbox/{body['syncIdentifier']}", json=body,
                                         headers=headers(key, **{"X-Sync-Version": "1"}))
                assert r.status_code == 201, (r.status_code, r.text)
                versions.add(r.http_version)
                s.requests += 1

            await asyncio.gather(*(put(i) for i in range(SAMPLES)))
    return s.result(in_flight=width, http="/".join(sorted(versions)))


def bulk(client, base, key, items):
    r = client.post(f"{base}/inbox:bulk", json={"messages": items}, headers=headers(key))
    assert r.status_code == 200, (r.status_code, r.text[:300])
    results = r.json()["results"]
    assert len(results) == len(items) and all(x["status"] in (200, 201) for x in results), results[:3]
    return r


def put_bulk(base, key, run, batch=500):
    with Scenario("3") as s, httpx.Client(http2=True, verify=False, trust_env=False) as client:
        for first in range(0, SAMPLES, batch):
            items = [{"id": b["syncIdentifier"], "version": 1, "body": b}
                     for b in (sample(i, run) for i in range(first, first + batch))]
            r = bulk(client, base, key, items)
            s.requests += 1
    return s.result(in_flight=1, http=r.http_version, batch=batch)


def median_of(times, measure):
    """The run of `measure(i)` with the median time, and every run's time.
    The short scenarios (under a second) are repeated: one slow fsync of
    this VM's disk would otherwise be the whole figure."""
    runs = sorted((measure(i) for i in range(times)), key=lambda r: r["seconds"])
    return dict(runs[len(runs) // 2], runs=[r["seconds"] for r in runs])


def fill(base, key, run):
    """FEED_MESSAGES messages under `key`, by bulk requests of 1,000 (not timed)."""
    with httpx.Client(http2=True, verify=False, trust_env=False, timeout=60) as client:
        for first in range(0, FEED_MESSAGES, 1000):
            bulk(client, base, key, [{"id": f"feed-{run}-{i:06d}", "version": 1, "body": sample(i, run)}
                                     for i in range(first, first + 1000)])


def read_feed(base, key, gzip):
    with Scenario("4 gzip" if gzip else "4 identity") as s, httpx.Client(http2=True, verify=False, trust_env=False) as client:
        anchor, seen, encodings = "", 0, set()
        while True:
            query = urllib.parse.urlencode({"limit": FEED_PAGE, **({"anchor": anchor} if anchor else {})})
            r = client.get(f"{base}/inbox?{query}", headers={
                "X-User-Key": key, "Accept-Encoding": "gzip" if gzip else "identity"})
            s.requests += 1
            assert r.status_code == 200, (r.status_code, r.text[:300])
            encodings.add(r.headers.get("content-encoding", "identity"))
            page = r.json()
            seen += len(page["messages"])
            anchor = page["anchor"]
            if not page["hasMore"]:
                break
        assert seen == FEED_MESSAGES, seen
    return s.result(messages=seen, encoding="/".join(sorted(encodings)), http=r.http_version)


def settings_round_trip(base, key, name, rounds=20):
    """GET + PUT of /user/settings on a warm keep-alive connection (HTTP/1.1,
    which both servers speak): the median pair, and its bytes."""
    doc = {"updatedAt": "", "weightCalibrationFactor": 0.9990998620664758, "units": "metric",
           "height": 1.78, "goals": {"weightKg": 70, "fatPercent": 18}}
    pairs, wire = [], []
    with requests.Session() as session:
        session.verify, session.trust_env = False, False
        session.get(f"{base}/user/settings", headers={"X-User-Key": key})
        for i in range(rounds):
            doc["updatedAt"] = time.strftime("%Y%m%dT%H%M%S", time.gmtime(1_780_000_000 + i)) + ".000000Z"
            b0, t0 = wire_bytes(), time.perf_counter()
            r1 = session.get(f"{base}/user/settings", headers={"X-User-Key": key})
            r2 = session.put(f"{base}/user/settings", json=doc, headers={"X-User-Key": key})
            pairs.append(time.perf_counter() - t0)
            wire.append(wire_bytes() - b0)
            assert r1.status_code in (200, 404) and r2.status_code == 200, (r1.status_code, r2.status_code, r2.text)
    return dict(name=name, seconds=statistics.median(pairs), requests=2, bytes=int(statistics.median(wire)),
                http="1.1", rounds=rounds)


def mirror_writes_phone_waits(base, key, rounds=20):
    """The phone holds `GET /inbox?wait=30` (exclude-source itself) while
    the mirror, another device on the same link, PUTs a scan: from the
    mirror sending its write to the phone holding the answer, per round
    (both on warm HTTP/1.1 keep-alive connections, as the apps keep them).
    The round-trip-bound minimum is one round trip: the write to the box,
    the answer back to the phone."""
    import threading
    phone, mirror = requests.Session(), requests.Session()
    for session in (phone, mirror):
        session.verify, session.trust_env = False, False
    mirror.put(f"{base}/inbox/seed", json={"seed": True}, headers={"X-User-Key": key, "X-Device-Id": "mirror-1"})
    anchor = phone.get(f"{base}/inbox", headers={"X-User-Key": key}).json()["anchor"]
    times, after_2xx, wire = [], [], []
    for i in range(rounds):
        done = {}

        def wait():
            r = phone.get(f"{base}/inbox", params={"anchor": anchor, "wait": 30, "exclude-source": "phone-1"},
                          headers={"X-User-Key": key, "X-Device-Id": "phone-1"})
            done["at"], done["r"] = time.perf_counter(), r

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.5)   # the phone's request is waiting on the box by now
        b0, t0 = wire_bytes(), time.perf_counter()
        r = mirror.put(f"{base}/inbox/scan-{i}", json={"kg": 70 + i / 10, "fatPercent": 18.2},
                       headers={"X-User-Key": key, "X-Device-Id": "mirror-1"})
        t_2xx = time.perf_counter()
        assert r.status_code == 201, (r.status_code, r.text)
        waiter.join(40)
        page = done["r"].json()
        assert [m["id"] for m in page["messages"]] == [f"scan-{i}"], page
        anchor = page["anchor"]
        times.append(done["at"] - t0)
        after_2xx.append(done["at"] - t_2xx)
        wire.append(wire_bytes() - b0)
    return dict(name="6", seconds=statistics.median(times), worst=max(times), best=min(times), requests=2,
                bytes=int(statistics.median(wire)), http="1.1", rounds=rounds,
                after_2xx_median=statistics.median(after_2xx), after_2xx_worst=max(after_2xx))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--peer")
    ap.add_argument("--rtt", type=float, default=0.010, help="the link's round trip, seconds")
    args = ap.parse_args()
    host, port = urllib.parse.urlsplit(args.ours).hostname, urllib.parse.urlsplit(args.ours).port
    out = {"connect_seconds": check_link(host, port)}
    # A TCP connect is one round trip: anything far from it is a broken link, not a measurement.
    if not 0.8 * args.rtt <= out["connect_seconds"] <= 2.0 * args.rtt:
        sys.exit(f"bench-lan: the link is not what it should be: a TCP connect took "
                 f"{out['connect_seconds'] * 1000:.1f} ms, expected about {args.rtt * 1000:.0f} ms")
    print(f"bench-lan: link checked, a TCP connect takes {out['connect_seconds'] * 1000:.1f} ms", file=sys.stderr)
    run = int(time.time())
    out["scenarios"] = [
        put_one_by_one(args.ours, f"lan1-{run}", run),
        asyncio.run(put_in_flight(args.ours, f"lan2-{run}", run)),
        median_of(REPEATS, lambda i: put_bulk(args.ours, f"lan3-{run}-{i}", run + i)),
    ]
    fill(args.ours, f"lan4-{run}", run)
    out["scenarios"] += [median_of(REPEATS, lambda i: read_feed(args.ours, f"lan4-{run}", gzip=True)),
                         median_of(REPEATS, lambda i: read_feed(args.ours, f"lan4-{run}", gzip=False))]
    out["scenarios"].append(settings_round_trip(args.ours, f"lan5-{run}", "5 ours"))
    if args.peer:
        out["scenarios"].append(settings_round_trip(args.peer, f"lan5-{run}", "5 peer"))
    out["scenarios"].append(mirror_writes_phone_waits(args.ours, f"lan6-{run}"))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
