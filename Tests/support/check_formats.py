#!/usr/bin/env python3
"""The harness's change-log format (Tests/support/formats.py) against the
real programs, so that the test side's one definition cannot drift from
Sources/.../ChangeLog.swift without a failure in `make test`:

- records the release inbox program writes (puts, a replacement, a delete,
  a compaction) decode with formats.py and encode back to the same bytes;
- an inbox formats.py writes (as bench.py seeds one) is read by the program:
  the feed pages show its messages in order under its generation, and the
  program appends the next record where formats.py expects it;
- Benchmarks/floor.c, built with the C header formats.py generates, writes
  records formats.py decodes, into a log formats.py wrote.

    Tests/support/check_formats.py [--cgi-bin DIR]   default $MOCKCLOUD_CGI_BIN or cgi-bin/

Prints `ok`/`FAIL` lines, then `N passed, M failed` last; exit 1 when
anything failed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True     # no __pycache__ in the repository
sys.path.insert(0, HERE)
import cgi_program  # noqa: E402
import formats  # noqa: E402
import suite  # noqa: E402

CHECKS = suite.Checks()
check = CHECKS.check


def request(program, data, method, path, body=b"", query="", key="fmt", extra=None):
    status, _, answer, whole, code = cgi_program.run(program, method, path, data, {"X-User-Key": key}, query,
                                                     body, extra)
    if not whole or code != 0:
        raise AssertionError("%s %s: no whole answer (exit %s): %r" % (method, path, code, answer[:200]))
    return status, answer


def log_of(data, key="fmt"):
    with open(os.path.join(data, "inbox", key, "changes.log"), "rb") as f:
        return f.read()


def round_trip_problems(raw):
    """Problems decoding `raw` as a whole log and encoding it back."""
    header, records, partial = formats.read_log(raw)
    problems = []
    if header is None:
        return ["the header does not decode: %r" % raw[:formats.RECORD]]
    if partial:
        problems.append("%d bytes of a partial record at the end" % partial)
    if formats.encode_header(header) != raw[:formats.RECORD]:
        problems.append("the header encodes back differently: %r" % raw[:formats.RECORD])
    for index, record in enumerate(records, 1):
        data = raw[index * formats.RECORD:(index + 1) * formats.RECORD]
        if record is None:
            problems.append("record %d does not decode: %r" % (index, data))
        elif formats.encode_record(record) != data:
            problems.append("record %d encodes back differently: %r" % (index, data))
    return problems


def written_by_the_program(inbox, work):
    """The program's own records decode as formats.py says, byte for byte."""
    data = os.path.join(work, "written")
    steps = [("PUT", "/inbox/m1", b'{"kg": 70.1}', 201), ("PUT", "/inbox/" + "x" * formats.ID_MAX, b"{}", 201),
             ("PUT", "/inbox/m1", b'{"kg": 70.2}', 200), ("DELETE", "/inbox/m1", b"", 204)]
    problems = []
    for method, path, body, want in steps:
        status, answer = request(inbox, data, method, path, body)
        if status != want:
            problems.append("%s %s answered %s, not %s: %r" % (method, path, status, want, answer[:200]))
    raw = log_of(data)
    problems += round_trip_problems(raw)
    header, records, _ = formats.read_log(raw)
    long_id = "x" * formats.ID_MAX
    want = [formats.Record(1, "P", 1, "m1"), formats.Record(2, "P", 2, long_id),
            formats.Record(3, "P", 2, "m1"), formats.Record(4, "D", 1, "m1")]
    if records != want:
        problems.append("records %s, expected %s" % (records, want))
    if header and header[1:] != (0, 0, 0, 0):
        problems.append("a new log's header numbers are %s, expected all 0" % (header[1:],))
    check("the inbox program's records (put, replace, a 200-byte id, delete) decode and encode back byte for byte",
          problems)

    # Compaction rewrites the log: the header then carries every number.
    env = {"MOCKCLOUD_INBOX_COMPACT_MIN_RECORDS": "1", "MOCKCLOUD_INBOX_TOMBSTONE_HORIZON": "0"}
    problems = []
    for ident in ("m2", "m3"):
        request(inbox, data, "PUT", "/inbox/" + ident, b"{}", extra=env)
    request(inbox, data, "DELETE", "/inbox/m2", extra=env)
    raw = log_of(data)
    problems += round_trip_problems(raw)
    header, records, _ = formats.read_log(raw)
    if header and not (header.compacted_through > 0 and header.last_seq >= header.compacted_through
                       and header.records == len(records)):
        problems.append("header %s after compaction, with %d records" % (header, len(records)))
    check("a log the program compacted (header numbers set) decodes and encodes back byte for byte", problems)


def written_by_formats(inbox, work, count=25):
    """An inbox formats.py writes is one the program reads and extends."""
    data = os.path.join(work, "seeded")
    directory = os.path.join(data, "inbox", "fmt")
    generation = "0123456789abcdef"
    formats.write_inbox(directory, count, generation, body_of=lambda seq: {"n": seq})
    problems = []
    seen, anchor, more = [], "0.0.0", True
    while more and len(seen) <= count:
        status, answer = request(inbox, data, "GET", "/inbox", query="anchor=%s&limit=10" % anchor)
        if status != 200:
            problems.append("the feed answered %s: %r" % (status, answer[:200]))
            break
        page = json.loads(answer)
        seen += [(m["id"], m["seq"], m["body"]) for m in page["messages"]]
        anchor, more = page["anchor"], page["hasMore"]
    want = [("m%07d" % seq, seq, {"n": seq}) for seq in range(1, count + 1)]
    if seen != want:
        problems.append("the feed shows %s..., expected %s..." % (seen[:3], want[:3]))
    if anchor != "%s.0.%d" % (generation, count):
        problems.append("the last anchor is %r, expected %s.0.%d" % (anchor, generation, count))
    check("the program's feed reads an inbox formats.py wrote: every message in order, its generation", problems)

    status, answer = request(inbox, data, "PUT", "/inbox/next", b"{}")
    header, records, partial = formats.read_log(log_of(data))
    problems = [] if status == 201 else ["PUT answered %s: %r" % (status, answer[:200])]
    if partial or None in records or not records or records[-1] != formats.Record(count + 1, "P", count + 1, "next"):
        problems.append("the program appended %s, expected %s" % (
            records[-1:], formats.Record(count + 1, "P", count + 1, "next")))
    if header != formats.Header(generation, 0, count, count, 0):
        problems.append("the header changed to %s" % (header,))
    check("the program appends to a log formats.py wrote the record formats.py expects", problems)
    return data


def floor_writes(work):
    """floor.c, built with formats.py's C header, writes what formats.py reads."""
    compiler = shutil.which("cc") or shutil.which("clang")
    if not compiler:
        check("floor.c builds with the generated change-log header", ["no C compiler (cc or clang)"])
        return
    floor = os.path.join(work, "floor")
    build = subprocess.run([compiler, "-O1", "-I", formats.write_c_header(work), "-o", floor,
                            os.path.join(REPO, "Benchmarks", "floor.c")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if build.returncode != 0:
        check("floor.c builds with the generated change-log header", [build.stdout.decode(errors="replace")])
        return
    data = os.path.join(work, "floor-data")
    os.makedirs(data, mode=0o700)     # as bench.py's stacks have it
    problems = []
    for ident in ("m1", "m2", "m1"):
        status, answer = request(floor, data, "PUT", "/inbox/" + ident, b"{}")
        if status not in (200, 201):
            problems.append("PUT /inbox/%s answered %s: %r" % (ident, status, answer[:200]))
    raw = log_of(data)
    problems += round_trip_problems(raw)
    _, records, _ = formats.read_log(raw)
    want = [formats.Record(1, "P", 1, "m1"), formats.Record(2, "P", 2, "m2"), formats.Record(3, "P", 2, "m1")]
    if records != want:
        problems.append("records %s, expected %s" % (records, want))
    # A log formats.py wrote, whose header says more than its records: a
    # lastSeq past the last record and an epoch, as after a compaction, both
    # of 19 digits (a number read at a shifted offset comes out different).
    count, generation = 5, "fedcba9876543210"
    last_seq, epoch = 9 * 10**18 + 4, 8 * 10**18 + 3
    formats.write_inbox(os.path.join(data, "inbox", "seeded"), count, generation)
    with open(os.path.join(data, "inbox", "seeded", "changes.log"), "r+b") as f:
        f.write(formats.encode_header(formats.Header(generation, 0, last_seq, count, epoch)))
    request(floor, data, "PUT", "/inbox/next", b"{}", key="seeded")
    _, records, _ = formats.read_log(log_of(data, "seeded"))
    if records[-1:] != [formats.Record(last_seq + 1, "P", count + 1, "next")]:
        problems.append("after a header with lastSeq %d it appended %s" % (last_seq, records[-1:]))
    status, answer = request(floor, data, "GET", "/inbox", query="limit=1000", key="seeded")
    page = json.loads(answer) if status == 200 else {}
    ids = [m.get("id") for m in page.get("messages", [])]
    if ids != ["m%07d" % seq for seq in range(1, count + 1)] + ["next"]:
        problems.append("its feed shows %s: %r" % (ids, answer[:200]))
    if page.get("anchor") != "%s.%d.%d" % (generation, epoch, last_seq + 1):
        problems.append("its feed's anchor is %r, expected %s.%d.%d" % (page.get("anchor"), generation, epoch,
                                                                        last_seq + 1))
    check("floor.c, built with the header formats.py generates, writes records formats.py decodes", problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cgi-bin", default=os.environ.get("MOCKCLOUD_CGI_BIN") or os.path.join(REPO, "cgi-bin"))
    args = parser.parse_args()
    inbox = os.path.join(args.cgi_bin, "inbox")
    work = tempfile.mkdtemp(prefix="mcf.", dir="/tmp")
    try:
        parts = [lambda: floor_writes(work)]
        if os.access(inbox, os.X_OK):
            parts = [lambda: written_by_the_program(inbox, work), lambda: written_by_formats(inbox, work)] + parts
        else:
            check("the inbox program is there", ["%s is missing: run 'make install'" % inbox])
        for part in parts:
            try:
                part()
            except (AssertionError, OSError, ValueError, subprocess.SubprocessError) as error:
                check("(a check stopped early)", ["%s: %s" % (type(error).__name__, error)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
