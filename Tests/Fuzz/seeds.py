#!/usr/bin/env python3
"""Writes the seed corpora in Tests/Fuzz/corpus/<target>/ and the
dictionaries in Tests/Fuzz/dict/ (run it again after changing a seed here).
Seeds are valid and tricky inputs taken from docs/API.md and RFC 7396;
the fuzzer mutates them, so each names one shape the parsers must handle."""
import base64
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True     # no __pycache__ in the repository
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import cgi_program  # noqa: E402
import formats  # noqa: E402


def write_corpus(target, seeds):
    directory = os.path.join(HERE, "corpus", target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in seeds.items():
        if isinstance(data, str):
            data = data.encode("utf-8")
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def write_dict(target, tokens):
    os.makedirs(os.path.join(HERE, "dict"), exist_ok=True)
    with open(os.path.join(HERE, "dict", target + ".dict"), "w") as f:
        for token in tokens:
            escaped = "".join(c if 0x20 <= ord(c) < 0x7F and c not in '"\\' else "\\x%02x" % ord(c) for c in token)
            f.write('"%s"\n' % escaped)


FF = b"\xff"
ENVELOPE = ('{"id": "nm-1234-weight", "version": 1, "seq": 17, "source": "mirror-1", '
            '"serverReceivedAt": "20260518T044304.134233Z", "body": {"kg": 72.5, "at": "2026-05-18T04:43:04.095Z"}}')
TOMBSTONE = ('{"id": "nm-1234-weight", "version": 1, "seq": 18, "source": null, '
             '"serverReceivedAt": "20260518T044305.000000Z", "deleted": true}')
big = ", ".join('"k%d": %d' % (i, i) for i in range(40))

json_seeds = {
    "envelope.json": ENVELOPE,
    "tombstone.json": TOMBSTONE,
    "settings.json": '{\n  "updatedAt": "2026-05-18T04:43:04.095Z",\n  "theme": "dark",\n  "serverReceivedAt": "20260518T044304.134233Z"\n}',
    "numbers.json": "[0, -0, -0.0, 0.9990998620664758, 12345678901234567890, 1.50e3, 1E+2, 1e-7, -12.5E-10, 100000000000000000000000000000000000001]",
    "escapes.json": r'"caf\u00e9 \ud83d\ude00 \/ \b\f\n\r\t\"\\ \u0000 \u001f \u007f"',
    "utf8.json": '{"café": "😀", "ключ": "値"}',
    "bom.json": b"\xef\xbb\xbf" + b'{"a": 1}',
    "duplicates.json": '{"a": 1, "b": 2, "a": 3}',
    "duplicates-large.json": "{" + big + ', "k0": "last", "k39": "end"}',
    "depth-64.json": "[" * 64 + "]" * 64,
    "depth-65.json": "[" * 64 + "{}" + "]" * 64,
    "nonfinite.json": "[NaN, Infinity, -Infinity, -1]",
    "empty.json": '{"a": {}, "b": [], "c": "", "d": null, "e": true, "f": false}',
    "whitespace.json": ' \t\r\n{ "a" : [ true , false , null ] }\n ',
    "bad-trailing-comma.json": '{"a": 1,}',
    "bad-leading-zero.json": "[01]",
    "bad-surrogate.json": r'"\ud800x"',
    "bad-utf8.json": b'"\x80\xc3("',
    "bad-control.json": b'"a\x01b"',
    "bad-number.json": "[1., -, 1e, .5]",
    "bad-after.json": '{"a": 1} {"b": 2}',
    # RFC 7396 appendix A: target 0xFF patch.
    "merge-01": b'{"a":"b"}' + FF + b'{"a":"c"}',
    "merge-02": b'{"a":"b"}' + FF + b'{"b":"c"}',
    "merge-03": b'{"a":"b"}' + FF + b'{"a":null}',
    "merge-04": b'{"a":"b","b":"c"}' + FF + b'{"a":null}',
    "merge-05": b'{"a":["b"]}' + FF + b'{"a":"c"}',
    "merge-06": b'{"a":"c"}' + FF + b'{"a":["b"]}',
    "merge-07": b'{"a":{"b":"c"}}' + FF + b'{"a":{"b":"d","c":null}}',
    "merge-08": b'{"a":[{"b":"c"}]}' + FF + b'{"a":[1]}',
    "merge-09": b'["a","b"]' + FF + b'["c","d"]',
    "merge-10": b'{"a":"b"}' + FF + b'["c"]',
    "merge-11": b'{"a":"foo"}' + FF + b'null',
    "merge-12": b'{"e":null}' + FF + b'{"a":1}',
    "merge-13": b'[1,2]' + FF + b'{"a":"b","c":null}',
    "merge-14": b'{}' + FF + b'{"a":{"bb":{"ccc":null}}}',
    "merge-large": ("{" + big + "}").encode() + FF + b'{"k3": null, "k5": {"x": 1}, "new": [1], "k0": 0}',
}


def request(env, body=""):
    """A CGIFuzz input: NAME=value lines, an empty line, the body."""
    text = "".join("%s=%s\n" % kv for kv in env) + "\n"
    return text.encode() + (body.encode() if isinstance(body, str) else body)


def cgi(method, path, key, body, query="", extra=()):
    """A request in the environment nginx and fcgiwrap give it (the fuzz
    target sets MOCKCLOUD_DATA itself)."""
    body = body.encode() if isinstance(body, str) else body
    env = cgi_program.environment(method, path, headers={"X-User-Key": key}, query=query, body=body,
                                  extra=dict(extra))
    return request(sorted(env.items()), body)


def settings(method, key="alice", body="", extra=()):
    return cgi(method, "/user/settings", key, body, extra=extra)


def inbox(method, path="/inbox", key="alice", body="", query="", extra=()):
    return cgi(method, path, key, body, query, extra)


def seq(*requests):
    return b"\x00".join(requests)


DOC = '{"updatedAt": "2026-05-18T04:43:04.095Z", "theme": "dark", "n": 0.9990998620664758}'
OLDER = '{"updatedAt": "2026-05-18T04:43:03Z", "theme": "light"}'
COMPACT = [("MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS", "1"), ("MOCKCLOUD_INBOX_TOMBSTONE_HORIZON", "0")]
cgi_seeds = {
    "settings-get-empty": settings("GET", extra=[("CONTENT_LENGTH", "")]),
    "settings-put-get": seq(settings("PUT", body=DOC), settings("GET"), settings("HEAD")),
    "settings-put-older-409": seq(settings("PUT", body=DOC), settings("PUT", body=OLDER)),
    "settings-if-match": seq(settings("PUT", body=DOC), settings("PUT", body=DOC, extra=[("HTTP_IF_MATCH", '"0000000000000000"')]),
                             settings("GET", extra=[("HTTP_IF_NONE_MATCH", 'W/"x", "y", *')])),
    "settings-if-none-match-star": seq(settings("PUT", body="{}"), settings("PUT", body="{}", extra=[("HTTP_IF_NONE_MATCH", "*")])),
    "settings-patch": seq(settings("PUT", body=DOC),
                          settings("PATCH", body='{"theme": null, "new": {"a": 1}}',
                                   extra=[("CONTENT_TYPE", "Application/Merge-Patch+JSON; charset=utf-8")]),
                          settings("PATCH", body="{}", extra=[("CONTENT_TYPE", "application/json")])),
    "settings-delete": seq(settings("PUT", body=""), settings("DELETE"), settings("DELETE")),
    "settings-not-object": settings("PUT", body="[1, 2]"),
    "settings-deep": settings("PUT", body='{"a": ' + "[" * 64 + "]" * 64 + "}"),
    "settings-bad-length": settings("PUT", body="{}", extra=[("CONTENT_LENGTH", "12abc")]),
    "settings-short-body": settings("PUT", body="{}", extra=[("CONTENT_LENGTH", "10")]),
    "settings-too-large": settings("PUT", body='{"a": "xxxxxxxx"}', extra=[("FUZZ_LIMIT", "4")]),
    "settings-bad-key": seq(settings("GET", key="../etc"), settings("GET", key=""), settings("OPTIONS")),
    "settings-request-uri": request([("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/user/settings?x=1"), ("HTTP_X_USER_KEY", "bob")]),
    "settings-script-name": request([("REQUEST_METHOD", "GET"), ("SCRIPT_NAME", "/user"), ("PATH_INFO", "/settings"), ("HTTP_X_USER_KEY", "bob")]),
    "settings-signed": seq(settings("PUT", body=DOC, extra=[("FUZZ_SIGNED", "1")]),
                           settings("GET", extra=[("FUZZ_SIGNED", "1"), ("MOCKCLOUD_HMAC_REQUIRE", "1")])),
    "settings-require-unsigned": seq(settings("PUT", body=DOC), settings("GET", extra=[("FUZZ_SIGNED", "1"), ("MOCKCLOUD_HMAC_REQUIRE", "1")])),
    "settings-require-without-keys": settings("GET", extra=[("MOCKCLOUD_HMAC_REQUIRE", "1")]),
    "settings-tokens": seq(settings("GET", extra=[("FUZZ_TOKENS", "1")]),
                           settings("GET", extra=[("FUZZ_TOKENS", "1"), ("HTTP_AUTHORIZATION", "Bearer wrong")]),
                           settings("GET", extra=[("FUZZ_TOKENS", "1"), ("HTTP_AUTHORIZATION", "bearer  fuzz-token ")])),
    "settings-per-field": seq(
        settings("PUT", body=DOC),
        settings("PATCH", body='{"theme": "light", "n": null, "updatedAt": "2026-05-18T04:43:04.095Z"}',
                 extra=[("CONTENT_TYPE", "application/merge-patch+json"), ("HTTP_X_MERGE", "fields"),
                        ("HTTP_X_DEVICE_ID", "phone-a")]),
        settings("PATCH", body='{"theme": "dark", "updatedAt": "20260518T044303Z"}',
                 extra=[("CONTENT_TYPE", "application/merge-patch+json"), ("HTTP_X_MERGE", "fields")]),
        settings("GET", extra=[("HTTP_X_MERGE", "fields")]),
        settings("PATCH", body='{"a": 1}', extra=[("CONTENT_TYPE", "application/merge-patch+json"), ("HTTP_X_MERGE", "x")])),
    "settings-per-field-signed": seq(
        settings("PATCH", body='{"a": {"b": null}, "updatedAt": "2026-05-18T04:43:04Z"}',
                 extra=[("CONTENT_TYPE", "application/merge-patch+json"), ("HTTP_X_MERGE", "fields"), ("FUZZ_SIGNED", "1")]),
        settings("GET", extra=[("HTTP_X_MERGE", "fields"), ("FUZZ_SIGNED", "1")]),
        settings("PUT", body="{}", extra=[("HTTP_X_MERGE", "fields"), ("FUZZ_SIGNED", "1")])),
    "not-found": request([("REQUEST_METHOD", "GET"), ("DOCUMENT_URI", "/other"), ("HTTP_X_USER_KEY", "alice")]),
    "inbox-put-get-feed": seq(
        inbox("PUT", "/inbox/nm-1234-weight", body='{"kg": 72.5}', extra=[("HTTP_X_SYNC_VERSION", "1"), ("HTTP_X_DEVICE_ID", "mirror-1")]),
        inbox("GET", "/inbox/nm-1234-weight"),
        inbox("GET", query="limit=1&exclude-source=phone")),
    "inbox-versions": seq(
        inbox("PUT", "/inbox/a.b:c-d_e", body='{"v": 2}', extra=[("HTTP_X_SYNC_VERSION", "2")]),
        inbox("PUT", "/inbox/a.b:c-d_e", body='{"v": 2}', extra=[("HTTP_X_SYNC_VERSION", "2")]),
        inbox("PUT", "/inbox/a.b:c-d_e", body='{"v": 1}', extra=[("HTTP_X_SYNC_VERSION", "1")]),
        inbox("PUT", "/inbox/a.b:c-d_e", body='{"v": 3}', extra=[("HTTP_X_SYNC_VERSION", "x")])),
    "inbox-delete-feed": seq(
        inbox("PUT", "/inbox/m1", body="{}"), inbox("DELETE", "/inbox/m1"), inbox("DELETE", "/inbox/m1"),
        inbox("GET", query="anchor=&limit=1000")),
    "inbox-compaction": seq(
        inbox("PUT", "/inbox/m1", body="{}", extra=COMPACT), inbox("DELETE", "/inbox/m1", extra=COMPACT),
        inbox("PUT", "/inbox/m2", body="{}", extra=COMPACT), inbox("GET", query="anchor=0.0.0&limit=1", extra=COMPACT)),
    "inbox-post": seq(inbox("POST", body='{"note": "hi"}', extra=[("HTTP_X_DEVICE_ID", "phone")]),
                      inbox("GET", query="exclude-source=phone")),
    "inbox-anchors": seq(inbox("GET", query="anchor=0123456789abcdef.0.17"), inbox("GET", query="anchor=zz.1.2"),
                         inbox("GET", query="limit=0"), inbox("GET", query="anchor=%30.0.0&limit=%2B5")),
    "inbox-bad": seq(inbox("PUT", "/inbox/" + "x" * 201, body="{}"), inbox("PUT", "/inbox/a/b", body="{}"),
                     inbox("PATCH", "/inbox/a"), inbox("GET", query="exclude-source=a%2Fb&x=%zz")),
    "inbox-full": seq(inbox("PUT", "/inbox/m1", body="{}", extra=[("MOCKCLOUD_INBOX_MAX_MESSAGES", "1")]),
                      inbox("PUT", "/inbox/m2", body="{}", extra=[("MOCKCLOUD_INBOX_MAX_MESSAGES", "1")]),
                      inbox("GET", extra=[("MOCKCLOUD_INBOX_MAX_MESSAGES", "0")])),
    "inbox-signed": seq(inbox("PUT", "/inbox/m1", body="{}", extra=[("FUZZ_SIGNED", "1")]),
                        inbox("GET", query="", extra=[("FUZZ_SIGNED", "1"), ("MOCKCLOUD_HMAC_REQUIRE", "1")])),
}

timestamp_seeds = {
    "basic-micros": "20260518T044304.134233Z",
    "basic-seconds": "20260518T044304Z",
    "basic-empty-fraction": "20260518T044304.Z",
    "basic-nanos": "20260518T044304.123456789Z",
    "basic-offset": "20260518T044304+0200",
    "basic-offset-hours": "20260518T044304-05",
    "extended-millis": "2026-05-18T04:43:04.095Z",
    "extended-seconds": "2026-05-18T04:43:04Z",
    "extended-offset": "2026-05-18T04:43:04+02:00",
    "extended-lowercase-comma": "2026-05-18t04:43:04,5z",
    "leap-day": "2024-02-29T00:00:00Z",
    "first": "0000-01-01T00:00:00Z",
    "last": "9999-12-31T23:59:59.999999Z",
    "bad-date": "2026-02-30T00:00:00Z",
    "bad-hour": "2026-05-18T24:00:00Z",
    "bad-extended-fraction": "2026-05-18T04:43:04.Z",
    "bad-mixed": "2026-0518T044304Z",
}

anchor_seeds = {
    "beginning": "0.0.0",
    "typical": "0123456789abcdef.0.17",
    "largest": "ffffffffffffffff.999999999999999999.999999999999999999",
    "leading-zeros": "00a.007.0010",
    "bad-two-parts": "0.0",
    "bad-empty-part": "0..1",
    "bad-uppercase": "ABC.1.2",
    "bad-long-generation": "0123456789abcdef0.1.1",
    "bad-negative": "a.-1.2",
    "bad-four-parts": "a.1.2.3",
    "bad-19-digits": "a.1.9223372036854775807",
}


def record(seq, kind, live, ident):
    return formats.encode_record(formats.Record(seq, kind, live, ident))


def header(gen, compacted, last, records, epoch):
    return formats.encode_header(formats.Header(gen, compacted, last, records, epoch))


changelog_seeds = {
    "header-new": header("0123456789abcdef", 0, 0, 0, 0),
    "header-compacted": header("ffffffffffffffff", 7, 8, 2, 1),
    "header-max": header("0000000000000000", 2**63 - 1, 2**63 - 1, 1 << 40, 2**63 - 1),
    "record-put": record(17, "P", 3, "nm-1234-weight"),
    "record-delete": record(18, "D", 2, "nm-1234-weight"),
    "record-max": record(2**63 - 1, "P", 9_999_999_999, "a:b.c-d_e"),
    "record-long-id": record(42, "D", 100000, "x" * 200),
    "record-short": b"00000000000000000001 P 0000000001 a\n",
    "record-zeros": bytes(256),
    "record-overflow": record(1, "P", 1, "a").replace(b"00000000000000000001", b"99999999999999999999"),
    "record-bad-id": record(5, "P", 1, "a/b"),
}

HEX = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
B64 = base64.b64encode(bytes(range(32, 64))).decode()
signingkeys_seeds = {
    "rotation": "# new key first\nnew-2:%s\n\nold-1:%s\n" % (HEX, B64),
    "crlf-spaces": "  k.1 :%s \r\n\t# c\r\n" % HEX,
    "base64-unpadded": "k:%s\n" % base64.b64encode(bytes(range(48))).decode().rstrip("="),
    "bad-short": "k:%s\n" % HEX[:62],
    "bad-duplicate": "k:%s\nk:%s\n" % (HEX, B64),
    "bad-id": "k/1:%s\n" % HEX,
    "bad-secret": "k:%s!\n" % B64,
    "bad-no-colon": "just-a-line\n",
    "empty": "# only a comment\n\n",
    "tokens": "# mockcloud-admin token\nsha256:%s phone\nsha256:%s\n" % ("ab" * 32, "CD" * 32),
    "bad-token-line": "sha256:%s\n" % ("ab" * 31),
}

envelope_seeds = {
    "envelope.json": ENVELOPE,
    "tombstone.json": TOMBSTONE,
    "no-source.json": '{"id": "a", "version": 0, "seq": 1, "serverReceivedAt": "x", "body": {}}',
    "numbers.json": '{"id": "a:b.c-d_e", "version": 9223372036854775807, "seq": -1, "source": 5, "serverReceivedAt": "", "body": {"n": 1.50e3}}',
    "both.json": '{"id": "a", "version": 1, "seq": 2, "source": null, "serverReceivedAt": "t", "deleted": true, "body": {"x": []}}',
    "bad-body.json": '{"id": "a", "version": 1, "seq": 2, "source": null, "serverReceivedAt": "t", "body": [1]}',
    "bad-version.json": '{"id": "a", "version": 1.0, "seq": 2, "source": null, "serverReceivedAt": "t", "body": {}}',
    "bad-id.json": '{"id": "../x", "version": 1, "seq": 2, "source": null, "serverReceivedAt": "t", "body": {}}',
}

def fcgi_record(kind, request_id, content=b"", padding=0):
    return struct.pack(">BBHHBB", 1, kind, request_id, len(content), padding, 0) + content + bytes(padding)


def fcgi_pair(name, value):
    def length(n):
        return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)
    return length(len(name)) + length(len(value)) + name + value


def fcgi_request(request_id=1, keep=0, params=(), body=b"", role=1):
    pairs = b"".join(fcgi_pair(n.encode(), v.encode()) for n, v in params)
    out = fcgi_record(1, request_id, struct.pack(">HB5x", role, keep))
    out += fcgi_record(4, request_id, pairs, padding=(8 - len(pairs) % 8) % 8) + fcgi_record(4, request_id)
    if body:
        out += fcgi_record(5, request_id, body)
    return out + fcgi_record(5, request_id)


FCGI_PARAMS = [("REQUEST_METHOD", "PUT"), ("DOCUMENT_URI", "/user/settings"), ("CONTENT_LENGTH", "2"),
               ("HTTP_X_USER_KEY", "u1"), ("LONG", "v" * 200)]
# The first byte of each is the size of the pieces the rest arrives in.
fastcgi_seeds = {
    "one-request": b"\x07" + fcgi_request(params=FCGI_PARAMS, body=b"{}"),
    "kept-two": b"\x00" + fcgi_request(1, 1, FCGI_PARAMS, b"{}") + fcgi_request(2, 1, FCGI_PARAMS, b"x" * 100),
    "get-values": b"\x03" + fcgi_record(9, 0, fcgi_pair(b"FCGI_MAX_CONNS", b"") + fcgi_pair(b"FCGI_MPXS_CONNS", b"")),
    "abort": b"\x10" + fcgi_request(1, 1, FCGI_PARAMS)[:-8] + fcgi_record(2, 1) + fcgi_request(2, 0, FCGI_PARAMS),
    "multiplexed": b"\x05" + fcgi_record(1, 1, struct.pack(">HB5x", 1, 0)) + fcgi_request(2, 0, FCGI_PARAMS),
    "authorizer": b"\x08" + fcgi_request(3, 0, FCGI_PARAMS, role=2),
    "unknown-type": b"\x01" + fcgi_record(42, 0, bytes(8)),
    "bad-pairs": b"\x02" + fcgi_record(1, 1, struct.pack(">HB5x", 1, 0)) + fcgi_record(4, 1, b"\x85\x01ab") + fcgi_record(4, 1)
    + fcgi_record(5, 1),
}


write_corpus("json", json_seeds)
write_corpus("cgi", cgi_seeds)
write_corpus("timestamp", timestamp_seeds)
write_corpus("anchor", anchor_seeds)
write_corpus("changelog", changelog_seeds)
write_corpus("signingkeys", signingkeys_seeds)
write_corpus("envelope", envelope_seeds)
write_corpus("fastcgi", fastcgi_seeds)

write_dict("json", ["{", "}", "[", "]", ":", ",", '"', "true", "false", "null", "NaN", "Infinity", "-Infinity",
                    "\\u", "\\ud83d\\ude00", "\\udc00", "\\u212a", "K", "\\u00e9", "e\\u0301", "e+", "E-", "0.", "-0", "\xef\xbb\xbf", "\xff",
                    '"id"', '"version"', '"seq"', '"source"', '"serverReceivedAt"', '"body"', '"deleted"'])
write_dict("cgi", ["REQUEST_METHOD=", "GET", "HEAD", "PUT", "PATCH", "DELETE", "POST", "DOCUMENT_URI=", "REQUEST_URI=",
                   "SCRIPT_NAME=", "PATH_INFO=", "QUERY_STRING=", "/user/settings", "/inbox", "/inbox/", "anchor=",
                   "limit=", "exclude-source=", "HTTP_X_USER_KEY=", "HTTP_IF_MATCH=", "HTTP_IF_NONE_MATCH=",
                   "HTTP_X_SYNC_VERSION=", "HTTP_X_DEVICE_ID=", "CONTENT_TYPE=", "application/merge-patch+json",
                   "CONTENT_LENGTH=", "FUZZ_SIGNED=1", "FUZZ_TOKENS=1", "HTTP_AUTHORIZATION=", "Bearer fuzz-token", "FUZZ_LIMIT=", "FUZZ_CLOCK=", "MOCKCLOUD_HMAC_REQUIRE=1",
                   "MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS=1", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON=0",
                   "MOCKCLOUD_INBOX_MAX_MESSAGES=1", "HTTP_X_MERGE=", "fields", '"updatedAt"', "W/", "*", "\n\n", "\x00", "%2F", "%00", "null"])
write_dict("timestamp", ["T", "Z", "+", "-", ":", ".", ",", "0000", "9999", "1231", "0229", "2359", "59", "+23:59", "-2359"])
write_dict("fastcgi", ["\x01\x01\x00\x01\x00\x08\x00\x00", "\x01\x04\x00\x01", "\x01\x05\x00\x01\x00\x00\x00\x00",
                       "\x01\x02\x00\x01\x00\x00\x00\x00", "\x01\x09\x00\x00", "\x00\x01\x01\x00\x00\x00\x00\x00",
                       "REQUEST_METHOD", "CONTENT_LENGTH", "FCGI_MAX_CONNS", "FCGI_MPXS_CONNS", "\x80\x00\x01\x00"])
write_dict("changelog", [formats.MAGIC, " P ", " D ", "00000000000000000001", "0000000000", "9223372036854775807"])
