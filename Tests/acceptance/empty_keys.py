#!/usr/bin/env python3
"""Requests on distinct keys that hold nothing, through the real stack.

    empty_keys.py BASE_URL [--count 300] [--data DATA_DIR] [--reads-only]

Each request uses a key never seen before, in turn: GET /inbox (the feed),
GET /user/settings, DELETE /user/settings, PATCH /user/settings,
GET /inbox/m1, DELETE /inbox/m1 (with --reads-only, the three GETs). None of them finds anything, so each must
answer as for an empty key (200 with an empty feed, 404 otherwise) and, the
point of the hostile-LAN rules, create nothing on disk. With --data, the files
under DATA_DIR are counted before and after and printed.

One keep-alive connection at full speed, one request at a time: as a client
that waits for each answer, it must never meet a 429. Exit status 1 on any
other answer.
"""
import argparse
import http.client
import json
import os
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import suite  # noqa: E402

REQUESTS = [
    ("GET", "/inbox", None, 200),
    ("GET", "/user/settings", None, 404),
    ("DELETE", "/user/settings", None, 404),
    ("PATCH", "/user/settings", b'{"a": 1}', 404),
    ("GET", "/inbox/m1", None, 404),
    ("DELETE", "/inbox/m1", None, 404),
]


def file_count(root):
    return sum(len(dirs) + len(files) for _, dirs, files in os.walk(root))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--data")
    ap.add_argument("--reads-only", action="store_true")
    args = ap.parse_args()
    kinds = [r for r in REQUESTS if r[0] == "GET"] if args.reads_only else REQUESTS
    connection = suite.connect(args.base)
    before = file_count(args.data) if args.data else None
    run = "%x" % int(time.time() * 1000)
    started = time.monotonic()
    problems = []
    for n in range(args.count):
        method, path, body, want = kinds[n % len(kinds)]
        headers = {"X-User-Key": "empty-%s-%d" % (run, n)}
        if body is not None:
            headers["Content-Type"] = "application/merge-patch+json"
        while True:
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                continue
            break
        if response.status != want or (want == 200 and json.loads(raw).get("messages") != []):
            problems.append("%s %s: %d %s" % (method, path, response.status, raw[:200]))
    seconds = time.monotonic() - started
    report = {"requests": args.count, "seconds": round(seconds, 1), "unexpected": len(problems)}
    if args.data:
        report.update(files_before=before, files_after=file_count(args.data))
    print(json.dumps(report))
    for line in problems[:10]:
        print(line, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
