#!/usr/bin/env python3
"""Malformed requests through nginx + TLS, then proof that nothing broke.

    hostile.py BASE DATA_DIR RUN_DIR [--requests N] [--seed S] [--threads T] [--json FILE]

BASE is a running stack (https://127.0.0.1:PORT), DATA_DIR its data
directory and RUN_DIR its run directory (for logs/error.log). Every request
is built byte by byte and sent over its own TLS connection (raw sockets, so
that requests curl and http.client refuse to make are possible): odd
methods, headers, user keys, paths, message ids, bodies and their framing
(Content-Length, chunked, slow, oversized), JSON that is broken, too deep or
strange, and garbage in every header the routes read. The first requests
cover every kind once; the rest are drawn at random from --seed.

Then it proves:
  - no 502 or 504, and no other 5xx except the two nginx owes a client for
    a framing it does not implement (501 for an unknown Transfer-Encoding,
    505 for an HTTP version it does not speak), each listed;
  - every answer with a body is JSON with Content-Type application/json;
  - where a case has a definite answer (400 for a bad key, 413 for an
    oversized body ...), that answer;
  - every complete request got an answer, and no answer leaks a file;
  - nginx's error.log (and fcgiwrap's log) show no program crash;
  - no file appeared outside DATA_DIR: its parent is walked before and after
    (any new path fails); in the repository, which others edit meanwhile, a
    new path fails when its name or content holds this run's marker, which
    every request able to name a path carries; /, /tmp and the repository
    are searched for paths named with the marker. Inside DATA_DIR only the
    files the data layout names may exist;
  - every stored document is whole (settings files are JSON objects in the
    Python layout, change logs whole 256-byte records, envelopes parse), and
    the sentinel key's files, which only traversal attempts aim at, are
    byte for byte what they were.

Prints counts by status and a one-line verdict; exit status 1 on any violation.
"""
import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stresslib  # noqa: E402
import suite  # noqa: E402  (Tests/support/, on the path stresslib sets)

SETTINGS = "/user/settings"
SETTINGS_LIMIT = 1 << 20
INBOX_LIMIT = 256 << 10
KEYS = ["hk1", "hk2", "hk_3-x"]
SENTINEL = "sentinel0"
TS_KEY = "hk-ts"
CRASH_MARKERS = ["upstream prematurely closed", "signal", "Fatal error", "Segmentation", "Illegal instruction",
                 "core dumped", "Trace/breakpoint", "Aborted", "unexpected error", "Swift runtime failure",
                 "Cannot get script name", "Cannot execute script", "fork failed"]
LEAK_MARKERS = [b"root:x:0:0", b"MOCKCLOUD-INBOX-LOG", b"PRIVATE KEY", b"BEGIN CERTIFICATE", b"worker_processes"]


def b(text):
    return text if isinstance(text, bytes) else text.encode("utf-8")


class Case:
    def __init__(self, kind, label, parts, head=False, expect=None, answers=1, allow_5xx=(), plain=False,
                 read_timeout=10.0):
        self.kind = kind
        self.label = label
        self.parts = parts if isinstance(parts, list) else [parts]
        self.head = head
        # A set of statuses that are right for this case, or None: any non-5xx.
        self.expect = expect
        # How many answers the server owes: 1, 2 (a pipeline), or None when
        # the client never finished its request (none is fine, one too).
        self.answers = answers
        self.allow_5xx = set(allow_5xx)
        self.plain = plain
        self.read_timeout = read_timeout


def raw(method, target, headers=(), body=None, version="HTTP/1.1", length="auto", close=True, host=True):
    """A request as bytes; `length` "auto" adds Content-Length for a body."""
    line = b(method) + b" " + b(target) + ((b" " + b(version)) if version else b"")
    lines = [line]
    if host:
        lines.append(b"Host: 127.0.0.1")
    for name, value in headers:
        lines.append(b(name) + b": " + b(value))
    if length == "auto" and body is not None:
        lines.append(b"Content-Length: %d" % len(body))
    elif length not in ("auto", None):
        lines.append(b"Content-Length: " + b(length))
    if close:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


def any_route(rng, key=None, write=False):
    """(method, path, extra headers, body limit) for a random route."""
    key = key or rng.choice(KEYS)
    choice = rng.randrange(3)
    if choice == 0:
        method = rng.choice(["PUT", "PATCH"] if write else ["GET", "PUT", "DELETE", "PATCH", "HEAD"])
        headers = [("X-User-Key", key)]
        if method == "PATCH":
            headers.append(("Content-Type", "application/merge-patch+json"))
        return method, SETTINGS, headers, SETTINGS_LIMIT
    if choice == 1:
        method = "POST" if write else rng.choice(["GET", "POST", "HEAD"])
        return method, "/inbox", [("X-User-Key", key)], INBOX_LIMIT
    method = "PUT" if write else rng.choice(["GET", "PUT", "DELETE", "HEAD"])
    return method, "/inbox/hm-%d" % rng.randrange(50), [("X-User-Key", key)], INBOX_LIMIT


def with_body(method):
    return method in ("PUT", "PATCH", "POST")


def nest(depth, kind="object"):
    """A JSON value `depth` levels deep (the top value is level 1)."""
    if kind == "object":
        return b'{"a": ' * (depth - 1) + b"{}" + b"}" * (depth - 1)
    return b"[" * depth + b"]" * depth


# ---------------------------------------------------------------- kinds


def k_method(rng, mark):
    path = rng.choice([SETTINGS, "/inbox", "/inbox/hm-1"])
    method = rng.choice([
        "get", "put", "Get", "pUT", "TRACE", "CONNECT", "OPTIONS", "PROPFIND", "MKCOL", "LOCK", "COPY", "MOVE",
        "SEARCH", "BREW", "X" * rng.choice([17, 100, 1000, 5000]), "GET\x00", "G\tET", "GÉT", "-", "_", "123",
        "POST" if path != "/inbox" else "PATCH", "DELETE" if path == "/inbox" else "POST",
    ])
    target = "127.0.0.1:443" if method == "CONNECT" and rng.random() < 0.5 else path
    body = b"{}" if rng.random() < 0.5 else None
    return Case("method", "%r %s" % (method[:20], target), raw(method, target, [("X-User-Key", "hk1")], body))


def k_headers(rng, mark):
    method, path, headers, _ = any_route(rng)
    body = b'{"mark": "%s"}' % b(mark) if with_body(method) else None
    variant = rng.randrange(12)
    headers = list(headers)
    expect = None
    if variant == 0:
        headers.append(("X-Huge", "h" * rng.choice([9000, 20000, 70000])))
        label, expect = "one huge header", {400, 431}
    elif variant == 1:
        headers += [("X-Many-%d" % i, "v" * 60) for i in range(rng.choice([100, 300, 1000]))]
        label = "hundreds of headers"
    elif variant == 2:
        headers.append(("X-User-Key", rng.choice(["hk2", "../" + SENTINEL, "", "x" * 200])))
        label = "duplicate X-User-Key"
    elif variant == 3:
        headers.append(("X User Key", "hk1"))
        label = "header name with spaces"
    elif variant == 4:
        headers = [(n, v) for n, v in headers if n != "X-User-Key"] + [("X_User_Key", "hk1")]
        label = "X_User_Key with underscores (nginx drops it)"
        expect = {400, 405, 404} if method != "HEAD" else None
    elif variant == 5:
        headers.append((b"X-Bin\xff\xfe", b"\x01\x02"))
        label = "binary header name"
    elif variant == 6:
        headers.append(("X-Nul", b"a\x00b"))
        label, expect = "NUL in a header value", {400}
    elif variant == 7:
        headers.append(("X-Folded", "a\r\n\tcontinued"))
        label = "obsolete line folding"
    elif variant == 8:
        headers.append(("NoColonHere", ""))
        headers = [(n, v) for n, v in headers] + [(b"JustAName", b"")]
        label = "header without a value"
    elif variant == 9:
        headers.append((b"X-CR", b"a\rb"))
        label = "bare CR in a header value"
    elif variant == 10:
        headers.append(("Content-Type", "application/json; charset=" + "x" * 3000))
        label = "long Content-Type"
    else:
        headers.append(("X-User-Key ", "hk1"))
        label = "space before the colon"
    return Case("headers", label, raw(method, path, headers, body), head=method == "HEAD", expect=expect)


BAD_KEYS = [
    "../" + SENTINEL, "..", ".", "../../../../tmp/%s" % "MARK", "..%2F" + SENTINEL, "%2e%2e%2f" + SENTINEL,
    "%00", "hk1%00", "a%00b", "hk1/../" + SENTINEL, "/etc/passwd", "C:\\Windows", "hk1;id", "$(id)",
    "`id`", "hk1 hk2", "hk1,hk2", "*", "ключ", "üser", "用户", "\U0001F600", "k" * 129, "k" * 200,
    "k" * 4000, "hk.1", "hk:1", "hk@1", "+hk1", "hk1\\", ".locks", "user_settings/" + SENTINEL,
    "\u202ehk1", "hk1\u200b", "ＡＢＣ", "%2F", "%ZZ", "'", '"', "<script>",
]


def k_key(rng, mark):
    method, path, headers, _ = any_route(rng)
    if method == "HEAD":
        method = "GET"
    if path == SETTINGS and method == "PATCH":
        extra = [("Content-Type", "application/merge-patch+json")]
    else:
        extra = []
    key = rng.choice(BAD_KEYS + ["", "", "EMPTY-HEADER"]).replace("MARK", mark)
    if key == "EMPTY-HEADER":
        request_headers, label = [("X-User-Key", "")] + extra, "empty X-User-Key"
    elif key == "" and rng.random() < 0.5:
        request_headers, label = extra, "no X-User-Key"
    else:
        request_headers, label = [("X-User-Key", key)] + extra, "X-User-Key %r" % key[:40]
    body = b'{"pwn": "%s"}' % b(mark) if with_body(method) else None
    return Case("key", "%s %s %s" % (method, path, label), raw(method, path, request_headers, body), expect={400})


def k_key_ok_edges(rng, mark):
    """Keys that look odd but are valid or become valid (nginx trims spaces)."""
    key = rng.choice(["k" * 128, "-", "_", "--", "A-z_0", " hk1", "hk1 ", "\thk1"])
    method, path, headers, _ = any_route(rng, key=key)
    headers = [("X-User-Key", key)] + [h for h in headers if h[0] != "X-User-Key"]
    body = b'{"mark": "%s"}' % b(mark) if with_body(method) else None
    return Case("key-edge", "%s %s key %r" % (method, path, key), raw(method, path, headers, body),
                head=method == "HEAD")


def k_path(rng, mark):
    key = [("X-User-Key", "hk1")]
    target = rng.choice([
        "/user/settings/..", "/user/../user/settings", "//user//settings", "/user/settings/",
        "/user/settings%2F..", "/user%2Fsettings", "/user/settings%00", "/user/settings/%2e%2e",
        "/../user/settings", "/./user/./settings", "/user/settings;x", "/user/settings.json",
        "/USER/SETTINGS", "/inbox/../user/settings", "/inbox/..%2F..%2Fuser_settings%2F" + SENTINEL,
        "/inbox/%2e%2e%2fuser_settings%2f" + SENTINEL, "/inbox/..%2F..%2F..%2F..%2Ftmp%2F" + mark,
        "/inbox/%00", "/inbox/a%00b", "/inbox/%2e%2e", "/inbox/.", "/inbox/..", "/inbox//x", "/inbox/x/y",
        "/inbox/%FF%FE", "/inbox/%C3%A9", "/inbox/\xc3\xa9", "/inbox/a%20b", "/inbox/%0d%0aX-Injected:%201",
        "/inbox/" + "a" * 201, "/inbox/" + "a" * 5000, "/" + "p" * rng.choice([3000, 9000, 70000]),
        "/inbox/%", "/inbox/%4", "/inbox/%G0", "/inbox/a?b", "/inbox/a#b", "/inbox/.tmp-x.json.1.0",
        "*", "", "user/settings", "http://evil.example/user/settings",
        "/inbox/" + SENTINEL + "%2F..%2F..%2F..%2F" + mark,
    ])
    method = rng.choice(["GET", "PUT", "DELETE"])
    body = b'{"pwn": "%s"}' % b(mark) if method == "PUT" else None
    # A raw byte the URI may not hold makes its own malformed request line.
    return Case("path", "%s %r" % (method, target[:60]), raw(method, target, key, body))


def k_message_id(rng, mark):
    ident = rng.choice([
        "..", ".", "...", ".tmp-hidden", "a" * 200, "a" * 201, "-", ":", "a:b.c-d_e", "CON", "nul",
        "x.json", "x.json.mac", "x.mac", "changes.log", "..json", ".locks", "%252e%252e", "%2500",
        "%C0%AE%C0%AE", "%E2%80%AE", "x%0A", "x%09y", "x%2By", "x+y", "x%7Cy",
    ])
    method = rng.choice(["GET", "PUT", "DELETE", "PUT"])
    headers = [("X-User-Key", "hk2"), ("X-Sync-Version", str(rng.randrange(3)))]
    body = b'{"mark": "%s"}' % b(mark) if method == "PUT" else None
    return Case("message-id", "%s /inbox/%s" % (method, ident[:40]), raw(method, "/inbox/" + ident, headers, body))


def k_oversize(rng, mark):
    method, path, headers, limit = any_route(rng, write=True)
    size = limit + rng.choice([1, 2, 4096, limit, 3 * limit])
    body = b'{"pad": "' + b"x" * (size - 11) + b'"}'
    expect100 = rng.random() < 0.3
    if expect100:
        headers = headers + [("Expect", "100-continue")]
    return Case("oversize", "%s %s %d bytes%s" % (method, path, size, " (Expect: 100-continue)" if expect100 else ""),
                raw(method, path, headers, body), expect={413})


def k_at_limit(rng, mark):
    method, path, headers, limit = any_route(rng, write=True)
    if path == SETTINGS and method == "PATCH":
        method = "PUT"
        headers = [h for h in headers if h[0] != "Content-Type"]
    body = b'{"pad": "' + b"x" * (limit - 11) + b'"}'
    expect = {200, 201, 409}
    return Case("at-limit", "%s %s exactly %d bytes" % (method, path, limit), raw(method, path, headers, body),
                expect=expect)


def k_content_length(rng, mark):
    method, path, headers, _ = any_route(rng, write=True)
    body = b'{"n": 1, "pad": "%s"}' % (b"y" * rng.randrange(0, 300))
    variant = rng.randrange(9)
    if variant == 0:
        cut = rng.randrange(1, len(body))
        close = rng.random() < 0.5
        return Case("content-length", "%s %s Content-Length %d for %d bytes" % (method, path, cut, len(body)),
                    raw(method, path, headers, body, length=str(cut), close=close),
                    answers=None if not close else 1, read_timeout=3.0)
    if variant == 1:
        extra = rng.randrange(1, 5000)
        return Case("content-length", "%s %s Content-Length %d for %d bytes (never sent)" % (
            method, path, len(body) + extra, len(body)),
            raw(method, path, headers, body, length=str(len(body) + extra)), answers=None, read_timeout=2.0)
    if variant == 2:
        value = rng.choice(["-1", "-100", "-0"])
        return Case("content-length", "Content-Length %s" % value, raw(method, path, headers, body, length=value),
                    expect={400} if value != "-0" else None)
    if variant == 3:
        value = rng.choice(["abc", "1e3", "0x10", "+5", "5 5", "5,5", "１２", "99999999999999999999999",
                            "18446744073709551616", "9223372036854775808", " ", "5\t"])
        return Case("content-length", "Content-Length %r" % value, raw(method, path, headers, body, length=value),
                    expect={400, 413}, answers=None if value in ("5 5",) else 1, read_timeout=3.0)
    if variant == 4:
        extra = [("Content-Length", str(len(body) + 3))]
        return Case("content-length", "two different Content-Lengths",
                    raw(method, path, headers + extra, body), expect={400})
    if variant == 5:
        extra = [("Transfer-Encoding", "chunked")]
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        return Case("content-length", "Content-Length and Transfer-Encoding: chunked",
                    raw(method, path, headers + extra, chunked, length=str(len(body))), expect={400})
    if variant == 6:
        return Case("content-length", "GET with a body", raw("GET", path, headers, body),
                    expect=None)
    if variant == 7:
        return Case("content-length", "Content-Length 0 on a write",
                    raw(method, path, headers, b"", length="0"))
    return Case("content-length", "a write with no Content-Length and no body (HTTP/1.0)",
                raw(method, path, headers, None, version="HTTP/1.0"))


def chunked(body, rng):
    out, i = b"", 0
    while i < len(body):
        n = rng.randint(1, max(1, len(body) // 3))
        ext = b";ext=1" if rng.random() < 0.2 else b""
        out += b"%x%s\r\n%s\r\n" % (n if i + n <= len(body) else len(body) - i, ext, body[i:i + n])
        i += n
    return out + b"0\r\n" + (b"X-Trailer: 1\r\n" if rng.random() < 0.3 else b"") + b"\r\n"


def k_chunked(rng, mark):
    method, path, headers, limit = any_route(rng, write=True)
    elsewhere = rng.random() < 0.15
    if elsewhere:
        # A path no route serves: nginx answers 404 and discards the body.
        path = rng.choice(["/nothing-here", "/user", "/inboxes"])
    headers = headers + [("Transfer-Encoding", "chunked")]
    body = b'{"chunked": true, "pad": "%s"}' % (b"z" * rng.randrange(0, 2000))
    variant = rng.randrange(8)
    if variant == 0:
        label, data, expect, answers = "valid chunks", chunked(body, rng), None, 1
        if path != SETTINGS:
            expect = {200, 201, 409}
    elif variant == 1:
        label, data, expect, answers = "chunk size not hex", b"zz\r\n" + body + b"\r\n0\r\n\r\n", {400}, 1
    elif variant == 2:
        label, data, expect, answers = "chunk shorter than its size", b"%x\r\n%s\r\n0\r\n\r\n" % (
            len(body) + 10, body), None, None
    elif variant == 3:
        label, data, expect, answers = "chunk size overflows", b"FFFFFFFFFFFFFFFFFFFF\r\n" + body, {400, 413}, 1
    elif variant == 4:
        label, data, expect, answers = "no final chunk (client stops)", b"%x\r\n%s\r\n" % (len(body), body), None, None
    elif variant == 5:
        label, data, expect, answers = "negative chunk size", b"-5\r\nhello\r\n0\r\n\r\n", {400}, 1
    elif variant == 6:
        big = b'{"pad": "' + b"c" * (limit + 10) + b'"}'
        label, data, expect, answers = "chunked body over the limit", chunked(big, rng), {413}, 1
    else:
        label, data, expect, answers = "chunk without CRLF", b"%x\r\n%sXX0\r\n\r\n" % (len(body), body), {400}, None
    if elsewhere and expect is not None:
        expect = {400, 404, 413}
    return Case("chunked", "%s %s %s" % (method, path, label),
                raw(method, path, headers, data, length=None), expect=expect, answers=answers, read_timeout=3.0)


def k_slow(rng, mark):
    method, path, headers, _ = any_route(rng, write=True)
    body = b'{"slow": true, "n": 12345}'
    head = raw(method, path, headers, None, length=str(len(body)))
    # A byte every 100 ms for 2 s (20 bytes), then the rest at once.
    parts = [head]
    for i in range(20):
        parts += [body[i:i + 1], 0.1]
    parts.append(body[20:])
    expect = {200, 201, 409}
    return Case("slow", "%s %s a byte every 100 ms for 2 s" % (method, path), parts, expect=expect)


BROKEN_JSON = [
    b"{", b"}", b"{nope", b"{'a': 1}", b'{"a": 1,}', b'{"a" 1}', b'{"a": 01}', b'{"a": .5}', b'{"a": 1.}',
    b'{"a": +1}', b'{"a": 0x10}', b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}', b"NaN",
    b'{"a": nan}', b'{"a": tru}', b'{"a": "\\x41"}', b'{"a": "\\u12"}', b'{"a": "\\uZZZZ"}', b'{"a": "tab\tin"}',
    b'{"a": "nl\nin"}', b'{"a": "\x00"}', b'{"a": 1} x', b'{"a": 1}{"b": 2}', b"{} // comment",
    b'/* c */ {"a": 1}', b'{"a": "\xff"}', b'{"a": "\xc0\xaf"}', b'{"a": "\xed\xa0\x80"}', b'{"\xfe": 1}',
    b'{"a": "\xe2\x82"}', b'{"a": [1, 2}', b'{"a": {"b": 1]}', b'[', b'"',
    b'{"a": "unterminated}', b'{"a": 1e}', b'{"a": 1e+}', b'{"a": -}', b'{"a": --1}', b'{,}', b'{"a":1,,"b":2}',
    b"\x00\x00\x00{", b"{\x0b}", b'{"a": \'b\'}', b'{"a": undefined}', b'{a: 1}',
]

ODD_BUT_VALID_JSON = [
    b'{"a": 1, "a": 2}', b'{"": 0}', b'{"a": "\\u0000"}', b'{"a": "\\ud800"}', b'{"a": "\\udc00\\ud800"}',
    b'{"a": "\\ud83d\\ude00"}', b'{"a": 1e999999}', b'{"a": -1e-999999}', b'{"a": -0}', b'{"a": 0e0}',
    b'{"a": 1E+2}', b'{"a": ' + b"9" * 5000 + b"}", b'{"a": 0.' + b"1" * 5000 + b"}",
    b'{"a": 123456789012345678901234567890}', b'{"__proto__": {"x": 1}}', b'{"constructor": null}',
    b'{"a": "' + "é\u2028\u2029".encode() * 500 + b'"}', b' \t\r\n{"ws": true} \t\r\n', b"{}",
    b'{"a": [[], {}, [{}], {"b": []}]}', b'{"a": "\\/\\b\\f\\n\\r\\t\\"\\\\"}', b'{"k": "' + b"s" * 100000 + b'"}',
    # RFC 8259 section 8.1: a parser MAY ignore a byte order mark.
    b'\xef\xbb\xbf{"bom": 1}', b'{"serverReceivedAt": 5, "updatedAt": null}', b'{"body": {"id": "x"}, "id": "y", "seq": -1}',
]


def k_json(rng, mark):
    method, path, headers, _ = any_route(rng, write=True)
    variant = rng.randrange(10)
    if variant < 4:
        body = rng.choice(BROKEN_JSON)
        return Case("json", "%s %s broken %r" % (method, path, body[:30]), raw(method, path, headers, body),
                    expect={400})
    if variant < 6:
        depth = rng.choice([65, 100, 1000, 10000, 100000])
        kind = rng.choice(["object", "array"])
        body = nest(depth, kind)
        if kind == "array":
            body = b'{"a": ' + body + b"}"
        if len(body) > (SETTINGS_LIMIT if path == SETTINGS else INBOX_LIMIT):
            return Case("json", "%s %s %s nested %d deep (over the size limit)" % (method, path, kind, depth),
                        raw(method, path, headers, body), expect={413})
        return Case("json", "%s %s %s nested %d deep" % (method, path, kind, depth),
                    raw(method, path, headers, body), expect={400})
    if variant == 6:
        body = nest(64)
        return Case("json", "%s %s nested exactly 64 deep" % (method, path), raw(method, path, headers, body),
                    expect={200, 201, 409, 404})
    if variant == 7:
        body = rng.choice([b"[]", b"[1]", b'"x"', b"1", b"null", b"true", b"  ", b"\n"])
        return Case("json", "%s %s not an object %r" % (method, path, body), raw(method, path, headers, body),
                    expect={400} if body.strip() or path != SETTINGS or method != "PUT" else None)
    body = rng.choice(ODD_BUT_VALID_JSON)
    return Case("json", "%s %s odd but valid %r" % (method, path, body[:30]), raw(method, path, headers, body))


TIMESTAMPS = [
    "99999999999999999999T000000Z", "20261318T000000Z", "20260230T000000Z", "20260101T246000Z",
    "20260101T235960Z", "20260101T000000.9999999999999999999999Z", "2026-05-18T04:43:04.999999999Z",
    "+999999999-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "0000-00-00T00:00:00Z",
    "2026-05-18T04:43:04+99:99", "2026-05-18T04:43:04+9999999999:00", "2026-05-18T04:43:04-24:00",
    "2026-05-18T04:43:04.Z", "2026-05-18T04:43:04,5Z", "2026-05-18", "T", "", "Z", "2026-05-18T04:43:04z",
    "9223372036854775807-01-01T00:00:00Z", "20260518T044304.0950Z\u0000", "２０２６-05-18T04:43:04Z",
    "2026-05-18T04:43:04.095+02:00" * 50, "18446744073709551616T000000Z", "99991231T235959.999999999Z",
    "00010101T000000Z", "1970-01-01T00:00:00Z", "2026-05-18T04:43:60Z",
]


def k_timestamp(rng, mark):
    stamp = rng.choice(TIMESTAMPS + [12, 1e308, -1, None, [], {}, True])
    body = json.dumps({"updatedAt": stamp, "t": "ts"}).encode()
    if rng.random() < 0.3:
        return Case("timestamp", "PATCH updatedAt %r" % (str(stamp)[:40],),
                    raw("PATCH", SETTINGS, [("X-User-Key", TS_KEY), ("Content-Type", "application/merge-patch+json")],
                        body), expect={200, 409})
    return Case("timestamp", "PUT updatedAt %r" % (str(stamp)[:40],),
                raw("PUT", SETTINGS, [("X-User-Key", TS_KEY)], body), expect={200, 409})


CONDITIONS = ['*', '"', '""', 'W/"x"', '"a", "b"', '"' + "e" * 10000 + '"', b'"\xff"', ',,,', '"a" "b"',
              '*, "x"', 'W/', '"""', "\u00e9", '"0000000000000000"', " ", "W/*", '"a",', ',"a"']


def k_conditional(rng, mark):
    header = rng.choice(["If-Match", "If-None-Match"])
    value = rng.choice(CONDITIONS)
    method = rng.choice(["GET", "PUT", "DELETE", "PATCH", "HEAD"])
    headers = [("X-User-Key", rng.choice(KEYS)), (header, value)]
    if method == "PATCH":
        headers.append(("Content-Type", "application/merge-patch+json"))
    body = b'{"c": 1}' if method in ("PUT", "PATCH") else None
    expect = {200, 204, 304, 404, 412}
    if len(value) > 8000:
        expect |= {400, 431}
    return Case("conditional", "%s %s: %r" % (method, header, value[:30]),
                raw(method, SETTINGS, headers, body), head=method == "HEAD", expect=expect)


SYNC_VERSIONS = ["-1", "1.5", "1e3", "99999999999999999999", "9223372036854775807", "9223372036854775808",
                 " 1", "1 ", "0x1", "+1", "", "1,2", "١", "１", "abc", "1\t", "00000000000000000001",
                 "0" * 19, "-0"]
DEVICE_IDS = ["../x", "", "d" * 129, "ключ", "a b", "a/b", "%00", "*"]


def k_sync_version(rng, mark):
    ident = "hm-sv-%d" % rng.randrange(5)
    headers = [("X-User-Key", "hk2")]
    if rng.random() < 0.75:
        value = rng.choice(SYNC_VERSIONS)
        headers.append(("X-Sync-Version", value))
        # nginx trims surrounding blanks, and a leading run of zeros is a number.
        valid = value.strip().isdigit() and value.strip().isascii() and len(value.strip()) <= 18
        label, expect = "X-Sync-Version %r" % value, None if valid else {400}
    else:
        value = rng.choice(DEVICE_IDS)
        headers.append(("X-Device-Id", value))
        label, expect = "X-Device-Id %r" % value, {400}
    method = rng.choice(["PUT", "POST"])
    path = "/inbox/" + ident if method == "PUT" else "/inbox"
    return Case("sync-version", "%s %s %s" % (method, path, label), raw(method, path, headers, b'{"v": 1}'),
                expect=expect)


QUERIES = [
    ("anchor=%ZZ", {400}), ("anchor=%", {400}), ("anchor=%4", {400}), ("limit=%41", {400}), ("limit=0", {400}),
    ("limit=1001", {400}), ("limit=-1", {400}), ("limit=99999999999999999999", {400}), ("limit=", {400}),
    ("limit=1e3", {400}), ("limit=%31%30", {200}), ("limit=1&limit=2", None), ("anchor=..", {400}),
    ("anchor=0.0.0", {200}), ("anchor=0.0.5", {410}), ("anchor=ffffffffffffffff.0.1", {410}),
    ("anchor=ffffffffffffffff.999999999999999999.999999999999999999", {410}),
    ("anchor=ffffffffffffffff.0.9999999999999999999", {400}), ("anchor=FFFFFFFFFFFFFFFF.0.1", {400}),
    ("anchor=%00", {400}), ("anchor=a.b.c", {400}), ("anchor=1.-1.1", {400}), ("anchor=" + "f" * 17 + ".0.1", {400}),
    ("exclude-source=../x", {400}), ("exclude-source=", {400}), ("exclude-source=%E2%80%AE", {400}),
    ("%00=1", None), ("a&&&=&", None), ("=", None), ("&", None), ("limit", {400}), ("x=" + "q" * 9000, None),
    ("anchor=+", {400}), ("limit=+5", {400}), ("limit=%2B5", {400}), ("limit=5%00", {400}), ("limit=%20%35", {400}),
]


def k_query(rng, mark):
    query, expect = rng.choice(QUERIES)
    if rng.random() < 0.2:
        return Case("query", "GET /user/settings?%s" % query[:40],
                    raw("GET", SETTINGS + "?" + query, [("X-User-Key", rng.choice(KEYS))]))
    return Case("query", "GET /inbox?%s" % query[:40], raw("GET", "/inbox?" + query, [("X-User-Key", "hk2")]),
                expect=expect)


def k_protocol(rng, mark):
    variant = rng.randrange(13)
    key = [("X-User-Key", "hk1")]
    if variant == 0:
        return Case("protocol", "HTTP/0.9 request line", b"GET /user/settings\r\n")
    if variant == 1:
        return Case("protocol", "HTTP/2.0 in an HTTP/1 request line", raw("GET", SETTINGS, key, version="HTTP/2.0"),
                    allow_5xx={505})
    if variant == 2:
        return Case("protocol", "HTTP/9.9", raw("GET", SETTINGS, key, version="HTTP/9.9"), allow_5xx={505})
    if variant == 3:
        return Case("protocol", "HTTP/1.1 without Host", raw("GET", SETTINGS, key, host=False), expect={400})
    if variant == 4:
        return Case("protocol", "absolute-form URI", raw("GET", "https://evil.example" + SETTINGS, key))
    if variant == 5:
        return Case("protocol", "plain HTTP to the TLS port", raw("GET", SETTINGS, key), plain=True, expect={400})
    if variant == 6:
        return Case("protocol", "random bytes instead of a TLS ClientHello",
                    bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600))), plain=True, answers=None,
                    read_timeout=3.0)
    if variant == 7:
        first = raw("GET", SETTINGS, key, close=False)
        second = raw("GET", "/inbox", [("X-User-Key", "hk2")])
        return Case("protocol", "two pipelined requests", first + second, answers=2)
    if variant == 8:
        return Case("protocol", "Transfer-Encoding: gzip", raw("PUT", SETTINGS, key + [("Transfer-Encoding", "gzip")],
                                                                b"{}", length=None), allow_5xx={501})
    if variant == 9:
        return Case("protocol", "Upgrade: h2c", raw("GET", SETTINGS, key + [
            ("Upgrade", "h2c"), ("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"), ("Connection", "Upgrade")]))
    if variant == 10:
        return Case("protocol", "lowercase version", raw("GET", SETTINGS, key, version="http/1.1"), expect={400})
    if variant == 11:
        return Case("protocol", "request line of spaces and tabs", b" \t \r\n\r\n", expect={400}, answers=None,
                    read_timeout=3.0)
    return Case("protocol", "header block never ends", raw("GET", SETTINGS, key)[:-2], answers=None,
                read_timeout=2.0)


KINDS = [
    (k_method, 6), (k_headers, 8), (k_key, 12), (k_key_ok_edges, 3), (k_path, 10), (k_message_id, 6),
    (k_oversize, 4), (k_at_limit, 2), (k_content_length, 8), (k_chunked, 6), (k_json, 14), (k_timestamp, 5),
    (k_conditional, 6), (k_sync_version, 5), (k_query, 6), (k_protocol, 5), (k_slow, 0),
]
SLOW_CASES = 4


def make_cases(count, seed, mark):
    rng = random.Random(seed)
    weighted = [kind for kind, weight in KINDS for _ in range(weight)]
    cases = []
    slow_left = min(SLOW_CASES, max(1, count // 100))
    for i in range(count):
        if i < len(KINDS):
            kind = KINDS[i][0]
        elif slow_left > 1 and rng.random() < 0.01:
            kind = k_slow
        else:
            kind = rng.choice(weighted)
        if kind is k_slow:
            if slow_left == 0:
                kind = rng.choice(weighted)
            else:
                slow_left -= 1
        cases.append(kind(rng, mark))
    return cases


# ---------------------------------------------------------------- run + judge


def run_case(base, case):
    responses, leftover, error, seconds = stresslib.exchange(
        base, case.parts, read_timeout=case.read_timeout, total_timeout=case.read_timeout + 10,
        head_request=case.head, plain=case.plain)
    return case, responses, leftover, error, seconds


def judge(case, responses, leftover, error):
    """The violations in one exchange."""
    out = []
    where = "[%s] %s" % (case.kind, case.label)
    if case.answers is not None and len(responses) < case.answers:
        out.append("%s: %d answer(s), expected %d (%s)" % (where, len(responses), case.answers, error))
    if leftover:
        out.append("%s: an incomplete answer: %r" % (where, leftover[:120]))
    for index, response in enumerate(responses):
        status = response.status
        if status is not None:
            if status in (502, 504):
                out.append("%s: %d (a program died or hung): %r" % (where, status, response.body[:200]))
            elif status >= 500 and status not in case.allow_5xx:
                out.append("%s: %d: %r" % (where, status, response.body[:200]))
            if index == 0 and case.expect is not None and status not in case.expect:
                out.append("%s: status %d, expected %s: %r" % (where, status, sorted(case.expect), response.body[:200]))
        if response.body:
            ctype = response.header("content-type")
            if response.version != "HTTP/0.9" and (ctype is None or ctype.split(";")[0].strip() != "application/json"):
                out.append("%s: %s answer with Content-Type %r: %r" % (where, status, ctype, response.body[:120]))
            try:
                json.loads(response.body)
            except ValueError:
                out.append("%s: %s answer is not JSON: %r" % (where, status, response.body[:120]))
        elif status is not None and status not in (204, 304) and not (case.head and index == 0):
            out.append("%s: %s answer without a body" % (where, status))
        for marker in LEAK_MARKERS:
            if marker in response.body:
                out.append("%s: the answer contains %r" % (where, marker))
    return out


def seed_data(base, mark):
    """Known documents: the hostile keys' (so that conditions and timestamps
    meet stored data) and the sentinel's, which no valid request names."""
    problems = []
    for key in KEYS + [SENTINEL]:
        r = stresslib.request(base, "PUT", SETTINGS, {"X-User-Key": key},
                              {"updatedAt": "2000-01-01T00:00:00Z", "seeded": key})
        if r.status != 200:
            problems.append("seeding %s: %s %r" % (key, r.status, r.body[:200]))
    r = stresslib.request(base, "PUT", SETTINGS, {"X-User-Key": TS_KEY}, {"updatedAt": "2000-01-01T00:00:00Z"})
    for key in ["hk2", SENTINEL]:
        for n in range(3):
            r = stresslib.request(base, "PUT", "/inbox/hm-%d" % n, {"X-User-Key": key, "X-Sync-Version": "1"},
                                  {"seeded": n})
            if r.status not in (200, 201):
                problems.append("seeding inbox %s: %s %r" % (key, r.status, r.body[:200]))
    return problems


def file_digests(root):
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return found


def sentinel_files(data):
    files = {}
    for path in [os.path.join(data, "user_settings", SENTINEL + ".json"), os.path.join(data, "inbox", SENTINEL)]:
        if os.path.isdir(path):
            files.update({os.path.join(path, k): v for k, v in file_digests(path).items()})
        elif os.path.exists(path):
            files[path] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return files


def marker_hits(roots, mark, depth=3):
    """Paths under `roots` (to `depth` levels) whose name holds the marker."""
    hits = []
    for root in roots:
        base_depth = root.rstrip("/").count("/")
        for directory, dirs, files in os.walk(root):
            if directory.count("/") - base_depth >= depth or directory.startswith(("/proc", "/sys", "/dev")):
                dirs[:] = []
            for name in dirs + files:
                if mark in name:
                    hits.append(os.path.join(directory, name))
    return hits


def marked(path, mark):
    """True when a new path could be this run's doing: its name or its
    content holds the marker that every request able to name a path (key,
    message id, path) carries in its body and its traversal names. The
    repository is edited by people, benchmarks and other tests while this
    runs, and they make files of the same shapes (even data directories)."""
    if mark in path:
        return True
    if os.path.isdir(path):
        return False
    try:
        with open(path, "rb") as handle:
            return mark.encode() in handle.read(1 << 22)
    except OSError:
        return False


def log_tail(path, offset):
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("data")
    parser.add_argument("run")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    args.data, args.run = os.path.abspath(args.data), os.path.abspath(args.run)
    return args


class Outside:
    """What lies outside the data directory, and the sentinel key inside it,
    before the run: to prove afterwards that no request wrote there."""

    def __init__(self, data, run):
        self.data, self.parent = data, os.path.dirname(data)
        self.skip = [data, os.path.join(run, "logs"), os.path.join(run, "tmp")]
        self.repo_skip = [os.path.join(stresslib.REPO, d) for d in (".build", ".git", ".swiftpm")] + self.skip
        self.parent_before = stresslib.snapshot(self.parent, self.skip)
        self.repo_before = stresslib.snapshot(stresslib.REPO, self.repo_skip)
        self.sentinel_before = sentinel_files(data)

    def created(self, mark):
        """(paths made outside the data directory, paths walked)."""
        parent_after = stresslib.snapshot(self.parent, self.skip)
        repo_after = stresslib.snapshot(stresslib.REPO, self.repo_skip)
        created = ["%s/%s" % (self.parent, p) for p in sorted(set(parent_after) - set(self.parent_before))]
        created += [path for path in ("%s/%s" % (stresslib.REPO, p) for p in sorted(set(repo_after) - set(self.repo_before)))
                    if marked(path, mark)]
        roots = ["/", "/tmp", self.parent, stresslib.REPO, self.data]
        created += ["marker name %s found: %s" % (mark, p) for p in marker_hits(roots, mark)]
        return created, (len(parent_after), len(repo_after))

    def sentinel_changed(self):
        after = sentinel_files(self.data)
        before = self.sentinel_before
        return [p for p in set(before) | set(after) if before.get(p) != after.get(p)]


class Tally:
    """The answers of a run, by status and by kind of case, and its violations."""

    def __init__(self):
        self.statuses = collections.Counter()
        self.by_kind = collections.defaultdict(collections.Counter)
        self.violations, self.allowed_5xx = [], []
        self.slowest = (0.0, "")

    def add(self, case, responses, leftover, error, seconds):
        if not responses:
            self.statuses["no answer"] += 1
            self.by_kind[case.kind]["no answer"] += 1
        for response in responses:
            label = str(response.status) if response.status is not None else "HTTP/0.9"
            self.statuses[label] += 1
            self.by_kind[case.kind][label] += 1
            if response.status and response.status >= 500 and response.status in case.allow_5xx:
                self.allowed_5xx.append("%d for [%s] %s" % (response.status, case.kind, case.label))
        self.violations.extend(judge(case, responses, leftover, error))
        if seconds > self.slowest[0]:
            self.slowest = (seconds, "[%s] %s" % (case.kind, case.label))

    def print(self, cases, seed, sent):
        print("%d requests (seed %d) in %.1f s; slowest %.1f s: %s" % (len(cases), seed, sent, *self.slowest))
        print("answers by status: " + ", ".join("%s: %d" % (k, v) for k, v in sorted(self.statuses.items())))
        for kind in sorted(self.by_kind):
            print("  %-15s %s" % (kind, ", ".join("%s: %d" % (k, v) for k, v in sorted(self.by_kind[kind].items()))))
        if self.allowed_5xx:
            print("5xx that nginx owes these requests (listed, not violations):")
            for line in sorted(set(self.allowed_5xx)):
                print("  " + line)

    def grouped_violations(self):
        """One line per kind of violation, with how often it happened and one example."""
        grouped = collections.OrderedDict()
        for line in self.violations:
            signature = line.split(": b'")[0].split(': b"')[0]
            signature = signature.split("] ")[0] + "] " + signature.split(": ", 1)[-1]
            grouped.setdefault(signature, []).append(line)
        return ["%dx %s\n            e.g. %s" % (len(lines), sig, lines[0][:400]) for sig, lines in grouped.items()]


def crash_lines(logs, offsets):
    """Lines of the logs, written since `offsets`, that tell of a program's crash."""
    found = []
    for name, path in logs.items():
        for line in log_tail(path, offsets[name]).splitlines():
            if any(marker in line for marker in CRASH_MARKERS):
                found.append("%s: %s" % (name, line[:300]))
    return found


def still_serves(base):
    after = []
    r = stresslib.request(base, "PUT", SETTINGS, {"X-User-Key": "hk1"}, {"updatedAt": "2099-01-01T00:00:00Z"})
    if r.status != 200:
        after.append("PUT after the run: %s %r" % (r.status, r.body[:200]))
    r = stresslib.request(base, "GET", "/inbox?limit=1000", {"X-User-Key": "hk2"})
    if r.status != 200:
        after.append("feed after the run: %s %r" % (r.status, r.body[:200]))
    return after


def main():
    args = parse_args()
    mark = "mcpwn%d" % args.seed
    started = time.monotonic()
    checks = suite.Checks()
    checks.check("seed the stack with known documents", seed_data(args.base, mark))
    outside = Outside(args.data, args.run)
    logs = {name: os.path.join(args.run, "logs", name) for name in ("error.log", "fcgiwrap.log")}
    offsets = {name: (os.path.getsize(path) if os.path.exists(path) else 0) for name, path in logs.items()}

    cases = make_cases(args.requests, args.seed, mark)
    tally = Tally()
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        for result in pool.map(lambda c: run_case(args.base, c), cases):
            tally.add(*result)
    sent = time.monotonic() - started
    tally.print(cases, args.seed, sent)
    checks.check("no 502/504, no unexpected 5xx, JSON bodies, expected statuses, every owed answer",
                 tally.grouped_violations())
    checks.check("error.log and fcgiwrap.log show no program crash", crash_lines(logs, offsets))
    created, walked = outside.created(mark)
    checks.check("no file created outside the data directory (%d + %d paths walked; /, /tmp searched for %s)"
                 % (*walked, mark), created)
    report = stresslib.check_data_dir(args.data)
    checks.check("every stored document is whole and only the data layout's files exist (%d files)"
                 % report.files_checked, report.problems)
    checks.check("the sentinel key's %d files are byte for byte unchanged" % len(outside.sentinel_before),
                 outside.sentinel_changed())
    checks.check("the stack still serves normal requests", still_serves(args.base))

    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"requests": len(cases), "seed": args.seed, "seconds": round(sent, 1),
                       "statuses": dict(tally.statuses), "by_kind": {k: dict(v) for k, v in tally.by_kind.items()},
                       "allowed_5xx": sorted(set(tally.allowed_5xx)), "violations": len(tally.violations),
                       "files_checked": report.files_checked, "failed_checks": checks.failed}, handle, indent=1)
    verdict = "PASS" if checks.failed == 0 else "FAIL"
    print("hostile: %s: %d requests, %d violations, %d failed checks" % (verdict, len(cases), len(tally.violations),
                                                                        checks.failed))
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
