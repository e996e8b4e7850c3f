#!/usr/bin/env python3
"""One address floods a MockCloud stack while another one uses it.

    flood.py PORT [--connections 300] [--requests 20] [--flooder 127.0.0.1]
             [--victim 127.0.0.2] [--kinds header,body] [--hold 30]

The flooder (connections from --flooder) keeps --connections connections
open to 127.0.0.1:PORT, of the --kinds in turn, each reopened when the server
closes it, until the victim is done:

  tcp     a TCP connection that never starts its TLS handshake (nginx
          closes these first when it runs short of connections);
  header  a TLS connection that sends half a header block and stalls;
  body    `PUT /user/settings` with `Content-Length: 100`, one byte of the
          body, then nothing (the slow-body lock-out).

Once every flood connection has been opened once, the victim (connections
from --victim, 127.0.0.2 on Linux loopback) sends --requests
`GET /user/settings`, each on a new TLS connection, one after the other, each
given up to 15 s. The victim's key is stored first, so each should answer 200.

Prints one JSON object: the victim's statuses and latencies, and for each
flood kind what its connections met (an answer's status, `closed` without an
answer, `open` at the end), plus one 429 answer's headers and body as seen.
Only the standard library.
"""
import argparse
import asyncio
import http.client
import json
import ssl
import statistics
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
import suite  # noqa: E402  (beside this file)

HOST = "127.0.0.1"


def victim_request(port, source, method, path, key, body=None):
    """One request on its own connection from `source`: (status, body, seconds)."""
    started = time.monotonic()
    connection = suite.connect("https://%s:%d" % (HOST, port), timeout=15, source=source)
    try:
        headers = {"X-User-Key": key}
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, data.decode("utf-8", "replace"), time.monotonic() - started
    except (OSError, http.client.HTTPException) as error:
        return "error: %s" % type(error).__name__, str(error), time.monotonic() - started
    finally:
        connection.close()


class Flood:
    def __init__(self, port, source, connections, hold, kinds):
        self.kinds = kinds
        self.port = port
        self.source = source
        self.connections = connections
        self.hold = hold
        self.context = suite.TLS
        self.outcomes = {kind: {} for kind in kinds}
        self.opened = 0
        self.first_round = asyncio.Event()
        self.stopping = False
        self.sample_429 = None

    def count(self, kind, outcome):
        table = self.outcomes[kind]
        table[outcome] = table.get(outcome, 0) + 1

    def opened_one(self):
        self.opened += 1
        if self.opened >= self.connections:
            self.first_round.set()

    async def slot(self, kind, handshakes):
        first = True
        while not self.stopping:
            writer = None
            try:
                async with handshakes:
                    if kind == "tcp":
                        reader, writer = await asyncio.open_connection(HOST, self.port, local_addr=(self.source, 0))
                    else:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection(
                            HOST, self.port, ssl=self.context, server_hostname="localhost",
                            local_addr=(self.source, 0)), 20)
                if kind == "header":
                    writer.write(b"GET /user/settings HTTP/1.1\r\nHost: localhost\r\nX-User-Key: flood\r\n")
                elif kind == "body":
                    writer.write(b"PUT /user/settings HTTP/1.1\r\nHost: localhost\r\nX-User-Key: flood\r\n"
                                 b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
                await writer.drain()
            except (OSError, asyncio.TimeoutError, ssl.SSLError) as error:
                self.count(kind, "connect failed: %s" % type(error).__name__)
                if first:
                    first = False
                    self.opened_one()
                await asyncio.sleep(0.05)
                continue
            if first:
                first = False
                self.opened_one()
            try:
                answer = await asyncio.wait_for(reader.read(65536), self.hold)
            except asyncio.TimeoutError:
                answer = None
            except (OSError, ssl.SSLError):
                answer = b""
            except asyncio.CancelledError:
                self.count(kind, "open")
                writer.transport.abort()
                raise
            if answer is None:
                self.count(kind, "open")
            elif not answer:
                self.count(kind, "closed")
            else:
                status = answer.split(b" ", 2)[1].decode("ascii", "replace") if answer.startswith(b"HTTP/") else "?"
                self.count(kind, status)
                if status == "429" and self.sample_429 is None:
                    self.sample_429 = answer.decode("utf-8", "replace")
            writer.transport.abort()

    async def run(self, victim):
        handshakes = asyncio.Semaphore(64)
        tasks = [asyncio.create_task(self.slot(self.kinds[n % len(self.kinds)], handshakes))
                 for n in range(self.connections)]
        started = time.monotonic()
        await self.first_round.wait()
        opened_after = time.monotonic() - started
        result = await asyncio.to_thread(victim)
        self.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return opened_after, result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("port", type=int)
    ap.add_argument("--connections", type=int, default=300)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--flooder", default="127.0.0.1")
    ap.add_argument("--victim", default="127.0.0.2")
    ap.add_argument("--kinds", default="header,body", help="the flood connections' kinds, in turn (default header,body)")
    ap.add_argument("--hold", type=float, default=30, help="seconds a flood connection waits for an answer")
    args = ap.parse_args()

    setup = victim_request(args.port, args.victim, "PUT", "/user/settings", "victim", b'{"theme": "dark"}')
    if setup[0] != 200:
        print(json.dumps({"error": "the victim's PUT answered %s: %s" % (setup[0], setup[1])}))
        sys.exit(1)

    def victim():
        return [victim_request(args.port, args.victim, "GET", "/user/settings", "victim")
                for _ in range(args.requests)]

    kinds = args.kinds.split(",")
    if not kinds or set(kinds) - {"tcp", "header", "body"}:
        ap.error("--kinds: a comma-separated list of tcp, header and body")
    flood = Flood(args.port, args.flooder, args.connections, args.hold, kinds)
    opened_after, answers = asyncio.run(flood.run(victim))
    statuses = {}
    for status, _, _ in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    seconds = sorted(s for _, _, s in answers)
    print(json.dumps({
        "connections": args.connections,
        "flood_opened_seconds": round(opened_after, 2),
        "victim_requests": args.requests,
        "victim_ok": sum(1 for status, body, _ in answers if status == 200 and json.loads(body).get("theme") == "dark"),
        "victim_statuses": statuses,
        "victim_seconds_median": round(statistics.median(seconds), 3),
        "victim_seconds_max": round(seconds[-1], 3),
        "victim_failures": sorted({"%s %s" % (status, body[:200]) for status, body, _ in answers if status != 200}),
        "flood": flood.outcomes,
        "sample_429": flood.sample_429,
    }, indent=1))


if __name__ == "__main__":
    main()
