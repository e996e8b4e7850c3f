"""The on-disk formats as the tests and benchmarks see them, defined once.

The product's own definition is Sources/.../ChangeLog.swift; this is the
test side's one copy, used by Benchmarks/bench.py (a seeded inbox),
Tests/stress/stresslib.py (the data-directory checker), Tests/Fuzz/seeds.py
(change-log seeds) and, through the C header `c_header()` writes at build
time, Benchmarks/floor.c. Tests/support/check_formats.py (in `make test`)
proves it against the release programs, so it cannot drift silently.

A key's change log (inbox/<key>/changes.log) is a sequence of 256-byte text
records, each ending in a newline and padded with spaces: one header

    MOCKCLOUD-INBOX-LOG 1 <generation:16 hex> <compactedThrough:20> <lastSeq:20> <records:20> <epoch:20>

then one record per change, sorted by seq:

    <seq:20> <P|D> <live:10> <id, at most 200 bytes>

    python3 Tests/support/formats.py c-header    the C header floor.c includes
"""
import collections
import datetime
import json
import os
import re
import sys

RECORD = 256
MAGIC = "MOCKCLOUD-INBOX-LOG 1 "
GENERATION_DIGITS = 16
NUMBER_DIGITS = 20          # every header number, and a record's seq
LIVE_DIGITS = 10
ID_MAX = 200
# printf formats of the line before its padding (C's are made from these).
HEADER_FORMAT = MAGIC + "%s %020d %020d %020d %020d"
RECORD_FORMAT = "%020d %s %010d %s"
# Byte offsets, from the formats above.
GENERATION_AT = len(MAGIC)
HEADER_NUMBERS_AT = GENERATION_AT + GENERATION_DIGITS + 1    # then every 21 bytes
KIND_AT = NUMBER_DIGITS + 1
LIVE_AT = KIND_AT + 2
ID_AT = LIVE_AT + LIVE_DIGITS + 1

Header = collections.namedtuple("Header", "generation compacted_through last_seq records epoch")
Record = collections.namedtuple("Record", "seq kind live id")     # kind: "P" (put) or "D" (delete)

_HEADER = re.compile(rb"^%s([0-9a-f]{16}) (\d{20}) (\d{20}) (\d{20}) (\d{20}) *\n$" % MAGIC.encode())
_RECORD = re.compile(rb"^(\d{20}) ([PD]) (\d{10}) ([A-Za-z0-9._:-]{1,200}) *\n$")


def pad(line):
    """A record's bytes: the line, spaces up to 255 bytes, a newline."""
    data = line.encode() if isinstance(line, str) else line
    if len(data) >= RECORD:
        raise ValueError("a change-log line of %d bytes does not fit a %d-byte record" % (len(data), RECORD))
    return data + b" " * (RECORD - 1 - len(data)) + b"\n"


def encode_header(header):
    return pad(HEADER_FORMAT % tuple(header))


def encode_record(record):
    return pad(RECORD_FORMAT % tuple(record))


def decode_header(data):
    """A Header, or None when `data` is not a whole valid header record."""
    match = _HEADER.match(data) if len(data) == RECORD else None
    if not match:
        return None
    return Header(match.group(1).decode(), *(int(match.group(i)) for i in range(2, 6)))


def decode_record(data):
    """A Record, or None when `data` is not a whole valid change record."""
    match = _RECORD.match(data) if len(data) == RECORD else None
    if not match or int(match.group(1)) == 0:
        return None
    return Record(int(match.group(1)), match.group(2).decode(), int(match.group(3)), match.group(4).decode())


def read_log(raw):
    """(header or None, [Record or None for each whole record after it],
    bytes of a partial record at the end)."""
    whole = len(raw) // RECORD
    header = decode_header(raw[:RECORD]) if whole else None
    records = [decode_record(raw[i * RECORD:(i + 1) * RECORD]) for i in range(1, whole)]
    return header, records, len(raw) % RECORD


# ---------------------------------------------------------------- a whole inbox

def envelope(message_id, seq, received, body, version=0, source=None):
    """A stored message, compact JSON as the programs write it."""
    return json.dumps({"id": message_id, "version": version, "seq": seq, "source": source,
                       "serverReceivedAt": received, "body": body})


def write_inbox(directory, count, generation, body_of=None, source="mirror-1"):
    """An inbox of `count` live messages m0000001... in the store's on-disk
    format: changes.log (the header reads as a log just compacted, records =
    count, so no write compacts it soon) and messages/<id>.json.
    `body_of(seq)` gives each message's body."""
    messages = os.path.join(directory, "messages")
    os.makedirs(messages, mode=0o700)
    log = [encode_header(Header(generation, 0, count, count, 0))]
    base = datetime.datetime(2026, 5, 18, 4, 43, 4, tzinfo=datetime.timezone.utc)
    for seq in range(1, count + 1):
        message_id = "m%07d" % seq
        log.append(encode_record(Record(seq, "P", seq, message_id)))
        received = (base + datetime.timedelta(milliseconds=seq)).strftime("%Y%m%dT%H%M%S.%fZ")
        body = body_of(seq) if body_of else {}
        _create(os.path.join(messages, message_id + ".json"),
                envelope(message_id, seq, received, body, source=source).encode())
    _create(os.path.join(directory, "changes.log"), b"".join(log))


def _create(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- C

def c_header():
    """The change-log format as C macros, for Benchmarks/floor.c."""
    def c_format(fmt):
        return json.dumps(re.sub(r"%(0\d+)d", r"%\1lld", fmt))
    lines = [
        "/* Generated by Tests/support/formats.py c-header: do not edit. */",
        "#define CHANGELOG_RECORD %d" % RECORD,
        "#define CHANGELOG_HEADER_FORMAT %s" % c_format(HEADER_FORMAT),
        "#define CHANGELOG_RECORD_FORMAT %s" % c_format(RECORD_FORMAT),
        "#define CHANGELOG_GENERATION_AT %d" % GENERATION_AT,
        "#define CHANGELOG_GENERATION_DIGITS %d" % GENERATION_DIGITS,
        "#define CHANGELOG_HEADER_NUMBER_AT(i) (%d + %d * (i))" % (HEADER_NUMBERS_AT, NUMBER_DIGITS + 1),
        "#define CHANGELOG_NUMBER_DIGITS %d" % NUMBER_DIGITS,
        "#define CHANGELOG_LIVE_AT %d" % LIVE_AT,
        "#define CHANGELOG_LIVE_DIGITS %d" % LIVE_DIGITS,
        "#define CHANGELOG_ID_AT %d" % ID_AT,
        "#define CHANGELOG_ID_MAX %d" % ID_MAX,
    ]
    return "\n".join(lines) + "\n"


def write_c_header(directory):
    """Writes changelog_format.h into `directory`; returns the directory (for -I)."""
    with open(os.path.join(directory, "changelog_format.h"), "w") as f:
        f.write(c_header())
    return directory


if __name__ == "__main__":
    if sys.argv[1:] != ["c-header"]:
        sys.exit(__doc__.rstrip().rsplit("\n", 1)[1].strip())
    sys.stdout.write(c_header())
